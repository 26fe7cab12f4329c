// snapsink public API: a handle per open root.
//
//   Status s = snapsink::api::Sink::Create("/data/root", {.window_size_ms = 60000});
//   auto sink = snapsink::api::Sink::Open("/data/root");       // takes LOCK
//   snapsink::api::RunResult r;
//   s = (*sink)->Run({.ingest = {.files = {"events.ndjson"}}, .final = true}, &r);
//
// A Sink is the writer: it holds the root's LOCK (an exclusive file lock) for
// its whole life (except inside Follow, and when opened with OpenFollower:
// then one step at a time),
// so holding a Sink means holding the lock; a second writer, in this process
// or another, gets Status Locked naming the holder's pid (beside a running
// Follow, after waiting up to a minute for its step to end).
// A ReadOnlySink (Sink::OpenReadOnly) takes no lock and never blocks the
// writer: the views, Verify, api::Backfill (a free function below, which
// takes LOCK itself for its final step only) and Readers (reader.h) of
// published generations.
//
// Open one handle per root per process (LMDB allows one environment handle
// per process). Handles are not thread-safe; Readers are cheap, open one per
// thread. Every method returns a Status: a failed operation changes nothing,
// or leaves what a rerun finishes (docs/CONTRACT.md 8). Each method's
// "Errors:" line lists the Status codes it returns (status.h), as lmdb.h
// lists each function's errors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "snapsink/options.h"
#include "snapsink/reader.h"
#include "snapsink/status.h"
#include "snapsink/views.h"
#include "snapsink/write_batch.h"

namespace snapsink::api {

class Sink;
struct SinkAccess;  // internal to sink/: how it reaches the private state below

// A root opened without the writer lock.
class ReadOnlySink {
 public:
  virtual ~ReadOnlySink();
  ReadOnlySink(const ReadOnlySink&) = delete;
  ReadOnlySink& operator=(const ReadOnlySink&) = delete;

  const std::string& path() const;
  const RootSettings& settings() const;

  // ---- Read-side views (views.h; utilities/table.h prints each) ----
  // Of the live state, one LMDB read transaction each:
  // producers by id, active and retired;
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<ProducerInfo>> Producers() const;
  // the open gaps of every producer;
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<GapInfo>> Gaps() const;
  // every accepted-gap record, by producer, then as recorded;
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<AcceptedGapInfo>> AcceptedGaps() const;
  // every accepted source range, as recorded;
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<AcceptedSourceGapInfo>> AcceptedSourceGaps() const;
  // every declared metric and its kind, by metric (an undeclared one is sum);
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<MetricKindInfo>> MetricKinds() const;
  // every source's accounting, by name (names over 503 bytes by their first
  // 503 bytes, then in no set order);
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<SourceView>> Sources() const;
  // the ids held for dedup by id;
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<IdsInfo> Ids() const;
  // every window with state, by start.
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<WindowInfo>> Windows() const;
  // Of what is published (snapshots/ and manifests/); a generation or
  // snapshot that gc removes while it is listed is left out:
  // Errors: IOError or Corruption from the published files.
  Result<std::vector<SnapshotInfo>> Snapshots() const;
  // Errors: IOError or Corruption from the published files.
  Result<std::vector<GenerationInfo>> Generations() const;
  // Settings, watermark, generation, windows, sources, gaps, ids and disk use
  // in one look; StatusJson is the same as JSON (the HTTP server's
  // /v1/status), one object and a newline.
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode); IOError or Corruption
  //   from the published files.
  Result<RootStatus> GetStatus() const;
  // Errors: as GetStatus; and those of PartitionOwners (utilities/partitions.h).
  Result<std::string> StatusJson() const;
  // The status page of these views is api::StatusPage (snapsink/utilities/serve.h).
  // The root's metrics in the Prometheus text format 0.0.4.
  // Errors: as GetStatus; and those of PartitionOwners (utilities/partitions.h).
  Result<std::string> MetricsText() const;
  // The open windows with unsealed changes and the watermark: why sealing
  // the closed windows finds nothing.
  // Errors: as GetStatus.
  Result<UnsealedWindows> Unsealed() const;

