// MemberReader: typed access to the members of a JSON object parsed with
// simdjson's DOM API, for the manifest decoders. The first failure becomes a
// Status::Corruption naming the file and the member.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "engine/status.h"
#include "snapshot/checked_json.h"

namespace snapsink {

class MemberReader {
 public:
  explicit MemberReader(const std::string& name) : name_(name) {}

  Status Int(simdjson::dom::object o, std::string_view key, int64_t* v) {
    return Check(o[key].get_int64().get(*v), key);
  }
  Status Uint(simdjson::dom::object o, std::string_view key, uint64_t max, uint64_t* v) {
    SNAPSINK_RETURN_IF_ERROR(Check(o[key].get_uint64().get(*v), key));
    if (*v > max) return Bad(key, "out of range");
    return Status::OK();
  }
  Status Uint32(simdjson::dom::object o, std::string_view key, uint32_t* v) {
    uint64_t u;
    SNAPSINK_RETURN_IF_ERROR(Uint(o, key, UINT32_MAX, &u));
    *v = static_cast<uint32_t>(u);
    return Status::OK();
  }
  Status String(simdjson::dom::object o, std::string_view key, std::string* v) {
    std::string_view s;
    SNAPSINK_RETURN_IF_ERROR(Check(o[key].get_string().get(s), key));
    v->assign(s);
    return Status::OK();
  }
  Status Hex(simdjson::dom::object o, std::string_view key, uint64_t* v) {
    std::string_view s;
    SNAPSINK_RETURN_IF_ERROR(Check(o[key].get_string().get(s), key));
    if (!ParseHex64(s, v)) return Bad(key, "not 16 lowercase hex digits");
    return Status::OK();
  }
  Status Array(simdjson::dom::object o, std::string_view key, simdjson::dom::array* v) {
    return Check(o[key].get_array().get(*v), key);
  }
  Status Object(simdjson::dom::element e, std::string_view what, simdjson::dom::object* v) {
    return Check(e.get_object().get(*v), what);
  }
  Status Bad(std::string_view what, std::string_view why) {
    return Status::Corruption(fmt::format("{}: {}: {}", name_, what, why));
  }

 private:
  Status Check(simdjson::error_code err, std::string_view what) {
    if (err == simdjson::SUCCESS) return Status::OK();
    return Bad(what, simdjson::error_message(err));
  }
  const std::string& name_;
};

// Opens a checked JSON document (snapshot/checked_json.h) of the given format
// and a version in [min_version, max_version]: verifies its checksum, parses
// it with parser (which must outlive *o), checks its "format" and
// "format_version" members and sets *version.
inline Status OpenCheckedDocument(std::string_view text, std::string_view format, uint64_t min_version,
                                  uint64_t max_version, uint64_t* version, MemberReader* r,
                                  simdjson::dom::parser* parser, simdjson::dom::object* o, const std::string& name) {
  std::string_view body;
  SNAPSINK_RETURN_IF_ERROR(OpenJson(text, &body, name));
  simdjson::dom::element doc;
  if (auto err = parser->parse(body.data(), body.size()).get(doc); err != simdjson::SUCCESS) {
    return r->Bad("JSON", simdjson::error_message(err));
  }
  SNAPSINK_RETURN_IF_ERROR(r->Object(doc, "document", o));
  std::string found;
  SNAPSINK_RETURN_IF_ERROR(r->String(*o, "format", &found));
  if (found != format) return r->Bad("format", fmt::format("is {:?}, not {:?}", found, format));
  SNAPSINK_RETURN_IF_ERROR(r->Uint(*o, "format_version", UINT64_MAX, version));
  if (*version < min_version || *version > max_version) return r->Bad("format_version", "unknown version");
  return Status::OK();
}

// The same for exactly one version.
inline Status OpenCheckedDocument(std::string_view text, std::string_view format, uint64_t version,
                                  MemberReader* r, simdjson::dom::parser* parser, simdjson::dom::object* o,
                                  const std::string& name) {
  uint64_t found;
  return OpenCheckedDocument(text, format, version, version, &found, r, parser, o, name);
}

}  // namespace snapsink
