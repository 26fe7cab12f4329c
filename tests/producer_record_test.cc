// The producer record of format 5 (engine/state_codec.h, ProducerSeen) and
// the idle index by buckets (engine/producer_retention.h): one record write
// per producer that sent, an idle key moved only when the last-seen time
// leaves its bucket, retirement still exact, and the records of formats 3
// and 4 (Table::kProducerSeen, exact idle keys) read and moved.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/producer_retention.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int64_t kMin = 60 * 1000;
constexpr int64_t kHour = 60 * kMin;

ProducerState SomeState(uint64_t spilled) {
  ProducerState s;
  s.epoch = 3;
  s.next_seq = 40;
  s.gaps = {{5, 7}, {20, 30}};
  s.spilled = spilled;
  return s;
}

TEST(ProducerRecordCodec, BothFormsRoundTripAndOldRecordsReadAsBefore) {
  for (uint64_t spilled : {uint64_t{0}, uint64_t{9}}) {
    const ProducerState st = SomeState(spilled);
    // Formats 3 and 4: byte for byte what Encode wrote, no last-seen time.
    const std::string old_form = codec::EncodeProducer(st, std::nullopt);
    EXPECT_EQ(old_form, codec::Encode(st));
    EXPECT_EQ(old_form.size(), 16 + 2 * 16 + (spilled ? 8u : 0u));
    ProducerState got;
    std::optional<ProducerSeen> seen = ProducerSeen{1, 1};
    ASSERT_STATUS_OK(codec::DecodeProducer(old_form, &got, &seen));
    EXPECT_EQ(got, st);
    EXPECT_FALSE(seen.has_value());
    // Format 5: the same state, a flags byte, then the two times.
    const ProducerSeen ps{kBase + 17 * kMin, kBase};
    const std::string new_form = codec::EncodeProducer(st, ps);
    EXPECT_EQ(new_form.size(), old_form.size() + 1 + 16);
    ASSERT_STATUS_OK(codec::DecodeProducer(new_form, &got, &seen));
    EXPECT_EQ(got, st);
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(*seen, ps);
    ProducerState plain;  // readers of the state alone (inspect, status)
    ASSERT_STATUS_OK(codec::Decode(new_form, &plain));
    EXPECT_EQ(plain, st);
  }
  std::string bad = codec::EncodeProducer(SomeState(0), ProducerSeen{1, 0});
  bad[48] = '\x04';  // an unknown flag
  ProducerState got;
  EXPECT_TRUE(codec::Decode(bad, &got).IsCorruption());
  EXPECT_TRUE(codec::Decode(bad.substr(0, bad.size() - 1), &got).IsCorruption());
}

TEST(ProducerRecordCodec, BucketsAreFloorsOfTheirWidth) {
  EXPECT_EQ(IdleBucketMs(0), kHour);
  EXPECT_EQ(IdleBucketMs(2 * kHour), 15 * kMin);
  EXPECT_EQ(IdleBucketMs(30 * 24 * kHour), kHour);
  EXPECT_EQ(IdleBucketMs(5), 1);
  EXPECT_EQ(IdleBucket(kBase + 59 * kMin, kHour), kBase);
  EXPECT_EQ(IdleBucket(kBase, kHour), kBase);
  EXPECT_EQ(IdleBucket(-1, kHour), -kHour);
  EXPECT_EQ(IdleBucket(-kHour, kHour), -kHour);
}

class ProducerRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_STATUS_OK(Store::Open(dir_.path(), /*create=*/true, &store_));
    ASSERT_STATUS_OK(store_->BeginWrite(&txn_));
    ASSERT_STATUS_OK(Root::PutMetaU64(txn_.get(), meta::kFormat, 4));
  }
  // The idle index as (time, producer).
  std::vector<std::pair<int64_t, std::string>> IdleKeys() {
    std::vector<std::pair<int64_t, std::string>> out;
    EXPECT_STATUS_OK(txn_->Scan(Table::kProducerIdle, "", [&](std::string_view k, std::string_view) {
      out.emplace_back(codec::DecodeWindowKey(k), std::string(k.substr(8)));
      return true;
    }));
    return out;
  }
  std::optional<ProducerSeen> RecordSeen(const std::string& producer) {
    std::string_view v;
    EXPECT_STATUS_OK(txn_->Get(Table::kProducers, producer, &v));
    ProducerState st;
    std::optional<ProducerSeen> seen;
    EXPECT_STATUS_OK(codec::DecodeProducer(v, &st, &seen));
    return seen;
  }
  uint64_t Format() {
    auto f = Root::GetMetaU64(txn_.get(), meta::kFormat);
    EXPECT_STATUS_OK(f);
    return f.ok() && f->has_value() ? **f : 0;
  }
  // Hears producer at ts and commits it as ingest does.
  void Heard(const std::string& producer, int64_t ts, int64_t bucket_ms = kHour) {
    ProducerLife life;
    ASSERT_STATUS_OK(LoadProducerLife(txn_.get(), producer, &life));
    HeardAt(&life, ts);
    ASSERT_STATUS_OK(CommitProducer(txn_.get(), producer, SomeState(0), /*state_dirty=*/true, &life, bucket_ms));
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Txn> txn_;
};

TEST_F(ProducerRecordTest, IdleKeyMovesOnlyWhenTheLastSeenTimeLeavesItsBucket) {
  Heard("p", kBase + 10 * kMin);
  using Keys = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(IdleKeys(), (Keys{{kBase, "p"}}));
  EXPECT_EQ(RecordSeen("p"), (ProducerSeen{kBase + 10 * kMin, kBase}));
  EXPECT_EQ(Format(), kProducerTimesFormat);  // an older build refuses the root now
  Heard("p", kBase + 59 * kMin);          // same bucket: the record changes, the key stays
  EXPECT_EQ(IdleKeys(), (Keys{{kBase, "p"}}));
  EXPECT_EQ(RecordSeen("p"), (ProducerSeen{kBase + 59 * kMin, kBase}));
  Heard("p", kBase + 30 * kMin);  // older than the last seen: nothing moves
  EXPECT_EQ(RecordSeen("p"), (ProducerSeen{kBase + 59 * kMin, kBase}));
  Heard("p", kBase + 3 * kHour + 1);  // a later bucket: the key moves
  EXPECT_EQ(IdleKeys(), (Keys{{kBase + 3 * kHour, "p"}}));
  EXPECT_EQ(RecordSeen("p"), (ProducerSeen{kBase + 3 * kHour + 1, kBase + 3 * kHour}));
}

TEST_F(ProducerRecordTest, RetirementIsExactWithinABucket) {
  Heard("a", kBase + 10 * kMin);
  Heard("b", kBase + 40 * kMin);
  Heard("c", kBase + 2 * kHour);
  std::vector<std::string> retired;
  // Cutoff inside the bucket both a and b share: only a was idle before it.
  ASSERT_STATUS_OK(RetireIdleProducers(txn_.get(), kBase + 30 * kMin, &retired));
  EXPECT_EQ(retired, std::vector<std::string>{"a"});
  std::string_view v;
  ASSERT_STATUS_OK(txn_->Get(Table::kRetired, "a", &v));
  ProducerTombstone t;
  ASSERT_STATUS_OK(DecodeTombstone(v, &t));
  EXPECT_EQ(t.epoch, 3u);
  EXPECT_EQ(t.last_seen, kBase + 10 * kMin);  // the exact time, not the bucket's
  EXPECT_TRUE(txn_->Get(Table::kProducers, "a", &v).IsNotFound());
  retired.clear();
  ASSERT_STATUS_OK(RetireIdleProducers(txn_.get(), kBase + 40 * kMin, &retired));  // b at the cutoff stays
  EXPECT_TRUE(retired.empty());
  ASSERT_STATUS_OK(RetireIdleProducers(txn_.get(), kBase + 40 * kMin + 1, &retired));
  EXPECT_EQ(retired, std::vector<std::string>{"b"});
  using Keys = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(IdleKeys(), (Keys{{kBase + 2 * kHour, "c"}}));
}

