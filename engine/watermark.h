// When a window is closed (SPEC 3): once the watermark, the greatest event
// time applied minus the lateness, has reached the window's end.
#pragma once

#include <cstdint>
#include <optional>

namespace snapsink {

inline bool WindowClosed(int64_t window_ms, int64_t window_size_ms, std::optional<int64_t> max_event_ts,
                         int64_t lateness_ms) {
  if (!max_event_ts) return false;
  return *max_event_ts - lateness_ms >= window_ms + window_size_ms;
}

}  // namespace snapsink
