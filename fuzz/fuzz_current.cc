// libFuzzer: the CURRENT decoder (docs/FORMAT.md section 5). What decodes
// must be exactly what EncodeCurrent writes for it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "publish/current_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  snapsink::CurrentPointer c;
  if (snapsink::DecodeCurrent(text, "CURRENT", &c).ok()) {
    if (c.generation == 0 || snapsink::EncodeCurrent(c) != text) std::abort();
  }
  return 0;
}