// A format-4 root's producer: its last-seen time in kProducerSeen and its
// idle key at that exact time. Read as it is, retired exactly, and moved
// into its record (format 5) by its next write.
TEST_F(ProducerRecordTest, RecordsOfFormatFourAreReadAndMoved) {
  auto legacy = [&](const std::string& id, int64_t seen) {
    ASSERT_STATUS_OK(txn_->Put(Table::kProducers, id, codec::Encode(SomeState(0))));
    std::string v, k;
    codec::PutU64(&v, static_cast<uint64_t>(seen));
    ASSERT_STATUS_OK(txn_->Put(Table::kProducerSeen, id, v));
    codec::AppendWindowKey(&k, seen);
    k += id;
    ASSERT_STATUS_OK(txn_->Put(Table::kProducerIdle, k, ""));
  };
  legacy("old", kBase + 10 * kMin);
  legacy("gone", kBase + 5 * kMin);
  ProducerLife life;
  ASSERT_STATUS_OK(LoadProducerLife(txn_.get(), "old", &life));
  EXPECT_EQ(life.last_seen, kBase + 10 * kMin);
  EXPECT_TRUE(life.legacy_seen);
  std::vector<std::string> retired;
  ASSERT_STATUS_OK(RetireIdleProducers(txn_.get(), kBase + 6 * kMin, &retired));
  EXPECT_EQ(retired, std::vector<std::string>{"gone"});
  std::string_view v;
  EXPECT_TRUE(txn_->Get(Table::kProducerSeen, "gone", &v).IsNotFound());
  EXPECT_EQ(Format(), 4u);  // reading and retiring change no format

  // Heard again in the same hour: its exact key is still at or before the
  // last-seen time and within its bucket, so it stays; the time moves into
  // the record and kProducerSeen goes.
  Heard("old", kBase + 20 * kMin);
  using Keys = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(IdleKeys(), (Keys{{kBase + 10 * kMin, "old"}}));
  EXPECT_EQ(RecordSeen("old"), (ProducerSeen{kBase + 20 * kMin, kBase + 10 * kMin}));
  EXPECT_TRUE(txn_->Get(Table::kProducerSeen, "old", &v).IsNotFound());
  EXPECT_EQ(Format(), kProducerTimesFormat);
  Heard("old", kBase + kHour);
  EXPECT_EQ(IdleKeys(), (Keys{{kBase + kHour, "old"}}));
}

// A producer retired in the batch and back at a higher epoch with an older
// event time: its key must not stay after its new last-seen time, or a sweep
// would never find it.
TEST_F(ProducerRecordTest, ComebackWithAnOlderTimeMovesTheKeyBack) {
  Heard("p", kBase + 3 * kHour);
  ProducerLife life;
  ASSERT_STATUS_OK(LoadProducerLife(txn_.get(), "p", &life));
  ASSERT_TRUE(RetireIfIdle(&life, SomeState(0), kBase + 4 * kHour));
  life.retired.reset();  // back at a higher epoch, as ingest does
  life.tombstone_dirty = true;
  HeardAt(&life, kBase + 10 * kMin);
  ASSERT_STATUS_OK(CommitProducer(txn_.get(), "p", ProducerState(), true, &life, kHour));
  using Keys = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(IdleKeys(), (Keys{{kBase, "p"}}));
  EXPECT_EQ(RecordSeen("p"), (ProducerSeen{kBase + 10 * kMin, kBase}));
  std::vector<std::string> retired;
  ASSERT_STATUS_OK(RetireIdleProducers(txn_.get(), kBase + 11 * kMin, &retired));
  EXPECT_EQ(retired, std::vector<std::string>{"p"});
}

}  // namespace
}  // namespace snapsink::testing
