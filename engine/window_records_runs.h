// Delta runs: how ingest stores a window's aggregates.
//
// A window's live aggregates are the sum of two parts:
//   base records  Table::kAggs     window|metric|key -> Aggregate (rollback
//                                  and backfill write these, and roots made
//                                  before runs hold only these);
//   delta runs    Table::kAggRuns  window (8) | run number (8, big-endian)
//                                  -> one run: the sums a group of commits
//                                  added, sorted by key.
// Each ingest commit appends one run per window it touched: one sequential
// write of its deltas, instead of a put into the window's B-tree per key,
// which for a batch of new keys spread over a large window copies most of
// the tree's leaf pages every commit. Runs are compacted in the same
// transaction as the commit that appends one, size-tiered: the newest four
// merge while the oldest of them has at most twice the entries of the
// newest, so every delta is rewritten about log4(commits) times and a
// window holds about three runs per factor of four in size. A window whose
// sum bound holds (below) is one ingest never reads a key of: there
// (RunMerges::kSmall) runs merge only while the merge is small or they
// share keys, which keeps a window of few keys and many commits compact;
// large runs of new keys are left to the seal, which reads any number of
// runs in one merge (MergedRuns). Merging them would rewrite bytes nothing
// reads before the seal: a window of a million new keys in 10,000-line
// commits wrote its rows about three times (bench/RESULTS.md, "Wide
// windows").
//
// Sums are commutative and are added with wrap-around (two's complement):
// whatever the grouping, base + runs is the exact live value, which ingest
// keeps within int64 by checking every event against it.
//
// Run number 0 is no run: it holds a bound on the absolute sum of every key
// of the window (u64, little-endian; the sum of |value| over every event
// applied to it, saturating). While the bound plus an event's |value| fits
// in int64, no key's sum can overflow and ingest need not read the key's
// live value at all; past it, it reads it (base plus runs). A window with
// base records or runs but no bound (rollback and backfill write base
// records) has no bound: every new key of it is read, as before runs.
//
// Run format (little-endian):
//   u8 version (1)
//   entries: u32 key length | key | i64 count | i64 sum_micros | i64 events
//            [| i64 min_micros | i64 max_micros: only when bit 31 of the
//            key length is set, a minmax metric's entry (engine/metric_kinds.h);
//            a root holding one is of state format 6]
//            [| u32 n | n bytes: only when bit 30 is set too, a quantiles
//            metric's entry: its DDSketch (engine/ddsketch.h encoding); a
//            root holding one is of state format 7; or a distinct metric's:
//            its HyperLogLog (engine/hyperloglog.h encoding, told apart by
//            its first byte, engine/kind_sketch.h), state format 8]
//   u32 offset of every entry (from the start), in key order
//   u32 number of entries
// A key is the natural aggregate key without its 8-byte window prefix
// (escaped metric | key: codec::AggKeyInto), unique within a run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/state_codec.h"
#include "engine/store.h"

namespace snapsink {

// A decoded run; views into the bytes it was decoded from.
class AggRun {
 public:
  // Checks the framing of every entry; Corruption if it does not hold.
  static Status Decode(std::string_view bytes, AggRun* out);
  // A run this process just encoded (EncodeAggRun, a merge): not checked.
  static AggRun Trusted(std::string_view bytes);
  // The number of entries of a stored run, from its last bytes only.
  static Status Entries(std::string_view bytes, size_t* n);
  size_t size() const { return n_; }
  size_t byte_size() const { return bytes_.size(); }
  std::string_view key(size_t i) const;
  Aggregate agg(size_t i) const;
  // The index of key, or size() when absent (binary search).
  size_t Find(std::string_view key) const;

