// Query and roll-up rows of a pinned generation (sink/root_views.h): the one
// code path of `snapsink query`, api::Reader and GET /v1/query.
#include <algorithm>
#include <cmath>
#include <map>

#include "engine/ddsketch.h"
#include "engine/hyperloglog.h"
#include "engine/kind_sketch.h"
#include "engine/decimal.h"
#include "sink/root_views.h"

namespace snapsink {

namespace {

using ScanNext = SnapshotReader::ScanNext;

// The windows of the generation that q's window and from/to select (after
// Reader::OpenTop, only the parts holding them are read).
Status SelectWindows(Reader* reader, const QuerySpec& q, std::vector<GenerationEntry>* out) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  if (q.window) lo = hi = *q.window;
  if (q.from) lo = std::max(lo, *q.from);
  if (q.to) hi = std::min(hi, *q.to);
  return reader->Entries(lo, hi, out);
}

// Calls emit for every row of window e that q's metric, key and prefixes
// select, in (metric, key) order, until it returns false (*stopped).
Status SelectRows(Reader* reader, const GenerationEntry& e, const QuerySpec& q,
                  const std::function<bool(const RowView&)>& emit, bool* stopped = nullptr) {
  if (!q.metric.empty() && q.key && q.metric_prefix.empty() && q.key_prefix.empty()) {
    Row row;  // a point lookup: the filter, then at most one block
    Status g = reader->Get(e.window_ms, q.metric, *q.key, &row);
    if (g.IsNotFound()) return Status::OK();
    SNAPSINK_RETURN_IF_ERROR(g);
    if (!emit(ViewOf(row)) &&
        stopped != nullptr) {
      *stopped = true;
    }
    return Status::OK();
  }
  // Rows are sorted by (metric, key): the selected metrics are one run from
  // `first_metric` on, and within each metric the selected keys one run
  // from `first_key` on. Seek to each run's start, stop at its end.
  const std::string& first_metric = q.metric.empty() ? q.metric_prefix : q.metric;
  const std::string& first_key = q.key ? *q.key : q.key_prefix;
  const bool by_key = q.key || !q.key_prefix.empty();
  return reader->ScanFrom(e.window_ms, first_metric, first_key, [&](const RowView& v, SnapshotReader::SeekTo* to) {
    if (!q.metric.empty() && v.metric != q.metric) return ScanNext::kStop;
    if (!v.metric.starts_with(q.metric_prefix)) return ScanNext::kStop;
    if (by_key) {
      if (v.key < first_key) {  // a new metric: to its first selected key
        to->metric.assign(v.metric);
        to->key = first_key;
        return ScanNext::kSeek;
      }
      if ((q.key && v.key != *q.key) || !v.key.starts_with(q.key_prefix)) {  // past this metric's run
        if (!q.metric.empty()) return ScanNext::kStop;
        to->metric.assign(v.metric);
        to->metric.push_back('\0');  // the least metric after this one
        to->key = first_key;
        return ScanNext::kSeek;
      }
    }
    if (emit(v)) return ScanNext::kNext;
    if (stopped != nullptr) *stopped = true;
    return ScanNext::kStop;
  });
}

// Each of q's quantiles answered from sketch (rounded to a micro).
Status Answer(const QuerySpec& q, const DDSketch& sketch, std::vector<std::optional<int64_t>>* out) {
  out->clear();
  for (double x : q.quantiles) {
    const std::optional<double> v = sketch.Quantile(x);
    out->push_back(v ? std::optional<int64_t>(std::llround(*v)) : std::nullopt);
  }
  return Status::OK();
}

Status DecodeSketch(const RowView& v, DDSketch* out) {
  Status st = DDSketch::Decode(v.sketch, out);
  if (!st.ok()) return Status::Corruption("row (" + std::string(v.metric) + ", " + std::string(v.key) + "): " + st.ToString());
  return Status::OK();
}

// A distinct metric's row: its sketch's estimate.
Status Estimate(const RowView& v, std::optional<uint64_t>* out) {
  HyperLogLog items;
  Status st = HyperLogLog::Decode(v.sketch, &items);
  if (!st.ok()) return Status::Corruption("row (" + std::string(v.metric) + ", " + std::string(v.key) + "): " + st.ToString());
  *out = items.Estimate();
  return Status::OK();
}

}  // namespace

