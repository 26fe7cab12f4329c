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

}  // namespace snapsink::api
