// Accepted source gaps: positions of a source that are lost for good (a
// Kafka partition's offsets that retention deleted before they were read),
// recorded by `snapsink gaps ROOT accept --source S --range LO..HI`
// (api::Sink::AcceptSourceGap). A source reader (utilities/kafka/) that finds
// its position gone goes on past an accepted range that holds it. The
// records are an audit trail and are never removed.
//
// Storage: Table::kMeta, keys "accepted_source_gap/" | index (8, big-endian),
// value (little-endian): lo (8) | hi (8, inclusive) | accepted_at_ms (8,
// wall clock, for people only) | the source's name (the rest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/store.h"

namespace snapsink {

struct AcceptedSourceGap {
  std::string source;
  uint64_t lo = 0, hi = 0;  // both inclusive
  int64_t accepted_at_ms = 0;
};

// Appends rec after every earlier record.
Status RecordAcceptedSourceGap(Txn* txn, const AcceptedSourceGap& rec);

// Every record, in the order recorded.
Status ListAcceptedSourceGaps(Txn* txn, std::vector<AcceptedSourceGap>* out);

}  // namespace snapsink
