// Root: a snapsink root directory, its settings and its writer lock.
//
// init creates the layout of engine/filenames.h and stores the settings in
// the LMDB meta table. Its commit point is one rename: the LMDB environment
// is built in ROOT/state.init-tmp/, made durable with its settings, and
// renamed to ROOT/state/. Before that rename ROOT is no root (a "half-made"
// one, which a rerun of init finishes and every other command refuses with
// that advice); after it, a whole one. A failing init removes what it made.
// Open checks that a directory is a root of a format this build understands,
// and names a half-made root (also one an older snapsink left) as such. A writer (ingest, seal, publish, gc, rollback)
// holds LOCK, an exclusive file lock, for as long as the Root is open; a
// second writer gets Status::Locked naming the holder's pid, or waits for a
// running follower's step (engine/writer_lock.h). A follower takes the lock
// out of its Root (ReleaseWriterLock) and holds it one step at a time. Readers (query,
// inspect, verify) open without the lock and never block the writer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/env.h"
#include "engine/metric_kinds.h"
#include "engine/store.h"
#include "engine/writer_lock.h"

namespace snapsink {

// Version of the on-disk format: state records, file layout. A root written by
// a newer format is refused rather than misread.
// 2: source records carry the position identity; long-form keys
// (engine/long_key.h) in sources and aggs. 3: 64-bit versions in window and
// seal records, CURRENT's checksum in meta; the id-dedup and producer
// retention tables. 4: aggregate delta runs (engine/window_records_runs.h);
// a format-3 root becomes 4 with the first commit that writes a run.
// 5: a producer's last-seen time in its producer record, the idle index by
// coarse buckets (engine/producer_retention.h); a format-3 or 4 root becomes
// 5 with the first commit that writes such a record (RaiseFormat).
inline constexpr uint32_t kProducerTimesFormat = 5;
// 6: a metric declared of another kind than sum (engine/metric_kinds.h):
// its aggregates carry a min and a max. A root becomes 6 only when a kind is
// declared (RaiseFormatTo); roots of sum metrics only stay 5, and init
// writes 5. This build reads up to kNewestFormat.
inline constexpr uint32_t kMetricKindsFormat = 6;
// 7: a metric declared quantiles: its aggregates and delta runs carry a
// quantile sketch (engine/ddsketch.h), its kind record an accuracy. Raised
// the same way, only when such a metric is declared.
inline constexpr uint32_t kSketchFormat = 7;
// 8: a metric declared distinct: its aggregates and delta runs carry a
// distinct-count sketch (engine/hyperloglog.h), its kind record a precision.
// Raised the same way, only when such a metric is declared.
inline constexpr uint32_t kDistinctFormat = 8;
inline constexpr uint32_t kNewestFormat = kDistinctFormat;
// Roots of older formats are refused: their window and seal records hold
// 32-bit versions, and generation manifests and CURRENT have no checksum.
inline constexpr uint32_t kOldestReadableFormat = 3;

enum class OnGap : uint8_t { kAccept = 0, kStop = 1 };  // stored; do not change

struct RootConfig {
  int64_t window_ms = 3600 * 1000;
  int64_t lateness_ms = -1;  // -1 at init = one window
  OnGap on_gap = OnGap::kAccept;
  // How far back in event time, behind the watermark, ids are remembered
  // (engine/id_dedup.h). Older events with an id are rejected.
  int64_t id_horizon_ms = int64_t{7} * 86400 * 1000;
  // A producer idle this long in event time is retired during ingest
  // (engine/producer_retention.h); 0 = never.
  int64_t producer_retention_ms = 0;
  // Windows whose end the watermark has passed by more than this leave the
  // next generation and the live state (engine/window_retention.h); 0 = keep
  // every window. Changeable later (SetHistorySettings).
  int64_t retain_ms = 0;
  // An event dated more than this ahead of the newest event time applied is
  // rejected `beyond max-ahead` (engine/watermark.h); 0 = no limit. Roots
  // made before the setting existed read as 0; `init --retain` without
  // --max-ahead sets kDefaultMaxAheadMs.
  int64_t max_ahead_ms = 0;
  static constexpr int64_t kDefaultMaxAheadMs = int64_t{86400} * 1000;  // 1d
};

// Keys of Table::kMeta.
namespace meta {
inline constexpr char kFormat[] = "format";
inline constexpr char kWindowMs[] = "window_ms";
inline constexpr char kLatenessMs[] = "lateness_ms";
inline constexpr char kOnGap[] = "on_gap";
inline constexpr char kIdHorizonMs[] = "id_horizon_ms";                    // absent (format 1): 7d
inline constexpr char kProducerRetentionMs[] = "producer_retention_ms";    // absent or 0: never
inline constexpr char kRetainMs[] = "retain_ms";          // absent or 0: keep every window
inline constexpr char kMaxAheadMs[] = "max_ahead_ms";     // absent or 0: no limit
// Start of the oldest window not dropped by retention: every window before it
// has left the generations and the live state for good (absent: none dropped).
inline constexpr char kRetainedFrom[] = "retained_from";
inline constexpr char kMaxEventTs[] = "max_event_ts";             // absent until an event is applied
inline constexpr char kCurrentGeneration[] = "current_generation";  // what CURRENT names (0 = none)
inline constexpr char kLastGeneration[] = "last_generation";        // highest generation number used
// "backfill/v<V>" -> "done" once backfill V is published.
std::string BackfillDoneKey(uint64_t version);
// "published_at/<G>" -> wall-clock ms when generation G was published. For
// display only (`status`); never part of a snapshot, manifest or identity.
std::string PublishedAtKey(uint64_t generation);
// "progress_at/<source>" -> wall-clock ms of the last Write that set the
// source's progress (SetProgress: a Kafka partition). For display only
// (`status`, `metrics`: how long ago its owner last wrote); never part of a
// snapshot, manifest or identity.
std::string ProgressAtKey(std::string_view source);
// "split_producer/<producer>" -> the sources a producer's events with seq
// came from, where they were to come from one (api::WriteOptions::
// producer_check: a Kafka producer on two partitions), as the check named
// them ("kafka:T/0, kafka:T/3"). Written only when a split is found; read
// by `status` and `metrics`; never part of a snapshot, manifest or identity.
inline constexpr char kSplitProducerPrefix[] = "split_producer/";
std::string SplitProducerKey(std::string_view producer);
}  // namespace meta

class Root {
 public:
  // Creates a root at path (the directory may exist but must not hold a root),
  // with `kinds` declared in its first state (as SetMetricKind).
  static Status Init(Env* env, const std::string& path, RootConfig config, const MetricKinds& kinds = {});
  // Init whose environment is made by build(dir) instead of from settings
  // (a restored checkpoint: build writes dir/data.mdb, durably). The same
  // layout, commit point (the rename to state/) and cleanup as Init.
  static Status InitWithState(Env* env, const std::string& path,
                              const std::function<Status(const std::string& dir)>& build);
  // How Open takes a root:
  //   kWriter    takes LOCK first, then opens the state for writing (ingest,
  //              seal, publish, gc, rollback);
  //   kUnlocked  opens the state for writing without LOCK (backfill's last
  //              step, beside a live writer; LMDB serializes the commits);
  //   kReadOnly  LMDB read-only, no lock, nothing written (verify, inspect,
  //              query): works on a read-only file system and for a user
  //              without write permission; store() can only read.
  enum class Access { kWriter, kUnlocked, kReadOnly };
  // Opens an existing root.
  static Status Open(Env* env, const std::string& path, Access access, std::unique_ptr<Root>* out);
  // OK when path looks like a whole root; else NotFound with the one message
  // every command gives (path missing, not a root, half made).
  static Status CheckIsRoot(Env* env, const std::string& path);
  Root(const Root&) = delete;  // owns LOCK and the Store
  Root& operator=(const Root&) = delete;

