// snapsink_bench --process: what a user of the `snapsink` binary sees, each
// step a whole process (the binary beside the bench, or --snapsink=PATH),
// timed by the wall clock with its CPU time (user + system) beside it, and
// each against its baseline run as a process in the same repetition,
// alternated:
//
//   ingest   `snapsink ingest` of --events lines of the anchor shape (1000
//            producers, 10% redelivered) into a fresh root, vs a
//            single-thread parse-only pass over the same file (read, split,
//            EventParser::Parse, every field; `snapsink_bench --parse-only
//            FILE`): lines/s over lines/s (goal >= 1.2x).
//   wide     `snapsink ingest` of --wide_rows lines that each add a new
//            (metric, key) to one window vs as many lines of the default
//            shape (4 metrics x 64 keys, 64 producers): lines/s over lines/s
//            (goal >= 0.5x), quiet and with one core kept busy by a spinning
//            child of the bench ("_busy").
//   publish  `snapsink seal --all` + `snapsink publish` of that wide window
//            (--wide_rows rows) vs `zstd -3` of the same rows (the
//            snapshot's row encoding, uncompressed) + `sync` of the output
//            (goal <= 2x).
//
// Every ratio is the median of the per-repetition ratios and is printed on
// one line, "process_...: ...", with the load average before and after.
// --busy keeps one core busy for the ingest and publish lines too.
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/baselines.h"
#include "bench/bench_util.h"
#include "bench/child_process.h"
#include "bench/input_gen.h"
#include "engine/coding.h"
#include "engine/env.h"
#include "engine/filenames.h"
#include "snapshot/snapshot_file.h"

