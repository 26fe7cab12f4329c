#include "publish/publisher.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "engine/crash_point.h"
#include "engine/decimal.h"
#include "engine/env_bucket_root.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/s3/s3_uri.h"
#include "engine/state_checkpoint.h"
#include "engine/timeutil.h"
#include "engine/window_records.h"
#include "engine/window_retention.h"
#include "publish/current_file.h"
#include "publish/generation_parts.h"
#include "snapshot/snapshot_file.h"

namespace snapsink {

Status StagedSeals(Store* store, std::vector<PendingSnapshot>* out) {
  out->clear();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&txn));
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, "", [&](std::string_view k, std::string_view v) {
    PendingSnapshot p;
    st = codec::Decode(v, &p.seal);
    if (!st.ok()) return false;
    if (p.seal.state != SealState::kStaged) return true;
    codec::DecodeSealKey(k, &p.window_ms, &p.version);
    out->push_back(std::move(p));
    return true;
  }));
  return st;
}

namespace {

std::string Mismatch(const PendingSnapshot& p, const std::string& what, const std::string& in_files,
                     const std::string& in_ledger) {
  return "reconciliation failed for window " + FormatIso(p.window_ms) + " v" + std::to_string(p.version) + ": " +
         what + " " + in_files + " in the staged files, " + in_ledger + " in the ledger";
}

// Empty staging window directories are not kept.
Status RemoveEmptyStagingWindows(Env* env, const std::string& root) {
  std::vector<std::string> windows;
  if (!env->GetChildren(filenames::StagingDir(root), &windows).ok()) return Status::OK();
  for (const std::string& name : windows) {
    int64_t w;
    if (!filenames::ParseWindowDirName(name, &w)) continue;
    std::vector<std::string> left;
    const std::string wdir = filenames::StagingWindowDir(root, w);
    if (env->GetChildren(wdir, &left).ok() && left.empty()) SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(wdir));
  }
  return Status::OK();
}

// Staging directories of superseded seals: a command that stopped after its
// commit may leave them. And the staging copy of a published seal whose
// published twin verifies: a directory rename that a file system does as a
// copy and a removal, stopped between the two after the publish completed,
// leaves both names (SettleHalfRenamed settles those still staged). A twin
// that does not verify keeps the copy (verify reports the twin).
Status RemoveSupersededStaging(Env* env, const std::string& root, Store* live) {
  std::vector<std::pair<int64_t, uint64_t>> dirs;
  std::vector<PendingSnapshot> published;  // with a staging copy left
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, "", [&](std::string_view k, std::string_view v) {
    SealRecord r;
    st = codec::Decode(v, &r);
    if (!st.ok()) return false;
    int64_t w;
    uint64_t ver;
    codec::DecodeSealKey(k, &w, &ver);
    if (r.state == SealState::kSuperseded) dirs.emplace_back(w, ver);
    if (r.state == SealState::kPublished && env->FileExists(filenames::StagingSnapshotDir(root, w, ver))) {
      published.push_back(PendingSnapshot{w, ver, std::move(r)});
    }
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  txn.reset();
  for (const auto& [w, ver] : dirs) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::StagingSnapshotDir(root, w, ver)));
  }
  for (const PendingSnapshot& p : published) {
    const std::string staging = filenames::StagingSnapshotDir(root, p.window_ms, p.version);
    std::string copy;
    if (!env->ReadFileToString(filenames::Join(staging, filenames::kSnapshotManifestFile), &copy).ok()) continue;
    uint64_t placed_xxh64 = 0;
    Status s = ReconcileSnapshot(env, filenames::SnapshotDir(root, p.window_ms, p.version), p, &placed_xxh64);
    if (s.ok() && placed_xxh64 == XXH64(copy.data(), copy.size(), 0)) {
      SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(staging));
    } else if (!s.ok() && !s.IsCorruption() && !s.IsReconcile() &&
               !s.IsNotFound()) {
      return s;  // an I/O error: decide nothing
    }
  }
  return Status::OK();
}

