#include "engine/checkpoint_text.h"

#include <charconv>
#include <cstdio>

namespace snapsink {

std::string ChecksumTrailer(uint64_t xxh64) {
  char buf[kChecksumTrailerSize + 1];
  std::snprintf(buf, sizeof buf, "xxh64 %016llx\n", static_cast<unsigned long long>(xxh64));
  return std::string(buf, kChecksumTrailerSize);
}

bool ParseU64(std::string_view text, uint64_t* v, int base) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *v, base);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

}  // namespace snapsink
