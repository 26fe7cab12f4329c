// Small pieces shared by the benchmark driver (bench_main.cc) and the
// baselines: timing, medians, scratch directories, a block-wise NDJSON line
// reader, and on-disk size measurements.
//
// Benchmarks are not the engine: errors here end the process with a message
// (Die / CheckOk) instead of travelling up as Status values.
#pragma once

#include <algorithm>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

typedef struct MDB_env MDB_env;

namespace snapsink::bench {

// Prints "snapsink_bench: <what>" to stderr and exits with status 1.
[[noreturn]] void Die(const std::string& what);
// Dies with what + the status message unless s is OK.
void CheckOk(const Status& s, const std::string& what);

// Where a span of wall-clock time went, for this thread (the benchmarks are
// single-threaded), from /proc/thread-self/schedstat: on a CPU, runnable but
// waiting for a CPU (other processes' load), or blocked (the rest: fsync,
// disk reads).
struct TimeSplit {
  double wall = 0, cpu = 0, queued = 0;
  double process_cpu = 0;  // on-CPU seconds of all the process's threads
  uint64_t written = 0;  // bytes the process sent toward storage (/proc/self/io write_bytes)
  double blocked() const { return wall > cpu + queued ? wall - cpu - queued : 0; }
  // The busier of this thread and all the others together (for ingest: the
  // parse thread): the wall time a pipeline of two threads would take on
  // two idle cores, leaving out blocked time.
  double critical_cpu() const { return std::max(cpu, process_cpu - cpu); }
  // "63/30/7": percent of wall on CPU / queued / blocked.
  std::string Percentages() const;
};

class Stopwatch {
 public:
  Stopwatch();
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  TimeSplit Split() const;

 private:
  std::chrono::steady_clock::time_point start_;
  double cpu_start_ = 0, queued_start_ = 0, process_cpu_start_ = 0;
  uint64_t written_start_ = 0;
};

// Median of each share of a split (so the three need not add up to 100).
std::string MedianPercentages(const std::vector<TimeSplit>& splits);

// Median of v (the mean of the two middle values for an even count); 0 if empty.
double Median(std::vector<double> v);

// A fresh directory made with mkdtemp under parent; removed recursively on
// destruction unless keep is set.
class ScratchDir {
 public:
  ScratchDir(const std::string& parent, const std::string& prefix, bool keep);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
  bool keep_;
};

// rm -rf path (no error if missing).
void RemoveTree(const std::string& path);
void MakeDir(const std::string& path);

// The lines of a file read in large blocks (4 MiB), as views into the block
// buffer with at least kPadding readable bytes after each, so EventParser can
// parse them in place. This is the cheapest way to get at the lines and the
// reading half of the "parse" limit; the baselines read their input with it.
class NdjsonBlockReader {
 public:
  static constexpr size_t kBlockBytes = size_t{4} << 20;
  static constexpr size_t kPadding = 64;

  explicit NdjsonBlockReader(const std::string& path);  // dies if the file cannot be opened
  ~NdjsonBlockReader();

  struct Line {
    const char* data;
    size_t size;          // without '\n' (a '\r' before it is left for the parser)
    size_t capacity;      // readable bytes from data on
    uint64_t end_offset;  // input offset just past the line's '\n'
  };
  // False at the end of input. Dies on read errors and on lines longer than
  // a block (the generated input has none).
  bool Next(Line* line);

 private:
  bool Fill();
  int fd_ = -1;
  std::unique_ptr<char[]> buf_;
  size_t begin_ = 0, end_ = 0;
  uint64_t consumed_ = 0;  // input offset of buf_[begin_]
  bool eof_ = false;
};

// Size of a regular file (st_size), 0 if missing.
uint64_t FileSize(const std::string& path);
// Sum of st_size over every regular file under dir, recursively.
uint64_t TreeSize(const std::string& dir);

// Space an LMDB environment uses, measured through the LMDB API.
struct LmdbSpace {
  uint64_t used_bytes = 0;  // (me_last_pgno + 1) * ms_psize: the high-water mark of the data file
  uint64_t live_bytes = 0;  // pages of every table's B-tree (branch + leaf + overflow) * ms_psize
  uint64_t file_bytes = 0;  // st_size of data.mdb
  uint64_t entries = 0;     // records over all named tables
};
// Opens the environment in dir read-only. REQUIRES: no MDB_env of this
// process has dir open (LMDB forbids two in one process).
LmdbSpace MeasureLmdbDir(const std::string& dir);
// The same for an environment this process has open (dir: where data.mdb is).
LmdbSpace MeasureLmdbEnv(MDB_env* env, const std::string& dir);

// "1.23 M", "456.7 K" style for rates and counts.
std::string HumanCount(double v);
// "12.3 MB" (10^6), for sizes.
std::string HumanBytes(double v);

}  // namespace snapsink::bench
