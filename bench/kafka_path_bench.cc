// snapsink_kafka_path_bench: `run ROOT --kafka ... --final` against `run ROOT
// FILE --final` over the same events, through the real snapsink binary, by
// the CPU-seconds and the peak RSS of the snapsink process alone (wait4's
// rusage). This process hosts librdkafka's mock cluster (the Kafka tests'
// tests/kafka_mock_cluster.h), so the broker's CPU is not counted. The two
// runs alternate (file first in even repetitions, Kafka first in odd ones),
// so a machine busy elsewhere weighs on both alike.
//
// Events: one NDJSON event per Kafka record, P partitions, 8 producers per
// partition (a producer never spans partitions), 64 keys, one event every
// 100 ms of event time (about 28 hourly windows per million). The file holds
// partition after partition in offset order.
//
//   snapsink_kafka_path_bench [--events=N] [--partitions=P] [--reps=R] [--snapsink=PATH]
//                             [--kafka-prefix="perf record -g -o k.data --"] [--file-prefix=...] [--quick]
//                             [--kafka-config=K=V ...] [--compression=lz4|zstd|snappy|gzip|none]
//                             [--bare-batch=N]   (the bare consumer takes N at a time by rd_kafka_consume_batch_queue,
//                                                 as snapsink does: 1000; 0: one rd_kafka_consumer_poll per message)
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "tests/kafka_mock_cluster.h"

extern char** environ;

namespace {

const char* FlagText(int argc, char** argv, const char* name, const char* def) {
  const size_t n = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
  }
  return def;
}

uint64_t Flag(int argc, char** argv, const char* name, uint64_t def) {
  const char* v = FlagText(argc, argv, name, nullptr);
  return v ? std::strtoull(v, nullptr, 10) : def;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Usage {
  int exit_code = -1;
  double cpu_s = 0, user_s = 0, sys_s = 0, wall_s = 0;
  long max_rss_kb = 0;
};

// Runs argv with stdout/stderr into files under dir; the rusage of that process alone.
// Linux counts in a child's ru_maxrss the peak RSS of the image it exec'd
// from (with posix_spawn's vfork, this process's, mock cluster included),
// so the measured run is spawned by a fresh copy of this binary
// (--measure, small) and its rusage comes back through a file.
Usage SpawnDirect(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> a = args;
  std::vector<char*> argv;
  for (std::string& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  Usage u;
  if (posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return u;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) return u;
  u.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  u.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  u.user_s = static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) / 1e6;
  u.sys_s = static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) / 1e6;
  u.cpu_s = u.user_s + u.sys_s;
  u.max_rss_kb = ru.ru_maxrss;
  return u;
}

std::string g_self;  // this binary, for --measure

Usage Spawn(const std::vector<std::string>& args, const std::string& dir, const std::string& tag) {
  const std::string out = dir + "/" + tag + ".out", err = dir + "/" + tag + ".err", res = dir + "/" + tag + ".usage";
  std::vector<std::string> a{g_self, "--measure", res, out, err};
  a.insert(a.end(), args.begin(), args.end());
  Usage u;
  if (SpawnDirect(a, dir + "/measure.out", dir + "/measure.err").exit_code != 0) return u;
  const std::string r = snapsink::testing::ReadFile(res);
  if (std::sscanf(r.c_str(), "%d %lf %lf %lf %ld", &u.exit_code, &u.user_s, &u.sys_s, &u.wall_s, &u.max_rss_kb) != 5) {
    u.exit_code = -1;
  }
  u.cpu_s = u.user_s + u.sys_s;
  if (u.exit_code != 0) {
    std::fprintf(stderr, "%s exited %d; see %s\n", tag.c_str(), u.exit_code, err.c_str());
  }
  return u;
}

