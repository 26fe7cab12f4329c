// snapsink public utilities: sharing one source's partitions among
// processes (docs/SCALE-OUT.md), as free functions over the handles, apart
// from them as RocksDB keeps Checkpoint::Create(DB*, ...) apart from DB.
//
// A program consuming a partitioned topic keeps each partition's state in a
// root of its own (a Sink on the owner's local disk) and shares ROOT, opened
// without its LOCK (Sink::OpenReadOnly). The handle's own methods write
// nothing; the functions here that write into ROOT take it as `ReadOnlySink&`
// and say so: owner claims (owners/), checkpoints and seal records
// (partitions/) are files no LOCK guards, and PublishMerged takes LOCK for
// its one step, as api::Backfill does.
//
// Implemented in sink/ (it reaches the handles' files), unlike the other
// utilities. Standard library and the core headers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "snapsink/options.h"
#include "snapsink/sink.h"
#include "snapsink/status.h"

namespace snapsink::api {

// ---- Owners of a source that processes take turns at ----
// Claims the next owner epoch of `source` in root (owners/): one more
// than the newest claimed, recorded with `who` (client id, host, pid).
// Processes that claim at once each get their own epoch; the newest wins.
// Writes into root (a claim file), though root is opened without LOCK.
// The source's claim lock is held for a claim or a seal round's renames
// (milliseconds); lock_wait_ms is how long to wait for it. Held longer, its
// holder is stopped or stuck: nothing is claimed, and a caller that can wait
// tries again later.
// Errors: Locked (another process held the source's claim lock for lock_wait_ms), IOError (owners/ could
//   not be made, the claim written, synced or renamed).
Result<uint64_t> ClaimOwner(ReadOnlySink& root, const std::string& source, const std::string& who,
                            int64_t lock_wait_ms = 10000);
struct OwnerClaim {
  uint64_t epoch = 0;  // 0: never claimed
  std::string who;
};
// The newest claim of `source` in root.
// Errors: IOError (owners/ or the claim unreadable).
Result<OwnerClaim> NewestOwner(const ReadOnlySink& root, const std::string& source);

// ---- Checkpoints of a shared source's state in root (docs/FORMAT.md) ----
// A checkpoint is LMDB's consistent, compacted copy of a partition's state
// (its own root, on the owner's local disk), named by source, owner epoch
// and offset, checksummed, and written into root as
// partitions/<source>/checkpoints/e<epoch>-o<offset> by temp + fsync +
// rename. A new owner without the newest state restores one.
struct CheckpointInfo {
  std::string source;
  uint64_t epoch = 0;    // the state's owner epoch when it was copied
  std::string position;  // the source's committed position (a decimal offset)
  uint64_t offset = 0;   // position as a number
  uint64_t bytes = 0;    // the checkpoint file's size
  std::string path;
};
// Copies `state` (whose source `source` has an owner epoch and a decimal
// position) into root as of its last commit; call it between commits
// (no Write in flight). Locked when a newer owner has claimed the source
// (nothing is written); keeps the `keep` newest checkpoints of the source.
// Writes into root (the checkpoint file), though root is opened without LOCK.
// Errors: Locked (a newer owner claimed the source); InvalidArgument (state has no such source, or it has
//   no owner epoch or no decimal position); IOError (copying, writing, syncing, renaming) and the errors of
//   NewestOwner. Messages start "SOURCE: checkpoint: ".
Result<CheckpointInfo> WriteCheckpoint(ReadOnlySink& root, const Sink& state, const std::string& source,
                                       size_t keep = 2);
// The source's checkpoints in root, newest (epoch, then offset) first, by
// their names and sizes (not verified).
// Errors: IOError (the folder unreadable).
Result<std::vector<CheckpointInfo>> Checkpoints(const ReadOnlySink& root, const std::string& source);
// Makes a new root at `dest` (which must not hold one) from the newest
// checkpoint of `source` in root whose epoch is at least min_epoch,
// verifying its checksum and header; a damaged one is skipped with a line in
// *warnings and the next older one tried. NotFound when none is usable.
// Writes only at dest.
// Errors: NotFound (no usable checkpoint); InvalidArgument (dest holds a root or is not empty); IOError
//   (reading the checkpoint, writing dest).
Result<CheckpointInfo> RestoreCheckpoint(const ReadOnlySink& root, const std::string& source, const std::string& dest,
                                         uint64_t min_epoch, std::vector<std::string>* warnings);

// Every partition root has owner claims of (`status`, `metrics`):
// its name in owners/ (the sanitized source, "kafka_orders_3"), the newest
// claim (epoch, who), the newest checkpoint, if any, and what its owner's
// last progress write in ROOT says (each recorded seal round replaces
// partitions/<name>/progress: position, high watermark, accepted seals).
// What the owner did since is only in its state on its own disk.
struct PartitionProgressInfo {
  uint64_t epoch = 0;          // the owner epoch that wrote it
  int64_t position = 0;        // the next offset to read
  int64_t high_watermark = 0;  // the partition's end as its owner last saw it
  int64_t lag = 0;             // high_watermark - position, never below 0
  // The last accepted seal: the one recorded furthest into the partition
  // (the newest window among equals); last_seal_window_start_ms is nullopt
  // when none.
  std::optional<int64_t> last_seal_window_start_ms;
  uint64_t last_seal_version = 0, last_seal_epoch = 0;
  int64_t last_seal_to = 0;  // the offset its round ended at
  // When it was written (the file's modification time, wall clock): how
  // long ago is for display only; a stopped owner's lag stays as it left
  // it while this ages. nullopt when the file system does not say.
  std::optional<int64_t> written_at_ms;
};
struct PartitionOwnerInfo {
  std::string name;
  uint64_t epoch = 0;
  std::string who;  // "CLIENT-ID STATE-DIR" (the client id names host and pid)
  std::optional<CheckpointInfo> checkpoint;
  std::optional<PartitionProgressInfo> progress;  // nullopt before the first recorded round
};
// Errors: IOError or Corruption (a claim, checkpoint or progress file unreadable or malformed).
Result<std::vector<PartitionOwnerInfo>> PartitionOwners(const ReadOnlySink& root);

// ---- The merged publish of a topic's partitions ----
// What a program consuming a partitioned topic does with the partitions' own
// states (each a root of its own, opened as a Sink) and the shared ROOT
// (opened without its LOCK, Sink::OpenReadOnly). The records PartitionRound
// and MergedPublishResult are in options.h.

// Records in root, as seal records of partition round.partition, every seal
// that `state` (the partition's own root) has staged since its last recorded
// round, and the round's progress; marks them recorded in state. Locked,
// naming the newer owner, when round.epoch is no longer the partition's
// newest claim (a zombie), or when the round's offsets do not follow the
// accepted ones. Returns the (window, version) pairs recorded.
// Errors: InvalidArgument (the state's position before the end of its last
//   recorded round), Locked (as above), IOError or Corruption from either
//   root.
Result<std::vector<std::pair<int64_t, uint64_t>>> RecordPartitionSeals(ReadOnlySink& root, Sink& state,
                                                                     const PartitionRound& round);

// Records in root (taking its LOCK for one commit, waiting for it) that
// `producer`'s events came from two partitions of a topic (`sources` names
// them, "kafka:T/0, kafka:T/3"), where the partitions' own states found it
// (api::WriteOptions::producer_check): RootStatus lists it. Replaces an earlier record of the producer.
// Errors: InvalidArgument (producer empty), Locked (LOCK not had within the
//   wait), IOError.
Status RecordSplitProducer(ReadOnlySink& root, const std::string& producer, const std::string& sources);

// A producer whose events are spread over the states of two partitions
// (not keyed by producer) can be counted by each. Each recorded round
// (RecordPartitionSeals) writes the producers of the partition's state into
// root with its progress, each with its epoch and the first and last seq of
// it applied, and PublishMerged, under LOCK and before it publishes new
// windows, looks for a producer whose ranges of one epoch in two or more of
// those lists overlap, whichever processes own the partitions. Ranges that
// do not overlap (a key moved to a partition added to the topic: all of its
// seqs there above those of its old one) are not a split.
struct MergedPublishOptions {
  // Called for each such producer, in producer order, with the sources of
  // the partitions whose ranges overlap, ascending ("kafka:T/0",
  // "kafka:T/3"). A non-OK return
  // stops the publish (nothing published) and PublishMerged returns it; OK
  // goes on (the caller may record it: RecordSplitProducer, after the
  // publish, since that takes LOCK). Unset: the publish stops with Status
  // Gap naming the producer and two of its partitions.
  std::function<Status(const std::string& producer, const std::vector<std::string>& sources)> on_split_producer;
};

// Publishes into root, taking its LOCK for this step only (waiting for it),
// every window of `topic` that all its `partitions` partitions have sealed
// or are past, and whose seals changed since its last merged version: their
// rows merged, reconciled against the seals' counts, in one generation;
// first the split producer check above.
// Errors: InvalidArgument (partitions not above 0; a merged count or sum
//   that overflows, naming window, metric and key), Gap (a split producer,
//   on_split_producer unset) or what on_split_producer returned, Locked
//   (LOCK not had within the wait), Corruption (a partition's seal file
//   differs from its record), IOError.
Result<MergedPublishResult> PublishMerged(ReadOnlySink& root, const std::string& topic, int32_t partitions,
                                          const MergedPublishOptions& options = {});

// Before the first open of the root at `path` in this process: many
// processes publish merged generations into it, each from partition states
// of its own. For a
// root in a bucket ("s3://BUCKET/PREFIX"), each process then publishes from
// a state of its own that first takes the bucket's CURRENT, taking LOCK
// claims no writer epoch, and CURRENT is swapped only from the generation a
// publish was built on (docs/BUCKET.md). A local root: nothing to do.
// Errors: InvalidArgument (path is not a well-formed s3://BUCKET/PREFIX).
Status SharePublishing(const std::string& path);

// One root takes one kind of source (docs/SCALE-OUT.md, "One root, one kind
// of source"): a merged publish gives a window the rows of one topic's
// partitions, so rows that came into root another way would be replaced.
// With topic given (a merged publish of it): InvalidArgument naming them
// when root has sources of its own (files, standard input, a topic read
// into root's own state: its live state's sources) or owner claims of another
// topic's partitions (owners/). With topic empty (writing into root
// itself: run, ingest, backfill): InvalidArgument naming the topics whose
// partitions root publishes merged. Reads only; call it before writing.
// Errors: InvalidArgument (as above), IOError or Corruption (owners/ or the
//   state unreadable).
Status CheckOneKindOfSource(const ReadOnlySink& root, const std::string& topic);

// What a merged run that reads a topic to its end waits for: each partition of `topic`
// (0 .. ends.size()-1) whose progress in root is missing, short of ends[p]
// or names windows with unsealed changes. fingerprint changes whenever
// a partition's progress, newest owner claim or newest checkpoint does:
// someone is still at work.
struct TopicFinish {
  std::vector<int32_t> undone;
  std::string fingerprint;
};
// Errors: IOError or Corruption (a progress, claim or checkpoint unreadable).
Result<TopicFinish> FinishOfTopic(const ReadOnlySink& root, const std::string& topic, const std::vector<int64_t>& ends);

}  // namespace snapsink::api
