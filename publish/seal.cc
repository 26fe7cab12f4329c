#include "publish/seal.h"

#include <map>

#include "engine/crash_point.h"
#include "engine/decimal.h"
#include "engine/filenames.h"
#include "engine/metric_kinds.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "engine/window_records.h"
#include "engine/window_retention.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_manifest.h"

namespace snapsink {

Status DirtyWindows(Store* store, const RootConfig& config, bool all, std::vector<int64_t>* out) {
  out->clear();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
  std::optional<int64_t> newest;
  if (max_ts) newest = static_cast<int64_t>(*max_ts);
  // A window beyond retention is never sealed: the next publish drops it.
  SNAPSINK_ASSIGN_OR_RETURN(auto oldest_kept, OldestKeptWindow(txn.get(), config));
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    WindowState w;
    decode = codec::Decode(v, &w);
    if (!decode.ok()) return false;
    const int64_t start = codec::DecodeWindowKey(k);
    if (oldest_kept && start < *oldest_kept) return true;
    if (w.dirty && (all || WindowClosed(start, config.window_ms, newest, config.lateness_ms))) out->push_back(start);
    return true;
  }));
  return decode;
}

namespace {

// A window whose files are written but not yet synced.
struct StagedWindow {
  int64_t window_ms = 0;
  uint64_t version = 0;
  std::string dir;
  SnapshotManifest manifest;
  SealRecord record;
  std::unique_ptr<WritableFile> data, manifest_file;
};

// The window's rows from the aggregates, written to path (unsynced, handed
// back in *file); the window totals into m.
Status WriteRows(Env* env, Txn* txn, int64_t window_ms, const std::string& path, SnapshotManifest* m,
                 std::unique_ptr<WritableFile>* file) {
  // A root with a metric of another kind than sum writes extended rows
  // (version 4); one of sum metrics only, the bytes it always wrote.
  MetricKinds kinds;
  SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(txn, &kinds));
  SnapshotWriterOptions options;
  // One with a quantiles metric, sketch rows (version 5); with a distinct
  // metric, distinct rows (version 6).
  for (const auto& [name, spec] : kinds) {
    options.extended_rows |= spec.kind != MetricKind::kSum;
    options.sketch_rows |= spec.kind == MetricKind::kQuantiles;
    options.distinct_rows |= spec.kind == MetricKind::kDistinct;
  }
  std::unique_ptr<SnapshotWriter> writer;
  SNAPSINK_RETURN_IF_ERROR(SnapshotWriter::Open(env, path, &writer, options));
  SNAPSINK_RETURN_IF_ERROR(ScanWindowAggregates(txn, window_ms, [&](const std::string& metric, std::string_view key,
                                                                     const Aggregate& a) {
    return writer->AddView(
        RowView{metric, key, a.count, a.sum_micros, a.events, a.has_range, a.min_micros, a.max_micros, a.sketch});
  }));
  for (const MetricStats& ms : writer->stats()) {
    m->events = WrappingAdd(m->events, ms.events);
    m->count = WrappingAdd(m->count, ms.count);
    // Wrapping on purpose: a window total across metrics may exceed int64; it
    // is checked the same way it is made, and per-metric sums are exact.
    m->sum_micros = WrappingAdd(m->sum_micros, ms.sum_micros);
  }
  SnapshotFileInfo info;
  SNAPSINK_RETURN_IF_ERROR(writer->FinishUnsynced(&info, file));
  m->rows = info.rows;
  m->files.push_back(FileEntry{filenames::kDataFile, info.bytes, info.xxh64});
  return Status::OK();
}

Status ReadLedger(Txn* txn, int64_t window_ms, std::vector<LedgerEntry>* out) {
  std::string prefix;
  codec::AppendWindowKey(&prefix, window_ms);
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kLedger, prefix, [&](std::string_view k, std::string_view v) {
    LedgerEntry e;
    std::string_view rest;
    if (!codec::SplitEscapedMetric(k.substr(8), &e.metric, &rest) || !rest.empty()) {
      st = Status::Corruption("malformed ledger key in state");
      return false;
    }
    st = codec::Decode(v, &e.totals);
    if (!st.ok()) return false;
    out->push_back(std::move(e));
    return true;
  }));
  return st;
}

// Writes the data file and manifest of one window into its staging
// directory, flushed, not synced.
Status WriteStagedWindow(const SealTarget& t, Txn* read, const SealJob& job, StagedWindow* w) {
  w->window_ms = job.window_ms;
  w->version = job.version;
  w->dir = filenames::StagingSnapshotDir(t.root, job.window_ms, job.version);
  SNAPSINK_RETURN_IF_ERROR(t.env->RemoveTree(w->dir));  // a retried seal rewrites the same directory
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(t.env, filenames::StagingDir(t.root)));  // deleted by hand: made again
  SNAPSINK_RETURN_IF_ERROR(t.env->CreateDirs(w->dir));
  SnapshotManifest& m = w->manifest;
  m.window_ms = job.window_ms;
  m.window_size_ms = t.window_size_ms;
  m.version = job.version;
  SNAPSINK_RETURN_IF_ERROR(
      WriteRows(t.env, read, job.window_ms, filenames::Join(w->dir, filenames::kDataFile), &m, &w->data));
  SNAPSINK_RETURN_IF_ERROR(ReadLedger(read, job.window_ms, &w->record.ledger));
  w->record.rows = m.rows;
  SNAPSINK_RETURN_IF_ERROR(
      t.env->NewWritableFile(filenames::Join(w->dir, filenames::kSnapshotManifestFile), &w->manifest_file));
  SNAPSINK_RETURN_IF_ERROR(w->manifest_file->Append(m.Encode()));
  return w->manifest_file->Flush();
}

