// snapsink_bench: one program, named benchmarks, the same input for all of
// them, baselines in the same process (after LevelDB's db_bench).
//
//   snapsink_bench [--quick] [--benchmarks=parse,ingest,sqlite,lmdb,state,publish,read,windows,snapshot]
//                  [--reps=3] [--events=N] [--json=PATH] ...   (--help lists every flag)
//
// Each timed benchmark runs --reps times; a figure is the median over the
// repetitions, and a ratio is the median of the per-repetition ratios (rep i
// of ingest over rep i of parse), so a noisy moment hits both sides of a pair.
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "engine/decimal.h"
#include "sink/root_views.h"

#include <simdjson.h>
#include <sqlite3.h>
#include <zstd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "bench/baselines.h"
#include "bench/bench_util.h"
#include "bench/checkpoint_bench.h"
#include "bench/id_state_bench.h"
#include "bench/merged_publish_bench.h"
#include "bench/write_bench.h"
#include "bench/kinds_bench.h"
#include "bench/parts_bench.h"
#include "bench/input_gen.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"
#include "publish/seal.h"
#include "snapshot/snapshot_file.h"
#include "snapsink/reader.h"

namespace snapsink::bench {
namespace {

// Checksums of the work end up here, so the compiler cannot drop the work.
volatile uint64_t g_sink = 0;

// ---------------------------------------------------------------- flags

const char* const kAllBenchmarks[] = {"parse", "ingest", "ingest1", "wide", "sqlite", "lmdb", "state", "publish", "read", "windows", "range",
                                      "snapshot", "write", "parts", "checkpoint", "merged_publish", "kinds"};
// Only when named: bench/id_state_bench.h (10 M events by default).
const char* const kOptInBenchmarks[] = {"ids"};

struct Flags {
  std::set<std::string> benchmarks{std::begin(kAllBenchmarks), std::end(kAllBenchmarks)};
  int reps = 3;
  uint64_t events = 2000000;        // main input lines
  uint64_t sqlite_events = 0;       // 0: all of the main input
  uint64_t state_events = 200000;   // state-size input at 1x (10x = 10 times as many)
  uint64_t publish_rows = 1000000;  // rows of the published window
  uint64_t wide_rows = 1000000;     // lines of "wide": every one a new key of one window
  uint64_t lookups = 500000;        // point lookups per repetition (hits, and as many misses)
  uint64_t windows = 5000;          // one-minute windows sealed and published by "windows"
  uint64_t commit_every = 10000;    // lines per transaction, for snapsink and the ledgers alike
  uint64_t id_events = 10000000;    // id-only events of the ids benchmark
  uint64_t write_events = 200000;   // bench/write_bench.h (a)
  uint64_t write_single_events = 4000;  // bench/write_bench.h (b): one Write each
  uint64_t merged_rows = 100000;    // rows per partition of "merged_publish" (8 partitions)
  StreamSpec spec;
  std::string tmpdir;
  std::string json_path;
  std::string read_root;  // "read" on this root (a kept publish-root) instead of making one
  std::string read_only;  // "read" times only this loop: get or map ("" = all)
  bool keep = false;
  bool quick = false;

  bool Has(const std::string& b) const { return benchmarks.count(b) > 0; }
};

void Usage() {
  std::printf(
      "usage: snapsink_bench [flags]\n"
      "  --benchmarks=LIST   comma-separated, from: parse,ingest,ingest1,wide,sqlite,lmdb,state,publish,read,windows,range,snapshot,write,parts,\n"
      "                      checkpoint,merged_publish,kinds (default: all)\n"
      "  --reps=N            repetitions of each timed benchmark; figures are medians (default 3)\n"
      "  --quick             tiny sizes and 1 rep: a smoke test of a few seconds\n"
      "  --events=N          lines of the main input (default 2000000)\n"
      "  --sqlite_events=N   the SQLite ledger reads only the first N lines (default: all); rates are compared\n"
      "  --state_events=N    state-size input at 1x; 10x continues the stream to 10*N (default 200000)\n"
      "  --publish_rows=N    rows of the published window (default 1000000)\n"
      "  --wide_rows=N       lines of \"wide\", each a new key of one window (default 1000000)\n"
      "  --lookups=N         point lookups per repetition, hits and as many misses (default 500000)\n"
      "  --windows=N         one-minute windows that \"windows\" seals and publishes (default 5000)\n"
      "  --commit_every=N    lines per transaction, snapsink and ledgers alike (default 10000, as snapsink ingest)\n"
      "  --id_events=N       id-only events of --benchmarks=ids (default 10000000; not in the default set)\n"
      "  --producers=N --dup_rate=F --gap_rate=F --hours=N --metrics=N --keys=N --seed=N   input shape\n"
      "  --tmpdir=DIR        where scratch files go (default $TMPDIR or /tmp)\n"
      "  --json=PATH         also write the results as one JSON object\n"
      "  --keep              keep the scratch directory\n"
      "  --read_root=DIR     \"read\" looks up the wide window of DIR (publish-root of a run kept with --keep,\n"
      "                      same --publish_rows and --seed) instead of making one: no setup, for profilers\n"
      "  --read_only=get|map \"read\" times only Reader::Get or only the unordered_map baseline (for perf stat)\n");
}

bool FlagValue(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

uint64_t ToU64(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') Die("bad value for " + flag + ": " + v);
  return x;
}

double ToDouble(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') Die("bad value for " + flag + ": " + v);
  return x;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  // --quick first, so explicit sizes given with it win.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      f.quick = true;
      f.reps = 1;
      f.events = 20000;
      f.state_events = 5000;
      f.publish_rows = 20000;
      f.wide_rows = 20000;
      f.lookups = 2000;
      f.windows = 50;
      f.write_events = 20000;
      f.write_single_events = 400;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    std::string v;
    // Accept "--flag value" as well as "--flag=value".
    std::string joined;
    if (std::strncmp(a, "--", 2) == 0 && std::strchr(a, '=') == nullptr && i + 1 < argc &&
        std::strcmp(a, "--quick") != 0 && std::strcmp(a, "--keep") != 0 && std::strcmp(a, "--help") != 0) {
      joined = std::string(a) + "=" + argv[++i];
      a = joined.c_str();
    }
    if (std::strcmp(a, "--quick") == 0) continue;
    if (std::strcmp(a, "--keep") == 0) {
      f.keep = true;
    } else if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      Usage();
      std::exit(0);
    } else if (FlagValue(a, "--benchmarks", &v)) {
      f.benchmarks.clear();
      std::stringstream ss(v);
      for (std::string b; std::getline(ss, b, ',');) {
        if (b.empty()) continue;
        if (b == "lmdb_ledger") b = "lmdb";
        if (std::find(std::begin(kAllBenchmarks), std::end(kAllBenchmarks), b) == std::end(kAllBenchmarks) &&
            std::find(std::begin(kOptInBenchmarks), std::end(kOptInBenchmarks), b) == std::end(kOptInBenchmarks)) {
          Die("unknown benchmark " + b + " (try --help)");
        }
        f.benchmarks.insert(b);
      }
    } else if (FlagValue(a, "--id_events", &v)) {
      f.id_events = ToU64("--id_events", v);
    } else if (FlagValue(a, "--reps", &v)) {
      f.reps = static_cast<int>(std::max<uint64_t>(1, ToU64("--reps", v)));
    } else if (FlagValue(a, "--events", &v)) {
      f.events = ToU64("--events", v);
    } else if (FlagValue(a, "--sqlite_events", &v)) {
      f.sqlite_events = ToU64("--sqlite_events", v);
    } else if (FlagValue(a, "--state_events", &v)) {
      f.state_events = ToU64("--state_events", v);
    } else if (FlagValue(a, "--publish_rows", &v)) {
      f.publish_rows = std::max<uint64_t>(1, ToU64("--publish_rows", v));
    } else if (FlagValue(a, "--wide_rows", &v)) {
      f.wide_rows = std::max<uint64_t>(1, ToU64("--wide_rows", v));
    } else if (FlagValue(a, "--commit_every", &v)) {
      f.commit_every = std::max<uint64_t>(1, ToU64("--commit_every", v));
    } else if (FlagValue(a, "--read_root", &v)) {
      f.read_root = v;
    } else if (FlagValue(a, "--read_only", &v)) {
      if (v != "get" && v != "map") Die("bad value for --read_only: " + v + " (get or map)");
      f.read_only = v;
    } else if (FlagValue(a, "--lookups", &v)) {
      f.lookups = ToU64("--lookups", v);
    } else if (FlagValue(a, "--windows", &v)) {
      f.windows = std::max<uint64_t>(1, ToU64("--windows", v));
    } else if (FlagValue(a, "--producers", &v)) {
      f.spec.producers = static_cast<int>(std::max<uint64_t>(1, ToU64("--producers", v)));
    } else if (FlagValue(a, "--dup_rate", &v)) {
      f.spec.duplicate_rate = ToDouble("--dup_rate", v);
    } else if (FlagValue(a, "--gap_rate", &v)) {
      f.spec.gap_rate = ToDouble("--gap_rate", v);
    } else if (FlagValue(a, "--hours", &v)) {
      f.spec.hours = static_cast<int>(std::max<uint64_t>(1, ToU64("--hours", v)));
    } else if (FlagValue(a, "--metrics", &v)) {
      f.spec.metrics = static_cast<int>(std::max<uint64_t>(1, ToU64("--metrics", v)));
    } else if (FlagValue(a, "--keys", &v)) {
      f.spec.keys = static_cast<int>(std::max<uint64_t>(1, ToU64("--keys", v)));
    } else if (FlagValue(a, "--seed", &v)) {
      f.spec.seed = ToU64("--seed", v);
    } else if (FlagValue(a, "--tmpdir", &v)) {
      f.tmpdir = v;
    } else if (FlagValue(a, "--json", &v)) {
      f.json_path = v;
    } else {
      Die(std::string("unknown flag ") + a + " (try --help)");
    }
  }
  if (f.tmpdir.empty()) {
    const char* t = std::getenv("TMPDIR");
    f.tmpdir = t && *t ? t : "/tmp";
  }
  return f;
}

// ---------------------------------------------------------------- environment

std::string ReadCpuInfo(const std::string& field) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string FsType(const std::string& path) {
  struct statfs s;
  if (::statfs(path.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53: return "ext2/3/4";
    case 0x58465342: return "xfs";
    case 0x01021994: return "tmpfs (fsync is free: durability costs are not measured)";
    case 0x9123683E: return "btrfs";
    case 0x794c7630: return "overlayfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(s.f_type));
      return buf;
    }
  }
}

constexpr bool kOptimized =
#if defined(__OPTIMIZE__)
    true;
#else
    false;
#endif

constexpr bool kAssertsOff =
#if defined(NDEBUG)
    true;
#else
    false;
#endif

// The On-Demand kernel is picked at compile time from the target flags (the
// engine is built with the same flags as this file).
#define SNAPSINK_BENCH_STR2(x) #x
#define SNAPSINK_BENCH_STR(x) SNAPSINK_BENCH_STR2(x)
constexpr const char* kSimdjsonKernel = SNAPSINK_BENCH_STR(SIMDJSON_BUILTIN_IMPLEMENTATION);

std::string BuildDescription() {
  if (kOptimized && kAssertsOff) return "optimized, NDEBUG (Release or RelWithDebInfo)";
  if (kOptimized) return "optimized, assertions ON (NDEBUG not defined)";
  return kAssertsOff ? "NOT optimized, NDEBUG" : "NOT optimized, assertions ON (Debug)";
}

void PrintEnvironment(const Flags& f, const std::string& work) {
  struct utsname u;
  ::uname(&u);
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::printf("snapsink_bench\n");
  std::printf("Date:        %s\n", date);
  std::printf("CPU:         %u x %s\n", std::thread::hardware_concurrency(), ReadCpuInfo("model name").c_str());
  std::printf("CPUCache:    %s\n", ReadCpuInfo("cache size").c_str());
  std::printf("Kernel:      %s %s\n", u.sysname, u.release);
  std::printf("Compiler:    %s\n", __VERSION__);
  std::printf("Build:       %s\n", BuildDescription().c_str());
  std::printf("Libraries:   simdjson %d.%d.%d (%s kernel), LMDB %d.%d.%d, SQLite %s, zstd %s\n",
              int{simdjson::SIMDJSON_VERSION_MAJOR}, int{simdjson::SIMDJSON_VERSION_MINOR}, int{simdjson::SIMDJSON_VERSION_REVISION},
              kSimdjsonKernel, MDB_VERSION_MAJOR, MDB_VERSION_MINOR,
              MDB_VERSION_PATCH, sqlite3_libversion(), ZSTD_versionString());
  std::printf("Scratch:     %s (%s)\n", work.c_str(), FsType(work).c_str());
  std::printf("Repetitions: %d (figures are medians; ratios are medians of per-repetition ratios)\n", f.reps);
  if (!kOptimized) std::printf("WARNING: Optimization is disabled: benchmarks unnecessarily slow\n");
  if (!kAssertsOff) std::printf("WARNING: Assertions are enabled; benchmarks unnecessarily slow\n");
  if (std::strcmp(kSimdjsonKernel, "fallback") == 0) {
    std::printf("WARNING: simdjson uses its portable fallback kernel; parsing unnecessarily slow\n");
  }
  double load = 0;
  if (std::FILE* la = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(la, "%lf", &load) != 1) load = 0;
    std::fclose(la);
  }
  std::printf("Load:        %.2f (1-minute load average at start)\n", load);
  if (load > 0.5 * std::thread::hardware_concurrency()) {
    std::printf("WARNING: the machine is busy (load %.2f on %u cores): figures are noisy; compare ratios, not rates\n",
                load, std::thread::hardware_concurrency());
  }
  if (f.quick) std::printf("NOTE: --quick: tiny sizes, a smoke test; the figures mean little\n");
  std::printf("\n");
}

