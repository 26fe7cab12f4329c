// A bucket root's settings object (engine/root_bucket.h) with the metric
// kinds init declared: they read back as written, a state made from it has
// them, and a malformed or repeated kind line is refused, naming the object.
#include <gtest/gtest.h>

#include <string>

#include "engine/root_bucket.h"

namespace snapsink {
namespace {

TEST(BucketSettings, MetricKindsReadBackAsWrittenAndBadLinesAreRefused) {
  RootConfig config;
  config.window_ms = 60000;
  config.lateness_ms = 0;
  MetricKinds kinds;
  kinds["wait: p"] = MetricSpec{MetricKind::kQuantiles, 20000};
  kinds["users"] = MetricSpec{MetricKind::kDistinct, 12};
  kinds["slowest"] = MetricSpec{MetricKind::kMinMax, 0};
  const std::string text = EncodeBucketSettings(config, kinds);
  EXPECT_NE(text.find("\nmetric quantiles 20000 wait: p\n"), std::string::npos) << text;
  RootConfig back;
  MetricKinds read;
  ASSERT_TRUE(DecodeBucketSettings(text, "s3://b/r/settings", &back, &read).ok());
  EXPECT_EQ(read, kinds);
  EXPECT_EQ(back.window_ms, 60000);
  // Without kinds: the object is what it was before kinds (no metric line).
  EXPECT_EQ(EncodeBucketSettings(config).find("metric"), std::string::npos);
  ASSERT_TRUE(DecodeBucketSettings(EncodeBucketSettings(config), "s3://b/r/settings", &back, &read).ok());
  EXPECT_TRUE(read.empty());
  const std::string base = EncodeBucketSettings(config);
  for (const std::string& bad : {std::string("metric sum 0\n"), std::string("metric median 0 x\n"),
                                 std::string("metric sum -1 x\n"), std::string("metric sum 4294967296 x\n"),
                                 std::string("metric sum 0 x\nmetric minmax 0 x\n")}) {
    Status s = DecodeBucketSettings(base + bad, "s3://b/r/settings", &back, &read);
    EXPECT_TRUE(s.IsCorruption()) << bad << s.ToString();
    EXPECT_NE(s.message().find("s3://b/r/settings"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace snapsink
