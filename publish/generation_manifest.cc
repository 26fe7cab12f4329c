#include "publish/generation_manifest.h"

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "snapshot/checked_json.h"
#include "snapshot/json_members.h"

namespace snapsink {

namespace {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr std::string_view kFormat = "snapsink.generation";
constexpr uint64_t kManifestFormatVersion = 4;        // 4: a tree of parts (depth); 3: leaf parts only; 2: windows inline
constexpr uint64_t kLeafOnlyFormatVersion = 3;  // still read: parts of 1,024 windows, depth 1
constexpr uint64_t kInlineFormatVersion = 2;  // still read: roots written before parts
constexpr std::string_view kPartFormat = "snapsink.generation_part";
constexpr uint64_t kPartFormatVersion = 1;
constexpr std::string_view kIndexFormat = "snapsink.generation_index";
constexpr uint64_t kIndexFormatVersion = 1;

Status ReadGenerationAndParents(MemberReader* r, simdjson::dom::object o, GenerationManifest* g) {
  SNAPSINK_RETURN_IF_ERROR(r->Uint(o, "generation", UINT64_MAX, &g->generation));
  SNAPSINK_RETURN_IF_ERROR(r->Uint(o, "parent", UINT64_MAX, &g->parent));
  if (g->parent != 0 && g->parent >= g->generation) return r->Bad("parent", "not below generation");
  SNAPSINK_RETURN_IF_ERROR(r->Uint(o, "rollback_of", UINT64_MAX, &g->rollback_of));
  if (g->rollback_of != 0 && g->rollback_of >= g->generation) return r->Bad("rollback_of", "not below generation");
  return Status::OK();
}

// Format 2's windows: [{"window_ms","version","manifest_xxh64"},...].
Status ReadInlineWindows(MemberReader* r, simdjson::dom::object o, std::vector<GenerationEntry>* out) {
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r->Array(o, "windows", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object wo;
    SNAPSINK_RETURN_IF_ERROR(r->Object(e, "windows[]", &wo));
    GenerationEntry w;
    SNAPSINK_RETURN_IF_ERROR(r->Int(wo, "window_ms", &w.window_ms));
    SNAPSINK_RETURN_IF_ERROR(r->Uint(wo, "version", UINT64_MAX, &w.version));
    SNAPSINK_RETURN_IF_ERROR(r->Hex(wo, "manifest_xxh64", &w.manifest_xxh64));
    if (!out->empty() && out->back().window_ms >= w.window_ms) {
      return r->Bad("windows", fmt::format("window_ms {} is not sorted or not unique", w.window_ms));
    }
    out->push_back(w);
  }
  return Status::OK();
}

// One element of an array of arrays, as the values of its n members.
Status Tuple(MemberReader* r, simdjson::dom::element e, std::string_view what, size_t n, simdjson::dom::array* out) {
  if (e.get_array().get(*out) != simdjson::SUCCESS || out->size() != n) {
    return r->Bad(what, fmt::format("not an array of {} values", n));
  }
  return Status::OK();
}

Status TupleInt(MemberReader* r, simdjson::dom::element e, std::string_view what, int64_t* v) {
  if (e.get_int64().get(*v) != simdjson::SUCCESS) return r->Bad(what, "not a 64-bit integer");
  return Status::OK();
}

Status TupleUint(MemberReader* r, simdjson::dom::element e, std::string_view what, uint64_t* v) {
  if (e.get_uint64().get(*v) != simdjson::SUCCESS) return r->Bad(what, "not an unsigned 64-bit integer");
  return Status::OK();
}

Status TupleHex(MemberReader* r, simdjson::dom::element e, std::string_view what, uint64_t* v) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS || !ParseHex64(s, v)) {
    return r->Bad(what, "not 16 lowercase hex digits");
  }
  return Status::OK();
}

