#include "snapshot/checked_json.h"

#include <xxhash.h>

#include <cassert>

#include "engine/json_escape.h"

#include <fmt/format.h>

namespace snapsink {

namespace {

constexpr std::string_view kChecksumMember = "\"checksum\":\"";
// `"checksum":"` + 16 hex + `"}` + '\n'
constexpr size_t kTrailerSize = kChecksumMember.size() + 16 + 3;


}  // namespace

std::string Hex64(uint64_t v) { return fmt::format("{:016x}", v); }

bool ParseHex64(std::string_view s, uint64_t* v) {
  if (s.size() != 16) return false;
  uint64_t r = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    r = (r << 4) | static_cast<uint64_t>(d);
  }
  *v = r;
  return true;
}

std::string SealJson(std::string body) {
  assert(body.size() >= 2 && body.front() == '{' && body.back() == '}');
  body.pop_back();
  const uint64_t h = XXH64(body.data(), body.size(), 0);
  if (body.size() > 1) body.push_back(',');
  body.append(kChecksumMember);
  body.append(Hex64(h));
  body.append("\"}\n");
  return body;
}

Status OpenJson(std::string_view text, std::string_view* body, const std::string& name) {
  if (text.size() < 1 + kTrailerSize || text.front() != '{' || text.substr(text.size() - 3) != "\"}\n") {
    return Status::Corruption(fmt::format("{}: not a checked JSON document", name));
  }
  const size_t member = text.size() - kTrailerSize;
  if (text.substr(member, kChecksumMember.size()) != kChecksumMember) {
    return Status::Corruption(fmt::format("{}: checksum missing at offset {}", name, member));
  }
  uint64_t want;
  if (!ParseHex64(text.substr(member + kChecksumMember.size(), 16), &want)) {
    return Status::Corruption(fmt::format("{}: malformed checksum at offset {}", name, member));
  }
  // The hashed bytes end before the comma, or after '{' for an empty body.
  size_t hashed;
  if (member == 1) {
    hashed = 1;
  } else if (text[member - 1] == ',' && member >= 3) {
    hashed = member - 1;
  } else {
    return Status::Corruption(fmt::format("{}: no ',' before the checksum at offset {}", name, member));
  }
  const uint64_t got = XXH64(text.data(), hashed, 0);
  if (got != want) {
    return Status::Corruption(fmt::format("{}: checksum mismatch (stored {}, computed {})", name,
                                          Hex64(want), Hex64(got)));
  }
  *body = text.substr(0, text.size() - 1);
  return Status::OK();
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  AppendJsonEscaped(&out, s);
  return out;
}

}  // namespace snapsink
