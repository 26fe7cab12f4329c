// The exactly-once rule of SPEC 2, as pure functions over ProducerState.
//
// Decide() says what an event (epoch, seq) is to a producer without changing
// anything; Accept() then records an applied event. Keeping the two apart
// lets ingest reject an event for another reason (a sum overflow) or stop
// before it (a gap under --on-gap stop) with the state untouched.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/state_codec.h"

namespace snapsink {

inline constexpr size_t kMaxOpenGaps = 1024;

enum class SeqOutcome {
  kApply,      // apply the event (in order, opening a gap, or filling one)
  kDuplicate,  // seen before: drop
  kFenced,     // epoch below the producer's current one: drop
  kGapStop,    // would open a gap and the root stops on gaps
  kGapLimit,   // would leave more than kMaxOpenGaps open gaps in the record: ingest
               // spills the lowest (engine/gap_spill.h) and stops only past that table's limit
};

struct SeqDecision {
  SeqOutcome outcome = SeqOutcome::kApply;
  Gap missing;  // for kApply that opens a gap, kGapStop, kGapLimit: the missing range [lo, hi)
  bool opens_gap = false;
};

SeqDecision Decide(const ProducerState& p, uint32_t epoch, uint64_t seq, bool stop_on_gap);

// REQUIRES: Decide(*p, epoch, seq, ...) returned kApply.
void Accept(ProducerState* p, uint32_t epoch, uint64_t seq);

}  // namespace snapsink
