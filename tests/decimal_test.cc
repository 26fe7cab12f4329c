#include "engine/decimal.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace snapsink {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// Parses or fails the test; returns the micros.
int64_t Micros(const std::string& text) {
  int64_t v = 424242;
  const char* reason = nullptr;
  EXPECT_TRUE(ParseDecimalMicros(text, &v, &reason)) << text << ": " << (reason ? reason : "");
  return v;
}

// The reason a parse fails with ("" when it unexpectedly succeeds).
std::string Reject(const std::string& text) {
  int64_t v = 424242;
  const char* reason = nullptr;
  if (ParseDecimalMicros(text, &v, &reason)) {
    ADD_FAILURE() << text << " parsed to " << v;
    return "";
  }
  EXPECT_EQ(v, 424242) << "output touched on failure: " << text;
  return reason != nullptr ? reason : "(null)";
}

TEST(DecimalTest, Integers) {
  EXPECT_EQ(Micros("0"), 0);
  EXPECT_EQ(Micros("-0"), 0);
  EXPECT_EQ(Micros("3"), 3000000);
  EXPECT_EQ(Micros("-3"), -3000000);
  EXPECT_EQ(Micros("100"), 100000000);
  EXPECT_EQ(Micros("1234567"), 1234567000000);
}

TEST(DecimalTest, Fractions) {
  EXPECT_EQ(Micros("-12.5"), -12500000);
  EXPECT_EQ(Micros("0.1"), 100000);
  EXPECT_EQ(Micros("0.000001"), 1);
  EXPECT_EQ(Micros("-0.000001"), -1);
  EXPECT_EQ(Micros("0.0000010"), 1);
  EXPECT_EQ(Micros("37.500000"), 37500000);
  EXPECT_EQ(Micros("1.000000000000000000000000000000"), 1000000);
  EXPECT_EQ(Micros("0.0"), 0);
  EXPECT_EQ(Micros("0.00000000000000000000"), 0);
  EXPECT_EQ(Micros("10.05"), 10050000);
}

TEST(DecimalTest, Exponents) {
  EXPECT_EQ(Micros("1e3"), 1000000000);
  EXPECT_EQ(Micros("1E3"), 1000000000);
  EXPECT_EQ(Micros("1e+3"), 1000000000);
  EXPECT_EQ(Micros("2.5E-3"), 2500);
  EXPECT_EQ(Micros("1e-6"), 1);
  EXPECT_EQ(Micros("10e-7"), 1);
  EXPECT_EQ(Micros("1000000e-12"), 1);
  EXPECT_EQ(Micros("-1.5e1"), -15000000);
  EXPECT_EQ(Micros("0e999"), 0);
  EXPECT_EQ(Micros("0e-999"), 0);
  EXPECT_EQ(Micros("0.000e99999999999999999999999999"), 0);
  EXPECT_EQ(Micros("-0.0e-99999999999999999999999999"), 0);
  EXPECT_EQ(Micros("1e12"), 1000000000000000000);
  EXPECT_EQ(Micros("0.000000000001e12"), 1000000);
  EXPECT_EQ(Micros("1e0"), 1000000);
  EXPECT_EQ(Micros("1e-0"), 1000000);
  EXPECT_EQ(Micros("1e0000000000000000000000000000003"), 1000000000);
}

TEST(DecimalTest, MoreThanSixDecimalPlacesRejected) {
  EXPECT_EQ(Reject("0.0000001"), "more than 6 decimal places");
  EXPECT_EQ(Reject("1.0000001"), "more than 6 decimal places");
  EXPECT_EQ(Reject("-1.1234567"), "more than 6 decimal places");
  EXPECT_EQ(Reject("1e-7"), "more than 6 decimal places");
  EXPECT_EQ(Reject("2.5e-6"), "more than 6 decimal places");
  EXPECT_EQ(Reject("1e-99999999999999999999999"), "more than 6 decimal places");
  EXPECT_EQ(Reject("0.00000000000000000000000000000000001"), "more than 6 decimal places");
}

