#include "publish/maintenance.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <map>
#include <set>
#include <thread>

#include <xxhash.h>

#include "engine/crash_point.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/s3/s3_uri.h"
#include "engine/window_retention.h"
#include "engine/root_files.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "snapshot/checked_json.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"
#include "publish/generation_parts.h"
#include "partitions/partition_seals.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_manifest.h"
#include "snapshot/table_cache.h"

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
// while it is checked (publish/generation_reader.h), and a CURRENT that disagrees with
// state only reported once it holds still (a publish moves both).
constexpr int kCurrentAttempts = 20;

struct VerifyRun {
  Env* env;
  const std::string& root;
  Txn* txn;
  std::vector<std::string>* problems;
  std::vector<std::string>* notes;
  size_t* snapshots_checked;
  std::set<std::pair<int64_t, uint64_t>> checked;
  std::set<uint64_t> unfinished_backfills;
};

// What CURRENT names against what state records. CURRENT behind LMDB while
// CURRENT.tmp names the recorded generation is a command that stopped
// between its commit and its rename, which the next writer finishes: not
// damage.
void CheckCurrentOnce(Env* env, const std::string& root, Store* live, std::vector<std::string>* found) {
  CurrentPointer current, recorded;
  Status s = ReadCurrentPointer(env, root, &current);
  if (!s.ok()) {
    found->push_back(s.message());
    return;
  }
  std::unique_ptr<Txn> txn;
  s = live->BeginRead(&txn);
  if (s.ok()) s = RecordedCurrent(txn.get(), &recorded);
  if (!s.ok()) {
    found->push_back(s.message());
    return;
  }
  if (current.generation != 0) {
    GenerationManifest named;
    s = ReadManifestNamedBy(env, root, current, &named);
    if (!s.ok()) {
      found->push_back(s.message());
    } else if (current != recorded && !SwitchPending(env, root, recorded)) {
      if (current.generation == recorded.generation) {
        // Same generation, another manifest checksum: say so, not "1 but 1".
        found->push_back(filenames::Current(root) + ": names generation " + std::to_string(current.generation) +
                         " with manifest checksum " + Hex64(current.manifest_xxh64) +
                         ", but state records checksum " + Hex64(recorded.manifest_xxh64) + " for it");
      } else {
        found->push_back(filenames::Current(root) + ": names generation " + std::to_string(current.generation) +
                         ", but state records generation " + std::to_string(recorded.generation) + " as current");
      }
    }
  } else if (Status missing = CheckCurrentPresent(env, root, txn.get()); !missing.ok()) {
    found->push_back(missing.message());  // with the fix
  }
}

// Damage stays put; a writer at work changes CURRENT or state under us, so a
// finding is only reported once it holds still.
void VerifyCurrent(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
                   std::vector<std::string>* notes) {
  std::vector<std::string> previous;
  for (int attempt = 0; attempt < kCurrentAttempts; ++attempt) {
    std::string before, after;
    const bool had = env->ReadFileToString(filenames::Current(root), &before).ok();
    std::vector<std::string> found;
    CheckCurrentOnce(env, root, live, &found);
    if (found.empty()) return;
    const bool has = env->ReadFileToString(filenames::Current(root), &after).ok();
    const bool moved = had != has || before != after;
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
  std::string_view v;
  if (!run->txn->Get(Table::kMeta, meta::BackfillDoneKey(version), &v).IsNotFound()) return false;
  return run->env->FileExists(filenames::BackfillStateDir(run->root, version));
}

// Without the writer's state (a root in a bucket read from another machine):
// a snapshot against its own manifest: every byte against its checksum, the
// rows against the count, the manifest against the generation's record.
Status CheckSnapshotAlone(Env* env, const std::string& dir, const GenerationEntry& e) {
  const std::string manifest_path = filenames::Join(dir, filenames::kSnapshotManifestFile);
  std::string text;
  Status s = env->ReadFileToString(manifest_path, &text);
  if (s.IsNotFound()) return Status::Corruption(manifest_path + ": missing");
  SNAPSINK_RETURN_IF_ERROR(s);
  if (XXH64(text.data(), text.size(), 0) != e.manifest_xxh64) {
    return Status::Corruption(manifest_path + ": checksum differs from the one its generation recorded");
  }
  SnapshotManifest m;
  SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(text, manifest_path, &m));
  const FileEntry* data = nullptr;
  for (const FileEntry& f : m.files) {
    if (f.name == filenames::kDataFile) data = &f;
  }
  if (data == nullptr) return Status::Corruption(manifest_path + ": names no data file");
  std::unique_ptr<SnapshotReader> reader;
  SNAPSINK_RETURN_IF_ERROR(SnapshotReader::Open(env, filenames::Join(dir, filenames::kDataFile), &reader));
  uint64_t rows = 0;
  const std::function<void(const RowView&)> count = [&](const RowView&) { ++rows; };
  SNAPSINK_RETURN_IF_ERROR(reader->VerifyAll(data->xxh64, &count));
  if (rows != m.rows) {
    return Status::Corruption(dir + ": " + std::to_string(rows) + " rows, its manifest says " + std::to_string(m.rows));
  }
  return Status::OK();
}

