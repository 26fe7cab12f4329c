// engine/window_records: window states and seal records inside a transaction.
#include "engine/window_records.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

using Version = decltype(WindowState{}.last_version);
constexpr int64_t kW = 3600000;

class WindowRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_STATUS_OK(Store::Open(dir_.path(), /*create=*/true, &store_));
    ASSERT_STATUS_OK(store_->BeginWrite(&txn_));
  }
  void PutSeal(int64_t w, Version v, SealState state) {
    SealRecord r;
    r.state = state;
    ASSERT_STATUS_OK(txn_->Put(Table::kSeals, codec::SealKey(w, v), codec::Encode(r)));
  }
  SealState StateOf(int64_t w, Version v) {
    std::string_view raw;
    EXPECT_STATUS_OK(txn_->Get(Table::kSeals, codec::SealKey(w, v), &raw));
    SealRecord r;
    EXPECT_STATUS_OK(codec::Decode(raw, &r));
    return r.state;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Txn> txn_;
};

TEST_F(WindowRecordsTest, AbsentWindowReadsAsDefault) {
  WindowState w{9, true};
  ASSERT_STATUS_OK(ReadWindowState(txn_.get(), kW, &w));
  EXPECT_EQ(w, WindowState());
}

TEST_F(WindowRecordsTest, WriteThenRead) {
  ASSERT_STATUS_OK(WriteWindowState(txn_.get(), kW, WindowState{4, true}));
  ASSERT_STATUS_OK(WriteWindowState(txn_.get(), 2 * kW, WindowState{1, false}));
  WindowState w;
  ASSERT_STATUS_OK(ReadWindowState(txn_.get(), kW, &w));
  EXPECT_EQ(w, (WindowState{4, true}));
  ASSERT_STATUS_OK(ReadWindowState(txn_.get(), 2 * kW, &w));
  EXPECT_EQ(w, (WindowState{1, false}));
}

TEST_F(WindowRecordsTest, DamagedWindowRecordIsCorruption) {
  ASSERT_STATUS_OK(txn_->Put(Table::kWindows, [] {
    std::string k;
    codec::AppendWindowKey(&k, kW);
    return k;
  }(), "x"));
  WindowState w;
  EXPECT_TRUE(ReadWindowState(txn_.get(), kW, &w).IsCorruption());
}

TEST_F(WindowRecordsTest, SetSealStateOfMissingSealIsNotFound) {
  EXPECT_TRUE(SetSealState(txn_.get(), kW, Version{1}, SealState::kPublished).IsNotFound());
  PutSeal(kW, 1, SealState::kStaged);
  ASSERT_STATUS_OK(SetSealState(txn_.get(), kW, Version{1}, SealState::kPublished));
  EXPECT_EQ(StateOf(kW, 1), SealState::kPublished);
}

TEST_F(WindowRecordsTest, SupersedeTouchesOnlyStagedSealsOfThatWindow) {
  PutSeal(kW, 1, SealState::kPublished);
  PutSeal(kW, 2, SealState::kStaged);
  PutSeal(kW, 3, SealState::kStaged);
  PutSeal(2 * kW, 1, SealState::kStaged);  // another window
  std::vector<Version> superseded;
  ASSERT_STATUS_OK(SupersedeStagedSeals(txn_.get(), kW, Version{3}, &superseded));
  EXPECT_EQ(superseded, std::vector<Version>{2});
  EXPECT_EQ(StateOf(kW, 1), SealState::kPublished);
  EXPECT_EQ(StateOf(kW, 2), SealState::kSuperseded);
  EXPECT_EQ(StateOf(kW, 3), SealState::kStaged);
  EXPECT_EQ(StateOf(2 * kW, 1), SealState::kStaged);
  superseded.clear();
  ASSERT_STATUS_OK(SupersedeStagedSeals(txn_.get(), kW, Version{0}, &superseded));  // keeps none
  EXPECT_EQ(superseded, std::vector<Version>{3});
}

}  // namespace
}  // namespace snapsink::testing
