// Checkpoint cost (snapsink_bench --benchmarks=checkpoint): a partition's
// state of growing size (events from many producers over many keys, as one
// Kafka partition's state holds them) is checkpointed into a ROOT
// (api::WriteCheckpoint: LMDB's compacted copy, checksummed,
// written by temp + fsync + rename) and compared with the baseline of the
// same run: copying the state's data.mdb as it is (read, write, fsync).
// Prints per size the state's bytes, the checkpoint's bytes and ms, and
// checkpoint/copy; `ratios` gets checkpoint_ratio_vs_copy (the largest size).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace snapsink::bench {

struct CheckpointBenchSizes {
  std::vector<uint64_t> events = {10000, 100000, 1000000};
  int reps = 3;
};

void RunCheckpointBench(const std::string& scratch_dir, const CheckpointBenchSizes& sizes,
                        std::map<std::string, double>* ratios);

}  // namespace snapsink::bench
