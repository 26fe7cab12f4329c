// The public Totals (include/snapsink/options.h) of the engine's Aggregate
// (engine/state_codec.h), the record the ledger stores: the same three
// numbers, one the embedder sees, one the state encodes.
#pragma once

#include "engine/state_codec.h"
#include "snapsink/options.h"

namespace snapsink {

inline api::Totals ToTotals(const Aggregate& a) { return api::Totals{a.count, a.sum_micros, a.events}; }

}  // namespace snapsink
