// snapsink public API: the read-side views of a root as typed records.
//
// ReadOnlySink (sink.h) returns the records below. To print them as the
// HTTP server and every other snapsink output does (an aligned table,
// NDJSON or CSV), see utilities/table.h.
//
// Times are milliseconds since the Unix epoch (UTC); a window is named by its
// start. Standard library only, like every header under include/snapsink/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "snapsink/options.h"
#include "snapsink/reader.h"

namespace snapsink::api {

// --- Live state (one LMDB read transaction per view) ----------------------

// ReadOnlySink::Producers. A retired producer (engine tombstone) has next_seq 0
// and no gaps; last_seen is the greatest event time heard from it.
struct ProducerInfo {
  std::string producer;
  uint64_t epoch = 0;
  uint64_t next_seq = 0;
  uint64_t open_gaps = 0;
  std::optional<int64_t> last_seen;  // nullopt: not recorded (seen before retention tracking)
  bool retired = false;
};

// ReadOnlySink::Gaps: an open gap of a producer's current epoch.
struct GapInfo {
  std::string producer;
  uint64_t epoch = 0;
  uint64_t from_seq = 0, to_seq = 0;  // both inclusive
  uint64_t missing = 0;
};

// Sequence numbers first..last, both inclusive.
struct SeqRange {
  uint64_t first = 0;
  uint64_t last = UINT64_MAX - 1;  // the default range: every sequence number
};
// utilities/parse.h reads one from text (ParseSeqRange).

// What Sink::AcceptGaps records: ingest under GapPolicy::kStop
// goes on past the producer's gaps inside range, in epoch (nullopt: every
// epoch). Accepted gaps still fill if their events arrive.
struct GapAcceptance {
  std::string producer;
  std::optional<uint32_t> epoch;
  SeqRange range;
};

// What a metric's aggregates hold (Sink::SetMetricKind). A metric never
// declared is kSum: count and exact sum. kMinMax also holds the least and
// greatest value applied (Row::min_micros, max_micros); a retract of a
// minmax metric is a bad line. kQuantiles holds the least and greatest
// value applied and a quantile sketch of the values (DDSketch, of a relative
// accuracy, 1% by default): Row::quantiles answers QuerySpec::quantiles; a
// retract takes its value's bucket down by one. kDistinct holds the least
// and greatest value applied and a distinct-count sketch of the events'
// `item` fields (HyperLogLog, of a precision, 14 by default): Row::distinct
// is its estimate; an event without a well-formed item, and a retract, are
// bad lines.
enum class MetricKind { kSum, kMinMax, kQuantiles, kDistinct };
// "sum", "minmax", "quantiles", "distinct".
inline const char* MetricKindName(MetricKind k) {
  return k == MetricKind::kMinMax      ? "minmax"
         : k == MetricKind::kQuantiles ? "quantiles"
         : k == MetricKind::kDistinct  ? "distinct"
                                       : "sum";
}
// A declared metric (ReadOnlySink::MetricKinds).
struct MetricKindInfo {
  std::string metric;
  MetricKind kind = MetricKind::kSum;
  uint32_t accuracy_ppm = 0;  // kQuantiles: relative accuracy in parts per million (10000 = 1%); else 0
  int precision = 0;          // kDistinct: the sketch's precision (2^precision registers); else 0
};

// An accepted-gap record, kept for audit (ReadOnlySink::AcceptedGaps).
struct AcceptedGapInfo {
  GapAcceptance gap;
  int64_t accepted_at_ms = 0;  // wall clock, for people only
};

// What Sink::AcceptSourceGap records: positions LO..HI (both inclusive; e.g. a Kafka
// partition's offsets that retention deleted before they were read) of
// source S are lost for good; a reader of S whose position lies inside goes
// on from HI+1.
struct SourceGapAcceptance {
  std::string source;
  uint64_t first = 0, last = 0;
};

// An accepted source range, kept for audit (ReadOnlySink::AcceptedSourceGaps).
struct AcceptedSourceGapInfo {
  SourceGapAcceptance gap;
  int64_t accepted_at_ms = 0;  // wall clock, for people only
};

// ReadOnlySink::Sources: a source's totals and the parts of its duplicates and
// rejected that id dedup and producer retention add.
struct SourceView : SourceInfo {
  uint64_t duplicates_id = 0;     // of duplicates: an id seen within the id horizon
  uint64_t rejected_horizon = 0;  // of rejected: beyond the id horizon
  uint64_t rejected_retired = 0;  // of rejected: a retired producer at its old epoch
  // Of the write path (WriteBatch::SetPosition/SetProgress), e.g. a Kafka
  // partition: its opaque position, how far it has been read and how far it
  // reaches (the high watermark; lag = end - read), and the newest event
  // time applied from it.
  std::optional<std::string> position;
  std::optional<uint64_t> read, end;
  std::optional<int64_t> newest_event_ms;
};

// ReadOnlySink::Ids: the ids held for dedup of events without seq.
struct IdsInfo {
  uint64_t held = 0;
  std::optional<int64_t> oldest;  // first-delivery time of the oldest id held
  int64_t horizon_ms = 0;         // the root's id horizon
  std::optional<int64_t> cutoff;  // earliest event time still deduplicated; nullopt before any event
  uint64_t table_bytes = 0;
};

// ReadOnlySink::Windows.
struct WindowInfo {
  int64_t window_start_ms = 0;
  uint64_t version = 0;  // last sealed version, 0 = none
  bool dirty = false;    // events applied since the last seal
  bool closed = false;   // past the watermark plus lateness
  int64_t events = 0, count = 0;
};

// --- Published state (snapshots/ and manifests/) ---------------------------

struct SnapshotInfo {
  int64_t window_start_ms = 0;
  uint64_t version = 0;
  uint64_t rows = 0;
  int64_t events = 0;
  uint64_t bytes = 0;
  uint64_t generations = 0;  // how many kept generations name it
  bool current = false;      // named by the current generation
};

struct GenerationInfo {
  uint64_t generation = 0;
  uint64_t parent = 0;
  size_t windows = 0;
  uint64_t rollback_of = 0;  // the generation it copies (docs/CONTRACT.md 10); 0 = none
  bool current = false;
};

// --- status (ReadOnlySink::GetStatus) -------------------------------------

// The states of WindowStatus::state, in the order status and metrics list
// them; each window is in exactly one.
inline constexpr const char* kWindowStates[] = {"open", "closed_unsealed", "staged", "published", "unpublished"};
inline constexpr char kWindowStatesHelp[] =
    "open: unsealed changes, the watermark has not passed its end; closed_unsealed: closed by the watermark, "
    "changes not sealed yet; staged: sealed, waiting for publish; published: the current generation holds its "
    "last version; unpublished: sealed before, not in the current generation (rolled back)";

struct WindowStatus {
  int64_t window_start_ms = 0;
  uint64_t version = 0;     // last sealed version, 0 = none
  bool dirty = false;
  bool closed = false;      // by the watermark
  int64_t closes_at_ms = 0; // the event time at which it closes: start + window + lateness
  int64_t events = 0, count = 0;
  bool staged = false;      // a seal waits for publish
  bool published = false;   // in the current generation
  // Exactly one of "open", "closed_unsealed", "staged", "published",
  // "unpublished" (see RootStatus).
  std::string state;
};

struct SourceStatus {
  SourceView source;
  int64_t file_size = -1;  // size of the source's file; -1: not a readable file
  std::string path;        // the absolute path the source was read from ("": standard input, or not recorded)
  bool backfill = false;   // a published backfill's source, named "backfill vN: NAME"
  // Wall-clock time of the last Write that set the source's progress (a
  // Kafka partition's owner writing): how long ago is for display only.
  std::optional<int64_t> progress_at_ms;
};

struct ProducerGaps {
  std::string producer;
  uint32_t epoch = 0;
  std::vector<SeqRange> missing;
};

struct DirUsage {
  std::string dir;  // relative to the root: state, staging, snapshots, manifests, rejects
  uint64_t bytes = 0;
};

// One consistent look at a root (ReadOnlySink::GetStatus).
struct RootStatus {
  RootSettings settings;  // id horizon, producer retention, ...: as created
  std::optional<int64_t> max_event_ts;
  std::optional<int64_t> watermark;   // max_event_ts - lateness
  std::string watermark_rule;         // how the watermark moves, in words (max-ahead)
  // A far-ahead event time waiting for a second producer before it moves
  // the watermark (max-ahead), and that producer; nullopt: none.
  std::optional<int64_t> held_event_ts;
  std::string held_producer;
  // Start of the oldest window retention keeps; nullopt: every window is kept.
  std::optional<int64_t> oldest_kept_window;
  uint64_t current_generation = 0;    // 0 = none
  std::optional<int64_t> published_at_ms;  // wall clock, when recorded
  size_t published_windows = 0;
  std::vector<WindowStatus> windows;  // every window with state, by start
  std::vector<SourceStatus> sources;
  uint64_t producers = 0;
  std::vector<ProducerGaps> gaps;     // only producers with open gaps
  uint64_t retired_producers = 0;
  // Producers whose events came from two Kafka partitions (where the
  // run was told to warn and go on), each with the partitions as recorded
  // ("kafka:T/0, kafka:T/3"), by producer.
  struct SplitProducer {
    std::string producer;
    std::string sources;
  };
  std::vector<SplitProducer> split_producers;
  IdsInfo ids;
  std::vector<DirUsage> disk;
  uint64_t state_bytes = 0;
};

// --- Times -----------------------------------------------------------------

// The range of event times snapsink takes: 0000-01-01 to 9999-12-31 (UTC).
inline constexpr int64_t kMinTimeMs = -62167219200000;
inline constexpr int64_t kMaxTimeMs = 253402300799999;
// The start of the window of size window_size_ms (> 0) holding ms.
int64_t WindowStart(int64_t ms, int64_t window_size_ms);

}  // namespace snapsink::api
