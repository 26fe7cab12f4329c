#include "publish/maintenance.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <set>
#include <thread>

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

namespace {

// Verify beside a writer: one LMDB read transaction, each generation pinned
// while it is checked (publish/reader.h), and a CURRENT that disagrees with
// state only reported once it holds still (a publish moves both).
constexpr int kCurrentAttempts = 20;

struct VerifyRun {
  Env* env;
  const std::string& root;
  Txn* txn;
  std::vector<std::string>* problems;
  std::vector<std::string>* notes;
  size_t* snapshots_checked;
  std::set<std::pair<int64_t, uint32_t>> checked;
  std::set<uint64_t> unfinished_backfills;
};

// What CURRENT names against what state records, read in a transaction
// taken after CURRENT: publish replaces CURRENT before its LMDB bookkeeping,
// so one above the last published generation is a publish the next one
// finishes, not damage.
void VerifyCurrent(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
                   std::vector<std::string>* notes) {
  std::vector<std::string> previous;
  for (int attempt = 0; attempt < kCurrentAttempts; ++attempt) {
    std::vector<std::string> found;
    uint64_t current = 0, again = 0;
    const Status first = ReadCurrent(env, root, &current);
    if (!first.ok()) {
      found.push_back(first.message());
    } else {
      std::unique_ptr<Txn> txn;
      Status s = live->BeginRead(&txn);
      Result<std::optional<uint64_t>> recorded = std::optional<uint64_t>(), last = std::optional<uint64_t>();
      if (s.ok()) recorded = Root::GetMetaU64(txn.get(), meta::kCurrentGeneration);
      if (s.ok()) last = Root::GetMetaU64(txn.get(), meta::kLastGeneration);
      if (!s.ok() || !recorded.ok() || !last.ok()) {
        found.push_back(!s.ok() ? s.message() : !recorded.ok() ? recorded.status().message() : last.status().message());
      } else if (current != 0 && !env->FileExists(filenames::GenerationManifest(root, current))) {
        found.push_back(filenames::Current(root) + ": names generation " + std::to_string(current) + ", which is missing");
      } else if (current != recorded->value_or(0) && current != last->value_or(0) + 1) {
        found.push_back(filenames::Current(root) + ": names generation " + std::to_string(current) +
                        ", but state records generation " + std::to_string(recorded->value_or(0)) + " as current");
      }
    }
    if (found.empty()) return;
    // Damage stays put; a writer at work changes CURRENT or state under us.
    Status reread = ReadCurrent(env, root, &again);
    const bool moved = reread.ok() != first.ok() || reread.message() != first.message() || again != current;
    if (!moved && found == previous) {
      problems->insert(problems->end(), found.begin(), found.end());
      return;
    }
    previous = moved ? std::vector<std::string>() : found;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  notes->push_back("the root kept changing while verify ran (a writer at work); CURRENT not checked against state");
}

// A backfill's generation is published before its seal records reach live
// state (the live bookkeeping after CURRENT); a rerun of the backfill
// finishes that, so a missing seal of its version is not damage.
bool UnfinishedBackfill(VerifyRun* run, uint64_t version) {
  if (version > UINT32_MAX) return false;
  std::string_view v;
  if (!run->txn->Get(Table::kMeta, meta::BackfillDoneKey(static_cast<uint32_t>(version)), &v).IsNotFound()) {
    return false;
  }
  return run->env->FileExists(filenames::BackfillStateDir(run->root, static_cast<uint32_t>(version)));
}

void VerifyGeneration(VerifyRun* run, uint64_t g) {
  std::unique_ptr<Reader> pinned;  // gc keeps it and its snapshots while held
  Status s = Reader::Open(run->env, run->root, g, &pinned);
  if (s.IsNotFound() || s.code() == Status::Code::kLocked) {
    run->notes->push_back("generation " + std::to_string(g) + ": removed by gc while verify ran; skipped");
    return;
  }
  if (!s.ok()) {
    run->problems->push_back(s.message());
    return;
  }
  for (const GenerationEntry& e : pinned->windows()) {
    if (!run->checked.insert({e.window_ms, e.version}).second) continue;
    const std::string dir = filenames::SnapshotDir(run->root, e.window_ms, e.version);
    PendingSnapshot p{e.window_ms, e.version, {}};
    std::string_view v;
    s = run->txn->Get(Table::kSeals, codec::SealKey(e.window_ms, e.version), &v);
    if (s.IsNotFound() && UnfinishedBackfill(run, e.version)) {
      if (run->unfinished_backfills.insert(e.version).second) {
        run->notes->push_back("unfinished backfill v" + std::to_string(e.version) + " publish; rerun backfill");
      }
      continue;
    }
    ++*run->snapshots_checked;
    if (s.ok()) s = codec::Decode(v, &p.seal);
    if (!s.ok()) {
      run->problems->push_back(dir + ": no seal record in state to reconcile against (" + s.message() + ")");
      continue;
    }
    uint64_t manifest_hash = 0;
    s = ReconcileSnapshot(run->env, dir, p, &manifest_hash);
    if (!s.ok()) {
      run->problems->push_back(s.message());
    } else if (manifest_hash != e.manifest_xxh64) {
      run->problems->push_back(filenames::Join(dir, filenames::kSnapshotManifestFile) +
                               ": checksum differs from the one generation " + std::to_string(g) + " recorded");
    }
  }
}

}  // namespace

Status Verify(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
              size_t* snapshots_checked) {
  std::vector<std::string> notes;
  return Verify(env, root, live, problems, &notes, snapshots_checked);
}

Status Verify(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
              std::vector<std::string>* notes, size_t* snapshots_checked) {
  problems->clear();
  notes->clear();
  *snapshots_checked = 0;
  // Listed before the transaction begins: a seal is committed before its
  // snapshot can be published, so every listed generation's seals are in it.
  std::vector<uint64_t> generations;
  SNAPSINK_RETURN_IF_ERROR(ListGenerations(env, root, &generations));
  VerifyCurrent(env, root, live, problems, notes);
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  VerifyRun run{env, root, txn.get(), problems, notes, snapshots_checked, {}, {}};
  for (uint64_t g : generations) VerifyGeneration(&run, g);
  // Each problem is one line of *problems; the status does not repeat them.
  if (!problems->empty()) return Status::Corruption(std::to_string(problems->size()) + " problem(s) found");
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