// --consume-only BROKERS TOPIC GROUP RECORDS [K=V...]: librdkafka alone, as
// snapsink's consumer configures it (read_committed, partition EOFs, no
// auto commit, malloc as `run --kafka` sets it) and takes its messages
// (@batch=N: rd_kafka_consume_batch_queue; none: rd_kafka_consumer_poll,
// one message at a time): subscribes, takes RECORDS messages and leaves.
// Its CPU is what librdkafka costs per record on this path, whatever
// snapsink does with them.
int ConsumeOnly(int argc, char** argv) {
  if (argc < 6) return 2;
  mallopt(M_ARENA_MAX, 1);  // as tools/cmd_run_kafka.cc (KeepFetchMemory)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<std::string, std::string>> kv = {
      {"bootstrap.servers", argv[2]}, {"group.id", argv[4]},          {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"}, {"auto.offset.reset", "earliest"}, {"isolation.level", "read_committed"},
      {"enable.partition.eof", "true"}, {"log_level", "3"}};
  size_t batch = 0;  // "@batch=N": rd_kafka_consume_batch_queue, N at a time
  for (int i = 6; i < argc; ++i) {
    if (std::strncmp(argv[i], "@batch=", 7) == 0) {
      batch = std::strtoull(argv[i] + 7, nullptr, 10);
      continue;
    }
    const char* eq = std::strchr(argv[i], '=');
    if (eq) kv.emplace_back(std::string(argv[i], static_cast<size_t>(eq - argv[i])), eq + 1);
  }
  for (const auto& [k, v] : kv) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "%s=%s: %s\n", k.c_str(), v.c_str(), err);
      return 1;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!rk) return 1;
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, argv[3], RD_KAFKA_PARTITION_UA);
  if (rd_kafka_subscribe(rk, topics)) return 1;
  rd_kafka_topic_partition_list_destroy(topics);
  const uint64_t want = std::strtoull(argv[5], nullptr, 10);
  uint64_t got = 0, bytes = 0;
  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
  std::vector<rd_kafka_message_t*> ms(std::max<size_t>(batch, 1));
  while (got < want && batch > 0) {
    const ssize_t n = rd_kafka_consume_batch_queue(q, 200, ms.data(), batch);
    for (ssize_t i = 0; i < n; ++i) {
      if (!ms[i]->err) {
        ++got;
        bytes += ms[i]->len;
      }
      rd_kafka_message_destroy(ms[i]);
    }
  }
  rd_kafka_queue_destroy(q);
  while (got < want) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (!m) continue;
    if (!m->err) {
      ++got;
      bytes += m->len;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  std::printf("%llu records, %llu B\n", static_cast<unsigned long long>(got), static_cast<unsigned long long>(bytes));
  return 0;
}

// --measure RESULT OUT ERR ARGS...: runs ARGS, writes "exit user sys wall maxrss_kb" to RESULT.
int Measure(int argc, char** argv) {
  if (argc < 6) return 2;
  std::vector<std::string> args(argv + 5, argv + argc);
  const Usage u = SpawnDirect(args, argv[3], argv[4]);
  FILE* f = std::fopen(argv[2], "w");
  if (!f) return 1;
  std::fprintf(f, "%d %.6f %.6f %.6f %ld\n", u.exit_code, u.user_s, u.sys_s, u.wall_s, u.max_rss_kb);
  return std::fclose(f) == 0 ? 0 : 1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

// The events, per partition in offset order (8 producers per partition);
// *bytes is their size as lines of a file.
std::vector<std::vector<std::string>> MakeEvents(uint64_t events, int partitions, uint64_t* bytes) {
  *bytes = 0;
  std::vector<std::vector<std::string>> recs(partitions);
  std::vector<uint64_t> seq(static_cast<size_t>(partitions) * 8, 0);
  for (uint64_t i = 0; i < events; ++i) {
    const int p = static_cast<int>(i % static_cast<uint64_t>(partitions));
    const uint64_t producer = static_cast<uint64_t>(p) * 8 + (i / static_cast<uint64_t>(partitions)) % 8;
    const uint64_t s = seq[producer]++;
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  R"({"producer":"p%llu","seq":%llu,"ts":%llu,"metric":"orders","key":"k%llu","value":%llu.25})",
                  static_cast<unsigned long long>(producer), static_cast<unsigned long long>(s),
                  static_cast<unsigned long long>(1792577700000ULL + i * 100),
                  static_cast<unsigned long long>((i * 2654435761ULL) % 64),
                  static_cast<unsigned long long>(i % 1000));
    recs[p].emplace_back(buf);
    *bytes += recs[p].back().size() + 1;
  }
  return recs;
}

