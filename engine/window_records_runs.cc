#include "engine/window_records_runs.h"

#include <cstring>
#include <memory>

#include "engine/coding.h"
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
constexpr size_t kWindowBytes = 8;

std::string WindowKey(int64_t window_ms) {
  std::string key;
  codec::AppendWindowKey(&key, window_ms);
  return key;
}

std::string RunKey(int64_t window_ms, uint64_t number) {
  std::string key = WindowKey(window_ms);
  PutBigEndian(&key, number, 8);
  return key;
}

void AddWrapping(Aggregate* to, const Aggregate& a) {
  to->count = WrappingAdd(to->count, a.count);
  to->sum_micros = WrappingAdd(to->sum_micros, a.sum_micros);
  to->events = WrappingAdd(to->events, a.events);
}

void AppendEntry(std::string* out, std::vector<uint32_t>* offsets, std::string_view key, const Aggregate& a) {
  offsets->push_back(static_cast<uint32_t>(out->size()));
  const uint32_t len = static_cast<uint32_t>(key.size());
  const int64_t fields[3] = {a.count, a.sum_micros, a.events};
  out->append(reinterpret_cast<const char*>(&len), 4);
  out->append(key);
  out->append(reinterpret_cast<const char*>(fields), sizeof(fields));
}

void FinishRun(std::string* out, const std::vector<uint32_t>& offsets) {
  for (uint32_t o : offsets) PutFixed32(out, o);
  PutFixed32(out, static_cast<uint32_t>(offsets.size()));
}

// A root holding runs is format 4 (engine/root.h): a build that knows no
// runs refuses it rather than miss them.
Status NoteRunsFormat(Txn* txn) {
  SNAPSINK_ASSIGN_OR_RETURN(auto format, Root::GetMetaU64(txn, meta::kFormat));
  if (format && *format >= kFormatVersion) return Status::OK();
  return Root::PutMetaU64(txn, meta::kFormat, kFormatVersion);
}

}  // namespace

// The runs merged into one (compaction).
static void MergeRuns(const AggRun& older, const AggRun& newer, std::string* out) {
  WindowRuns two;
  two.runs = {older, newer};
  std::vector<uint32_t> offsets;
  out->clear();
  out->push_back(kRunVersion);
  for (MergedRuns m(two); m.Valid(); m.Next()) AppendEntry(out, &offsets, m.key(), m.agg());
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
    const size_t len = DecodeFixed32(bytes.data() + o);
    if (len > entries_end - o - 4 || entries_end - o - 4 - len < kAggBytes) return bad;
    expect = o + 4 + len + kAggBytes;
  }
  if (expect != entries_end) return bad;
  out->bytes_ = bytes;
  out->offsets_ = offsets;
  out->n_ = n;
  return Status::OK();
}

std::string_view AggRun::key(size_t i) const {
  const char* p = bytes_.data() + DecodeFixed32(offsets_ + 4 * i);
  return std::string_view(p + 4, DecodeFixed32(p));
}

Aggregate AggRun::agg(size_t i) const {
  const char* p = bytes_.data() + DecodeFixed32(offsets_ + 4 * i);
  p += 4 + DecodeFixed32(p);
  return Aggregate{static_cast<int64_t>(DecodeFixed64(p)), static_cast<int64_t>(DecodeFixed64(p + 8)),
                   static_cast<int64_t>(DecodeFixed64(p + 16))};
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
  out->clear();
  out->push_back(kRunVersion);
  for (const auto& [key, agg] : entries) AppendEntry(out, &offsets, key, agg);
  FinishRun(out, offsets);
}

Status LoadWindowRuns(Txn* txn, int64_t window_ms, WindowRuns* out) {
  out->numbers.clear();
  out->runs.clear();
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kAggRuns, WindowKey(window_ms), [&](std::string_view k, std::string_view v) {
    if (k.size() != kWindowBytes + 8) {
      st = Status::Corruption("malformed aggregate run key in state");
      return false;
    }
    const uint64_t number = DecodeBigEndian(k.data() + kWindowBytes, 8);
    if (number == kBoundNumber) return true;
    AggRun run;
    st = AggRun::Decode(v, &run);
    if (!st.ok()) return false;
    out->numbers.push_back(number);
    out->runs.push_back(run);
    return true;
  }));
  return st;
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
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(t, WindowKey(window_ms), [&](std::string_view, std::string_view) {
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

Status AppendWindowRun(Txn* txn, int64_t window_ms,
                       const std::vector<std::pair<std::string_view, Aggregate>>& deltas) {
  WindowRuns old;
  SNAPSINK_RETURN_IF_ERROR(LoadWindowRuns(txn, window_ms, &old));
  struct Item {
    uint64_t number;
    std::unique_ptr<std::string> bytes;  // null: an old run, unchanged (a view into the store)
    AggRun run;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < old.runs.size(); ++i) items.push_back(Item{old.numbers[i], nullptr, old.runs[i]});
  Item fresh{old.numbers.empty() ? 1 : old.numbers.back() + 1, std::make_unique<std::string>(), AggRun()};
  EncodeAggRun(deltas, fresh.bytes.get());
  SNAPSINK_RETURN_IF_ERROR(AggRun::Decode(*fresh.bytes, &fresh.run));
  items.push_back(std::move(fresh));
  // Every merge is built before anything is written: the old runs are views
  // into pages that a write could free.
  while (items.size() >= 2 && items[items.size() - 2].run.size() <= 2 * items.back().run.size()) {
    Item& older = items[items.size() - 2];
    auto merged = std::make_unique<std::string>();
    MergeRuns(older.run, items.back().run, merged.get());
    items.pop_back();
    Item& into = items.back();
    into.bytes = std::move(merged);
    SNAPSINK_RETURN_IF_ERROR(AggRun::Decode(*into.bytes, &into.run));
  }
  SNAPSINK_RETURN_IF_ERROR(NoteRunsFormat(txn));
  // Old runs merged away are deleted; merged and new runs written.
  for (uint64_t number : old.numbers) {
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
  const std::string prefix = WindowKey(window_ms);
  SNAPSINK_RETURN_IF_ERROR(txn->DeletePrefix(Table::kAggs, prefix));
  return txn->DeletePrefix(Table::kAggRuns, prefix);
}

Status CopyWindowAggregates(Txn* from, Txn* to, int64_t window_ms) {
  SNAPSINK_RETURN_IF_ERROR(DeleteWindowAggregates(to, window_ms));
  const std::string prefix = WindowKey(window_ms);
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

MergedRuns::MergedRuns(const WindowRuns& runs) : runs_(runs), pos_(runs.runs.size(), 0) { Next(); }

void MergedRuns::Next() {
  valid_ = false;
  for (size_t r = 0; r < pos_.size(); ++r) {
    if (pos_[r] >= runs_.runs[r].size()) continue;
    const std::string_view k = runs_.runs[r].key(pos_[r]);
    if (!valid_ || k < key_) key_ = k;
    valid_ = true;
  }
  if (!valid_) return;
  agg_ = Aggregate();
  for (size_t r = 0; r < pos_.size(); ++r) {
    const AggRun& run = runs_.runs[r];
    if (pos_[r] < run.size() && run.key(pos_[r]) == key_) AddWrapping(&agg_, run.agg(pos_[r]++));
  }
}

}  // namespace snapsink
