#include "engine/timeutil.h"

#include <cstdio>

namespace snapsink {

namespace {

constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kMsPerMinute = 60 * kMsPerSecond;
constexpr int64_t kMsPerHour = 60 * kMsPerMinute;
constexpr int64_t kMsPerDay = 24 * kMsPerHour;

// Days since 1970-01-01 of the proleptic Gregorian date y-m-d (m 1..12).
// Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms".
constexpr int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);           // [0, 399]
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  // [0, 365]
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          // [0, 146096]
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct Civil {
  int64_t y;
  unsigned m, d;
};

constexpr Civil CivilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return Civil{y + (m <= 2), m, d};
}

static_assert(DaysFromCivil(1970, 1, 1) == 0);
static_assert(DaysFromCivil(0, 1, 1) * kMsPerDay == kMinTimestampMs);
static_assert((DaysFromCivil(10000, 1, 1) * kMsPerDay - 1) == kMaxTimestampMs);

constexpr bool IsLeap(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return (m == 2 && IsLeap(y)) ? 29 : kDays[m - 1];
}

inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Reads n digits at s[pos..pos+n) into *v.
bool Digits(std::string_view s, size_t pos, size_t n, unsigned* v) {
  if (pos + n > s.size()) return false;
  unsigned r = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!IsAsciiDigit(s[i])) return false;
    r = r * 10 + static_cast<unsigned>(s[i] - '0');
  }
  *v = r;
  return true;
}

// Assembles a UTC instant from validated-or-not civil fields.
bool Compose(unsigned y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned sec,
             int64_t* ms_out) {
  if (mo < 1 || mo > 12) return false;
  if (d < 1 || d > DaysInMonth(y, mo)) return false;
  if (h > 23 || mi > 59 || sec > 60) return false;
  const int64_t days = DaysFromCivil(y, mo, d);
  *ms_out = days * kMsPerDay + h * kMsPerHour + mi * kMsPerMinute + sec * kMsPerSecond;
  return true;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

bool ParseRfc3339Ms(std::string_view s, int64_t* ms) {
  // 0123456789012345678
  // YYYY-MM-DDTHH:MM:SS
  unsigned y, mo, d, h, mi, sec;
  if (s.size() < 20) return false;  // shortest: 19 characters and "Z"
  if (!Digits(s, 0, 4, &y) || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d)) {
    return false;
  }
  if (s[10] != 'T' && s[10] != 't' && s[10] != ' ') return false;
  if (!Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec)) {
    return false;
  }
  size_t pos = 19;
  int64_t frac_ms = 0;
  if (s[pos] == '.') {
    ++pos;
    const size_t start = pos;
    while (pos < s.size() && IsAsciiDigit(s[pos])) {
      if (pos - start < 3) frac_ms = frac_ms * 10 + (s[pos] - '0');
      ++pos;
    }
    const size_t n = pos - start;
    if (n == 0) return false;
    for (size_t i = n; i < 3; ++i) frac_ms *= 10;  // ".5" is 500 ms
  }
  if (pos >= s.size()) return false;
  int64_t offset_ms = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    const bool negative = s[pos] == '-';
    unsigned oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om)) {
      return false;
    }
    if (oh > 23 || om > 59) return false;
    offset_ms = oh * kMsPerHour + om * kMsPerMinute;
    if (negative) offset_ms = -offset_ms;
    pos += 6;
  } else {
    return false;
  }
  if (pos != s.size()) return false;

  int64_t local;
  if (!Compose(y, mo, d, h, mi, sec, &local)) return false;
  *ms = local + frac_ms - offset_ms;
  return true;
}

int64_t WindowStart(int64_t ts_ms, int64_t window_ms) {
  return FloorDiv(ts_ms, window_ms) * window_ms;
}

namespace {

// Splits ms into a civil date and time of day; returns the millisecond part.
struct Broken {
  Civil date;
  unsigned h, mi, s, ms;
};

Broken Break(int64_t ms) {
  const int64_t days = FloorDiv(ms, kMsPerDay);
  int64_t rem = ms - days * kMsPerDay;  // [0, kMsPerDay)
  Broken b;
  b.date = CivilFromDays(days);
  b.h = static_cast<unsigned>(rem / kMsPerHour);
  rem %= kMsPerHour;
  b.mi = static_cast<unsigned>(rem / kMsPerMinute);
  rem %= kMsPerMinute;
  b.s = static_cast<unsigned>(rem / kMsPerSecond);
  b.ms = static_cast<unsigned>(rem % kMsPerSecond);
  return b;
}

}  // namespace

std::string FormatIso(int64_t ms) {
  const Broken b = Break(ms);
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02u:%02u:%02u",
                        static_cast<long long>(b.date.y), b.date.m, b.date.d, b.h, b.mi, b.s);
  if (b.ms != 0) n += std::snprintf(buf + n, sizeof(buf) - n, ".%03u", b.ms);
  buf[n++] = 'Z';
  return std::string(buf, n);
}

std::string FormatCompact(int64_t ms) {
  const Broken b = Break(ms);
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf), "%04lld%02u%02uT%02u%02u%02uZ",
                        static_cast<long long>(b.date.y), b.date.m, b.date.d, b.h, b.mi, b.s);
  return std::string(buf, n);
}

bool ParseWindowName(std::string_view s, int64_t* ms) {
  // 0123456789012345
  // YYYYMMDDTHHMMSSZ
  if (s.size() == 16 && (s[8] == 'T' || s[8] == 't') && (s[15] == 'Z' || s[15] == 'z')) {
    unsigned y, mo, d, h, mi, sec;
    if (!Digits(s, 0, 4, &y) || !Digits(s, 4, 2, &mo) || !Digits(s, 6, 2, &d) ||
        !Digits(s, 9, 2, &h) || !Digits(s, 11, 2, &mi) || !Digits(s, 13, 2, &sec)) {
      return false;
    }
    return Compose(y, mo, d, h, mi, sec, ms);
  }
  return ParseRfc3339Ms(s, ms);
}

bool ParseDuration(std::string_view s, int64_t* ms) {
  size_t pos = 0;
  int64_t n = 0;
  while (pos < s.size() && IsAsciiDigit(s[pos])) {
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, s[pos] - '0', &n)) {
      return false;
    }
    ++pos;
  }
  if (pos == 0) return false;
  const std::string_view unit = s.substr(pos);
  int64_t scale;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = kMsPerSecond;
  } else if (unit == "m") {
    scale = kMsPerMinute;
  } else if (unit == "h") {
    scale = kMsPerHour;
  } else if (unit == "d") {
    scale = kMsPerDay;
  } else {
    return false;
  }
  int64_t r;
  if (__builtin_mul_overflow(n, scale, &r)) return false;
  *ms = r;
  return true;
}

std::string FormatDuration(int64_t ms) {
  if (ms == 0) return "0s";
  static constexpr struct {
    int64_t scale;
    const char* unit;
  } kUnits[] = {{kMsPerDay, "d"}, {kMsPerHour, "h"}, {kMsPerMinute, "m"}, {kMsPerSecond, "s"}};
  for (const auto& u : kUnits) {
    if (ms % u.scale == 0) return std::to_string(ms / u.scale) + u.unit;
  }
  return std::to_string(ms) + "ms";
}

}  // namespace snapsink