  // Re-checks every kept generation and snapshot (every checksum, every row
  // sum, reconciliation with its seal), beside a running writer if need be:
  // what such a writer explains (a generation gc removed meanwhile) is a
  // note, not a problem. Fills *report even when it fails: Corruption when
  // report->problems is non-empty. Files in the root that snapsink does not
  // know are warnings ("unknown file in root: PATH"), not corruption.
  // Errors: Corruption (report->problems is non-empty), IOError (a file could not be read or the root
  //   listed).
  Status Verify(VerifyReport* report) const;
  // ---- end of the read-side views ----

  // The scale-out calls (owner claims, checkpoints, partitions' owners, the
  // merged publish) are free functions over a handle:
  // snapsink/utilities/partitions.h. This handle's methods write nothing.

  // What Sink::Rollback(generation) would change, computed without LOCK
  // and writing nothing: works beside a running writer.
  // Errors: NotFound (generation never published, or no longer kept); IOError or Corruption from the state
  //   (LMDB, a record that does not decode); IOError or Corruption from the published files.
  Result<RollbackResult> RollbackDryRun(uint64_t generation) const;

  // A Reader pinned to `generation` (0 = the current one) of this root.
  // Errors: as Reader::Open (reader.h).
  Result<std::unique_ptr<Reader>> NewReader(uint64_t generation = 0) const;

  // Backfill is a free function, api::Backfill below: it writes, so it is
  // no method of a handle that can be a Sink.

 private:
  struct Impl;                // the engine's handles, defined in sink/
  friend struct SinkAccess;   // sink/'s one way to them (sink/sink_impl.h)

 protected:
  explicit ReadOnlySink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Ends a Sink::Follow or an api::Drive (drive.h) from any thread (e.g. one that waits for SIGTERM).
// Stop before Follow has started makes Follow return after a single pass.
class FollowStop {
 public:
  FollowStop();
  ~FollowStop();
  FollowStop(const FollowStop&) = delete;
  FollowStop& operator=(const FollowStop&) = delete;
  // Thread-safe. Follow commits what it read, seals, publishes, returns OK.
  void Stop();

 private:
  struct State;  // defined in sink/follow.cc
  std::unique_ptr<State> state_;
  friend struct SinkAccess;  // sink/'s one way to it (sink/sink_impl.h)
};

// A root opened by its one writer. Holds LOCK until destroyed, unless
// opened with OpenFollower.
class Sink : public ReadOnlySink {
 public:
  // Errors: InvalidArgument (a value out of range, naming its field as below; path holds a root already or is
  //   not empty; a metric of InitOptions::metrics named twice, or, in a bucket, whose name holds a line break), Locked
  //   (another init or writer holds its LOCK), IOError.
  // Creates a root at path (the directory may exist but must not hold a root).
  // InvalidArgument naming the field for a value out of range
  // ("InitOptions::window_size_ms 0: must be greater than zero").
  static Status Create(const std::string& path, const InitOptions& options);
  // Opens the root at path as its writer: Locked when another writer has it.
  // Errors: Locked (another writer holds LOCK, naming its pid), NotFound (no root at path, or one whose init
  //   did not finish), InvalidArgument (a root written by a newer or an older snapsink: Upgrade), Corruption
  //   (state without its format or settings), IOError.
  static Result<std::unique_ptr<Sink>> Open(const std::string& path);
  // A root in an S3 bucket, "s3://BUCKET/PREFIX" (endpoint and keys from the
  // AWS_* variables; README, A root in a bucket), keeps its LMDB state on
  // this machine's disk: a process that writes into it (Open, OpenFollower)
  // names that local directory here first, once per root. Readers need
  // none. Errors: InvalidArgument (path is not s3://BUCKET/PREFIX, or the
  // root was opened already with another directory).
  static Status UseStateDir(const std::string& path, const std::string& dir);

