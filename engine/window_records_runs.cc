#include "engine/window_records_runs.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "engine/coding.h"
#include "engine/kind_sketch.h"
#include "engine/decimal.h"
#include "engine/long_key.h"
#include "engine/root.h"

namespace snapsink {
namespace {

using coding::DecodeBigEndian;
using coding::PutBigEndian;
using coding::PutFixed32;
using coding::PutFixed64;

// Inline little-endian loads: lookups and merges decode offsets by the
// million (coding::DecodeFixed32 is out of line).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "runs are read with native loads");
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

constexpr char kRunVersion = 1;
constexpr uint64_t kBoundNumber = 0;
constexpr size_t kAggBytes = 24;
constexpr size_t kRangeBytes = 16;              // min, max of an entry with a range
constexpr uint32_t kRangeFlag = uint32_t{1} << 31;  // in an entry's key length: a range follows
constexpr uint32_t kSketchFlag = uint32_t{1} << 30;  // and then a u32 length and a quantile sketch
constexpr uint32_t kKeyMask = ~(kRangeFlag | kSketchFlag);
constexpr size_t kWindowBytes = 8;
constexpr size_t kMergeWidth = 4;  // runs merged at once (AppendWindowRun)

std::string RunKey(int64_t window_ms, uint64_t number) {
  std::string key = codec::WindowKey(window_ms);
  PutBigEndian(&key, number, 8);
  return key;
}

// Calls fn(number, value) for each run of the window in number order (the
// bound record, number 0, is not a run); stops at fn's first error.
template <typename Fn>
Status ScanRuns(Txn* txn, int64_t window_ms, Fn&& fn) {
  Status st;
  const std::string prefix = codec::WindowKey(window_ms);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kAggRuns, prefix, [&](std::string_view k, std::string_view v) {
    if (k.size() != kWindowBytes + 8) {
      st = Status::Corruption("malformed aggregate run key in state");
      return false;
    }
    const uint64_t number = DecodeBigEndian(k.data() + kWindowBytes, 8);
    if (number == kBoundNumber) return true;
    st = fn(number, v);
    return st.ok();
  }));
  return st;
}

void AddWrapping(Aggregate* to, const Aggregate& a) {
  to->count = WrappingAdd(to->count, a.count);
  to->sum_micros = WrappingAdd(to->sum_micros, a.sum_micros);
  to->events = WrappingAdd(to->events, a.events);
  MergeRange(to, a);
}

void AppendEntry(std::string* out, std::vector<uint32_t>* offsets, std::string_view key, const Aggregate& a) {
  offsets->push_back(static_cast<uint32_t>(out->size()));
  const bool sketch = a.has_range && !a.sketch.empty();
  const uint32_t len =
      static_cast<uint32_t>(key.size()) | (a.has_range ? kRangeFlag : 0) | (sketch ? kSketchFlag : 0);
  const int64_t fields[5] = {a.count, a.sum_micros, a.events, a.min_micros, a.max_micros};
  out->append(reinterpret_cast<const char*>(&len), 4);
  out->append(key);
  out->append(reinterpret_cast<const char*>(fields), a.has_range ? kAggBytes + kRangeBytes : kAggBytes);
  if (sketch) {
    PutFixed32(out, static_cast<uint32_t>(a.sketch.size()));
    out->append(a.sketch);
  }
}

void FinishRun(std::string* out, const std::vector<uint32_t>& offsets) {
  for (uint32_t o : offsets) PutFixed32(out, o);
  PutFixed32(out, static_cast<uint32_t>(offsets.size()));
}

// A root holding runs is format 4 or later (engine/root.h): a build that
// knows no runs refuses it rather than miss them.
Status NoteRunsFormat(Txn* txn) { return Root::RaiseFormat(txn); }

}  // namespace

// The runs (oldest first) merged into one (compaction).
static void MergeRuns(const std::vector<AggRun>& runs, std::string* out) {
  WindowRuns group;
  group.runs = runs;
  size_t total = 0, bytes = 0;
  for (const AggRun& r : runs) {
    total += r.size();
    bytes += r.byte_size();
  }
  std::vector<uint32_t> offsets;
  offsets.reserve(total);
  out->clear();
  out->reserve(bytes);
  out->push_back(kRunVersion);
  for (MergedRuns m(group); m.Valid(); m.Next()) AppendEntry(out, &offsets, m.key(), m.agg());
  FinishRun(out, offsets);
}

