#include "engine/s3/s3_uri.h"

#include <algorithm>

namespace snapsink {

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> params) {
  for (auto& [name, value] : params) {
    name = UriEncode(name, false);
    value = UriEncode(value, false);
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

bool IsBucketPath(std::string_view path) { return path.rfind("s3://", 0) == 0; }

Status ParseBucketPath(std::string_view path, std::string* bucket, std::string* key) {
  if (!IsBucketPath(path)) {
    return Status::InvalidArgument(std::string(path) + ": not a bucket path (s3://BUCKET/PREFIX)");
  }
  const std::string_view rest = path.substr(5);
  const size_t slash = rest.find('/');
  const std::string_view b = rest.substr(0, slash);
  if (b.empty()) return Status::InvalidArgument(std::string(path) + ": names no bucket (s3://BUCKET/PREFIX)");
  *bucket = std::string(b);
  *key = slash == std::string_view::npos ? std::string() : std::string(rest.substr(slash + 1));
  return Status::OK();
}

}  // namespace snapsink
