// What the partitions' owners keep up in ROOT besides sealing:
// a checkpoint after every recorded seal round
// (utilities/kafka/merged_publish.h), gc of seal records a newer accepted
// seal replaced (partitions/partition_seals.h), and the per-partition view of
// `status --json` (owner, epoch, position, high watermark, lag, last seal,
// last checkpoint).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>

#include "engine/env.h"
#include "engine/writer_lock.h"
#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "tests/test_util.h"
#include "utilities/kafka/merged_publish.h"
#include "utilities/kafka/partition_states.h"
#include "utilities/kafka/partition_writer.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;
namespace fs = std::filesystem;

constexpr int64_t kTs = 1761041703000;  // 2025-10-21T10:15:03Z
const char kTopic[] = "orders";

// One ROOT under `base` and the partitions' states of "owners", each a
// PartitionStates of its own directory (as separate processes have).
class World {
 public:
  explicit World(std::string base, int64_t retain_ms = 0) : base_(std::move(base)) {
    root_ = base_ + "/root";
    api::InitOptions o;
    o.lateness_ms = 0;  // a window closes once an event is past its end
    o.retain_ms = retain_ms;
    EXPECT_STATUS_OK(api::Sink::Create(root_, o));
    auto ro = api::Sink::OpenReadOnly(root_);
    EXPECT_STATUS_OK(ro);
    if (ro.ok()) ro_ = std::move(*ro);
  }
  std::unique_ptr<kafka::PartitionStates> Owner(const std::string& name) {
    auto s = std::make_unique<kafka::PartitionStates>(ro_.get(), base_ + "/" + name, kTopic, name + " host 1");
    s->set_checkpoint_every(0);  // only what the test asks for (and a clean close)
    return s;
  }
  // Commits events [from, to) of partition p (producer "p<p>", ten a window
  // of one hour: 6 minutes apart) at its owner's epoch, position `to`.
  void Commit(kafka::PartitionStates* states, int32_t p, uint64_t from, uint64_t to) {
    kafka::PartitionStates::Owned* owned = states->Get(p);
    ASSERT_NE(owned, nullptr);
    api::WriteBatch b(kafka::SourceName(kTopic, p));
    b.SetOwner(owned->epoch);
    for (uint64_t i = from; i < to; ++i) {
      b.Add(EventLine()
                .Producer("p" + std::to_string(p))
                .Seq(i)
                .Ts(kTs + static_cast<int64_t>(i) * 360000)
                .Metric("orders")
                .Key("k" + std::to_string(i % 3))
                .Line());
    }
    b.SetPosition(std::to_string(to));
    ASSERT_STATUS_OK(owned->sink->Write(b));
  }
  // The seal step of a publish point for partition p at `position`.
  std::vector<std::pair<int64_t, uint64_t>> SealRound(kafka::PartitionStates* states, int32_t p, int64_t position,
                                                      int64_t hwm, bool all) {
    kafka::MergedPublisher merged(ro_.get(), kTopic, states);
    std::vector<std::string> notes;
    merged.set_on_note([&](const std::string& m) { notes.push_back(m); });
    kafka::PartitionStates::Owned* owned = states->Get(p);
    EXPECT_NE(owned, nullptr);
    std::vector<std::pair<int64_t, uint64_t>> recorded;
    if (owned == nullptr) return recorded;
    kafka::Consumer::OwnedPartition op{p, owned->sink.get(), owned->epoch, position, hwm};
    EXPECT_STATUS_OK(merged.SealOne(op, all, nullptr, &recorded));
    EXPECT_TRUE(notes.empty()) << notes.front();
    return recorded;
  }
  uint64_t Publish(int32_t partitions) {
    auto r = api::PublishMerged(*ro_, kTopic, partitions);
    EXPECT_STATUS_OK(r);
    return r.ok() ? r->generation : 0;
  }
  std::vector<api::CheckpointInfo> Checkpoints(int32_t p) {
    auto all = api::Checkpoints(*ro_, kafka::SourceName(kTopic, p));
    EXPECT_STATUS_OK(all);
    return all.ok() ? *all : std::vector<api::CheckpointInfo>{};
  }
  const std::string& root() const { return root_; }

 private:
  std::string base_, root_;
  std::unique_ptr<api::ReadOnlySink> ro_;
};

class Upkeep : public ::testing::Test {
 protected:
  TempDir dir_;
  World world_{dir_.path()};
};

