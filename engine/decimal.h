// Exact fixed-point decimals with 6 fractional digits (SPEC 3).
//
// A value is an int64_t count of "micros" (millionths): 37.5 is 37500000.
// The representable range is therefore -9223372036854.775808 ..
// 9223372036854.775807. Values are never routed through double: the text of a
// JSON number is converted digit by digit, so "0.1" is exactly 100000.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace snapsink {

// Parses the raw text of a JSON number (RFC 8259 grammar, exactly as written:
// "-12.5", "3", "1e3", "2.5E-3", "0.0000010") into *out. Surrounding
// whitespace is not accepted; strip it first. Exponents are exact: "1e-6" is
// 1 micro, "0e999" is 0, "10e-7" is 1 micro, "1e-7" is rejected.
// On failure returns false, leaves *out alone and points *reason (if not null)
// at a static string: "not a valid JSON number", "more than 6 decimal places"
// (a non-zero digit beyond the 6th fractional place; trailing zeros are
// fine), or "out of range" (|value| does not fit int64 micros).
bool ParseDecimalMicros(std::string_view json_number_text, int64_t* out,
                        const char** reason);

// The shortest exact decimal for `micros`: 37500000 -> "37.5", 3000000 ->
// "3", -1 -> "-0.000001", 0 -> "0". Every int64 value, INT64_MIN included,
// round-trips through ParseDecimalMicros.
std::string FormatMicros(int64_t micros);

// *out = a + b; false (and *out unspecified) on int64 overflow.
inline bool AddMicros(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// a + b modulo 2^64: how totals over rows (count, events, sum) add up.
// Totals wrap the same way everywhere they are computed (seal, the stats
// section, publish, verify), so they still compare equal; only a total past
// int64 (9.2e18, no real input reaches it) reads as wrapped.
inline int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

}  // namespace snapsink
