// Accepted gaps: an operator's way past a gap under --on-gap stop.
//
// `snapsink gaps ROOT accept --producer P [--epoch E] [--range LO..HI]`
// records an AcceptedGap. Ingest under --on-gap stop then applies an event
// that would open a gap when the missing range lies wholly inside an accepted
// range of that producer and epoch: the gap is opened as under --on-gap
// accept, stays listed by `inspect gaps` and still fills if its events
// arrive. The records are an audit trail and are never removed.
//
// Storage: Table::kMeta, keys
//   "accepted_gap/" | escaped producer (codec::AppendEscapedMetric) | index (8, big-endian)
// value (little-endian):
//   any_epoch (1) | epoch (4) | lo (8) | hi (8, exclusive) | accepted_at_ms (8, wall clock)
// The wall-clock time is for people only; it feeds no snapshot, manifest or
// identity.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state_codec.h"
#include "engine/store.h"

namespace snapsink {

struct AcceptedGap {
  std::string producer;
  bool any_epoch = true;  // no --epoch: every epoch of the producer
  uint32_t epoch = 0;
  Gap range{0, UINT64_MAX};  // [lo, hi); no --range: every sequence number
  int64_t accepted_at_ms = 0;
  bool operator==(const AcceptedGap&) const = default;
};

// Appends rec after the producer's earlier records.
Status RecordAcceptedGap(Txn* txn, const AcceptedGap& rec);

// Every record, by producer then in the order recorded.
Status ListAcceptedGaps(Txn* txn, std::vector<AcceptedGap>* out);

// Whether an accepted record covers all of missing for (producer, epoch).
Result<bool> GapAccepted(Txn* txn, std::string_view producer, uint32_t epoch, const Gap& missing);

// Parses "LO..HI" (both inclusive, LO <= HI) or "N" into [lo, hi).
bool ParseSeqRange(std::string_view text, Gap* out);

}  // namespace snapsink