// Produces each partition's records to topic, false (having said why) when
// the mock broker does not hold them all from offset 0.
bool ProduceAll(snapsink::kafkatest::MockCluster& cluster, const std::string& topic,
                const std::vector<std::vector<std::string>>& recs) {
  const int partitions = static_cast<int>(recs.size());
  for (int p = 0; p < partitions; ++p) {
    int64_t lo = -1, hi = -1;
    if (!cluster.Produce(topic, p, recs[p]) || !cluster.Watermarks(topic, p, &lo, &hi)) {
      std::fprintf(stderr, "producing partition %d failed\n", p);
      return false;
    }
    if (lo != 0 || hi != static_cast<int64_t>(recs[p].size())) {
      std::fprintf(stderr, "partition %d holds offsets %lld..%lld of 0..%zu: the mock broker dropped its oldest "
                   "batches (fewer --events, more --partitions, or --compression)\n",
                   p, static_cast<long long>(lo), static_cast<long long>(hi) - 1, recs[p].size() - 1);
      return false;
    }
  }
  return true;
}

int main(int argc, char** argv) {
  using snapsink::kafkatest::MockCluster;
  if (argc > 1 && std::strcmp(argv[1], "--measure") == 0) return Measure(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "--consume-only") == 0) return ConsumeOnly(argc, argv);
  g_self = std::filesystem::canonical("/proc/self/exe").string();
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  const uint64_t events = Flag(argc, argv, "--events", quick ? 50000 : 1000000);
  const int partitions = static_cast<int>(Flag(argc, argv, "--partitions", 8));
  const int reps = static_cast<int>(Flag(argc, argv, "--reps", quick ? 1 : 3));
  const std::string snapsink = FlagText(argc, argv, "--snapsink", SNAPSINK_BINARY);
  const uint64_t bare_batch = Flag(argc, argv, "--bare-batch", 1000);
  const std::string compression = FlagText(argc, argv, "--compression", "lz4");
  const std::vector<std::string> kafka_prefix = Words(FlagText(argc, argv, "--kafka-prefix", ""));
  const std::vector<std::string> file_prefix = Words(FlagText(argc, argv, "--file-prefix", ""));
  std::vector<std::string> kafka_config;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kafka-config=", 15) == 0) kafka_config.push_back(argv[i] + 15);
  }

  char tmpl[] = "/tmp/snapsink-kafka-path-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;

  // The events, per partition in offset order; the file is their concatenation.
  uint64_t bytes = 0;
  std::vector<std::vector<std::string>> recs = MakeEvents(events, partitions, &bytes);
  {
    std::string file;
    file.reserve(bytes);
    for (const auto& part : recs) {
      for (const std::string& r : part) (file += r) += '\n';
    }
    snapsink::testing::WriteFile(dir + "/events.ndjson", file);
  }

  const auto t0 = std::chrono::steady_clock::now();
  // The mock broker keeps about 5 MB of batches per partition and drops the
  // oldest past that: compressed batches keep a million events whole.
  MockCluster cluster(3, {{"compression.type", compression}, {"batch.size", "1000000"}});
  cluster.CreateTopic("bench", partitions);
  if (!ProduceAll(cluster, "bench", recs)) return 1;
  recs.clear();
  recs.shrink_to_fit();
  std::printf("produced %llu events (%llu B) in %d partitions (%s batches) to the mock cluster in %.1f s\n",
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(bytes), partitions,
              compression.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::fflush(stdout);

  std::vector<double> cpu_ratio, rss_ratio, kafka_cpu, file_cpu, bare_cpu, bare_rss;
  for (int rep = 0; rep < reps; ++rep) {
    Usage k, f, b;
    const std::string file_root = dir + "/file-root-" + std::to_string(rep);
    const std::string kafka_root = dir + "/kafka-root-" + std::to_string(rep);
    for (const std::string& root : {file_root, kafka_root}) {
      if (Spawn({snapsink, "init", root}, dir, "init").exit_code != 0) return 1;
    }
    auto run_file = [&] {
      const std::string& root = file_root;
      std::vector<std::string> a = file_prefix;
      a.insert(a.end(), {snapsink, "run", root, dir + "/events.ndjson", "--final", "--quiet"});
      f = Spawn(a, dir, "file-" + std::to_string(rep));
    };
    auto run_kafka = [&] {
      const std::string& root = kafka_root;
      std::vector<std::string> a = kafka_prefix;
      a.insert(a.end(), {snapsink, "run", root, "--kafka", cluster.bootstraps(), "--topic", "bench", "--group",
                         "bench-" + std::to_string(rep), "--final", "--quiet"});
      for (const std::string& kv : kafka_config) a.insert(a.end(), {"--kafka-config", kv});
      k = Spawn(a, dir, "kafka-" + std::to_string(rep));
    };
    auto run_bare = [&] {
      std::vector<std::string> a{g_self, "--consume-only", cluster.bootstraps(), "bench",
                                 "bare-" + std::to_string(rep), std::to_string(events)};
      a.insert(a.end(), kafka_config.begin(), kafka_config.end());
      if (bare_batch > 0) a.push_back("@batch=" + std::to_string(bare_batch));
      b = Spawn(a, dir, "bare-" + std::to_string(rep));
    };
    if (rep % 2 == 0) {
      run_file();
      run_kafka();
      run_bare();
    } else {
      run_bare();
      run_kafka();
      run_file();
    }
    if (k.exit_code != 0 || f.exit_code != 0 || b.exit_code != 0) return 1;
    if (rep == 0) {  // both published the same rows (versions and generations apart)
      std::string rows[2];
      for (int i = 0; i < 2; ++i) {
        const std::string tag = std::string("query-") + (i ? "kafka" : "file");
        if (Spawn({snapsink, "query", i ? kafka_root : file_root, "--format", "json"}, dir, tag).exit_code != 0) {
          return 1;
        }
        rows[i] = std::regex_replace(snapsink::testing::ReadFile(dir + "/" + tag + ".out"),
                                     std::regex(R"(,"version":[0-9]+,"generation":[0-9]+)"), "");
      }
      if (rows[0] != rows[1] || rows[0].size() < 10) {
        std::fprintf(stderr, "the Kafka run published other rows than the file run (see %s/query-*.out)\n",
                     dir.c_str());
        return 1;
      }
    }
    std::printf(
        "rep %d: kafka %.2f CPU-s (user %.2f, sys %.2f), %.0f MB RSS, %.1f s wall; file %.2f CPU-s (user %.2f, sys "
        "%.2f), %.0f MB RSS, %.1f s wall\n",
        rep, k.cpu_s, k.user_s, k.sys_s, static_cast<double>(k.max_rss_kb) / 1024, k.wall_s, f.cpu_s, f.user_s,
        f.sys_s, static_cast<double>(f.max_rss_kb) / 1024, f.wall_s);
    std::fflush(stdout);
    std::printf("rep %d: librdkafka alone (take and drop every record) %.2f CPU-s (user %.2f, sys %.2f), %.0f MB RSS\n",
                rep, b.cpu_s, b.user_s, b.sys_s, static_cast<double>(b.max_rss_kb) / 1024);
    bare_cpu.push_back(b.cpu_s);
    bare_rss.push_back(static_cast<double>(b.max_rss_kb) / 1024);
    kafka_cpu.push_back(k.cpu_s);
    file_cpu.push_back(f.cpu_s);
    cpu_ratio.push_back(k.cpu_s / f.cpu_s);
    rss_ratio.push_back(static_cast<double>(k.max_rss_kb) / static_cast<double>(f.max_rss_kb));
  }
  const double ev = static_cast<double>(events);
  std::printf("kafka/file CPU-seconds per event: %.2fx (median of %d; %.2f vs %.2f us per event; range %.2f-%.2fx)\n",
              Median(cpu_ratio), reps, Median(kafka_cpu) / ev * 1e6, Median(file_cpu) / ev * 1e6,
              *std::min_element(cpu_ratio.begin(), cpu_ratio.end()),
              *std::max_element(cpu_ratio.begin(), cpu_ratio.end()));
  std::printf("kafka/file peak RSS: %.2fx (median of %d; range %.2f-%.2fx)\n", Median(rss_ratio), reps,
              *std::min_element(rss_ratio.begin(), rss_ratio.end()),
              *std::max_element(rss_ratio.begin(), rss_ratio.end()));
  std::printf("librdkafka per record (a bare consumer, same config): %.2f us CPU, %.0f MB RSS; ours: %.2f us per event "
              "(kafka - bare) against %.2f us for the whole file path\n",
              Median(bare_cpu) / ev * 1e6, Median(bare_rss), (Median(kafka_cpu) - Median(bare_cpu)) / ev * 1e6,
              Median(file_cpu) / ev * 1e6);
  std::error_code ec;
  if (!FlagText(argc, argv, "--keep", nullptr)) std::filesystem::remove_all(dir, ec);
  return 0;
}