TEST(DecimalTest, Limits) {
  EXPECT_EQ(Micros("9223372036854.775807"), kMax);
  EXPECT_EQ(Micros("-9223372036854.775808"), kMin);
  EXPECT_EQ(Micros("9223372036854775807e-6"), kMax);
  EXPECT_EQ(Micros("-9223372036854775808e-6"), kMin);
  EXPECT_EQ(Micros("9223372036854.7758070000"), kMax);
}

TEST(DecimalTest, OutOfRangeRejected) {
  EXPECT_EQ(Reject("9223372036854.775808"), "out of range");
  EXPECT_EQ(Reject("-9223372036854.775809"), "out of range");
  EXPECT_EQ(Reject("9223372036855"), "out of range");
  EXPECT_EQ(Reject("1e13"), "out of range");
  EXPECT_EQ(Reject("1e19"), "out of range");
  EXPECT_EQ(Reject("1e999"), "out of range");
  EXPECT_EQ(Reject("-1e99999999999999999999999999"), "out of range");
  EXPECT_EQ(Reject("123456789012345678901234567890"), "out of range");
  EXPECT_EQ(Reject("18446744073709551616"), "out of range");
  EXPECT_EQ(Reject("18446744073709.551615"), "out of range");
}

TEST(DecimalTest, SyntaxRejected) {
  for (const char* bad : {"", "-", "+1", "01", "-01", "00", "1.", ".5", "-.5", "1e", "1e+",
                          "1e-", " 1", "1 ", "0x10", "1.5e", "--1", "NaN", "Infinity", "1,5",
                          "1.2.3", "1e2e3", "1ee2", "e3", "1.e3", "\"1\""}) {
    EXPECT_EQ(Reject(bad), "not a valid JSON number") << bad;
  }
}

TEST(DecimalTest, NullReasonIsAllowed) {
  int64_t v = 0;
  EXPECT_FALSE(ParseDecimalMicros("1e-7", &v, nullptr));
}

TEST(DecimalTest, FormatMicros) {
  EXPECT_EQ(FormatMicros(37500000), "37.5");
  EXPECT_EQ(FormatMicros(3000000), "3");
  EXPECT_EQ(FormatMicros(-1), "-0.000001");
  EXPECT_EQ(FormatMicros(0), "0");
  EXPECT_EQ(FormatMicros(1), "0.000001");
  EXPECT_EQ(FormatMicros(-12500000), "-12.5");
  EXPECT_EQ(FormatMicros(10050000), "10.05");
  EXPECT_EQ(FormatMicros(100000000), "100");
  EXPECT_EQ(FormatMicros(kMax), "9223372036854.775807");
  EXPECT_EQ(FormatMicros(kMin), "-9223372036854.775808");
}

TEST(DecimalTest, FormatRoundTrips) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{999999}, int64_t{1000000},
                    int64_t{-1000001}, int64_t{123456789012}, kMax, kMin, kMin + 1, kMax - 1}) {
    EXPECT_EQ(Micros(FormatMicros(v)), v) << v;
  }
}

TEST(DecimalTest, AddMicrosChecksOverflow) {
  int64_t out = 0;
  EXPECT_TRUE(AddMicros(1500000, -500000, &out));
  EXPECT_EQ(out, 1000000);
  EXPECT_TRUE(AddMicros(kMax, 0, &out));
  EXPECT_EQ(out, kMax);
  EXPECT_TRUE(AddMicros(kMax, kMin, &out));
  EXPECT_EQ(out, -1);
  EXPECT_FALSE(AddMicros(kMax, 1, &out));
  EXPECT_FALSE(AddMicros(kMin, -1, &out));
  EXPECT_FALSE(AddMicros(kMin, kMin, &out));
}

}  // namespace
}  // namespace snapsink