  // ---- A writer that runs for months and lets others in between its steps ----
  // A long-running embedder (a Kafka consumer, a queue reader) that held LOCK
  // for its life would lock out every other writer (gc, rollback,
  // backfill's publish, accepting gaps, retiring producers, seal, publish):
  // they fail Locked. OpenFollower opens the root as a follower instead, as
  // Follow does: the Sink holds ROOT/LOCK.follower for its life (a second
  // follower is Locked) and holds LOCK only inside a Step. Between steps
  // other writers run in their own processes: a writer that finds LOCK held
  // and a follower running waits (up to a minute) for the step to end, queued
  // so that BeginStep lets it in first.
  //
  //   auto sink = snapsink::api::Sink::OpenFollower("/data/root");
  //   while (!stopping) {
  //     auto step = (*sink)->BeginStep([&] { return stopping.load(); });
  //     if (!step.ok()) break;               // Locked: stopped while waiting
  //     (*sink)->Write(batch, {}, &r);       // any writing method, any number
  //   }                                      // ~Step: LOCK goes
  //
  // Between two steps, assume nothing of what another writer may change:
  // generations (a rollback, a backfill's or a Publish's; Gc removes old
  // ones), window versions and state (rollback rewinds it), staged seals,
  // producers (retired; gaps accepted) and the history settings
  // (SetHistory). Each Step starts from what LMDB and the files hold: the
  // settings are read again and Write's caches are dropped when another
  // writer committed. Source positions are moved only by writes of their
  // source (rollback does not rewind them), so Position() read in a step
  // is what the next Write of that source continues from.
  // Opens the root at path as a follower. Locked at once when a plain writer
  // holds LOCK; Locked when another follower runs (after its step). Holds no
  // step when it returns.
  // Errors: Locked (a writer holds LOCK, or another follower runs), NotFound (no root at path, or one whose
  //   init did not finish), InvalidArgument (a root written by a newer or an older snapsink: Upgrade),
  //   Corruption (state without its format or settings), IOError.
  static Result<std::unique_ptr<Sink>> OpenFollower(const std::string& path);

  // Holds LOCK from BeginStep until destroyed. Destroy it before its Sink,
  // on the thread that sequences the Sink's methods (Writes of other
  // threads must have returned).
  class Step {
   public:
    ~Step();
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    struct State;  // defined in sink/step.cc
    explicit Step(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
    friend struct SinkAccess;  // sink/'s one way to it (sink/sink_impl.h)
  };
  // A follower's writing methods (Ingest, Write, Seal, Publish, Run, Gc,
  // Rollback, AcceptGaps, AcceptSourceGap, RetireIdleProducers, SetHistory)
  // run only while it holds a Step: outside one they return InvalidArgument.
  // BeginStep waits without bound while another writer holds LOCK or waits
  // for it (a waiting writer goes first: a busy follower never starves it),
  // polling give_up (if given) every few milliseconds: when it returns true,
  // BeginStep returns Locked and holds nothing. InvalidArgument while a Step
  // of this Sink is held. On a Sink from Open (LOCK held for life) it returns
  // a Step that holds nothing more, so code can be written once for both.
  // Errors: InvalidArgument (a Step of this Sink is held), Locked (give_up returned true), IOError (the lock
  //   files), and IOError or Corruption reading the settings again.
  Result<std::unique_ptr<Step>> BeginStep(const std::function<bool()>& give_up = {});
  // True when another writer waits for LOCK: a follower should end its step
  // as soon as it can (false on a Sink from Open).
  bool WritersWaiting() const;
  // ---- end of the follower ----

  // Opens the root at path without the lock, LMDB read-only: works on a
  // read-only file system and for a user who may not write the root.
  // Errors: NotFound (no root at path, or one whose init did not finish), InvalidArgument (a root written by
  //   a newer or an older snapsink: Upgrade), Corruption (state without its format or settings), IOError.
  static Result<std::unique_ptr<ReadOnlySink>> OpenReadOnly(const std::string& path);
  // Converts, in place, a root written by an earlier snapsink to this
  // build's format, keeping every published generation.
  // Takes LOCK; crash-safe (a rerun finishes it). dry_run: takes no lock,
  // writes nothing, reports what it would do. A root of this build's format
  // is nothing_to_do.
  // Errors: NotFound (no root at path), Locked (another writer holds LOCK; not with dry_run), InvalidArgument
  //   (a root written by a newer snapsink, or by an older one whose
  //   publish stopped half-way), Corruption, IOError.
  static Result<UpgradeResult> Upgrade(const std::string& path, bool dry_run = false);

