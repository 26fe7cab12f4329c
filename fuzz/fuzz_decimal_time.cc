// libFuzzer: the decimal and time parsers. Whatever they accept must
// round-trip through their formatters.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/decimal.h"
#include "engine/timeutil.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  int64_t v, back;
  const char* reason = nullptr;
  if (snapsink::ParseDecimalMicros(s, &v, &reason)) {
    if (!snapsink::ParseDecimalMicros(snapsink::FormatMicros(v), &back, &reason) || back != v) std::abort();
  }
  if (snapsink::ParseRfc3339Ms(s, &v)) {
    if (!snapsink::ParseRfc3339Ms(snapsink::FormatIso(v), &back) || back != v) std::abort();
  }
  if (snapsink::ParseWindowName(s, &v)) {
    (void)snapsink::FormatCompact(v);
  }
  if (snapsink::ParseDuration(s, &v)) {
    if (v > 0 && (!snapsink::ParseDuration(snapsink::FormatDuration(v), &back) || back != v)) std::abort();
  }
  return 0;
}
