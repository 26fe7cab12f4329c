// Numeric edges (values, times, sequence numbers), through the binary; each test is
// named after the bug it guards against.
#include <gtest/gtest.h>

#include <climits>
#include <string>

#include <boost/filesystem.hpp>

#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

std::string Event(uint64_t seq, const std::string& ts, const std::string& value, const std::string& op = "add") {
  EventLine e;
  e.Seq(seq).Ts(ts).Metric("m").Key("k").Value(value);
  if (op == "retract") e.Retract();  // "add" is the default op
  return e.Line();
}

// Every rejected line of a root, all rejects files concatenated.
std::string Rejects(const std::string& root) {
  std::string text;
  for (const auto& e : boost::filesystem::directory_iterator(root + "/rejects")) text += ReadFile(e.path().string());
  return text;
}

// Broke: ingest negated the value of a retract as `-value_micros`; for
// -9223372036854.775808 (INT64_MIN micros) that overflowed back to itself,
// so the retract was applied as if it were an add (wrong sign). Its
// negation is not representable: the line is rejected as an overflow, and
// nothing of it reaches the window.
TEST(NumericEdges, RetractOfInt64MinValueIsRejectedNotAppliedWithTheWrongSign) {
  TempDir d;
  ASSERT_EQ(Snapsink({"init", d / "r"}).exit_code, 0);
  // Under the bug the retract went in (count 1 - 1 = 0) and the add below
  // then overflowed the sum and was rejected instead.
  WriteFile(d / "in", Event(0, "2026-10-21T10:00:00Z", "1") +
                          Event(1, "2026-10-21T10:00:01Z", "-9223372036854.775808", "retract") +
                          Event(2, "2026-10-21T10:00:02Z", "-9223372036854.775808", "add"));
  RunResult r = Snapsink({"run", d / "r", d / "in", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rejects = Rejects(d / "r");
  EXPECT_NE(rejects.find("\"line\":2"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("the retract of -9223372036854.775808 would overflow"), std::string::npos) << rejects;
  RunResult q = Snapsink({"query", d / "r", "--format", "json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\"count\":2,\"sum\":-9223372036853.775808"), std::string::npos) << q.out;
}

// Broke: `init --lateness 9223372036854775807ms` was stored, and the close
// check computed max_event_ts - lateness, which overflowed for an event time
// before 1970 and closed every window at once.
TEST(NumericEdges, LatenessOfInt64MaxMsDoesNotOverflowTheCloseCheck) {
  // Read at run time, so the compiler cannot fold the overflow away (it is
  // undefined behaviour, which an optimised build may happen to get right).
  volatile int64_t lateness = INT64_MAX, before_1970 = -1000, year_0000 = kMinTimestampMs;
  EXPECT_FALSE(WindowClosed(0, 3600000, before_1970, lateness));
  EXPECT_FALSE(WindowClosed(kMinTimestampMs, 3600000, year_0000, lateness));
  EXPECT_FALSE(WindowClosed(0, 3600000, kMaxTimestampMs, INT64_MAX));
  EXPECT_TRUE(WindowClosed(0, 3600000, int64_t{7200000}, 0));
  EXPECT_FALSE(WindowClosed(INT64_MAX - 10, 3600000, INT64_MAX, 0));  // the end overflows: never closed

  TempDir d;
  RunResult init = Snapsink({"init", d / "r", "--lateness", "9223372036854775807ms"});
  ASSERT_EQ(init.exit_code, 0) << init.err;
  WriteFile(d / "in", Event(0, "1969-12-31T23:00:00Z", "1") + Event(1, "0001-01-01T00:00:00Z", "1"));
  RunResult run = Snapsink({"run", d / "r", d / "in", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  RunResult w = Snapsink({"inspect", d / "r", "windows", "--json"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(w.out.find("\"closed\":true"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("\"closed\":false"), std::string::npos) << w.out;
  EXPECT_NE(run.out.find("nothing to seal"), std::string::npos) << run.out;
  // The watermark is shown held at 0000-01-01, not overflowed (UBSan caught
  // max_event_ts - lateness in `status` and in "nothing to seal").
  RunResult st = Snapsink({"status", d / "r"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("watermark   0000-01-01T00:00:00Z"), std::string::npos) << st.out;
}

// Broke: with a window size that does not divide the time since
// 0000-01-01 (7d), the window of an event early in year 0000 started in
// year -1: it printed as "-001-12-..." and its snapshot directory name did
// not parse back, so gc never collected it. Such events are now rejected
// with a reason; a window can never start before 0000-01-01.
TEST(NumericEdges, WindowBeforeYear0000IsRejectedInsteadOfPrintedAndNeverCollected) {
  ASSERT_LT(WindowStart(kMinTimestampMs, 7 * 86400000LL), kMinTimestampMs);  // the case exists
  TempDir d;
  ASSERT_EQ(Snapsink({"init", d / "r", "--window", "7d"}).exit_code, 0);
  WriteFile(d / "in", Event(0, "0000-01-01T00:00:00Z", "1") + Event(1, "0000-03-01T00:00:00Z", "2"));
  RunResult run = Snapsink({"run", d / "r", d / "in", "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  RunResult src = Snapsink({"inspect", d / "r", "sources", "--json"});
  EXPECT_NE(src.out.find("\"rejected\":1"), std::string::npos) << src.out;
  RunResult w = Snapsink({"inspect", d / "r", "windows", "--json"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(w.out.find("\"window\":\"-"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("\"window\":\"0000-"), std::string::npos) << w.out;
  const std::string text = Rejects(d / "r");
  EXPECT_NE(text.find("its window would start before 0000-01-01T00:00:00Z"), std::string::npos) << text;
  // With a window that divides it, the same event is taken.
  ASSERT_EQ(Snapsink({"init", d / "r1", "--window", "1d"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"run", d / "r1", d / "in", "--final", "--quiet"}).exit_code, 0);
  RunResult w1 = Snapsink({"inspect", d / "r1", "windows", "--json"});
  EXPECT_NE(w1.out.find("\"window\":\"0000-01-01T00:00:00Z\""), std::string::npos) << w1.out;
}

}  // namespace
}  // namespace snapsink::testing
