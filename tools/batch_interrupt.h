// Ctrl-C (SIGINT) or SIGTERM during a command that commits in batches (run,
// ingest, backfill). The first signal lets the batch in progress commit; at
// that commit the command ends its progress line, prints
//   interrupted: committed up to SOURCE offset N; run the same command to go on
// and exits 128+signal (130 for Ctrl-C). What came before is committed and
// the rerun resumes from N, so stopping there is as safe as any crash point.
// A second signal stops at once (a read that waits on standard input).
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace snapsink {

class Progress;

class BatchInterrupt {
 public:
  // Construct before any thread starts: it blocks the signals, which the
  // threads inherit, and takes them on a thread of its own.
  BatchInterrupt();
  ~BatchInterrupt();
  BatchInterrupt(const BatchInterrupt&) = delete;
  BatchInterrupt& operator=(const BatchInterrupt&) = delete;

  // After each commit: what is committed now. Exits when a signal came
  // (ending progress's line first, when given).
  void Committed(const std::string& source, uint64_t offset, Progress* progress);
  // At the command's end, after its output: exits when a signal came
  // meanwhile, saying what is committed.
  void Finish();

 private:
  [[noreturn]] void Exit(int sig);

  sigset_t set_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{0};
  std::mutex mu_;
  std::string source_;  // "" until the first commit
  uint64_t offset_ = 0;
};

}  // namespace snapsink