Status QueryEach(Reader* reader, const QuerySpec& q, const std::function<bool(const api::QueryRow&)>& fn) {
  if (q.rollup_ms) return Status::InvalidArgument("a roll-up is read by Rollup, not Query");
  std::vector<GenerationEntry> windows;
  SNAPSINK_RETURN_IF_ERROR(SelectWindows(reader, q, &windows));
  api::QueryRow out;  // one row at a time: its strings keep their buffers
  bool stopped = false;
  Status st;
  for (size_t i = 0; i < windows.size() && !stopped; ++i) {
    const GenerationEntry& e = windows[i];
    out.window_start_ms = e.window_ms;
    out.version = static_cast<uint64_t>(e.version);
    SNAPSINK_RETURN_IF_ERROR(SelectRows(
        reader, e, q,
        [&](const RowView& v) {
          api::Row& row = out.row;
          row.metric.assign(v.metric);
          row.key.assign(v.key);
          row.count = v.count;
          row.sum_micros = v.sum_micros;
          row.events = v.events;
          row.min_micros = v.has_range ? std::optional<int64_t>(v.min_micros) : std::nullopt;
          row.max_micros = v.has_range ? std::optional<int64_t>(v.max_micros) : std::nullopt;
          row.quantile_micros.clear();
          row.distinct.reset();
          if (IsDistinctSketch(v.sketch)) {
            st = Estimate(v, &row.distinct);
            if (!st.ok()) return false;  // stops the visit; st is returned
          } else if (!v.sketch.empty() && !q.quantiles.empty()) {
            DDSketch sketch;
            st = DecodeSketch(v, &sketch);
            if (st.ok()) st = Answer(q, sketch, &row.quantile_micros);
            if (!st.ok()) return false;  // stops the visit; st is returned
          }
          return fn(out);
        },
        &stopped));
    SNAPSINK_RETURN_IF_ERROR(st);
  }
  return Status::OK();
}

Status QueryRows(Reader* reader, const QuerySpec& q, std::vector<api::QueryRow>* out) {
  return QueryEach(reader, q, [out](const api::QueryRow& r) {
    out->push_back(r);
    return true;
  });
}

Status RollupRows(Reader* reader, const QuerySpec& q, std::vector<api::RollupRow>* out) {
  if (!q.rollup_ms || *q.rollup_ms < 0) return Status::InvalidArgument("a roll-up needs a bucket size (0: all)");
  const int64_t size = *q.rollup_ms;
  auto bucket_of = [size](int64_t w) { return size == 0 ? 0 : api::WindowStart(w, size); };
  std::vector<GenerationEntry> windows;
  SNAPSINK_RETURN_IF_ERROR(SelectWindows(reader, q, &windows));
  struct Sums {
    int64_t count = 0, sum_micros = 0;
    std::optional<int64_t> min_micros, max_micros;  // a minmax metric's: min of mins, max of maxes
    std::optional<DDSketch> sketch;                 // a quantiles metric's: the windows' merged
    std::optional<HyperLogLog> items;               // a distinct metric's: the windows' merged (registers by max)
  };
  Status st;
  std::map<std::pair<std::string, std::string>, Sums> sums;  // of one bucket
  std::pair<std::string, std::string> k;
  for (size_t i = 0; i < windows.size();) {
    // Windows are sorted by start, so a bucket's windows are adjacent.
    const int64_t bucket = bucket_of(windows[i].window_ms);
    size_t j = i;
    for (; j < windows.size() && bucket_of(windows[j].window_ms) == bucket; ++j) {
      SNAPSINK_RETURN_IF_ERROR(SelectRows(reader, windows[j], q, [&](const RowView& v) {
        k.first.assign(v.metric);
        k.second.assign(v.key);
        auto it = sums.find(k);
        if (it == sums.end()) it = sums.emplace(k, Sums{}).first;
        it->second.count = WrappingAdd(it->second.count, v.count);
        it->second.sum_micros = WrappingAdd(it->second.sum_micros, v.sum_micros);
        if (v.has_range) {
          Sums& t = it->second;
          t.min_micros = t.min_micros ? std::min(*t.min_micros, v.min_micros) : v.min_micros;
          t.max_micros = t.max_micros ? std::max(*t.max_micros, v.max_micros) : v.max_micros;
        }
        if (IsDistinctSketch(v.sketch) && st.ok()) {
          HyperLogLog one;
          st = HyperLogLog::Decode(v.sketch, &one);
          Sums& t = it->second;
          if (st.ok() && !t.items) {
            t.items = std::move(one);
          } else if (st.ok()) {
            st = t.items->Merge(one);
          }
          if (!st.ok()) {
            st = Status::Corruption("row (" + std::string(v.metric) + ", " + std::string(v.key) + "): " + st.ToString());
          }
        } else if (!v.sketch.empty() && !q.quantiles.empty() && st.ok()) {
          DDSketch one;
          st = DecodeSketch(v, &one);
          Sums& t = it->second;
          if (st.ok() && !t.sketch) {
            t.sketch = std::move(one);
          } else if (st.ok()) {
            st = t.sketch->Merge(one);
          }
        }
        return true;
      }));
      SNAPSINK_RETURN_IF_ERROR(st);
    }
    for (auto& [mk, s] : sums) {
      api::RollupRow r;
      if (size != 0) r.bucket_ms = bucket;
      r.metric = mk.first;
      r.key = mk.second;
      r.count = s.count;
      r.sum_micros = s.sum_micros;
      r.min_micros = s.min_micros;
      r.max_micros = s.max_micros;
      if (s.sketch) SNAPSINK_RETURN_IF_ERROR(Answer(q, *s.sketch, &r.quantile_micros));
      if (s.items) r.distinct = s.items->Estimate();
      r.windows = j - i;
      out->push_back(std::move(r));
    }
    sums.clear();
    i = j;
  }
  return Status::OK();
}

}  // namespace snapsink
