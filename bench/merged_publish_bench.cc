#include "bench/merged_publish_bench.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "bench/bench_util.h"
#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"

namespace snapsink::bench {
namespace {

// Seal options: every window with changes, closed or not (seal --all).
api::SealOptions AllWindows() {
  api::SealOptions o;
  o.all = true;
  return o;
}

constexpr int kPartitions = 8;
constexpr int64_t kTs = 1792576800000;  // 2026-10-21T10:00:00Z: every row in one window
constexpr size_t kBatch = 10000;

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "merged_publish: %s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}
template <typename T>
T Check(Result<T> r, const char* what) {
  Check(r.status(), what);
  return std::move(*r);
}

std::string Line(int p, uint64_t seq, uint64_t key) {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                R"({"producer":"p%d","seq":%)" PRIu64 R"(,"ts":%)" PRId64
                R"(,"metric":"m%d","key":"k%09)" PRIu64 R"(","value":%)" PRIu64 ".25}\n",
                p, seq, kTs, static_cast<int>(key % 4), key, key % 1000);
  return buf;
}

// Partition p's rows: keys p, p + 8, p + 16, ... (the partitions' rows
// interleave in key order, as keyed partitions do).
void WritePartition(api::Sink* s, const std::string& source, int p, uint64_t rows, uint64_t epoch,
                    uint64_t first_seq = 0) {
  for (uint64_t i = 0; i < rows; i += kBatch) {
    api::WriteBatch b(source);
    if (epoch) b.SetOwner(epoch);
    for (uint64_t j = i; j < std::min(rows, i + kBatch); ++j) b.Add(Line(p, first_seq + j, j * kPartitions + p));
    b.SetPosition(std::to_string(std::min(rows, i + kBatch)));
    Check(s->Write(b), "write");
  }
}

}  // namespace

void RunMergedPublishBench(const std::string& scratch_dir, uint64_t rows_per_partition, int reps,
                           std::map<std::string, double>* ratios) {
  namespace fs = std::filesystem;
  const std::string prep = scratch_dir + "/merged-prep";
  const std::string one = prep + "/one", merged = prep + "/root";
  // One root with every row (the same events, partition after partition).
  Check(api::Sink::Create(one, {}), "init");
  {
    auto s = Check(api::Sink::Open(one), "open");
    for (int p = 0; p < kPartitions; ++p) WritePartition(s.get(), "kafka:t/" + std::to_string(p), p, rows_per_partition, 0);
  }
  // ROOT and 8 partition states, each sealed and recorded.
  Check(api::Sink::Create(merged, {}), "init");
  {
    auto ro = Check(api::Sink::OpenReadOnly(merged), "open");
    for (int p = 0; p < kPartitions; ++p) {
      const std::string source = "kafka:t/" + std::to_string(p);
      const std::string state = prep + "/state/" + std::to_string(p);
      fs::create_directories(prep + "/state");
      Check(api::Sink::Create(state, {}), "init state");
      auto s = Check(api::Sink::Open(state), "open state");
      const uint64_t epoch = Check(api::ClaimOwner(*ro, source, "bench"), "claim");
      api::WriteBatch take(source);
      take.SetOwner(epoch, true);
      Check(s->Write(take), "take");
      WritePartition(s.get(), source, p, rows_per_partition, epoch);
      Check(s->Seal(AllWindows()), "seal state");
      const int64_t end = static_cast<int64_t>(rows_per_partition);
      Check(api::RecordPartitionSeals(*ro, *s, {"t", p, epoch, end, end}), "record");
    }
  }
  std::vector<double> one_s, merged_s, ratio;
  for (int rep = 0; rep < reps; ++rep) {
    const std::string dir = scratch_dir + "/merged-rep" + std::to_string(rep);
    fs::copy(prep, dir, fs::copy_options::recursive);
    double t_one = 0, t_merged = 0;
    {
      auto s = Check(api::Sink::Open(dir + "/one"), "open");
      Stopwatch w;
      Check(s->Seal(AllWindows()), "seal");
      auto r = Check(s->Publish(), "publish");
      t_one = w.Seconds();
      if (r.generation != 1) Check(Status::Corruption("the one root published nothing"), "publish");
    }
    {
      auto ro = Check(api::Sink::OpenReadOnly(dir + "/root"), "open");
      Stopwatch w;
      auto r = Check(api::PublishMerged(*ro, "t", kPartitions), "merged publish");
      t_merged = w.Seconds();
      if (r.generation != 1) Check(Status::Corruption("the merged publish published nothing"), "merged publish");
    }
    fs::remove_all(dir);
    one_s.push_back(t_one);
    merged_s.push_back(t_merged);
    ratio.push_back(t_merged / t_one);
  }
  fs::remove_all(prep);
  const double r = Median(ratio);
  std::printf("merged_publish: %d partitions x %" PRIu64 " rows: merged publish %.3f s, one root's seal+publish "
              "%.3f s (medians of %d), ratio %.2fx (goal <= 1.5x)\n",
              kPartitions, rows_per_partition, Median(merged_s), Median(one_s), reps, r);
  (*ratios)["merged_publish_ratio"] = r;
}

}  // namespace snapsink::bench
