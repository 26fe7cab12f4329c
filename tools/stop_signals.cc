#include "tools/stop_signals.h"

#include <pthread.h>

namespace snapsink {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  // Blocked here, before any other thread starts, so every thread inherits
  // the mask and only the waiting thread takes the signal.
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

void StopSignals::OnSignal(std::function<void()> fn) {
  thread_ = std::thread([this, fn = std::move(fn)] {
    int sig = 0;
    sigwait(&set_, &sig);
    if (!done_) fn();
  });
}

StopSignals::~StopSignals() { Finish(); }

void StopSignals::Finish() {
  if (thread_.joinable()) {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }
}

}  // namespace snapsink
