// Checkpoints of a partition's state in ROOT (sink/checkpoint.cc, docs/FORMAT.md)
// and the partition states that write and restore them
// (utilities/kafka/partition_states.h): named by epoch and offset,
// checksummed, pruned to the newest two; a new owner without the newest
// state restores the newest good one, never an older epoch's over a newer
// state; a fenced owner writes none.
#include <gtest/gtest.h>

#include <filesystem>

#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"
#include "tests/test_util.h"
#include "utilities/kafka/partition_states.h"
#include "utilities/kafka/partition_writer.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

constexpr int64_t kTs = 1761041703000;  // 2025-10-21T10:15:03Z

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    ASSERT_STATUS_OK(api::Sink::Create(root_, {}));
    auto ro = api::Sink::OpenReadOnly(root_);
    ASSERT_STATUS_OK(ro);
    ro_ = std::move(*ro);
  }

  // Commits events [from, to) of partition 0 (producer p, one window per 10) at the owner's epoch.
  void Commit(kafka::PartitionStates* states, uint64_t from, uint64_t to, int32_t p = 0) {
    kafka::PartitionStates::Owned* owned = states->Get(p);
    ASSERT_NE(owned, nullptr);
    api::WriteBatch b(kafka::SourceName("orders", p));
    b.SetOwner(owned->epoch);
    for (uint64_t i = from; i < to; ++i) {
      b.Add(EventLine().Producer("p").Seq(i).Ts(kTs + static_cast<int64_t>(i) * 6000).Metric("orders").Line());
    }
    b.SetPosition(std::to_string(to));
    ASSERT_STATUS_OK(owned->sink->Write(b));
  }
  // Producers, windows and sources of a state, as the views print them.
  static std::string Views(api::ReadOnlySink* s) {
    std::string out;
    auto producers = s->Producers();
    auto windows = s->Windows();
    auto sources = s->Sources();
    EXPECT_STATUS_OK(producers);
    EXPECT_STATUS_OK(windows);
    EXPECT_STATUS_OK(sources);
    for (const auto& p : *producers) out += p.producer + " next=" + std::to_string(p.next_seq) + "\n";
    for (const auto& w : *windows) out += std::to_string(w.window_start_ms) + " events=" + std::to_string(w.events) + " count=" + std::to_string(w.count) + "\n";
    for (const auto& src : *sources) {
      out += src.source + " lines=" + std::to_string(src.lines) + " applied=" + std::to_string(src.applied) +
             " pos=" + src.position.value_or("-") + "\n";
    }
    return out;
  }
  std::vector<std::string> Names() {
    auto all = api::Checkpoints(*ro_, src_);
    EXPECT_STATUS_OK(all);
    std::vector<std::string> names;
    for (const auto& c : *all) names.push_back(std::filesystem::path(c.path).filename().string());
    return names;
  }

  TempDir dir_;
  std::string root_;
  std::unique_ptr<api::ReadOnlySink> ro_;
  const std::string src_ = kafka::SourceName("orders", 0);
};

