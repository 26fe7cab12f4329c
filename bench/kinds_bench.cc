#include "bench/kinds_bench.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "bench/bench_util.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"

namespace snapsink::bench {
namespace {

constexpr int64_t kT0 = 1792540800000;  // 2026-10-21T00:00:00Z
constexpr int64_t kDayMs = int64_t{86400} * 1000;
using Samples = std::vector<double>;
namespace api = snapsink::api;

struct Kind {
  const char* name;
  api::MetricKind kind;
};
constexpr Kind kKinds[] = {{"sum", api::MetricKind::kSum},
                           {"minmax", api::MetricKind::kMinMax},
                           {"quantiles", api::MetricKind::kQuantiles},
                           {"distinct", api::MetricKind::kDistinct}};
constexpr int kNumKinds = 4;
constexpr int kSum = 0, kQuantiles = 2, kDistinct = 3;

// A value in micros spread over six decades, some negative, some zero: a
// sketch of many buckets, as latencies or amounts give.
std::string Value(uint64_t i) {
  const uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;
  if (h % 50 == 0) return "0";
  const uint64_t scale = 1 + h % 6;
  uint64_t v = (h >> 3) % 1000;
  for (uint64_t s = 0; s < scale; ++s) v = v * 10 + (h >> (s + 5)) % 10;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%02" PRIu64, h % 7 == 0 ? "-" : "", v / 100, v % 100);
  return buf;
}

std::string Line(uint64_t producer, uint64_t seq, int64_t ts, uint64_t key, uint64_t i) {
  char buf[256];
  const int len = std::snprintf(buf, sizeof buf,
                                "{\"producer\":\"app-%" PRIu64 "\",\"seq\":%" PRIu64
                                ",\"ts\":%lld,\"metric\":\"latency\",\"key\":\"k%" PRIu64
                                "\",\"value\":%s,\"item\":\"user-%" PRIu64 "\"}\n",
                                producer, seq, static_cast<long long>(ts), key, Value(i).c_str(),
                                static_cast<uint64_t>((i * 0x9E3779B97F4A7C15ull >> 20) % 20000));
  return std::string(buf, static_cast<size_t>(len));
}

std::unique_ptr<api::Sink> FreshSink(const std::string& path, const Kind& kind, int64_t window_ms) {
  RemoveTree(path);
  api::InitOptions o;
  o.window_size_ms = window_ms;
  if (kind.kind != api::MetricKind::kSum) o.metrics = {{"latency", kind.kind, 0}};
  CheckOk(api::Sink::Create(path, o), "create " + path);
  auto sink = api::Sink::Open(path);
  CheckOk(sink.status(), "open " + path);
  return std::move(*sink);
}

// Events per second of Sink::Ingest of file into a fresh root of kind.
double TimedIngest(const std::string& root, const std::string& file, const Kind& kind, uint64_t want) {
  auto sink = FreshSink(root, kind, 3600 * 1000);
  api::IngestOptions o;
  o.files = {file};
  o.final = true;
  api::IngestResult r;
  Stopwatch sw;
  CheckOk(sink->Ingest(o, &r), "ingest");
  const double secs = sw.Seconds();
  if (r.this_run.empty() || r.this_run[0].applied != want) Die("kinds bench: ingest applied too few");
  return static_cast<double>(want) / secs;
}

// Seals every window and publishes; the rows sealed.
uint64_t SealAndPublish(api::Sink* sink) {
  auto sealed = sink->Seal({.windows = {}, .all = true});
  CheckOk(sealed.status(), "seal");
  CheckOk(sink->Publish().status(), "publish");
  uint64_t rows = 0;
  for (const api::SealedWindow& w : *sealed) rows += w.rows;
  return rows;
}

uint64_t DataFileBytes(const std::string& root) {
  uint64_t bytes = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/snapshots")) {
    if (e.is_regular_file() && e.path().filename() == "data") bytes += e.file_size();
  }
  return bytes;
}

// Seconds of Reader::Open + a one-day Rollup of root (with p50, p90, p99
// for quantiles; a distinct metric's estimate comes with every roll-up);
// dies unless it gives `want_rows` rows.
double TimedRollup(const std::string& root, bool quantiles, uint64_t want_rows) {
  Stopwatch sw;
  auto reader = api::Reader::Open(root);
  CheckOk(reader.status(), "reader " + root);
  api::QuerySpec q;
  q.rollup_ms = kDayMs;
  if (quantiles) q.quantiles = {0.5, 0.9, 0.99};
  std::vector<api::RollupRow> rows;
  CheckOk((*reader)->Rollup(q, &rows), "rollup");
  const double secs = sw.Seconds();
  if (rows.size() != want_rows) Die("kinds bench: a roll-up of " + std::to_string(rows.size()) + " rows");
  return secs;
}

double RatioOfMedians(const Samples& a, const Samples& b) {
  Samples r;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) r.push_back(b[i] > 0 ? a[i] / b[i] : 0);
  return Median(r);
}

}  // namespace

