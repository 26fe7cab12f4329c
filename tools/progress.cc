#include "tools/progress.h"

#include <unistd.h>

#include <cstdio>

namespace snapsink {

Progress::Progress(std::string label, bool quiet)
    : label_(std::move(label)), enabled_(!quiet && ::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { Done(); }

void Progress::Done() {
  if (shown_) std::fputc('\n', stderr);
  shown_ = false;
}

void Progress::Update(uint64_t bytes, int64_t total, uint64_t lines) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    start_ = now;
    first_bytes_ = bytes;
    first_lines_ = lines;
  }
  if (shown_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  shown_ = true;
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string rate = "?", left = "?";
  if (secs >= 0.5) {
    const double lines_done = static_cast<double>(lines >= first_lines_ ? lines - first_lines_ : 0);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", lines_done / secs);
    rate = buf;
    const double bytes_done = static_cast<double>(bytes >= first_bytes_ ? bytes - first_bytes_ : 0);
    if (total > 0 && bytes_done > 0 && static_cast<uint64_t>(total) >= bytes) {
      const double remaining = secs * static_cast<double>(static_cast<uint64_t>(total) - bytes) / bytes_done;
      left = std::to_string(static_cast<long>(remaining + 0.5)) + "s";
    }
  }
  // A file that grew while we read it must not show more done than its size.
  if (total >= 0 && bytes > static_cast<uint64_t>(total)) total = static_cast<int64_t>(bytes);
  char size[32] = "?";
  if (total >= 0) std::snprintf(size, sizeof size, "%.1f", static_cast<double>(total) / 1048576.0);
  std::fprintf(stderr, "\r%s: %.1f/%s MiB, %llu lines, %s lines/s, %s left   ", label_.c_str(),
               static_cast<double>(bytes) / 1048576.0, size, static_cast<unsigned long long>(lines), rate.c_str(),
               left.c_str());
}

}  // namespace snapsink