// Commit point of a batch: the LMDB transaction that records its seals.
// The staged files (invisible to readers) are durable before it; a seal that
// fails before it leaves only staging/ files, which its rerun rewrites.
// One batch: every window's files written, then every file synced once,
// every directory synced once (staging/ once for the batch), then every seal
// recorded in one LMDB transaction.
Status SealOneBatch(const SealTarget& t, const SealJob* jobs, size_t n, std::vector<SealedWindow>* out) {
  std::vector<StagedWindow> batch(n);
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(t.store->BeginRead(&read));
    for (size_t i = 0; i < n; ++i) SNAPSINK_RETURN_IF_ERROR(WriteStagedWindow(t, read.get(), jobs[i], &batch[i]));
  }
  for (StagedWindow& w : batch) {
    for (std::unique_ptr<WritableFile>* f : {&w.data, &w.manifest_file}) {
      SNAPSINK_RETURN_IF_ERROR((*f)->Sync());
      SNAPSINK_RETURN_IF_ERROR((*f)->Close());
      f->reset();
    }
  }
  for (const StagedWindow& w : batch) SNAPSINK_RETURN_IF_ERROR(t.env->SyncDir(w.dir));
  for (const StagedWindow& w : batch) {
    SNAPSINK_RETURN_IF_ERROR(t.env->SyncDir(filenames::StagingWindowDir(t.root, w.window_ms)));
  }
  SNAPSINK_RETURN_IF_ERROR(t.env->SyncDir(filenames::StagingDir(t.root)));
  for (size_t i = 0; i < n; ++i) MaybeCrash("seal.before_record");

  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(t.store->BeginWrite(&txn));
  std::vector<std::pair<int64_t, uint64_t>> superseded;
  for (const StagedWindow& w : batch) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w.window_ms, &ws));
    // An unpublished staged version this one replaces.
    std::vector<uint64_t> old;
    SNAPSINK_RETURN_IF_ERROR(SupersedeStagedSeals(txn.get(), w.window_ms, w.version, &old));
    for (uint64_t v : old) superseded.emplace_back(w.window_ms, v);
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSeals, codec::SealKey(w.window_ms, w.version), codec::Encode(w.record)));
    ws.last_version = std::max(ws.last_version, w.version);
    ws.dirty = false;
    SNAPSINK_RETURN_IF_ERROR(WriteWindowState(txn.get(), w.window_ms, ws));
  }
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  for (const auto& [window_ms, ver] : superseded) {
    SNAPSINK_RETURN_IF_ERROR(t.env->RemoveTree(filenames::StagingSnapshotDir(t.root, window_ms, ver)));
  }
  for (const StagedWindow& w : batch) {
    out->push_back(SealedWindow{w.window_ms, w.version, w.manifest.rows, w.manifest.events});
  }
  return Status::OK();
}

}  // namespace

Status SealBatch(const SealTarget& t, const std::vector<SealJob>& jobs, std::vector<SealedWindow>* out) {
  for (size_t i = 0; i < jobs.size(); i += kSealBatchWindows) {
    SNAPSINK_RETURN_IF_ERROR(SealOneBatch(t, jobs.data() + i, std::min(kSealBatchWindows, jobs.size() - i), out));
  }
  return Status::OK();
}

Status SealWindow(const SealTarget& t, int64_t window_ms, uint64_t version, SealedWindow* out) {
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealBatch(t, {SealJob{window_ms, version}}, &sealed));
  *out = sealed.front();
  return Status::OK();
}

namespace {

// Removes staging/<w>/v<n> that no staged seal names and that no future seal
// will rewrite (n <= the window's last_version): leftovers of crashed
// attempts and superseded versions.
Status CleanStaging(const SealTarget& t) {
  std::vector<std::string> windows;
  Status s = t.env->GetChildren(filenames::StagingDir(t.root), &windows);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(t.store->BeginRead(&txn));
  for (const std::string& name : windows) {
    int64_t w;
    const std::string wdir = filenames::Join(filenames::StagingDir(t.root), name);
    if (!filenames::ParseWindowDirName(name, &w)) continue;  // not ours: leave it for a person to see
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    std::vector<std::string> versions;
    SNAPSINK_RETURN_IF_ERROR(t.env->GetChildren(wdir, &versions));
    for (const std::string& vname : versions) {
      uint64_t ver;
      if (!filenames::ParseVersionDirName(vname, &ver) || ver > ws.last_version) continue;
      std::string_view v;
      Status g = txn->Get(Table::kSeals, codec::SealKey(w, ver), &v);
      SealRecord r;
      if (g.ok() && codec::Decode(v, &r).ok() && r.state == SealState::kStaged) continue;
      SNAPSINK_RETURN_IF_ERROR(t.env->RemoveTree(filenames::Join(wdir, vname)));
    }
  }
  return Status::OK();
}

}  // namespace

Status SealWindows(const SealTarget& t, const std::vector<int64_t>& windows, std::vector<SealedWindow>* out) {
  SNAPSINK_RETURN_IF_ERROR(CleanStaging(t));
  std::vector<SealJob> jobs;
  {
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(t.store->BeginRead(&txn));
    for (int64_t w : windows) {
      WindowState ws;
      SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
      if (!ws.dirty) continue;
      if (ws.last_version == UINT64_MAX) {
        return Status::InvalidArgument("window " + FormatIso(w) + " is at v" + std::to_string(ws.last_version) +
                                       ", the highest version there is: it cannot be sealed again");
      }
      jobs.push_back(SealJob{w, ws.last_version + 1});
    }
  }
  return SealBatch(t, jobs, out);
}

}  // namespace snapsink
