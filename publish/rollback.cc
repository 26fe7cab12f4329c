#include "publish/rollback.h"

#include <map>
#include <optional>
#include <set>

#include "engine/decimal.h"
#include "engine/filenames.h"
#include "engine/root.h"
#include "engine/window_records.h"
#include "engine/window_records_runs.h"
#include "engine/window_retention.h"
#include "publish/current_file.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"

namespace snapsink {
namespace {

void Add(api::Totals* to, const api::Totals& a) {
  to->count = WrappingAdd(to->count, a.count);
  to->events = WrappingAdd(to->events, a.events);
  to->sum_micros = WrappingAdd(to->sum_micros, a.sum_micros);
}

// The state's record of a snapshot file's row: its totals, range and sketch.
Aggregate AggregateOf(const Row& r) {
  Aggregate a;
  static_cast<api::Totals&>(a) = api::Totals{r.count, r.sum_micros, r.events};
  a.has_range = r.min_micros.has_value();
  a.min_micros = r.min_micros.value_or(0);
  a.max_micros = r.max_micros.value_or(0);
  a.sketch = r.sketch;
  return a;
}

std::string WindowPrefix(int64_t window_ms) {
  std::string k;
  codec::AppendWindowKey(&k, window_ms);
  return k;
}

// What the engine holds of one window now.
struct LiveWindow {
  WindowState state;
  Aggregate totals;
  bool has_aggs = false;
  bool has_staged = false;
};

Status ReadLive(Txn* txn, std::map<int64_t, LiveWindow>* out) {
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kWindows, "", [&](std::string_view k, std::string_view v) {
    st = codec::Decode(v, &(*out)[codec::DecodeWindowKey(k)].state);
    return st.ok();
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  std::map<int64_t, Aggregate> totals;
  SNAPSINK_RETURN_IF_ERROR(LiveAggregateTotals(txn, &totals));
  for (const auto& [window, t] : totals) {
    LiveWindow& w = (*out)[window];
    w.has_aggs = true;
    Add(&w.totals, t);
  }
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, "", [&](std::string_view k, std::string_view v) {
    SealRecord r;
    st = codec::Decode(v, &r);
    if (!st.ok()) return false;
    if (r.state == SealState::kStaged) (*out)[codec::DecodeWindowKey(k)].has_staged = true;
    return true;
  }));
  return st;
}

// In the commit transaction: window w becomes exactly rows (none: empty).
Status RewindWindow(Txn* txn, int64_t w, uint64_t version, const std::vector<Row>* rows,
                    std::vector<std::pair<int64_t, uint64_t>>* superseded) {
  const std::string prefix = WindowPrefix(w);
  SNAPSINK_RETURN_IF_ERROR(DeleteWindowAggregates(txn, w));
  SNAPSINK_RETURN_IF_ERROR(txn->DeletePrefix(Table::kLedger, prefix));
  SealRecord seal;
  seal.state = SealState::kPublished;
  if (rows != nullptr) {
    std::string key;
    for (const Row& r : *rows) {
      const Aggregate a = AggregateOf(r);
      codec::AggKeyInto(&key, w, r.metric, r.key);
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kAggs, key, codec::Encode(a)));
      if (seal.ledger.empty() || seal.ledger.back().metric != r.metric) seal.ledger.push_back(LedgerEntry{r.metric, {}});
      Add(&seal.ledger.back().totals, a);
    }
    for (const LedgerEntry& e : seal.ledger) {
      codec::LedgerKeyInto(&key, w, e.metric);
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kLedger, key, codec::Encode(e.totals)));
    }
    seal.rows = rows->size();
  }
  std::vector<uint64_t> staged;
  SNAPSINK_RETURN_IF_ERROR(SupersedeStagedSeals(txn, w, /*keep_version=*/0, &staged));
  for (uint64_t v : staged) superseded->emplace_back(w, v);
  if (rows != nullptr) {
    // verify reconciles G's snapshot against its seal record; a published
    // window always has one, but rebuild it if not.
    std::string_view existing;
    Status s = txn->Get(Table::kSeals, codec::SealKey(w, version), &existing);
    if (s.IsNotFound()) s = txn->Put(Table::kSeals, codec::SealKey(w, version), codec::Encode(seal));
    SNAPSINK_RETURN_IF_ERROR(s);
  }
  WindowState ws;
  SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn, w, &ws));
  ws.last_version = std::max(ws.last_version, version);  // versions are never reused
  ws.dirty = false;
  return WriteWindowState(txn, w, ws);
}

}  // namespace

