// Helpers for tests that drive the snapsink binary or the library.
#pragma once

#include <gtest/gtest.h>
#include <spawn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "snapsink/status.h"
#include "snapsink/utilities/parse.h"
#include "tests/file_util.h"

namespace snapsink::testing {

// Event times the tests use, in milliseconds since the epoch.
inline constexpr int64_t kMinute = 60 * 1000;
inline constexpr int64_t kHour = 60 * kMinute;
inline constexpr int64_t kBase = 1792576800000;  // 2026-10-21T10:00:00Z, an hour start

// The snapsink binary under test and the source tree. Only tests/test_util.cc
// is compiled with their absolute paths (as -D flags), so every other test
// object is the same in any checkout and a compiler cache can share it.
const char* SnapsinkBinaryPath();
const char* SourceDirPath();

// The Status of a Status or of a Result<T>, for the macros below.
inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// ASSERT_STATUS_OK(expr) / EXPECT_STATUS_OK(expr): expr (a Status or a
// Result<T>) is OK; the failure message names the expression and the status.
// Like gtest's own assertions, more context may be streamed:
//   ASSERT_STATUS_OK(w->Add(row)) << "row " << i;
// Brace it under an unbraced if: gcc's -Wdangling-else sees through switch.
#define SNAPSINK_STATUS_OK_IMPL(expr, fail)                                                    \
  switch (0)                                                                                   \
  case 0:                                                                                      \
  default:                                                                                     \
    if (const ::snapsink::Status _snapsink_st = ::snapsink::testing::StatusOf(expr); _snapsink_st.ok()) { \
    } else                                                                                     \
      fail() << #expr << ": " << _snapsink_st.ToString()
#define ASSERT_STATUS_OK(expr) SNAPSINK_STATUS_OK_IMPL(expr, FAIL)
#define EXPECT_STATUS_OK(expr) SNAPSINK_STATUS_OK_IMPL(expr, ADD_FAILURE)

// A time ("2026-10-21T10:00:00Z") as milliseconds, through the public
// api::ParseTime; a text it does not take is a test failure.
int64_t Ms(const std::string& time);

// One NDJSON event line (docs/CONTRACT.md 1), newline included, fields in the order
// producer, epoch, seq, ts, metric, key, value, op; optional fields only
// when set:
//   EventLine().Seq(3).Ts(ms).Metric("orders").Key("eu").Value("1.5").Line()
class EventLine {
 public:
  EventLine& Producer(std::string p) { producer_ = std::move(p); return *this; }
  EventLine& Epoch(uint64_t e) { epoch_ = e; return *this; }
  EventLine& Seq(uint64_t s) { seq_ = s; return *this; }
  EventLine& Ts(int64_t ms) { ts_ = std::to_string(ms); return *this; }
  EventLine& Ts(const std::string& rfc3339) { ts_ = "\"" + rfc3339 + "\""; return *this; }
  EventLine& Metric(std::string m) { metric_ = std::move(m); return *this; }
  EventLine& Key(std::string k) { key_ = std::move(k); return *this; }
  // The JSON number text as written ("1.5", "-3", "1e-6").
  EventLine& Value(std::string v) { value_ = std::move(v); return *this; }
  EventLine& Value(int64_t v) { value_ = std::to_string(v); return *this; }
  EventLine& Retract() { op_ = "retract"; return *this; }
  std::string Line() const;

