// Many processes over one topic (SPEC 12): each partition's seal records in
// ROOT, and the merged publish of a window once every partition has sealed
// it. Layout: docs/FORMAT.md ("Seal records of partitions").
//
// A partition's state (a root of its own on the owner's local disk) seals
// its windows as any root does. RecordPartitionSeals then copies each sealed
// window into ROOT as a seal record, partitions/<source>/seals/<window>-
// v<version>-e<epoch>/ (data: the snapshot file, seal.json: who, what,
// offsets and the ledger), named by the work, create-only: temp directory,
// fsync, rename. Under the partition's claim lock (owners/<source>/LOCK, the
// one ClaimOwner takes) it checks that its epoch is still the newest claim
// and that its offsets follow the accepted ones, renames the records into
// place and replaces partitions/<source>/progress, which names the
// partition's accepted seal of every window, its position, its high
// watermark, its newest event time and its windows with unsealed changes.
// A zombie (an older epoch) is refused there, naming the newer owner: its
// records never become accepted.
//
// A partition is past window W when W has no unsealed changes in it and
// either its watermark has passed W's end or it has read up to its high
// watermark (an idle partition). PublishMerged, under ROOT's LOCK, publishes
// each window every partition of the topic is past and whose accepted seals
// changed since its last merged version: a k-way merge of the partitions'
// sorted rows (one block per partition in memory), equal keys summed, into
// staging/<window>/v<next>/, reconciled against the sum of the seals'
// ledgers, then the publisher's own generation step (PublishSnapshots).
// Two publishers at once: the second waits for LOCK and finds nothing new.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "snapsink/options.h"

namespace snapsink {

// seal.json of one seal record.
struct PartitionSealRecord {
  std::string topic;
  int32_t partition = 0;
  uint64_t epoch = 0;
  int64_t window_ms = 0;
  uint64_t version = 0;  // the partition state's version of the window
  int64_t from = 0;      // offsets [from, to): the round of the partition that sealed it
  int64_t to = 0;
  uint64_t rows = 0;
  std::vector<LedgerEntry> ledger;  // the partition's ledger of the window as of the seal, by metric
  uint64_t data_bytes = 0;
  uint64_t data_xxh64 = 0;

  bool operator==(const PartitionSealRecord&) const = default;
  std::string Encode() const;
  static Status Decode(std::string_view text, const std::string& name, PartitionSealRecord* out);
};

// One accepted seal, as progress names it.
struct PartitionSealRef {
  int64_t window_ms = 0;
  uint64_t version = 0;
  uint64_t epoch = 0;
  int64_t to = 0;
  bool operator==(const PartitionSealRef&) const = default;
};

// partitions/<source>/progress.
struct PartitionProgress {
  std::string topic;
  int32_t partition = 0;
  uint64_t epoch = 0;        // of the owner that wrote it
  int64_t position = 0;      // next offset to read, as of the last accepted round
  int64_t high_watermark = 0;
  std::optional<int64_t> max_event_ts;
  std::vector<int64_t> unsealed;         // windows with changes not sealed yet, ascending
  std::vector<PartitionSealRef> seals;   // the accepted seal of each window, ascending by window

  bool operator==(const PartitionProgress&) const = default;
  std::string Encode() const;
  static Status Decode(std::string_view text, const std::string& name, PartitionProgress* out);
  // Past window w (see above), for a root of window size and lateness.
  bool Past(int64_t w, int64_t window_ms, int64_t lateness_ms) const;
};

// partitions/<source>/producers: every producer of the partition's state
// (its producer table, retired ones not included) as of its last recorded
// round, by id, with the seqs its current epoch applied there: the lowest
// (`first`) and the highest (`last`). Replaced with progress, just before
// it, by each recorded round whose list differs from the one in place.
//
// Two partitions' entries of one producer at one epoch whose [first, last]
// ranges overlap are a split producer (SplitRanges): its records were
// spread over both (an unkeyed or round-robin partitioner), so a seq can
// be applied by each. Disjoint ranges are a key that moved (partitions
// were added): all of one partition's seqs come before the other's.
struct PartitionProducers {
  struct Producer {
    std::string id;
    uint32_t epoch = 0;
    uint64_t first = 0;  // the lowest seq of the epoch applied (not inside an open gap)
    uint64_t last = 0;   // the highest: next_seq - 1
    bool operator==(const Producer&) const = default;
  };
  std::string topic;
  int32_t partition = 0;
  std::vector<Producer> producers;  // ascending by id, unique