// A crash can leave a directory rename half done on some file systems
// (overlay and network file systems copy, then remove): both
// staging/W/vN and snapshots/W/vN exist, and renaming onto a non-empty
// directory fails (ENOTEMPTY) on every rerun. The staged copy has just
// reconciled. The one in snapshots/ is kept when it verifies and is the
// same snapshot (its manifest, which carries every file's checksum, has the
// same bytes): the staging copy goes and *staged becomes false. Otherwise
// (a torn copy) it is removed, durably, and the staged copy is renamed as
// usual. It is not published: its seal is still staged, so no generation
// names it. In a bucket nothing is half renamed: the staged copy is
// uploaded file by file, create-only, and what a crashed attempt put there
// already (the same bytes) is success, so nothing is asked.
Status SettleHalfRenamed(Env* env, const std::string& root, const PendingSnapshot& p, uint64_t staged_manifest_xxh64,
                         bool* staged) {
  if (IsBucketPath(root)) return Status::OK();
  const std::string placed = filenames::SnapshotDir(root, p.window_ms, p.version);
  if (!env->FileExists(placed)) return Status::OK();
  const std::string staging = filenames::StagingSnapshotDir(root, p.window_ms, p.version);
  uint64_t placed_xxh64 = 0;
  Status s = ReconcileSnapshot(env, placed, p, &placed_xxh64);
  if (s.ok() && placed_xxh64 == staged_manifest_xxh64) {
    *staged = false;
    return env->RemoveTree(staging);
  }
  if (!s.ok() && !s.IsCorruption() && !s.IsReconcile() && !s.IsNotFound()) {
    return s;  // an I/O error: decide nothing
  }
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(placed));
  return env->SyncDir(filenames::SnapshotWindowDir(root, p.window_ms));
}


// In a bucket a staged snapshot is uploaded whole, then its local copy is
// removed, manifest.json first: a staged copy without its manifest.json
// whose manifest.json is in the bucket was uploaded whole by a crashed
// attempt (killed part way through the removal). What is left of it goes,
// and *staged becomes false (the bucket's copy is reconciled). Otherwise
// (the bucket lacks it too: damage) nothing is touched.
Status SettleHalfRemoved(Env* env, const std::string& root, const PendingSnapshot& p, bool* staged) {
  if (!*staged || !IsBucketPath(root)) return Status::OK();
  const std::string staging = filenames::StagingSnapshotDir(root, p.window_ms, p.version);
  if (env->FileExists(filenames::Join(staging, filenames::kSnapshotManifestFile))) return Status::OK();
  bool uploaded = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(
      filenames::Join(filenames::SnapshotDir(root, p.window_ms, p.version), filenames::kSnapshotManifestFile),
      &uploaded));
  if (!uploaded) return Status::OK();
  *staged = false;
  return env->RemoveTree(staging);
}
}  // namespace

Status FinishPublish(Env* env, const std::string& root, Store* live) {
  SNAPSINK_RETURN_IF_ERROR(FinishCurrent(env, root, live));
  SNAPSINK_RETURN_IF_ERROR(RemoveSupersededStaging(env, root, live));
  return RemoveEmptyStagingWindows(env, root);
}

namespace {
// The data file's blocks are checked in this many runs at once (both cores).
constexpr size_t kReconcileRuns = 2;
}  // namespace

