// engine/ingest_agg_table.h: the batch's aggregates in a key arena and a
// flat open-addressing table.
#include "engine/ingest_agg_table.h"

#include <gtest/gtest.h>

#include <string>

namespace snapsink::testing {
namespace {

TEST(BatchAggTableTest, EveryKeyFindsItsOwnEntryAcrossGrowth) {
  BatchAggTable t;
  const int n = 100000;  // the slot table grows from 1,024 several times
  for (int i = 0; i < n; ++i) {
    CachedAgg* a = t.FindOrInsert("key-" + std::to_string(i));
    EXPECT_EQ(a->delta.events, 0) << i;
    a->delta.events = i + 1;
  }
  ASSERT_EQ(t.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(t.FindOrInsert("key-" + std::to_string(i))->delta.events, i + 1) << i;
    EXPECT_EQ(t.key(static_cast<size_t>(i)), "key-" + std::to_string(i));  // insertion order
    EXPECT_EQ(t.value(static_cast<size_t>(i)).delta.events, i + 1);
  }
  EXPECT_EQ(t.size(), static_cast<size_t>(n));
}

TEST(BatchAggTableTest, KeysDifferingOnlyInLengthOrZeroBytesAreDistinct) {
  BatchAggTable t;
  const std::string keys[] = {"", std::string(1, '\0'), std::string(2, '\0'), "a", std::string("a\0", 2), "ab"};
  for (size_t i = 0; i < std::size(keys); ++i) t.FindOrInsert(keys[i])->delta.count = static_cast<int64_t>(i) + 1;
  ASSERT_EQ(t.size(), std::size(keys));
  for (size_t i = 0; i < std::size(keys); ++i) EXPECT_EQ(t.FindOrInsert(keys[i])->delta.count, static_cast<int64_t>(i) + 1) << i;
}

TEST(BatchAggTableTest, ClearForgetsEveryKey) {
  BatchAggTable t;
  for (int i = 0; i < 5000; ++i) t.FindOrInsert("k" + std::to_string(i))->delta.events = 7;
  t.Clear();
  EXPECT_EQ(t.size(), 0u);
  for (int i = 0; i < 5000; ++i) EXPECT_EQ(t.FindOrInsert("k" + std::to_string(i))->delta.events, 0) << i;
  EXPECT_EQ(t.size(), 5000u);
}

}  // namespace
}  // namespace snapsink::testing
