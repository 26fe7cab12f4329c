// The write path benchmark (snapsink_bench --benchmarks=write):
//  (a) the same events through Sink::Write from memory (batches of
//      commit_every records, built before the clock starts: a consumer holds
//      its records in memory already) and through the file path (Ingester::Run
//      on a file of the same lines, with and without parse-ahead);
//  (b) group commit: one event per Sink::Write from 8 threads against one
//      event per Write (one commit each) from one thread.
// Prints its figures and ratios; `ratios` gets write_ratio_vs_ingest,
// write_ratio_vs_ingest1 and group_commit_ratio (medians over reps).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace snapsink::bench {

struct WriteBenchSizes {
  uint64_t events = 200000;        // (a)
  uint64_t single_events = 4000;   // (b): one Write each
  uint64_t commit_every = 10000;
  int reps = 3;
};

void RunWriteBench(const std::string& scratch_dir, const WriteBenchSizes& sizes, std::map<std::string, double>* ratios);

}  // namespace snapsink::bench