  // Applies the files' events exactly once (docs/CONTRACT.md 2, 3, 7). *result, when
  // given, is filled even on a stop (Gap, BadInput): what was committed.
  // Errors: InvalidArgument (a follower outside a Step; a source name with more than one file; an input that
  //   is a directory), NotFound (an input that cannot be opened: nothing is ingested), Gap (GapPolicy::kStop,
  //   or past the open-gap limit), BadInput (stop_on_error), IOError (reading an input, the state),
  //   Corruption.
  Status Ingest(const IngestOptions& options, IngestResult* result = nullptr);
  // Applies a batch from memory (write_batch.h) and commits the source's new
  // position in the same LMDB transaction: all of the batch or none of it.
  // Thread-safe, unlike the other methods: callers that arrive while a
  // commit is in flight are committed together in the next transaction
  // (group commit), each told its own outcome. Under GapPolicy::kStop a gap
  // fails the batch (Status Gap) and nothing of it is applied.
  // Errors: InvalidArgument (a follower outside a Step; a batch without a source name), Locked (the owner
  //   epoch does not match WriteBatch::SetOwner's), Gap (GapPolicy::kStop), BadInput (stop_on_error), what
  //   the batch's commit check returns, and IOError or Corruption from the state (LMDB, a record that does
  //   not decode).
  Status Write(const WriteBatch& batch, const WriteOptions& options = {}, WriteResult* result = nullptr);
  // The position last committed for `source` by Write; nullopt if none.
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<std::optional<std::string>> Position(const std::string& source) const;
  // The owner epoch committed for `source` by WriteBatch::SetOwner (0: none).
  // Errors: IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<uint64_t> OwnerEpoch(const std::string& source) const;
  // Seals windows into staging (not yet visible to readers).
  // Errors: InvalidArgument (a follower outside a Step; a window that is not a window's start; one at the
  //   highest version there is), IOError or Corruption from the state (LMDB, a record that does not decode),
  //   IOError writing the staged snapshots.
  Result<std::vector<SealedWindow>> Seal(const SealOptions& options);
  // Reconciles every staged snapshot and publishes them in one generation.
  // Errors: InvalidArgument (a follower outside a Step), Reconcile (staged counts differ from their seals or
  //   the ledger: nothing is published), Corruption (a staged snapshot or the current generation damaged),
  //   IOError.
  Result<PublishResult> Publish();
  // Ingest, seal, publish. *result is filled as far as the job got.
  // Errors: those of Ingest, Seal and Publish; after Gap or BadInput the closed windows are still sealed and
  //   published, and the stop is returned.
  Status Run(const RunOptions& options, RunResult* result = nullptr);
  // Ingests, seals and publishes as the inputs grow, until
  // stop->Stop() (OK) or an error (a gap or bad line under stop, a failed
  // write). Each step is crash-safe: a new Follow resumes where one left.
  // Garbage is collected after each publish (options.keep_generations).
  // While it runs this Sink holds LOCK only for each step (a pass, its seal,
  // publish and gc), so other writers (gc, rollback, backfill, gaps accept,
  // ...) run between steps in other processes, waiting for a step to end;
  // a second Follow on the root is Locked. It holds LOCK again when Follow
  // returns. Call no writing method of this Sink while Follow runs (reads,
  // as a Server over it does, are fine). On a Sink from OpenFollower it is
  // InvalidArgument.
  // Errors: InvalidArgument (a Sink from OpenFollower; "-" or no inputs; a FollowOptions field out of range,
  //   naming it), Locked (another follower runs), and what a step of Run returns (Gap, BadInput, Reconcile,
  //   IOError, Corruption).
  Status Follow(const FollowOptions& options, FollowStop* stop);
  // Removes generations beyond the `keep` newest (never the current one or
  // one a Reader pins), snapshots no generation names, and stray *.tmp files.
  // Errors: InvalidArgument (a follower outside a Step), IOError or Corruption from the state (LMDB, a record
  //   that does not decode), IOError or Corruption from the published files (IOError also removing
  //   them).
  Result<GcResult> Gc(uint64_t keep);
  // Publishes a new generation with exactly `generation`'s windows and
  // versions and rewinds the engine's window state to match (docs/CONTRACT.md 10).
  // dry_run: reports the changes and writes nothing.
  // Errors: InvalidArgument (a follower outside a Step; not with dry_run), NotFound (generation never
  //   published, or no longer kept), and what Publish returns.
  Result<RollbackResult> Rollback(uint64_t generation, bool dry_run = false);

