#include "publish/views.h"

#include <map>

#include "engine/filenames.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "publish/snapshot_manifest.h"

namespace snapsink {

const std::vector<std::string>& QueryColumns() {
  static const std::vector<std::string> columns = api::ToTable(std::vector<api::QueryRow>{}, 0).columns;
  return columns;
}

Status QueryRows(Reader* reader, const QuerySpec& q, std::vector<api::QueryRow>* out) {
  std::vector<GenerationEntry> windows;
  if (q.window) {
    if (const GenerationEntry* e = reader->Find(*q.window)) windows.push_back(*e);
  } else {
    windows = reader->windows();
  }
  auto emit = [&](const GenerationEntry& e, const Row& row) {
    out->push_back({e.window_ms, static_cast<uint64_t>(e.version),
                    api::Row{row.metric, row.key, row.count, row.sum_micros, row.events}});
  };
  for (const GenerationEntry& e : windows) {
    if (!q.metric.empty() && q.key) {
      Row row;
      Status g = reader->Get(e.window_ms, q.metric, *q.key, &row);
      if (g.IsNotFound()) continue;
      SNAPSINK_RETURN_IF_ERROR(g);
      emit(e, row);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(reader->Scan(e.window_ms, q.metric.empty() ? nullptr : &q.metric, [&](const Row& row) {
      if (!q.key || row.key == *q.key) emit(e, row);
    }));
  }
  return Status::OK();
}

Status QueryRecords(api::Reader* reader, const QuerySpec& q, std::vector<Record>* out) {
  std::vector<api::QueryRow> rows;
  SNAPSINK_RETURN_IF_ERROR(reader->Query(q, &rows));
  api::Table t = api::ToTable(rows, reader->generation());
  for (Record& r : t.records) out->push_back(std::move(r));
  return Status::OK();
}

Status ListPublished(Env* env, const std::string& root, std::vector<api::GenerationInfo>* generations_out,
                     std::vector<api::SnapshotInfo>* snapshots_out) {
  CurrentPointer pointer;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root, &pointer));
  const uint64_t current = pointer.generation;
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::ManifestsDir(root), &names);
  if (!s.ok() && !s.IsNotFound()) return s;
  std::map<uint64_t, GenerationManifest> generations;
  for (const std::string& n : names) {
    uint64_t g;
    if (!filenames::ParseGenerationName(n, &g)) continue;
    Status read = ReadGenerationManifest(env, root, g, &generations[g]);
    if (read.IsNotFound()) {  // gc removed it since the listing: not shown
      generations.erase(g);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(read);
  }
  if (generations_out != nullptr) {
    for (const auto& [g, m] : generations) {
      generations_out->push_back({g, m.parent, m.windows.size(), m.rollback_of, g == current});
    }
  }
  if (snapshots_out == nullptr) return Status::OK();
  // Every published snapshot directory, and which generations use it.
  std::vector<std::string> windows;
  s = env->GetChildren(filenames::SnapshotsDir(root), &windows);
  if (!s.ok() && !s.IsNotFound()) return s;
  for (const std::string& wname : windows) {
    int64_t w;
    if (!filenames::ParseWindowDirName(wname, &w)) continue;
    std::vector<std::string> versions;
    s = env->GetChildren(filenames::SnapshotWindowDir(root, w), &versions);
    if (s.IsNotFound()) continue;  // gc removed the window since the listing
    SNAPSINK_RETURN_IF_ERROR(s);
    for (const std::string& vname : versions) {
      uint64_t v;
      if (!filenames::ParseVersionDirName(vname, &v)) continue;
      const std::string dir = filenames::SnapshotDir(root, w, v);
      std::string text;
      SnapshotManifest m;
      s = env->ReadFileToString(filenames::Join(dir, filenames::kSnapshotManifestFile), &text);
      if (s.IsNotFound()) continue;  // ... or this snapshot
      SNAPSINK_RETURN_IF_ERROR(s);
      SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(text, dir, &m));
      api::SnapshotInfo info;
      info.window_ms = w;
      info.version = v;
      info.rows = m.rows;
      info.events = m.events;
      for (const FileEntry& f : m.files) info.bytes += f.bytes;
      for (const auto& [g, gm] : generations) {
        for (const GenerationEntry& e : gm.windows) {
          if (e.window_ms == w && e.version == v) {
            ++info.generations;
            if (g == current) info.current = true;
          }
        }
      }
      snapshots_out->push_back(info);
    }
  }
  return Status::OK();
}

Status PublishedRecords(Env* env, const std::string& root, const std::string& what, std::vector<Record>* out,
                        std::vector<std::string>* columns) {
  api::Table t;
  if (what == "generations") {
    std::vector<api::GenerationInfo> generations;
    SNAPSINK_RETURN_IF_ERROR(ListPublished(env, root, &generations, nullptr));
    t = api::ToTable(generations);
  } else {
    std::vector<api::SnapshotInfo> snapshots;
    SNAPSINK_RETURN_IF_ERROR(ListPublished(env, root, nullptr, &snapshots));
    t = api::ToTable(snapshots);
  }
  for (Record& r : t.records) out->push_back(std::move(r));
  *columns = std::move(t.columns);
  return Status::OK();
}

}  // namespace snapsink
