#include "engine/timeutil.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace snapsink {
namespace {

constexpr int64_t k20261021T101503 = 1792577703000;
constexpr int64_t k20261021T100000 = 1792576800000;

int64_t Ms(const std::string& s) {
  int64_t ms = 424242;
  EXPECT_TRUE(ParseRfc3339Ms(s, &ms)) << s;
  return ms;
}

bool Rejects(const std::string& s) {
  int64_t ms = 0;
  return !ParseRfc3339Ms(s, &ms);
}

TEST(TimeTest, ParsesUtc) {
  EXPECT_EQ(Ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Ms("2026-10-21T10:15:03Z"), k20261021T101503);
  EXPECT_EQ(Ms("2017-01-01T00:00:00Z"), 1483228800000);
  EXPECT_EQ(Ms("1969-12-31T23:59:59Z"), -1000);
  EXPECT_EQ(Ms("0000-01-01T00:00:00Z"), kMinTimestampMs);
  EXPECT_EQ(Ms("9999-12-31T23:59:59.999Z"), kMaxTimestampMs);
}

TEST(TimeTest, SeparatorAndZoneLetterCase) {
  EXPECT_EQ(Ms("2026-10-21t10:15:03z"), k20261021T101503);
  EXPECT_EQ(Ms("2026-10-21 10:15:03Z"), k20261021T101503);
}

TEST(TimeTest, FractionsAreFlooredToMilliseconds) {
  EXPECT_EQ(Ms("2026-10-21T10:15:03.5Z"), k20261021T101503 + 500);
  EXPECT_EQ(Ms("2026-10-21T10:15:03.12Z"), k20261021T101503 + 120);
  EXPECT_EQ(Ms("2026-10-21T10:15:03.123Z"), k20261021T101503 + 123);
  EXPECT_EQ(Ms("2026-10-21T10:15:03.123999999999Z"), k20261021T101503 + 123);
  EXPECT_EQ(Ms("2026-10-21T10:15:03.0009Z"), k20261021T101503);
  EXPECT_EQ(Ms("1969-12-31T23:59:59.5Z"), -500);
  EXPECT_EQ(Ms("1969-12-31T23:59:59.9999Z"), -1);  // floor, not toward zero
}

TEST(TimeTest, Offsets) {
  EXPECT_EQ(Ms("2026-10-21T12:15:03.5+02:00"), Ms("2026-10-21T10:15:03.500Z"));
  EXPECT_EQ(Ms("2026-10-21T12:15:03.5+02:00"), k20261021T101503 + 500);
  EXPECT_EQ(Ms("2026-10-21T04:45:03-05:30"), k20261021T101503);
  EXPECT_EQ(Ms("2026-10-21T10:15:03+00:00"), k20261021T101503);
  EXPECT_EQ(Ms("2026-10-21T10:15:03-00:00"), k20261021T101503);
  EXPECT_EQ(Ms("2026-10-22T00:00:00+13:45"), Ms("2026-10-21T10:15:00Z"));
  EXPECT_EQ(Ms("1970-01-01T00:00:00+00:01"), -60000);
}

TEST(TimeTest, LeapYears) {
  EXPECT_EQ(Ms("2000-02-29T12:00:00Z"), 951825600000);
  EXPECT_EQ(Ms("2024-02-29T00:00:00Z"), Ms("2024-03-01T00:00:00Z") - 86400000);
  EXPECT_TRUE(Rejects("2023-02-29T00:00:00Z"));
  EXPECT_TRUE(Rejects("1900-02-29T00:00:00Z"));
  EXPECT_TRUE(Rejects("2024-02-30T00:00:00Z"));
}

TEST(TimeTest, LeapSecondIsTheNextSecond) {
  EXPECT_EQ(Ms("2016-12-31T23:59:60Z"), Ms("2017-01-01T00:00:00Z"));
  EXPECT_EQ(Ms("2016-12-31T23:59:60.25Z"), Ms("2017-01-01T00:00:00.25Z"));
  EXPECT_TRUE(Rejects("2016-12-31T23:59:61Z"));
}

TEST(TimeTest, RejectsOutOfRangeFields) {
  EXPECT_TRUE(Rejects("2026-13-01T00:00:00Z"));
  EXPECT_TRUE(Rejects("2026-00-01T00:00:00Z"));
  EXPECT_TRUE(Rejects("2026-10-00T00:00:00Z"));
  EXPECT_TRUE(Rejects("2026-10-32T00:00:00Z"));
  EXPECT_TRUE(Rejects("2026-04-31T00:00:00Z"));
  EXPECT_TRUE(Rejects("2026-10-21T24:00:00Z"));
  EXPECT_TRUE(Rejects("2026-10-21T10:60:00Z"));
  EXPECT_TRUE(Rejects("2026-10-21T10:15:03+24:00"));
  EXPECT_TRUE(Rejects("2026-10-21T10:15:03+02:60"));
}

TEST(TimeTest, RejectsMalformed) {
  for (const char* bad : {
           "", "2026-10-21", "2026-10-21T10:15:03", "2026-10-21T10:15Z", "2026-10-21T10:15:03.Z",
           "2026-10-21T10:15:03.5", "2026-10-21X10:15:03Z", "2026-10-21T10:15:03+2:00",
           "2026-10-21T10:15:03+0200", "2026-10-21T10:15:03+02", "2026-10-21T10:15:03Z ",
           " 2026-10-21T10:15:03Z", "2026-10-21T10:15:03ZZ", "26-10-21T10:15:03Z",
           "+2026-10-21T10:15:03Z", "2026/10/21T10:15:03Z", "2026-1a-21T10:15:03Z",
           "2026-10-21T10:15:03,5Z", "20261021T101503Z", "1792577703000"}) {
    EXPECT_TRUE(Rejects(bad)) << bad;
  }
}

TEST(TimeTest, WindowStartFloors) {
  EXPECT_EQ(WindowStart(k20261021T101503, 3600000), k20261021T100000);
  EXPECT_EQ(WindowStart(k20261021T100000, 3600000), k20261021T100000);
  EXPECT_EQ(WindowStart(k20261021T100000 - 1, 3600000), k20261021T100000 - 3600000);
  EXPECT_EQ(WindowStart(0, 1000), 0);
  EXPECT_EQ(WindowStart(999, 1000), 0);
  EXPECT_EQ(WindowStart(-1, 1000), -1000);
  EXPECT_EQ(WindowStart(-1000, 1000), -1000);
  EXPECT_EQ(WindowStart(-1001, 1000), -2000);
  EXPECT_EQ(WindowStart(kMinTimestampMs, 86400000), kMinTimestampMs);
  EXPECT_EQ(WindowStart(kMaxTimestampMs, 86400000), kMaxTimestampMs + 1 - 86400000);
}

TEST(TimeTest, FormatIso) {
  EXPECT_EQ(FormatIso(k20261021T100000), "2026-10-21T10:00:00Z");
  EXPECT_EQ(FormatIso(k20261021T101503 + 123), "2026-10-21T10:15:03.123Z");
  EXPECT_EQ(FormatIso(k20261021T101503 + 5), "2026-10-21T10:15:03.005Z");
  EXPECT_EQ(FormatIso(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatIso(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIso(-86400000), "1969-12-31T00:00:00Z");
  EXPECT_EQ(FormatIso(kMinTimestampMs), "0000-01-01T00:00:00Z");
  EXPECT_EQ(FormatIso(kMaxTimestampMs), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIso(951825600000), "2000-02-29T12:00:00Z");
}

TEST(TimeTest, FormatCompact) {
  EXPECT_EQ(FormatCompact(k20261021T100000), "20261021T100000Z");
  EXPECT_EQ(FormatCompact(k20261021T101503 + 999), "20261021T101503Z");
  EXPECT_EQ(FormatCompact(-1000), "19691231T235959Z");
  EXPECT_EQ(FormatCompact(kMinTimestampMs), "00000101T000000Z");
}

TEST(TimeTest, FormatParseRoundTrip) {
  for (int64_t ms : {int64_t{0}, int64_t{-1}, k20261021T101503 + 7, kMinTimestampMs,
                     kMaxTimestampMs, int64_t{951825600000}, int64_t{-62135596800000}}) {
    EXPECT_EQ(Ms(FormatIso(ms)), ms) << ms;
    int64_t back = 0;
    ASSERT_TRUE(ParseWindowName(FormatCompact(ms), &back)) << ms;
    EXPECT_EQ(back, ms - (ms % 1000 + 1000) % 1000) << ms;
  }
}

TEST(TimeTest, ParseWindowNameBothForms) {
  int64_t ms = 0;
  ASSERT_TRUE(ParseWindowName("2026-10-21T10:00:00Z", &ms));
  EXPECT_EQ(ms, k20261021T100000);
  ms = 0;
  ASSERT_TRUE(ParseWindowName("20261021T100000Z", &ms));
  EXPECT_EQ(ms, k20261021T100000);
  ms = 0;
  ASSERT_TRUE(ParseWindowName("2026-10-21T12:00:00+02:00", &ms));
  EXPECT_EQ(ms, k20261021T100000);
  for (const char* bad : {"", "20261021T100000", "20261021 100000Z", "20261321T100000Z",
                          "20261021T240000Z", "2026102T1000000Z", "20261021T10000xZ",
                          "2026-10-21", "latest"}) {
    EXPECT_FALSE(ParseWindowName(bad, &ms)) << bad;
  }
}

TEST(TimeTest, ParseDuration) {
  const struct {
    const char* text;
    int64_t ms;
  } kCases[] = {{"500ms", 500},          {"30s", 30000},       {"1m", 60000},
                {"15m", 900000},         {"1h", 3600000},      {"1d", 86400000},
                {"0s", 0},               {"0ms", 0},           {"90m", 5400000},
                {"106751991167d", 106751991167LL * 86400000}};
  for (const auto& c : kCases) {
    int64_t ms = -1;
    ASSERT_TRUE(ParseDuration(c.text, &ms)) << c.text;
    EXPECT_EQ(ms, c.ms) << c.text;
  }
  for (const char* bad : {"", "m", "1", "1x", "-1m", "+1m", "1 m", " 1m", "1m ", "1.5h", "1hm",
                          "1M", "1H", "1mss", "9223372036854775808ms", "106751991168d",
                          "99999999999999999999s"}) {
    int64_t ms = 0;
    EXPECT_FALSE(ParseDuration(bad, &ms)) << bad;
  }
}

TEST(TimeTest, FormatDuration) {
  EXPECT_EQ(FormatDuration(3600000), "1h");
  EXPECT_EQ(FormatDuration(5400000), "90m");
  EXPECT_EQ(FormatDuration(86400000), "1d");
  EXPECT_EQ(FormatDuration(2 * 86400000), "2d");
  EXPECT_EQ(FormatDuration(25 * 3600000), "25h");
  EXPECT_EQ(FormatDuration(30000), "30s");
  EXPECT_EQ(FormatDuration(1500), "1500ms");
  EXPECT_EQ(FormatDuration(500), "500ms");
  EXPECT_EQ(FormatDuration(0), "0s");
  for (int64_t ms : {int64_t{1}, int64_t{999}, int64_t{60000}, int64_t{900000}, int64_t{3600001}}) {
    int64_t back = -1;
    ASSERT_TRUE(ParseDuration(FormatDuration(ms), &back)) << ms;
    EXPECT_EQ(back, ms);
  }
}

}  // namespace
}  // namespace snapsink
