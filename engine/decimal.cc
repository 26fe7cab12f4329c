// The number is read as digits d1..dn (integer part, then fraction part with
// F digits) and an exponent E: value = D * 10^(E - F). With D = M * 10^z
// (M without trailing zeros) the micros are M * 10^(z + E - F + 6); that
// shift must be >= 0 for the value to be exact, and the product must fit.
#include "engine/decimal.h"

#include <limits>

namespace snapsink {

namespace {

constexpr uint64_t kPow10[20] = {
    1ull,
    10ull,
    100ull,
    1000ull,
    10000ull,
    100000ull,
    1000000ull,
    10000000ull,
    100000000ull,
    1000000000ull,
    10000000000ull,
    100000000000ull,
    1000000000000ull,
    10000000000000ull,
    100000000000000ull,
    1000000000000000ull,
    10000000000000000ull,
    100000000000000000ull,
    1000000000000000000ull,
    10000000000000000000ull,
};

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Exponents beyond this are saturated; any non-zero mantissa is then out of
// range (or has too many decimals) anyway, and the arithmetic below cannot
// overflow: |E| + F stays far below 2^62 for any input a process can hold.
constexpr int64_t kExpSaturate = int64_t{1} << 40;

bool Fail(const char** reason, const char* why) {
  if (reason != nullptr) *reason = why;
  return false;
}

}  // namespace

bool ParseDecimalMicros(std::string_view s, int64_t* out, const char** reason) {
  static constexpr char kSyntax[] = "not a valid JSON number";
  const char* p = s.data();
  const char* const end = p + s.size();

  bool negative = false;
  if (p < end && *p == '-') {
    negative = true;
    ++p;
  }

  uint64_t m = 0;         // significant digits without trailing zeros
  bool m_overflow = false;
  int64_t pending = 0;    // zeros seen since the last non-zero digit
  int64_t frac_digits = 0;

  auto take = [&](char c) {
    if (c == '0') {
      ++pending;
      return;
    }
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (m_overflow) {
      pending = 0;
      return;
    }
    if (m == 0) {
      m = d;  // leading zeros carry no weight
    } else if (pending + 1 >= 20 ||
               __builtin_mul_overflow(m, kPow10[pending + 1], &m) ||
               __builtin_add_overflow(m, d, &m)) {
      m_overflow = true;
    }
    pending = 0;
  };

  // int = "0" / digit1-9 *DIGIT
  if (p == end || !IsDigit(*p)) return Fail(reason, kSyntax);
  if (*p == '0') {
    ++p;
    if (p < end && IsDigit(*p)) return Fail(reason, kSyntax);
    pending = 0;  // a lone leading zero is not significant
  } else {
    while (p < end && IsDigit(*p)) take(*p++);
  }

  // frac = "." 1*DIGIT
  if (p < end && *p == '.') {
    ++p;
    if (p == end || !IsDigit(*p)) return Fail(reason, kSyntax);
    while (p < end && IsDigit(*p)) {
      take(*p++);
      ++frac_digits;
    }
  }

  // exp = ("e" / "E") ["-" / "+"] 1*DIGIT
  int64_t exp = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool exp_negative = false;
    if (p < end && (*p == '+' || *p == '-')) {
      exp_negative = (*p == '-');
      ++p;
    }
    if (p == end || !IsDigit(*p)) return Fail(reason, kSyntax);
    while (p < end && IsDigit(*p)) {
      if (exp < kExpSaturate) exp = exp * 10 + (*p - '0');
      ++p;
    }
    if (exp_negative) exp = -exp;
  }
  if (p != end) return Fail(reason, kSyntax);

  if (m == 0 && !m_overflow) {
    *out = 0;
    return true;
  }

  // `pending` now counts the trailing zeros z of the digit string.
  const int64_t shift = pending + exp - frac_digits + 6;
  if (shift < 0) return Fail(reason, "more than 6 decimal places");
  if (m_overflow || shift >= 20) return Fail(reason, "out of range");

  uint64_t magnitude;
  if (__builtin_mul_overflow(m, kPow10[shift], &magnitude)) {
    return Fail(reason, "out of range");
  }
  const uint64_t limit =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
  if (magnitude > limit) return Fail(reason, "out of range");
  // Two's complement negation of the magnitude is well-defined in uint64.
  *out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

std::string FormatMicros(int64_t micros) {
  const bool negative = micros < 0;
  const uint64_t magnitude =
      negative ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
  uint64_t whole = magnitude / 1000000;
  uint64_t frac = magnitude % 1000000;

  char buf[48];
  char* end = buf + sizeof(buf);
  char* p = end;
  if (frac != 0) {
    int width = 6;
    while (frac % 10 == 0) {
      frac /= 10;
      --width;
    }
    for (int i = 0; i < width; ++i) {
      *--p = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    *--p = '.';
  }
  do {
    *--p = static_cast<char>('0' + whole % 10);
    whole /= 10;
  } while (whole != 0);
  if (negative) *--p = '-';
  return std::string(p, end);
}

}  // namespace snapsink