// ---------------------------------------------------------------- results

// Per-repetition samples of one figure.
using Samples = std::vector<double>;

Samples Ratio(const Samples& a, const Samples& b) {
  Samples out;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) out.push_back(b[i] > 0 ? a[i] / b[i] : 0);
  return out;
}

struct TableRow {
  std::string name, items, time, rate, note;
  std::string cpu = "";  // TimeSplit::Percentages, where measured
};

class Report {
 public:
  void Row(TableRow r) { rows_.push_back(std::move(r)); }
  void Num(const std::string& key, double v) {
    char buf[64];
    if (v == static_cast<double>(static_cast<int64_t>(v)) && std::abs(v) < 1e15) {
      std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(v));
    } else {
      std::snprintf(buf, sizeof buf, "%.6g", v);
    }
    json_.emplace_back(key, buf);
    nums_[key] = v;
  }
  std::optional<double> Get(const std::string& key) const {
    auto it = nums_.find(key);
    return it == nums_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  void Str(const std::string& key, const std::string& v) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q.push_back('\\');
      if (static_cast<unsigned char>(c) >= 0x20) q.push_back(c);
    }
    json_.emplace_back(key, q + "\"");
  }
  void Array(const std::string& key, const Samples& s) {
    std::string a = "[";
    for (size_t i = 0; i < s.size(); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%.6g", i ? "," : "", s[i]);
      a += buf;
    }
    json_.emplace_back(key, a + "]");
  }
  void Note(const std::string& n) { notes_.push_back(n); }

  void PrintTable() const {
    const char* head[6] = {"benchmark", "items", "median s", "cpu/queued/blocked %", "rate", "notes"};
    size_t w[5] = {std::strlen(head[0]), std::strlen(head[1]), std::strlen(head[2]), std::strlen(head[3]),
                   std::strlen(head[4])};
    for (const TableRow& r : rows_) {
      w[0] = std::max(w[0], r.name.size());
      w[1] = std::max(w[1], r.items.size());
      w[2] = std::max(w[2], r.time.size());
      w[3] = std::max(w[3], r.cpu.size());
      w[4] = std::max(w[4], r.rate.size());
    }
    auto line = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                    const std::string& e, const std::string& g) {
      std::printf("%-*s  %*s  %*s  %*s  %-*s  %s\n", static_cast<int>(w[0]), a.c_str(), static_cast<int>(w[1]),
                  b.c_str(), static_cast<int>(w[2]), c.c_str(), static_cast<int>(w[3]), d.c_str(),
                  static_cast<int>(w[4]), e.c_str(), g.c_str());
    };
    line(head[0], head[1], head[2], head[3], head[4], head[5]);
    line(std::string(w[0], '-'), std::string(w[1], '-'), std::string(w[2], '-'), std::string(w[3], '-'),
         std::string(w[4], '-'), "-----");
    for (const TableRow& r : rows_) line(r.name, r.items, r.time, r.cpu, r.rate, r.note);
    if (!notes_.empty()) std::printf("\n");
    for (const std::string& n : notes_) std::printf("%s\n", n.c_str());
  }

  void WriteJson(const std::string& path) const {
    std::string out = "{";
    for (size_t i = 0; i < json_.size(); ++i) {
      out += (i ? ",\n  \"" : "\n  \"") + json_[i].first + "\": " + json_[i].second;
    }
    out += "\n}\n";
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr || std::fwrite(out.data(), 1, out.size(), f) != out.size() || std::fclose(f) != 0) {
      Die("cannot write " + path);
    }
  }

 private:
  std::vector<TableRow> rows_;
  std::vector<std::pair<std::string, std::string>> json_;
  std::vector<std::string> notes_;
  std::map<std::string, double> nums_;
};

// Items per CPU-second of each repetition.
Samples CpuRates(const std::vector<TimeSplit>& t, uint64_t items) {
  Samples out;
  for (const TimeSplit& x : t) out.push_back(x.cpu > 0 ? static_cast<double>(items) / x.cpu : 0);
  return out;
}

// Items per second of the busier thread (TimeSplit::critical_cpu).
Samples CriticalCpuRates(const std::vector<TimeSplit>& t, uint64_t items) {
  Samples r;
  for (const TimeSplit& s : t) r.push_back(s.critical_cpu() > 0 ? static_cast<double>(items) / s.critical_cpu() : 0);
  return r;
}

std::string Mark(bool ok) { return ok ? "ok" : "MISSED"; }

// The lead's targets, checked against this run's figures.
// With --quick the sizes are tiny and the machine may be busy: the targets
// are shown, but the smoke test checks that every benchmark runs, not speed.
void PrintTargets(const Report& rep, bool quick) {
  struct Target {
    const char* key;
    bool at_least;
    double bound;
    const char* text;
  };
  const Target targets[] = {
      {"ratio_vs_parse", true, 1.0, "ingest >= 1.0x parse"},
      {"ratio_vs_sqlite", true, 20, "ingest >= 20x sqlite ledger"},
      {"wide_ratio_vs_ingest", true, 0.5, "1M-key window >= 0.5x ingest"},
      {"publish_ratio_vs_zstd_write", false, 2, "publish <= 2x zstd+write"},
      {"lookups_per_s", true, 1e6, "point lookups >= 1 M/s"},
      {"absent_lookups_per_s", true, 2e6, "absent lookups >= 2 M/s"},
      {"lookups_per_cpu_s", true, 1e6, "lookups >= 1 M per CPU-s"},
      {"absent_lookups_per_cpu_s", true, 2e6, "absent >= 2 M per CPU-s"},
      {"windows_ratio_vs_write_fsync", false, 2, "5000 windows <= 2x write+fsync"},
      {"write_ratio_vs_ingest", true, 0.9, "Write >= 0.9x file ingest"},
      {"group_commit_ratio", true, 5, "8-thread Writes >= 5x 1 thread"},
      {"parts_time_ratio", false, 2, "publish into 100k windows <= 2x into 100 (time)"},
      {"parts_bytes_ratio", false, 2, "publish into 100k windows <= 2x into 100 (bytes)"},
      {"parts_point_read_bytes", false, 65536, "point read <= 64 KB of manifests"},
      {"kinds_quantiles_ingest_ratio_vs_sum", true, 0.5, "quantiles ingest >= 0.5x sum"},
      {"kinds_rollup_ratio_vs_sum", false, 2, "1-day quantiles roll-up <= 2x sum"},
      {"kinds_distinct_ingest_ratio_vs_sum", true, 0.5, "distinct ingest >= 0.5x sum"},
      {"kinds_distinct_rollup_ratio_vs_sum", false, 2, "1-day distinct roll-up <= 2x sum"},
  };
  bool any = false;
  for (const Target& t : targets) {
    const std::optional<double> v = rep.Get(t.key);
    if (!v) continue;
    if (!any) {
      std::printf("\ntargets (wall-clock ratio; by CPU time in brackets):\n");
      if (quick) {
        std::printf("  --quick: informational only. The smoke test checks that every benchmark runs, not how fast;\n"
                    "  tiny sizes on a shared machine can miss a target (MISSED) and still PASS. Measure without\n"
                    "  --quick on an idle machine to judge a target.\n");
      }
    }
    any = true;
    const std::optional<double> cpu = rep.Get(std::string(t.key) + "_cpu");
    auto ok = [&](double x) { return t.at_least ? x >= t.bound : x <= t.bound; };
    std::printf("  %-28s %-28s %7.2f %-7s", t.text, t.key, *v, Mark(ok(*v)).c_str());
    if (cpu) std::printf(" (%.2f %s)", *cpu, Mark(ok(*cpu)).c_str());
    std::printf("\n");
  }
}

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Count(uint64_t v) { return std::to_string(v); }

