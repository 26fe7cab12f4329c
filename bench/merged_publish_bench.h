// The merged publish benchmark (snapsink_bench --benchmarks=merged_publish):
// the publish of one window whose rows come from 8 partitions of rows_per_
// partition rows each (every partition's state sealed and recorded in ROOT
// beforehand, as the partitions' owners do; timed: PublishMerged, i.e. the
// k-way merge, its reconciliation and the generation) against the publish
// of one root holding the same rows (timed: its seal and publish, the work
// that turns the same aggregates into a published snapshot). Each rep
// publishes into a fresh copy of the prepared roots. `ratios` gets
// merged_publish_ratio (median over reps; goal <= 1.5).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace snapsink::bench {

void RunMergedPublishBench(const std::string& scratch_dir, uint64_t rows_per_partition, int reps,
                           std::map<std::string, double>* ratios);

}  // namespace snapsink::bench
