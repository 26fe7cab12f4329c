#include "snapshot/snapshot_manifest.h"

#include <simdjson.h>

#include <algorithm>

#include <fmt/format.h>

#include "snapshot/checked_json.h"
#include "snapshot/json_members.h"

namespace snapsink {

namespace {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr std::string_view kFormat = "snapsink.snapshot";
constexpr uint64_t kManifestFormatVersion = 2;  // 2: per-metric stats moved to the data file


}  // namespace

std::string SnapshotManifest::Encode() const {
  std::vector<const FileEntry*> fs;
  for (const FileEntry& f : files) fs.push_back(&f);
  std::stable_sort(fs.begin(), fs.end(), [](auto* a, auto* b) { return a->name < b->name; });

  std::string out = fmt::format(
      "{{\"format\":\"{}\",\"format_version\":{},\"window_ms\":{},\"window_size_ms\":{},"
      "\"version\":{},\"aggregation_version\":{},\"rows\":{},\"events\":{},\"count\":{},"
      "\"sum_micros\":{},\"files\":[",
      kFormat, kManifestFormatVersion, window_ms, window_size_ms, version, aggregation_version, rows, events,
      count, sum_micros);
  for (size_t i = 0; i < fs.size(); i++) {
    const FileEntry& f = *fs[i];
    out += fmt::format("{}{{\"name\":\"{}\",\"bytes\":{},\"xxh64\":\"{}\"}}", i ? "," : "",
                       JsonEscape(f.name), f.bytes, Hex64(f.xxh64));
  }
  out += "]}";
  return SealJson(std::move(out));
}

Status DecodeSnapshotFiles(MemberReader& r, const simdjson::dom::object& o, std::vector<FileEntry>* files) {
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "files", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object fo;
    SNAPSINK_RETURN_IF_ERROR(r.Object(e, "files[]", &fo));
    FileEntry f;
    SNAPSINK_RETURN_IF_ERROR(r.String(fo, "name", &f.name));
    SNAPSINK_RETURN_IF_ERROR(r.Uint(fo, "bytes", UINT64_MAX, &f.bytes));
    SNAPSINK_RETURN_IF_ERROR(r.Hex(fo, "xxh64", &f.xxh64));
    if (f.name.empty() || f.name == "." || f.name == ".." ||
        f.name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
      return r.Bad("files", fmt::format("{:?} is not a plain file name", f.name));
    }
    if (!files->empty() && !(files->back().name < f.name)) {
      return r.Bad("files", fmt::format("{:?} is not sorted or not unique", f.name));
    }
    files->push_back(std::move(f));
  }
  return Status::OK();
}

Status SnapshotManifest::Decode(std::string_view text, const std::string& name, SnapshotManifest* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, kFormat, kManifestFormatVersion, &r, &parser, &o, name));

  SnapshotManifest m;
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "window_ms", &m.window_ms));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "window_size_ms", &m.window_size_ms));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "version", UINT64_MAX, &m.version));
  SNAPSINK_RETURN_IF_ERROR(r.Uint32(o, "aggregation_version", &m.aggregation_version));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "rows", UINT64_MAX, &m.rows));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "events", &m.events));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "count", &m.count));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "sum_micros", &m.sum_micros));

  SNAPSINK_RETURN_IF_ERROR(DecodeSnapshotFiles(r, o, &m.files));
  *out = std::move(m);
  return Status::OK();
}

}  // namespace snapsink