namespace snapsink::bench {

namespace {

using coding::EncodeVarint64;
using coding::ZigZag;

constexpr int64_t kWindow = 1792576800000;  // 2026-10-21T10:00:00Z

struct Flags {
  uint64_t events = 2000000;
  uint64_t wide_rows = 1000000;
  int reps = 3;
  bool busy = false;
  bool keep = false;  // the scratch directory (inputs, roots) is left for profilers
  std::string only = "ingest,wide,publish";
  std::string snapsink;
  std::string self;
  bool Has(const char* name) const { return only.find(name) != std::string::npos; }
};

void Progress(const std::string& what) { std::fprintf(stderr, "... %s\n", what.c_str()); }

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return one + " (1 min), " + five + " (5 min)";
}

// A ratio line: the median of per-repetition ratios, its range, the medians
// of both sides by the wall clock and by CPU time.
struct Pairs {
  std::vector<double> a_wall, a_cpu, b_wall, b_cpu;
  void Add(const Cost& a, const Cost& b) {
    a_wall.push_back(a.wall), a_cpu.push_back(a.cpu), b_wall.push_back(b.wall), b_cpu.push_back(b.cpu);
  }
  // scale_a / scale_b: the work each side did (lines), so rate ratios compare
  // like with like; rate = true prints b's time over a's (a faster: > 1).
  void Print(const char* name, bool rate, double work_a, double work_b, const std::string& what) const {
    std::vector<double> r, rc;
    for (size_t i = 0; i < a_wall.size(); ++i) {
      const double w = rate ? (work_a / a_wall[i]) / (work_b / b_wall[i]) : a_wall[i] / b_wall[i];
      const double c = rate ? (work_a / a_cpu[i]) / (work_b / b_cpu[i]) : a_cpu[i] / b_cpu[i];
      r.push_back(w), rc.push_back(c);
    }
    std::printf("%s: %.2fx wall (reps %.2f-%.2fx; %.3f s vs %.3f s), %.2fx cpu (%.3f s vs %.3f s): %s\n", name,
                Median(r), *std::min_element(r.begin(), r.end()), *std::max_element(r.begin(), r.end()),
                Median(a_wall), Median(b_wall), Median(rc), Median(a_cpu), Median(b_cpu), what.c_str());
  }
};

std::string Root(const ScratchDir& work, const std::string& name) {
  const std::string root = work / name;
  RemoveTree(root);
  return root;
}

Cost Ingest(const Flags& f, const ScratchDir& work, const std::string& root, const std::string& file) {
  RunChild({f.snapsink, "init", root}, work / "log");
  return RunChild({f.snapsink, "ingest", root, file}, work / "log");
}

void BenchIngest(const Flags& f, const ScratchDir& work) {
  StreamSpec spec;
  spec.producers = 1000;
  spec.duplicate_rate = 0.1;
  const std::string file = work / "anchor.ndjson";
  Progress("ingest: generating " + std::to_string(f.events) + " lines (1000 producers, 10% redelivered)");
  EventStream(spec).Write(file, f.events);
  const pid_t spin = f.busy ? StartSpinner() : 0;
  Pairs p;
  for (int rep = 0; rep < f.reps; ++rep) {
    Progress("ingest (rep " + std::to_string(rep + 1) + "/" + std::to_string(f.reps) + ")");
    const Cost parse = RunChild({f.self, "--parse-only", file}, work / "log");
    const Cost ingest = Ingest(f, work, Root(work, "anchor-root"), file);
    p.Add(ingest, parse);
  }
  if (spin != 0) StopSpinner(spin);
  p.Print(f.busy ? "process_ingest_ratio_vs_parse_busy" : "process_ingest_ratio_vs_parse", true, 1, 1,
          "`snapsink ingest` of " + std::to_string(f.events) +
              " anchor-shape lines vs a one-thread parse-only pass, rate over rate (goal >= 1.2x)");
  if (!f.keep) RemoveTree(file);
}

void BenchWide(const Flags& f, const ScratchDir& work) {
  const std::string wide = work / "wide.ndjson", narrow = work / "narrow.ndjson";
  Progress("wide: generating " + std::to_string(f.wide_rows) + " wide and as many narrow lines");
  const StreamStats ws = WriteWideWindow(wide, f.wide_rows, kWindow);
  const StreamStats ns = EventStream(StreamSpec{}).Write(narrow, f.wide_rows);
  for (const bool busy : {false, true}) {
    const pid_t spin = busy ? StartSpinner() : 0;
    Pairs p;
    for (int rep = 0; rep < f.reps; ++rep) {
      Progress(std::string("wide") + (busy ? " busy" : "") + " (rep " + std::to_string(rep + 1) + "/" +
               std::to_string(f.reps) + ")");
      const Cost n = Ingest(f, work, Root(work, "narrow-root"), narrow);
      const Cost w = Ingest(f, work, Root(work, "wide-root"), wide);
      p.Add(w, n);
    }
    if (spin != 0) StopSpinner(spin);
    p.Print(busy ? "process_wide_ratio_vs_narrow_busy" : "process_wide_ratio_vs_narrow", true,
            static_cast<double>(ws.lines), static_cast<double>(ns.lines),
            "`snapsink ingest` of " + std::to_string(ws.lines) + " new keys in one window vs " +
                std::to_string(ns.lines) + " lines over 256 keys, lines/s over lines/s" +
                (busy ? ", one core kept busy" : "") + " (goal >= 0.5x)");
  }
  if (!f.keep) RemoveTree(narrow);
}

std::string LargestDataFile(const std::string& root) {
  std::string best;
  uint64_t size = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().filename() != filenames::kDataFile) continue;
    if (e.file_size() >= size) size = e.file_size(), best = e.path().string();
  }
  if (best.empty()) Die("no published data file under " + root);
  return best;
}

// The rows of a data file in the row encoding of the in-process baseline
// (ZstdWriteRows), uncompressed: what `zstd -3` is given.
void WriteRawRows(const std::string& data, const std::string& out) {
  std::unique_ptr<SnapshotReader> sr;
  CheckOk(SnapshotReader::Open(Env::Default(), data, &sr), "open snapshot " + data);
  std::string raw;
  char buf[64];
  CheckOk(sr->Scan(nullptr,
                   [&](const Row& row) {
                     raw.append(buf, EncodeVarint64(buf, row.metric.size()));
                     raw.append(row.metric);
                     raw.append(buf, EncodeVarint64(buf, row.key.size()));
                     raw.append(row.key);
                     char* p = EncodeVarint64(buf, ZigZag(row.count));
                     p = EncodeVarint64(p, ZigZag(row.events));
                     p = EncodeVarint64(p, ZigZag(row.sum_micros));
                     raw.append(buf, static_cast<size_t>(p - buf));
                   }),
          "scan snapshot");
  std::ofstream(out, std::ios::binary) << raw;
}

