// `run --kafka --state --final` means the topic is done: a process whose own
// partitions are sealed waits in the group until every partition of the
// topic is sealed up to the end offsets it saw at start, taking a dead
// owner's partitions when the group gives them to it; it never exits 0
// with a partition left. Part of kafka_scale_test (its main() is in
// kafka_scale_test.cc).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
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
  // Holds partition p's claim lock (ROOT/owners/kafka_orders_P/LOCK) from
  // this process, as an owner stopped inside its claim or seal round would:
  // the fd to close to release it.
  int HoldClaimLock(const std::string& root, int p) {
    const std::string dir = root + "/owners/kafka_orders_" + std::to_string(p);
    std::filesystem::create_directories(dir);
    const int fd = ::open((dir + "/LOCK").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0) << dir;
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    EXPECT_EQ(::fcntl(fd, F_OFD_SETLK, &fl), 0) << dir;
    return fd;
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
  // About 60 s on a quiet machine (the session timeout above); a loaded
  // one took past 90 s, so the bound leaves room.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
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
// 10 s: it waits 45 s, the least) sees nothing move them and exits 1 on its
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
  // Under load the group may give A the paused B's partitions (a rebalance
  // B cannot answer): A takes those whose claim lock is free and waits for
  // the one B holds, paused inside its seal round, until the bound.
  EXPECT_EQ(ra.exit_code, 1) << ra.err;
  EXPECT_NE(ra.err.find("nothing moved them for 45 s (three times session.timeout.ms, at least 45 s): no process of "
                        "group gf3 took them"),
            std::string::npos)
      << ra.err;
  for (int p : b_owned) {
    EXPECT_NE(ra.err.find("kafka:orders/" + std::to_string(p)), std::string::npos) << p << "\n" << ra.err;
  }
  EXPECT_GE(waited, std::chrono::seconds(45));
  b->Signal(SIGCONT);
  ChildResult rb = b->Wait(120);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&events})));
}

// Regression: a process given a partition whose claim lock another live
// process holds (an owner stopped inside its claim or seal round, which the
// group gave up on) stopped at once, exit 5 ("claiming: .../LOCK is locked
// by another process"). It now waits in the group, claiming again with
// backoff, and takes the partition when the lock frees. The test holds
// partition 3's claim lock itself; A, alone in the group, is given all 8.
TEST_F(KafkaFinal, HandedAPartitionWhoseClaimLockIsHeldWaitsAndTakesItWhenFreed) {
  const EventStream events = GenerateEvents(kPartitions, 200, 84);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  const int lock_fd = HoldClaimLock(root, 3);
  auto a = Start(FinalArgs(root, "gf4", "state-a"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && a->Err().find("--final waits for") == std::string::npos &&
         a->Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(a->Running()) << a->Wait(1).err;
  const std::string err = a->Err();
  EXPECT_NE(err.find("kafka:orders/3: claiming: "), std::string::npos) << err;
  EXPECT_NE(err.find("is locked by another process: waiting for it"), std::string::npos) << err;
  EXPECT_NE(err.find("--final waits for kafka:orders/3 ("), std::string::npos) << err;
  EXPECT_EQ(ClaimedStateDir(root, 3), "");  // nothing claimed while the lock is held
  ::close(lock_fd);
  ChildResult ra = a->Wait(120);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_NE(ra.err.find("kafka:orders/3: taken at owner epoch 1"), std::string::npos) << ra.err;
  EXPECT_EQ(OwnedBy(root, "state-a").size(), static_cast<size_t>(kPartitions));
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&events})));
}

// The same, the lock never freed: A reads, seals and records the other 7,
// waits for partition 3 and at the bound (45 s, the least) exits 1 naming
// it, as when another process owns it. Run again once the lock is free, it
// finishes the topic.
TEST_F(KafkaFinal, HandedAPartitionWhoseClaimLockStaysHeldExitsOneAtTheBoundNamingIt) {
  const EventStream events = GenerateEvents(kPartitions, 200, 85);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  const int lock_fd = HoldClaimLock(root, 3);
  const auto started = std::chrono::steady_clock::now();
  ChildResult ra = Snapsink(FinalArgs(root, "gf5", "state-a"), {}, 120);
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(ra.exit_code, 1) << ra.err;
  EXPECT_NE(ra.err.find("kafka:orders: kafka:orders/3 not sealed up to the end offsets seen at start, and nothing "
                        "moved them for 45 s"),
            std::string::npos)
      << ra.err;
  EXPECT_GE(waited, std::chrono::seconds(45));
  EXPECT_EQ(ClaimedStateDir(root, 3), "");
  ::close(lock_fd);
  ChildResult again = Snapsink(FinalArgs(root, "gf5", "state-a"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&events})));
}

