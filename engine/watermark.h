// When a window is closed (SPEC 3): once the watermark, the greatest event
// time applied minus the lateness, has reached the window's end.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/timeutil.h"

namespace snapsink {

inline bool WindowClosed(int64_t window_ms, int64_t window_size_ms, std::optional<int64_t> max_event_ts,
                         int64_t lateness_ms) {
  if (!max_event_ts) return false;
  // Saturating: a lateness near INT64_MAX (init takes any duration) puts the
  // watermark below every window end instead of overflowing past it.
  int64_t watermark, end;
  if (__builtin_sub_overflow(*max_event_ts, lateness_ms, &watermark)) return lateness_ms < 0;
  if (__builtin_add_overflow(window_ms, window_size_ms, &end)) return false;
  return watermark >= end;
}

// The watermark, for display: max_event_ts - lateness, held at
// 0000-01-01 (no window starts earlier) when a huge lateness would put it
// before that or overflow.
inline int64_t Watermark(int64_t max_event_ts, int64_t lateness_ms) {
  int64_t watermark;
  if (__builtin_sub_overflow(max_event_ts, lateness_ms, &watermark)) {
    return lateness_ms < 0 ? kMaxTimestampMs : kMinTimestampMs;
  }
  if (watermark < kMinTimestampMs) return kMinTimestampMs;
  return watermark;
}

}  // namespace snapsink