Status AggRun::Decode(std::string_view bytes, AggRun* out) {
  const Status bad = Status::Corruption("malformed aggregate run in state");
  if (bytes.size() < 5 || bytes[0] != kRunVersion) return bad;
  const size_t n = DecodeFixed32(bytes.data() + bytes.size() - 4);
  if (n > (bytes.size() - 5) / 4) return bad;
  const size_t entries_end = bytes.size() - 4 - 4 * n;
  const char* offsets = bytes.data() + entries_end;
  size_t expect = 1;
  for (size_t i = 0; i < n; ++i) {
    const size_t o = DecodeFixed32(offsets + 4 * i);
    if (o != expect || o + 4 > entries_end) return bad;
    const uint32_t word = DecodeFixed32(bytes.data() + o);
    const size_t len = word & kKeyMask;
    size_t agg_bytes = (word & kRangeFlag) != 0 ? kAggBytes + kRangeBytes : kAggBytes;
    if ((word & kSketchFlag) != 0 && (word & kRangeFlag) == 0) return bad;
    if (len > entries_end - o - 4 || entries_end - o - 4 - len < agg_bytes) return bad;
    if ((word & kSketchFlag) != 0) {
      // A u32 length, then the sketch: checked here, as the record's is.
      if (entries_end - o - 4 - len - agg_bytes < 4) return bad;
      const char* at = bytes.data() + o + 4 + len + agg_bytes;
      const size_t n = DecodeFixed32(at);
      if (n > entries_end - o - 4 - len - agg_bytes - 4) return bad;
      if (!CheckSketch(std::string_view(at + 4, n)).ok()) return bad;
      agg_bytes += 4 + n;
    }
    expect = o + 4 + len + agg_bytes;
  }
  if (expect != entries_end) return bad;
  out->bytes_ = bytes;
  out->offsets_ = offsets;
  out->n_ = n;
  return Status::OK();
}

AggRun AggRun::Trusted(std::string_view bytes) {
  AggRun run;
  run.n_ = DecodeFixed32(bytes.data() + bytes.size() - 4);
  run.bytes_ = bytes;
  run.offsets_ = bytes.data() + bytes.size() - 4 - 4 * run.n_;
  return run;
}

Status AggRun::Entries(std::string_view bytes, size_t* n) {
  if (bytes.size() < 5 || bytes[0] != kRunVersion) return Status::Corruption("malformed aggregate run in state");
  *n = DecodeFixed32(bytes.data() + bytes.size() - 4);
  if (*n > (bytes.size() - 5) / 4) return Status::Corruption("malformed aggregate run in state");
  return Status::OK();
}

std::string_view AggRun::key(size_t i) const {
  const char* p = bytes_.data() + DecodeFixed32(offsets_ + 4 * i);
  return std::string_view(p + 4, DecodeFixed32(p) & kKeyMask);
}

Aggregate AggRun::agg(size_t i) const {
  const char* p = bytes_.data() + DecodeFixed32(offsets_ + 4 * i);
  const uint32_t word = DecodeFixed32(p);
  p += 4 + (word & kKeyMask);
  Aggregate a;
  a.count = static_cast<int64_t>(DecodeFixed64(p));
  a.sum_micros = static_cast<int64_t>(DecodeFixed64(p + 8));
  a.events = static_cast<int64_t>(DecodeFixed64(p + 16));
  if ((word & kRangeFlag) != 0) {
    a.has_range = true;
    a.min_micros = static_cast<int64_t>(DecodeFixed64(p + 24));
    a.max_micros = static_cast<int64_t>(DecodeFixed64(p + 32));
  }
  if ((word & kSketchFlag) != 0) a.sketch.assign(p + 44, DecodeFixed32(p + 40));
  return a;
}

