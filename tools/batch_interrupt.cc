#include "tools/batch_interrupt.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>

#include "tools/progress.h"

namespace snapsink {

BatchInterrupt::BatchInterrupt() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  thread_ = std::thread([this] {
    int sig = 0;
    sigwait(&set_, &sig);
    if (done_) return;
    signal_ = sig;
    // On a terminal the progress line is open: start a line of its own.
    std::fprintf(stderr, "%sinterrupting: the batch in progress commits first (%s again stops at once)\n",
                 ::isatty(STDERR_FILENO) == 1 ? "\n" : "", sig == SIGINT ? "Ctrl-C" : "the signal");
    sigwait(&set_, &sig);
    if (done_) return;
    std::fflush(stdout);
    std::fprintf(stderr, "interrupted again: stopped at once; what was committed stays, run the same command to go on\n");
    ::_exit(128 + sig);
  });
}

BatchInterrupt::~BatchInterrupt() {
  done_ = true;
  // Wakes the thread (at either of its waits) to return.
  pthread_kill(thread_.native_handle(), SIGTERM);
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void BatchInterrupt::Committed(const std::string& source, uint64_t offset, Progress* progress) {
  {
    std::lock_guard<std::mutex> l(mu_);
    source_ = source;
    offset_ = offset;
  }
  const int sig = signal_;
  if (sig == 0) return;
  if (progress != nullptr) progress->Done();
  Exit(sig);
}

void BatchInterrupt::Finish() {
  if (const int sig = signal_; sig != 0) Exit(sig);
}

void BatchInterrupt::Exit(int sig) {
  std::fflush(stdout);
  std::lock_guard<std::mutex> l(mu_);
  if (source_.empty()) {
    std::fprintf(stderr, "interrupted: nothing committed by this run; run the same command to go on\n");
  } else {
    std::fprintf(stderr, "interrupted: committed up to %s offset %llu; run the same command to go on\n",
                 source_.c_str(), static_cast<unsigned long long>(offset_));
  }
  std::fflush(stderr);
  ::_exit(128 + sig);
}

}  // namespace snapsink
