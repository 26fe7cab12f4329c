// libFuzzer: one NDJSON event line through EventParser (with and without
// content ids), as ingest hands it over (a buffer with no padding beyond it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/event_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static snapsink::EventParser parser, content;
  static bool init = (content.SetContentIds(true), true);
  (void)init;
  std::vector<char> exact(data, data + size);  // no bytes past size: ASan sees an over-read
  snapsink::Event ev;
  std::string reason;
  parser.Parse(exact.data(), exact.size(), exact.size(), &ev, &reason);
  content.Parse(exact.data(), exact.size(), exact.size(), &ev, &reason);
  return 0;
}
