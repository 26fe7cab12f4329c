#include "bench/bench_util.h"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace snapsink::bench {

void Die(const std::string& what) {
  std::fprintf(stderr, "snapsink_bench: %s\n", what.c_str());
  std::exit(1);
}

void CheckOk(const Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

namespace {
// On-CPU seconds of this thread (exact), and its run-queue seconds from
// schedstat (up to date while the thread runs; 0 when schedstat is missing).
void ThreadSchedStat(double* cpu, double* queued) {
  struct timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  *cpu = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  unsigned long long run_ns = 0, wait_ns = 0;
  if (std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r")) {
    if (std::fscanf(f, "%llu %llu", &run_ns, &wait_ns) != 2) wait_ns = 0;
    std::fclose(f);
  }
  *queued = static_cast<double>(wait_ns) * 1e-9;
}

// write_bytes of /proc/self/io: what this process made the kernel write to
// storage (dirtied page cache counts when dirtied). 0 when unavailable.
double ProcessCpu() {
  struct timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

uint64_t ProcessWriteBytes() {
  uint64_t bytes = 0;
  if (std::FILE* f = std::fopen("/proc/self/io", "r")) {
    char name[64];
    unsigned long long v;
    while (std::fscanf(f, "%63s %llu", name, &v) == 2) {
      if (std::strcmp(name, "write_bytes:") == 0) bytes = v;
    }
    std::fclose(f);
  }
  return bytes;
}
}  // namespace

Stopwatch::Stopwatch() {
  written_start_ = ProcessWriteBytes();
  ThreadSchedStat(&cpu_start_, &queued_start_);
  process_cpu_start_ = ProcessCpu();
  start_ = std::chrono::steady_clock::now();
}

TimeSplit Stopwatch::Split() const {
  TimeSplit t;
  t.wall = Seconds();
  ThreadSchedStat(&t.cpu, &t.queued);
  t.cpu -= cpu_start_;
  t.queued -= queued_start_;
  t.process_cpu = ProcessCpu() - process_cpu_start_;
  t.written = ProcessWriteBytes() - written_start_;
  return t;
}

std::string TimeSplit::Percentages() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f/%.0f/%.0f", 100 * cpu / wall, 100 * queued / wall, 100 * blocked() / wall);
  return buf;
}

std::string MedianPercentages(const std::vector<TimeSplit>& splits) {
  std::vector<double> cpu, queued, blocked;
  for (const TimeSplit& t : splits) {
    if (t.wall <= 0) continue;
    cpu.push_back(t.cpu / t.wall);
    queued.push_back(t.queued / t.wall);
    blocked.push_back(t.blocked() / t.wall);
  }
  if (cpu.empty()) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f/%.0f/%.0f", 100 * Median(cpu), 100 * Median(queued), 100 * Median(blocked));
  return buf;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

ScratchDir::ScratchDir(const std::string& parent, const std::string& prefix, bool keep) : keep_(keep) {
  std::string tmpl = parent + "/" + prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp " + tmpl + ": " + std::strerror(errno));
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  if (!keep_) RemoveTree(path_);
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void MakeDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) Die("mkdir " + path + ": " + ec.message());
}

// ---------------------------------------------------------------- NdjsonBlockReader

NdjsonBlockReader::NdjsonBlockReader(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) Die("open " + path + ": " + std::strerror(errno));
  buf_.reset(new char[kBlockBytes + kPadding]);
  std::memset(buf_.get() + kBlockBytes, 0, kPadding);
}

NdjsonBlockReader::~NdjsonBlockReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool NdjsonBlockReader::Fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep only the unconsumed tail, at the front
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == kBlockBytes) Die("input line longer than a read block");
  for (;;) {
    ssize_t n = ::read(fd_, buf_.get() + end_, kBlockBytes - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die(std::string("read: ") + std::strerror(errno));
    if (n == 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<size_t>(n);
    return true;
  }
}

bool NdjsonBlockReader::Next(Line* line) {
  for (;;) {
    char* base = buf_.get();
    const size_t avail = end_ - begin_;
    const char* nl = static_cast<const char*>(std::memchr(base + begin_, '\n', avail));
    if (nl != nullptr || (eof_ && avail > 0)) {
      const size_t len = nl ? static_cast<size_t>(nl - (base + begin_)) : avail;
      const size_t step = len + (nl ? 1 : 0);
      line->data = base + begin_;
      line->size = len;
      line->capacity = kBlockBytes + kPadding - begin_;
      begin_ += step;
      consumed_ += step;
      line->end_offset = consumed_;
      return true;
    }
    if (eof_) return false;
    Fill();
  }
}

// ---------------------------------------------------------------- sizes

uint64_t FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

uint64_t TreeSize(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

namespace {
void LmdbCheck(int rc, const std::string& what) {
  if (rc != MDB_SUCCESS) Die("lmdb " + what + ": " + mdb_strerror(rc));
}
uint64_t TreePages(const MDB_stat& s) { return s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages; }
}  // namespace

LmdbSpace MeasureLmdbDir(const std::string& dir) {
  MDB_env* env;
  LmdbCheck(mdb_env_create(&env), "env_create");
  LmdbCheck(mdb_env_set_maxdbs(env, 64), "set_maxdbs");
  LmdbCheck(mdb_env_set_mapsize(env, size_t{1} << 38), "set_mapsize");
  LmdbCheck(mdb_env_open(env, dir.c_str(), MDB_RDONLY | MDB_NOTLS, 0644), "open " + dir);
  LmdbSpace out = MeasureLmdbEnv(env, dir);
  mdb_env_close(env);
  return out;
}

LmdbSpace MeasureLmdbEnv(MDB_env* env, const std::string& dir) {
  LmdbSpace out;
  MDB_envinfo info;
  MDB_stat env_stat;
  LmdbCheck(mdb_env_info(env, &info), "env_info");
  LmdbCheck(mdb_env_stat(env, &env_stat), "env_stat");
  const uint64_t psize = env_stat.ms_psize;
  out.used_bytes = (static_cast<uint64_t>(info.me_last_pgno) + 1) * psize;
  out.file_bytes = FileSize(dir + "/data.mdb");

  // The main table holds one record per named table; sum their B-trees.
  MDB_txn* txn;
  LmdbCheck(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), "begin");
  MDB_dbi main;
  LmdbCheck(mdb_dbi_open(txn, nullptr, 0, &main), "open main");
  MDB_stat st;
  LmdbCheck(mdb_stat(txn, main, &st), "stat main");
  uint64_t pages = TreePages(st);
  std::vector<std::string> names;
  MDB_cursor* cur;
  LmdbCheck(mdb_cursor_open(txn, main, &cur), "cursor");
  MDB_val k, v;
  for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    names.emplace_back(static_cast<const char*>(k.mv_data), k.mv_size);
  }
  mdb_cursor_close(cur);
  for (const std::string& name : names) {
    MDB_dbi dbi;
    if (mdb_dbi_open(txn, name.c_str(), 0, &dbi) != MDB_SUCCESS) continue;  // a plain record, not a table
    LmdbCheck(mdb_stat(txn, dbi, &st), "stat " + name);
    pages += TreePages(st);
    out.entries += st.ms_entries;
  }
  out.live_bytes = pages * psize;
  LmdbCheck(mdb_txn_commit(txn), "commit");  // keeps the table handles open for the env's owner
  return out;
}

std::string HumanCount(double v) {
  char buf[64];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f G", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f K", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  }
  return buf;
}

std::string HumanBytes(double v) {
  char buf[64];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f GB", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f MB", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f KB", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", v);
  }
  return buf;
}

}  // namespace snapsink::bench
