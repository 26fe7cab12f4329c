// The metric kinds benchmark (snapsink_bench --benchmarks=kinds), all
// through the public API:
//  (a) ingest (Sink::Ingest of one file) of the same events into a root
//      whose metric is quantiles (1% accuracy), against a root where it is
//      sum: kinds_quantiles_ingest_ratio_vs_sum, rate over rate (goal >=
//      0.5x); minmax beside them, and distinct (precision 14, every event
//      with an item of 20,000): kinds_distinct_ingest_ratio_vs_sum (goal
//      >= 0.5x);
//  (b) snapshot bytes per (metric, key) of each kind: the published data
//      files' bytes over their rows, after (a)'s ingest is sealed and
//      published (kinds_bytes_per_row_sum, _minmax, _quantiles, _distinct);
//  (c) a 1-day roll-up (Reader::Rollup, p50, p90, p99) over `windows`
//      one-minute windows of a quantiles metric, against the same roll-up
//      of a sum metric over the same events: kinds_rollup_ratio_vs_sum,
//      time over time (goal <= 2x); the same of a distinct metric:
//      kinds_distinct_rollup_ratio_vs_sum (goal <= 2x).
// Ratios are medians of per-repetition ratios.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace snapsink::bench {

struct KindsBenchSizes {
  uint64_t events = 300000;  // (a): 64 producers, 64 keys, one day in hourly windows
  uint64_t windows = 1440;   // (c): one-minute windows of one day
  uint64_t keys = 8;         // (c): keys per window
  uint64_t per_key = 16;     // (c): events per key and window
  int reps = 3;
};

void RunKindsBench(const std::string& scratch_dir, const KindsBenchSizes& sizes, std::map<std::string, double>* ratios);

}  // namespace snapsink::bench
