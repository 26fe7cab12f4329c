// The records snapsink keeps in LMDB, and their byte encodings.
//
// Keys sort the way the records are scanned: a window key is the window
// start as a big-endian integer with its sign bit flipped, so windows sort in
// time order; a metric inside a key is escaped (0x00 -> 0x00 0xFF) and
// terminated by 0x00 0x00, so (metric, key) pairs sort as byte strings do.
// Values are little-endian fixed-width fields. Do not change these layouts
// without bumping kProducerTimesFormat in engine/root.h.
//
// Long keys: an aggregate key reaches 522 bytes (8 + 258 + 256) and a source
// name has no limit, past LMDB's 511. Such a key is stored as its first 503
// bytes + an 8-byte hash slot, the rest of the key kept in the value, read
// and written only through GetRecord/PutRecord (engine/long_key.h); keys
// that fit (all but those) are stored as they are, with no hash. Collision
// story, in short (in full in engine/long_key.h): two keys sharing the 503
// bytes and the hash are told apart by the full key kept in each record;
// the second goes to the next slot (open addressing, at most 64), so they
// are never merged; a full chain is an error, not an overwrite. A scan of
// aggs gets natural (metric, key) order back from ScanWindowAggregates
// (engine/window_records.h), which sorts the rare runs that share 503 bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/coding.h"
#include "engine/status.h"
#include "snapsink/options.h"

namespace snapsink {

// A missing range of sequence numbers, [lo, hi).
struct Gap {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Gap&) const = default;
};

// What the engine remembers of one producer: never a record per event.
struct ProducerState {
  uint32_t epoch = 0;
  uint64_t next_seq = 0;    // the next expected sequence number
  std::vector<Gap> gaps;    // open gaps, sorted, disjoint, all below next_seq
  // Open gaps of this epoch beyond the record's kMaxOpenGaps, each below
  // every gap in `gaps`: ranges in Table::kGapSpill (engine/gap_spill.h).
  uint64_t spilled = 0;
  bool operator==(const ProducerState&) const = default;
};

// Beside a ProducerState in its record (format 5, engine/producer_retention.h):
// the greatest event time heard from the producer and the time part of its
// key in Table::kProducerIdle (a bucket start at or before last_seen).
struct ProducerSeen {
  int64_t last_seen = 0;
  int64_t idle_at = 0;
  bool operator==(const ProducerSeen&) const = default;
};

// Accounting of one input source, summed over every read of it:
//   lines = applied + duplicates + fenced + rejected + ignored,
// where ignored counts events a backfill took in sequence but left out
// because their window is outside its --from/--to (always 0 for live ingest).
// A line read again after its file was replaced (or standard input read
// again) counts again: as a duplicate if its event was applied before.
//
// The position (offset .. flags) is a fast path, never a reason to skip
// (SPEC 5): it is only used when the file at the path is still the one it
// was taken in: same device and inode, at least `offset` bytes long, and the
// XXH3-64 of the up to kPositionCheckBytes bytes just before `offset` equal
// to `tail_hash`. Standard input has no position (flags without kHasPosition).
struct SourceState : api::LineCounts {  // lines, applied, ..., ignored
  static constexpr uint8_t kHasPosition = 1;  // dev, ino and tail_hash are set
  static constexpr uint8_t kPartialTail = 2;  // the last line taken had no '\n': the
                                              // whitespace and '\n' that finish it are skipped
  uint64_t offset = 0;  // bytes consumed and committed
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t tail_hash = 0;
  uint64_t line_no = 0;  // lines of the current file before offset (for SOURCE:LINE)
  uint8_t flags = 0;     // kHasPosition, kPartialTail only
  // Of the write path (api::Sink::Write), stored after the fields above only
  // when one is set (format 3 of the record; formats 1 and 2 still decode):
  // the source's opaque position (a Kafka offset, a request id), its
  // optional progress (read of end: how far it has been read, how far it
  // reaches), and the newest event time applied from it (any source).
  struct Progress {
    uint64_t read = 0, end = 0;
    bool operator==(const Progress&) const = default;
  };
  std::optional<std::string> position;
  std::optional<Progress> progress;
  std::optional<int64_t> newest_ts_ms;
  // The owner epoch of a source that many processes take turns at (a Kafka
  // partition, SPEC 12): raised by each new owner, checked by every commit.
  std::optional<uint64_t> owner_epoch;
  bool operator==(const SourceState&) const = default;
};

// Meta key "source_path/<name>" -> the absolute path of the file a source
// was last read from (ingest writes it with each commit; not for "-"), so
// that status finds the file wherever it runs. The name stays as given.
inline std::string SourcePathKey(std::string_view source) { return "source_path/" + std::string(source); }

// Bytes before a position that its checksum covers: enough to tell a file
// rewritten in place from the one read, cheap to re-read on every ingest.
inline constexpr uint64_t kPositionCheckBytes = 4096;

// count and exact sum of one (window, metric, key); events = adds + retracts applied.
// A minmax metric's aggregate (engine/metric_kinds.h) also holds the least
// and greatest value applied (has_range once one was; a sum metric's never).
// A quantiles metric's holds a range too (of every value applied, added or
// retracted) and its quantile sketch: sketch, the canonical encoding of an
// engine/ddsketch.h DDSketch of the values applied ("" for other kinds).
// A distinct metric's likewise holds a range and, in sketch, the canonical
// encoding of an engine/hyperloglog.h HyperLogLog of the events' items
// (engine/kind_sketch.h tells the two apart).
// The public api::Totals is its first part (count, sum_micros, events).
struct Aggregate : api::Totals {
  bool has_range = false;
  int64_t min_micros = 0;
  int64_t max_micros = 0;
  std::string sketch = {};
  bool operator==(const Aggregate&) const = default;
};

