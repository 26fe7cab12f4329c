#include "bench/write_bench.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "snapsink/sink.h"

namespace snapsink::bench {
namespace {

constexpr int64_t kT0 = 1792576800000;  // 2026-10-21T10:00:00Z
constexpr int kThreads = 8;
using Samples = std::vector<double>;
namespace api = snapsink::api;

// Event i: 64 producers in turn, each its own seq; 8 metrics x 8 keys; 24 h.
std::string Line(uint64_t i, uint64_t n, int producers = 64) {
  char buf[200];
  const uint64_t p = i % static_cast<uint64_t>(producers);
  const int64_t ts = kT0 + static_cast<int64_t>(i * 24 * 3600 * 1000 / (n ? n : 1));
  const int len = std::snprintf(buf, sizeof buf,
                                "{\"producer\":\"app-%" PRIu64 "\",\"seq\":%" PRIu64
                                ",\"ts\":%lld,\"metric\":\"m%" PRIu64 "\",\"key\":\"k%" PRIu64 "\",\"value\":%" PRIu64
                                ".25}",
                                p, i / static_cast<uint64_t>(producers), static_cast<long long>(ts), i % 8, (i / 8) % 8, i % 1000);
  return std::string(buf, static_cast<size_t>(len));
}

std::unique_ptr<api::Sink> FreshSink(const std::string& path) {
  RemoveTree(path);
  CheckOk(api::Sink::Create(path, {}), "create " + path);
  auto sink = api::Sink::Open(path);
  CheckOk(sink.status(), "open " + path);
  return std::move(*sink);
}

double FileIngest(const std::string& root_path, const std::string& file, uint64_t commit_every, bool parse_ahead,
                  uint64_t want) {
  RemoveTree(root_path);
  CheckOk(Root::Init(Env::Default(), root_path, RootConfig()), "init");
  Stopwatch sw;
  std::unique_ptr<Root> root;
  CheckOk(Root::Open(Env::Default(), root_path, Root::Access::kWriter, &root), "open");
  Ingester ingester(root->env(), root->store(), root->config());
  IngestOptions o;
  o.path = file;
  o.source = "events";
  o.commit_every = commit_every;
  o.parse_ahead = parse_ahead;
  o.rejects_file = filenames::RejectsFile(root_path, o.source);
  SourceState st;
  CheckOk(ingester.Run(o, &st), "ingest");
  const double secs = sw.Seconds();
  if (st.applied != want) Die("write bench: file ingest applied " + std::to_string(st.applied));
  return static_cast<double>(want) / secs;
}

double MemoryWrite(const std::string& root_path, const std::vector<api::WriteBatch>& batches, uint64_t want) {
  auto sink = FreshSink(root_path);
  Stopwatch sw;
  uint64_t applied = 0;
  for (const api::WriteBatch& b : batches) {
    api::WriteResult r;
    CheckOk(sink->Write(b, {}, &r), "write");
    applied += r.applied;
  }
  const double secs = sw.Seconds();
  if (applied != want) Die("write bench: memory write applied " + std::to_string(applied));
  return static_cast<double>(want) / secs;
}

// One event per Write from `threads` threads (each its own producer).
double SingleWrites(const std::string& root_path, uint64_t events, int threads) {
  auto sink = FreshSink(root_path);
  Stopwatch sw;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const uint64_t mine = events / static_cast<uint64_t>(threads);
      for (uint64_t i = 0; i < mine; ++i) {
        api::WriteBatch b("writer-" + std::to_string(t));
        b.Add(Line(i * static_cast<uint64_t>(threads) + static_cast<uint64_t>(t), events, threads));
        b.SetPosition(std::to_string(i));
        CheckOk(sink->Write(b), "write");
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return static_cast<double>(events / static_cast<uint64_t>(threads) * static_cast<uint64_t>(threads)) / sw.Seconds();
}

}  // namespace

void RunWriteBench(const std::string& dir, const WriteBenchSizes& z, std::map<std::string, double>* ratios) {
  const std::string file = dir + "/write-events.ndjson";
  std::vector<api::WriteBatch> batches;
  {
    std::ofstream out(file);
    for (uint64_t i = 0; i < z.events; ++i) {
      const std::string line = Line(i, z.events);
      out << line << '\n';
      if (i % z.commit_every == 0) batches.emplace_back("events");
      batches.back().Add(line);
    }
  }
  Samples mem, file_pa, file_1, group, single;
  for (int rep = 0; rep < z.reps; ++rep) {
    std::fprintf(stderr, "... write path, rep %d\n", rep + 1);
    mem.push_back(MemoryWrite(dir + "/write-mem", batches, z.events));
    file_pa.push_back(FileIngest(dir + "/write-file", file, z.commit_every, true, z.events));
    file_1.push_back(FileIngest(dir + "/write-file1", file, z.commit_every, false, z.events));
    group.push_back(SingleWrites(dir + "/write-group", z.single_events, kThreads));
    single.push_back(SingleWrites(dir + "/write-single", z.single_events / 4, 1));
  }
  RemoveTree(dir + "/write-mem");
  RemoveTree(dir + "/write-file");
  RemoveTree(dir + "/write-file1");
  RemoveTree(dir + "/write-group");
  RemoveTree(dir + "/write-single");
  std::remove(file.c_str());
  auto ratio = [](const Samples& a, const Samples& b) {
    Samples r;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) r.push_back(b[i] > 0 ? a[i] / b[i] : 0);
    return Median(r);
  };
  (*ratios)["write_ratio_vs_ingest"] = ratio(mem, file_pa);
  (*ratios)["write_ratio_vs_ingest1"] = ratio(mem, file_1);
  (*ratios)["group_commit_ratio"] = ratio(group, single);
  std::printf("write path (%" PRIu64 " events, batches of %" PRIu64 " records, %d reps, medians):\n", z.events,
              z.commit_every, z.reps);
  std::printf("  Sink::Write from memory        %12.0f events/s\n", Median(mem));
  std::printf("  file ingest, parse-ahead       %12.0f events/s   write/file = %.2fx (goal >= 0.9x)\n", Median(file_pa),
              (*ratios)["write_ratio_vs_ingest"]);
  std::printf("  file ingest, one thread        %12.0f events/s   write/file = %.2fx\n", Median(file_1),
              (*ratios)["write_ratio_vs_ingest1"]);
  std::printf("group commit (one event per Write, each durable):\n");
  std::printf("  8 threads, %6" PRIu64 " Writes       %12.0f events/s\n", z.single_events, Median(group));
  std::printf("  1 thread,  %6" PRIu64 " Writes       %12.0f events/s   8 threads/1 = %.2fx (goal >= 5x)\n\n",
              z.single_events / 4, Median(single), (*ratios)["group_commit_ratio"]);
  std::fflush(stdout);
}

}  // namespace snapsink::bench
