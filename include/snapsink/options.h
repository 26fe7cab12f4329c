// snapsink public API: the options of the operations on a root, and the
// typed results they return.
//
// Times are milliseconds since the Unix epoch (UTC); a window is named by its
// start. Sums are exact fixed-point micros (1.5 = 1500000). Versions and
// generations are plain counters starting at 1 (0 = none).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace snapsink::api {

// What ingest does with a sequence gap (docs/CONTRACT.md 3). Fixed when the root is created.
enum class GapPolicy { kAccept, kStop };

// The defaults of the options below, each set here once: the engine's own
// options and every program's defaults take them from here.
inline constexpr uint64_t kDefaultCommitEvery = 10000;   // lines per LMDB transaction
inline constexpr int64_t kDefaultPublishEveryMs = 10000;  // follow: publish at most this often
inline constexpr int64_t kDefaultPollMs = 1000;           // follow: longest sleep between passes
inline constexpr uint64_t kDefaultKeepGenerations = 2;    // gc: newest generations kept

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

// Settings of a new root (Sink::Create); stored in it, fixed for its life.
struct InitOptions {
  int64_t window_size_ms = 3600 * 1000;  // tumbling window size, > 0
  std::optional<int64_t> lateness_ms;  // how long a window stays open; default one window
  GapPolicy on_gap = GapPolicy::kAccept;
  // How far behind the watermark event ids are remembered (> 0); older
  // events with an id are rejected.
  int64_t id_horizon_ms = int64_t{7} * 86400 * 1000;
  // A producer idle this long in event time is retired during ingest; 0 = never.
  int64_t producer_retention_ms = 0;
  // Windows whose end the watermark has passed by more than this leave the
  // next generation and the live state; events for them are rejected
  // "beyond retention". 0 = keep every window. Sink::SetHistory changes it.
  int64_t retain_ms = 0;
  // An event dated more than this after the newest event time applied is
  // rejected "beyond max-ahead" and moves no watermark. 0 = no limit;
  // nullopt: 1d when retain_ms > 0 (one bad clock would otherwise drop
  // every window), else no limit.
  std::optional<int64_t> max_ahead_ms;
  // Metrics declared with the root, each as Sink::SetMetricKind declares
  // one (accuracy_ppm 0: the kind's default), in the state from the start.
  // A metric named twice, a name of 0 or over 128 bytes, or an accuracy out
  // of range is refused naming it. A root in a bucket takes none here: the
  // process that writes it declares them (Sink::SetMetricKind).
  std::vector<MetricKindInfo> metrics;
};

// The settings a root was created with.
struct RootSettings {
  int64_t window_size_ms = 0;
  int64_t lateness_ms = 0;
  GapPolicy on_gap = GapPolicy::kAccept;
  int64_t id_horizon_ms = 0;
  int64_t producer_retention_ms = 0;  // 0 = never
  int64_t retain_ms = 0;              // 0 = keep every window
  int64_t max_ahead_ms = 0;           // 0 = no limit
};

// The accounting of lines (docs/CONTRACT.md 7), of a source, a batch, a
// run or a backfill: lines = applied + duplicates + fenced + rejected + ignored.
struct LineCounts {
  uint64_t lines = 0, applied = 0, duplicates = 0, fenced = 0, rejected = 0, ignored = 0;
  LineCounts& operator+=(const LineCounts& o) {
    lines += o.lines, applied += o.applied, duplicates += o.duplicates;
    fenced += o.fenced, rejected += o.rejected, ignored += o.ignored;
    return *this;
  }
  // Of counts that only grow: what b added to a is a - b.
  LineCounts& operator-=(const LineCounts& o) {
    lines -= o.lines, applied -= o.applied, duplicates -= o.duplicates;
    fenced -= o.fenced, rejected -= o.rejected, ignored -= o.ignored;
    return *this;
  }
  bool operator==(const LineCounts&) const = default;
};

// Accounting of one input source.
struct SourceInfo : LineCounts {
  std::string source;
  uint64_t offset = 0;  // bytes consumed and committed
};

struct IngestResult;

