// Progress on stderr for long commands: only on a terminal, never with --quiet.
// Wall-clock time feeds only this display, never an output or an identity.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace snapsink {

class Progress {
 public:
  Progress(std::string label, bool quiet);
  ~Progress();
  // bytes done of total (total < 0: unknown), input lines done.
  void Update(uint64_t bytes, int64_t total, uint64_t lines);
  // Ends the progress line, so what is printed next starts a line of its own.
  void Done();

 private:
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  // The rate and time left are measured from the first Update (bytes and
  // lines then may include what earlier runs read), and shown as "?" until
  // half a second of it has passed: the first commit comes microseconds
  // after the display starts, so lines/s over that was absurd.
  bool started_ = false;
  uint64_t first_bytes_ = 0, first_lines_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace snapsink