void VerifyGeneration(VerifyRun* run, uint64_t g) {
  std::unique_ptr<Reader> pinned;  // gc keeps it and its snapshots while held
  Status s = Reader::Open(run->env, run->root, g, &pinned);
  if (s.IsNotFound() || s.IsLocked()) {
    run->notes->push_back("generation " + std::to_string(g) + ": removed by gc while verify ran; skipped");
    return;
  }
  if (!s.ok()) {
    run->problems->push_back(s.message());
    return;
  }
  if (run->txn == nullptr) {
    for (const GenerationEntry& e : pinned->windows()) {
      if (!run->checked.insert({e.window_ms, e.version}).second) continue;
      ++*run->snapshots_checked;
      s = CheckSnapshotAlone(run->env, filenames::SnapshotDir(run->root, e.window_ms, e.version), e);
      if (!s.ok()) run->problems->push_back(s.message());
    }
    return;
  }
  auto floor = RetainedFrom(run->txn);
  size_t dropped = 0;
  for (const GenerationEntry& e : pinned->windows()) {
    if (!run->checked.insert({e.window_ms, e.version}).second) continue;
    const std::string dir = filenames::SnapshotDir(run->root, e.window_ms, e.version);
    PendingSnapshot p{e.window_ms, e.version, {}};
    std::string_view v;
    s = run->txn->Get(Table::kSeals, codec::SealKey(e.window_ms, e.version), &v);
    if (s.IsNotFound() && floor.ok() && *floor && e.window_ms < **floor) {
      ++dropped;  // retention deleted its seal with its state: nothing to reconcile against
      continue;
    }
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
  if (dropped > 0) {
    run->notes->push_back("generation " + std::to_string(g) + ": " + std::to_string(dropped) +
                          " window(s) dropped by retention since; not reconciled (their state is gone)");
  }
}

// gc in a root in a bucket cannot see readers on other machines (nor an
// upload in flight), so it keeps every generation replaced less than
// min_age ago and every object written less than min_age ago, by the
// objects' Last-Modified in one listing of the root. Its wall clock decides
// what is removed, nothing else: no output row, no name or checksum.
struct AgeRule {
  bool on = false;
  int64_t now_ms = 0;
  int64_t min_age_ms = 0;
  std::map<std::string, int64_t> written;  // path -> Last-Modified (Unix ms)

  Status Load(Env* env, const std::string& root) {
    auto* bucket = IsBucketPath(root) ? dynamic_cast<BucketRootEnv*>(env) : nullptr;
    if (bucket == nullptr || bucket->gc_min_age_ms() <= 0) return Status::OK();
    on = true;
    min_age_ms = bucket->gc_min_age_ms();
    now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch()).count();
    std::map<std::string, int64_t> rel;
    SNAPSINK_RETURN_IF_ERROR(bucket->ModifiedTimes(root, &rel));
    for (auto& [k, t] : rel) written.emplace_hint(written.end(), root + "/" + k, t);
    return Status::OK();
  }
  // An object written less than min_age ago, or not seen by the listing.
  bool Young(const std::string& path) const {
    if (!on) return false;
    auto it = written.find(path);
    return it == written.end() || now_ms - it->second < min_age_ms;
  }
  // Any object under dir young, or none seen.
  bool YoungTree(const std::string& dir) const {
    if (!on) return false;
    const std::string prefix = dir + "/";
    bool any = false;
    for (auto it = written.lower_bound(prefix); it != written.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      any = true;
      if (now_ms - it->second < min_age_ms) return true;
    }
    return !any;
  }
};