std::string Rate(double per_s, const char* unit) { return HumanCount(per_s) + " " + unit + "/s"; }

// "; wrote 12.3 MB (61 B/item)": the median bytes written per repetition.
std::string Written(const std::vector<TimeSplit>& t, uint64_t items) {
  Samples w;
  for (const TimeSplit& x : t) w.push_back(static_cast<double>(x.written));
  const double m = Median(w);
  if (m <= 0) return "";
  return "; wrote " + HumanBytes(m) + Fmt(" (%.0f B/item)", m / static_cast<double>(std::max<uint64_t>(items, 1)));
}


// ---------------------------------------------------------------- snapsink

// As `snapsink seal ROOT --all` then `snapsink publish ROOT` do it: every
// window with changes sealed, then one publish.
PublishResult SealAndPublishAll(Root* rt) {
  std::vector<int64_t> dirty;
  CheckOk(DirtyWindows(rt->store(), rt->config(), /*all=*/true, &dirty), "dirty windows");
  SealTarget target{rt->env(), rt->path(), rt->store(), rt->config().window_ms};
  std::vector<SealedWindow> sealed;
  CheckOk(SealWindows(target, dirty, &sealed), "seal");
  PublishResult result;
  CheckOk(PublishStaged(rt->env(), rt->path(), rt->store(), rt->config(), &result), "publish");
  return result;
}

struct IngestRun {
  SourceState state;
  double seconds = 0;
  TimeSplit split;
};

// As `snapsink ingest ROOT FILE --source SOURCE` does it; timed from opening
// the root to the last commit.
IngestRun IngestFile(const std::string& root_path, const std::string& file, const std::string& source,
                     uint64_t commit_every, bool parse_ahead = true) {
  IngestRun r;
  Stopwatch sw;
  std::unique_ptr<Root> root;
  CheckOk(Root::Open(Env::Default(), root_path, Root::Access::kWriter, &root), "open " + root_path);
  Ingester ingester(root->env(), root->store(), root->config());
  IngestOptions opt;
  opt.path = file;
  opt.source = source;
  opt.commit_every = commit_every;
  opt.parse_ahead = parse_ahead;
  opt.rejects_file = filenames::RejectsFile(root->path(), opt.source);
  CheckOk(ingester.Run(opt, &r.state), "ingest " + file);
  r.seconds = sw.Seconds();
  r.split = sw.Split();
  return r;
}

void InitRoot(const std::string& path) {
  CheckOk(Root::Init(Env::Default(), path, RootConfig()), "init " + path);  // 1h windows, lateness one window
}

// ---------------------------------------------------------------- benchmarks

struct Input {
  std::string path;
  StreamStats stats;
  uint64_t expected_applied = 0;
};

Input MakeMainInput(const Flags& f, const std::string& work) {
  Input in;
  in.path = work + "/events.ndjson";
  Stopwatch sw;
  EventStream stream(f.spec);
  in.stats = stream.Write(in.path, f.events);
  in.expected_applied = stream.expected_applied();
  const StreamStats& s = in.stats;
  std::printf(
      "Input:       %" PRIu64 " lines, %s (avg %.0f B/line), %d producers, %d h of 1h windows, %d metrics x %d keys\n"
      "             %.1f%% redeliveries, %" PRIu64 " seqs skipped (%" PRIu64 " filled later), seed %" PRIu64
      "; generated in %.2f s\n\n",
      s.lines, HumanBytes(static_cast<double>(s.bytes)).c_str(),
      s.lines ? static_cast<double>(s.bytes) / static_cast<double>(s.lines) : 0.0, f.spec.producers, f.spec.hours,
      f.spec.metrics, f.spec.keys, s.lines ? 100.0 * static_cast<double>(s.duplicates) / static_cast<double>(s.lines) : 0.0,
      s.skipped, s.gap_fills, f.spec.seed, sw.Seconds());
  std::fflush(stdout);
  return in;
}

void Progress(const std::string& what) {
  std::fprintf(stderr, "... %s\n", what.c_str());
}

// What the ingest family measured: rates per rep, each with its time split.
struct IngestFamily {
  Samples parse, ingest, ingest1, wide, sqlite, lmdb;
  std::vector<TimeSplit> parse_t, ingest_t, ingest1_t, wide_t, sqlite_t, lmdb_t;
  uint64_t sqlite_lines = 0, applied_ingest = 0, applied_lmdb = 0, applied_sqlite = 0, parse_rejected = 0;
};

// parse, ingest, sqlite and lmdb on the main input, rep by rep.
IngestFamily MeasureIngestFamily(const Flags& f, const std::string& work, const Input& in) {
  IngestFamily fam;
  auto& [parse, ingest, ingest1, wide, sqlite, lmdb, parse_t, ingest_t, ingest1_t, wide_t, sqlite_t, lmdb_t,
         sqlite_lines, applied_ingest, applied_lmdb, applied_sqlite, parse_rejected] = fam;
  std::string wide_file;
  if (f.Has("wide")) {
    wide_file = work + "/wide-ingest.ndjson";
    WriteWideWindow(wide_file, f.wide_rows, f.spec.start_ms);
  }
  for (int r = 0; r < f.reps; ++r) {
    const std::string tag = " (rep " + std::to_string(r + 1) + "/" + std::to_string(f.reps) + ")";
    if (f.Has("parse")) {
      Progress("parse" + tag);
      Stopwatch sw;
      const PassResult p = ParseLimit(in.path);
      parse.push_back(static_cast<double>(p.lines) / sw.Seconds());
      parse_t.push_back(sw.Split());
      parse_rejected = p.rejected;
      g_sink = g_sink + p.checksum;
    }
    if (f.Has("ingest")) {
      Progress("ingest" + tag);
      const std::string root = work + "/ingest-root";
      RemoveTree(root);
      InitRoot(root);
      const IngestRun run = IngestFile(root, in.path, "events", f.commit_every);
      ingest.push_back(static_cast<double>(run.state.lines) / run.seconds);
      ingest_t.push_back(run.split);
      applied_ingest = run.state.applied;
      RemoveTree(root);
    }
    if (f.Has("ingest1")) {
      Progress("ingest, one thread" + tag);
      const std::string root = work + "/ingest1-root";
      RemoveTree(root);
      InitRoot(root);
      const IngestRun run = IngestFile(root, in.path, "events", f.commit_every, /*parse_ahead=*/false);
      ingest1.push_back(static_cast<double>(run.state.lines) / run.seconds);
      ingest1_t.push_back(run.split);
      if (applied_ingest != 0 && run.state.applied != applied_ingest) Die("ingest1 applied a different count");
      RemoveTree(root);
    }
    if (f.Has("wide")) {
      Progress("ingest wide" + tag);
      const std::string root = work + "/wide-root";
      RemoveTree(root);
      InitRoot(root);
      const IngestRun run = IngestFile(root, wide_file, "wide", f.commit_every);
      if (run.state.applied != f.wide_rows) Die("wide: applied " + Count(run.state.applied) + " of " + Count(f.wide_rows));
      wide.push_back(static_cast<double>(run.state.lines) / run.seconds);
      wide_t.push_back(run.split);
      RemoveTree(root);
    }
    if (f.Has("sqlite")) {
      Progress("sqlite ledger" + tag);
      const std::string dir = work + "/sqlite";
      RemoveTree(dir);
      MakeDir(dir);
      {
        SqliteLedger db(dir);
        Stopwatch sw;
        const PassResult p = db.Ingest(LedgerRun{in.path, "events", f.sqlite_events, f.commit_every});
        sqlite.push_back(static_cast<double>(p.lines) / sw.Seconds());
        sqlite_t.push_back(sw.Split());
        sqlite_lines = p.lines;
        applied_sqlite = p.applied;
      }
      RemoveTree(dir);
    }
    if (f.Has("lmdb")) {
      Progress("lmdb ledger" + tag);
      const std::string dir = work + "/lmdb-ledger";
      RemoveTree(dir);
      MakeDir(dir);
      {
        LmdbLedger db(dir);
        Stopwatch sw;
        const PassResult p = db.Ingest(LedgerRun{in.path, "events", 0, f.commit_every});
        lmdb.push_back(static_cast<double>(p.lines) / sw.Seconds());
        lmdb_t.push_back(sw.Split());
        applied_lmdb = p.applied;
      }
      RemoveTree(dir);
    }
  }
  return fam;
}

