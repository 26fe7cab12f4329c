// Internal to engine/ingest*.cc: the sort of a batch's aggregate keys at
// commit, bytewise (std::string_view's order), into one run per window.
//
// A batch's keys share long prefixes (the 8-byte window, the metric, often
// the first bytes of the key), so a comparison sort on the strings spent
// most of its time in memcmp over bytes every key has. Here the keys are
// sorted 8 bytes at a time: by the big-endian word at a depth (and how many
// of its bytes the key has), then each run of ties by the next word, which
// compares integers, not strings. Distinct keys come out in exactly the
// order a comparison sort gives them.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace snapsink {

// Sorts *keys by .first, bytewise. REQUIRES: the keys are distinct (equal
// keys would end up adjacent, in no particular order of .second).
void SortByKey(std::vector<std::pair<std::string_view, uint32_t>>* keys);

}  // namespace snapsink