// [[first,last,windows,"xxh64"],...] under "parts": sorted, disjoint, each
// with at least one window.
Status ReadPartRefs(MemberReader* r, simdjson::dom::object o, std::vector<GenerationPartRef>* out) {
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r->Array(o, "parts", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::array t;
    SNAPSINK_RETURN_IF_ERROR(Tuple(r, e, "parts[]", 4, &t));
    GenerationPartRef p;
    SNAPSINK_RETURN_IF_ERROR(TupleInt(r, t.at(0), "parts[] first window", &p.first_ms));
    SNAPSINK_RETURN_IF_ERROR(TupleInt(r, t.at(1), "parts[] last window", &p.last_ms));
    SNAPSINK_RETURN_IF_ERROR(TupleUint(r, t.at(2), "parts[] windows", &p.windows));
    SNAPSINK_RETURN_IF_ERROR(TupleHex(r, t.at(3), "parts[] xxh64", &p.xxh64));
    if (p.windows == 0) return r->Bad("parts", fmt::format("the part starting at {} holds no window", p.first_ms));
    if (p.last_ms < p.first_ms) return r->Bad("parts", fmt::format("the part starting at {} ends before it", p.first_ms));
    if (!out->empty() && out->back().last_ms >= p.first_ms) {
      return r->Bad("parts", fmt::format("the part starting at {} is not sorted or overlaps the one before", p.first_ms));
    }
    out->push_back(p);
  }
  return Status::OK();
}

void AppendPartRefs(const std::vector<GenerationPartRef>& parts, std::string* out) {
  auto it = std::back_inserter(*out);
  for (size_t i = 0; i < parts.size(); i++) {
    const GenerationPartRef& p = parts[i];
    fmt::format_to(it, "{}[{},{},{},\"{:016x}\"]", i ? "," : "", p.first_ms, p.last_ms, p.windows, p.xxh64);
  }
}

}  // namespace

int64_t PartSpanMs(int64_t window_size_ms, uint32_t level) {
  int64_t span = std::max<int64_t>(window_size_ms, 1);
  for (uint32_t l = 0; l <= level; ++l) span *= kPartFanout;
  return span;
}

int64_t PartSpanOf(int64_t window_ms, int64_t span_ms) {
  const int64_t q = window_ms / span_ms;
  return (window_ms % span_ms != 0 && window_ms < 0) ? q - 1 : q;
}

std::string GenerationManifest::Encode() const {
  std::string out =
      fmt::format("{{\"format\":\"{}\",\"format_version\":{},\"generation\":{},\"parent\":{},\"rollback_of\":{},"
                  "\"depth\":{},\"parts\":[",
                  kFormat, kManifestFormatVersion, generation, parent, rollback_of, depth);
  AppendPartRefs(parts, &out);
  out += "]}";
  return SealJson(std::move(out));
}

Status GenerationManifest::Decode(std::string_view text, const std::string& name, GenerationManifest* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  uint64_t version = 0;
  SNAPSINK_RETURN_IF_ERROR(
      OpenCheckedDocument(text, kFormat, kInlineFormatVersion, kManifestFormatVersion, &version, &r, &parser, &o, name));
  GenerationManifest g;
  SNAPSINK_RETURN_IF_ERROR(ReadGenerationAndParents(&r, o, &g));
  if (version == kInlineFormatVersion) {
    g.depth = 0;
    SNAPSINK_RETURN_IF_ERROR(ReadInlineWindows(&r, o, &g.windows));
    *out = std::move(g);
    return Status::OK();
  }
  if (version == kLeafOnlyFormatVersion) {
    g.depth = 1;
  } else {
    uint64_t depth = 0;
    SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "depth", kMaxPartDepth, &depth));
    if (depth == 0) return r.Bad("depth", "0");
    g.depth = static_cast<uint32_t>(depth);
  }
  SNAPSINK_RETURN_IF_ERROR(ReadPartRefs(&r, o, &g.parts));
  *out = std::move(g);
  return Status::OK();
}

std::string GenerationPart::Encode() const {
  std::string out = fmt::format("{{\"format\":\"{}\",\"format_version\":{},\"windows\":[", kPartFormat,
                                kPartFormatVersion);
  auto it = std::back_inserter(out);
  for (size_t i = 0; i < windows.size(); i++) {
    const GenerationEntry& w = windows[i];
    fmt::format_to(it, "{}[{},{},\"{:016x}\"]", i ? "," : "", w.window_ms, w.version, w.manifest_xxh64);
  }
  out += "]}";
  return SealJson(std::move(out));
}