void RunIngestFamily(const Flags& f, const std::string& work, Report* rep) {
  const Input in = MakeMainInput(f, work);
  const double mb = static_cast<double>(in.stats.bytes) / 1e6;
  const IngestFamily fam = MeasureIngestFamily(f, work, in);
  const auto& [parse, ingest, ingest1, wide, sqlite, lmdb, parse_t, ingest_t, ingest1_t, wide_t, sqlite_t, lmdb_t,
               sqlite_lines, applied_ingest, applied_lmdb, applied_sqlite, parse_rejected] = fam;
  const uint64_t lines = in.stats.lines;
  auto row = [&](const std::string& name, uint64_t n, const Samples& s, const std::vector<TimeSplit>& t,
                 const std::string& note) {
    const double m = Median(s);
    rep->Row({name, Count(n), Fmt("%.3f", m > 0 ? static_cast<double>(n) / m : 0),
              Rate(m, "lines") + Fmt(" %6.1f MB/s", m * mb / static_cast<double>(std::max<uint64_t>(lines, 1))),
              note + Written(t, n), MedianPercentages(t)});
  };
  rep->Num("events", static_cast<double>(lines));
  rep->Num("input_bytes", static_cast<double>(in.stats.bytes));
  rep->Num("input_duplicates", static_cast<double>(in.stats.duplicates));
  rep->Num("expected_applied", static_cast<double>(in.expected_applied));
  if (!parse.empty()) {
    row("parse", lines, parse, parse_t, "read+split+EventParser::Parse, the limit" +
                                   (parse_rejected ? " (" + Count(parse_rejected) + " REJECTED)" : std::string()));
    rep->Num("parse_events_per_s", Median(parse));
    rep->Array("parse_events_per_s_reps", parse);
  }
  if (!ingest.empty()) {
    std::string note = "Root::Open + Ingester::Run, commit every " + Count(f.commit_every);
    if (!parse.empty()) {
      note += Fmt(", %.2fx parse", Median(Ratio(ingest, parse))) +
              Fmt(" (%.2fx by CPU time", Median(Ratio(CpuRates(ingest_t, lines), CpuRates(parse_t, lines)))) +
              Fmt(", %.2fx by the busier thread's)", Median(Ratio(CriticalCpuRates(ingest_t, lines), CpuRates(parse_t, lines))));
      rep->Num("ratio_vs_parse_critical_cpu", Median(Ratio(CriticalCpuRates(ingest_t, lines), CpuRates(parse_t, lines))));
    }
    if (!sqlite.empty()) note += Fmt(", %.1fx sqlite", Median(Ratio(ingest, sqlite)));
    if (!lmdb.empty()) note += Fmt(", %.2fx lmdb ledger", Median(Ratio(ingest, lmdb)));
    row("ingest", lines, ingest, ingest_t, note);
    Samples blocked;
    for (const TimeSplit& t : ingest_t) blocked.push_back(t.blocked() / t.wall);
    rep->Num("ingest_blocked_share", Median(blocked));
    rep->Num("ingest_events_per_s", Median(ingest));
    rep->Array("ingest_events_per_s_reps", ingest);
    rep->Num("ingest_applied", static_cast<double>(applied_ingest));
    if (applied_ingest != in.expected_applied) {
      rep->Note(Fmt("WARNING: snapsink applied %.0f events, the generator sent ", static_cast<double>(applied_ingest)) +
                Count(in.expected_applied) + " distinct ones");
    }
  }
  if (!ingest1.empty()) {
    std::string note = "as ingest, parsing on the same thread (IngestOptions::parse_ahead off)";
    if (!parse.empty()) note += Fmt(", %.2fx parse", Median(Ratio(ingest1, parse)));
    if (!ingest.empty()) {
      note += Fmt("; ingest is %.2fx this", Median(Ratio(ingest, ingest1)));
      rep->Num("ratio_parse_ahead_vs_one_thread", Median(Ratio(ingest, ingest1)));
    }
    row("ingest_1thread", lines, ingest1, ingest1_t, note);
    rep->Num("ingest1_events_per_s", Median(ingest1));
    rep->Array("ingest1_events_per_s_reps", ingest1);
    if (!parse.empty()) rep->Num("ingest1_ratio_vs_parse", Median(Ratio(ingest1, parse)));
  }
  if (!wide.empty()) {
    std::string note = "Ingester::Run, every line a new (metric, key) of one window";
    if (!ingest.empty()) {
      note += Fmt(", %.2fx ingest per line", Median(Ratio(wide, ingest))) +
              Fmt(" (%.2fx by CPU time)", Median(Ratio(CpuRates(wide_t, f.wide_rows), CpuRates(ingest_t, lines))));
      rep->Num("wide_ratio_vs_ingest", Median(Ratio(wide, ingest)));
      rep->Num("wide_ratio_vs_ingest_cpu", Median(Ratio(CpuRates(wide_t, f.wide_rows), CpuRates(ingest_t, lines))));
      rep->Array("wide_ratio_vs_ingest_reps", Ratio(wide, ingest));
    }
    const double m = Median(wide);
    rep->Row({"ingest_wide", Count(f.wide_rows), Fmt("%.3f", m > 0 ? static_cast<double>(f.wide_rows) / m : 0),
              Rate(m, "lines"), note + Written(wide_t, f.wide_rows), MedianPercentages(wide_t)});
    rep->Num("wide_events", static_cast<double>(f.wide_rows));
    Samples written;
    for (const TimeSplit& t : wide_t) written.push_back(static_cast<double>(t.written) / static_cast<double>(f.wide_rows));
    rep->Num("wide_written_per_line", Median(written));
    rep->Num("wide_events_per_s", m);
    rep->Array("wide_events_per_s_reps", wide);
  }
  if (!sqlite.empty()) {
    std::string note = "WAL, synchronous=NORMAL (commits not fsynced), INSERT OR IGNORE + upsert";
    if (sqlite_lines < lines) note += "; first " + Count(sqlite_lines) + " lines only: compare rates";
    row("sqlite_ledger", sqlite_lines, sqlite, sqlite_t, note);
    rep->Num("sqlite_events_per_s", Median(sqlite));
    rep->Array("sqlite_events_per_s_reps", sqlite);
    rep->Num("sqlite_events", static_cast<double>(sqlite_lines));
  }
  if (!lmdb.empty()) {
    row("lmdb_ledger", lines, lmdb, lmdb_t, "key per event, MDB_NOOVERWRITE, agg get+put, fsync per commit");
    rep->Num("lmdb_ledger_events_per_s", Median(lmdb));
    rep->Array("lmdb_ledger_events_per_s_reps", lmdb);
    if (applied_ingest != 0 && applied_lmdb != applied_ingest) {
      rep->Note("WARNING: lmdb ledger applied " + Count(applied_lmdb) + " events, snapsink " + Count(applied_ingest));
    }
  }
  // Ratios pair rep i with rep i. The _cpu variants compare lines per
  // CPU-second instead of per wall-second: robust to other load on the
  // machine, blind to time spent blocked (fsync).
  auto ratios = [&](const std::string& name, const Samples& other, const std::vector<TimeSplit>& other_t,
                    uint64_t other_lines) {
    if (ingest.empty() || other.empty()) return;
    rep->Num("ratio_vs_" + name, Median(Ratio(ingest, other)));
    rep->Num("ratio_vs_" + name + "_cpu", Median(Ratio(CpuRates(ingest_t, lines), CpuRates(other_t, other_lines))));
  };
  ratios("parse", parse, parse_t, lines);
  ratios("sqlite", sqlite, sqlite_t, sqlite_lines);
  ratios("lmdb_ledger", lmdb, lmdb_t, lines);
  if (!ingest.empty() && !lmdb.empty() && applied_lmdb == applied_ingest) {
    std::string check = "check: snapsink and the lmdb ledger applied the same " + Count(applied_ingest) + " events";
    if (!sqlite.empty() && sqlite_lines == lines) check += ", as did sqlite (" + Count(applied_sqlite) + ")";
    rep->Note(check);
  }
}

// On-disk size of the three designs after 1x and 10x of a stream with the same producers.
void RunStateSize(const Flags& f, const std::string& work, Report* rep) {
  Progress("state size: generating input");
  EventStream stream(f.spec);
  const std::string f1 = work + "/state-1x.ndjson", f2 = work + "/state-10x-rest.ndjson";
  const StreamStats s1 = stream.Write(f1, f.state_events);
  const StreamStats s2 = stream.Write(f2, f.state_events * 9);
  const std::string root = work + "/state-root";
  InitRoot(root);
  const std::string state_dir = filenames::StateDir(root);
  struct Sizes {
    LmdbSpace ours, lmdb;
    uint64_t sqlite = 0;
  } at[2];
  double ingest_s[2] = {0, 0}, sqlite_s[2] = {0, 0}, lmdb_s[2] = {0, 0};
  const std::string sqlite_dir = work + "/state-sqlite", lmdb_dir = work + "/state-lmdb";
  MakeDir(sqlite_dir);
  MakeDir(lmdb_dir);
  SqliteLedger sqlite(sqlite_dir);
  LmdbLedger lmdb(lmdb_dir);
  const std::string files[2] = {f1, f2};
  for (int i = 0; i < 2; ++i) {
    Progress(std::string("state size: ") + (i == 0 ? "1x" : "10x"));
    ingest_s[i] = IngestFile(root, files[i], files[i], f.commit_every).seconds;  // the Root is closed again here
    at[i].ours = MeasureLmdbDir(state_dir);
    Stopwatch sw;
    sqlite.Ingest(LedgerRun{files[i], files[i], 0, f.commit_every});
    sqlite_s[i] = sw.Seconds();
    at[i].sqlite = sqlite.DiskBytes();
    Stopwatch sw2;
    lmdb.Ingest(LedgerRun{files[i], files[i], 0, f.commit_every});
    lmdb_s[i] = sw2.Seconds();
    at[i].lmdb = lmdb.Space();
  }
  const uint64_t n1 = s1.lines, n10 = s1.lines + s2.lines;
  auto growth = [](double a, double b) { return a > 0 ? b / a : 0; };
  auto row = [&](const std::string& name, uint64_t b1, uint64_t b10, const std::string& how) {
    rep->Row({name, Count(n1) + " -> " + Count(n10), "",
              HumanBytes(static_cast<double>(b1)) + " -> " + HumanBytes(static_cast<double>(b10)),
              Fmt("x%.2f; ", growth(static_cast<double>(b1), static_cast<double>(b10))) + how});
  };
  row("state_snapsink", at[0].ours.used_bytes, at[1].ours.used_bytes,
      "state/data.mdb (me_last_pgno+1)*psize; live B-tree pages " + HumanBytes(static_cast<double>(at[0].ours.live_bytes)) +
          " -> " + HumanBytes(static_cast<double>(at[1].ours.live_bytes)));
  row("state_sqlite", at[0].sqlite, at[1].sqlite, "ledger.sqlite + -wal file sizes");
  row("state_lmdb_ledger", at[0].lmdb.used_bytes, at[1].lmdb.used_bytes,
      "(me_last_pgno+1)*psize; " + Count(at[0].lmdb.entries) + " -> " + Count(at[1].lmdb.entries) + " records");
  rep->Note("state: the 10x input continues the 1x stream (same " + std::to_string(f.spec.producers) +
            " producers, seqs go on) over the same " + std::to_string(f.spec.hours) +
            " h of windows, so the aggregate count is the same at 1x and 10x.");
  rep->Note("state: rates on the 9x continuation: snapsink " + Rate(static_cast<double>(s2.lines) / ingest_s[1], "lines") +
            ", sqlite " + Rate(static_cast<double>(s2.lines) / sqlite_s[1], "lines") + ", lmdb ledger " +
            Rate(static_cast<double>(s2.lines) / lmdb_s[1], "lines"));
  rep->Num("state_events_1x", static_cast<double>(n1));
  rep->Num("state_events_10x", static_cast<double>(n10));
  rep->Num("state_bytes_1x", static_cast<double>(at[0].ours.used_bytes));
  rep->Num("state_bytes_10x", static_cast<double>(at[1].ours.used_bytes));
  rep->Num("state_live_bytes_1x", static_cast<double>(at[0].ours.live_bytes));
  rep->Num("state_live_bytes_10x", static_cast<double>(at[1].ours.live_bytes));
  rep->Num("state_file_bytes_10x", static_cast<double>(at[1].ours.file_bytes));
  rep->Num("sqlite_state_bytes_1x", static_cast<double>(at[0].sqlite));
  rep->Num("sqlite_state_bytes_10x", static_cast<double>(at[1].sqlite));
  rep->Num("lmdb_ledger_state_bytes_1x", static_cast<double>(at[0].lmdb.used_bytes));
  rep->Num("lmdb_ledger_state_bytes_10x", static_cast<double>(at[1].lmdb.used_bytes));
  rep->Num("state_10x_ingest_events_per_s", static_cast<double>(s2.lines) / ingest_s[1]);
  rep->Num("state_10x_sqlite_events_per_s", static_cast<double>(s2.lines) / sqlite_s[1]);
  rep->Num("state_10x_lmdb_ledger_events_per_s", static_cast<double>(s2.lines) / lmdb_s[1]);
}