  bool operator==(const PartitionProducers&) const = default;
  std::string Encode() const;
  static Status Decode(std::string_view text, const std::string& name, PartitionProducers* out);
};
// NotFound when the partition has none (no round recorded yet, or recorded
// by a build before the list).
Status ReadPartitionProducers(Env* env, const std::string& root, const std::string& source, PartitionProducers* out);

// "kafka:T/P", the partition's source name.
std::string PartitionSource(const std::string& topic, int32_t partition);

// Reads partitions/<source>/progress; NotFound when the partition has none.
Status ReadPartitionProgress(Env* env, const std::string& root, const std::string& source, PartitionProgress* out);

// The public record (include/snapsink/options.h): the owner epoch the state
// holds, its committed position (the round's `to`) and the high watermark.
using api::PartitionRound;

// Records in root every staged seal of `state` (what it sealed since its
// last recorded round, a crashed round's included) and the round's progress
// (see above); then, in state, marks those seals published, removes their
// staging directories and remembers the round's end. Locked, naming the
// newer owner, when round.epoch is no longer the newest claim or when the
// offsets do not follow the accepted ones.
// Crash points: partition.seal_record (records written and synced, not
// renamed), partition.progress (records and the producers list in place,
// progress not replaced).
Status RecordPartitionSeals(Env* env, const std::string& root, Root* state, const PartitionRound& round,
                            std::vector<std::pair<int64_t, uint64_t>>* recorded = nullptr);

// How long sealing and gc wait for a partition's claim lock held by another
// process: sealing then says so; gc leaves the partition for the next gc.
inline constexpr int kClaimLockWaitMs = 10000;

// gc (partitions/partition_seals_gc.cc): removes, for each partition in
// root/partitions/ that has progress, the seal records no merge can read
// again:
//  - replaced: a newer accepted seal of the same window replaced it
//    (progress names another record of the window, recorded further into
//    the partition);
//  - beyond retention: its window starts before `retained_from`, ROOT's
//    retention floor (meta::kRetainedFrom, engine/window_retention.h; nullopt:
//    nothing dropped yet). The floor only rises, ROOT's publish has already
//    left those windows out of every new generation and deleted their live
//    state, and PublishMerged merges no window before ROOT's oldest kept
//    window, so no later merge opens such a record, accepted or not.
// Other accepted records, records of windows with no accepted seal and
// records at or past the accepted one (a round whose progress is not
// written yet) are kept. Each partition is done under its claim lock
// (waiting up to 10 s; a partition still locked is left for the next gc).
// A record is removed seal.json first (crash point gc.seal_record between
// the two): a record in place without seal.json is one gc began to remove.
// In a bucket it may also be one an owner is uploading (file by file,
// seal.json last): such a record is kept while young(its directory) says so
// (gc's --min-age; null: none is young).
// REQUIRES: the caller holds root's LOCK (so the floor cannot move under it).
struct SealRecordsRemoved {
  std::vector<std::string> replaced;          // paths relative to root
  std::vector<std::string> beyond_retention;  // likewise
};
Status RemoveDeadSealRecords(Env* env, const std::string& root, std::optional<int64_t> retained_from,
                             SealRecordsRemoved* removed,
                             const std::function<bool(const std::string& dir)>& young = nullptr);

}  // namespace snapsink
