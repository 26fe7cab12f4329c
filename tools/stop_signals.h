// SIGTERM/SIGINT as an event, for the commands that run until stopped
// (serve, run --follow, run --kafka).
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>

namespace snapsink {

// Construct before starting threads (it blocks the signals in this thread,
// which they inherit); OnSignal runs fn on a thread of its own at the first
// signal.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  void OnSignal(std::function<void()> fn);
  // Joins the signal thread (after fn, if a signal came): call it before
  // what fn uses is destroyed.
  void Finish();

 private:
  sigset_t set_;
  std::thread thread_;
  std::atomic<bool> done_{false};
};

}  // namespace snapsink