// Merges a's sketch into to's (MergeSketches: DDSketch buckets summed,
// HyperLogLog registers by max; in any order or grouping the same bytes). A sketch that does not decode, or of other
// parameters, leaves to's sketch kBadSketch, which every reader refuses as
// corrupt (nothing is dropped silently).
inline constexpr char kBadSketch[] = "\xff";
void MergeSketch(Aggregate* to, const Aggregate& a);

// Widens to's range by v (a value applied to a minmax metric).
inline void AddToRange(Aggregate* to, int64_t v) {
  if (!to->has_range) {
    to->has_range = true;
    to->min_micros = to->max_micros = v;
    return;
  }
  if (v < to->min_micros) to->min_micros = v;
  if (v > to->max_micros) to->max_micros = v;
}
// Merges a's range into to's: min of mins, max of maxes (in any order or
// grouping the same result).
// A quantiles or distinct metric's sketch is merged with its range (MergeSketch).
inline void MergeRange(Aggregate* to, const Aggregate& a) {
  if (!a.sketch.empty()) MergeSketch(to, a);
  if (!a.has_range) return;
  AddToRange(to, a.min_micros);
  AddToRange(to, a.max_micros);
}

// Per window: what has been sealed and whether it changed since.
struct WindowState {
  uint64_t last_version = 0;  // highest version sealed (staged or published), 0 = none
  bool dirty = false;         // events applied since the last seal
  bool operator==(const WindowState&) const = default;
};

// The ledger of one (window, metric) as of a seal.
struct LedgerEntry {
  std::string metric;
  Aggregate totals;  // count, sum and events over every key of the metric
  bool operator==(const LedgerEntry&) const = default;
};

enum class SealState : uint8_t { kStaged = 1, kPublished = 2, kSuperseded = 3 };  // do not change

// One seal of one window version: the ledger it must reconcile against.
struct SealRecord {
  SealState state = SealState::kStaged;
  uint64_t rows = 0;
  std::vector<LedgerEntry> ledger;  // sorted by metric
  bool operator==(const SealRecord&) const = default;
};

namespace codec {

void AppendWindowKey(std::string* dst, int64_t window_ms);
std::string WindowKey(int64_t window_ms);  // AppendWindowKey to an empty string
int64_t DecodeWindowKey(std::string_view src);  // REQUIRES src.size() >= 8
void AppendEscapedMetric(std::string* dst, std::string_view metric);
// Splits "escaped metric + 0x00 0x00 + rest"; false if malformed.
bool SplitEscapedMetric(std::string_view src, std::string* metric, std::string_view* rest);

// aggs:   window(8) | escaped metric | key
void AggKeyInto(std::string* dst, int64_t window_ms, std::string_view metric, std::string_view key);
// The same bytes written at out, for a metric without a 0x00 byte (nothing
// to escape): kPlainAggKeyExtra + metric.size() + key.size() of them.
inline constexpr size_t kPlainAggKeyExtra = 8 + 2;
void PlainAggKeyTo(char* out, int64_t window_ms, std::string_view metric, std::string_view key);
// ledger: window(8) | escaped metric
void LedgerKeyInto(std::string* dst, int64_t window_ms, std::string_view metric);
// seals:  window(8) | version (8, big-endian)
std::string SealKey(int64_t window_ms, uint64_t version);
void DecodeSealKey(std::string_view key, int64_t* window_ms, uint64_t* version);

std::string Encode(const ProducerState& v);
std::string Encode(const SourceState& v);
std::string Encode(const Aggregate& v);
std::string Encode(const WindowState& v);
std::string Encode(const SealRecord& v);
void EncodeInto(std::string* dst, const Aggregate& v);
Status Decode(std::string_view src, ProducerState* v);
// The producer record with its last-seen time (seen == nullopt: the record
// as formats 3 and 4 write it). Decode reads either form; `seen` is left
// empty for a record without one.
std::string EncodeProducer(const ProducerState& v, const std::optional<ProducerSeen>& seen);
// The same bytes into *dst (replacing what it held).
void EncodeProducerInto(std::string* dst, const ProducerState& v, const std::optional<ProducerSeen>& seen);
Status DecodeProducer(std::string_view src, ProducerState* v, std::optional<ProducerSeen>* seen);
Status Decode(std::string_view src, SourceState* v);
Status Decode(std::string_view src, Aggregate* v);
Status Decode(std::string_view src, WindowState* v);
Status Decode(std::string_view src, SealRecord* v);

// Little-endian fixed-width fields (engine/coding.h).
inline void PutU32(std::string* dst, uint32_t v) { coding::PutFixed32(dst, v); }
inline void PutU64(std::string* dst, uint64_t v) { coding::PutFixed64(dst, v); }
inline uint32_t GetU32(const char* p) { return coding::DecodeFixed32(p); }
inline uint64_t GetU64(const char* p) { return coding::DecodeFixed64(p); }

}  // namespace codec
}  // namespace snapsink
