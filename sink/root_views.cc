#include "sink/root_views.h"

#include <map>

#include "engine/filenames.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "snapshot/snapshot_manifest.h"

namespace snapsink {

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
    // gc removed it since the listing: not shown. gc removes a generation's
    // top manifest before the parts only it names, so a part found missing
    // while the top is gone is that removal, not damage.
    bool removed = read.IsNotFound();
    if (!read.ok() && !removed) {
      bool exists = true;
      SNAPSINK_RETURN_IF_ERROR(env->Exists(filenames::GenerationManifest(root, g), &exists));
      removed = !exists;
    }
    if (removed) {
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
      info.window_start_ms = w;
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

}  // namespace snapsink