  Env* env() const { return env_; }
  const std::string& path() const { return path_; }
  Store* store() const { return store_.get(); }
  const RootConfig& config() const { return config_; }

  // The follower's hand-over (engine/writer_lock.h): gives up the LOCK this
  // Root holds (nullptr when opened without it), and takes one back.
  std::unique_ptr<FileLock> ReleaseWriterLock() { return std::move(lock_); }
  void HoldWriterLock(std::unique_ptr<FileLock> lock) { lock_ = std::move(lock); }
  bool HoldsWriterLock() const { return lock_ != nullptr; }

  // Reads again the settings another writer may change while this Root is
  // open (retain_ms, max_ahead_ms: `gc --retain`, `gc --max-ahead`): a
  // follower's step starts with it, as the other writer may have run
  // between two steps.
  Status ReloadHistorySettings();

  // Stores new history settings (`gc --retain`, `gc --max-ahead`; nullopt:
  // unchanged) in one LMDB commit and adopts them. REQUIRES: a writer.
  Status SetHistorySettings(std::optional<int64_t> retain_ms, std::optional<int64_t> max_ahead_ms);

  // Reads/writes a u64 of the meta table in txn (absent = nullopt).
  static Result<std::optional<uint64_t>> GetMetaU64(Txn* txn, std::string_view key);
  static Status PutMetaU64(Txn* txn, std::string_view key, uint64_t value);
  // Sets the state's format to kProducerTimesFormat in txn, for a commit that
  // writes a record only that format has: an older build then refuses the
  // root rather than misread it. Older formats are read as they are until then.
  static Status RaiseFormat(Txn* txn);
  // The same to `format` (at most kNewestFormat); never lowers it.
  static Status RaiseFormatTo(Txn* txn, uint32_t format);

 private:
  Root() = default;
  Env* env_ = nullptr;
  std::string path_;
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<Store> store_;
  RootConfig config_;
};

}  // namespace snapsink
