// Open gaps beyond a producer record's kMaxOpenGaps.
//
// A producer record keeps at most kMaxOpenGaps open gaps (engine/sequencer.h).
// When a new gap would leave more, the lowest gap of the record moves to
// Table::kGapSpill instead of stopping the source for good; dedup stays
// exact, since a seq below next_seq is a duplicate unless it lies in a gap
// of the record or in a spilled one. Every spilled range lies below every
// gap of the record (the lowest is the one that moves, and a filled range
// only shrinks), so a seq at or above the record's lowest gap never needs
// the table. ProducerState::spilled counts the producer's ranges there.
//
// At most kMaxSpilledGaps ranges per producer: beyond that (1,049,600 open
// gaps in all) the source stops (exit 3) with what to do. A new epoch drops
// the old epoch's ranges, and so does retiring the producer.
//
// Key: producer length (2, big-endian) | producer | epoch (4, big-endian) |
// lo (8, big-endian); value: hi (8, little-endian, exclusive).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "engine/sequencer.h"
#include "engine/state_codec.h"
#include "engine/store.h"

namespace snapsink {

inline constexpr uint64_t kMaxSpilledGaps = uint64_t{1} << 20;

// Decide (engine/sequencer.h) with the producer's spilled gaps: a seq in one
// applies, and a gap beyond the record's kMaxOpenGaps applies while the
// table has room.
Result<SeqDecision> DecideWithSpill(Txn* txn, std::string_view producer, const ProducerState& p, uint32_t epoch,
                                    uint64_t seq, bool stop_on_gap);

// Accept (engine/sequencer.h), spilling the record's lowest gaps beyond
// kMaxOpenGaps and closing (part of) a spilled range.
// REQUIRES: DecideWithSpill returned kApply.
Status AcceptWithSpill(Txn* txn, std::string_view producer, ProducerState* p, uint32_t epoch, uint64_t seq);

// Calls fn for every spilled range of (producer, epoch), lowest first.
Status ScanSpilledGaps(Txn* txn, std::string_view producer, uint32_t epoch, const std::function<void(const Gap&)>& fn);

// The lowest spilled range of (producer, epoch), unset when none.
Status LowestSpilledGap(Txn* txn, std::string_view producer, uint32_t epoch, std::optional<Gap>* out);

// Every open gap of the producer: the spilled ranges, then the record's.
Status AllOpenGaps(Txn* txn, std::string_view producer, const ProducerState& p, std::vector<Gap>* out);

// Removes every spilled range of the producer (all epochs).
Status DropSpilledGaps(Txn* txn, std::string_view producer);

}  // namespace snapsink