// A part no survivor names was left by a generation gc removed, or by a
// publish that stopped before its top manifest (its rerun writes it again).
Status RemoveUnusedParts(Env* env, const std::string& root, const std::set<uint64_t>& used, const AgeRule& age,
                         size_t* removed) {
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::PartsDir(root), &names);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  size_t before = *removed;
  for (const std::string& n : names) {
    uint64_t h;
    if (!filenames::ParsePartName(n, &h) || used.count(h) || age.Young(filenames::GenerationPart(root, h))) continue;
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(filenames::GenerationPart(root, h)));
    ++*removed;
  }
  return *removed != before ? env->SyncDir(filenames::PartsDir(root)) : Status::OK();
}

// "<window_ms>-v<version>", the name of a merged/<topic>/ object.
bool ParseMergedInputsName(std::string_view name, int64_t* w, uint64_t* v) {
  const size_t dash = name.find("-v");
  if (dash == 0 || dash == std::string_view::npos || dash + 2 >= name.size()) return false;
  int64_t window = 0;
  for (size_t i = name[0] == '-' ? 1 : 0; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    window = window * 10 + (name[i] - '0');
  }
  uint64_t version = 0;
  for (size_t i = dash + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    version = version * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  *w = name[0] == '-' ? -window : window;
  *v = version;
  return true;
}

// In a bucket, merged/<topic>/<window>-v<version> says what a merged version
// of a window was made from, for the processes that take the bucket's
// CURRENT (publish/merged_bucket.h). One whose window version no kept
// generation names (nor a staged seal) is read by no one again; it goes once
// older than --min-age (a merge in flight writes it before its generation).
Status RemoveUnusedMergedInputs(Env* env, const std::string& root, const std::set<std::pair<int64_t, uint64_t>>& used,
                                const AgeRule& age, std::vector<std::string>* removed) {
  if (!IsBucketPath(root)) return Status::OK();  // on a local disk these live in ROOT's state
  std::vector<std::string> topics;
  Status s = env->GetChildren(filenames::MergedInputsDir(root), &topics);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& topic : topics) {
    std::vector<std::string> names;
    SNAPSINK_RETURN_IF_ERROR(env->GetChildren(filenames::Join(filenames::MergedInputsDir(root), topic), &names));
    for (const std::string& n : names) {
      int64_t w;
      uint64_t v;
      if (!ParseMergedInputsName(n, &w, &v) || used.count({w, v})) continue;
      const std::string path = filenames::MergedInputsFile(root, topic, w, v);
      if (path != filenames::Join(filenames::Join(filenames::MergedInputsDir(root), topic), n) || age.Young(path)) {
        continue;
      }
      SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(path));
      MaybeCrash("gc.merged_inputs");
      removed->push_back("merged/" + topic + "/" + n);
    }
  }
  return Status::OK();
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
  std::unique_ptr<Txn> txn;
  if (live != nullptr) {
    VerifyCurrent(env, root, live, problems, notes);
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  } else {
    // No state to hold CURRENT against: it must name a manifest that hashes as it says.
    CurrentPointer current;
    GenerationManifest named;
    Status s = ReadCurrentPointer(env, root, &current);
    if (s.ok() && current.generation != 0) s = ReadTopManifestNamedBy(env, root, current, &named);
    if (!s.ok()) problems->push_back(s.message());
    notes->push_back("no writer's state given: each snapshot is checked against its own manifest, not reconciled "
                     "with its seal record (give --state DIR of the writer for that)");
  }
  VerifyRun run{env, root, txn.get(), problems, notes, snapshots_checked, {}, {}};
  for (uint64_t g : generations) VerifyGeneration(&run, g);
  // Each problem is one line of *problems; the status does not repeat them.
  if (!problems->empty()) return Status::Corruption(std::to_string(problems->size()) + " problem(s) found");
  return Status::OK();
}

