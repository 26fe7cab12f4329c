// When a window is closed (SPEC 3), and how one producer's clock is kept
// from moving the watermark for all (SPEC 13).
//
// The watermark is the newest *confirmed* event time minus the lateness. An
// applied event confirms its own time (ObserveEvent) when
//   - it is the first event of the root, or every event applied so far came
//     from its producer (a lone producer is the only clock there is), or
//   - it lies at most the reach (WatermarkReach: the greater of the lateness
//     and the window) ahead of the newest confirmed time: steady progress.
// An event further ahead than that is held: it is applied to its window, but
// moves nothing until an event of a second producer also lands beyond the
// reach (then the lower of the two is confirmed: two clocks agree that time
// got at least that far), or until the confirmed time comes within the reach
// of it, or until its own producer's events have gone a full reach past the
// held time with no other producer's event applied since the hold began
// (then it is the only one sending, and its newest time counts, as for a
// lone producer). So a clock wrong by years (2099), even in a burst of its
// own events, seals no window early and drops none under retention, and a
// clock wrong by less than the reach moves the watermark at most that far
// past the others' newest events.
//
// The bet, stated: a producer whose clock is wrong and which sends alone,
// for a whole reach of its own (wrong) clock while every other producer is
// silent, is taken at its word; a producer that really is the last one
// sending waits one reach of its own time before its jump counts.
//
// Only the newest held time matters: once two producers are held, the lower
// is confirmed, so at most one (producer, time) waits at any moment. The
// whole state is WatermarkState, stored in LMDB by the transaction that
// applies the events (meta::kMaxEventTs holds the confirmed time, as it held
// the newest time before this rule; meta::kWatermarkHold the rest), so a
// replay after a crash decides as the first run did. The rule reads event
// times in input order only: no wall clock.
//
// --max-ahead D (1d by default on a root with retention) is a reject rule on
// top: an event dated more than D after the newest confirmed time is
// rejected (EventTooFarAhead) and neither applies nor is held.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/root.h"
#include "engine/status.h"
#include "engine/store.h"
#include "engine/timeutil.h"

namespace snapsink {

namespace meta {
// The rest of the watermark's state beside kMaxEventTs (engine/root.h):
// whether events of more than one producer were applied, and a held
// far-ahead event. Absent on a root written before the rule.
inline constexpr char kWatermarkHold[] = "watermark_hold";
}  // namespace meta

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
// newest confirmed event time; never for the first event.
inline bool EventTooFarAhead(int64_t ts_ms, std::optional<int64_t> max_event_ts, int64_t max_ahead_ms) {
  if (max_ahead_ms <= 0 || !max_event_ts) return false;
  int64_t limit;
  if (__builtin_add_overflow(*max_event_ts, max_ahead_ms, &limit)) return false;
  return ts_ms > limit;
}

// How far ahead of the newest confirmed time an event may lie and still
// confirm itself: the greater of the lateness and the window (at least 1 ms).
int64_t WatermarkReach(const RootConfig& config);

struct WatermarkState {
  std::optional<int64_t> confirmed;  // newest confirmed event time (meta::kMaxEventTs); none before the first event
  bool many = false;                 // events of two or more producers were applied
  std::string lone;                  // while !many: the one producer whose events were applied
  std::optional<int64_t> held;       // a time beyond the reach, waiting for a second producer
  std::string held_producer;         // whose event it is
  bool others_since_hold = false;    // another producer's event was applied since the hold began
};

// Takes the applied event (producer, ts_ms) into *s by the rule above.
// Returns true when *s changed (it is then to be stored with the event).
bool ObserveEvent(WatermarkState* s, std::string_view producer, int64_t ts_ms, int64_t reach_ms);

// Reads the state as txn sees it. A root written before the rule has
// max_event_ts and no hold record: it reads as lone when its producer table
// holds exactly one producer, else as many, with nothing held.
Status LoadWatermark(Txn* txn, WatermarkState* s);

// Stores *s in txn: meta::kMaxEventTs and meta::kWatermarkHold.
Status StoreWatermark(Txn* txn, const WatermarkState& s);

// The rule in words, for `status`; with a held event, says which.
std::string WatermarkRule(const RootConfig& config, std::optional<int64_t> held = std::nullopt,
                          std::string_view held_producer = {});

}  // namespace snapsink