Status Rollback(Env* env, const std::string& root, Store* live, uint64_t generation, bool dry_run,
                RollbackResult* result) {
  *result = RollbackResult();
  result->rollback_of = generation;
  if (!dry_run) {
    SNAPSINK_RETURN_IF_ERROR(FinishPublish(env, root, live));
  }
  CurrentPointer current;
  std::map<int64_t, LiveWindow> live_windows;
  std::optional<int64_t> retained_from;
  {
    std::unique_ptr<Txn> read;
    SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&read));
    SNAPSINK_ASSIGN_OR_RETURN(auto last, Root::GetMetaU64(read.get(), meta::kLastGeneration));
    std::string_view skipped;
    if (generation == 0 || generation > last.value_or(0) ||
        read->Get(Table::kMeta, UnpublishedGenerationKey(generation), &skipped).ok()) {
      return Status::NotFound("generation " + std::to_string(generation) + " was never published");
    }
    SNAPSINK_RETURN_IF_ERROR(RecordedCurrent(read.get(), &current));
    SNAPSINK_RETURN_IF_ERROR(ReadLive(read.get(), &live_windows));
    SNAPSINK_ASSIGN_OR_RETURN(retained_from, RetainedFrom(read.get()));
  }

  // G's rows, read through a Reader: every checksum on the way, and G pinned.
  std::unique_ptr<Reader> g;
  Status s = Reader::Open(env, root, generation, &g);
  if (s.IsNotFound()) return Status::NotFound("generation " + std::to_string(generation) + " is no longer kept (gc)");
  SNAPSINK_RETURN_IF_ERROR(s);
  // Windows retention dropped stay out (engine/window_retention.h): their
  // state is gone for good, and bringing them back would reuse versions.
  std::vector<GenerationEntry> target = g->windows();
  LeaveOutBeyondRetention(retained_from, &target, &result->beyond_retention);
  std::map<int64_t, std::vector<Row>> rows;
  for (const GenerationEntry& e : target) {
    std::vector<Row>& out = rows[e.window_ms];
    SNAPSINK_RETURN_IF_ERROR(g->Scan(e.window_ms, nullptr, [&](const Row& r) { out.push_back(r); }));
  }
  GenerationManifest now;
  if (current.generation > 0) SNAPSINK_RETURN_IF_ERROR(ReadManifestNamedBy(env, root, current, &now));

  std::map<int64_t, uint64_t> before_versions, after_versions;
  for (const GenerationEntry& e : now.windows) before_versions[e.window_ms] = e.version;
  for (const GenerationEntry& e : target) after_versions[e.window_ms] = e.version;
  std::set<int64_t> all;
  for (const auto& [w, lw] : live_windows) all.insert(w);
  for (const auto& [w, v] : before_versions) all.insert(w);
  for (const auto& [w, v] : after_versions) all.insert(w);
  for (int64_t w : all) {
    RollbackChange c;
    c.window_start_ms = w;
    c.version_before = before_versions.count(w) ? before_versions[w] : 0;
    c.version_after = after_versions.count(w) ? after_versions[w] : 0;
    const LiveWindow lw = live_windows.count(w) ? live_windows[w] : LiveWindow();
    c.before = lw.totals;
    Aggregate after;
    for (const Row& r : rows[w]) Add(&after, AggregateOf(r));
    c.after = after;
    const bool differs = c.version_before != c.version_after || lw.state.dirty || lw.has_staged ||
                         (c.version_after == 0 && lw.has_aggs);
    if (differs) result->changes.push_back(c);
  }
  if (result->changes.empty()) {
    result->nothing_to_do = true;
    return dry_run ? Status::OK() : CheckpointState(env, root, live);  // one that stopped before it
  }
  if (dry_run) return Status::OK();

  GenerationManifest gm;
  gm.parent = current.generation;
  gm.rollback_of = generation;
  gm.windows = target;
  std::vector<std::pair<int64_t, uint64_t>> superseded;
  SNAPSINK_RETURN_IF_ERROR(CommitGeneration(env, root, live, &gm, [&](Txn* txn) {
    for (const RollbackChange& c : result->changes) {
      SNAPSINK_RETURN_IF_ERROR(RewindWindow(txn, c.window_start_ms, c.version_after,
                                            c.version_after ? &rows[c.window_start_ms] : nullptr, &superseded));
    }
    return Status::OK();
  }, "rollback"));
  for (const auto& [w, ver] : superseded) {
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::StagingSnapshotDir(root, w, ver)));
  }
  result->generation = gm.generation;
  return CheckpointState(env, root, live);
}

}  // namespace snapsink