TEST_F(CheckpointTest, NamedByEpochAndOffsetChecksummedAndPrunedToTheNewestTwo) {
  kafka::PartitionStates a(ro_.get(), dir_ / "a", "orders", "A");
  a.set_checkpoint_every(10);
  ASSERT_STATUS_OK(a.Take(0, src_));
  Commit(&a, 0, 4);
  auto none = a.AfterCommit(0, src_, 4);  // fewer than 10 offsets since the start
  ASSERT_STATUS_OK(none);
  EXPECT_FALSE(*none);
  Commit(&a, 4, 12);
  auto due = a.AfterCommit(0, src_, 12);
  ASSERT_STATUS_OK(due);
  ASSERT_TRUE(*due);
  EXPECT_EQ((*due)->epoch, 1u);
  EXPECT_EQ((*due)->position, "12");
  EXPECT_EQ(Names(), std::vector<std::string>{"e00000000000000000001-o00000000000000000012"});
  const std::string file = ReadFile((*due)->path);
  EXPECT_EQ(file.size(), (*due)->bytes);
  EXPECT_EQ(file.rfind("snapsink checkpoint 1\nsource kafka:orders/0\nepoch 1\nposition 12\ndata ", 0), 0u)
      << file.substr(0, 80);
  EXPECT_EQ(file.compare(file.size() - 23, 6, "xxh64 "), 0);
  Commit(&a, 12, 15);
  ASSERT_STATUS_OK(a.Checkpoint(0, src_));
  Commit(&a, 15, 20);
  ASSERT_STATUS_OK(a.Checkpoint(0, src_));
  EXPECT_EQ(Names(), (std::vector<std::string>{"e00000000000000000001-o00000000000000000020",
                                               "e00000000000000000001-o00000000000000000015"}));
  // status and metrics of ROOT show the owner and the newest checkpoint.
  auto owners = api::PartitionOwners(*ro_);
  ASSERT_STATUS_OK(owners);
  ASSERT_EQ(owners->size(), 1u);
  EXPECT_EQ((*owners)[0].name, "kafka_orders_0");
  EXPECT_EQ((*owners)[0].epoch, 1u);
  EXPECT_EQ((*owners)[0].who, "A");
  ASSERT_TRUE((*owners)[0].checkpoint);
  EXPECT_EQ((*owners)[0].checkpoint->offset, 20u);
  EXPECT_EQ((*owners)[0].checkpoint->source, src_);  // read from its header
  auto json = ro_->StatusJson();
  ASSERT_STATUS_OK(json);
  EXPECT_NE(json->find(R"("partitions":[{"partition":"kafka_orders_0","owner_epoch":1,"owner":"A","checkpoint":{"epoch":1,"offset":20,"bytes":)" +
                       std::to_string((*owners)[0].checkpoint->bytes) + "},\"progress\":null}]}\n"),
            std::string::npos)
      << *json;
  auto metrics = ro_->MetricsText();
  ASSERT_STATUS_OK(metrics);
  EXPECT_NE(metrics->find("snapsink_partition_checkpoint_offset{partition=\"kafka_orders_0\"} 20"), std::string::npos)
      << *metrics;
  EXPECT_NE(metrics->find("snapsink_partition_owner_epoch{owner=\"A\",partition=\"kafka_orders_0\"} 1"),
            std::string::npos)
      << *metrics;
  RunResult status = Snapsink({"status", root_});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("  kafka_orders_0  owner epoch 1 (A), no progress recorded yet, last checkpoint epoch 1 at offset 20, "),
            std::string::npos)
      << status.out;
  // Nothing left behind on either side; ROOT's verify knows the files.
  EXPECT_FALSE(std::filesystem::exists(a.PartitionDir(0) + "/checkpoint.tmp"));
  api::VerifyReport report;
  ASSERT_STATUS_OK(ro_->Verify(&report));
  for (const std::string& w : report.warnings) EXPECT_EQ(w.find("unknown file"), std::string::npos) << w;
}

TEST_F(CheckpointTest, ANewOwnerRestoresTheNewestAndADamagedNewestFallsBackWithAWarning) {
  kafka::PartitionStates a(ro_.get(), dir_ / "a", "orders", "A");
  ASSERT_STATUS_OK(a.Take(0, src_));
  Commit(&a, 0, 30);
  ASSERT_STATUS_OK(a.Checkpoint(0, src_));
  Commit(&a, 30, 50);
  auto newest = a.Checkpoint(0, src_);
  ASSERT_STATUS_OK(newest);
  const std::string want = Views(a.Get(0)->sink.get());
  a.Drop(0);
  std::filesystem::remove_all(dir_ / "a");  // A is gone with its disk

  kafka::PartitionStates b(ro_.get(), dir_ / "b", "orders", "B");
  ASSERT_STATUS_OK(b.Take(0, src_));
  ASSERT_TRUE(b.Get(0)->restored);
  EXPECT_FALSE(b.Get(0)->fresh);
  EXPECT_EQ(b.Get(0)->restored->position, "50");
  EXPECT_EQ(b.Get(0)->epoch, 2u);
  EXPECT_EQ(*b.Get(0)->sink->OwnerEpoch(src_), 2u);
  EXPECT_EQ(Views(b.Get(0)->sink.get()), want);
  EXPECT_TRUE(b.warnings().empty());
  b.Drop(0);

  // One byte of the newest checkpoint's data flipped: the next owner takes
  // the previous one (offset 30) and says why.
  std::string bytes = ReadFile(newest->path);
  bytes[bytes.size() / 2] ^= 0x20;
  WriteFile(newest->path, bytes);
  kafka::PartitionStates c(ro_.get(), dir_ / "c", "orders", "C");
  ASSERT_STATUS_OK(c.Take(0, src_));
  ASSERT_TRUE(c.Get(0)->restored);
  EXPECT_EQ(c.Get(0)->restored->position, "30");
  EXPECT_EQ(**c.Get(0)->sink->Position(src_), "30");
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_NE(c.warnings()[0].find(newest->path + ": checkpoint checksum mismatch"), std::string::npos)
      << c.warnings()[0];
  // Reading on from 30 gives what A had.
  Commit(&c, 30, 50);
  EXPECT_EQ(Views(c.Get(0)->sink.get()), want);
}