struct IngestOptions {
  // Files to ingest, in order; "-" is standard input. Every file is checked
  // (readable, no shorter than its committed offset) before any is read.
  std::vector<std::string> files;
  // The source name; defaults to each file's path. Only with one file.
  std::string source;
  uint64_t commit_every = kDefaultCommitEvery;  // lines per LMDB transaction
  bool stop_on_error = false;     // a bad line stops (Status BadInput) instead of going to rejects
  // Events without seq or id are deduplicated by a hash of their content.
  bool id_from_content = false;
  // The files will not grow (an archive, or a last run): a last line
  // without '\n' is taken or rejected rather than left for later (docs/CONTRACT.md 1).
  bool final = false;
  // Notes for the user ("file was replaced", a half-written line left
  // unread); dropped when unset: the library never prints.
  std::function<void(const std::string& note)> on_note;
  // Called after each commit: source, committed offset, input size (-1
  // unknown), lines so far.
  std::function<void(const std::string& source, uint64_t offset, int64_t size, uint64_t lines)> on_progress;
  // Called after each file, the one that stopped with Gap or BadInput too,
  // with the result so far: that file is the last entry.
  std::function<void(const IngestResult& so_far)> on_source_done;
};

struct IngestResult {
  // One entry per file ingested, including the one that stopped with Gap or
  // BadInput (its state as committed before the offending line): the
  // source's totals over every read of it, and what this call did (its
  // offset is the committed one).
  std::vector<SourceInfo> sources;
  std::vector<SourceInfo> this_run;
  // rejects_files[i]: the file that holds sources[i]'s rejected lines.
  std::vector<std::string> rejects_files;
};

struct SealOptions {
  // Window starts to seal, each at its next version. Empty: every window
  // with changes that is closed, or every one with changes when all is set.
  std::vector<int64_t> windows;
  bool all = false;
};

struct SealedWindow {
  int64_t window_start_ms = 0;
  uint64_t version = 0;
  uint64_t rows = 0;
  int64_t events = 0;
};

// Why a seal of the closed windows found nothing: the open windows with
// unsealed changes, each with the event time that closes it, and the
// watermark (nullopt: no event applied yet).
struct OpenWindow {
  int64_t window_start_ms = 0;
  int64_t closes_at_ms = 0;  // window end + lateness
};
struct UnsealedWindows {
  std::vector<OpenWindow> open;  // in time order
  std::optional<int64_t> watermark;
};

struct PublishResult {
  uint64_t generation = 0;  // 0: nothing was pending
  size_t windows = 0;
  std::vector<int64_t> dropped;  // windows that left by retention in this publish
};

// ingest, seal (closed windows, or all with final), publish: one locked job.
struct RunOptions {
  IngestOptions ingest;
  bool final = false;  // seal every window with changes, open ones too; implies ingest.final
};

struct RunResult {
  IngestResult ingest;
  std::vector<SealedWindow> sealed;  // filled when the seal step succeeded
  // Set when the seal step succeeded and sealed nothing: why (what is open).
  std::optional<UnsealedWindows> nothing_sealed;
  PublishResult publish;
};

// Sink::Follow: follows files (appended lines, rotation) and
// directories (every *.ndjson appearing in them); seals windows as the
// watermark closes them and publishes at most every publish_every_ms.
struct FollowOptions {
  std::vector<std::string> inputs;  // files and directories; not "-"
  uint64_t commit_every = kDefaultCommitEvery;
  bool stop_on_error = false;
  bool id_from_content = false;
  int64_t publish_every_ms = kDefaultPublishEveryMs;  // >= 0
  int64_t poll_ms = kDefaultPollMs;                   // > 0: longest sleep between passes
  // After each publish, gc keeps this many newest generations (>= 1), the
  // current one and every generation a Reader pins (Sink::Gc).
  uint64_t keep_generations = kDefaultKeepGenerations;
  // Reports (dropped when unset: the library never prints): notes of the ingester, each said once while
  // it holds; windows sealed by a pass; generations published.
  std::function<void(const std::string& note)> on_note;
  std::function<void(const std::vector<SealedWindow>&)> on_sealed;
  std::function<void(const PublishResult&)> on_published;
};

// Backfill (docs/CONTRACT.md 9): rebuild windows from archived input as version `version`.
struct BackfillOptions {
  uint64_t version = 0;
  std::vector<std::string> files;  // "-" (at most once) is standard input
  std::string source;              // source name of the one file; default: the path as given
  // Window range, both inclusive: the windows holding these times; nullopt = unbounded.
  std::optional<int64_t> from, to;
  uint64_t commit_every = kDefaultCommitEvery;
  // Progress of the ingest phase: bytes done, total bytes (-1 unknown), lines done.
  std::function<void(uint64_t done, int64_t total, uint64_t lines)> on_progress;
  // Reads the inputs once and fills only already_done and impact (the totals
  // the backfill would publish, exactly-once applied in memory); writes nothing.
  bool dry_run = false;
};

