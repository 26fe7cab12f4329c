#include "engine/crash_point.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace snapsink {

void MaybeCrash(const char* point) {
  static const char* const target = std::getenv("SNAPSINK_CRASH_AT");
  if (target == nullptr || std::strcmp(target, point) != 0) return;
  static const long wanted = [] {
    const char* hit = std::getenv("SNAPSINK_CRASH_HIT");
    long n = hit ? std::strtol(hit, nullptr, 10) : 1;
    return n < 1 ? 1L : n;
  }();
  static std::atomic<long> hits{0};
  if (++hits == wanted) _exit(99);
}

}  // namespace snapsink