TEST_F(CheckpointTest, NoCheckpointMeansANewStateAndAnOlderEpochIsNeverRestoredOverANewerState) {
  kafka::PartitionStates a(ro_.get(), dir_ / "a", "orders", "A");
  kafka::PartitionStates b(ro_.get(), dir_ / "b", "orders", "B");
  ASSERT_STATUS_OK(a.Take(0, src_));  // epoch 1: no checkpoint yet, a new state
  EXPECT_TRUE(a.Get(0)->fresh);
  EXPECT_FALSE(a.Get(0)->restored);
  Commit(&a, 0, 10);
  ASSERT_STATUS_OK(a.Checkpoint(0, src_));  // e1-o10
  a.Drop(0);
  ASSERT_STATUS_OK(b.Take(0, src_));  // epoch 2: restored from e1-o10
  ASSERT_TRUE(b.Get(0)->restored);
  Commit(&b, 10, 20);  // B's state is at epoch 2, position 20; no checkpoint of it
  b.Drop(0);
  ASSERT_STATUS_OK(a.Take(0, src_));  // epoch 3: A's own copy is stale (epoch 1); e1 is not older than it
  ASSERT_TRUE(a.Get(0)->restored);
  EXPECT_EQ(a.Get(0)->restored->position, "10");
  a.Drop(0);
  // B's stale copy is at epoch 2; the only checkpoint is of epoch 1: a new state, read from the start.
  ASSERT_STATUS_OK(b.Take(0, src_));
  EXPECT_EQ(b.Get(0)->epoch, 4u);
  EXPECT_TRUE(b.Get(0)->fresh);
  EXPECT_FALSE(b.Get(0)->restored);
  EXPECT_FALSE(*b.Get(0)->sink->Position(src_));
}

TEST_F(CheckpointTest, AFencedOwnerWritesNoCheckpoint) {
  kafka::PartitionStates a(ro_.get(), dir_ / "a", "orders", "A");
  kafka::PartitionStates b(ro_.get(), dir_ / "b", "orders", "B");
  ASSERT_STATUS_OK(a.Take(0, src_));
  Commit(&a, 0, 10);
  ASSERT_STATUS_OK(b.Take(0, src_));  // B claims epoch 2 while A still holds its state
  auto c = a.Checkpoint(0, src_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kLocked);
  EXPECT_NE(c.status().message().find("epoch 2 (B) owns it now"), std::string::npos) << c.status().message();
  EXPECT_TRUE(Names().empty());
}

// inspect producers of ROOT warns of a producer in two partitions' states
// (as of their newest checkpoints): its sequence numbers are split.
TEST_F(CheckpointTest, InspectProducersOfRootWarnsOfAProducerOnTwoPartitions) {
  kafka::PartitionStates a(ro_.get(), dir_ / "a", "orders", "A");
  const std::string src1 = kafka::SourceName("orders", 1);
  ASSERT_STATUS_OK(a.Take(0, src_));
  ASSERT_STATUS_OK(a.Take(1, src1));
  Commit(&a, 0, 5, 0);
  ASSERT_STATUS_OK(a.Checkpoint(0, src_));
  RunResult r = Snapsink({"inspect", root_, "producers"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning: producer"), std::string::npos) << r.err;  // p is on partition 0 only
  Commit(&a, 5, 8, 1);  // the same producer on partition 1
  ASSERT_STATUS_OK(a.Checkpoint(1, src1));
  r = Snapsink({"inspect", root_, "producers"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: producer p is on 2 partitions (kafka_orders_0, kafka_orders_1, as of their newest "
                       "checkpoints)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace snapsink::testing
