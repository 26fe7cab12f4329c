#include "bench/checkpoint_bench.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "bench/bench_util.h"
#include "engine/env.h"
#include "engine/filenames.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"

namespace snapsink::bench {
namespace {

constexpr int64_t kT0 = 1792576800000;  // 2026-10-21T10:00:00Z
constexpr char kSource[] = "kafka:orders/0";
using Samples = std::vector<double>;
namespace api = snapsink::api;

// Event i of n: 1 producer in 16 events, 1000 keys, 8 metrics, 6 hours.
std::string Line(uint64_t i, uint64_t n) {
  char buf[200];
  const uint64_t producers = n / 16 + 1;
  const int64_t ts = kT0 + static_cast<int64_t>(i * 6 * 3600 * 1000 / (n ? n : 1));
  const int len = std::snprintf(buf, sizeof buf,
                                "{\"producer\":\"app-%" PRIu64 "\",\"seq\":%" PRIu64
                                ",\"ts\":%lld,\"metric\":\"m%" PRIu64 "\",\"key\":\"k%" PRIu64 "\",\"value\":1.5}",
                                i % producers, i / producers, static_cast<long long>(ts), i % 8, (i / 8) % 1000);
  return std::string(buf, static_cast<size_t>(len));
}

// The baseline: data.mdb copied as it is, read, written, fsynced.
double CopyMs(const std::string& from, const std::string& to) {
  Env* env = Env::Default();
  Stopwatch sw;
  std::unique_ptr<RandomAccessFile> in;
  CheckOk(env->NewRandomAccessFile(from, &in), "open " + from);
  std::unique_ptr<WritableFile> out;
  CheckOk(env->NewWritableFile(to, &out), "create " + to);
  std::string chunk;
  for (uint64_t at = 0; at < in->Size(); at += chunk.size()) {
    CheckOk(in->Read(at, std::min<uint64_t>(1 << 20, in->Size() - at), &chunk), "read");
    if (chunk.empty()) break;
    CheckOk(out->Append(chunk), "write");
  }
  CheckOk(out->Sync(), "sync");
  CheckOk(out->Close(), "close");
  const double ms = sw.Seconds() * 1000;
  std::remove(to.c_str());
  return ms;
}

}  // namespace

void RunCheckpointBench(const std::string& dir, const CheckpointBenchSizes& z, std::map<std::string, double>* ratios) {
  std::printf("checkpoint (api::WriteCheckpoint of one partition's state, %d reps, medians):\n", z.reps);
  std::printf("  %10s %10s %12s %12s %10s %10s %12s\n", "events", "producers", "state bytes", "ckpt bytes", "ckpt ms",
              "copy ms", "ckpt/copy");
  for (uint64_t n : z.events) {
    const std::string root = dir + "/ckpt-root", state = dir + "/ckpt-state";
    RemoveTree(root);
    RemoveTree(state);
    CheckOk(api::Sink::Create(root, {}), "create root");
    CheckOk(api::Sink::Create(state, {}), "create state");
    auto ro = api::Sink::OpenReadOnly(root);
    CheckOk(ro.status(), "open root");
    auto epoch = api::ClaimOwner(**ro, kSource, "bench");
    CheckOk(epoch.status(), "claim");
    auto sink = api::Sink::Open(state);
    CheckOk(sink.status(), "open state");
    for (uint64_t i = 0; i < n;) {
      api::WriteBatch b(kSource);
      b.SetOwner(*epoch, /*take=*/i == 0);
      for (uint64_t end = std::min(n, i + 10000); i < end; ++i) b.Add(Line(i, n));
      b.SetPosition(std::to_string(i));
      CheckOk((*sink)->Write(b), "write");
    }
    uint64_t state_bytes = 0;
    const std::string data = filenames::LmdbDataFile(filenames::StateDir(state));
    CheckOk(Env::Default()->GetFileSize(data, &state_bytes), "size");
    Samples ckpt, copy, ratio;
    uint64_t bytes = 0;
    for (int rep = 0; rep < z.reps; ++rep) {
      Stopwatch sw;
      auto c = api::WriteCheckpoint(**ro, **sink, kSource);
      CheckOk(c.status(), "checkpoint");
      ckpt.push_back(sw.Seconds() * 1000);
      bytes = c->bytes;
      copy.push_back(CopyMs(data, dir + "/ckpt-copy"));
      ratio.push_back(copy.back() > 0 ? ckpt.back() / copy.back() : 0);
    }
    const double r = Median(ratio);
    std::printf("  %10" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10.1f %10.1f %11.2fx\n", n, n / 16 + 1,
                state_bytes, bytes, Median(ckpt), Median(copy), r);
    (*ratios)["checkpoint_ratio_vs_copy"] = r;
    sink->reset();
    RemoveTree(root);
    RemoveTree(state);
  }
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace snapsink::bench
