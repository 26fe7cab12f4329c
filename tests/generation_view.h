// What a reader of one published generation sees, as comparable text: the
// power-cut and crash tests compare it between a crashed-and-rerun root and
// a clean one.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace snapsink::testing {

struct GenerationView {
  bool none = false;  // nothing published (Reader::Open said NotFound)
  uint64_t generation = 0;
  std::vector<std::string> windows;  // "WINDOW vVERSION"
  std::vector<std::string> rows;     // "WINDOW metric key count sum events"

  bool operator==(const GenerationView&) const = default;
};

std::ostream& operator<<(std::ostream& os, const GenerationView& v);

// Opens `generation` of root (0 = the current one) and reads every row of
// every window by Scan, and each again by Get (they must agree). A window
// without rows is a test failure. NotFound for generation 0 sets `none`.
void ReadGenerationView(const std::string& root, uint64_t generation, GenerationView* out);

}  // namespace snapsink::testing