TEST_F(Upkeep, ARoundThatRecordedSealsIsCheckpointedAtItsPositionAndANewOwnerKnowsItsSealedWindows) {
  auto a = world_.Owner("a");
  const std::string src = kafka::SourceName(kTopic, 0);
  ASSERT_STATUS_OK(a->Take(0, src));
  world_.Commit(a.get(), 0, 0, 25);  // windows 10:00, 11:00, 12:00 (open)
  ASSERT_TRUE(world_.Checkpoints(0).empty());
  // The closed windows are sealed and recorded: the checkpoint follows, at the round's position.
  auto recorded = world_.SealRound(a.get(), 0, 25, 40, /*all=*/false);
  ASSERT_EQ(recorded.size(), 2u);
  auto cps = world_.Checkpoints(0);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps.front().offset, 25u);
  EXPECT_EQ(cps.front().epoch, a->Get(0)->epoch);
  // A round that recorded nothing writes no checkpoint.
  EXPECT_TRUE(world_.SealRound(a.get(), 0, 25, 40, false).empty());
  EXPECT_EQ(world_.Checkpoints(0).size(), 1u);
  world_.Commit(a.get(), 0, 25, 30);
  ASSERT_EQ(world_.SealRound(a.get(), 0, 30, 40, false).size(), 1u);  // 12:00 closed by 13:00's events
  cps = world_.Checkpoints(0);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps.front().offset, 30u);

  // Owner a is gone without closing; b restores the seal round's checkpoint:
  // its state knows the sealed windows (nothing left to seal of them) and
  // where the recorded rounds end (its next round follows them).
  auto b = world_.Owner("b");
  ASSERT_STATUS_OK(b->Take(0, src));
  ASSERT_TRUE(b->Get(0)->restored.has_value());
  EXPECT_EQ(b->Get(0)->restored->offset, 30u);
  auto pos = b->Get(0)->sink->Position(src);
  ASSERT_STATUS_OK(pos);
  EXPECT_EQ(pos->value_or("-"), "30");
  auto windows = b->Get(0)->sink->Windows();
  ASSERT_STATUS_OK(windows);
  size_t unpublished = 0;
  for (const auto& w : *windows) unpublished += w.dirty ? 1 : 0;
  EXPECT_EQ(unpublished, 1u);  // only the open window 13:00
  EXPECT_TRUE(world_.SealRound(b.get(), 0, 30, 40, false).empty());
  EXPECT_EQ(world_.SealRound(b.get(), 0, 30, 40, /*all=*/true).size(), 1u);  // 13:00, accepted: the offsets follow
}