// The root holding one wide window, shared by publish and read.
struct WideRoot {
  std::string root;
  int64_t window_ms = 0;
  uint64_t rows = 0;
  uint64_t extra_seq = 0;  // next producer seq for WideWindowExtraLine
};

WideRoot MakeWideRoot(const Flags& f, const std::string& work, Report* rep) {
  WideRoot w;
  w.root = work + "/publish-root";
  w.window_ms = f.spec.start_ms;
  w.rows = f.publish_rows;
  w.extra_seq = f.publish_rows;
  InitRoot(w.root);
  const std::string file = work + "/wide.ndjson";
  Progress("publish: generating and ingesting " + Count(w.rows) + " rows (not timed as publish)");
  const StreamStats st = WriteWideWindow(file, w.rows, w.window_ms);
  const IngestRun run = IngestFile(w.root, file, "wide", f.commit_every);
  if (run.state.applied != w.rows) Die("wide window: applied " + Count(run.state.applied) + " of " + Count(w.rows));
  rep->Row({"ingest_wide", Count(st.lines), Fmt("%.3f", run.seconds),
            Rate(static_cast<double>(st.lines) / run.seconds, "lines"),
            "setup of publish: every line a new (metric, key) in one window" + Written({run.split}, st.lines),
            run.split.Percentages()});
  rep->Num("ingest_wide_events_per_s", static_cast<double>(st.lines) / run.seconds);
  RemoveTree(file);
  return w;
}

struct PublishTimes {
  double seal = 0, publish = 0;
  TimeSplit split;  // of both
};

// DirtyWindows(all) + SealWindows + PublishStaged, as `snapsink seal --all && snapsink publish`.
PublishTimes SealAndPublish(const WideRoot& w) {
  PublishTimes t;
  std::unique_ptr<Root> root;
  CheckOk(Root::Open(Env::Default(), w.root, Root::Access::kWriter, &root), "open " + w.root);
  Stopwatch sw;
  std::vector<int64_t> windows;
  CheckOk(DirtyWindows(root->store(), root->config(), /*all=*/true, &windows), "dirty windows");
  SealTarget target{root->env(), root->path(), root->store(), root->config().window_ms};
  std::vector<SealedWindow> sealed;
  CheckOk(SealWindows(target, windows, &sealed), "seal");
  if (sealed.size() != 1) Die("expected one sealed window, got " + Count(sealed.size()));
  t.seal = sw.Seconds();
  Stopwatch sw2;
  PublishResult result;
  CheckOk(PublishStaged(root->env(), root->path(), root->store(), root->config(), &result), "publish");
  if (result.windows != 1) Die("expected one published window");
  t.publish = sw2.Seconds();
  t.split = sw.Split();
  return t;
}

std::string PublishedDataFile(const WideRoot& w) {
  std::unique_ptr<Reader> reader;
  CheckOk(Reader::Open(Env::Default(), w.root, 0, &reader), "reader");
  const GenerationEntry* e = reader->Find(w.window_ms);
  if (e == nullptr) Die("published window missing");
  return filenames::Join(filenames::SnapshotDir(w.root, w.window_ms, e->version), filenames::kDataFile);
}

void RunPublish(const Flags& f, const std::string& work, WideRoot* w, Report* rep) {
  Samples total, seal, publish, zstd;
  std::vector<TimeSplit> total_t, zstd_t;
  std::vector<Row> rows;
  uint64_t snapshot_bytes = 0;
  ZstdWriteResult z;
  for (int r = 0; r < f.reps; ++r) {
    Progress("publish (rep " + std::to_string(r + 1) + "/" + std::to_string(f.reps) + ")");
    if (r > 0) {  // one more event makes the window dirty: the next seal rewrites all its rows
      const std::string extra = work + "/wide-extra.ndjson";
      std::FILE* fp = std::fopen(extra.c_str(), "w");
      const std::string line = WideWindowExtraLine(w->extra_seq++, w->rows, w->window_ms);
      if (fp == nullptr || std::fwrite(line.data(), 1, line.size(), fp) != line.size() || std::fclose(fp) != 0) {
        Die("cannot write " + extra);
      }
      IngestFile(w->root, extra, "wide-extra-" + std::to_string(r), f.commit_every);
    }
    const PublishTimes t = SealAndPublish(*w);
    seal.push_back(t.seal);
    publish.push_back(t.publish);
    total.push_back(t.seal + t.publish);
    total_t.push_back(t.split);
    const std::string data = PublishedDataFile(*w);
    snapshot_bytes = FileSize(data);
    if (rows.empty()) {  // the baseline's rows: read back from the sealed snapshot (not timed)
      std::unique_ptr<SnapshotReader> sr;
      CheckOk(SnapshotReader::Open(Env::Default(), data, &sr), "open snapshot");
      rows.reserve(sr->rows());
      CheckOk(sr->Scan(nullptr, [&](const Row& row) { rows.push_back(row); }), "scan snapshot");
    }
    Stopwatch sw;
    z = ZstdWriteRows(rows, work + "/zstd-baseline.bin", 3);
    zstd.push_back(sw.Seconds());
    zstd_t.push_back(sw.Split());
  }
  const Samples ratio = Ratio(total, zstd);
  Samples total_cpu, zstd_cpu;
  for (const TimeSplit& t : total_t) total_cpu.push_back(t.cpu);
  for (const TimeSplit& t : zstd_t) zstd_cpu.push_back(t.cpu);
  const Samples cpu_ratio = Ratio(total_cpu, zstd_cpu);
  rep->Row({"publish", Count(w->rows), Fmt("%.3f", Median(total)), Rate(static_cast<double>(w->rows) / Median(total), "rows"),
            Fmt("SealWindows %.3f s + PublishStaged ", Median(seal)) + Fmt("%.3f s", Median(publish)) +
                Fmt("; %.2fx zstd+write", Median(ratio)) + Fmt(" (%.2fx by CPU time)", Median(cpu_ratio)) + "; data file " + HumanBytes(static_cast<double>(snapshot_bytes)) +
                Written(total_t, w->rows),
            MedianPercentages(total_t)});
  rep->Row({"zstd_write", Count(rows.size()), Fmt("%.3f", Median(zstd)), Rate(static_cast<double>(rows.size()) / Median(zstd), "rows"),
            "same row bytes (" + HumanBytes(static_cast<double>(z.raw_bytes)) + "), 64 KiB blocks, zstd -3, write+fdatasync -> " +
                HumanBytes(static_cast<double>(z.file_bytes)),
            MedianPercentages(zstd_t)});
  rep->Num("publish_rows", static_cast<double>(w->rows));
  rep->Num("publish_seconds", Median(total));
  rep->Num("seal_seconds", Median(seal));
  rep->Num("publish_staged_seconds", Median(publish));
  rep->Num("zstd_write_seconds", Median(zstd));
  rep->Num("publish_ratio_vs_zstd_write", Median(ratio));
  rep->Array("publish_ratio_vs_zstd_write_reps", ratio);
  rep->Num("publish_ratio_vs_zstd_write_cpu", Median(cpu_ratio));
  rep->Num("snapshot_data_bytes", static_cast<double>(snapshot_bytes));
  rep->Num("zstd_baseline_bytes", static_cast<double>(z.file_bytes));
  rep->Num("snapshot_raw_bytes", static_cast<double>(z.raw_bytes));
}

using LookupKeys = std::vector<std::pair<std::string, std::string>>;

// The lookup loops of "read", kept out of line so that a profiler can name
// the timed ones (kTimed 1; the warming passes are kTimed 0), e.g.
// valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*Gets<1>*'.
// Each returns a checksum of the rows; a failed lookup dies, and the message
// is built only then (building it per call would time an allocation too).
template <int kTimed>
[[gnu::noinline]] int64_t ReaderGets(Reader* reader, int64_t window_ms, const LookupKeys& keys, Row* row) {
  int64_t checksum = 0;
  for (const auto& [metric, key] : keys) {
    const Status s = reader->Get(window_ms, metric, key, row);
    if (!s.ok()) CheckOk(s, "get " + metric + "/" + key);
    checksum += row->count;
  }
  g_sink = g_sink + kTimed;  // the two instances must differ, or the linker folds them into one
  return checksum;
}

template <int kTimed>
[[gnu::noinline]] int64_t FileGets(const SnapshotReader& sr, const LookupKeys& keys, Row* row) {
  int64_t checksum = 0;
  for (const auto& [metric, key] : keys) {
    const Status s = sr.Get(metric, key, row);
    if (!s.ok()) CheckOk(s, "get " + metric + "/" + key);
    checksum += row->count;
  }
  g_sink = g_sink + kTimed;  // the two instances must differ, or the linker folds them into one
  return checksum;
}