void BenchPublish(const Flags& f, const ScratchDir& work) {
  const std::string wide = work / "wide.ndjson", root = Root(work, "publish-root");
  if (!std::filesystem::exists(wide)) WriteWideWindow(wide, f.wide_rows, kWindow);
  Progress("publish: ingesting " + std::to_string(f.wide_rows) + " rows into one window");
  Ingest(f, work, root, wide);
  const pid_t spin = f.busy ? StartSpinner() : 0;
  Pairs p;
  uint64_t extra_seq = f.wide_rows;
  const std::string raw = work / "rows.raw", zst = work / "rows.zst";
  for (int rep = 0; rep < f.reps; ++rep) {
    Progress("publish (rep " + std::to_string(rep + 1) + "/" + std::to_string(f.reps) + ")");
    if (rep > 0) {  // one more event makes the window dirty: the next seal rewrites all its rows
      const std::string extra = work / ("extra-" + std::to_string(rep) + ".ndjson");  // a source of its own
      std::ofstream(extra) << WideWindowExtraLine(extra_seq++, f.wide_rows, kWindow);
      RunChild({f.snapsink, "ingest", root, extra}, work / "log");
    }
    const Cost seal = RunChild({f.snapsink, "seal", root, "--all"}, work / "log");
    const Cost publish = RunChild({f.snapsink, "publish", root}, work / "log");
    if (rep == 0) WriteRawRows(LargestDataFile(root), raw);
    RemoveTree(zst);
    const Cost z = RunChild({"zstd", "-3", "-q", "-f", raw, "-o", zst}, work / "log");
    const Cost s = RunChild({"sync", zst}, work / "log");
    p.Add(Cost{seal.wall + publish.wall, seal.cpu + publish.cpu}, Cost{z.wall + s.wall, z.cpu + s.cpu});
  }
  if (spin != 0) StopSpinner(spin);
  p.Print(f.busy ? "process_publish_ratio_vs_zstd_busy" : "process_publish_ratio_vs_zstd", false, 1, 1,
          "`snapsink seal --all` + `snapsink publish` of " + std::to_string(f.wide_rows) +
              " rows vs `zstd -3` + `sync` of the same rows (" + HumanBytes(static_cast<double>(FileSize(raw))) +
              " raw), time over time (goal <= 2x)");
  if (!f.keep) RemoveTree(wide);
}

}  // namespace

// `snapsink_bench --parse-only FILE`: the baseline process of "ingest".
int ParseOnlyMain(int argc, char** argv) {
  if (argc != 3) Die("usage: snapsink_bench --parse-only FILE");
  const PassResult r = ParseLimit(argv[2]);
  std::printf("%" PRIu64 " lines, %" PRIu64 " parsed, checksum %" PRIu64 "\n", r.lines, r.applied, r.checksum);
  return 0;
}

int ProcessBenchMain(int argc, char** argv) {
  Flags f;
  f.self = SelfDir() + "/snapsink_bench";
  f.snapsink = SelfDir() + "/snapsink";
  std::string tmp = "/tmp";
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto num = [&](size_t n) { return std::strtoull(a.c_str() + n, nullptr, 10); };
    if (a == "--quick") {
      f.events = 50000, f.wide_rows = 20000, f.reps = 1;
    } else if (a == "--keep") {
      f.keep = true;
    } else if (a == "--busy") {
      f.busy = true;
    } else if (a.rfind("--events=", 0) == 0) {
      f.events = std::max<uint64_t>(1, num(9));
    } else if (a.rfind("--wide_rows=", 0) == 0) {
      f.wide_rows = std::max<uint64_t>(1, num(12));
    } else if (a.rfind("--reps=", 0) == 0) {
      f.reps = std::max(1, std::atoi(a.c_str() + 7));
    } else if (a.rfind("--benchmarks=", 0) == 0) {
      f.only = a.substr(13);
    } else if (a.rfind("--snapsink=", 0) == 0) {
      f.snapsink = a.substr(11);
    } else if (a.rfind("--tmpdir=", 0) == 0) {
      tmp = a.substr(9);
    } else {
      std::fprintf(stderr,
                   "usage: snapsink_bench --process [--quick] [--busy] [--events=N] [--wide_rows=N] [--reps=N]\n"
                   "         [--benchmarks=ingest,wide,publish] [--snapsink=PATH] [--tmpdir=DIR] [--keep]\n");
      return 2;
    }
  }
#ifndef NDEBUG
  std::printf("WARNING: assertions are on; this is not an optimised build\n");
#endif
  ScratchDir work(tmp, "snapsink-process-bench", f.keep);
  std::printf("process bench: %s, load average before: %s\n", f.snapsink.c_str(), LoadAverage().c_str());
  if (f.Has("ingest")) BenchIngest(f, work);
  if (f.Has("wide")) BenchWide(f, work);
  if (f.Has("publish")) BenchPublish(f, work);
  std::printf("process bench: load average after: %s\n", LoadAverage().c_str());
  return 0;
}

}  // namespace snapsink::bench
