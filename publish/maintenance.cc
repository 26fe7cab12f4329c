#include "publish/maintenance.h"

#include <xxhash.h>

#include <algorithm>
#include <set>

#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/timeutil.h"
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
  uint64_t current = 0;
  Status s = ReadCurrent(env, root, &current);
  if (!s.ok()) problems->push_back(s.message());
  std::vector<uint64_t> generations;
  SNAPSINK_RETURN_IF_ERROR(ListGenerations(env, root, &generations));
  if (current != 0 && !std::binary_search(generations.begin(), generations.end(), current)) {
    problems->push_back(filenames::Current(root) + ": names generation " + std::to_string(current) + ", which is missing");
  }
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  // CURRENT carries no checksum of its own; LMDB records what it should name.
  // One above the last published generation is a publish that stopped after
  // its switch, which the next publish finishes: not damage.
  SNAPSINK_ASSIGN_OR_RETURN(auto recorded, Root::GetMetaU64(txn.get(), meta::kCurrentGeneration));
  SNAPSINK_ASSIGN_OR_RETURN(auto last, Root::GetMetaU64(txn.get(), meta::kLastGeneration));
  if (s.ok() && current != recorded.value_or(0) && current != last.value_or(0) + 1) {
    problems->push_back(filenames::Current(root) + ": names generation " + std::to_string(current) +
                        ", but state records generation " + std::to_string(recorded.value_or(0)) + " as current");
  }
  std::set<std::pair<int64_t, uint32_t>> checked;
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
  uint64_t current = 0;
  SNAPSINK_RETURN_IF_ERROR(ReadCurrent(env, root, &current));
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

  std::set<std::pair<int64_t, uint32_t>> used;
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
      uint32_t v;
      if (!filenames::ParseVersionDirName(vname, &v) || used.count({w, v})) continue;
      SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::Join(wdir, vname)));
      result->removed_snapshots.push_back(FormatIso(w) + " v" + std::to_string(v));
      --left;
    }
    if (left == 0) SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(wdir));
  }
  return env->SyncDir(filenames::SnapshotsDir(root));
}

Status Rollback(Env* env, const std::string& root, Store* live, uint64_t generation) {
  {
    // manifests/<last + 1> may exist from a publish that crashed before its
    // switch; it was never published, and the rerun of that publish rewrites
    // it with this number: making it current would give it itself as parent.
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_ASSIGN_OR_RETURN(auto last, Root::GetMetaU64(read.get(), meta::kLastGeneration));
    if (generation == 0 || generation > last.value_or(0)) {
      return Status::NotFound("generation " + std::to_string(generation) + " was never published");
    }
  }
  GenerationManifest gm;
  SNAPSINK_RETURN_IF_ERROR(ReadGenerationManifest(env, root, generation, &gm));
  for (const GenerationEntry& e : gm.windows) {
    const std::string path = filenames::Join(filenames::SnapshotDir(root, e.window_ms, e.version), filenames::kSnapshotManifestFile);
    std::string text;
    Status s = env->ReadFileToString(path, &text);
    if (!s.ok()) return Status::Corruption("generation " + std::to_string(generation) + " names " + path + ": " + s.message());
    if (XXH64(text.data(), text.size(), 0) != e.manifest_xxh64) {
      return Status::Corruption(path + ": checksum differs from the one generation " + std::to_string(generation) + " recorded");
    }
  }
  // LMDB first: after a crash between the two, the next publish already
  // builds on G, and running the rollback again moves CURRENT.
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kCurrentGeneration, generation));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  return WriteFileAtomic(env, filenames::Current(root), std::to_string(generation) + "\n");
}

}  // namespace snapsink
