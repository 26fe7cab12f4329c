#include "publish/generation_manifest.h"

#include <simdjson.h>

#include <algorithm>

#include <fmt/format.h>

#include "publish/checked_json.h"
#include "publish/json_members.h"

namespace snapsink {

namespace {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr std::string_view kFormat = "snapsink.generation";
constexpr uint64_t kFormatVersion = 2;  // 2: 64-bit versions, rollback_of


}  // namespace

std::string GenerationManifest::Encode() const {
  std::vector<const GenerationEntry*> ws;
  for (const GenerationEntry& w : windows) ws.push_back(&w);
  std::stable_sort(ws.begin(), ws.end(), [](auto* a, auto* b) { return a->window_ms < b->window_ms; });
  std::string out =
      fmt::format("{{\"format\":\"{}\",\"format_version\":{},\"generation\":{},\"parent\":{},\"rollback_of\":{},"
                  "\"windows\":[",
                  kFormat, kFormatVersion, generation, parent, rollback_of);
  for (size_t i = 0; i < ws.size(); i++) {
    out += fmt::format("{}{{\"window_ms\":{},\"version\":{},\"manifest_xxh64\":\"{}\"}}", i ? "," : "",
                       ws[i]->window_ms, ws[i]->version, Hex64(ws[i]->manifest_xxh64));
  }
  out += "]}";
  return SealJson(std::move(out));
}

Status GenerationManifest::Decode(std::string_view text, const std::string& name, GenerationManifest* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kFormat, kFormatVersion, &r, &parser, &o, name));

  GenerationManifest g;
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "generation", UINT64_MAX, &g.generation));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "parent", UINT64_MAX, &g.parent));
  if (g.parent != 0 && g.parent >= g.generation) return r.Bad("parent", "not below generation");
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "rollback_of", UINT64_MAX, &g.rollback_of));
  if (g.rollback_of != 0 && g.rollback_of >= g.generation) return r.Bad("rollback_of", "not below generation");
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "windows", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object wo;
    SNAPSINK_RETURN_IF_ERROR(r.Object(e, "windows[]", &wo));
    GenerationEntry w;
    SNAPSINK_RETURN_IF_ERROR(r.Int(wo, "window_ms", &w.window_ms));
    SNAPSINK_RETURN_IF_ERROR(r.Uint(wo, "version", UINT64_MAX, &w.version));
    SNAPSINK_RETURN_IF_ERROR(r.Hex(wo, "manifest_xxh64", &w.manifest_xxh64));
    if (!g.windows.empty() && g.windows.back().window_ms >= w.window_ms) {
      return r.Bad("windows", fmt::format("window_ms {} is not sorted or not unique", w.window_ms));
    }
    g.windows.push_back(w);
  }
  *out = std::move(g);
  return Status::OK();
}

}  // namespace snapsink
