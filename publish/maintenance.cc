#include "publish/maintenance.h"

#include <algorithm>
#include <set>

#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"
#include "publish/publisher.h"
#include "publish/reader.h"

namespace snapsink {

Status ListGenerations(Env* env, const std::string& root, std::vector<uint64_t>* out) {
  out->clear();
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::ManifestsDir(root), &names);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& n : names) {
    uint64_t g;
    if (filenames::ParseGenerationName(n, &g)) out->push_back(g);
  }
  std::sort(out->begin(), out->end());
  return Status::OK();
}

Status Verify(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
              size_t* snapshots_checked) {
  problems->clear();
  *snapshots_checked = 0;
  std::vector<uint64_t> generations;
  SNAPSINK_RETURN_IF_ERROR(ListGenerations(env, root, &generations));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  // CURRENT names a generation by number and checksum; LMDB records which.
  // CURRENT behind LMDB while CURRENT.tmp names the recorded one is a command
  // that stopped between its commit and its rename, which the next writer
  // finishes: not damage.
  CurrentPointer current, recorded;
  SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(txn.get(), &recorded));
  Status s = ReadCurrentPointer(env, root, &current);
  if (!s.ok()) {
    problems->push_back(s.message());
  } else if (current.generation != 0) {
    GenerationManifest named;
    s = ReadManifestNamedBy(env, root, current, &named);
    if (!s.ok()) {
      problems->push_back(s.message());
    } else if (current != recorded) {
      if (!SwitchPending(env, root, recorded)) {
        problems->push_back(filenames::Current(root) + ": names generation " + std::to_string(current.generation) +
                            ", but state records generation " + std::to_string(recorded.generation) + " as current");
      }
    }
  } else if (recorded.generation != 0) {
    if (!SwitchPending(env, root, recorded)) {
      problems->push_back(filenames::Current(root) + ": missing, but state records generation " +
                          std::to_string(recorded.generation) + " as current");
    }
  }
  std::set<std::pair<int64_t, uint64_t>> checked;
  for (uint64_t g : generations) {
    GenerationManifest gm;
    s = ReadGenerationManifest(env, root, g, &gm);
    if (!s.ok()) {
      problems->push_back(s.message());
      continue;
    }
    for (const GenerationEntry& e : gm.windows) {
      if (!checked.insert({e.window_ms, e.version}).second) continue;
      ++*snapshots_checked;
      const std::string dir = filenames::SnapshotDir(root, e.window_ms, e.version);
      PendingSnapshot p{e.window_ms, e.version, {}};
      std::string_view v;
      s = txn->Get(Table::kSeals, codec::SealKey(e.window_ms, e.version), &v);
      if (s.ok()) s = codec::Decode(v, &p.seal);
      if (!s.ok()) {
        problems->push_back(dir + ": no seal record in state to reconcile against (" + s.message() + ")");
        continue;
      }
      uint64_t manifest_hash = 0;
      s = ReconcileSnapshot(env, dir, p, &manifest_hash);
      if (!s.ok()) {
        problems->push_back(s.message());
      } else if (manifest_hash != e.manifest_xxh64) {
        problems->push_back(filenames::Join(dir, filenames::kSnapshotManifestFile) +
                            ": checksum differs from the one generation " + std::to_string(g) + " recorded");
      }
    }
  }
  if (!problems->empty()) {
    // Each problem is the caller's to print (verify prints them all): not repeated here.
    return Status::Corruption(std::to_string(problems->size()) + " problem(s) found");
  }
  return Status::OK();
}

Status CollectGarbage(Env* env, const std::string& root, Store* live, uint64_t keep, GcResult* result) {
  *result = GcResult();
  SNAPSINK_RETURN_IF_ERROR(FinishPublish(env, root, live));
  CurrentPointer pointer;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrentPointer(env, root, &pointer));
  const uint64_t current = pointer.generation;
  std::vector<uint64_t> listed;
  SNAPSINK_RETURN_IF_ERROR(ListGenerations(env, root, &listed));
  uint64_t last = 0;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_ASSIGN_OR_RETURN(auto l, Root::GetMetaU64(read.get(), meta::kLastGeneration));
    last = l.value_or(0);
  }
  // A manifest above the last published generation is a publish that crashed
  // before its switch: its rerun rewrites it. Keep it, and do not count it.
  std::vector<uint64_t> survivors, generations;
  for (uint64_t g : listed) (g > last ? survivors : generations).push_back(g);
  for (size_t i = 0; i < generations.size(); ++i) {
    const uint64_t g = generations[i];
    if (g == current || generations.size() - i <= keep) {
      survivors.push_back(g);
      continue;
    }
    const std::string path = filenames::GenerationManifest(root, g);
    std::unique_ptr<FileLock> lock;
    Status s = env->LockFile(path, &lock);
    if (s.code() == Status::Code::kLocked) {  // a reader has it pinned
      result->pinned.push_back(g);
      survivors.push_back(g);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(s);
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(path));  // while locked: no reader can pin it now
    result->removed_generations.push_back(g);
  }
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::ManifestsDir(root)));

  std::set<std::pair<int64_t, uint64_t>> used;
  for (uint64_t g : survivors) {
    GenerationManifest gm;
    SNAPSINK_RETURN_IF_ERROR(ReadGenerationManifest(env, root, g, &gm));
    for (const GenerationEntry& e : gm.windows) used.insert({e.window_ms, e.version});
  }
  std::vector<PendingSnapshot> staged;  // a crashed publish may have moved them already
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(live, &staged));
  for (const PendingSnapshot& p : staged) used.insert({p.window_ms, p.version});

  std::vector<std::string> windows;
  Status s = env->GetChildren(filenames::SnapshotsDir(root), &windows);
  if (!s.ok() && !s.IsNotFound()) return s;
  for (const std::string& wname : windows) {
    int64_t w;
    if (!filenames::ParseWindowDirName(wname, &w)) continue;
    const std::string wdir = filenames::SnapshotWindowDir(root, w);
    std::vector<std::string> versions;
    SNAPSINK_RETURN_IF_ERROR(env->GetChildren(wdir, &versions));
    size_t left = versions.size();
    for (const std::string& vname : versions) {
      uint64_t v;
      if (!filenames::ParseVersionDirName(vname, &v) || used.count({w, v})) continue;
      SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::Join(wdir, vname)));
      result->removed_snapshots.push_back(FormatIso(w) + " v" + std::to_string(v));
      --left;
    }
    if (left == 0) SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(wdir));
  }
  return env->SyncDir(filenames::SnapshotsDir(root));
}

}  // namespace snapsink
