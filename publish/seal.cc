#include "publish/seal.h"

#include <map>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "engine/window_records.h"
#include "publish/snapshot_file.h"
#include "publish/snapshot_manifest.h"

namespace snapsink {

Status DirtyWindows(Store* store, const RootConfig& config, bool all, std::vector<int64_t>* out) {
  out->clear();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
  std::optional<int64_t> newest;
  if (max_ts) newest = static_cast<int64_t>(*max_ts);
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    WindowState w;
    decode = codec::Decode(v, &w);
    if (!decode.ok()) return false;
    const int64_t start = codec::DecodeWindowKey(k);
    if (w.dirty && (all || WindowClosed(start, config.window_ms, newest, config.lateness_ms))) out->push_back(start);
    return true;
  }));
  return decode;
}

namespace {

// The window's rows from the aggregates, written to path; stats per metric.
Status WriteRows(Env* env, Txn* txn, int64_t window_ms, const std::string& path, SnapshotManifest* m) {
  std::unique_ptr<SnapshotWriter> writer;
  SNAPSINK_RETURN_IF_ERROR(SnapshotWriter::Open(env, path, &writer));
  std::string prefix;
  codec::AppendWindowKey(&prefix, window_ms);
  Row row;
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kAggs, prefix, [&](std::string_view k, std::string_view v) {
    std::string_view key;
    Aggregate a;
    if (!codec::SplitEscapedMetric(k.substr(8), &row.metric, &key)) {
      st = Status::Corruption("malformed aggregate key in state");
      return false;
    }
    st = codec::Decode(v, &a);
    if (!st.ok()) return false;
    row.key.assign(key);
    row.count = a.count;
    row.sum_micros = a.sum_micros;
    row.events = a.events;
    st = writer->Add(row);
    if (!st.ok()) return false;
    if (m->metrics.empty() || m->metrics.back().metric != row.metric) m->metrics.push_back(MetricStats{row.metric});
    MetricStats& ms = m->metrics.back();
    ms.rows += 1;
    ms.events += a.events;
    ms.count += a.count;
    ms.sum_micros = static_cast<int64_t>(static_cast<uint64_t>(ms.sum_micros) + static_cast<uint64_t>(a.sum_micros));
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  SnapshotFileInfo info;
  SNAPSINK_RETURN_IF_ERROR(writer->Finish(&info));
  m->rows = info.rows;
  m->files.push_back(FileEntry{filenames::kDataFile, info.bytes, info.xxh64});
  for (const MetricStats& ms : m->metrics) {
    m->events += ms.events;
    m->count += ms.count;
    // Wrapping on purpose: a window total across metrics may exceed int64; it
    // is checked the same way it is made, and per-metric sums are exact.
    m->sum_micros = static_cast<int64_t>(static_cast<uint64_t>(m->sum_micros) + static_cast<uint64_t>(ms.sum_micros));
  }
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

}  // namespace

Status SealWindow(const SealTarget& t, int64_t window_ms, uint64_t version, SealedWindow* out) {
  const std::string dir = filenames::StagingSnapshotDir(t.root, window_ms, version);
  SNAPSINK_RETURN_IF_ERROR(t.env->RemoveTree(dir));  // a retried seal rewrites the same directory
  SNAPSINK_RETURN_IF_ERROR(t.env->CreateDirs(dir));

  SnapshotManifest m;
  m.window_ms = window_ms;
  m.window_size_ms = t.window_size_ms;
  m.version = version;
  SealRecord record;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(t.store->BeginRead(&read));
    SNAPSINK_RETURN_IF_ERROR(WriteRows(t.env, read.get(), window_ms, filenames::Join(dir, filenames::kDataFile), &m));
    SNAPSINK_RETURN_IF_ERROR(ReadLedger(read.get(), window_ms, &record.ledger));
  }
  record.rows = m.rows;
  {
    std::unique_ptr<WritableFile> f;
    SNAPSINK_RETURN_IF_ERROR(t.env->NewWritableFile(filenames::Join(dir, filenames::kSnapshotManifestFile), &f));
    SNAPSINK_RETURN_IF_ERROR(f->Append(m.Encode()));
    SNAPSINK_RETURN_IF_ERROR(f->Sync());
    SNAPSINK_RETURN_IF_ERROR(f->Close());
  }
  SNAPSINK_RETURN_IF_ERROR(t.env->SyncDir(dir));
  SNAPSINK_RETURN_IF_ERROR(t.env->SyncDir(filenames::StagingWindowDir(t.root, window_ms)));
  SNAPSINK_RETURN_IF_ERROR(t.env->SyncDir(filenames::StagingDir(t.root)));
  MaybeCrash("seal.before_record");

  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(t.store->BeginWrite(&txn));
  WindowState ws;
  SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), window_ms, &ws));
  // An unpublished staged version this one replaces.
  std::vector<uint64_t> superseded;
  SNAPSINK_RETURN_IF_ERROR(SupersedeStagedSeals(txn.get(), window_ms, version, &superseded));
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSeals, codec::SealKey(window_ms, version), codec::Encode(record)));
  ws.last_version = std::max(ws.last_version, version);
  ws.dirty = false;
  SNAPSINK_RETURN_IF_ERROR(WriteWindowState(txn.get(), window_ms, ws));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  for (uint64_t ver : superseded) {
    SNAPSINK_RETURN_IF_ERROR(t.env->RemoveTree(filenames::StagingSnapshotDir(t.root, window_ms, ver)));
  }
  out->window_ms = window_ms;
  out->version = version;
  out->rows = m.rows;
  out->events = m.events;
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
  for (int64_t w : windows) {
    WindowState ws;
    {
      std::unique_ptr<Txn> txn;
      SNAPSINK_RETURN_IF_ERROR(t.store->BeginRead(&txn));
      SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    }
    if (!ws.dirty) continue;
    if (ws.last_version == UINT64_MAX) {
      return Status::InvalidArgument("window " + FormatIso(w) + " is at v" + std::to_string(ws.last_version) +
                                     ", the highest version there is: it cannot be sealed again");
    }
    SealedWindow sw;
    SNAPSINK_RETURN_IF_ERROR(SealWindow(t, w, ws.last_version + 1, &sw));
    out->push_back(sw);
  }
  return Status::OK();
}

}  // namespace snapsink