 private:
  std::string producer_ = "p";
  std::optional<uint64_t> epoch_;
  uint64_t seq_ = 0;
  std::string ts_ = "0";  // JSON text: a number or a quoted string
  std::string metric_ = "m";
  std::optional<std::string> key_, value_, op_;
};

// `snapsink run ROOT FILE --final` through the public API: opens the writer
// handle, runs, and closes it.
Status RunFinalWithApi(const std::string& root, const std::string& file);

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A directory for a root with thousands of windows: on tmpfs when there is
// one (publishing thousands of windows syncs thousands of files and
// directories, which costs minutes on a disk and nothing there), else a
// TempDir under $TMPDIR. Removed with everything in it.
class FastDir {
 public:
  FastDir();
  ~FastDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  std::unique_ptr<TempDir> fallback_;
};

struct RunResult {
  int exit_code = -1;  // the process's exit status; 128+N when killed by signal N
  std::string out, err;
};

// Runs the snapsink binary with args; extra environment variables in env
// (e.g. SNAPSINK_CRASH_AT); stdin_data fed to standard input.
RunResult Snapsink(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                   const std::string& stdin_data = "");

// Everything execve needs to run the snapsink binary with args (plus env
// set on top of the inherited environment), made BEFORE fork: a child forked
// from a process with other threads may only call async-signal-safe
// functions until it execs. Another thread may hold the allocator's lock at
// the fork (a server test's clients allocate all the time), and a child that
// then allocates (setenv, a string copy) waits for that lock forever: it
// hung under ASan. Snapsink() and SpawnSnapsink() start it with Spawn; Exec
// is for a child made otherwise:
//
//   const ExecImage image({"ingest", root, file});
//   pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
//   if (pid == 0) image.Exec();
class ExecImage {
 public:
  ExecImage(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});
  // In the forked child: execve only, else _exit(127).
  [[noreturn]] void Exec() const;
  // Starts the image with posix_spawn and these file actions (nullptr: none);
  // the pid, or -1. Unlike fork, it copies none of this process's page
  // tables, which an instrumented test process has many of.
  pid_t Spawn(const posix_spawn_file_actions_t* actions) const;

 private:
  std::vector<std::string> strings_;  // not touched after the pointers are taken
  std::vector<char*> argv_, envp_;
};

// Starts the snapsink binary without waiting (stdin from /dev/null; stdout
// and stderr to /dev/null, or to the files out_path and err_path when
// given); Wait returns its exit status as RunResult::exit_code does.
struct Spawned {
  int pid = -1;
  bool Running();   // false once it has exited (then exit_code is set)
  int Wait();
  int exit_code = -1;
};
Spawned SpawnSnapsink(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                      const std::string& out_path = "", const std::string& err_path = "");

// Every regular file under dir (relative path -> contents), skipping state/
// (LMDB files) and the lock files (LOCK, LOCK.follower, LOCK.queue). For byte-for-byte comparison of two roots.
std::map<std::string, std::string> TreeContents(const std::string& dir);

// The paths where two TreeContents differ, one line each ("" when equal).
std::string TreeDiff(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& want);

// A comparable dump of a root's engine state: what
// `inspect producers|gaps|sources|windows --json` and `query --format json`
// print, read in this process through the public API (so no other handle on
// root's state may be open in this process: LMDB allows one), with the
// root's parent directory written as $DIR (so that roots in two temp dirs
// with inputs beside them compare equal).
std::string StateDump(const std::string& root);

// text with every occurrence of root's parent directory written as $DIR.
std::string WithParentAsDir(const std::string& root, std::string text);

// `inspect producers|sources --json` output without the fields that id dedup
// and producer retention add (last_seen, retired; duplicates_id,
// rejected_horizon, rejected_retired), for tests about other things.
std::string WithoutIdFields(const std::string& inspect_json);

// The committed offset of source in root, from `inspect sources --json`
// (-1 when root has no such source).
int64_t SourceOffset(const std::string& root, const std::string& source);

// The generation root's CURRENT names (0 when there is none yet).
uint64_t CurrentGeneration(const std::string& root);

}  // namespace snapsink::testing

#ifndef SNAPSINK_TEST_UTIL_PATHS
#define SNAPSINK_BINARY (::snapsink::testing::SnapsinkBinaryPath())
#define SNAPSINK_SOURCE_DIR (::snapsink::testing::SourceDirPath())
#endif