Status GenerationPart::Decode(std::string_view text, const std::string& name, GenerationPart* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kPartFormat, kPartFormatVersion, &r, &parser, &o, name));
  GenerationPart part;
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "windows", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::array t;
    SNAPSINK_RETURN_IF_ERROR(Tuple(&r, e, "windows[]", 3, &t));
    GenerationEntry w;
    SNAPSINK_RETURN_IF_ERROR(TupleInt(&r, t.at(0), "windows[] window_ms", &w.window_ms));
    SNAPSINK_RETURN_IF_ERROR(TupleUint(&r, t.at(1), "windows[] version", &w.version));
    SNAPSINK_RETURN_IF_ERROR(TupleHex(&r, t.at(2), "windows[] manifest_xxh64", &w.manifest_xxh64));
    if (!part.windows.empty() && part.windows.back().window_ms >= w.window_ms) {
      return r.Bad("windows", fmt::format("window_ms {} is not sorted or not unique", w.window_ms));
    }
    part.windows.push_back(w);
  }
  if (part.windows.empty()) return r.Bad("windows", "empty");
  *out = std::move(part);
  return Status::OK();
}

std::string GenerationIndexPart::Encode() const {
  std::string out = fmt::format("{{\"format\":\"{}\",\"format_version\":{},\"level\":{},\"parts\":[", kIndexFormat,
                                kIndexFormatVersion, level);
  AppendPartRefs(parts, &out);
  out += "]}";
  return SealJson(std::move(out));
}

Status GenerationIndexPart::Decode(std::string_view text, const std::string& name, GenerationIndexPart* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kIndexFormat, kIndexFormatVersion, &r, &parser, &o, name));
  GenerationIndexPart part;
  uint64_t level = 0;
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "level", kMaxPartDepth - 1, &level));
  if (level == 0) return r.Bad("level", "0 (an index part is of level 1 or more)");
  part.level = static_cast<uint32_t>(level);
  SNAPSINK_RETURN_IF_ERROR(ReadPartRefs(&r, o, &part.parts));
  if (part.parts.empty()) return r.Bad("parts", "empty");
  *out = std::move(part);
  return Status::OK();
}

GenerationPartRef EncodeLeaf(const std::vector<GenerationEntry>& windows, std::vector<std::string>* bytes) {
  GenerationPart part;
  part.windows = windows;
  std::string b = part.Encode();
  const GenerationPartRef ref{windows.front().window_ms, windows.back().window_ms, windows.size(),
                              XXH64(b.data(), b.size(), 0)};
  bytes->push_back(std::move(b));
  return ref;
}

GenerationPartRef EncodeIndex(uint32_t level, const std::vector<GenerationPartRef>& parts,
                              std::vector<std::string>* bytes) {
  GenerationIndexPart part;
  part.level = level;
  part.parts = parts;
  std::string b = part.Encode();
  uint64_t windows = 0;
  for (const GenerationPartRef& p : parts) windows += p.windows;
  const GenerationPartRef ref{parts.front().first_ms, parts.back().last_ms, windows, XXH64(b.data(), b.size(), 0)};
  bytes->push_back(std::move(b));
  return ref;
}

void BuildPartTree(int64_t window_size_ms, const std::vector<GenerationEntry>& windows,
                   std::vector<GenerationPartRef>* refs, std::vector<std::string>* bytes) {
  std::vector<GenerationPartRef> level;
  const int64_t leaf_span = PartSpanMs(window_size_ms, 0);
  for (size_t i = 0; i < windows.size();) {
    const int64_t span = PartSpanOf(windows[i].window_ms, leaf_span);
    size_t j = i;
    while (j < windows.size() && PartSpanOf(windows[j].window_ms, leaf_span) == span) ++j;
    level.push_back(EncodeLeaf({windows.begin() + static_cast<std::ptrdiff_t>(i),
                                windows.begin() + static_cast<std::ptrdiff_t>(j)}, bytes));
    i = j;
  }
  for (uint32_t l = 1; l < kPartDepth; ++l) {
    const int64_t span_ms = PartSpanMs(window_size_ms, l);
    std::vector<GenerationPartRef> up;
    for (size_t i = 0; i < level.size();) {
      const int64_t span = PartSpanOf(level[i].first_ms, span_ms);
      size_t j = i;
      while (j < level.size() && PartSpanOf(level[j].first_ms, span_ms) == span) ++j;
      up.push_back(EncodeIndex(l, {level.begin() + static_cast<std::ptrdiff_t>(i),
                                   level.begin() + static_cast<std::ptrdiff_t>(j)}, bytes));
      i = j;
    }
    level = std::move(up);
  }
  refs->insert(refs->end(), level.begin(), level.end());
}

}  // namespace snapsink
