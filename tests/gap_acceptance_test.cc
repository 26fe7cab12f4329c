// Accepted gaps (engine/gap_acceptance.h): the records, what they cover, and
// the --range syntax.
#include "engine/gap_acceptance.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

TEST(GapAcceptance, ParseSeqRange) {
  Gap g;
  ASSERT_TRUE(ParseSeqRange("2..4", &g));
  EXPECT_EQ(g, (Gap{2, 5}));
  ASSERT_TRUE(ParseSeqRange("7", &g));
  EXPECT_EQ(g, (Gap{7, 8}));
  ASSERT_TRUE(ParseSeqRange("0..0", &g));
  EXPECT_EQ(g, (Gap{0, 1}));
  for (const char* bad : {"", "..", "4..2", "a..b", "1..", "..3", "-1..2", "1...3", "1..2x",
                          "18446744073709551615", "0..18446744073709551615"}) {
    EXPECT_FALSE(ParseSeqRange(bad, &g)) << bad;
  }
}

TEST(GapAcceptance, CoversOnlyWhollyInsideTheRangeAndTheEpoch) {
  TempDir d;
  std::unique_ptr<Store> store;
  ASSERT_STATUS_OK(Store::Open(d.path(), /*create=*/true, &store));
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  // Producer ids that share a prefix, or hold a NUL, must not see each other's records.
  AcceptedGap a{"p", /*any_epoch=*/false, /*epoch=*/2, Gap{10, 20}, 1000};
  AcceptedGap b{std::string("p\0x", 3), /*any_epoch=*/true, 0, Gap{0, UINT64_MAX}, 2000};
  AcceptedGap c{"p", /*any_epoch=*/true, 0, Gap{100, 101}, 3000};
  ASSERT_STATUS_OK(RecordAcceptedGap(txn.get(), a));
  ASSERT_STATUS_OK(RecordAcceptedGap(txn.get(), b));
  ASSERT_STATUS_OK(RecordAcceptedGap(txn.get(), c));
  ASSERT_STATUS_OK(txn->Commit());

  ASSERT_STATUS_OK(store->BeginRead(&txn));
  auto accepted = [&](std::string_view producer, uint32_t epoch, Gap g) {
    Result<bool> r = GapAccepted(txn.get(), producer, epoch, g);
    EXPECT_STATUS_OK(r);
    return r.ok() && *r;
  };
  EXPECT_TRUE(accepted("p", 2, Gap{10, 20}));
  EXPECT_TRUE(accepted("p", 2, Gap{12, 13}));
  EXPECT_FALSE(accepted("p", 2, Gap{9, 12}));    // starts before the range
  EXPECT_FALSE(accepted("p", 2, Gap{15, 21}));   // ends after it
  EXPECT_FALSE(accepted("p", 3, Gap{12, 13}));   // another epoch
  EXPECT_TRUE(accepted("p", 7, Gap{100, 101}));  // any epoch
  EXPECT_FALSE(accepted("q", 2, Gap{12, 13}));
  EXPECT_FALSE(accepted(std::string_view("p\0", 2), 2, Gap{12, 13}));
  EXPECT_TRUE(accepted(std::string_view("p\0x", 3), 9, Gap{5, 1000}));

  std::vector<AcceptedGap> all;
  ASSERT_STATUS_OK(ListAcceptedGaps(txn.get(), &all));
  ASSERT_EQ(all.size(), 3u);
  // By producer (escaped key order), then in the order recorded.
  EXPECT_EQ(all[0], a);
  EXPECT_EQ(all[1], c);
  EXPECT_EQ(all[2], b);
}

}  // namespace
}  // namespace snapsink::testing