Status ReconcileSnapshot(Env* env, const std::string& dir, const PendingSnapshot& p, uint64_t* manifest_xxh64) {
  const std::string manifest_path = filenames::Join(dir, filenames::kSnapshotManifestFile);
  std::string text;
  Status s = env->ReadFileToString(manifest_path, &text);
  if (s.IsNotFound()) return Status::Corruption(manifest_path + ": missing");
  SNAPSINK_RETURN_IF_ERROR(s);
  SnapshotManifest m;
  SNAPSINK_RETURN_IF_ERROR(SnapshotManifest::Decode(text, manifest_path, &m));
  *manifest_xxh64 = XXH64(text.data(), text.size(), 0);
  if (m.window_ms != p.window_ms || m.version != p.version) {
    return Status::Corruption(manifest_path + ": names window " + FormatIso(m.window_ms) + " v" +
                              std::to_string(m.version));
  }
  const FileEntry* data = nullptr;
  for (const FileEntry& f : m.files) {
    if (f.name == filenames::kDataFile) data = &f;
  }
  if (data == nullptr) return Status::Corruption(manifest_path + ": names no data file");
  // Every other file it names must be there with its checksum (the data
  // file's is checked with its rows below).
  for (const FileEntry& f : m.files) {
    if (f.name == filenames::kDataFile) continue;
    const std::string path = filenames::Join(dir, f.name);
    std::string bytes;
    Status r = env->ReadFileToString(path, &bytes);
    if (r.IsNotFound()) return Status::Corruption(path + ": missing, but " + manifest_path + " names it");
    SNAPSINK_RETURN_IF_ERROR(r);
    if (XXH64(bytes.data(), bytes.size(), 0) != f.xxh64) {
      return Status::Corruption(path + ": checksum differs from the one " + manifest_path + " records");
    }
  }
  const std::string data_path = filenames::Join(dir, filenames::kDataFile);
  std::unique_ptr<SnapshotReader> reader;
  SNAPSINK_RETURN_IF_ERROR(SnapshotReader::Open(env, data_path, &reader));

  // Records out: the rows, summed per metric, in the pass that checks every
  // block, on two cores: the blocks in two runs, each summed on its own
  // thread, the sums then added (wrapping, so in any order the same).
  // Rows come sorted by metric, so a map is touched once per metric.
  struct Tally {
    std::map<std::string, Aggregate> out;
    uint64_t rows = 0;
    Aggregate* current = nullptr;
    std::string_view current_metric;
  };
  Tally tallies[kReconcileRuns];
  std::vector<std::function<void(const RowView&)>> visits;
  for (Tally& t : tallies) {
    visits.push_back([&t](const RowView& r) {
      if (t.current == nullptr || r.metric != t.current_metric) {
        auto it = t.out.try_emplace(std::string(r.metric)).first;
        t.current = &it->second;
        t.current_metric = it->first;
      }
      t.current->count = WrappingAdd(t.current->count, r.count);
      t.current->events = WrappingAdd(t.current->events, r.events);
      t.current->sum_micros = WrappingAdd(t.current->sum_micros, r.sum_micros);
      ++t.rows;
    });
  }
  SNAPSINK_RETURN_IF_ERROR(reader->VerifyAllInParts(data->xxh64, visits));
  std::map<std::string, Aggregate>& out = tallies[0].out;
  uint64_t rows = tallies[0].rows;
  for (size_t i = 1; i < kReconcileRuns; i++) {
    rows += tallies[i].rows;
    for (const auto& [metric, a] : tallies[i].out) {
      Aggregate& b = out[metric];
      b.count = WrappingAdd(b.count, a.count);
      b.events = WrappingAdd(b.events, a.events);
      b.sum_micros = WrappingAdd(b.sum_micros, a.sum_micros);
    }
  }
  if (rows != p.seal.rows) {
    return Status::Reconcile(Mismatch(p, "rows", std::to_string(rows), std::to_string(p.seal.rows)));
  }
  if (rows != m.rows) return Status::Reconcile(Mismatch(p, "rows", std::to_string(rows), "manifest " + std::to_string(m.rows)));
  // Records in: the ledger as of the seal.
  std::map<std::string, Aggregate> in;
  for (const LedgerEntry& e : p.seal.ledger) in[e.metric] = e.totals;
  for (const auto& [metric, a] : in) {
    Aggregate b = out.count(metric) ? out[metric] : Aggregate();
    if (a.events != b.events)
      return Status::Reconcile(Mismatch(p, "metric " + metric + ": events", std::to_string(b.events), std::to_string(a.events)));
    if (a.count != b.count)
      return Status::Reconcile(Mismatch(p, "metric " + metric + ": count", std::to_string(b.count), std::to_string(a.count)));
    if (a.sum_micros != b.sum_micros)
      return Status::Reconcile(Mismatch(p, "metric " + metric + ": sum", FormatMicros(b.sum_micros), FormatMicros(a.sum_micros)));
  }
  for (const auto& [metric, b] : out) {
    if (!in.count(metric))
      return Status::Reconcile(Mismatch(p, "metric " + metric + ": events", std::to_string(b.events), "0"));
  }
  // The data file's stats section (what the manifest used to carry) against the rows.
  std::vector<MetricStats> stats;
  SNAPSINK_RETURN_IF_ERROR(reader->ReadStats(&stats));
  for (const MetricStats& ms : stats) {
    auto it = out.find(ms.metric);
    const Aggregate b = it != out.end() ? it->second : Aggregate();
    if (ms.events != b.events || ms.count != b.count || ms.sum_micros != b.sum_micros) {
      return Status::Reconcile("reconciliation failed for window " + FormatIso(p.window_ms) + " v" +
                               std::to_string(p.version) + ": metric " + ms.metric + ": the stats section says events " +
                               std::to_string(ms.events) + ", count " + std::to_string(ms.count) + ", sum " +
                               FormatMicros(ms.sum_micros) + "; the rows hold events " + std::to_string(b.events) +
                               ", count " + std::to_string(b.count) + ", sum " + FormatMicros(b.sum_micros));
    }
  }
  if (stats.size() != out.size()) {
    return Status::Reconcile(Mismatch(p, "metrics", std::to_string(out.size()), "stats " + std::to_string(stats.size())));
  }
  // The manifest's window totals against the rows.
  Aggregate total;
  for (const auto& [metric, b] : out) {
    total.events = WrappingAdd(total.events, b.events);
    total.count = WrappingAdd(total.count, b.count);
    total.sum_micros = WrappingAdd(total.sum_micros, b.sum_micros);
  }
  // Name the field that differs (events, count or sum), with both values.
  if (total.events != m.events) {
    return Status::Reconcile(Mismatch(p, "window totals: events", std::to_string(total.events),
                                      "manifest " + std::to_string(m.events)));
  }
  if (total.count != m.count) {
    return Status::Reconcile(Mismatch(p, "window totals: count", std::to_string(total.count),
                                      "manifest " + std::to_string(m.count)));
  }
  if (total.sum_micros != m.sum_micros) {
    return Status::Reconcile(Mismatch(p, "window totals: sum", FormatMicros(total.sum_micros),
                                      "manifest " + FormatMicros(m.sum_micros)));
  }
  return Status::OK();
}