TEST_F(Upkeep, StatusShowsPerPartitionOwnerPositionHighWatermarkLagLastSealAndLastCheckpoint) {
  auto a = world_.Owner("a");
  ASSERT_STATUS_OK(a->Take(0, kafka::SourceName(kTopic, 0)));
  ASSERT_STATUS_OK(a->Take(1, kafka::SourceName(kTopic, 1)));
  world_.Commit(a.get(), 0, 0, 25);
  ASSERT_EQ(world_.SealRound(a.get(), 0, 25, 40, false).size(), 2u);  // 10:00 and 11:00, checkpointed at 25
  world_.Commit(a.get(), 0, 25, 27);
  ASSERT_TRUE(world_.SealRound(a.get(), 0, 27, 41, false).empty());  // progress only: position 27 of 41

  RunResult r = Snapsink({"status", world_.root(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("{\"partition\":\"kafka_orders_0\",\"owner_epoch\":1,\"owner\":\"a host 1\","
                       "\"checkpoint\":{\"epoch\":1,\"offset\":25,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(",\"progress\":{\"epoch\":1,\"position\":27,\"high_watermark\":41,\"lag\":14,"
                       "\"last_seal\":{\"window\":\"2025-10-21T11:00:00Z\",\"version\":1,\"epoch\":1,\"to\":25},"
                       "\"written_at\":\"20"),
            std::string::npos)
      << r.out;
  // Partition 1 is claimed but has recorded no round yet.
  EXPECT_NE(r.out.find("{\"partition\":\"kafka_orders_1\",\"owner_epoch\":1,\"owner\":\"a host 1\","
                       "\"checkpoint\":null,\"progress\":null}"),
            std::string::npos)
      << r.out;

  r = Snapsink({"status", world_.root()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  kafka_orders_0  owner epoch 1 (a host 1), position 27 of 41 (lag 14, written by epoch 1 "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Z), last seal 2025-10-21T11:00:00Z v1 to offset 25, last checkpoint epoch 1 at offset 25, "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  kafka_orders_1  owner epoch 1 (a host 1), no progress recorded yet, last checkpoint none\n"),
            std::string::npos)
      << r.out;

  // The status page (`serve`'s GET /) shows the same fields.
  const std::string page = dir_.path() + "/page.html";
  r = Snapsink({"status", world_.root(), "--html", page});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(page, std::ios::binary);
  const std::string html((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(html.find("<tr class=\"partition\" data-partition=\"kafka_orders_0\"><td class=\"name\">kafka_orders_0</td>"
                      "<td>a host 1</td><td>1</td><td>27 (epoch 1)</td><td>41</td><td>14</td>"
                      "<td>2025-10-21T11:00:00Z v1 to offset 25</td><td>epoch 1 at offset 25, "),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td class=\"name\">kafka_orders_1</td><td>a host 1</td><td>1</td><td>-</td><td>-</td><td>-</td>"
                      "<td>none</td><td>none</td></tr>"),
            std::string::npos)
      << html;

  r = Snapsink({"metrics", world_.root()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"snapsink_partition_lag{partition=\"kafka_orders_0\"} 14\n",
                           "snapsink_partition_position{partition=\"kafka_orders_0\"} 27\n",
                           "snapsink_partition_high_watermark{partition=\"kafka_orders_0\"} 41\n",
                           "snapsink_partition_last_seal_offset{partition=\"kafka_orders_0\"} 25\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  }
}

// Every file of root that readers and merges use (snapshots/, manifests/,
// CURRENT, the partitions' seal records and progress), by path relative to
// root: what must not depend on whether or when gc ran.
std::map<std::string, std::string> PublishedFiles(const std::string& root, bool with_seals) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), root).string();
    const bool published = rel == "CURRENT" || rel.rfind("snapshots/", 0) == 0 || rel.rfind("manifests/", 0) == 0;
    const bool seals = rel.rfind("partitions/", 0) == 0 && rel.find("/checkpoints/") == std::string::npos;
    if (!published && !(with_seals && seals)) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[rel] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

enum class Between { kNothing, kGc, kGcCrashedThenRerun };

// Two partitions owned by one process; partition 0 seals window 11:00
// twice (v1 by its first round, v2 by its second), so its v1 record is
// replaced; `between` runs after the second round, before the second merged
// publish, which still needs partition 1's first-round records.
void ReplacedSealScenario(const std::string& base, Between between, std::string* gc_out = nullptr) {
  World w(base);
  auto a = w.Owner("a");
  for (int32_t p : {0, 1}) {
    ASSERT_STATUS_OK(a->Take(p, kafka::SourceName(kTopic, p)));
    w.Commit(a.get(), p, 0, 10);  // 10:15 .. 11:09
    ASSERT_EQ(w.SealRound(a.get(), p, 10, 10, /*all=*/true).size(), 2u);  // 10:00 v1, 11:00 v1
  }
  ASSERT_EQ(w.Publish(2), 1u);
  w.Commit(a.get(), 0, 10, 20);  // 11:15 .. 12:09
  ASSERT_EQ(w.SealRound(a.get(), 0, 20, 20, true).size(), 2u);  // 11:00 v2, 12:00 v1
  const std::string replaced = w.root() + "/partitions/kafka_orders_0/seals/20251021T110000Z-v1-e1";
  ASSERT_TRUE(fs::exists(replaced));
  if (between == Between::kGcCrashedThenRerun) {
    RunResult r = Snapsink({"gc", w.root()}, {{"SNAPSINK_CRASH_AT", "gc.seal_record"}});
    ASSERT_EQ(r.exit_code, 99) << r.out << r.err;
    ASSERT_TRUE(fs::exists(replaced));                 // half removed:
    ASSERT_FALSE(fs::exists(replaced + "/seal.json"));  // seal.json first
  }
  if (between != Between::kNothing) {
    RunResult r = Snapsink({"gc", w.root()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (gc_out) *gc_out = r.out;
    EXPECT_FALSE(fs::exists(replaced));
    // Kept: the accepted records, partition 1's of 11:00 among them.
    for (const char* kept : {"kafka_orders_0/seals/20251021T100000Z-v1-e1", "kafka_orders_0/seals/20251021T110000Z-v2-e1",
                             "kafka_orders_0/seals/20251021T120000Z-v1-e1", "kafka_orders_1/seals/20251021T100000Z-v1-e1",
                             "kafka_orders_1/seals/20251021T110000Z-v1-e1"}) {
      EXPECT_TRUE(fs::exists(w.root() + "/partitions/" + kept + "/seal.json")) << kept;
    }
  }
  ASSERT_EQ(w.Publish(2), 2u);  // 11:00 v2 (p0's v2 with p1's v1), 12:00 v1
  RunResult q = Snapsink({"verify", w.root()});
  EXPECT_EQ(q.exit_code, 0) << q.out << q.err;
}

TEST(UpkeepGc, ReplacedSealRecordsAreRemovedAndALaterMergedPublishIsByteIdenticalWithoutGc) {
  TempDir dir;
  std::string gc_out;
  ASSERT_NO_FATAL_FAILURE(ReplacedSealScenario(dir.path() + "/plain", Between::kNothing));
  ASSERT_NO_FATAL_FAILURE(ReplacedSealScenario(dir.path() + "/gc", Between::kGc, &gc_out));
  EXPECT_NE(gc_out.find("removed 1 seal record(s) of partitions a newer seal of the same window replaced\n"),
            std::string::npos)
      << gc_out;
  const auto plain = PublishedFiles(dir.path() + "/plain/root", false);
  EXPECT_GT(plain.size(), 4u);
  EXPECT_EQ(plain, PublishedFiles(dir.path() + "/gc/root", false));
  // A second gc finds nothing more of them.
  RunResult again = Snapsink({"gc", dir.path() + "/gc/root"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("seal record"), std::string::npos) << again.out;
}

TEST(UpkeepGc, CrashedRemovingASealRecordThenRerunEqualsACleanGc) {
  TempDir dir;
  std::string gc_out;
  ASSERT_NO_FATAL_FAILURE(ReplacedSealScenario(dir.path() + "/clean", Between::kGc));
  ASSERT_NO_FATAL_FAILURE(ReplacedSealScenario(dir.path() + "/crashed", Between::kGcCrashedThenRerun, &gc_out));
  EXPECT_NE(gc_out.find("removed 1 seal record(s)"), std::string::npos) << gc_out;  // the half-removed one, finished
  const auto clean = PublishedFiles(dir.path() + "/clean/root", true);
  EXPECT_GT(clean.size(), 10u);
  EXPECT_EQ(clean, PublishedFiles(dir.path() + "/crashed/root", true));
}

// Two partitions under retention of one hour (window 1h, lateness 0). The
// first publish holds 10:00 and 11:00; the partitions then read to 14:09,
// so the second publish (merged watermark 14:09: the lower of the two)
// keeps 13:00 on and leaves 10:00 and 11:00 out. `between` runs after it; a
// third round (to 15:09) and publish follow, which must not need the
// records of the windows retention took out.
void RetentionScenario(const std::string& base, Between between, std::string* gc_out = nullptr) {
  World w(base, /*retain_ms=*/3600 * 1000);
  auto a = w.Owner("a");
  for (int32_t p : {0, 1}) {
    ASSERT_STATUS_OK(a->Take(p, kafka::SourceName(kTopic, p)));
    w.Commit(a.get(), p, 0, 10);                                        // 10:15 .. 11:09
    ASSERT_EQ(w.SealRound(a.get(), p, 10, 10, /*all=*/true).size(), 2u);  // 10:00 v1, 11:00 v1
  }
  ASSERT_EQ(w.Publish(2), 1u);
  for (int32_t p : {0, 1}) {
    w.Commit(a.get(), p, 10, 40);  // 11:15 .. 14:09
    w.SealRound(a.get(), p, 40, 40, true);
  }
  ASSERT_EQ(w.Publish(2), 2u);
  const std::string seals0 = w.root() + "/partitions/kafka_orders_0/seals/";
  const std::string old = seals0 + "20251021T100000Z-v1-e1";
  ASSERT_TRUE(fs::exists(old + "/seal.json"));
  if (between == Between::kGcCrashedThenRerun) {
    RunResult r = Snapsink({"gc", w.root()}, {{"SNAPSINK_CRASH_AT", "gc.seal_record"}});
    ASSERT_EQ(r.exit_code, 99) << r.out << r.err;
    ASSERT_TRUE(fs::exists(old));                 // half removed:
    ASSERT_FALSE(fs::exists(old + "/seal.json"));  // seal.json first
  }
  if (between != Between::kNothing) {
    RunResult r = Snapsink({"gc", w.root()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (gc_out) *gc_out = r.out;
    for (int32_t p : {0, 1}) {  // only the windows from 13:00 on are left
      std::vector<std::string> left;
      for (const auto& e : fs::directory_iterator(w.root() + "/partitions/kafka_orders_" + std::to_string(p) + "/seals")) {
        left.push_back(e.path().filename().string().substr(0, 16));
      }
      std::sort(left.begin(), left.end());
      EXPECT_EQ(left, (std::vector<std::string>{"20251021T130000Z", "20251021T140000Z"})) << p;
    }
  }
  for (int32_t p : {0, 1}) {
    w.Commit(a.get(), p, 40, 50);  // 14:15 .. 15:09
    w.SealRound(a.get(), p, 50, 50, true);
  }
  ASSERT_EQ(w.Publish(2), 3u);
  RunResult q = Snapsink({"query", w.root(), "--format", "csv"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out.find("T13:00"), std::string::npos) << q.out;  // left out under retention now
  EXPECT_NE(q.out.find("T15:00"), std::string::npos) << q.out;
  RunResult v = Snapsink({"verify", w.root()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Under retention a publish point with nothing new and no window due to
// leave is only a look: it does not wait for LOCK, which another writer
// holds here (it would wait kFollowerStepWaitMs and fail Locked).
TEST(MergedPublishLook, UnderRetentionNothingNewAndNothingToLeaveTakesNoLock) {
  TempDir dir;
  World w(dir.path(), /*retain_ms=*/3600 * 1000);
  auto a = w.Owner("a");
  for (int32_t p : {0, 1}) {
    ASSERT_STATUS_OK(a->Take(p, kafka::SourceName(kTopic, p)));
    w.Commit(a.get(), p, 0, 10);  // 10:15 .. 11:09: nothing beyond retention yet
    ASSERT_EQ(w.SealRound(a.get(), p, 10, 10, /*all=*/true).size(), 2u);
  }
  ASSERT_EQ(w.Publish(2), 1u);
  std::unique_ptr<FileLock> held;
  ASSERT_STATUS_OK(LockRoot(Env::Default(), w.root(), &held));
  EXPECT_EQ(w.Publish(2), 0u);  // nothing published, no wait, no error
}

TEST(UpkeepGc, SealRecordsOfWindowsBeyondRetentionAreRemovedAndLaterPublishesAreByteIdenticalWithoutGc) {
  TempDir dir;
  std::string gc_out;
  ASSERT_NO_FATAL_FAILURE(RetentionScenario(dir.path() + "/plain", Between::kNothing));
  ASSERT_NO_FATAL_FAILURE(RetentionScenario(dir.path() + "/gc", Between::kGc, &gc_out));
  // 10:00 and 11:00 of each partition (the second round sealed nothing
  // before 13:00: beyond each partition's own retention by then).
  EXPECT_NE(gc_out.find("removed 4 seal record(s) of partitions whose window is beyond retention\n"),
            std::string::npos)
      << gc_out;
  const auto plain = PublishedFiles(dir.path() + "/plain/root", false);
  EXPECT_GT(plain.size(), 4u);
  EXPECT_EQ(plain, PublishedFiles(dir.path() + "/gc/root", false));
}

TEST(UpkeepGc, CrashedRemovingASealRecordBeyondRetentionThenRerunEqualsACleanGc) {
  TempDir dir;
  std::string gc_out;
  ASSERT_NO_FATAL_FAILURE(RetentionScenario(dir.path() + "/clean", Between::kGc));
  ASSERT_NO_FATAL_FAILURE(RetentionScenario(dir.path() + "/crashed", Between::kGcCrashedThenRerun, &gc_out));
  EXPECT_NE(gc_out.find("removed 4 seal record(s) of partitions whose window is beyond retention"), std::string::npos)
      << gc_out;  // the half-removed one finished, the rest removed
  const auto clean = PublishedFiles(dir.path() + "/clean/root", true);
  EXPECT_GT(clean.size(), 10u);
  EXPECT_EQ(clean, PublishedFiles(dir.path() + "/crashed/root", true));
}

}  // namespace
}  // namespace snapsink::testing
