// include/snapsink/utilities/query_text.h: the one parser from query text
// to a QuerySpec, which `snapsink query` and the server's /v1/query both use.
#include <gtest/gtest.h>

#include "snapsink/utilities/query_text.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

constexpr int64_t k10h = 1792576800000LL;  // 2026-10-21T10:00:00Z

// Each form of a window names the window holding it.
TEST(QueryText, EveryWindowFormNamesTheWindowHoldingIt) {
  for (const char* text : {"2026-10-21T10:00:00Z", "20261021T100000Z", "2026-10-21T10:30:00.5Z",
                           "2026-10-21T12:59:59+02:00", "1792576800000", "1792578600000"}) {
    api::QueryText t;
    t.window = text;
    api::QuerySpec spec;
    ASSERT_STATUS_OK(api::ParseQuery(t, kHour, &spec)) << text;
    ASSERT_TRUE(spec.window.has_value()) << text;
    EXPECT_EQ(*spec.window, k10h) << text;
  }
}

TEST(QueryText, EveryFieldReachesTheSpec) {
  api::QueryText t;
  t.from = "2026-10-21T10:15:00Z";
  t.to = "1792587600000";  // 13:00
  t.metric = "orders";
  t.key = "";
  t.metric_prefix = "ord";
  t.key_prefix = "e";
  t.rollup = "2h";
  api::QuerySpec spec;
  spec.window = 1;  // replaced whole
  ASSERT_STATUS_OK(api::ParseQuery(t, kHour, &spec));
  EXPECT_FALSE(spec.window.has_value());
  EXPECT_EQ(spec.from, k10h);
  EXPECT_EQ(spec.to, k10h + 3 * kHour);
  EXPECT_EQ(spec.metric, "orders");
  EXPECT_EQ(spec.key, std::optional<std::string>(""));
  EXPECT_EQ(spec.metric_prefix, "ord");
  EXPECT_EQ(spec.key_prefix, "e");
  EXPECT_EQ(spec.rollup_ms, 2 * kHour);
  t.rollup = "all";
  ASSERT_STATUS_OK(api::ParseQuery(t, kHour, &spec));
  EXPECT_EQ(spec.rollup_ms, 0);
}

// No window, range or rollup: the window size is not read (the CLI does
// not open the root's state for it).
TEST(QueryText, NoWindowNeedsNoWindowSize) {
  api::QueryText t;
  t.metric = "orders";
  api::QuerySpec spec;
  ASSERT_STATUS_OK(api::ParseQuery(t, 0, &spec));
  EXPECT_EQ(spec.metric, "orders");
  t.window = "1792576800000";
  const Status s = api::ParseQuery(t, 0, &spec);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
}

// The messages name each value as the caller calls it: a request's
// parameter by default, the CLI's flag when told.
TEST(QueryText, ErrorsNameTheValueAsTheCallerCallsIt) {
  const api::QueryTextNames flags{"--window", "--from", "--to", "--rollup"};
  api::QuerySpec spec;
  api::QueryText t;
  t.window = "garbage";
  const std::string forms = std::string("': expected ") + api::kWindowForms;
  EXPECT_EQ(api::ParseQuery(t, kHour, &spec).message(), "window 'garbage" + forms);
  EXPECT_EQ(api::ParseQuery(t, kHour, &spec, flags).message(), "--window 'garbage" + forms);
  t = {};
  t.from = "2026-10-21T12:00:00Z";
  t.to = "2026-10-21T10:00:00Z";
  EXPECT_EQ(api::ParseQuery(t, kHour, &spec, flags).message(),
            "--from '2026-10-21T12:00:00Z' (window 2026-10-21T12:00:00Z) is after --to '2026-10-21T10:00:00Z' "
            "(window 2026-10-21T10:00:00Z)");
  t.to = "x";
  EXPECT_EQ(api::ParseQuery(t, kHour, &spec).message(), "to 'x" + forms);
  t = {};
  t.rollup = "90m";
  EXPECT_EQ(api::ParseQuery(t, kHour, &spec).message(),
            "rollup '90m': expected all or a multiple of the window size 1h (such as 1h or 1d)");
  // Beyond the times a window name can say: refused, not wrapped.
  t = {};
  t.window = "253402300800000";
  EXPECT_TRUE(api::ParseQuery(t, kHour, &spec).IsInvalidArgument());
}

}  // namespace
}  // namespace snapsink::testing