// The case the bound test above can meet under load, made certain: B is
// paused inside its final seal round, holding its partition's claim lock,
// and with a session timeout of 3 s the group soon gives all of B's
// partitions to A. A takes those whose lock is free and waits for the one
// B holds. Resumed, B finishes that round (it was still the newest owner)
// and lets the lock go. Then either A claims the partition at a newer
// epoch, and B has lost it, or the group (B back in it) takes it back from
// A first, and A stops waiting. Both exit 0 and the published rows equal a
// file run.
TEST_F(KafkaFinal, OwnerPausedHoldingItsClaimLockIsWaitedForThenResumedBothFinishTheTopic) {
  const EventStream events = GenerateEvents(kPartitions, 1500, 86);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  auto b = Start(FinalArgs(root, "gf6", "state-b"), {"SNAPSINK_PAUSE_AT=partition.seal_record"});
  auto a = Start(FinalArgs(root, "gf6", "state-a"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && a->Running() &&
         a->Err().find("is locked by another process: waiting for it") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(b->Stopped()) << b->Err();
  ASSERT_TRUE(a->Running()) << a->Wait(1).err;
  const std::string err = a->Err();
  const size_t at = err.find("is locked by another process: waiting for it");
  ASSERT_NE(at, std::string::npos) << err;
  const size_t name = err.rfind("kafka:orders/", at);
  ASSERT_NE(name, std::string::npos) << err;
  const int held = std::stoi(err.substr(name + 13));
  EXPECT_EQ(ClaimedStateDir(root, held), dir_ + "/state-b");  // still B's while it holds the lock
  const std::string claims = root + "/owners/kafka_orders_" + std::to_string(held);
  auto newest_claim = [&] {
    std::string newest;
    for (const auto& e : std::filesystem::directory_iterator(claims)) {
      const std::string n = e.path().filename().string();
      if (n.size() == 20 && n > newest) newest = n;
    }
    return newest;
  };
  const std::string paused_claim = newest_claim();
  b->Signal(SIGCONT);
  ChildResult ra = a->Wait(120);
  ChildResult rb = b->Wait(120);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_EQ(rb.exit_code, 0) << rb.err;
  // A claimed it after B's epoch (B, resumed, lost it; it may take it
  // again later as a new owner, at a newer epoch still), or was revoked
  // while waiting.
  bool a_claimed_after = false;
  for (const auto& e : std::filesystem::directory_iterator(claims)) {
    const std::string n = e.path().filename().string();
    if (n.size() == 20 && n > paused_claim && ReadFile(e.path().string()).find(dir_ + "/state-a") != std::string::npos) {
      a_claimed_after = true;
    }
  }
  const std::string after = ra.err.substr(at);
  const bool taken = after.find("kafka:orders/" + std::to_string(held) + ": taken at owner epoch") != std::string::npos;
  const bool revoked = after.find("kafka:orders/" + std::to_string(held) +
                                  ": taken back by the group before its claim lock was free") != std::string::npos;
  EXPECT_TRUE(taken || revoked) << ra.err;
  EXPECT_EQ(taken, a_claimed_after) << ra.err;
  std::fprintf(stderr, "partition %d: %s\n", held, taken ? "A took it after B let the lock go" : "given back to B");
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&events})));
  ChildResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Without --final or --follow, a run given a partition whose claim lock
// another process holds reads the rest, ends once they are caught up and
// names the one it could not take (its holder still owns it), exit 0.
TEST_F(KafkaFinal, WithoutFinalAPartitionWhoseClaimLockIsHeldIsLeftAndNamed) {
  const EventStream events = GenerateEvents(kPartitions, 100, 87);
  ProduceStream(events);
  const std::string root = NewRoot("kafka-root");
  const int lock_fd = HoldClaimLock(root, 3);
  ChildResult r = Snapsink(RunArgs(root, "gf7", {"--state", dir_ + "/state-a"}), {}, 120);
  ::close(lock_fd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kafka:orders: kafka:orders/3 not read by this run: another process held their claim lock "
                       "throughout (it still owns them); run again to read them here"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ClaimedStateDir(root, 3), "");
  EXPECT_EQ(OwnedBy(root, "state-a").size(), static_cast<size_t>(kPartitions - 1));
}

}  // namespace
}  // namespace snapsink::kafkatest
