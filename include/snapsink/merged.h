// The merged publish of a topic's partitions (docs/SCALE-OUT.md): what a
// program consuming a partitioned topic does with the partitions' own
// states (each a root of its own, opened as a Sink) and the shared ROOT
// (opened without its LOCK, Sink::OpenReadOnly).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "snapsink/sink.h"

namespace snapsink::api {

// The records PartitionRound and MergedPublishResult are in options.h.

// Records in root, as seal records of partition round.partition, every seal
// that `state` (the partition's own root) has staged since its last recorded
// round, and the round's progress; marks them recorded in state. Locked,
// naming the newer owner, when round.epoch is no longer the partition's
// newest claim (a zombie), or when the round's offsets do not follow the
// accepted ones. Returns the (window, version) pairs recorded.
// Errors: InvalidArgument (root or state null; the state's position before
//   the end of its last recorded round), Locked (as above), IOError or
//   Corruption from either root.
Result<std::vector<std::pair<int64_t, uint64_t>>> RecordPartitionSeals(ReadOnlySink* root, Sink* state,
                                                                     const PartitionRound& round);

// Publishes into root, taking its LOCK for this step only (waiting for it),
// every window of `topic` that all its `partitions` partitions have sealed
// or are past, and whose seals changed since its last merged version: their
// rows merged, reconciled against the seals' counts, in one generation.
// Errors: InvalidArgument (root null; partitions not above 0; a merged count
//   or sum that overflows, naming window, metric and key), Locked (LOCK not
//   had within the wait), Corruption (a partition's seal file differs from
//   its record), IOError.
Result<MergedPublishResult> PublishMerged(ReadOnlySink* root, const std::string& topic, int32_t partitions);

// Records in root (taking its LOCK for one commit, waiting for it) that
// `producer`'s events came from two partitions of a topic (`sources` names
// them, "kafka:T/0, kafka:T/3"), where the partitions' own states found it:
// root's status, status --json and metrics list it as a state's own
// record (api::WriteOptions::producer_check) is listed. Replaces an earlier
// record of the producer.
// Errors: InvalidArgument (root null, producer empty), Locked (LOCK not had
//   within the wait), IOError.
Status RecordSplitProducer(ReadOnlySink* root, const std::string& producer, const std::string& sources);

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
