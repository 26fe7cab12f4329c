// `run --kafka --state --final` means the topic is done: a process whose own
// partitions are sealed waits in the group until every partition of the
// topic is sealed up to the end offsets it saw at start, taking a dead
// owner's partitions when the group gives them to it; it never exits 0
// with a partition left. Part of kafka_scale_test (its main() is in
// kafka_scale_test.cc).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/kafka_fixture.h"

namespace snapsink::kafkatest {
namespace {

class KafkaFinal : public KafkaMock {
 protected:
  std::vector<std::string> FinalArgs(const std::string& root, const std::string& group, const std::string& state) {
    return RunArgs(root, group, {"--state", dir_ + "/" + state, "--final", "--kafka-config",
                                 "max.partition.fetch.bytes=4096"});
  }
  std::unique_ptr<Child> Start(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return std::make_unique<Child>(g_snapsink, args, env, dir_);
  }
  // The partitions whose newest owner claim names `state`.
  std::set<int> OwnedBy(const std::string& root, const std::string& state) {
    std::set<int> out;
    for (int p = 0; p < kPartitions; ++p) {
      if (ClaimedStateDir(root, p) == dir_ + "/" + state) out.insert(p);
    }
    return out;
  }
};

// Three owners; C dies recording its final seals in ROOT (crash point
// partition.seal_record: its records written, none in place, no progress).
// A and B, done with their own partitions, wait in the group, take C's
// partitions after C's session expires, read, seal and record them, and
// exit 0 with every row published: the same as `run --final` over a file.
TEST_F(KafkaFinal, OwnerKilledAtSealRecordOthersFinishTheTopic) {
  const EventStream events = GenerateEvents(kPartitions, 200, 81);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  auto a = Start(FinalArgs(root, "gf1", "state-a"));
  auto b = Start(FinalArgs(root, "gf1", "state-b"));
  auto c = Start(FinalArgs(root, "gf1", "state-c"), {"SNAPSINK_CRASH_AT=partition.seal_record"});
  ChildResult rc = c->Wait(120);
  ASSERT_EQ(rc.exit_code, 99) << rc.err;
  const std::set<int> c_owned = OwnedBy(root, "state-c");
  ASSERT_FALSE(c_owned.empty()) << "C died owning nothing";
  ChildResult ra = a->Wait(120);
  ChildResult rb = b->Wait(120);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  // C died owning partitions (unless the group moved them away first), and
  // A or B took each of them at a newer epoch.
  for (int p = 0; p < kPartitions; ++p) {
    const std::string owner = ClaimedStateDir(root, p);
    EXPECT_TRUE(owner == dir_ + "/state-a" || owner == dir_ + "/state-b") << "partition " << p << ": " << owner;
  }
  std::fprintf(stderr, "C's partitions at its death: %zu\n", c_owned.size());
  const std::string want = Rows(FileQuery({&events}));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(Rows(Query(root)), want) << ra.err << rb.err;
  ChildResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A finishes its partitions while B is paused inside its final seal round
// (SNAPSINK_PAUSE_AT=partition.seal_record): A says it waits for B's
// partitions. Stopped (SIGTERM) while waiting, A exits non-zero naming
// them, never 0. Released, B finishes; A's rerun then finds the topic done.
// A session timeout of 60 s keeps the paused B in the group meanwhile. 1500
// events a partition, so that A has taken its partitions before B pauses
// (seen with 100: when B paused first, A's watermark queries in its
// assignment timed out against the mock cluster and A never took any).
TEST_F(KafkaFinal, StoppedWhileWaitingForOthersPartitionsExitsNonZeroNamingThem) {
  const EventStream events = GenerateEvents(kPartitions, 1500, 82);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  auto slow = [&](const std::string& state) {
    std::vector<std::string> args = FinalArgs(root, "gf2", state);
    args.insert(args.end(), {"--kafka-config", "session.timeout.ms=60000"});
    return args;
  };
  auto b = Start(slow("state-b"), {"SNAPSINK_PAUSE_AT=partition.seal_record"});
  auto a = Start(slow("state-a"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline &&
         (a->Err().find("--final waits for") == std::string::npos || !b->Stopped()) && a->Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(b->Stopped()) << b->Err();
  ASSERT_NE(a->Err().find("--final waits for"), std::string::npos) << a->Err();
  const std::set<int> b_owned = OwnedBy(root, "state-b");
  ASSERT_FALSE(b_owned.empty());
  a->Signal(SIGTERM);
  ChildResult ra = a->Wait(60);
  EXPECT_NE(ra.exit_code, 0) << ra.err;
  EXPECT_NE(ra.err.find("stopped before "), std::string::npos) << ra.err;
  for (int p : b_owned) {
    EXPECT_NE(ra.err.find("kafka:orders/" + std::to_string(p)), std::string::npos) << p << "\n" << ra.err;
  }
  b->Signal(SIGCONT);
  ChildResult rb = b->Wait(120);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  ChildResult again = Snapsink(slow("state-a"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&events})));
}

// The bound: B is paused inside its final seal round with a session timeout
// of 60 s, so the group leaves its partitions with it; A (session timeout
// 10 s: it waits 30 s, the least) sees nothing move them and exits 1 on its
// own, naming them and the bound. Released, B finishes the topic. 1500
// events a partition, as above.
TEST_F(KafkaFinal, NothingMovesThePartitionsLeftForTheBoundExitsNonZeroNamingThem) {
  const EventStream events = GenerateEvents(kPartitions, 1500, 83);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  auto with_session = [&](const std::string& state, const std::string& ms) {
    std::vector<std::string> args = FinalArgs(root, "gf3", state);
    args.insert(args.end(), {"--kafka-config", "session.timeout.ms=" + ms});
    return args;
  };
  auto b = Start(with_session("state-b", "60000"), {"SNAPSINK_PAUSE_AT=partition.seal_record"});
  auto a = Start(with_session("state-a", "10000"));
  const auto started = std::chrono::steady_clock::now();
  ChildResult ra = a->Wait(120);
  const auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(b->Stopped()) << b->Err();
  const std::set<int> b_owned = OwnedBy(root, "state-b");
  ASSERT_FALSE(b_owned.empty());
  // Under load the group may instead give A the paused B's partitions (a
  // rebalance B cannot answer); A then cannot claim them, since B still
  // holds their owner LOCK, and stops on that claim (exit 5, naming the
  // partition). Either way A exits non-zero naming what is left undone.
  const bool claim_refused = ra.exit_code == 5 && ra.err.find("is locked by another process") != std::string::npos;
  if (!claim_refused) {
    EXPECT_EQ(ra.exit_code, 1) << ra.err;
    EXPECT_NE(ra.err.find("nothing moved them for 30 s (twice session.timeout.ms, at least 30 s): no process of "
                          "group gf3 took them"),
              std::string::npos)
        << ra.err;
  }
  for (int p : b_owned) {
    if (claim_refused) break;  // the claim's message names the one partition it stopped on
    EXPECT_NE(ra.err.find("kafka:orders/" + std::to_string(p)), std::string::npos) << p << "\n" << ra.err;
  }
  if (claim_refused) {
    EXPECT_NE(ra.err.find("kafka:orders/"), std::string::npos) << ra.err;
  } else {
    EXPECT_GE(waited, std::chrono::seconds(30));
  }
  b->Signal(SIGCONT);
  ChildResult rb = b->Wait(120);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&events})));
}

}  // namespace
}  // namespace snapsink::kafkatest
