// The generation parts benchmark (snapsink_bench --benchmarks=parts;
// publish/generation_manifest.h): one window sealed and published into a
// root whose current generation names `big` one-minute windows, against the
// same into a root of `small` windows (time, and bytes the publish writes
// through the Env: snapshot files, parts, top manifest, CURRENT), and the
// manifest bytes a point read of one window reads in the big root (top
// manifest and one part; goal <= 64 KB).
//
// The roots' history is written through the library directly
// (CommitGeneration of a generation naming `big` windows), not by sealing
// each window: the publish under test reads only the top manifest and the
// part it changes, never those windows' snapshots.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace snapsink::bench {

struct PartsBenchSizes {
  uint64_t big = 100000;
  uint64_t small = 100;
  int reps = 3;
};

// `ratios` gets parts_time_ratio, parts_bytes_ratio (big over small,
// medians over reps) and parts_point_read_bytes.
void RunPartsBench(const std::string& scratch_dir, const PartsBenchSizes& sizes, std::map<std::string, double>* ratios);

}  // namespace snapsink::bench
