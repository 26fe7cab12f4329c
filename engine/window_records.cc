#include "engine/window_records.h"

#include <algorithm>
#include <string>

#include "engine/decimal.h"
#include "engine/long_key.h"
#include "engine/window_records_runs.h"

namespace snapsink {

Status ReadWindowState(Txn* txn, int64_t window_ms, WindowState* out) {
  std::string_view v;
  Status s = txn->Get(Table::kWindows, codec::WindowKey(window_ms), &v);
  if (s.IsNotFound()) {
    *out = WindowState();
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  return codec::Decode(v, out);
}

Status WriteWindowState(Txn* txn, int64_t window_ms, const WindowState& state) {
  return txn->Put(Table::kWindows, codec::WindowKey(window_ms), codec::Encode(state));
}

Status DeleteWindowState(Txn* txn, int64_t window_ms) {
  const std::string key = codec::WindowKey(window_ms);
  SNAPSINK_RETURN_IF_ERROR(DeleteWindowAggregates(txn, window_ms));  // records, runs and bound
  SNAPSINK_RETURN_IF_ERROR(txn->DeletePrefix(Table::kLedger, key));
  SNAPSINK_RETURN_IF_ERROR(txn->DeletePrefix(Table::kSeals, key));
  return txn->Del(Table::kWindows, key);
}

Status SetSealState(Txn* txn, int64_t window_ms, uint64_t version, SealState state) {
  const std::string key = codec::SealKey(window_ms, version);
  std::string_view v;
  SNAPSINK_RETURN_IF_ERROR(txn->Get(Table::kSeals, key, &v));
  SealRecord r;
  SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &r));
  r.state = state;
  return txn->Put(Table::kSeals, key, codec::Encode(r));
}