Status ReadGenerationManifest(Env* env, const std::string& root, uint64_t generation, GenerationManifest* out) {
  SNAPSINK_RETURN_IF_ERROR(ReadGenerationTop(env, root, generation, out));
  return LoadGenerationWindows(env, root, out);
}

Status ReadGenerationTop(Env* env, const std::string& root, uint64_t generation, GenerationManifest* out) {
  const std::string path = filenames::GenerationManifest(root, generation);
  std::string text;
  Status s = env->ReadFileToString(path, &text);
  if (s.IsNotFound()) return Status::NotFound("generation " + std::to_string(generation) + " not found (" + path + ")");
  SNAPSINK_RETURN_IF_ERROR(s);
  SNAPSINK_RETURN_IF_ERROR(GenerationManifest::Decode(text, path, out));
  if (out->generation != generation) return Status::Corruption(path + ": names generation " + std::to_string(out->generation));
  return Status::OK();
}

std::string UnpublishedGenerationKey(uint64_t g) { return "unpublished_generation/" + std::to_string(g); }

Status NextGeneration(Env* env, const std::string& root, uint64_t last, GenerationManifest* gm, std::string* bytes) {
  // Above last, a manifest file may be left by a command that stopped before
  // its commit. Its number keeps its content: the same bytes are this
  // command's own rerun, other bytes are skipped, never overwritten.
  for (uint64_t g = last + 1;; ++g) {
    gm->generation = g;
    *bytes = gm->Encode();
    std::string existing;
    Status s = env->ReadFileToString(filenames::GenerationManifest(root, g), &existing);
    if (s.IsNotFound() || (s.ok() && existing == *bytes)) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(s);
  }
}

