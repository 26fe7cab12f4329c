// Time as int64_t milliseconds since the Unix epoch, UTC (negative = before
// 1970), windows and durations (SPEC 1, 3).
//
// Calendar arithmetic is proleptic Gregorian, after Howard Hinnant's
// days_from_civil / civil_from_days, with no leap second table: a second
// field of 60 (a leap second) is read as the first second of the next minute,
// so "2016-12-31T23:59:60Z" == "2017-01-01T00:00:00Z" (events in a leap
// second land in the window that follows it; their order is kept).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace snapsink {

// The event times the engine accepts: 0000-01-01T00:00:00.000Z through
// 9999-12-31T23:59:59.999Z, the years a 4-digit RFC 3339 year can name.
constexpr int64_t kMinTimestampMs = -62167219200000;   // 0000-01-01T00:00:00Z
constexpr int64_t kMaxTimestampMs = 253402300799999;   // 9999-12-31T23:59:59.999Z

// Parses an RFC 3339 date-time, "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)":
// 'T' may also be 't' or ' ', 'Z' may be 'z'; the fraction has any number of
// digits and is truncated to whole milliseconds toward negative infinity
// (offsets are whole minutes, so floor of the local time is floor of UTC).
// Validates month, day (leap years included), hour < 24, minute < 60,
// second <= 60 (see above), offset hour < 24 and offset minute < 60.
// The result may lie slightly outside [kMinTimestampMs, kMaxTimestampMs] when
// an offset pushes it over a year 0000/9999 edge; callers range-check.
bool ParseRfc3339Ms(std::string_view s, int64_t* ms);

// Start of the tumbling window of size window_ms (> 0) holding ts_ms: floor
// division, so WindowStart(-1, 1000) == -1000. Requires that the result is
// representable (always true for timestamps within kMin/kMaxTimestampMs).
int64_t WindowStart(int64_t ts_ms, int64_t window_ms);

// "2026-10-21T10:00:00Z", or "2026-10-21T10:15:03.123Z" when ms has a
// sub-second part. Years outside 0000..9999 are printed with a sign or more
// digits and do not parse back.
std::string FormatIso(int64_t ms);

// "20261021T100000Z": the form used in paths. Seconds precision (a sub-second
// part is floored away); meant for window starts.
std::string FormatCompact(int64_t ms);

// Parses a window name in either of the forms above (the compact form, or any
// RFC 3339 date-time ParseRfc3339Ms accepts).
bool ParseWindowName(std::string_view s, int64_t* ms);

// Parses "<integer><unit>" with unit ms|s|m|h|d ("500ms", "30s", "15m",
// "1h", "1d"). No sign, no spaces, no mixed units. "0s" parses to 0: callers
// that need a positive duration check. False on syntax errors and when the
// result does not fit int64 milliseconds.
bool ParseDuration(std::string_view s, int64_t* ms);

// The largest unit that is exact: 3600000 -> "1h", 5400000 -> "90m",
// 86400000 -> "1d", 1500 -> "1500ms", 0 -> "0s". ParseDuration reads it back.
std::string FormatDuration(int64_t ms);

}  // namespace snapsink
