// Step 4 of a backfill (publish/backfill.h), under the root's LOCK: seal
// the backfill's windows, publish them in one generation, and in that
// generation's live commit adopt them as the live base.
#include <algorithm>
#include <string>
#include <utility>

#include "engine/filenames.h"
#include "engine/long_key.h"
#include "engine/window_records_runs.h"
#include "publish/backfill_impact.h"
#include "publish/backfill_steps.h"
#include "publish/publisher.h"
#include "engine/source_scan.h"

namespace snapsink::backfill_steps {
namespace {

// Copies every record of table under prefix from `from` to `to`, replacing what `to` had.
Status ReplacePrefix(Txn* from, Txn* to, Table table, const std::string& prefix) {
  SNAPSINK_RETURN_IF_ERROR(to->DeletePrefix(table, prefix));
  Status st;
  SNAPSINK_RETURN_IF_ERROR(from->Scan(table, prefix, [&](std::string_view k, std::string_view v) {
    st = to->Put(table, k, v);
    return st.ok();
  }));
  return st;
}

// In the live transaction that records the generation: the backfilled windows
// become the live base, and backfill V is done.
Status AdoptBackfill(Txn* live, Store* backfill, const std::vector<PendingSnapshot>& pending, uint64_t version,
                     std::vector<std::pair<int64_t, uint64_t>>* superseded) {
  std::unique_ptr<Txn> bf;
  SNAPSINK_RETURN_IF_ERROR(backfill->BeginRead(&bf));
  for (const PendingSnapshot& p : pending) {
    std::string prefix;
    codec::AppendWindowKey(&prefix, p.window_ms);
    SNAPSINK_RETURN_IF_ERROR(CopyWindowAggregates(bf.get(), live, p.window_ms));
    SNAPSINK_RETURN_IF_ERROR(ReplacePrefix(bf.get(), live, Table::kLedger, prefix));
    // A live version staged but not published must not later replace the backfill.
    std::vector<uint64_t> staged;
    SNAPSINK_RETURN_IF_ERROR(SupersedeStagedSeals(live, p.window_ms, /*keep_version=*/0, &staged));
    for (uint64_t ver : staged) superseded->emplace_back(p.window_ms, ver);
    SealRecord published = p.seal;
    published.state = SealState::kPublished;
    SNAPSINK_RETURN_IF_ERROR(live->Put(Table::kSeals, codec::SealKey(p.window_ms, version), codec::Encode(published)));
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(live, p.window_ms, &ws));
    ws.last_version = std::max(ws.last_version, version);
    ws.dirty = false;
    SNAPSINK_RETURN_IF_ERROR(WriteWindowState(live, p.window_ms, ws));
  }
  // Its sources stay visible (inspect sources, status, metrics) with their
  // counts, ignored included, named "backfill vV: NAME": a name no live
  // source gets by default, and with no position (the archive is read once).
  Status put;
  SNAPSINK_RETURN_IF_ERROR(ScanSources(bf.get(), [&](const std::string& name, const SourceState& st, const SourceIdCounts&) {
    if (!put.ok()) return;
    SourceState kept = st;
    kept.flags = 0;
    kept.dev = kept.ino = kept.tail_hash = 0;
    put = PutRecord(live, Table::kSources, BackfillSourceName(version, name), codec::Encode(kept));
  }));
  SNAPSINK_RETURN_IF_ERROR(put);
  return live->Put(Table::kMeta, meta::BackfillDoneKey(version), "done");
}

}  // namespace

// The version rule holds for the backfill's windows and those a crashed
// attempt already sealed, checked once here, before anything is sealed.
Status SealAndPublish(Root* root, Store* bf, uint64_t version, BackfillResult* result) {
  Env* env = root->env();
  const std::string& path = root->path();
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(bf, root->config(), /*all=*/true, &windows));
  std::vector<PendingSnapshot> pending;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(bf, &pending));
  std::set<int64_t> affected(windows.begin(), windows.end());
  for (const PendingSnapshot& p : pending) affected.insert(p.window_ms);
  SNAPSINK_RETURN_IF_ERROR(CheckVersion(root->store(), affected, version));
  SealTarget target{env, path, bf, root->config().window_ms};
  std::vector<SealJob> jobs;
  for (int64_t w : windows) jobs.push_back(SealJob{w, version});
  SNAPSINK_RETURN_IF_ERROR(SealBatch(target, jobs, &result->sealed));
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(bf, &pending));
  std::vector<std::pair<int64_t, uint64_t>> superseded;
  PublishResult pr;
  // Nothing to publish: V stays unused (SPEC 9: only a publish uses a version up).
  if (!pending.empty()) {
    std::set<int64_t> published;
    for (const PendingSnapshot& p : pending) published.insert(p.window_ms);
    SNAPSINK_RETURN_IF_ERROR(CompareTotals(root->store(), bf, published, &result->impact));
    SNAPSINK_RETURN_IF_ERROR(PublishSnapshots(env, path, root->store(), root->config(), pending, [&](Txn* live) {
      return AdoptBackfill(live, bf, pending, version, &superseded);
    }, &pr));
  }
  for (const auto& [w, ver] : superseded) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::StagingSnapshotDir(path, w, ver)));
  }
  result->generation = pr.generation;
  result->published_windows = pr.windows;
  return CheckpointState(env, path, root->store());
}

// It may have stopped after its commit.
Status FinishDone(Root* root, uint64_t version, BackfillResult* result) {
  result->already_done = true;
  SNAPSINK_RETURN_IF_ERROR(FinishPublish(root->env(), root->path(), root->store()));
  SNAPSINK_RETURN_IF_ERROR(CheckpointState(root->env(), root->path(), root->store()));  // one that stopped before it
  return RemoveBackfillState(root->env(), root->path(), version);
}

}  // namespace snapsink::backfill_steps