void RunKindsBench(const std::string& dir, const KindsBenchSizes& z, std::map<std::string, double>* ratios) {
  // (a) and (b): one day of events in hourly windows, 64 producers, 64 keys.
  const std::string file = dir + "/kinds-events.ndjson";
  {
    std::ofstream out(file);
    for (uint64_t i = 0; i < z.events; ++i) {
      out << Line(i % 64, i / 64, kT0 + static_cast<int64_t>(i * static_cast<uint64_t>(kDayMs) / z.events),
                  (i / 64) % 64, i);
    }
  }
  Samples rate[kNumKinds];
  for (int rep = 0; rep < z.reps; ++rep) {
    std::fprintf(stderr, "... kinds: ingest, rep %d\n", rep + 1);
    for (int k = 0; k < kNumKinds; ++k) {
      const int at = rep % 2 == 0 ? k : kNumKinds - 1 - k;  // alternate the order
      rate[at].push_back(TimedIngest(dir + "/kinds-" + kKinds[at].name, file, kKinds[at], z.events));
    }
  }
  double bytes_per_row[kNumKinds];
  for (int k = 0; k < kNumKinds; ++k) {
    const std::string root = dir + "/kinds-" + kKinds[k].name;
    uint64_t rows = 0;
    {
      auto sink = api::Sink::Open(root);
      CheckOk(sink.status(), "open " + root);
      rows = SealAndPublish(sink->get());
    }
    bytes_per_row[k] = static_cast<double>(DataFileBytes(root)) / static_cast<double>(rows ? rows : 1);
    (*ratios)[std::string("kinds_bytes_per_row_") + kKinds[k].name] = bytes_per_row[k];
    RemoveTree(root);
  }
  std::remove(file.c_str());
  (*ratios)["kinds_quantiles_ingest_ratio_vs_sum"] = RatioOfMedians(rate[2], rate[0]);
  (*ratios)["kinds_minmax_ingest_ratio_vs_sum"] = RatioOfMedians(rate[1], rate[0]);
  (*ratios)["kinds_distinct_ingest_ratio_vs_sum"] = RatioOfMedians(rate[kDistinct], rate[kSum]);

  // (c): `windows` one-minute windows, each `keys` keys of `per_key` events.
  const std::string rollup_file = dir + "/kinds-rollup.ndjson";
  {
    std::ofstream out(rollup_file);
    uint64_t i = 0;
    for (uint64_t w = 0; w < z.windows; ++w) {
      for (uint64_t e = 0; e < z.keys * z.per_key; ++e, ++i) {
        out << Line(0, i, kT0 + static_cast<int64_t>(w) * 60000 + static_cast<int64_t>(e), e % z.keys, i);
      }
    }
  }
  std::fprintf(stderr, "... kinds: %" PRIu64 " one-minute windows, sum, quantiles, distinct (not timed)\n",
               z.windows);
  for (int k : {kSum, kQuantiles, kDistinct}) {
    auto sink = FreshSink(dir + "/kinds-rollup-" + kKinds[k].name, kKinds[k], 60000);
    api::IngestOptions o;
    o.files = {rollup_file};
    o.final = true;
    CheckOk(sink->Ingest(o, nullptr), "ingest");
    SealAndPublish(sink.get());
  }
  std::remove(rollup_file.c_str());
  // Each rep: a warming pass of the three, then a timed one, the order
  // rotated from rep to rep.
  const int rolled[] = {kSum, kQuantiles, kDistinct};
  Samples took[3];
  for (int rep = 0; rep < z.reps; ++rep) {
    std::fprintf(stderr, "... kinds: roll-up, rep %d\n", rep + 1);
    for (int pass = 0; pass < 2; ++pass) {
      for (int n = 0; n < 3; ++n) {
        const int at = (n + rep) % 3;
        const int k = rolled[at];
        const double secs = TimedRollup(dir + "/kinds-rollup-" + kKinds[k].name, k == kQuantiles, z.keys);
        if (pass == 1) took[at].push_back(secs);
      }
    }
  }
  for (int k : rolled) RemoveTree(dir + "/kinds-rollup-" + kKinds[k].name);
  (*ratios)["kinds_rollup_ratio_vs_sum"] = RatioOfMedians(took[1], took[0]);
  (*ratios)["kinds_distinct_rollup_ratio_vs_sum"] = RatioOfMedians(took[2], took[0]);

  std::printf("metric kinds (%d reps, medians):\n", z.reps);
  std::printf("  ingest of %" PRIu64 " events, sum        %12.0f events/s\n", z.events, Median(rate[0]));
  std::printf("  the same, minmax                   %12.0f events/s   minmax/sum = %.2fx\n", Median(rate[1]),
              (*ratios)["kinds_minmax_ingest_ratio_vs_sum"]);
  std::printf("  the same, quantiles (1%%)           %12.0f events/s   quantiles/sum = %.2fx (goal >= 0.5x)\n",
              Median(rate[kQuantiles]), (*ratios)["kinds_quantiles_ingest_ratio_vs_sum"]);
  std::printf("  the same, distinct (precision 14)  %12.0f events/s   distinct/sum = %.2fx (goal >= 0.5x)\n",
              Median(rate[kDistinct]), (*ratios)["kinds_distinct_ingest_ratio_vs_sum"]);
  std::printf("  snapshot bytes per (metric, key): sum %.1f, minmax %.1f, quantiles %.1f, distinct %.1f\n",
              bytes_per_row[0], bytes_per_row[1], bytes_per_row[2], bytes_per_row[3]);
  std::printf("  1-day roll-up over %" PRIu64 " one-minute windows, %" PRIu64 " keys: sum %.2f ms, quantiles "
              "(p50, p90, p99) %.2f ms, distinct %.2f ms   quantiles/sum = %.2fx, distinct/sum = %.2fx (goal <= "
              "2x)\n\n",
              z.windows, z.keys, Median(took[0]) * 1000, Median(took[1]) * 1000, Median(took[2]) * 1000,
              (*ratios)["kinds_rollup_ratio_vs_sum"], (*ratios)["kinds_distinct_rollup_ratio_vs_sum"]);
  std::fflush(stdout);
}

}  // namespace snapsink::bench
