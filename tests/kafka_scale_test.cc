// Many `snapsink run --kafka --state DIR` processes over one topic (SPEC 12),
// against librdkafka's in-process mock cluster hosted by this process (3
// brokers, a topic of 8 partitions): processes killed mid-batch and
// mid-seal, and a group scaled 1 -> 3 -> 1 while events are produced. Each
// test ends with what ROOT published equal to what `run --final` publishes
// over the same events from a file, partition after partition in offset
// order.
//
// The real snapsink binary runs as children (SNAPSINK_BINARY, or
// --snapsink=PATH). Nothing here waits a fixed time and then asserts: each
// step waits for a condition with a generous deadline (a busy machine only
// makes the tests slower). Session timeouts are 3 s, the mock's first join
// takes about 3 s: each test takes 20-40 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "tests/kafka_fixture.h"

#ifdef SNAPSINK_SANITIZED
// librdkafka in this process is not built with the sanitizers (see
// kafka_mock_harness.cc); the snapsink children keep leak detection.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

namespace snapsink::kafkatest {
namespace {

constexpr auto kDeadline = std::chrono::seconds(90);

class KafkaScale : public KafkaMock {
 protected:
  std::string StateDir(const std::string& name) const { return dir_ + "/" + name; }
  // `run ROOT --kafka ... --state STATE` with the short session timeout of
  // the Kafka tests, plus extra.
  std::vector<std::string> FollowArgs(const std::string& root, const std::string& group, const std::string& state,
                                      std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--state", state});
    return RunArgs(root, group, extra);
  }
  std::unique_ptr<Child> Start(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return std::make_unique<Child>(g_snapsink, args, env, dir_);
  }
  // What `run --final` publishes over the streams as one file, without versions.
  std::string FileRows(const std::vector<const EventStream*>& streams) { return Rows(FileQuery(streams)); }
  std::string OwnerState(const std::string& root, int p) { return ClaimedStateDir(root, p); }
  // The lines partition p's state under `state` has taken (-1 when it has no such state).
  int64_t StateLines(const std::string& state, int p) {
    const std::string path = state + "/orders/" + std::to_string(p);
    if (!std::filesystem::exists(path)) return -1;
    ChildResult r = Snapsink({"inspect", path, "sources", "--json"});
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex(R"re("source":"kafka:orders/[0-9]+".*?"lines":([0-9]+))re"))) {
      return -1;
    }
    return std::stoll(m[1]);
  }
  // Every partition's newest owner is one of `states` and holds exactly lines[p].
  bool OwnersHold(const std::string& root, const std::set<std::string>& states, const std::vector<uint64_t>& lines) {
    for (int p = 0; p < kPartitions; ++p) {
      const std::string owner = OwnerState(root, p);
      if (states.count(owner) == 0) return false;
      if (StateLines(owner, p) != static_cast<int64_t>(lines[p])) return false;
    }
    return true;
  }
  // Waits until done() holds, at most kDeadline; false if it never did or a
  // child that must keep running stopped.
  bool WaitFor(const std::function<bool()>& done, const std::vector<Child*>& alive = {}) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      for (Child* c : alive) {
        if (!c->Running()) return done();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return done();
  }
  // Waits for a child to end by itself (it has a crash point set).
  ChildResult WaitExit(Child* c) { return c->Wait(static_cast<int>(kDeadline.count())); }
  // Where every test ends: `run --final` on `state` publishes the windows
  // still open; ROOT's rows equal a file run's, every partition's newest
  // owner holds exactly its lines, and ROOT verifies.
  void FinalEqualsFile(const std::string& root, const std::string& group, const std::string& state,
                       const std::vector<const EventStream*>& streams) {
    std::vector<std::string> args = FollowArgs(root, group, state, {"--final"});
    ChildResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<uint64_t> lines = Lines(streams);
    for (int p = 0; p < kPartitions; ++p) {
      EXPECT_EQ(StateLines(OwnerState(root, p), p), static_cast<int64_t>(lines[p])) << "partition " << p;
    }
    const std::string want = FileRows(streams);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(Rows(Query(root)), want);
    r = Snapsink({"verify", root});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
};

// Produces a stream to every partition a record at a time (a round over the
// partitions every few ms) on its own thread, so that the group rebalances
// while the topic grows. What is produced does not depend on the timing: each
// partition gets its records in order.
class Trickle {
 public:
  Trickle(MockCluster* cluster, const EventStream& s) {
    thread_ = std::thread([this, cluster, &s] {
      size_t longest = 0;
      for (const auto& r : s.records) longest = std::max(longest, r.size());
      for (size_t i = 0; i < longest; i += 4) {
        for (int p = 0; p < kPartitions; ++p) {
          const auto& recs = s.records[p];
          if (i >= recs.size()) continue;
          std::vector<std::string> chunk(recs.begin() + i, recs.begin() + std::min(i + 4, recs.size()));
          if (!cluster->Produce(kTopic, p, chunk)) failed_ = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
    });
  }
  ~Trickle() { Join(); }
  // True when every record was acknowledged.
  bool Join() {
    if (thread_.joinable()) thread_.join();
    return !failed_;
  }

 private:
  std::thread thread_;
  std::atomic<bool> failed_{false};
};

// `kill -9` a process in the middle of a batch and another in the
// middle of a seal; the survivor takes their partitions once their sessions
// have expired, and the result is the same as a file run's.
//   A owns every partition and dies inside its first batch commit (the
//   batch's effects applied in the open transaction, not committed): its
//   17th commit, after the 16 that take its 8 partitions (the owner epoch
//   and the start position of each). How many of that round's other
//   partitions committed first is up to the threads that commit them.
//   B and C then share the partitions; B dies recording a seal in ROOT
//   (records written to temps under the claim lock, not yet in place) at
//   its 9th partition seal: at least its second publish point owning
//   partitions (it owns at most 8), so it has usually recorded seals of
//   its own by then (accepted, then superseded by C's).
//   C takes B's partitions after B's session expires and reads what is
//   produced while it is alone; SIGTERM, then `run --final` publishes.
// Checkpoints every 40 offsets, so a successor restores a dead owner's
// checkpoint and rereads from there, not only from the topic's start.
TEST_F(KafkaScale, KilledMidBatchAndMidSealSurvivorsTakeOverSameResult) {
  const EventStream first = GenerateEvents(kPartitions, 200, 31);
  const EventStream second = GenerateEvents(kPartitions, 150, 32, 200);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  const std::string a_state = StateDir("state-a"), b_state = StateDir("state-b"), c_state = StateDir("state-c");
  const std::vector<std::string> common = {"--publish-every", "1s", "--checkpoint-every", "40", "--kafka-config",
                                           "max.partition.fetch.bytes=4096"};
  auto follow = [&](const std::string& state) {
    std::vector<std::string> extra = {"--follow"};
    extra.insert(extra.end(), common.begin(), common.end());
    return FollowArgs(root, "gk1", state, extra);
  };

  // A alone: it is given every partition and dies in a batch.
  auto a = Start(follow(a_state), {"SNAPSINK_CRASH_AT=ingest.before_commit", "SNAPSINK_CRASH_HIT=17"});
  ChildResult ra = WaitExit(a.get());
  ASSERT_EQ(ra.exit_code, 99) << ra.err;
  std::set<int> a_owned;
  for (int p = 0; p < kPartitions; ++p) {
    if (OwnerState(root, p) == a_state) a_owned.insert(p);
  }
  ASSERT_EQ(a_owned.size(), size_t{kPartitions}) << "A was not given every partition";
  // It died in the middle of the topic: a batch was left uncommitted.
  int64_t a_lines = 0, first_lines = 0;
  for (int p = 0; p < kPartitions; ++p) {
    a_lines += std::max<int64_t>(0, StateLines(a_state, p));
    first_lines += static_cast<int64_t>(first.lines[p]);
  }
  EXPECT_LT(a_lines, first_lines) << ra.err;
  EXPECT_NE(ra.err.find("kafka:orders/7: new partition, starting at offset 0"), std::string::npos) << ra.err;

  // B and C: the group waits out A's session, then gives them A's partitions.
  auto b = Start(follow(b_state), {"SNAPSINK_CRASH_AT=partition.seal_record", "SNAPSINK_CRASH_HIT=9"});
  auto c = Start(follow(c_state));
  ChildResult rb = WaitExit(b.get());
  ASSERT_EQ(rb.exit_code, 99) << rb.err;
  ASSERT_TRUE(c->Running());
  std::set<int> b_owned;
  for (int p = 0; p < kPartitions; ++p) {
    if (OwnerState(root, p) == b_state) b_owned.insert(p);
  }
  ASSERT_FALSE(b_owned.empty()) << "B died owning nothing";
  // Whether B's crash left a record half-made (its temp in seals/) depends on
  // what B had read by its 9th partition seal: said, not asserted.
  for (int p : b_owned) {
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(root + "/partitions/kafka_orders_" + std::to_string(p) + "/seals", ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") std::fprintf(stderr, "B left %s\n", name.c_str());
    }
  }

  // C alone, reading what comes while it owns everything.
  ProduceStream(second);
  const std::vector<uint64_t> lines = Lines({&first, &second});
  ASSERT_TRUE(WaitFor([&] { return OwnersHold(root, {c_state}, lines); }, {c.get()}))
      << "C did not take every partition and read it";
  c->Signal(SIGTERM);
  ChildResult rc = c->Wait(60);
  ASSERT_EQ(rc.exit_code, 0) << rc.err;
  // C took the dead owners' partitions at a newer epoch.
  for (int p : b_owned) {
    EXPECT_NE(rc.err.find("kafka:orders/" + std::to_string(p) + ": taken at owner epoch"), std::string::npos)
        << "partition " << p << "\n" << rc.err;
  }
  FinalEqualsFile(root, "gk1", c_state, {&first, &second});
}

// Scale 1 -> 3 -> 1 while events are produced. P1 reads the
// first stream alone; P2 and P3 join while the second is produced (the
// group rebalances, partitions move with their states: checkpoints in ROOT
// or a reread); then, while the third is produced, P2 leaves (SIGTERM) and
// P3 is killed (kill -9), and P1 takes every partition back. `run --final`
// on P1's state then publishes: the same rows as a file run.
TEST_F(KafkaScale, ScaleOneToThreeToOneWhileProducingSameResult) {
  const EventStream first = GenerateEvents(kPartitions, 150, 41);
  const EventStream second = GenerateEvents(kPartitions, 200, 42, 150);
  const EventStream third = GenerateEvents(kPartitions, 200, 43, 350);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  const std::string s1 = StateDir("state-1"), s2 = StateDir("state-2"), s3 = StateDir("state-3");
  auto follow = [&](const std::string& state) {
    return FollowArgs(root, "gk2", state, {"--follow", "--publish-every", "1s", "--checkpoint-every", "50"});
  };

  // One process.
  auto p1 = Start(follow(s1));
  ASSERT_TRUE(WaitFor([&] { return OwnersHold(root, {s1}, Lines({&first})); }, {p1.get()}))
      << "P1 did not read the first stream";

  // Three: P2 and P3 join while the second stream is produced.
  std::unique_ptr<Child> p2, p3;
  {
    Trickle producing(cluster_.get(), second);
    p2 = Start(follow(s2));
    p3 = Start(follow(s3));
    ASSERT_TRUE(producing.Join());
  }
  const std::vector<uint64_t> two = Lines({&first, &second});
  auto owns_some = [&](const std::string& state) {
    for (int p = 0; p < kPartitions; ++p) {
      if (OwnerState(root, p) == state) return true;
    }
    return false;
  };
  ASSERT_TRUE(WaitFor([&] { return owns_some(s2) && owns_some(s3) && OwnersHold(root, {s1, s2, s3}, two); },
                      {p1.get(), p2.get(), p3.get()}))
      << "the three did not share the partitions and read the second stream";

  // One again: while the third stream is produced, P2 leaves and P3 dies.
  {
    Trickle producing(cluster_.get(), third);
    p2->Signal(SIGTERM);
    p3->Signal(SIGKILL);
    ChildResult r2 = p2->Wait(60);
    EXPECT_EQ(r2.exit_code, 0) << r2.err;
    ChildResult r3 = p3->Wait(60);
    EXPECT_EQ(r3.exit_code, 128 + SIGKILL);
    ASSERT_TRUE(producing.Join());
  }
  const std::vector<uint64_t> all = Lines({&first, &second, &third});
  ASSERT_TRUE(WaitFor([&] { return OwnersHold(root, {s1}, all); }, {p1.get()}))
      << "P1 did not take every partition back and read the third stream";
  p1->Signal(SIGTERM);
  ChildResult r1 = p1->Wait(60);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  FinalEqualsFile(root, "gk2", s1, {&first, &second, &third});
}


// The generations a process announced on stdout ("published generation N").
std::vector<uint64_t> Announced(const std::string& out) {
  std::vector<uint64_t> gens;
  const std::regex re("published generation ([0-9]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it) gens.push_back(std::stoull((*it)[1]));
  return gens;
}

// The zombie. Z owns every partition and is stopped
// (SNAPSINK_PAUSE_AT) inside a batch commit: its effects applied in the open
// transaction, not committed (ingest.before_commit, its 17th hit: after the
// 16 commits that take its 8 partitions). S takes every partition once Z's
// session has expired (owner epoch 2 against Z's 1), reads the topic and
// publishes. Then Z is resumed (with SIGTERM pending, so that it ends after
// that round): the owner-epoch check inside its commit refuses the batch,
// naming the partition and both epochs, and Z gives the partition up with
// nothing of the batch committed; it exits 0 (SIGTERM's clean end). S goes
// on alone; the result equals a file run's, and no line is counted twice.
TEST_F(KafkaScale, ZombieResumedInsideABatchHasItsCommitRefusedSameResult) {
  const EventStream first = GenerateEvents(kPartitions, 200, 51);
  const EventStream second = GenerateEvents(kPartitions, 150, 52, 200);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  const std::string z_state = StateDir("state-z"), s_state = StateDir("state-s");
  auto follow = [&](const std::string& state) {
    return FollowArgs(root, "gz1", state,
                      {"--follow", "--publish-every", "1s", "--checkpoint-every", "40", "--kafka-config",
                       "max.partition.fetch.bytes=4096"});
  };

  auto z = Start(follow(z_state), {"SNAPSINK_PAUSE_AT=ingest.before_commit", "SNAPSINK_PAUSE_HIT=17"});
  ASSERT_TRUE(WaitFor([&] { return z->Stopped(); }, {z.get()})) << z->Err();
  for (int p = 0; p < kPartitions; ++p) ASSERT_EQ(OwnerState(root, p), z_state) << "partition " << p;

  // S takes over past Z's session timeout, reads everything and publishes.
  auto s = Start(follow(s_state));
  const std::vector<uint64_t> one = Lines({&first});
  ASSERT_TRUE(WaitFor([&] { return OwnersHold(root, {s_state}, one) && std::filesystem::exists(root + "/CURRENT"); },
                      {s.get()}))
      << "S did not take every partition, read it and publish";
  ASSERT_TRUE(z->Stopped());

  // Z wakes up inside its commit.
  z->Signal(SIGTERM);  // pending until it runs: it ends after the round it is in
  z->Signal(SIGCONT);
  ChildResult rz = WaitExit(z.get());
  EXPECT_EQ(rz.exit_code, 0) << rz.err;
  std::smatch m;
  const std::regex fenced(R"re(kafka:orders/([0-9]+): owner epoch ([0-9]+) was fenced by epoch ([0-9]+) \([^)]*\); giving up kafka:orders/\1 \(its records since offset ([0-9]+) are the new owner's\))re");
  ASSERT_TRUE(std::regex_search(rz.err, m, fenced)) << rz.err;
  const int p = std::stoi(m[1]);
  EXPECT_EQ(std::stoull(m[2]), 1u) << m[0];
  EXPECT_EQ(std::stoull(m[3]), 2u) << m[0];
  // Nothing of the refused batch committed in Z's own state: it is still
  // at the offset the message names.
  ChildResult zs = Snapsink({"inspect", z_state + "/orders/" + std::to_string(p), "sources", "--json"});
  ASSERT_EQ(zs.exit_code, 0) << zs.err;
  EXPECT_NE(zs.out.find("\"position\":\"" + std::string(m[4]) + "\""), std::string::npos) << m[0] << "\n" << zs.out;

  // S alone reads what comes next; `run --final` then equals a file run.
  ProduceStream(second);
  ASSERT_TRUE(WaitFor([&] { return OwnersHold(root, {s_state}, Lines({&first, &second})); }, {s.get()}))
      << "S did not read the second stream";
  s->Signal(SIGTERM);
  ChildResult rs = s->Wait(60);
  ASSERT_EQ(rs.exit_code, 0) << rs.err;
  FinalEqualsFile(root, "gz1", s_state, {&first, &second});
}

// Two processes publishing at the same moment. A and B share the
// topic, both with SNAPSINK_PAUSE_AT=merge.before_lock: each stops at its
// first publish point that finds windows to publish, right before it takes
// LOCK for the generation step (manifests/N is written under it). Whichever
// stops first is taken over by the other past its session timeout, which
// then finds the same windows unpublished and stops there too. Both are
// released at once: exactly one creates the generation, the other finds
// the windows published under LOCK and writes nothing (no generation that
// repeats the one before it). CURRENT names the newest generation,
// manifests/ holds exactly the generations announced (each by one
// process), no temporary or staged file is left, verify passes, and the
// rows equal a file run's.
TEST_F(KafkaScale, TwoProcessesReleasedAtOncePublishEachGenerationOnce) {
  const EventStream first = GenerateEvents(kPartitions, 200, 61);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  const std::string a_state = StateDir("state-a"), b_state = StateDir("state-b");
  auto follow = [&](const std::string& state) {
    return FollowArgs(root, "gp1", state, {"--follow", "--publish-every", "1s"});
  };
  const std::vector<std::string> pause = {"SNAPSINK_PAUSE_AT=merge.before_lock"};
  auto a = Start(follow(a_state), pause);
  auto b = Start(follow(b_state), pause);
  ASSERT_TRUE(WaitFor([&] { return a->Stopped() && b->Stopped(); }, {a.get(), b.get()}))
      << "A:\n" << a->Err() << "\nB:\n" << b->Err();
  ASSERT_FALSE(std::filesystem::exists(root + "/CURRENT")) << "published before the pause";

  // Both released together, each ending after the publish it is in.
  for (Child* c : {a.get(), b.get()}) c->Signal(SIGTERM);
  a->Signal(SIGCONT);
  b->Signal(SIGCONT);
  ChildResult ra = WaitExit(a.get());
  ChildResult rb = WaitExit(b.get());
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  // Each generation was created by one of them: announced once, in
  // manifests/ once, and the newest is CURRENT's.
  std::vector<uint64_t> gens = Announced(ra.out);
  const std::vector<uint64_t> by_b = Announced(rb.out);
  gens.insert(gens.end(), by_b.begin(), by_b.end());
  std::sort(gens.begin(), gens.end());
  ASSERT_FALSE(gens.empty()) << "A:\n" << ra.out << ra.err << "B:\n" << rb.out << rb.err;
  std::vector<std::string> want_manifests, manifests;
  for (size_t i = 0; i < gens.size(); ++i) {
    EXPECT_EQ(gens[i], i + 1) << "A:\n" << ra.out << "B:\n" << rb.out;
    want_manifests.push_back(std::to_string(i + 1));
  }
  for (const auto& e : std::filesystem::directory_iterator(root + "/manifests")) {
    if (e.is_directory() && e.path().filename() == "parts") continue;  // the generations' parts
    manifests.push_back(e.path().filename().string());
  }
  std::sort(manifests.begin(), manifests.end());
  EXPECT_EQ(manifests, want_manifests);
  EXPECT_EQ(ReadFile(root + "/CURRENT").substr(0, std::to_string(gens.size()).size() + 1),
            std::to_string(gens.size()) + " ")
      << ReadFile(root + "/CURRENT");
  // The one released second changed nothing: no generation repeats the one
  // before it (the same windows merged again from the same seals). A later
  // one, from a publish point at SIGTERM, holds rows read since.
  for (size_t g = 2; g <= gens.size(); ++g) {
    auto rows = [&](size_t gen) {
      ChildResult r = Snapsink({"query", root, "--format", "json", "--generation", std::to_string(gen)});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      return Rows(r.out);
    };
    EXPECT_NE(rows(g - 1), rows(g)) << "generation " << g << " published what " << g - 1 << " had";
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/staging", ec)) {
    ADD_FAILURE() << "left in staging: " << e.path();
  }
  ChildResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  FinalEqualsFile(root, "gp1", b_state, {&first});
}

}  // namespace
}  // namespace snapsink::kafkatest

int main(int argc, char** argv) { return snapsink::kafkatest::RunTests(argc, argv); }
