// When a window is closed (SPEC 3): once the watermark, the greatest event
// time applied minus the lateness, has reached the window's end.
//
// One producer's clock cannot move it (SPEC 13): with --max-ahead D (1d by
// default on a root with retention), ingest rejects an event dated more than D after the greatest
// event time applied so far (EventTooFarAhead), so that event neither
// applies nor moves the watermark. The rule reads only event times in input
// order, so a replay decides the same. The first event of a root has
// nothing to be ahead of and is always taken.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

// True when an event at ts_ms is more than max_ahead_ms (> 0) after the
// greatest event time applied so far; never for the first event.
inline bool EventTooFarAhead(int64_t ts_ms, std::optional<int64_t> max_event_ts, int64_t max_ahead_ms) {
  if (max_ahead_ms <= 0 || !max_event_ts) return false;
  int64_t limit;
  if (__builtin_add_overflow(*max_event_ts, max_ahead_ms, &limit)) return false;
  return ts_ms > limit;
}

// The rule in words, for `status`.
inline std::string WatermarkRule(int64_t lateness_ms, int64_t max_ahead_ms) {
  std::string rule = "newest event time applied minus lateness " + FormatDuration(lateness_ms);
  if (max_ahead_ms > 0) {
    return rule + "; an event dated more than " + FormatDuration(max_ahead_ms) +
           " after the newest is rejected (beyond max-ahead) and moves nothing";
  }
  return rule + "; no max-ahead limit: one event dated far ahead moves it";
}

}  // namespace snapsink
