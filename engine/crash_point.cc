#include "engine/crash_point.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace snapsink {

namespace {

// The N-th hit (N = the environment's `hit_var`, default 1) of `point`, when
// the environment's `point_var` names it. Each variable pair counts its own hits.
struct HookTarget {
  const char* point = nullptr;
  long wanted = 1;
  std::atomic<long> hits{0};

  HookTarget(const char* point_var, const char* hit_var) : point(std::getenv(point_var)) {
    const char* hit = std::getenv(hit_var);
    const long n = hit ? std::strtol(hit, nullptr, 10) : 1;
    wanted = n < 1 ? 1 : n;
  }
  bool Hit(const char* at) { return point != nullptr && std::strcmp(point, at) == 0 && ++hits == wanted; }
};

}  // namespace

void MaybeCrash(const char* point) {
  static HookTarget pause("SNAPSINK_PAUSE_AT", "SNAPSINK_PAUSE_HIT");
  if (pause.Hit(point)) {
    // Says so first: a test waits for the process to be stopped, not for a time.
    char line[160];
    const int n = std::snprintf(line, sizeof(line), "snapsink: pausing at %s (SNAPSINK_PAUSE_AT)\n", point);
    if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(std::min(n, int{sizeof(line) - 1})));
    raise(SIGSTOP);  // the whole process; SIGCONT resumes it right here
  }
  static HookTarget crash("SNAPSINK_CRASH_AT", "SNAPSINK_CRASH_HIT");
  if (crash.Hit(point)) _exit(99);
}

}  // namespace snapsink
