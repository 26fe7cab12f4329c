// snapsink_kafka_bench: the Kafka consumer's write loop fed from memory (no
// broker, no librdkafka): records of 1-3 NDJSON lines for P partitions,
// taken in rounds as rd_kafka_consumer_poll would hand them over, each
// round written by utilities/kafka/PartitionWriter (one Sink::Write per
// partition with its position and progress), as `run --kafka` does.
//
//   snapsink_kafka_bench [--records=N] [--partitions=P] [--round=R] [--serial=1] [--quick]
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "utilities/kafka/partition_writer.h"

namespace {

uint64_t Flag(int argc, char** argv, const char* name, uint64_t def) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return std::strtoull(argv[i] + n + 1, nullptr, 10);
  }
  return def;
}

void Check(const snapsink::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace snapsink;
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  const uint64_t records = Flag(argc, argv, "--records", quick ? 20000 : 400000);
  const int partitions = static_cast<int>(Flag(argc, argv, "--partitions", 8));
  const uint64_t round = Flag(argc, argv, "--round", 20000);

  // Records per partition, in memory: one producer per partition.
  std::vector<std::vector<std::string>> recs(partitions);
  std::vector<uint64_t> seq(partitions, 0);
  uint64_t lines = 0, bytes = 0;
  for (uint64_t i = 0; i < records; ++i) {
    const int p = static_cast<int>(i % partitions);
    const int n = 1 + static_cast<int>((i * 7919) % 3);
    std::string r;
    for (int j = 0; j < n; ++j) {
      const uint64_t s = seq[p]++;
      char buf[256];
      std::snprintf(buf, sizeof(buf),
                    R"({"producer":"p%d","seq":%llu,"ts":%llu,"metric":"orders","key":"k%llu","value":%llu.25})", p,
                    static_cast<unsigned long long>(s), 1792577700000ULL + s * 1000,
                    static_cast<unsigned long long>(s % 50), static_cast<unsigned long long>(s % 1000));
      if (j) r += '\n';
      r += buf;
      ++lines;
    }
    bytes += r.size();
    recs[p].push_back(std::move(r));
  }

  char tmpl[] = "/tmp/snapsink-kafka-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string root = std::string(tmpl) + "/root";
  Check(api::Sink::Create(root, {}), "create");
  auto sink = api::Sink::Open(root);
  Check(sink.status(), "open");
  kafka::PartitionWriter w(sink->get(), "bench", {});
  const bool serial = Flag(argc, argv, "--serial", 0) != 0;
  w.set_parallel(!serial);
  api::WriteResult sum;
  uint64_t commits = 0;
  std::vector<size_t> next(partitions, 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (bool more = true; more;) {
    more = false;
    for (int p = 0; p < partitions; ++p) {  // one poll round: round/partitions records of each partition
      w.Get(p).assigned = true;
      for (uint64_t k = 0; k < round / partitions && next[p] < recs[p].size(); ++k, ++next[p]) {
        w.Add(p, static_cast<int64_t>(next[p]), recs[p][next[p]]);
      }
      w.Get(p).hwm = static_cast<int64_t>(recs[p].size());
      more = more || next[p] < recs[p].size();
    }
    std::vector<std::pair<int32_t, int64_t>> flushed;
    Check(w.Flush(&sum, &flushed), "write");
    commits += flushed.size();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("kafka_write_loop%s  %llu records, %llu lines (%.1f MiB) in %llu Writes over %d partitions, rounds of %llu: "
              "%.3f s, %.0f lines/s, %.1f MiB/s; applied %llu\n",
              serial ? " (serial Writes)" : " (concurrent Writes)", static_cast<unsigned long long>(records), static_cast<unsigned long long>(lines),
              static_cast<double>(bytes) / (1 << 20), static_cast<unsigned long long>(commits), partitions,
              static_cast<unsigned long long>(round), secs, static_cast<double>(lines) / secs,
              static_cast<double>(bytes) / (1 << 20) / secs, static_cast<unsigned long long>(sum.applied));
  sink->reset();
  std::filesystem::remove_all(tmpl);
  return sum.applied == lines ? 0 : 1;
}