template <int kTimed>
[[gnu::noinline]] int64_t MapGets(const std::unordered_map<std::string, Row>& memory, const LookupKeys& keys,
                                       Row* row) {
  int64_t checksum = 0;
  std::string probe;
  for (const auto& [metric, key] : keys) {
    probe.assign(metric).push_back('\0');
    probe.append(key);
    auto it = memory.find(probe);
    if (it == memory.end()) Die("memory baseline misses a key");
    *row = it->second;  // a copy, as Get fills a Row
    checksum += row->count;
  }
  g_sink = g_sink + kTimed;  // the two instances must differ, or the linker folds them into one
  return checksum;
}

// The rates RunRead measured, rep by rep, each with its time split.
struct ReadTimes {
  Samples lookups, absent, mem, scans, file_hashed, file_plain, api_lookups;
  std::vector<TimeSplit> lookups_t, absent_t, mem_t, file_hashed_t, file_plain_t, api_t;
};

// RunRead's rows and numbers, all lookups timed.
void ReportReads(const Flags& f, const WideRoot& w, const ReadTimes& times, const std::string& hashed_path,
                 const std::string& plain_path, Report* rep) {
  const auto& [lookups, absent, mem, scans, file_hashed, file_plain, api_lookups, lookups_t, absent_t, mem_t,
               file_hashed_t, file_plain_t, api_t] = times;
  // On a shared machine the wall-clock rate counts the time other processes
  // held the CPU; the rate per CPU-second of this thread does not.
  const Samples lookups_cpu = CpuRates(lookups_t, f.lookups), absent_cpu = CpuRates(absent_t, f.lookups),
                mem_cpu = CpuRates(mem_t, f.lookups);
  const Samples ratio = Ratio(lookups, mem), absent_ratio = Ratio(absent, mem);
  rep->Row({"read_get", Count(f.lookups), Fmt("%.3f", static_cast<double>(f.lookups) / Median(lookups)),
            Rate(Median(lookups), "lookups"),
            "Reader::Get, seeded random keys, all hits, warm; " + Rate(Median(lookups_cpu), "lookups") +
                " per CPU-s" + Fmt("; %.2fx unordered_map", Median(ratio)),
            MedianPercentages(lookups_t)});
  const Samples api_cpu = CpuRates(api_t, f.lookups);
  rep->Row({"api_read_get", Count(f.lookups), Fmt("%.3f", static_cast<double>(f.lookups) / Median(api_lookups)),
            Rate(Median(api_lookups), "lookups"),
            "api::Reader::Get, the same keys; " + Rate(Median(api_cpu), "lookups") + " per CPU-s" +
                Fmt("; %.2fx unordered_map", Median(Ratio(api_lookups, mem))) +
                Fmt(" (%.2fx by CPU time)", Median(Ratio(api_cpu, mem_cpu))),
            MedianPercentages(api_t)});
  rep->Row({"read_get_absent", Count(f.lookups), Fmt("%.3f", static_cast<double>(f.lookups) / Median(absent)),
            Rate(Median(absent), "lookups"),
            "Reader::Get of absent keys (filter); " + Rate(Median(absent_cpu), "lookups") + " per CPU-s" +
                Fmt("; %.2fx unordered_map hits", Median(absent_ratio)),
            MedianPercentages(absent_t)});
  rep->Row({"unordered_map_get", Count(f.lookups), Fmt("%.3f", static_cast<double>(f.lookups) / Median(mem)),
            Rate(Median(mem), "lookups"),
            "baseline: the same rows in a std::unordered_map, same keys, Row copied; " + Rate(Median(mem_cpu), "lookups") +
                " per CPU-s",
            MedianPercentages(mem_t)});
  const Samples file_hashed_cpu = CpuRates(file_hashed_t, f.lookups), file_plain_cpu = CpuRates(file_plain_t, f.lookups);
  const Samples hash_ratio = Ratio(file_hashed, file_plain), hash_ratio_cpu = Ratio(file_hashed_cpu, file_plain_cpu);
  rep->Row({"file_get_hash", Count(f.lookups), Fmt("%.3f", static_cast<double>(f.lookups) / Median(file_hashed)),
            Rate(Median(file_hashed), "lookups"),
            "SnapshotReader::Get, blocks with a hash index; " + Rate(Median(file_hashed_cpu), "lookups") + " per CPU-s" +
                Fmt("; %.2fx the file without it", Median(hash_ratio)) + Fmt(" (%.2fx per CPU-s)", Median(hash_ratio_cpu)),
            MedianPercentages(file_hashed_t)});
  rep->Row({"file_get_restarts", Count(f.lookups), Fmt("%.3f", static_cast<double>(f.lookups) / Median(file_plain)),
            Rate(Median(file_plain), "lookups"),
            "the same, blocks without the index (lookups probe the cached block's row table either way); " + Rate(Median(file_plain_cpu), "lookups") +
                " per CPU-s",
            MedianPercentages(file_plain_t)});
  rep->Num("file_hash_lookups_per_s", Median(file_hashed));
  rep->Num("file_hash_lookups_per_cpu_s", Median(file_hashed_cpu));
  rep->Num("file_restart_lookups_per_s", Median(file_plain));
  rep->Num("file_restart_lookups_per_cpu_s", Median(file_plain_cpu));
  rep->Num("hash_index_ratio_vs_restarts", Median(hash_ratio));
  rep->Array("hash_index_ratio_vs_restarts_reps", hash_ratio);
  rep->Num("hash_index_ratio_vs_restarts_cpu", Median(hash_ratio_cpu));
  rep->Num("lookups_ratio_vs_unordered_map_cpu", Median(Ratio(lookups_cpu, mem_cpu)));
  rep->Num("lookups_per_cpu_s", Median(lookups_cpu));
  rep->Num("api_lookups_per_cpu_s", Median(api_cpu));
  rep->Num("api_lookups_ratio_vs_unordered_map_cpu", Median(Ratio(api_cpu, mem_cpu)));
  rep->Array("lookups_ratio_vs_unordered_map_cpu_reps", Ratio(lookups_cpu, mem_cpu));
  rep->Num("absent_lookups_per_cpu_s", Median(absent_cpu));
  rep->Num("unordered_map_lookups_per_cpu_s", Median(mem_cpu));
  rep->Row({"read_scan", Count(w.rows), Fmt("%.3f", static_cast<double>(w.rows) / Median(scans)),
            Rate(Median(scans), "rows"), "Reader::Scan of the whole window"});
  rep->Num("lookups_per_s", Median(lookups));
  rep->Num("absent_lookups_per_s", Median(absent));
  rep->Num("unordered_map_lookups_per_s", Median(mem));
  rep->Num("lookups_ratio_vs_unordered_map", Median(ratio));
  rep->Num("absent_lookups_ratio_vs_unordered_map", Median(absent_ratio));
  rep->Num("scan_rows_per_s", Median(scans));
  rep->Num("hash_index_file_bytes", static_cast<double>(FileSize(hashed_path)));
  rep->Num("restarts_only_file_bytes", static_cast<double>(FileSize(plain_path)));
  std::printf("hash index: data file %s with it, %s without (same rows)\n",
              HumanBytes(static_cast<double>(FileSize(hashed_path))).c_str(),
              HumanBytes(static_cast<double>(FileSize(plain_path))).c_str());
}