size_t AggRun::Find(std::string_view k) const {
  size_t lo = 0, hi = n_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (key(mid) < k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < n_ && key(lo) == k ? lo : n_;
}

void EncodeAggRun(const std::vector<std::pair<std::string_view, Aggregate>>& entries, std::string* out) {
  std::vector<uint32_t> offsets;
  offsets.reserve(entries.size());
  size_t bytes = 5;
  for (const auto& e : entries) {
    bytes += 4 + e.first.size() + kAggBytes + (e.second.has_range ? kRangeBytes : 0) + 4;
    if (e.second.has_range && !e.second.sketch.empty()) bytes += 4 + e.second.sketch.size();
  }
  out->clear();
  out->reserve(bytes);
  out->push_back(kRunVersion);
  for (const auto& [key, agg] : entries) AppendEntry(out, &offsets, key, agg);
  FinishRun(out, offsets);
}

Status LoadWindowRuns(Txn* txn, int64_t window_ms, WindowRuns* out) {
  out->numbers.clear();
  out->runs.clear();
  return ScanRuns(txn, window_ms, [&](uint64_t number, std::string_view v) {
    AggRun run;
    SNAPSINK_RETURN_IF_ERROR(AggRun::Decode(v, &run));
    out->numbers.push_back(number);
    out->runs.push_back(run);
    return Status::OK();
  });
}

Status ReadSumBound(Txn* txn, int64_t window_ms, uint64_t* bound, bool* known) {
  *bound = 0;
  *known = false;
  std::string_view v;
  Status s = txn->Get(Table::kAggRuns, RunKey(window_ms, kBoundNumber), &v);
  if (s.ok()) {
    if (v.size() != 8) return Status::Corruption("malformed aggregate sum bound in state");
    *bound = DecodeFixed64(v.data());
    *known = true;
    return Status::OK();
  }
  if (!s.IsNotFound()) return s;
  // No bound: known (zero) only for a window with no aggregates at all.
  bool any = false;
  for (Table t : {Table::kAggs, Table::kAggRuns}) {
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(t, codec::WindowKey(window_ms), [&](std::string_view, std::string_view) {
      any = true;
      return false;
    }));
  }
  *known = !any;
  return Status::OK();
}

Status WriteSumBound(Txn* txn, int64_t window_ms, uint64_t bound) {
  std::string v;
  PutFixed64(&v, bound);
  return txn->Put(Table::kAggRuns, RunKey(window_ms, kBoundNumber), v);
}

Status GetLiveAggregate(Txn* txn, std::string_view key, const WindowRuns& runs, Aggregate* out, bool* found) {
  *out = Aggregate();
  *found = false;
  std::string_view v;
  Status s = GetRecord(txn, Table::kAggs, key, &v);
  if (s.ok()) {
    SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, out));
    *found = true;
  } else if (!s.IsNotFound()) {
    return s;
  }
  const std::string_view run_key = key.substr(kWindowBytes);
  for (const AggRun& run : runs.runs) {
    const size_t i = run.Find(run_key);
    if (i == run.size()) continue;
    AddWrapping(out, run.agg(i));
    *found = true;
  }
  return Status::OK();
}

// Whether a quarter or more of newer's keys (16 of them, evenly spaced)
// are in older: runs that share keys shrink when merged.
static bool SharesKeys(const AggRun& older, const AggRun& newer) {
  constexpr size_t kProbes = 16;
  const size_t probes = std::min(kProbes, newer.size());
  size_t found = 0;
  for (size_t i = 0; i < probes; ++i) found += older.Find(newer.key(i * newer.size() / probes)) < older.size() ? 1 : 0;
  return probes > 0 && 4 * found >= probes;
}