  // ---- Operator commands of the read side (views.h) ----
  // Records an accepted gap, stamped with the wall
  // clock; returns the record as AcceptedGaps() will list it.
  // Errors: InvalidArgument (range not LO <= HI < 2^64-1; a follower outside a Step), IOError or Corruption
  //   from the state (LMDB, a record that does not decode).
  Result<AcceptedGapInfo> AcceptGaps(const GapAcceptance& acceptance);
  // Records positions first..last of a source as lost for good, stamped
  // with the wall clock.
  // Errors: InvalidArgument (an empty source; range not LO <= HI < 2^64-1; a follower outside a Step),
  //   IOError or Corruption from the state (LMDB, a record that does not decode).
  Result<AcceptedSourceGapInfo> AcceptSourceGap(const SourceGapAcceptance& acceptance);
  // Retires every producer idle for idle_ms (> 0) of event time behind the
  // watermark; returns their ids.
  // Errors: InvalidArgument (idle_ms not above 0, naming it; a follower outside a Step), IOError or
  //   Corruption from the state (LMDB, a record that does not decode).
  Result<std::vector<std::string>> RetireIdleProducers(int64_t idle_ms);
  // Changes the retention and the max-ahead limit (InitOptions::retain_ms,
  // max_ahead_ms; nullopt: unchanged; 0: keep every window / no limit),
  // stored in one commit. The next publish applies a shorter retention;
  // windows already dropped never come back.
  // Errors: InvalidArgument (retain_ms or max_ahead_ms negative, naming it; a follower outside a Step),
  //   IOError or Corruption from the state (LMDB, a record that does not decode).
  Status SetHistory(std::optional<int64_t> retain_ms, std::optional<int64_t> max_ahead_ms);
  // Declares the kind of `metric` (1..128 bytes): what its aggregates hold
  // from its next event on. Setting the kind it has is a no-op. A root with
  // a declared kind is read only by builds that know kinds (state format 6).
  // `accuracy_ppm`: kQuantiles' relative accuracy in parts per million, 100
  // (0.01%) to 500000 (50%); 0 takes 10000 (1%); ignored for other kinds.
  // A quantiles metric raises the state to format 7. `precision`:
  // kDistinct's, 4..18 (2^precision registers, a relative error near
  // 1.04 / sqrt(2^precision)); 0 takes 14; ignored for other kinds. A
  // distinct metric raises the state to format 8.
  // Errors: InvalidArgument (a metric name of 0 or over 128 bytes; an
  //   accuracy or precision out of range; the kind or its parameter differs
  //   and a window of the state still holds the metric, naming it and what
  //   to do; a follower outside a Step), IOError or Corruption from the state.
  Status SetMetricKind(const std::string& metric, MetricKind kind, uint32_t accuracy_ppm = 0, int precision = 0);

 private:
  using ReadOnlySink::ReadOnlySink;
};

// Backfill (docs/CONTRACT.md 9) from a handle opened without LOCK
// (Sink::OpenReadOnly): the ingest phase runs without LOCK; sealing and
// publishing take it (waiting for a live writer). The handle's store is
// reopened for writing (still without LOCK) for the last step. With
// options.dry_run it writes nothing and takes no lock.
//
// A free function over an open handle, not over a root path: one over a path
// would open a second LMDB environment of the root in a process that may hold
// one already (a handle of the same root), which LMDB forbids.
//
// Errors: InvalidArgument: a BackfillOptions field out of range, naming it
//   ("BackfillOptions::version 0: must be at least 1"; "BackfillOptions::from
//   is after BackfillOptions::to"; "BackfillOptions::version 2 must exceed the
//   versions of its windows: ..."), "-" given twice, standard input other than
//   what an unfinished run spooled, or `root` a Sink reached through a
//   ReadOnlySink& (its own state says so: it holds LOCK already). Locked:
//   LOCK not had within a minute for the last step, or the same version
//   running in another process. NotFound: an input that cannot be opened.
//   Gap: GapPolicy::kStop. Reconcile: the rebuilt windows do not match their
//   seals (nothing is published). IOError or Corruption from the root.
Status Backfill(ReadOnlySink& root, const BackfillOptions& options, BackfillResult* result);
// A Sink holds LOCK for its life, and backfill takes LOCK itself for its
// last step: passing one would fail at run time, so it does not compile.
// Open the root with Sink::OpenReadOnly instead (in a process that holds a
// Sink of the root, close it first: one LMDB environment per process).
Status Backfill(Sink& root, const BackfillOptions& options, BackfillResult* result) = delete;

}  // namespace snapsink::api