void RunRead(const Flags& f, const std::string& work, const WideRoot& w, Report* rep) {
  std::unique_ptr<Reader> reader;
  CheckOk(Reader::Open(Env::Default(), w.root, 0, &reader), "reader");
  const bool all = f.read_only.empty();
  const bool time_get = all || f.read_only == "get", time_map = all || f.read_only == "map";
  // The baseline: the same rows in a std::unordered_map, looked up by the
  // same (metric, key) strings: what an in-memory index costs.
  std::unordered_map<std::string, Row> memory;
  if (time_map) memory.reserve(w.rows);
  // The same rows in two snapshot files, with and without the blocks' hash
  // index, looked up through SnapshotReader in the same repetitions: what
  // the index buys over binary search of the restart points.
  const std::string hashed_path = work + "/read-hashed", plain_path = work + "/read-restarts";
  std::unique_ptr<SnapshotWriter> hashed_w, plain_w;
  SnapshotWriterOptions plain_options, hashed_options;
  plain_options.block_hash_index = false;  // the default since the hash index was measured not to pay
  hashed_options.block_hash_index = true;
  if (all) {
    CheckOk(SnapshotWriter::Open(Env::Default(), hashed_path, &hashed_w, hashed_options), "open " + hashed_path);
    CheckOk(SnapshotWriter::Open(Env::Default(), plain_path, &plain_w, plain_options), "open " + plain_path);
  }
  if (time_map || all) {
    CheckOk(reader->Scan(w.window_ms, nullptr,
                         [&](const Row& x) {
                           if (time_map) memory.emplace(x.metric + '\0' + x.key, x);
                           if (all) {
                             CheckOk(hashed_w->Add(x), "add");
                             CheckOk(plain_w->Add(x), "add");
                           }
                         }),
            "scan into memory");
  }
  std::unique_ptr<SnapshotReader> hashed, plain;
  if (all) {
    SnapshotFileInfo info;
    CheckOk(hashed_w->Finish(&info), "finish " + hashed_path);
    CheckOk(plain_w->Finish(&info), "finish " + plain_path);
    CheckOk(SnapshotReader::Open(Env::Default(), hashed_path, &hashed), "open " + hashed_path);
    CheckOk(SnapshotReader::Open(Env::Default(), plain_path, &plain), "open " + plain_path);
  }
  // The public api::Reader over the same root: what a user's lookup costs
  // (a Result<Row> with its own strings each call).
  auto api_reader = api::Reader::Open(w.root);
  CheckOk(api_reader.status(), "api reader");
  ReadTimes times;
  auto& [lookups, absent, mem, scans, file_hashed, file_plain, api_lookups, lookups_t, absent_t, mem_t, file_hashed_t,
         file_plain_t, api_t] = times;
  uint64_t scanned = 0;
  for (int r = 0; r < f.reps; ++r) {
    Progress("read (rep " + std::to_string(r + 1) + "/" + std::to_string(f.reps) + ")");
    Rng rng(f.spec.seed * 1000003 + static_cast<uint64_t>(r));
    LookupKeys keys, missing;
    keys.reserve(f.lookups);
    missing.reserve(f.lookups);
    for (uint64_t i = 0; i < f.lookups; ++i) {
      const uint64_t j = rng.Uniform(w.rows);
      keys.emplace_back(WideMetric(j), WideKey(j));
      missing.emplace_back(WideMetric(j), WideKey(j) + "x");  // no key of the window ends in x
    }
    Row row;
    int64_t checksum = 0;
    // Warm before every timed loop: the three files' blocks (about 51 MB
    // each at 1 M rows) do not fit the process's 64 MiB block cache together,
    // so the loop timed before this one has evicted most of this file's.
    if (time_get) {
      ReaderGets<0>(reader.get(), w.window_ms, keys, &row);
      Stopwatch sw;
      checksum += ReaderGets<1>(reader.get(), w.window_ms, keys, &row);
      lookups.push_back(static_cast<double>(keys.size()) / sw.Seconds());
      lookups_t.push_back(sw.Split());
    }
    if (all) {
      Stopwatch sw_api;
      for (const auto& [metric, key] : keys) {
        auto got = (*api_reader)->Get(w.window_ms, metric, key);
        if (!got.ok()) CheckOk(got.status(), "api get " + metric + "/" + key);
        checksum += got->count;
      }
      api_lookups.push_back(static_cast<double>(keys.size()) / sw_api.Seconds());
      api_t.push_back(sw_api.Split());
      Stopwatch sw_absent;
      uint64_t found = 0;
      for (const auto& [metric, key] : missing) found += reader->Get(w.window_ms, metric, key, &row).ok();
      absent.push_back(static_cast<double>(missing.size()) / sw_absent.Seconds());
      absent_t.push_back(sw_absent.Split());
      if (found != 0) Die("absent keys found");
    }
    if (time_map) {
      MapGets<0>(memory, keys, &row);  // warm, as the lookups above
      Stopwatch sw_mem;
      checksum += MapGets<1>(memory, keys, &row);
      mem.push_back(static_cast<double>(keys.size()) / sw_mem.Seconds());
      mem_t.push_back(sw_mem.Split());
    }
    for (SnapshotReader* sr : {hashed.get(), plain.get()}) {
      if (sr == nullptr) continue;
      FileGets<0>(*sr, keys, &row);  // warm
      Stopwatch sw_file;
      checksum += FileGets<1>(*sr, keys, &row);
      (sr == hashed.get() ? file_hashed : file_plain).push_back(static_cast<double>(keys.size()) / sw_file.Seconds());
      (sr == hashed.get() ? file_hashed_t : file_plain_t).push_back(sw_file.Split());
    }
    g_sink = g_sink + static_cast<uint64_t>(checksum);
    if (!all) continue;
    scanned = 0;
    Stopwatch sw2;
    CheckOk(reader->Scan(w.window_ms, nullptr, [&](const Row& x) { scanned += static_cast<uint64_t>(x.count > 0); }),
            "scan");
    scans.push_back(static_cast<double>(w.rows) / sw2.Seconds());
  }
  if (!all) {
    const bool get = f.read_only == "get";
    const std::vector<TimeSplit>& t = get ? lookups_t : mem_t;
    const Samples& rate = get ? lookups : mem;
    rep->Row({get ? "read_get" : "unordered_map_get", Count(f.lookups),
              Fmt("%.3f", static_cast<double>(f.lookups) / Median(rate)), Rate(Median(rate), "lookups"),
              "--read_only: " + Rate(Median(CpuRates(t, f.lookups)), "lookups") + " per CPU-s", MedianPercentages(t)});
    return;
  }
  ReportReads(f, w, times, hashed_path, plain_path, rep);
  hashed.reset();
  plain.reset();
  RemoveTree(hashed_path);
  RemoveTree(plain_path);
}

// The snapshot file alone (snapshot/snapshot_file.h), no LMDB: write
// --publish_rows rows through SnapshotWriter, then scan them back. Was the
// MillionRowsSealTiming test, which measured and asserted nothing.
void RunSnapshotFile(const Flags& f, const std::string& work, Report* rep) {
  std::vector<Row> rows(f.publish_rows);
  for (size_t i = 0; i < rows.size(); i++) {
    Row& r = rows[i];
    char buf[32];
    std::snprintf(buf, sizeof buf, "metric%02zu", i * 10 / rows.size());
    r.metric = buf;
    std::snprintf(buf, sizeof buf, "key%09zu", i * 7);
    r.key = buf;
    r.count = static_cast<int64_t>(i % 1000) - 3;
    r.sum_micros = static_cast<int64_t>(i) * 1234567 - 99999999;
    r.events = static_cast<int64_t>(i % 13);
  }
  const std::string path = work + "/snapshot.data";
  Samples writes, scans;
  SnapshotFileInfo info;
  for (int r = 0; r < f.reps; ++r) {
    Progress("snapshot (rep " + std::to_string(r + 1) + "/" + std::to_string(f.reps) + ")");
    Stopwatch sw;
    std::unique_ptr<SnapshotWriter> w;
    CheckOk(SnapshotWriter::Open(Env::Default(), path, &w), "open " + path);
    for (const Row& row : rows) CheckOk(w->Add(row), "add");
    CheckOk(w->Finish(&info), "finish");
    writes.push_back(static_cast<double>(rows.size()) / sw.Seconds());
    Stopwatch sw2;
    std::unique_ptr<SnapshotReader> reader;
    CheckOk(SnapshotReader::Open(Env::Default(), path, &reader), "open " + path);
    uint64_t n = 0;
    CheckOk(reader->Scan(nullptr, [&](const Row&) { n++; }), "scan");
    if (n != rows.size()) CheckOk(Status::Corruption("scan returned " + std::to_string(n) + " rows"), "scan");
    scans.push_back(static_cast<double>(rows.size()) / sw2.Seconds());
  }
  rep->Row({"snapshot_write", Count(rows.size()), Fmt("%.3f", static_cast<double>(rows.size()) / Median(writes)),
            Rate(Median(writes), "rows"), Fmt("SnapshotWriter, %.1f MiB incl. fsync", info.bytes / 1048576.0)});
  rep->Row({"snapshot_scan", Count(rows.size()), Fmt("%.3f", static_cast<double>(rows.size()) / Median(scans)),
            Rate(Median(scans), "rows"), "SnapshotReader::Scan of the whole file"});
  rep->Num("snapshot_write_rows_per_s", Median(writes));
  rep->Num("snapshot_scan_rows_per_s", Median(scans));
}

// The baseline of "windows": the same files (bytes read back from what the
// publish wrote) into <dir>/<window>/v<version>/, each file and each
// directory fsynced once, the parent once. No LMDB, no reconcile, no rename.
double WriteAndFsyncWindows(const std::string& dir, const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>& windows) {
  Env* env = Env::Default();
  Stopwatch sw;
  CheckOk(env->CreateDir(dir), "mkdir " + dir);
  for (const auto& [name, files] : windows) {
    const std::string vdir = dir + "/" + name + "/v1";
    CheckOk(env->CreateDirs(vdir), "mkdir " + vdir);
    for (const auto& [fname, bytes] : files) {
      std::unique_ptr<WritableFile> out;
      CheckOk(env->NewWritableFile(vdir + "/" + fname, &out), "create");
      CheckOk(out->Append(bytes), "write");
      CheckOk(out->Sync(), "fsync");
      CheckOk(out->Close(), "close");
    }
    CheckOk(env->SyncDir(vdir), "fsync dir");
    CheckOk(env->SyncDir(dir + "/" + name), "fsync dir");
  }
  CheckOk(env->SyncDir(dir), "fsync dir");
  return sw.Seconds();
}

// Many small windows: f.windows one-minute windows, a few rows each, sealed
// and published at once (as `run --final` does after its ingest), against
// writing and fsyncing the same files and directories.
void RunWindows(const Flags& f, const std::string& work, Report* rep) {
  const std::string input = work + "/windows.ndjson";
  const int64_t start = f.spec.start_ms - f.spec.start_ms % 60000;
  {
    std::string text;
    uint64_t seq = 0;
    for (uint64_t w = 0; w < f.windows; ++w) {
      for (int e = 0; e < 8; ++e) {
        text += "{\"producer\":\"p\",\"seq\":" + std::to_string(seq++) + ",\"ts\":" +
                std::to_string(start + static_cast<int64_t>(w) * 60000 + e * 1000) + ",\"metric\":\"m" +
                std::to_string(e % 2) + "\",\"key\":\"k" + std::to_string(e % 4) + "\",\"value\":" + std::to_string(e + 1) +
                ".25}\n";
      }
    }
    std::FILE* fp = std::fopen(input.c_str(), "w");
    if (fp == nullptr || std::fwrite(text.data(), 1, text.size(), fp) != text.size() || std::fclose(fp) != 0) {
      Die("cannot write " + input);
    }
  }
  Samples ours, base;
  std::vector<TimeSplit> ours_t;
  for (int r = 0; r < f.reps; ++r) {
    Progress("windows (rep " + std::to_string(r + 1) + "/" + std::to_string(f.reps) + "): ingest, not timed");
    const std::string root = work + "/windows-root";
    RemoveTree(root);
    RootConfig config;
    config.window_ms = 60000;
    CheckOk(Root::Init(Env::Default(), root, config), "init " + root);
    IngestFile(root, input, "windows", f.commit_every);
    Progress("windows: seal + publish");
    {
      std::unique_ptr<Root> rt;
      CheckOk(Root::Open(Env::Default(), root, Root::Access::kWriter, &rt), "open " + root);
      Stopwatch sw;
      const PublishResult result = SealAndPublishAll(rt.get());
      if (result.windows != f.windows) Die("windows: published " + Count(result.windows) + " of " + Count(f.windows));
      ours.push_back(sw.Seconds());
      ours_t.push_back(sw.Split());
    }
    // The baseline's bytes: every published file (not timed).
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> files;
    std::vector<std::string> names;
    CheckOk(Env::Default()->GetChildren(filenames::SnapshotsDir(root), &names), "list snapshots");
    for (const std::string& n : names) {
      const std::string vdir = filenames::SnapshotsDir(root) + "/" + n + "/v1";
      std::vector<std::pair<std::string, std::string>> fs;
      for (const char* fname : {filenames::kDataFile, filenames::kSnapshotManifestFile}) {
        std::string bytes;
        CheckOk(Env::Default()->ReadFileToString(vdir + "/" + fname, &bytes), "read " + vdir);
        fs.emplace_back(fname, std::move(bytes));
      }
      files.emplace_back(n, std::move(fs));
    }
    RemoveTree(root);
    Progress("windows: write+fsync baseline");
    const std::string bdir = work + "/windows-baseline";
    RemoveTree(bdir);
    base.push_back(WriteAndFsyncWindows(bdir, files));
    RemoveTree(bdir);
  }
  const Samples ratio = Ratio(ours, base);
  rep->Row({"windows", Count(f.windows), Fmt("%.3f", Median(ours)), Rate(static_cast<double>(f.windows) / Median(ours), "windows"),
            "SealWindows + PublishStaged of 1-minute windows, 8 events each" + Fmt("; %.2fx write+fsync", Median(ratio)),
            MedianPercentages(ours_t)});
  rep->Row({"windows_write_fsync", Count(f.windows), Fmt("%.3f", Median(base)),
            Rate(static_cast<double>(f.windows) / Median(base), "windows"),
            "baseline: same data + manifest.json per window, fsync of each file, v1/, <window>/, parent once"});
  rep->Num("windows", static_cast<double>(f.windows));
  rep->Num("windows_seconds", Median(ours));
  rep->Num("windows_write_fsync_seconds", Median(base));
  rep->Num("windows_ratio_vs_write_fsync", Median(ratio));
  rep->Array("windows_ratio_vs_write_fsync_reps", ratio);
}