Result<int64_t> WindowSizeOfRoot(Store* live) {
  std::unique_ptr<Txn> read;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
  SNAPSINK_ASSIGN_OR_RETURN(auto window, Root::GetMetaU64(read.get(), meta::kWindowMs));
  return static_cast<int64_t>(window.value_or(RootConfig().window_ms));
}

Status CommitGeneration(Env* env, const std::string& root, Store* live, GenerationManifest* gm,
                        const std::function<Status(Txn*)>& bookkeeping, const std::string& crash_prefix) {
  SNAPSINK_ASSIGN_OR_RETURN(int64_t window_size_ms, WindowSizeOfRoot(live));
  std::sort(gm->windows.begin(), gm->windows.end(),
            [](const GenerationEntry& a, const GenerationEntry& b) { return a.window_ms < b.window_ms; });
  std::vector<std::string> parts;
  gm->parts.clear();
  gm->depth = kPartDepth;
  BuildPartTree(window_size_ms, gm->windows, &gm->parts, &parts);
  return CommitGenerationParts(env, root, live, gm, parts, bookkeeping, crash_prefix);
}

Status CommitGenerationParts(Env* env, const std::string& root, Store* live, GenerationManifest* gm,
                             const std::vector<std::string>& new_parts, const std::function<Status(Txn*)>& bookkeeping,
                             const std::string& crash_prefix, const std::function<Status()>& parts_written) {
  std::unique_ptr<Txn> read;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
  SNAPSINK_ASSIGN_OR_RETURN(auto last, Root::GetMetaU64(read.get(), meta::kLastGeneration));
  read.reset();
  // The parts first, each whole before the top manifest names it.
  SNAPSINK_RETURN_IF_ERROR(WriteParts(env, root, new_parts, crash_prefix));
  if (parts_written) SNAPSINK_RETURN_IF_ERROR(parts_written());
  std::string bytes;
  SNAPSINK_RETURN_IF_ERROR(NextGeneration(env, root, last.value_or(0), gm, &bytes));
  const CurrentPointer next{gm->generation, XXH64(bytes.data(), bytes.size(), 0)};
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(filenames::ManifestsDir(root)));
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(root));
  SNAPSINK_RETURN_IF_ERROR(WriteFileAtomic(env, filenames::GenerationManifest(root, gm->generation), bytes));
  MaybeCrash((crash_prefix + ".manifest_written").c_str());
  SNAPSINK_RETURN_IF_ERROR(StageCurrent(env, root, next));
  MaybeCrash((crash_prefix + ".before_current").c_str());

  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(RecordCurrent(txn.get(), next));
  const auto now = std::chrono::system_clock::now().time_since_epoch();  // for `status` only
  SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::PublishedAtKey(next.generation),
                                            std::chrono::duration_cast<std::chrono::milliseconds>(now).count()));
  for (uint64_t g = last.value_or(0) + 1; g < next.generation; ++g) {
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, UnpublishedGenerationKey(g), "skipped"));
  }
  SNAPSINK_RETURN_IF_ERROR(bookkeeping(txn.get()));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());  // the commit point
  MaybeCrash((crash_prefix + ".after_commit").c_str());

  // Failing from here on, the command is done: the next writer's
  // FinishCurrent installs what LMDB recorded.
  SNAPSINK_RETURN_IF_ERROR(InstallCurrent(env, root));
  MaybeCrash((crash_prefix + ".after_current").c_str());
  return Status::OK();
}