// The totals of a window over its metrics: the events applied to it, their
// count, and their sum in exact fixed-point micros (FormatMicros prints it).
struct Totals {
  int64_t count = 0;
  int64_t sum_micros = 0;
  int64_t events = 0;
  bool operator==(const Totals&) const = default;
};

// What a backfill does to one window: the live totals it replaces (before)
// and the ones it publishes (after).
struct WindowImpact {
  int64_t window_start_ms = 0;
  Totals before;
  Totals after;
};

struct BackfillResult : LineCounts {  // lines read from the inputs
  bool already_done = false;  // backfill `version` was published before: nothing done
  std::vector<SealedWindow> sealed;
  uint64_t generation = 0;  // 0: no window in range, nothing published
  size_t published_windows = 0;
  std::vector<WindowImpact> impact;  // per published window (dry run: per window it would publish)
  // One per input file: where its rejected lines go.
  std::vector<std::string> rejects_files;
};

struct VerifyReport {
  size_t snapshots_checked = 0;
  std::vector<std::string> problems;  // one line each; non-empty means Corruption
  std::vector<std::string> warnings;  // e.g. files in the root snapsink does not know
  std::vector<std::string> notes;     // what a writer running beside verify explains (not damage)
};

struct GcResult {
  std::vector<uint64_t> removed_generations;
  std::vector<std::string> removed_snapshots;
  std::vector<std::string> removed_temp_files;  // *.tmp left by a crash
  std::vector<uint64_t> pinned;                 // kept only because a reader holds them
  uint64_t removed_parts = 0;                   // manifests/parts/ files no kept or pinned generation names
  // partitions/<source>/seals/<name> (relative to the root) that a newer
  // accepted seal of the same window replaced (docs/SCALE-OUT.md)
  std::vector<std::string> removed_seal_records;
  // ... and those of windows retention took out of ROOT (before its floor):
  // no merged publish reads them again (docs/SCALE-OUT.md)
  std::vector<std::string> removed_seal_records_beyond_retention;
  // In a root in a bucket: merged/<topic>/<window>-v<version> (relative to
  // the root), what a merged version of a window was made from, that no kept
  // generation names (docs/BUCKET.md)
  std::vector<std::string> removed_merged_inputs;
};

// What a rollback changes in one window (docs/CONTRACT.md 10): its version and totals
// in the live view before, and in the rolled-back-to generation after.
struct RollbackChange {
  int64_t window_start_ms = 0;
  uint64_t version_before = 0;  // 0: not published
  uint64_t version_after = 0;   // 0: the generation does not have the window
  Totals before;                // the live state's totals now
  Totals after;                 // the generation's totals
};

struct RollbackResult {
  uint64_t generation = 0;   // the new generation; 0 on a dry run or when nothing was to do
  uint64_t rollback_of = 0;  // the generation copied
  bool nothing_to_do = false;
  std::vector<RollbackChange> changes;  // by window
  std::vector<int64_t> beyond_retention;  // windows of the generation kept out: retention dropped them
};

// One round of a partition's state (utilities/partitions.h, RecordPartitionSeals).
struct PartitionRound {
  std::string topic;
  int32_t partition = 0;
  uint64_t epoch = 0;          // the owner epoch the partition's state holds
  int64_t position = 0;        // the next offset to read, committed in the state
  int64_t high_watermark = 0;  // the partition's end as last seen
};

// What PublishMerged (utilities/partitions.h) published.
struct MergedPublishResult {
  uint64_t generation = 0;       // 0: nothing new to publish
  std::vector<int64_t> windows;  // windows published (merged), by start
  std::vector<int32_t> missing;  // partitions with no recorded round yet: nothing can be published
};

// What Sink::Upgrade did (or, on a dry run, would do) to a root of an
// earlier format.
struct UpgradeResult {
  uint64_t format_before = 0;        // the root's state format before
  uint64_t format_after = 0;         // this build's
  bool nothing_to_do = false;        // already of this build's format
  std::vector<std::string> actions;  // one line per step, in order
};

// The views' records are in views.h; durations and times as text in
// utilities/parse.h.

}  // namespace snapsink::api
