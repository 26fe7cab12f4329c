// Query and roll-up rows of a pinned generation (sink/root_views.h): the one
// code path of `snapsink query`, api::Reader and GET /v1/query.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "engine/ddsketch.h"
#include "engine/hyperloglog.h"
#include "engine/kind_sketch.h"
#include "engine/decimal.h"
#include "sink/root_views.h"

namespace snapsink {

namespace {

using ScanNext = SnapshotReader::ScanNext;
using RowKey = std::pair<std::string, std::string>;  // (metric, key)

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
// select, in (metric, key) order, until it returns false (*stopped); with
// from, only the rows at or after it. With pos (a range scan's place,
// SnapshotReader::ScanPosition): from where it is when set (from is then
// not searched), and the row emit stopped at recorded there.
Status SelectRows(Reader* reader, const GenerationEntry& e, const QuerySpec& q,
                  const std::function<bool(const RowView&)>& emit, bool* stopped = nullptr,
                  const RowKey* from = nullptr, SnapshotReader::ScanPosition* pos = nullptr,
                  SnapshotReader::ScanBuffers* buffers = nullptr) {
  if (!q.metric.empty() && q.key && q.metric_prefix.empty() && q.key_prefix.empty()) {
    Row row;  // a point lookup: the filter, then at most one block
    if (from && std::tie(q.metric, *q.key) < std::tie(from->first, from->second)) return Status::OK();
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
  // from `first_key` on. Seek to each run's start (or to from, if later),
  // stop at its end.
  const std::string& first_metric = q.metric.empty() ? q.metric_prefix : q.metric;
  const std::string& first_key = q.key ? *q.key : q.key_prefix;
  const bool by_key = q.key || !q.key_prefix.empty();
  const bool from_later = from && std::tie(from->first, from->second) > std::tie(first_metric, first_key);
  return reader->ScanFrom(e.window_ms, from_later ? from->first : first_metric, from_later ? from->second : first_key,
                          [&](const RowView& v, SnapshotReader::SeekTo* to) {
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
  }, pos, buffers);
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
  return RollupEach(reader, q, [out](const api::RollupRow& r) {
    out->push_back(r);
    return true;
  });
}

namespace {

// Whether row v comes after (metric, key) k.
bool After(const RowKey& k, const RowView& v) {
  return v.metric > k.first || (v.metric == k.first && v.key > k.second);
}

// The sums of one (metric, key) over the windows of a bucket read so far.
struct Sums {
  int64_t count = 0, sum_micros = 0;
  std::optional<int64_t> min_micros, max_micros;  // a minmax metric's: min of mins, max of maxes
  std::optional<DDSketch> sketch;                 // a quantiles metric's: the windows' merged
  std::optional<HyperLogLog> items;               // a distinct metric's: the windows' merged (registers by max)
  size_t bytes = 0;                               // what it holds, about (RollupEach's budget)
  size_t sketch_bytes = 0;                        // of which the sketch's buckets
};

// Adds row v into *t, and what the sketch grew by to t->bytes.
Status AddInto(const QuerySpec& q, const RowView& v, Sums* t) {
  t->count = WrappingAdd(t->count, v.count);
  t->sum_micros = WrappingAdd(t->sum_micros, v.sum_micros);
  if (v.has_range) {
    t->min_micros = t->min_micros ? std::min(*t->min_micros, v.min_micros) : v.min_micros;
    t->max_micros = t->max_micros ? std::max(*t->max_micros, v.max_micros) : v.max_micros;
  }
  if (IsDistinctSketch(v.sketch)) {
    HyperLogLog one;
    Status st = HyperLogLog::Decode(v.sketch, &one);
    if (st.ok() && !t->items) {
      t->items = std::move(one);
    } else if (st.ok()) {
      st = t->items->Merge(one);
    }
    if (!st.ok()) return Status::Corruption("row (" + std::string(v.metric) + ", " + std::string(v.key) + "): " + st.ToString());
    // What the merged registers take now: a byte each once dense; while
    // sparse, about four bytes per entry, bounded by the rows' encodings.
    const size_t sketch_bytes =
        t->items->is_sparse() ? std::max(t->sketch_bytes, 4 * v.sketch.size()) : t->items->register_count();
    t->bytes = t->bytes - t->sketch_bytes + sketch_bytes;
    t->sketch_bytes = sketch_bytes;
  } else if (!v.sketch.empty() && !q.quantiles.empty()) {
    DDSketch one;
    SNAPSINK_RETURN_IF_ERROR(DecodeSketch(v, &one));
    if (!t->sketch) {
      t->sketch = std::move(one);
    } else {
      SNAPSINK_RETURN_IF_ERROR(t->sketch->Merge(one));
    }
    // What the merged sketch's buckets take now.
    const size_t buckets = t->sketch->positive().capacity() + t->sketch->negative().capacity();
    const size_t sketch_bytes = sizeof(DDSketch::Buckets::value_type) * buckets;
    t->bytes = t->bytes - t->sketch_bytes + sketch_bytes;
    t->sketch_bytes = sketch_bytes;
  }
  return Status::OK();
}

// A window's rows are read a chunk at a time (RollupEach): each chunk ends
// at a place kept, so that a pass whose range ends before rows it read goes
// back no further than a chunk. The block a chunk ends in is kept for the
// next (SnapshotReader::ScanBuffers).
constexpr size_t kChunkRows = 64;

// Where a roll-up's passes left a window (RollupEach).
struct Place {
  SnapshotReader::ScanPosition pos;  // the row the last read stopped at
  bool done = false;                 // no row left to read
  bool added = false;                // the pass added a row of it, last_added the last one
  RowKey last_added;
  // The places this pass's chunks started at, with the last row added
  // before each (if any): where a range that ends early goes back to.
  struct Mark {
    SnapshotReader::ScanPosition pos;
    bool added = false;
    RowKey last_added;
  };
  std::vector<Mark> marks;
};

// One pass of a bucket's merge: the sums of the rows after `after` (all,
// if unset) up to `upto`, which it lowers to stay within budget bytes.
struct Pass {
  const QuerySpec& q;
  size_t budget;
  const std::optional<RowKey>& after;  // the last row answered by the passes before
  std::map<RowKey, Sums>* sums;
  std::optional<RowKey> upto;  // rows after it are left for the next pass
  size_t held = 0;
  RowKey k;

  // Adds row v; false if it is past upto (the window's rows from it on are
  // left for the next pass).
  Status Add(const RowView& v, bool* kept) {
    *kept = false;
    if (upto && After(*upto, v)) return Status::OK();
    k.first.assign(v.metric);
    k.second.assign(v.key);
    auto it = sums->find(k);
    if (it == sums->end()) {
      it = sums->emplace(k, Sums{}).first;
      it->second.bytes = sizeof(*it) + 64 + k.first.size() + k.second.size();
      held += it->second.bytes;
    }
    const size_t before = it->second.bytes;
    Status st = AddInto(q, v, &it->second);
    held += it->second.bytes - before;
    SNAPSINK_RETURN_IF_ERROR(st);
    while (held > budget && sums->size() > 1) {
      held -= std::prev(sums->end())->second.bytes;
      sums->erase(std::prev(sums->end()));
      upto = std::prev(sums->end())->first;
    }
    *kept = !(upto && After(*upto, v));  // else this row was dropped: the rest of the window is past upto
    return Status::OK();
  }

  // Reads window e from *place (from `after` when its place is not set)
  // until a row past upto or its end, a chunk at a time.
  Status Read(Reader* reader, const GenerationEntry& e, Place* place, SnapshotReader::ScanBuffers* buffers) {
    std::optional<RowKey> from;
    if (after) {
      from = *after;
      from->second.push_back('\0');  // the least row after it
    }
    for (;;) {
      if (place->pos.set) place->marks.push_back({place->pos, place->added, place->last_added});
      size_t n = 0;
      bool stopped = false, chunk_end = false;
      Status st;
      SNAPSINK_RETURN_IF_ERROR(SelectRows(
          reader, e, q,
          [&](const RowView& v) {
            if (after && !After(*after, v)) return true;  // answered already (read again after going back to a mark)
            if (n == kChunkRows) {
              chunk_end = true;
              return false;
            }
            ++n;
            bool kept = false;
            st = Add(v, &kept);
            if (!st.ok() || !kept) return false;  // st is returned
            place->added = true;
            place->last_added.first.assign(v.metric);
            place->last_added.second.assign(v.key);
            return true;
          },
          &stopped, from ? &*from : nullptr, &place->pos, buffers));
      SNAPSINK_RETURN_IF_ERROR(st);
      if (!stopped) place->done = true;
      if (!chunk_end) return Status::OK();
    }
  }

  // After every window is read: a window that added a row past the final
  // upto (pushed out by a later window's rows) goes back to the last mark
  // before it, or to `after` when there is none.
  static void GoBack(const RowKey& upto, Place* place) {
    if (!place->added || place->last_added <= upto) return;
    place->done = false;
    while (!place->marks.empty()) {
      const Place::Mark& m = place->marks.back();
      if (!m.added || m.last_added <= upto) {
        place->pos = m.pos;
        return;
      }
      place->marks.pop_back();
    }
    place->pos = SnapshotReader::ScanPosition{};
  }
};

}  // namespace

// A bucket's windows are merged by (metric, key) in passes: each pass
// reads every window of the bucket from where the last pass ended and adds
// its rows into a sorted map of at most about budget_bytes. When the map is
// over that, its greatest entries are dropped and the pass reads no row past
// the greatest one kept (`upto`), so when every window has been read the
// map holds every row up to `upto` of every window: those rows are complete,
// and are answered in order; the next pass starts just after `upto`. A pass
// answers at least one row, and the rows and their sums are the ones a
// single pass over every window would make (each (metric, key) is added
// over the same windows in the same order), so the answer does not depend
// on the budget, only its memory does. Each window goes on from where the
// last pass stopped reading it (no row decoded twice), unless that pass read
// past its final upto: then from the last chunk's start before it.
Status RollupEach(Reader* reader, const QuerySpec& q, const std::function<bool(const api::RollupRow&)>& fn,
                  size_t budget_bytes) {
  if (!q.rollup_ms || *q.rollup_ms < 0) return Status::InvalidArgument("a roll-up needs a bucket size (0: all)");
  const int64_t size = *q.rollup_ms;
  auto bucket_of = [size](int64_t w) { return size == 0 ? 0 : api::WindowStart(w, size); };
  std::vector<GenerationEntry> windows;
  SNAPSINK_RETURN_IF_ERROR(SelectWindows(reader, q, &windows));
  std::map<RowKey, Sums> sums;
  api::RollupRow r;
  SnapshotReader::ScanBuffers buffers;  // one decompressed block at a time, whatever the windows
  for (size_t i = 0; i < windows.size();) {
    // Windows are sorted by start, so a bucket's windows are adjacent.
    const int64_t bucket = bucket_of(windows[i].window_ms);
    size_t j = i;
    while (j < windows.size() && bucket_of(windows[j].window_ms) == bucket) ++j;
    std::optional<RowKey> after;  // the last row answered
    std::vector<Place> places(j - i);
    for (;;) {
      Pass pass{q, budget_bytes, after, &sums, std::nullopt, 0, {}};
      for (size_t w = i; w < j; ++w) {
        Place& place = places[w - i];
        place.added = false;
        place.marks.clear();
        if (!place.done) SNAPSINK_RETURN_IF_ERROR(pass.Read(reader, windows[w], &place, &buffers));
      }
      if (pass.upto) {
        for (Place& place : places) Pass::GoBack(*pass.upto, &place);
      }
      if (sums.empty()) break;
      for (auto& [mk, s] : sums) {
        r.bucket_ms = size != 0 ? std::optional<int64_t>(bucket) : std::nullopt;
        r.metric = mk.first;
        r.key = mk.second;
        r.count = s.count;
        r.sum_micros = s.sum_micros;
        r.min_micros = s.min_micros;
        r.max_micros = s.max_micros;
        r.quantile_micros.clear();
        if (s.sketch) SNAPSINK_RETURN_IF_ERROR(Answer(q, *s.sketch, &r.quantile_micros));
        r.distinct = s.items ? std::optional<uint64_t>(s.items->Estimate()) : std::nullopt;
        r.windows = j - i;
        if (!fn(r)) return Status::OK();
      }
      sums.clear();
      if (!pass.upto) break;
      after = std::move(*pass.upto);
    }
    i = j;
  }
  return Status::OK();
}

}  // namespace snapsink