Status CollectGarbage(Env* env, const std::string& root, Store* live, uint64_t keep, GcResult* result) {
  *result = GcResult();
  SNAPSINK_RETURN_IF_ERROR(FinishPublish(env, root, live));
  SNAPSINK_RETURN_IF_ERROR(RemoveStrayTempFiles(env, root, &result->removed_temp_files));
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
  AgeRule age;
  SNAPSINK_RETURN_IF_ERROR(age.Load(env, root));
  for (size_t i = 0; i < generations.size(); ++i) {
    const uint64_t g = generations[i];
    if (g == current || generations.size() - i <= keep) {
      survivors.push_back(g);
      continue;
    }
    const std::string path = filenames::GenerationManifest(root, g);
    // In a bucket: replaced (the next generation's manifest written) less
    // than min_age ago, a reader elsewhere may still read it: as pinned.
    if (age.on && (i + 1 == generations.size() || age.Young(filenames::GenerationManifest(root, generations[i + 1])))) {
      result->pinned.push_back(g);
      survivors.push_back(g);
      continue;
    }
    std::unique_ptr<FileLock> lock;
    Status s = env->LockFile(path, &lock);
    if (s.IsLocked()) {  // a reader has it pinned
      result->pinned.push_back(g);
      survivors.push_back(g);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(s);
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(path));  // while locked: no reader can pin it now
    result->removed_generations.push_back(g);
  }
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::ManifestsDir(root)));

  // Parts and snapshots are shared between generations: each goes when no
  // kept or pinned generation names it.
  std::set<std::pair<int64_t, uint64_t>> used;
  std::set<uint64_t> used_parts;
  for (uint64_t g : survivors) {
    GenerationManifest gm;
    SNAPSINK_RETURN_IF_ERROR(ReadGenerationTop(env, root, g, &gm));
    SNAPSINK_RETURN_IF_ERROR(LoadGenerationWindows(env, root, &gm, &used_parts));  // every part of its tree
    for (const GenerationEntry& e : gm.windows) used.insert({e.window_ms, e.version});
  }
  SNAPSINK_RETURN_IF_ERROR(RemoveUnusedParts(env, root, used_parts, age, &result->removed_parts));
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
      if (!filenames::ParseVersionDirName(vname, &v) || used.count({w, v}) ||
          age.YoungTree(filenames::Join(wdir, vname))) {
        continue;
      }
      SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::Join(wdir, vname)));
      result->removed_snapshots.push_back(FormatIso(w) + " v" + std::to_string(v));
      --left;
    }
    if (left == 0) SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(wdir));
  }
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::SnapshotsDir(root)));
  // This process's readers may still hold removed files open: their disk
  // space comes back only once they are closed.
  if (!result->removed_snapshots.empty()) TableCache::Default()->DropRemoved();
  SNAPSINK_RETURN_IF_ERROR(RemoveUnusedMergedInputs(env, root, used, age, &result->removed_merged_inputs));
  std::optional<int64_t> floor;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_ASSIGN_OR_RETURN(floor, RetainedFrom(read.get()));
  }
  SealRecordsRemoved seals;
  SNAPSINK_RETURN_IF_ERROR(RemoveDeadSealRecords(env, root, floor, &seals, [&age](const std::string& dir) {
    return age.YoungTree(dir);
  }));
  result->removed_seal_records = std::move(seals.replaced);
  result->removed_seal_records_beyond_retention = std::move(seals.beyond_retention);
  return Status::OK();
}

}  // namespace snapsink