Status SupersedeStagedSeals(Txn* txn, int64_t window_ms, uint64_t keep_version, std::vector<uint64_t>* superseded) {
  std::vector<uint64_t> staged;
  Status st;
  const std::string prefix = codec::WindowKey(window_ms);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, prefix, [&](std::string_view k, std::string_view v) {
    SealRecord r;
    st = codec::Decode(v, &r);
    if (!st.ok()) return false;
    int64_t w;
    uint64_t version;
    codec::DecodeSealKey(k, &w, &version);
    if (r.state == SealState::kStaged && version != keep_version) staged.push_back(version);
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  for (uint64_t version : staged) {
    SNAPSINK_RETURN_IF_ERROR(SetSealState(txn, window_ms, version, SealState::kSuperseded));
    superseded->push_back(version);
  }
  return Status::OK();
}

namespace {

// The base records of window_ms (Table::kAggs) in natural (metric, key) order.
Status ScanBaseAggregates(Txn* txn, int64_t window_ms, const AggregateVisitor& fn) {
  struct Entry {
    std::string metric, key;
    Aggregate agg;
  };
  // Records whose stored keys share their first kLongKeyPrefix bytes (one
  // metric, one key prefix): LMDB orders long-form ones among them by hash,
  // so they are sorted here. Nearly always empty or one record.
  std::vector<Entry> run;
  std::string run_prefix;
  auto flush = [&]() -> Status {
    std::sort(run.begin(), run.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    for (const Entry& e : run) SNAPSINK_RETURN_IF_ERROR(fn(e.metric, e.key, e.agg));
    run.clear();
    return Status::OK();
  };
  Status st;
  std::string natural;
  Entry e;
  const std::string prefix = codec::WindowKey(window_ms);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kAggs, prefix, [&](std::string_view k, std::string_view v) {
    std::string_view payload, key;
    st = DecodeRecord(k, v, &natural, &payload);
    if (!st.ok()) return false;
    if (!codec::SplitEscapedMetric(std::string_view(natural).substr(8), &e.metric, &key)) {
      st = Status::Corruption("malformed aggregate key in state");
      return false;
    }
    st = codec::Decode(payload, &e.agg);
    if (!st.ok()) return false;
    e.key.assign(key);
    if (k.size() >= kLongKeyPrefix) {
      if (!run.empty() && k.substr(0, kLongKeyPrefix) != run_prefix) {
        st = flush();
        if (!st.ok()) return false;
      }
      if (run.empty()) run_prefix.assign(k.substr(0, kLongKeyPrefix));
      run.push_back(e);
      return true;
    }
    st = flush();
    if (st.ok()) st = fn(e.metric, e.key, e.agg);
    return st.ok();
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  return flush();
}

}  // namespace

// The base records and the runs' merged entries, both in natural key order
// (escaped metric | key), merged as two sorted streams.
Status ScanWindowAggregates(Txn* txn, int64_t window_ms, const AggregateVisitor& fn) {
  WindowRuns runs;
  SNAPSINK_RETURN_IF_ERROR(LoadWindowRuns(txn, window_ms, &runs));
  MergedRuns deltas(runs);
  std::string metric, natural;
  // Emits the runs' entries before `bound` (all of them when bound is null).
  auto drain = [&](const std::string* bound) -> Status {
    for (; deltas.Valid() && (bound == nullptr || deltas.key() < *bound); deltas.Next()) {
      std::string_view key;
      if (!codec::SplitEscapedMetric(deltas.key(), &metric, &key)) {
        return Status::Corruption("malformed aggregate key in an aggregate run");
      }
      SNAPSINK_RETURN_IF_ERROR(fn(metric, key, deltas.agg()));
    }
    return Status::OK();
  };
  SNAPSINK_RETURN_IF_ERROR(
      ScanBaseAggregates(txn, window_ms, [&](const std::string& m, std::string_view key, const Aggregate& agg) {
        if (!deltas.Valid()) return fn(m, key, agg);
        codec::AggKeyInto(&natural, window_ms, m, key);
        natural.erase(0, 8);
        SNAPSINK_RETURN_IF_ERROR(drain(&natural));
        if (deltas.Valid() && deltas.key() == natural) {
          Aggregate sum = agg;
          sum.count = WrappingAdd(sum.count, deltas.agg().count);
          sum.sum_micros = WrappingAdd(sum.sum_micros, deltas.agg().sum_micros);
          sum.events = WrappingAdd(sum.events, deltas.agg().events);
          MergeRange(&sum, deltas.agg());
          deltas.Next();
          return fn(m, key, sum);
        }
        return fn(m, key, agg);
      }));
  return drain(nullptr);
}

Status LiveAggregateTotals(Txn* txn, std::map<int64_t, Aggregate>* out) {
  auto add = [&](int64_t w, const Aggregate& a) {
    Aggregate& t = (*out)[w];
    t.count = WrappingAdd(t.count, a.count);
    t.sum_micros = WrappingAdd(t.sum_micros, a.sum_micros);
    t.events = WrappingAdd(t.events, a.events);
  };
  Status st;
  std::string natural;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kAggs, "", [&](std::string_view k, std::string_view v) {
    std::string_view payload;
    Aggregate a;
    st = DecodeRecord(k, v, &natural, &payload);
    if (st.ok()) st = codec::Decode(payload, &a);
    if (st.ok()) add(codec::DecodeWindowKey(k), a);
    return st.ok();
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kAggRuns, "", [&](std::string_view k, std::string_view v) {
    if (k.size() != 16) {
      st = Status::Corruption("malformed aggregate run key in state");
      return false;
    }
    if (k.substr(8) == std::string_view("\0\0\0\0\0\0\0\0", 8)) return true;  // run 0: the sum bound
    AggRun run;
    st = AggRun::Decode(v, &run);
    if (!st.ok()) return false;
    const int64_t w = codec::DecodeWindowKey(k);
    if (run.size() > 0) (*out)[w];
    for (size_t i = 0; i < run.size(); ++i) add(w, run.agg(i));
    return true;
  }));
  return st;
}

Status LedgerTotalsByWindow(Txn* txn, std::map<int64_t, Aggregate>* out) {
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kLedger, "", [&](std::string_view k, std::string_view v) {
    Aggregate a;
    decode = codec::Decode(v, &a);
    if (!decode.ok()) return false;
    Aggregate& t = (*out)[codec::DecodeWindowKey(k)];
    t.count = WrappingAdd(t.count, a.count);
    t.events = WrappingAdd(t.events, a.events);
    return true;
  }));
  return decode;
}

}  // namespace snapsink