 private:
  std::string_view bytes_;
  const char* offsets_ = nullptr;
  size_t n_ = 0;
};

// Encodes entries (sorted by key, keys unique) as one run.
void EncodeAggRun(const std::vector<std::pair<std::string_view, Aggregate>>& entries, std::string* out);

// One window's runs as a transaction sees them, oldest first.
struct WindowRuns {
  std::vector<uint64_t> numbers;
  std::vector<AggRun> runs;
};
// The runs stay valid until the transaction writes Table::kAggRuns.
Status LoadWindowRuns(Txn* txn, int64_t window_ms, WindowRuns* out);

// The window's sum bound (see above): *known false when it has none.
Status ReadSumBound(Txn* txn, int64_t window_ms, uint64_t* bound, bool* known);
Status WriteSumBound(Txn* txn, int64_t window_ms, uint64_t bound);

// The live aggregate of natural aggregate key `key` (codec::AggKeyInto) of
// window_ms: its base record plus every run's entry. *found is false (and
// *out zero) when neither holds it.
Status GetLiveAggregate(Txn* txn, std::string_view key, const WindowRuns& runs, Aggregate* out, bool* found);

// Which merges AppendWindowRun makes (see above).
enum class RunMerges {
  kAll,    // size-tiered, any size: the window's keys are read during ingest
  kSmall,  // of runs of at most kSmallMergeBytes together, or larger ones
           // that share keys (a quarter of 16 probed): no key of the window
           // is read during ingest (its sum bound holds)
};

// A merge of runs of at most this many bytes together is made in a window
// of RunMerges::kSmall: some 25,000 entries of short keys, written again in
// about a millisecond.
inline constexpr size_t kSmallMergeBytes = size_t{1} << 20;

// A window of RunMerges::kSmall past this many runs merges size-tiered as
// kAll does, so its count grows by a tier per factor of four from there (a
// window of a thousand runs would cost every commit a look at each). Up to
// here its runs grow with its bytes: a quarter MiB or more each.
inline constexpr size_t kMaxUnreadRuns = 256;

// A window whose keys are read holds at most this many runs: past it (runs
// of new keys that kSmall left, when an event then passes the bound) the
// next append merges all of them into one, so a key is looked up in few
// runs. Size-tiered merges keep a window of commits of one size far below
// it (three runs a tier, a tier per factor of four in size).
inline constexpr size_t kMaxReadRuns = 32;

// Appends a run of deltas (sorted by key without the window prefix, unique)
// to window_ms, then compacts the window's runs (see above).
Status AppendWindowRun(Txn* txn, int64_t window_ms, const std::vector<std::pair<std::string_view, Aggregate>>& deltas,
                       RunMerges merges = RunMerges::kAll);

// Deletes every live aggregate of window_ms: its base records and its runs.
// The one place a window's live state is dropped (rollback, backfill).
Status DeleteWindowAggregates(Txn* txn, int64_t window_ms);

// Replaces window_ms's live aggregates in `to` by those in `from` (the
// records of both tables copied as they are).
Status CopyWindowAggregates(Txn* from, Txn* to, int64_t window_ms);

// The entries of a window's runs merged in key order (the key without its
// window prefix; the entries of one key summed). Borrows runs.
class MergedRuns {
 public:
  explicit MergedRuns(const WindowRuns& runs);
  bool Valid() const { return valid_; }
  std::string_view key() const { return key_; }
  const Aggregate& agg() const { return agg_; }
  void Next();

 private:
  // Past kScanRuns runs the heads are kept in a min-heap on (key, run)
  // rather than compared in one pass per key: log(runs) comparisons a key,
  // not runs. Either way a key's entries are added oldest run first.
  static constexpr size_t kScanRuns = 8;
  void NextByScan();
  void NextByHeap();
  void Push(size_t r);
  void SiftDownTop();

  const WindowRuns& runs_;
  std::vector<size_t> pos_;
  std::vector<size_t> holders_;  // the runs whose head is key_ (NextByScan)
  std::vector<std::pair<std::string_view, size_t>> heap_;  // (head key, run); only past kScanRuns
  bool valid_ = false;
  std::string_view key_;
  Aggregate agg_;
};

}  // namespace snapsink