// A 24-window range with a one-day roll-up of one (metric, key) over a root
// of range_windows one-minute windows (on /dev/shm when writable), against
// the full query of every window filtered and summed here.
void RunRange(const Flags& f, const std::string& work, Report* rep) {
  const uint64_t windows = f.quick ? 600 : 10000;
  std::string dir = work + "/range";
  if (::access("/dev/shm", W_OK) == 0) dir = "/dev/shm/snapsink_bench_range." + std::to_string(::getpid());
  RemoveTree(dir);
  MakeDir(dir);
  const std::string input = dir + "/in.ndjson", root = dir + "/root";
  const int64_t start = 1792540800000;  // 2026-10-21T00:00:00Z
  {
    std::string text;
    uint64_t seq = 0;
    for (uint64_t w = 0; w < windows; ++w) {
      for (int e = 0; e < 8; ++e) {
        text += "{\"producer\":\"p\",\"seq\":" + std::to_string(seq++) + ",\"ts\":" +
                std::to_string(start + static_cast<int64_t>(w) * 60000 + e) + ",\"metric\":\"m" + std::to_string(e % 2) +
                "\",\"key\":\"k" + std::to_string(e % 4) + "\",\"value\":" + std::to_string(e + 1) + ".25}\n";
      }
    }
    std::FILE* fp = std::fopen(input.c_str(), "w");
    if (fp == nullptr || std::fwrite(text.data(), 1, text.size(), fp) != text.size() || std::fclose(fp) != 0) {
      Die("cannot write " + input);
    }
  }
  Progress("range: build a root of " + Count(windows) + " windows, not timed");
  RootConfig config;
  config.window_ms = 60000;
  CheckOk(Root::Init(Env::Default(), root, config), "init " + root);
  IngestFile(root, input, "range", f.commit_every);
  {
    std::unique_ptr<Root> rt;
    CheckOk(Root::Open(Env::Default(), root, Root::Access::kWriter, &rt), "open " + root);
    SealAndPublishAll(rt.get());
  }
  QuerySpec q;
  q.from = start + 300 * 60000;
  q.to = *q.from + 23 * 60000;
  q.metric = "m1";
  q.key = "k1";
  q.rollup_ms = 86400000;
  Samples ours, base;
  int64_t want = 0, got = 0;
  for (int r = 0; r < f.reps; ++r) {
    std::unique_ptr<Reader> reader;
    CheckOk(Reader::Open(Env::Default(), root, 0, &reader), "open reader");
    Stopwatch sw;
    std::vector<api::RollupRow> rows;
    CheckOk(RollupRows(reader.get(), q, &rows), "rollup");
    ours.push_back(sw.Seconds());
    got = rows.empty() ? 0 : rows[0].sum_micros;
    std::unique_ptr<Reader> reader2;
    CheckOk(Reader::Open(Env::Default(), root, 0, &reader2), "open reader");
    Stopwatch sw2;
    std::vector<api::QueryRow> all;
    CheckOk(QueryRows(reader2.get(), QuerySpec{}, &all), "query");
    want = 0;
    for (const api::QueryRow& row : all) {
      if (row.window_start_ms >= *q.from && row.window_start_ms <= *q.to && row.row.metric == "m1" && row.row.key == "k1") {
        want = WrappingAdd(want, row.row.sum_micros);
      }
    }
    base.push_back(sw2.Seconds());
  }
  if (got != want) Die("range: roll-up sum " + std::to_string(got) + " != filtered " + std::to_string(want));
  const Samples ratio = Ratio(base, ours);
  rep->Row({"range_rollup", Count(windows), Fmt("%.6f", Median(ours)), "",
            "24-window range, metric+key, --rollup 1d" + Fmt("; %.0fx faster than full query + filter", Median(ratio))});
  rep->Row({"range_full_filter", Count(windows), Fmt("%.6f", Median(base)), "", "baseline: every window queried, filtered, summed"});
  rep->Num("range_rollup_seconds", Median(ours));
  rep->Num("range_full_filter_seconds", Median(base));
  rep->Num("range_ratio_full_vs_rollup", Median(ratio));
  RemoveTree(dir);
}

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  MakeDir(f.tmpdir);
  ScratchDir work(f.tmpdir, "snapsink_bench.", f.keep);
  PrintEnvironment(f, work.path());
  Report rep;
  rep.Str("build", BuildDescription());
  rep.Num("optimized", kOptimized);
  rep.Str("cpu", ReadCpuInfo("model name"));
  rep.Num("cores", std::thread::hardware_concurrency());
  rep.Num("reps", f.reps);
  rep.Num("quick", f.quick);
  rep.Num("commit_every", static_cast<double>(f.commit_every));

  if (f.Has("parse") || f.Has("ingest") || f.Has("ingest1") || f.Has("wide") || f.Has("sqlite") || f.Has("lmdb")) RunIngestFamily(f, work.path(), &rep);
  if (f.Has("state")) RunStateSize(f, work.path(), &rep);
  if (f.Has("ids")) RunIdState(work.path(), f.id_events, 100000, f.commit_every);
  if (!f.read_root.empty() && f.Has("read")) {
    WideRoot w;
    w.root = f.read_root;
    w.window_ms = f.spec.start_ms;
    w.rows = f.publish_rows;
    RunRead(f, work.path(), w, &rep);
  } else if (f.Has("publish") || f.Has("read")) {
    WideRoot w = MakeWideRoot(f, work.path(), &rep);
    if (f.Has("publish")) {
      RunPublish(f, work.path(), &w, &rep);
    } else {
      SealAndPublish(w);
    }
    if (f.Has("read")) RunRead(f, work.path(), w, &rep);
  }
  if (f.Has("snapshot")) RunSnapshotFile(f, work.path(), &rep);
  if (f.Has("windows")) RunWindows(f, work.path(), &rep);
  if (f.Has("range")) RunRange(f, work.path(), &rep);
  if (f.Has("merged_publish")) {
    std::map<std::string, double> ratios;
    RunMergedPublishBench(work.path(), f.quick ? 5000 : f.merged_rows, f.reps, &ratios);
    for (const auto& [key, v] : ratios) rep.Num(key, v);
  }
  if (f.Has("write")) {
    std::map<std::string, double> ratios;
    RunWriteBench(work.path(), {f.write_events, f.write_single_events, f.commit_every, f.reps}, &ratios);
    for (const auto& [key, v] : ratios) rep.Num(key, v);
  }
  if (f.Has("parts")) {
    std::map<std::string, double> ratios;
    // --quick: a root of 10,000 windows, one rep (a smoke test).
    RunPartsBench(work.path(), {f.quick ? 10000u : 100000u, 100, f.reps}, &ratios);
    for (const auto& [key, v] : ratios) rep.Num(key, v);
  }
  if (f.Has("kinds")) {
    std::map<std::string, double> ratios;
    KindsBenchSizes sizes;
    sizes.reps = f.reps;
    if (f.quick) sizes.events = 20000, sizes.windows = 120;  // a smoke test
    RunKindsBench(work.path(), sizes, &ratios);
    for (const auto& [key, v] : ratios) rep.Num(key, v);
  }
  if (f.Has("checkpoint")) {
    std::map<std::string, double> ratios;
    CheckpointBenchSizes sizes;
    sizes.reps = f.reps;
    if (f.quick) sizes.events = {2000, 20000};
    RunCheckpointBench(work.path(), sizes, &ratios);
    for (const auto& [key, v] : ratios) rep.Num(key, v);
  }

  std::printf("\n");
  rep.Note("cpu/queued/blocked %: shares of wall time this thread ran, waited for a CPU (other load), or was blocked "
           "(fsync, I/O); from /proc/thread-self/schedstat.");
  rep.PrintTable();
  PrintTargets(rep, f.quick);
  if (!f.json_path.empty()) {
    rep.WriteJson(f.json_path);
    std::printf("\nJSON written to %s\n", f.json_path.c_str());
  }
  if (f.keep) std::printf("scratch kept in %s\n", work.path().c_str());
  return 0;
}

}  // namespace
}  // namespace snapsink::bench

namespace snapsink::bench {
int ServeBenchMain(int argc, char** argv);  // serve_bench.cc
int BucketBenchMain(int argc, char** argv);  // bucket_bench.cc
int ProcessBenchMain(int argc, char** argv);  // process_bench.cc
int ParseOnlyMain(int argc, char** argv);  // process_bench.cc
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--serve") return snapsink::bench::ServeBenchMain(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--bucket") return snapsink::bench::BucketBenchMain(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--process") return snapsink::bench::ProcessBenchMain(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--parse-only") return snapsink::bench::ParseOnlyMain(argc, argv);
  return snapsink::bench::Main(argc, argv);
}
