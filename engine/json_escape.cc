#include "engine/json_escape.h"

#include <cstdint>

namespace snapsink {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if it is not valid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

void AppendJsonEscaped(std::string* dst, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      dst->push_back('\\');
      dst->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      dst->append("\\u00");
      dst->push_back(kHex[c >> 4]);
      dst->push_back(kHex[c & 0xF]);
      ++i;
    } else if (c < 0x80) {
      dst->push_back(static_cast<char>(c));
      ++i;
    } else if (size_t n = Utf8SequenceLength(s, i); n > 0) {
      dst->append(s.substr(i, n));
      i += n;
    } else {
      dst->append("\\ufffd");
      ++i;
    }
  }
}

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  AppendJsonEscaped(&out, s);
  out.push_back('"');
  return out;
}

}  // namespace snapsink