Status AppendWindowRun(Txn* txn, int64_t window_ms, const std::vector<std::pair<std::string_view, Aggregate>>& deltas,
                       RunMerges merges) {
  // The window's runs as stored, oldest first. Their framing is checked
  // (AggRun::Decode) only when one is merged: a run left as it is costs its
  // entry count, not a pass over its entries, every commit.
  struct Item {
    uint64_t number;
    std::string_view stored;             // the run in the store ("" for a run built here)
    std::unique_ptr<std::string> bytes;  // a run built here (new or merged); null: stored, unchanged
    size_t entries = 0;
  };
  std::vector<Item> items;
  SNAPSINK_RETURN_IF_ERROR(ScanRuns(txn, window_ms, [&](uint64_t number, std::string_view v) {
    Item it{number, v, nullptr, 0};
    Status st = AggRun::Entries(v, &it.entries);
    items.push_back(std::move(it));
    return st;
  }));
  std::vector<uint64_t> old_numbers;
  for (const Item& it : items) old_numbers.push_back(it.number);
  Item fresh{items.empty() ? 1 : items.back().number + 1, std::string_view(), std::make_unique<std::string>(),
             deltas.size()};
  EncodeAggRun(deltas, fresh.bytes.get());
  items.push_back(std::move(fresh));
  // Size-tiered: the newest kMergeWidth runs become one while the oldest of
  // them holds at most twice the entries of the newest (runs of one tier).
  // With commits of one size that is a base-4 counter: every delta is
  // rewritten about log4(commits) times (two-way merges: log2) and a window
  // keeps at most three runs per tier. Without a merge each run holds more
  // than twice the run three places newer, so however the batch sizes vary
  // their number stays within 3 * log2(entries) + 3.
  // Every merge is built before anything is written: stored runs are views
  // into pages that a write could free.
  auto run_of = [](const Item& it, AggRun* run) -> Status {
    if (it.bytes != nullptr) {
      *run = AggRun::Trusted(*it.bytes);
      return Status::OK();
    }
    return AggRun::Decode(it.stored, run);
  };
  auto byte_size = [](const Item& it) { return it.bytes != nullptr ? it.bytes->size() : it.stored.size(); };
  // A window whose keys are read (every key in every run) after a spell
  // of kSmall that left many runs of new keys: all of them merge once.
  size_t width = kMergeWidth;
  if (merges == RunMerges::kAll && items.size() > kMaxReadRuns) width = items.size();
  while (items.size() >= width) {
    const size_t first = items.size() - width;
    if (width == kMergeWidth && items[first].entries > 2 * items.back().entries) break;
    if (merges == RunMerges::kSmall && items.size() <= kMaxUnreadRuns) {
      size_t bytes = 0;
      for (size_t i = first; i < items.size(); ++i) bytes += byte_size(items[i]);
      if (bytes > kSmallMergeBytes) {
        AggRun older, newer;
        SNAPSINK_RETURN_IF_ERROR(run_of(items[items.size() - 2], &older));
        SNAPSINK_RETURN_IF_ERROR(run_of(items.back(), &newer));
        if (!SharesKeys(older, newer)) break;  // left to the seal
      }
    }
    std::vector<AggRun> group(width);
    for (size_t i = 0; i < width; ++i) SNAPSINK_RETURN_IF_ERROR(run_of(items[first + i], &group[i]));
    auto merged = std::make_unique<std::string>();
    MergeRuns(group, merged.get());
    items.resize(first + 1);
    Item& into = items.back();
    into.bytes = std::move(merged);
    into.stored = std::string_view();
    into.entries = AggRun::Trusted(*into.bytes).size();
    width = kMergeWidth;
  }
  SNAPSINK_RETURN_IF_ERROR(NoteRunsFormat(txn));
  // Old runs merged away are deleted; merged and new runs written.
  for (uint64_t number : old_numbers) {
    bool kept = false;
    for (const Item& it : items) kept |= it.number == number;
    if (!kept) SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kAggRuns, RunKey(window_ms, number)));
  }
  for (const Item& it : items) {
    if (it.bytes != nullptr) SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kAggRuns, RunKey(window_ms, it.number), *it.bytes));
  }
  return Status::OK();
}

Status DeleteWindowAggregates(Txn* txn, int64_t window_ms) {
  const std::string prefix = codec::WindowKey(window_ms);
  SNAPSINK_RETURN_IF_ERROR(txn->DeletePrefix(Table::kAggs, prefix));
  return txn->DeletePrefix(Table::kAggRuns, prefix);
}