void LeaveOutBeyondRetention(std::optional<int64_t> oldest_kept, std::vector<GenerationEntry>* windows,
                             std::vector<int64_t>* left_out) {
  if (!oldest_kept) return;
  auto kept = std::stable_partition(windows->begin(), windows->end(),
                                    [&](const GenerationEntry& e) { return e.window_ms >= *oldest_kept; });
  for (auto it = kept; it != windows->end(); ++it) left_out->push_back(it->window_ms);
  windows->erase(kept, windows->end());
}

namespace {

// True when retention has a window to take out of the current generation
// or the live state, so that a publish with nothing staged still runs.
Result<bool> RetentionDue(Env* env, const std::string& root, Txn* txn, std::optional<int64_t> oldest_kept,
                          const CurrentPointer& current) {
  if (!oldest_kept) return false;
  SNAPSINK_ASSIGN_OR_RETURN(bool in_state, HasWindowsBefore(txn, *oldest_kept));
  if (in_state || current.generation == 0) return in_state;
  GenerationManifest now;
  SNAPSINK_RETURN_IF_ERROR(ReadTopManifestNamedBy(env, root, current, &now));
  if (!now.parts.empty()) return now.parts.front().first_ms < *oldest_kept;
  return !now.windows.empty() && now.windows.front().window_ms < *oldest_kept;
}

}  // namespace

namespace {

// Moves each of to_move out of staging (into a bucket: uploads, a few at
// once), then syncs every pending window's directory: a crashed attempt's
// renames too, not only those made here.
Status PlaceSnapshots(Env* env, const std::string& root, const std::vector<PendingSnapshot>& pending,
                      const std::vector<const PendingSnapshot*>& to_move) {
  auto move = [&](size_t i) {
    const PendingSnapshot& p = *to_move[i];
    SNAPSINK_RETURN_IF_ERROR(env->RenameFile(filenames::StagingSnapshotDir(root, p.window_ms, p.version),
                                             filenames::SnapshotDir(root, p.window_ms, p.version)));
    MaybeCrash("publish.after_rename");
    return Status::OK();
  };
  if (IsBucketPath(root)) {
    SNAPSINK_RETURN_IF_ERROR(UploadEach(to_move.size(), move));
  } else {
    for (size_t i = 0; i < to_move.size(); ++i) SNAPSINK_RETURN_IF_ERROR(move(i));
  }
  std::vector<std::string> window_dirs;
  for (const PendingSnapshot& p : pending) window_dirs.push_back(filenames::SnapshotWindowDir(root, p.window_ms));
  std::sort(window_dirs.begin(), window_dirs.end());
  window_dirs.erase(std::unique(window_dirs.begin(), window_dirs.end()), window_dirs.end());
  for (const std::string& dir : window_dirs) SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
  return Status::OK();
}

// Work run on a thread of its own; Join waits for it and gives its Status
// (OK when nothing was started). Joined on destruction too, so an early
// return never leaves it running.
class Background {
 public:
  Background() = default;
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    if (thread_.joinable()) thread_.join();
  }
  void Start(std::function<Status()> fn) {
    thread_ = std::thread([this, fn = std::move(fn)] { status_ = fn(); });
  }
  Status Join() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }

 private:
  std::thread thread_;
  Status status_;
};

}  // namespace

Result<bool> RetentionDue(Env* env, const std::string& root, Store* live, const RootConfig& config) {
  std::unique_ptr<Txn> read;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
  SNAPSINK_ASSIGN_OR_RETURN(std::optional<int64_t> oldest_kept, OldestKeptWindow(read.get(), config));
  CurrentPointer current;
  SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &current));
  return RetentionDue(env, root, read.get(), oldest_kept, current);
}

