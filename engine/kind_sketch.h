// The sketch an aggregate or a snapshot row carries (Aggregate::sketch,
// Row::sketch): a quantiles metric's DDSketch (engine/ddsketch.h) or a
// distinct metric's HyperLogLog (engine/hyperloglog.h). Each encoding starts
// with its version byte, 2 for a DDSketch and 1 for a HyperLogLog, and each
// decoder accepts only its own, so the first byte tells which one it is.
#pragma once

#include <string>
#include <string_view>

#include "engine/status.h"

namespace snapsink {

// True when bytes start as a HyperLogLog encoding (a distinct metric's).
bool IsDistinctSketch(std::string_view bytes);

// OK when bytes decode as the sketch their first byte names; Corruption
// naming what does not hold otherwise.
Status CheckSketch(std::string_view bytes);

// Merges the sketch `from` into *into (into empty: takes from): DDSketch
// buckets summed, HyperLogLog registers by max; in any order or grouping
// the same bytes. InvalidArgument when the two are of different sketches or
// parameters, Corruption when one does not decode; *into is then unchanged.
Status MergeSketches(std::string* into, std::string_view from);

}  // namespace snapsink