Status CopyWindowAggregates(Txn* from, Txn* to, int64_t window_ms) {
  SNAPSINK_RETURN_IF_ERROR(DeleteWindowAggregates(to, window_ms));
  const std::string prefix = codec::WindowKey(window_ms);
  Status st;
  bool runs = false;
  for (Table t : {Table::kAggs, Table::kAggRuns}) {
    SNAPSINK_RETURN_IF_ERROR(from->Scan(t, prefix, [&](std::string_view k, std::string_view v) {
      runs |= t == Table::kAggRuns;
      st = to->Put(t, k, v);
      return st.ok();
    }));
    SNAPSINK_RETURN_IF_ERROR(st);
  }
  return runs ? NoteRunsFormat(to) : Status::OK();
}

MergedRuns::MergedRuns(const WindowRuns& runs) : runs_(runs), pos_(runs.runs.size(), 0) {
  if (runs.runs.size() > kScanRuns) {
    heap_.reserve(runs.runs.size());
    for (size_t r = 0; r < runs.runs.size(); ++r) Push(r);
  }
  Next();
}

void MergedRuns::Next() {
  if (runs_.runs.size() > kScanRuns) {
    NextByHeap();
  } else {
    NextByScan();
  }
}

// One pass over the runs' heads: the least key, and which runs hold it (a
// key is in a run at most once), so each head is compared once per step.
void MergedRuns::NextByScan() {
  valid_ = false;
  holders_.clear();
  for (size_t r = 0; r < pos_.size(); ++r) {
    if (pos_[r] >= runs_.runs[r].size()) continue;
    const std::string_view k = runs_.runs[r].key(pos_[r]);
    const int c = valid_ ? k.compare(key_) : -1;
    if (c < 0) {
      key_ = k;
      holders_.clear();
    }
    if (c <= 0) holders_.push_back(r);
    valid_ = true;
  }
  if (!valid_) return;
  agg_ = Aggregate();
  for (size_t r : holders_) AddWrapping(&agg_, runs_.runs[r].agg(pos_[r]++));
}

namespace {
// std::push_heap and pop_heap keep the greatest first: this puts the least
// (key, run) there.
bool HeadAfter(const std::pair<std::string_view, size_t>& a, const std::pair<std::string_view, size_t>& b) {
  const int c = a.first.compare(b.first);
  return c != 0 ? c > 0 : a.second > b.second;
}
}  // namespace

void MergedRuns::Push(size_t r) {
  if (pos_[r] >= runs_.runs[r].size()) return;
  heap_.emplace_back(runs_.runs[r].key(pos_[r]), r);
  std::push_heap(heap_.begin(), heap_.end(), HeadAfter);
}

// Moves heap_[0] down to its place (std::pop_heap's order: no head after
// one of its children).
void MergedRuns::SiftDownTop() {
  const size_t n = heap_.size();
  if (n == 0) return;
  const std::pair<std::string_view, size_t> x = heap_[0];
  size_t i = 0;
  for (size_t c = 1; c < n; c = 2 * i + 1) {
    if (c + 1 < n && HeadAfter(heap_[c], heap_[c + 1])) ++c;
    if (!HeadAfter(x, heap_[c])) break;
    heap_[i] = heap_[c];
    i = c;
  }
  heap_[i] = x;
}

// The heads leave the heap least key first and, for one key, oldest run
// first: the same entries, added in the same order, as NextByScan adds.
// A run's next head replaces its last one at the top, one sift for a key
// that one run holds (a key is in a run at most once, so that next head is
// a greater key).
void MergedRuns::NextByHeap() {
  valid_ = !heap_.empty();
  if (!valid_) return;
  key_ = heap_.front().first;
  agg_ = Aggregate();
  while (!heap_.empty() && heap_.front().first == key_) {
    const size_t r = heap_.front().second;
    AddWrapping(&agg_, runs_.runs[r].agg(pos_[r]++));
    if (pos_[r] < runs_.runs[r].size()) {
      heap_.front() = {runs_.runs[r].key(pos_[r]), r};
    } else {
      heap_.front() = heap_.back();
      heap_.pop_back();
    }
    SiftDownTop();
  }
}

}  // namespace snapsink