Status PublishSnapshots(Env* env, const std::string& root, Store* live, const RootConfig& config,
                        const std::vector<PendingSnapshot>& pending, const std::function<Status(Txn*)>& bookkeeping,
                        PublishResult* result) {
  *result = PublishResult();
  // A rerun after a crash past the commit finishes that command first.
  SNAPSINK_RETURN_IF_ERROR(FinishPublish(env, root, live));
  // The writer holds LOCK: the watermark read here is the one the commit sees.
  std::optional<int64_t> oldest_kept;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_ASSIGN_OR_RETURN(oldest_kept, OldestKeptWindow(read.get(), config));
    if (pending.empty()) {
      CurrentPointer current;
      SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &current));
      SNAPSINK_ASSIGN_OR_RETURN(bool due, RetentionDue(env, root, read.get(), oldest_kept, current));
      if (!due) return Status::OK();
    }
  }

  // 1. The gate: nothing moves unless every snapshot reconciles. A damaged
  // file of a snapshot not yet published fails the reconciliation (exit 4,
  // SPEC 4); only published snapshots are "corrupt".
  std::vector<uint64_t> manifest_hashes(pending.size());
  std::vector<bool> staged(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingSnapshot& p = pending[i];
    const std::string staging = filenames::StagingSnapshotDir(root, p.window_ms, p.version);
    bool whole_here = env->FileExists(staging);
    SNAPSINK_RETURN_IF_ERROR(SettleHalfRemoved(env, root, p, &whole_here));
    staged[i] = whole_here;
    // A crashed attempt may already have moved it.
    const std::string dir = staged[i] ? staging : filenames::SnapshotDir(root, p.window_ms, p.version);
    bool placed = staged[i];
    if (!placed) SNAPSINK_RETURN_IF_ERROR(env->Exists(dir, &placed));
    if (!placed) {
      return Status::Reconcile("reconciliation failed for window " + FormatIso(p.window_ms) + " v" +
                               std::to_string(p.version) + ": it is sealed but neither " + staging + " nor " + dir +
                               " exists");
    }
    Status s = ReconcileSnapshot(env, dir, p, &manifest_hashes[i]);
    if (s.IsCorruption()) {
      return Status::Reconcile("reconciliation failed for window " + FormatIso(p.window_ms) + " v" +
                               std::to_string(p.version) + ": " + s.message());
    }
    SNAPSINK_RETURN_IF_ERROR(s);
  }

  // 2. Move each snapshot out of staging. Batched: every snapshots/<window>/
  // is created, snapshots/ synced once, every snapshot renamed, then each
  // snapshots/<window>/ synced once: one fsync per window, all before the
  // generation manifest names any of them. The staging side of a rename
  // needs no fsync: a rename is durable once the directory holding its new
  // name is synced (ext4 and XFS journal it as one operation), and a staged
  // copy that came back could not be published twice (its seal is recorded
  // published, and the next seal's CleanStaging removes it).
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, filenames::SnapshotsDir(root)));  // deleted by hand: made again
  std::vector<std::string> window_dirs;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!staged[i]) continue;
    window_dirs.push_back(filenames::SnapshotWindowDir(root, pending[i].window_ms));
    SNAPSINK_RETURN_IF_ERROR(env->CreateDir(window_dirs.back()));
    bool still_staged = true;
    SNAPSINK_RETURN_IF_ERROR(SettleHalfRenamed(env, root, pending[i], manifest_hashes[i], &still_staged));
    staged[i] = still_staged;
  }
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::SnapshotsDir(root)));
  std::vector<const PendingSnapshot*> to_move;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (staged[i]) to_move.push_back(&pending[i]);
  }
  // Into a bucket a rename is an upload: a few windows' at once, on a
  // thread of their own beside step 3 and the parts of step 4 (reads and
  // create-only PUTs of other objects), all answered before the generation
  // manifest names any of them (CommitGenerationParts waits for them).
  Background uploads;
  if (IsBucketPath(root)) {
    uploads.Start([&] { return PlaceSnapshots(env, root, pending, to_move); });
  } else {
    SNAPSINK_RETURN_IF_ERROR(PlaceSnapshots(env, root, pending, to_move));
  }

  // 3. The new generation: the current one with these windows replaced.
  std::unique_ptr<Txn> read;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
  CurrentPointer current;
  SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &current));
  read.reset();
  // Only the parts of the changed windows' spans, and those retention
  // cuts, are read and written: the others are named again as they are.
  GenerationManifest base;
  if (current.generation > 0) SNAPSINK_RETURN_IF_ERROR(ReadTopManifestNamedBy(env, root, current, &base));
  std::vector<GenerationEntry> changed;
  for (size_t i = 0; i < pending.size(); ++i) {
    changed.push_back(GenerationEntry{pending[i].window_ms, pending[i].version, manifest_hashes[i]});
  }
  // A window sealed twice in one batch: its later version wins.
  std::stable_sort(changed.begin(), changed.end(),
                   [](const GenerationEntry& a, const GenerationEntry& b) { return a.window_ms < b.window_ms; });
  GenerationManifest gm;
  gm.parent = current.generation;
  std::vector<std::string> new_parts;
  std::vector<int64_t> left_out;
  SNAPSINK_RETURN_IF_ERROR(
      UpdateParts(env, root, config.window_ms, base, changed, oldest_kept, &gm, &new_parts, &left_out));

  // 4. Manifest, CURRENT.tmp, the LMDB commit (the commit point), CURRENT.
  // The commit also deletes the live state of windows beyond retention.
  std::vector<int64_t> dropped;
  SNAPSINK_RETURN_IF_ERROR(CommitGenerationParts(env, root, live, &gm, new_parts, [&](Txn* txn) {
    SNAPSINK_RETURN_IF_ERROR(bookkeeping(txn));
    dropped.clear();
    return oldest_kept ? DropWindowsBefore(txn, *oldest_kept, &dropped) : Status::OK();
  }, "publish", [&] { return uploads.Join(); }));

  SNAPSINK_RETURN_IF_ERROR(RemoveEmptyStagingWindows(env, root));
  result->generation = gm.generation;
  result->windows = pending.size();
  result->dropped = std::move(left_out);
  result->dropped.insert(result->dropped.end(), dropped.begin(), dropped.end());
  std::sort(result->dropped.begin(), result->dropped.end());
  result->dropped.erase(std::unique(result->dropped.begin(), result->dropped.end()), result->dropped.end());
  return Status::OK();
}

Status PublishStaged(Env* env, const std::string& root, Store* live, const RootConfig& config, PublishResult* result) {
  std::vector<PendingSnapshot> pending;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(live, &pending));
  SNAPSINK_RETURN_IF_ERROR(PublishSnapshots(env, root, live, config, pending, [&](Txn* txn) {
    for (const PendingSnapshot& p : pending) {
      SNAPSINK_RETURN_IF_ERROR(SetSealState(txn, p.window_ms, p.version, SealState::kPublished));
    }
    return Status::OK();
  }, result));
  return CheckpointState(env, root, live);
}

Status CheckpointState(Env* env, const std::string& root, Store* live) {
  if (!IsBucketPath(root)) return Status::OK();
  // In a bucket: the state as of the current generation, for a writer whose
  // --state DIR is lost (also after a command that stopped before it).
  std::vector<PendingSnapshot> pending;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(live, &pending));
  if (!pending.empty()) return Status::OK();
  std::unique_ptr<Txn> read;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
  CurrentPointer current;
  SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &current));
  read.reset();
  return WriteStateCheckpoint(env, root, live, current.generation);
}

}  // namespace snapsink
