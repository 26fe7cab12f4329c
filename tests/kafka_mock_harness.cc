// `snapsink run --kafka` end to end, against librdkafka's in-process mock
// cluster (3 brokers, a topic of 8 partitions) hosted by this process: the
// real snapsink binary runs as a child (path: SNAPSINK_BINARY, or
// --snapsink=PATH). Every test compares what the Kafka run published with
// what `run --final` publishes over the same events from a file, partition
// after partition in offset order.
//
// The mock is slow to form a group (~3 s for a first join); timeouts are
// short (session 3 s) so the whole file stays well under two minutes.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <thread>

#include "tests/kafka_fixture.h"

#ifdef SNAPSINK_SANITIZED
// The harness process hosts librdkafka (not built with the sanitizers),
// whose threads may still hold memory when a test's process exits; the
// snapsink children, which run the code under test, keep leak detection.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

namespace snapsink::kafkatest {
namespace {

// Sequence numbers per partition of the merged-publish test (redeliveries come on top).
constexpr int kMergedEvents = 25000;

// librdkafka protocol ApiKeys (rdkafka_protocol.h is not installed).
constexpr int16_t kFetch = 1, kOffsetCommit = 8, kHeartbeat = 12, kSyncGroup = 14;



TEST_F(KafkaMock, RunFinalPublishesWhatAFileRunPublishes) {
  const EventStream s = GenerateEvents(kPartitions, 300, 1);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  ChildResult r = Snapsink(RunArgs(root, "g1", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string expected = FileQuery({&s});
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(Query(root), expected);
  CheckAccounting(root, s.lines);
  // Per partition: committed offset, high watermark, lag, newest event time.
  int64_t lo = 0, hi = 0;
  ASSERT_TRUE(cluster_->Watermarks(kTopic, 2, &lo, &hi));
  const std::string hw = std::to_string(hi);
  r = Snapsink({"inspect", root, "sources", "--json"});
  EXPECT_NE(r.out.find(R"("position":")" + hw + R"(","high_watermark":)" + hw + R"(,"lag":0,"newest_event":"2026-)"),
            std::string::npos) << r.out;
  r = Snapsink({"status", root, "--json"});
  EXPECT_NE(r.out.find(R"("position":")" + hw + R"(","read":)" + hw + R"(,"high_watermark":)" + hw), std::string::npos)
      << r.out;
  r = Snapsink({"status", root});
  EXPECT_NE(r.out.find("kafka:orders/2  offset"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("high watermark " + hw + ", lag 0, newest event 2026-"), std::string::npos) << r.out;
  r = Snapsink({"metrics", root});
  EXPECT_NE(r.out.find("snapsink_source_lag{source=\"kafka:orders/2\"} 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("snapsink_source_end_position{source=\"kafka:orders/2\"} " + hw + "\n"), std::string::npos);
  // A bad line is recorded with its record's partition and offset.
  const std::string rejects = ReadFile(root + "/rejects/kafka_orders_1.ndjson");
  EXPECT_NE(rejects.find(R"("source":"kafka:orders/1")"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("kafka:orders/1@"), std::string::npos) << rejects;
  // A second run finds nothing new and changes nothing.
  r = Snapsink(RunArgs(root, "g1", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query(root), expected);
  CheckAccounting(root, s.lines);
}

// A rebalance served inside a batch call drops that batch untaken and
// fetches every partition again from its next offset. A test cannot time a
// rebalance into a batch call, so the hook makes every third one act as if
// one had come: each of the eager and the cooperative protocol (whose
// restarts differ) must publish what the file run publishes, each offset
// once.
TEST_F(KafkaMock, BatchDroppedForARebalanceIsFetchedAgainSameResult) {
  const EventStream s = GenerateEvents(kPartitions, 3000, 9);
  ProduceStream(s);
  const std::string expected = FileQuery({&s});
  ASSERT_FALSE(expected.empty());
  int n = 0;
  for (const char* strategy : {"range", "cooperative-sticky"}) {
    const std::string root = NewRoot("kafka-root-" + std::to_string(n));
    ChildResult r = Snapsink(RunArgs(root, "g-refetch-" + std::to_string(n++),
                                     {"--final", "--kafka-config", std::string("partition.assignment.strategy=") + strategy,
                                      "--kafka-config", "max.partition.fetch.bytes=8192"}),
                             {"SNAPSINK_KAFKA_REFETCH_EVERY=3"});
    ASSERT_EQ(r.exit_code, 0) << strategy << "\n" << r.err;
    EXPECT_EQ(Query(root), expected) << strategy;
    CheckAccounting(root, s.lines);
  }
}

TEST_F(KafkaMock, KilledAtIngestCrashPointsThenRestartedSameResult) {
  const EventStream s = GenerateEvents(kPartitions, 400, 2);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  // Each crashed run gets further; the last one finishes.
  const std::vector<std::pair<std::string, int>> crashes = {
      {"ingest.before_commit", 2}, {"ingest.after_commit", 3}, {"ingest.before_commit", 5}, {"ingest.after_commit", 1}};
  for (const auto& [point, hit] : crashes) {
    ChildResult r = Snapsink(RunArgs(root, "g2", {"--final", "--kafka-config", "max.partition.fetch.bytes=4096"}),
                             {"SNAPSINK_CRASH_AT=" + point, "SNAPSINK_CRASH_HIT=" + std::to_string(hit)});
    ASSERT_EQ(r.exit_code, 99) << point << " " << hit << "\n" << r.err;
  }
  ChildResult r = Snapsink(RunArgs(root, "g2", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query(root), FileQuery({&s}));
  CheckAccounting(root, s.lines);
}

TEST_F(KafkaMock, BrokerFaultsSameResult) {
  const EventStream s = GenerateEvents(kPartitions, 300, 3);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  rd_kafka_mock_cluster_t* mc = cluster_->mock();
  // The group's coordinator is broker 2, down when the run starts.
  ASSERT_EQ(rd_kafka_mock_coordinator_set(mc, "group", "g3", 2), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_mock_broker_set_down(mc, 2);
  rd_kafka_mock_push_request_errors(mc, kHeartbeat, 2, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION,
                                    RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
  rd_kafka_mock_push_request_errors(mc, kOffsetCommit, 3, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION,
                                    RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
  rd_kafka_mock_push_request_errors(mc, kFetch, 4, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                                    RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                                    RD_KAFKA_RESP_ERR__TRANSPORT);
  rd_kafka_mock_push_request_errors(mc, kSyncGroup, 1, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
  Child run(g_snapsink, RunArgs(root, "g3", {"--final", "--kafka-config", "max.partition.fetch.bytes=2048"}), {},
            dir_);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  rd_kafka_mock_broker_set_up(mc, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  for (int p = 0; p < kPartitions; p += 2) rd_kafka_mock_partition_set_leader(mc, kTopic, p, 1 + (p / 2) % 3);
  // An out-of-range answer for offsets the log still holds: the partitions are sought back, nothing lost.
  rd_kafka_mock_push_request_errors(mc, kFetch, 3, RD_KAFKA_RESP_ERR__TRANSPORT,
                                    RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE);
  ChildResult r = run.Wait(90);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rd_kafka_mock_clear_request_errors(mc, kFetch);
  rd_kafka_mock_clear_request_errors(mc, kHeartbeat);
  rd_kafka_mock_clear_request_errors(mc, kOffsetCommit);
  EXPECT_EQ(Query(root), FileQuery({&s}));
  CheckAccounting(root, s.lines);
}

// An out-of-range answer for an offset the log holds, before anything is
// read: librdkafka stops fetching the partition (auto.offset.reset is
// error), and a seek of a stopped partition fails; it is assigned again at
// its position. Eager and cooperative assignment.
TEST_F(KafkaMock, OutOfRangeBeforeAnythingIsReadRestartsTheFetch) {
  const EventStream s = GenerateEvents(kPartitions, 100, 9);
  ProduceStream(s);
  rd_kafka_mock_cluster_t* mc = cluster_->mock();
  for (const char* strategy : {"range", "cooperative-sticky"}) {
    SCOPED_TRACE(strategy);
    const std::string group = std::string("oor-") + strategy;
    const std::string root = NewRoot(group);
    rd_kafka_mock_push_request_errors(mc, kFetch, 2, RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE,
                                      RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE);
    Child run(g_snapsink,
              RunArgs(root, group,
                      {"--final", "--kafka-config", std::string("partition.assignment.strategy=") + strategy}),
              {}, dir_);
    ChildResult r = run.Wait(60);
    rd_kafka_mock_clear_request_errors(mc, kFetch);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Query(root), FileQuery({&s}));
    CheckAccounting(root, s.lines);
  }
}

TEST_F(KafkaMock, FollowStopsCleanlyAtSigtermThenFinalSameRows) {
  const EventStream first = GenerateEvents(kPartitions, 150, 4);
  const EventStream second = GenerateEvents(kPartitions, 150, 5, 150);
  const EventStream third = GenerateEvents(kPartitions, 150, 6, 300);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  Child follow(g_snapsink,
               RunArgs(root, "g4", {"--follow", "--publish-every", "1s", "--keep-generations", "1", "--kafka-config",
                                    "partition.assignment.strategy=cooperative-sticky"}),
               {}, dir_);
  auto lines_in_root = [&] {
    ChildResult r = Snapsink({"inspect", root, "sources", "--json"});
    uint64_t total = 0;
    std::smatch m;
    std::string out = r.out;
    while (std::regex_search(out, m, std::regex(R"re("lines":([0-9]+))re"))) {
      total += std::stoull(m[1]);
      out = m.suffix();
    }
    return total;
  };
  auto generation = [&] {
    const std::string current = ReadFile(root + "/CURRENT");
    return current.empty() ? uint64_t{0} : std::stoull(current);
  };
  // Waits until the follower has read `want` lines and published generation
  // `at_least` (a later stream closes earlier windows: the follower seals and
  // publishes them within --publish-every).
  auto wait_for = [&](uint64_t want, uint64_t at_least) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((lines_in_root() < want || generation() < at_least) && std::chrono::steady_clock::now() < deadline &&
           follow.Running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(lines_in_root(), want);
    EXPECT_GE(generation(), at_least);
  };
  // The first half, then the second produced while it follows, then a third:
  // two generations while following, so gc after each publish has one to remove.
  uint64_t want = 0;
  for (uint64_t n : first.lines) want += n;
  wait_for(want, 0);
  ProduceStream(second);
  for (uint64_t n : second.lines) want += n;
  wait_for(want, 1);
  ProduceStream(third);
  for (uint64_t n : third.lines) want += n;
  wait_for(want, 2);
  follow.Signal(SIGTERM);
  ChildResult r = follow.Wait(30);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("published generation"), std::string::npos) << r.out;
  // --keep-generations 1: only the current generation's manifest is left.
  size_t manifests = 0;
  for (const auto& e : std::filesystem::directory_iterator(root + "/manifests")) manifests += e.is_regular_file();
  EXPECT_EQ(manifests, 1u) << "generation " << generation();
  r = Snapsink(RunArgs(root, "g4", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Rows(Query(root)), Rows(FileQuery({&first, &second, &third})));
  CheckAccounting(root, Lines({&first, &second, &third}));
}

// Lines the partitions' sources hold: the sum of their "lines" (inspect
// sources; a backfill's source is listed too, and left out).
uint64_t LinesInRoot(const std::string& root, const std::string& dir) {
  ChildResult r = RunChild(g_snapsink, {"inspect", root, "sources", "--json"}, {}, dir);
  uint64_t total = 0;
  std::istringstream in(r.out);
  const std::regex lines(R"re(^\{"source":"kafka:.*"lines":([0-9]+))re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, lines)) total += std::stoull(m[1]);
  }
  return total;
}

uint64_t LinesOf(const std::string& record) { return 1 + std::count(record.begin(), record.end(), '\n'); }

// Keeps producing to every partition, one record each a tick, from a list
// of records per partition, cycling, until Stop (after at least `whole`
// passes over the list). Counts the lines it produced.
class Producing {
 public:
  Producing(MockCluster* cluster, const EventStream& s, int whole) {
    thread_ = std::thread([this, cluster, &s, whole] {
      for (size_t i = 0;; ++i) {
        bool all_done = true;
        for (int p = 0; p < kPartitions; ++p) {
          const std::vector<std::string>& recs = s.records[p];
          all_done = all_done && i >= recs.size() * static_cast<size_t>(whole);
          const std::string& rec = recs[i % recs.size()];
          if (!cluster->Produce(kTopic, p, {rec})) failed_ = true;
          lines_ += LinesOf(rec);
        }
        if (all_done && stop_) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  ~Producing() { Stop(); }
  // Returns the lines produced in all.
  uint64_t Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return lines_;
  }
  uint64_t lines() const { return lines_; }
  bool failed() const { return failed_; }

 private:
  std::thread thread_;
  std::atomic<bool> stop_{false}, failed_{false};
  std::atomic<uint64_t> lines_{0};
};

// Maintenance beside `run --kafka --follow`: the follower holds
// LOCK one step at a time, so each command finishes (exit 0) while it
// follows and a producer keeps producing, and the follower goes on. The
// rows it published equal a root given the same events and the same
// commands with no follower (tests/live_root_test.cc's definition): `run`
// of stream A, `run` of A+B, the rollback to what A published, the
// backfill, `run` of everything. While the rollback runs only redeliveries
// arrive, so which of them the follower reads before it cannot matter.
TEST_F(KafkaMock, MaintenanceBesideFollowerSameRowsAsWithoutIt) {
  const EventStream a = GenerateEvents(kPartitions, 100, 21);
  const EventStream b = GenerateEvents(kPartitions, 100, 22, 100);
  const EventStream c = GenerateEvents(kPartitions, 150, 23, 200);
  const EventStream archive = GenerateEvents(kPartitions, 20, 24);  // other values, minutes 15..27 of A
  const std::vector<std::string> init = {"--window", "10m", "--lateness", "0s"};
  auto new_root = [&](const std::string& name) {
    std::vector<std::string> args = {"init", dir_ + "/" + name};
    args.insert(args.end(), init.begin(), init.end());
    ChildResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return dir_ + "/" + name;
  };
  const std::string root = new_root("kafka-root");
  const std::string ref = new_root("ref-root");
  const std::string ref_file = dir_ + "/ref.ndjson";
  const std::string archive_file = dir_ + "/archive.ndjson";
  WriteFile(archive_file, AsFile(archive));
  auto ref_run = [&](const std::string& data) {
    WriteFile(ref_file, data);
    ChildResult r = Snapsink({"run", ref, ref_file, "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Rows(Query(ref));
  };
  auto generation = [&] {
    const std::string current = ReadFile(root + "/CURRENT");
    return current.empty() ? uint64_t{0} : std::stoull(current);
  };
  auto sum = [](const EventStream& s) {
    uint64_t n = 0;
    for (uint64_t l : s.lines) n += l;
    return n;
  };
  ProduceStream(a);
  Child follow(g_snapsink,
               RunArgs(root, "g9", {"--follow", "--publish-every", "1s", "--keep-generations", "1000"}), {}, dir_);
  // Waits (bounded) until the follower has read `lines` and published `rows`.
  auto wait_for = [&](uint64_t lines, const std::string& rows) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((LinesInRoot(root, dir_) < lines || Rows(Query(root)) != rows) &&
           std::chrono::steady_clock::now() < deadline && follow.Running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_EQ(LinesInRoot(root, dir_), lines);
    ASSERT_EQ(Rows(Query(root)), rows);
  };
  // A, read and published: the generation the rollback goes back to.
  const std::string rows_a = ref_run(AsFile(a));
  ASSERT_FALSE(rows_a.empty());
  wait_for(sum(a), rows_a);
  if (HasFatalFailure()) return;
  const uint64_t g_a = generation();
  ProduceStream(b);
  wait_for(sum(a) + sum(b), ref_run(AsFile(a) + AsFile(b)));
  if (HasFatalFailure()) return;
  auto command = [&](std::vector<std::string> args) {
    ChildResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << " " << args[2] << ": " << r.err;
    EXPECT_TRUE(follow.Running()) << "the follower stopped at " << args[0];
    return r;
  };
  // Redeliveries of A while gc, the dry run and the rollback run.
  uint64_t produced = sum(a) + sum(b);
  {
    Producing redelivered(cluster_.get(), a, 0);
    command({"gc", root, "--keep-generations", std::to_string(generation() - g_a + 2)});
    ChildResult dry = command({"rollback", root, "--generation", std::to_string(g_a), "--dry-run"});
    EXPECT_NE(dry.out.find("dry run: nothing changed"), std::string::npos) << dry.out;
    ChildResult rolled = command({"rollback", root, "--generation", std::to_string(g_a)});
    EXPECT_NE(rolled.out.find("a copy of generation " + std::to_string(g_a)), std::string::npos) << rolled.out;
    produced += redelivered.Stop();
    EXPECT_FALSE(redelivered.failed());
  }
  // New events (C, then its redeliveries) while the rest run.
  {
    Producing fresh(cluster_.get(), c, 1);
    uint64_t seen = LinesInRoot(root, dir_);
    auto grows = [&](const char* after) {  // the follower goes on reading
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (LinesInRoot(root, dir_) <= seen && std::chrono::steady_clock::now() < deadline && follow.Running()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      const uint64_t now = LinesInRoot(root, dir_);
      EXPECT_GT(now, seen) << "the follower read nothing after " << after;
      seen = now;
    };
    command({"backfill", root, "--version", "100", archive_file, "--from", "2026-10-21T10:10:00Z", "--to",
             "2026-10-21T10:10:00Z"});
    grows("backfill");
    command({"seal", root});
    grows("seal");
    command({"publish", root});
    grows("publish");
    command({"gc", root, "--producers-idle", "30d"});
    grows("gc --producers-idle");
    produced += fresh.Stop();
    EXPECT_FALSE(fresh.failed());
  }
  // Everything read; then SIGTERM (its last step seals and publishes).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (LinesInRoot(root, dir_) < produced && std::chrono::steady_clock::now() < deadline && follow.Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(LinesInRoot(root, dir_), produced);
  follow.Signal(SIGTERM);
  ChildResult r = follow.Wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The reference: the same events and commands, no follower.
  ChildResult rr = Snapsink({"rollback", ref, "--generation", "1"});
  ASSERT_EQ(rr.exit_code, 0) << rr.err;
  rr = Snapsink({"backfill", ref, "--version", "100", archive_file, "--from", "2026-10-21T10:10:00Z", "--to",
                 "2026-10-21T10:10:00Z"});
  ASSERT_EQ(rr.exit_code, 0) << rr.err;
  const std::string want = ref_run(AsFile(a) + AsFile(b) + AsFile(c));
  EXPECT_EQ(Rows(Query(root)), want);
  EXPECT_NE(want.find(R"("window":"2026-10-21T10:10:00Z")"), std::string::npos) << want;
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

TEST_F(KafkaMock, PositionDeletedByRetentionExits3UntilTheLossIsAccepted) {
  const EventStream s = GenerateEvents(kPartitions, 50, 6);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  ChildResult r = Snapsink(RunArgs(root, "g5", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t lo = 0, committed = 0;
  ASSERT_TRUE(cluster_->Watermarks(kTopic, 3, &lo, &committed));
  // While snapsink is stopped, partition 3 gets more than the mock keeps
  // (5 MiB): its log start moves past the root's position.
  std::vector<std::string> big;
  const std::string pad(100000, 'x');
  for (int i = 0; i < 70; ++i) {
    big.push_back(R"({"producer":"big","seq":)" + std::to_string(i) +
                  R"(,"ts":1792580000000,"metric":"pad","pad":")" + pad + "\"}");
  }
  ASSERT_TRUE(cluster_->Produce(kTopic, 3, big));
  int64_t start = 0, end = 0;
  ASSERT_TRUE(cluster_->Watermarks(kTopic, 3, &start, &end));
  ASSERT_GT(start, committed) << "the mock kept every record";
  const std::string range = std::to_string(committed) + ".." + std::to_string(start - 1);
  r = Snapsink(RunArgs(root, "g5", {"--final"}));
  ASSERT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("partition 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kafka:orders/3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(range), std::string::npos) << r.err;
  // Accepting the loss lets it go on from start.
  r = Snapsink({"gaps", root, "accept", "--source", "kafka:orders/3", "--range", range});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink(RunArgs(root, "g5", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"inspect", root, "gaps", "--all", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("source":"kafka:orders/3","from_position":)" + std::to_string(committed) +
                       R"(,"to_position":)" + std::to_string(start - 1)),
            std::string::npos)
      << r.out;
  // The records left after the loss were applied: end - start "pad" events.
  r = Snapsink({"query", root, "--metric", "pad", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"count\":" + std::to_string(end - start) + ","), std::string::npos) << r.out;
}

// The same loss while a follower runs: its fetches are held back (4 s
// round trips) while partition 3 overflows, so its next fetch is out of range.
TEST_F(KafkaMock, PositionDeletedWhileFollowingExits3NamingTheRange) {
  rd_kafka_mock_cluster_t* mc = cluster_->mock();
  ASSERT_EQ(rd_kafka_mock_partition_set_leader(mc, kTopic, 3, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  const EventStream s = GenerateEvents(kPartitions, 30, 9);
  ProduceStream(s);
  int64_t lo = 0, committed = 0;
  ASSERT_TRUE(cluster_->Watermarks(kTopic, 3, &lo, &committed));
  const std::string root = NewRoot("kafka-root");
  Child follow(g_snapsink, RunArgs(root, "g8", {"--follow", "--publish-every", "1s"}), {}, dir_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {  // until partition 3 is committed at its end
    ChildResult r = Snapsink({"inspect", root, "sources", "--json"});
    if (r.out.find(R"("source":"kafka:orders/3","offset":0,"lines":)" + std::to_string(s.lines[3])) !=
        std::string::npos) {
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << r.out;
    ASSERT_TRUE(follow.Running());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  rd_kafka_mock_broker_push_request_error_rtts(mc, 1, kFetch, 2, RD_KAFKA_RESP_ERR_NO_ERROR, 4000,
                                               RD_KAFKA_RESP_ERR_NO_ERROR, 4000);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the next fetch is in flight, held
  std::vector<std::string> big;
  const std::string pad(100000, 'x');
  for (int i = 0; i < 70; ++i) {
    big.push_back(R"({"producer":"big","seq":)" + std::to_string(i) + R"(,"ts":1792580000000,"metric":"pad","pad":")" +
                  pad + "\"}");
  }
  ASSERT_TRUE(cluster_->Produce(kTopic, 3, big));
  int64_t start = 0, end = 0;
  ASSERT_TRUE(cluster_->Watermarks(kTopic, 3, &start, &end));
  ASSERT_GT(start, committed);
  ChildResult r = follow.Wait(60);
  ASSERT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("kafka:orders/3): offsets " + std::to_string(committed) + ".." + std::to_string(start - 1) +
                       " are no longer in Kafka"),
            std::string::npos)
      << r.err;
}

TEST_F(KafkaMock, KafkaStartLatestRecordsTheEndAndTakesOnlyWhatComesAfter) {
  const EventStream old = GenerateEvents(kPartitions, 40, 7);
  const EventStream later = GenerateEvents(kPartitions, 40, 8, 40);
  ProduceStream(old);
  const std::string root = NewRoot("kafka-root");
  ChildResult r = Snapsink(RunArgs(root, "g7", {"--kafka-start", "latest"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kafka:orders/0: new partition, starting at offset " + std::to_string(old.records[0].size()) +
                       " (latest)"), std::string::npos) << r.err;
  CheckAccounting(root, std::vector<uint64_t>(kPartitions, 0));
  ProduceStream(later);
  // The choice was recorded: a later run (even asked for earliest) goes on from there.
  r = Snapsink(RunArgs(root, "g7", {"--final", "--kafka-start", "earliest"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CheckAccounting(root, later.lines);
  EXPECT_EQ(Query(root), FileQuery({&later}));
}

TEST_F(KafkaMock, ConfigThatWouldLetKafkaDecidePositionsIsRefused) {
  const std::string root = NewRoot("kafka-root");
  for (const std::string kv : {"enable.auto.commit=true", "auto.offset.reset=earliest", "group.id=other",
                               "enable.auto.offset.store=true", "isolation.level=read_uncommitted"}) {
    ChildResult r = Snapsink(RunArgs(root, "g6", {"--kafka-config", kv}));
    EXPECT_EQ(r.exit_code, 1) << kv;
    EXPECT_NE(r.err.find(kv.substr(0, kv.find('=')) + " is refused"), std::string::npos) << r.err;
  }
  ChildResult r = Snapsink(RunArgs(root, "g6", {"--kafka-config", "no-equals-sign"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
}


// An empty record and a tombstone (no value) were skipped: "3 records, 1
// lines", and the accounting identity of EVENTS.md lost a line each. Each is
// one empty line, rejected with its kafka:T/P@OFFSET.
TEST_F(KafkaMock, EmptyRecordsAndTombstonesAreRejectedEmptyLines) {
  const std::string event = R"({"producer":"p0","seq":0,"ts":1792577700000,"metric":"orders","key":"eu","value":1})";
  ASSERT_TRUE(cluster_->Produce(kTopic, 0, {event, ""}));
  ASSERT_TRUE(cluster_->ProduceTombstone(kTopic, 0));
  const std::string root = NewRoot("kafka-root");
  ChildResult r = Snapsink(RunArgs(root, "g-empty", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kafka orders: 3 records, 3 lines: 1 applied, 0 duplicates, 0 fenced, 2 rejected"),
            std::string::npos) << r.err;
  const std::string rejects = ReadFile(root + "/rejects/kafka_orders_0.ndjson");
  EXPECT_NE(rejects.find("kafka:orders/0@1"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("kafka:orders/0@2"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find(R"("reason":"empty line")"), std::string::npos) << rejects;
  // Under --on-error stop the first one ends the run (exit 2) naming it.
  const std::string strict = NewRoot("strict-root");
  r = Snapsink(RunArgs(strict, "g-empty-stop", {"--final", "--on-error", "stop"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("kafka:orders/0@1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("empty line"), std::string::npos) << r.err;
}

// A loopback port nothing listens on (bound, then closed).
std::string ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return "1";
  }
  close(fd);
  return std::to_string(ntohs(a.sin_port));
}

// With no broker reachable, run waited forever, librdkafka printing its
// connect errors raw to stderr. It now gives up after --kafka-timeout,
// exit 1, and librdkafka's lines come through the tool, "kafka: ...".
TEST_F(KafkaMock, NoBrokerReachableExits1AfterTheKafkaTimeout) {
  const std::string root = NewRoot("kafka-root");
  const std::string broker = "127.0.0.1:" + ClosedPort();
  for (const bool state : {false, true}) {
    std::vector<std::string> args{"run", root, "--kafka", broker, "--topic", kTopic, "--group", "g-down",
                                  "--kafka-timeout", "2s"};
    if (state) args.insert(args.end(), {"--state", dir_ + "/state"});
    const auto start = std::chrono::steady_clock::now();
    ChildResult r = Snapsink(args, {}, 30);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("snapsink: kafka: no broker reachable at " + broker + " ("), std::string::npos) << r.err;
    EXPECT_LT(took, std::chrono::seconds(15));
    std::istringstream lines(r.err);
    int logged = 0;
    for (std::string line; std::getline(lines, line);) {
      EXPECT_NE(line.rfind("%", 0), 0u) << "librdkafka printed to stderr itself: " << line;
      logged += line.rfind("kafka: ", 0) == 0 && line.find("Connect to") != std::string::npos;
    }
    EXPECT_GE(logged, 1) << r.err;
  }
  ChildResult r = Snapsink({"run", root, "--kafka", broker, "--topic", kTopic, "--group", "g", "--kafka-timeout", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--kafka-timeout x: expected a duration"), std::string::npos) << r.err;
}

// A number in text after `prefix` (-1 when absent).
int64_t NumberAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtoll(text.c_str() + at + prefix.size(), nullptr, 10);
}

// A stopped consumer's lag stayed at its last progress write, with nothing
// to say how old that was; and an offset commit to Kafka that failed (a
// rebalance under way) was never sent again. Now each partition's progress
// has an age (status, status --json, metrics) that grows while its owner is
// stopped, and the commit is sent again on the next round until Kafka takes it.
TEST_F(KafkaMock, ProgressAgeGrowsWhileStoppedAndAFailedKafkaCommitIsRetried) {
  const EventStream s = GenerateEvents(kPartitions, 20, 21);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  rd_kafka_mock_cluster_t* mc = cluster_->mock();
  // Every commit of the first rounds fails as during a rebalance.
  rd_kafka_mock_push_request_errors(mc, kOffsetCommit, 4, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
                                    RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
                                    RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
  Child follow(g_snapsink, RunArgs(root, "g-age", {"--follow", "--publish-every", "1s"}), {}, dir_);
  uint64_t want = 0;
  for (uint64_t n : s.lines) want += n;
  std::vector<int64_t> ends(kPartitions);
  for (int p = 0; p < kPartitions; ++p) {
    int64_t lo = 0;
    ASSERT_TRUE(cluster_->Watermarks(kTopic, p, &lo, &ends[p]));
  }
  std::vector<int64_t> committed;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (std::chrono::steady_clock::now() < deadline && follow.Running()) {
    committed = cluster_->Committed("g-age", kTopic, kPartitions);
    if (LinesInRoot(root, dir_) == want && committed == ends) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_EQ(LinesInRoot(root, dir_), want);
  EXPECT_EQ(committed, ends) << "Kafka holds the root's positions once the failed commits were sent again";
  rd_kafka_mock_clear_request_errors(mc, kOffsetCommit);
  // Idle but running: the follower writes each partition's progress every
  // --publish-every, so the age stays small.
  const std::string age_metric = "snapsink_source_progress_age_seconds{source=\"kafka:orders/2\"} ";
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  ChildResult r = Snapsink({"metrics", root});
  const int64_t running_age = NumberAfter(r.out, age_metric);
  EXPECT_GE(running_age, 0) << r.out;
  EXPECT_LE(running_age, 2) << r.out;
  follow.Signal(SIGSTOP);  // a stuck owner: its lag stays as it left it, its age grows
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  r = Snapsink({"status", root});
  EXPECT_GE(NumberAfter(r.out, "progress written "), 3) << r.out;
  r = Snapsink({"status", root, "--json"});
  EXPECT_GE(NumberAfter(r.out, R"("progress_age_seconds":)"), 3) << r.out;
  EXPECT_NE(r.out.find(R"("progress_at":"2)"), std::string::npos) << r.out;
  r = Snapsink({"metrics", root});
  EXPECT_GE(NumberAfter(r.out, age_metric), 3) << r.out;
  follow.Signal(SIGCONT);
  follow.Signal(SIGTERM);
  r = follow.Wait(30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // --state: the age of each partition's last progress write in ROOT.
  const std::string shared = NewRoot("shared-root");
  r = Snapsink(RunArgs(shared, "g-age-s", {"--final", "--state", dir_ + "/state"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  r = Snapsink({"status", shared});
  EXPECT_NE(r.out.find("written by epoch 1 "), std::string::npos) << r.out;
  EXPECT_GE(NumberAfter(r.out, "written by epoch 1 "), 2) << r.out;
  r = Snapsink({"status", shared, "--json"});
  EXPECT_GE(NumberAfter(r.out, R"("age_seconds":)"), 2) << r.out;
  r = Snapsink({"metrics", shared});
  EXPECT_GE(NumberAfter(r.out, "snapsink_partition_progress_age_seconds{partition=\"kafka_orders_2\"} "), 2) << r.out;
}

// ---- --state DIR: many processes over one topic (SPEC 12) ----

// The state of partition p under the directory the newest owner claim in
// ROOT names; "" before the first claim.
std::string OwnerState(const std::string& root, int p) {
  const std::string dir = ClaimedStateDir(root, p);
  return dir.empty() ? dir : dir + "/orders/" + std::to_string(p);
}

class KafkaStates : public KafkaMock {
 protected:
  // Every partition's newest owner holds exactly its lines, once, and ROOT
  // publishes, merged, what `run --final` over the same events publishes.
  void ExpectOwnersHold(const std::string& root, const std::vector<const EventStream*>& streams) {
    for (int p = 0; p < kPartitions; ++p) {
      const std::string state = OwnerState(root, p);
      ASSERT_FALSE(state.empty()) << "partition " << p << " was never taken";
      uint64_t lines = 0;
      for (const EventStream* s : streams) lines += s->lines[p];
      ChildResult r = Snapsink({"inspect", state, "sources", "--json"});
      EXPECT_NE(r.out.find("\"lines\":" + std::to_string(lines) + ","), std::string::npos) << p << ": " << r.out;
    }
    const std::string want = Rows(FileQuery(streams));
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(Rows(Query(root)), want);
  }
  // Every file under root/snapshots (path -> bytes): the published snapshots.
  std::map<std::string, std::string> SnapshotFiles(const std::string& root) {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root + "/snapshots", ec)) {
      if (e.is_regular_file()) out[e.path().lexically_relative(root).string()] = ReadFile(e.path().string());
    }
    return out;
  }
  std::vector<std::string> StateArgs(const std::string& root, const std::string& group, const std::string& state,
                                     std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--state", state});
    return RunArgs(root, group, extra);
  }
};

TEST_F(KafkaStates, ThreeProcessesEachPartitionsNewestOwnerHoldsExactlyItsEvents) {
  const EventStream s = GenerateEvents(kPartitions, 300, 11);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  std::vector<std::unique_ptr<Child>> procs;
  for (int i = 0; i < 3; ++i) {
    procs.push_back(std::make_unique<Child>(
        g_snapsink, StateArgs(root, "gs1", dir_ + "/state" + std::to_string(i), {"--final"}), std::vector<std::string>{},
        dir_));
  }
  int took = 0;
  for (auto& c : procs) {
    ChildResult r = c->Wait(90);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (r.err.find("taken at owner epoch") != std::string::npos) ++took;
  }
  EXPECT_GE(took, 1);
  ExpectOwnersHold(root, {&s});
  // ROOT holds the claims, no state of its own: nothing was written there.
  ChildResult r = Snapsink({"inspect", root, "sources", "--json"});
  EXPECT_EQ(r.out.find("kafka:orders"), std::string::npos) << r.out;
  r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("unknown file"), std::string::npos) << r.err;
}

TEST_F(KafkaStates, KilledWhileClaimingAPartitionThenRerunSameResult) {
  const EventStream s = GenerateEvents(kPartitions, 100, 14);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  const std::string state = dir_ + "/state";
  ChildResult r = Snapsink(StateArgs(root, "gs3", state, {"--final"}),
                           {"SNAPSINK_CRASH_AT=owner.before_claim", "SNAPSINK_CRASH_HIT=3"});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  r = Snapsink(StateArgs(root, "gs3", state, {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectOwnersHold(root, {&s});
}

TEST_F(KafkaStates, StoppedPastTheSessionTimeoutThenResumedReplacesItsStaleStatesAndCountsNothingTwice) {
  const EventStream first = GenerateEvents(kPartitions, 150, 12);
  const EventStream second = GenerateEvents(kPartitions, 150, 13, 150);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  const std::string state_a = dir_ + "/state-a";
  // Cooperative-sticky here (the other tests rebalance eagerly).
  const std::vector<std::string> coop = {"--kafka-config", "partition.assignment.strategy=cooperative-sticky"};
  std::vector<std::string> follow = coop;
  follow.push_back("--follow");
  Child a(g_snapsink, StateArgs(root, "gs2", state_a, follow), {}, dir_);
  // Wait until A has read the whole of the first stream.
  auto a_has = [&](const EventStream& s) {
    for (int p = 0; p < kPartitions; ++p) {
      ChildResult r = Snapsink({"inspect", state_a + "/orders/" + std::to_string(p), "sources", "--json"});
      if (r.out.find("\"lines\":" + std::to_string(s.lines[p]) + ",") == std::string::npos) return false;
    }
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (!a_has(first) && std::chrono::steady_clock::now() < deadline && a.Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(a_has(first));
  a.Signal(SIGSTOP);
  ProduceStream(second);
  // B takes every partition once A's session (3 s) has expired, and reads them all.
  std::vector<std::string> final_args = coop;
  final_args.push_back("--final");
  ChildResult b = Snapsink(StateArgs(root, "gs2", dir_ + "/state-b", final_args), {}, 60);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  for (int p = 0; p < kPartitions; ++p) EXPECT_EQ(OwnerState(root, p), dir_ + "/state-b/orders/" + std::to_string(p));
  ExpectOwnersHold(root, {&first, &second});
  // A wakes up holding partitions it lost: whatever it had read is refused,
  // and when the group gives it partitions back it starts them over.
  a.Signal(SIGCONT);
  // B has left the group: A rejoins and is given every partition back, each
  // at a newer epoch than B's. Its own copies are stale (B owned them
  // since), so it restores the checkpoints B wrote when it left.
  auto a_owns_all = [&] {
    for (int p = 0; p < kPartitions; ++p) {
      const std::string state = OwnerState(root, p);
      if (state != state_a + "/orders/" + std::to_string(p)) return false;
      ChildResult r = Snapsink({"inspect", state, "sources", "--json"});
      const uint64_t lines = first.lines[p] + second.lines[p];
      if (r.out.find("\"lines\":" + std::to_string(lines) + ",") == std::string::npos) return false;
    }
    return true;
  };
  const auto later = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  while (!a_owns_all() && std::chrono::steady_clock::now() < later && a.Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_TRUE(a_owns_all());
  a.Signal(SIGTERM);
  ChildResult ra = a.Wait(30);
  EXPECT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_NE(ra.err.find("taken at owner epoch 3 (restored from the checkpoint of epoch 2 at offset"), std::string::npos)
      << ra.err;
  ExpectOwnersHold(root, {&first, &second});
}

// ---- Checkpoints in ROOT: a partition moves with its state ----

// n records of ~100 KB to partition p only ("big" producer, seq from first).
EventStream Pads(int p, int first, int n) {
  EventStream s;
  s.records.resize(kPartitions);
  s.lines.assign(kPartitions, 0);
  const std::string pad(100000, 'x');
  for (int i = first; i < first + n; ++i) {
    s.records[p].push_back(R"({"producer":"big","seq":)" + std::to_string(i) +
                           R"(,"ts":1792580000000,"metric":"pad","pad":")" + pad + "\"}");
  }
  s.lines[p] = n;
  return s;
}

// Every partition's checkpoints in ROOT (their names).
std::vector<std::string> CheckpointNames(const std::string& root, int p) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(root + "/partitions/kafka_orders_" + std::to_string(p) + "/checkpoints", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 4 || name.substr(name.size() - 4) != ".tmp") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A process whose --state DIR is empty takes partitions whose owner is gone
// with its disk, after the topic's early part is gone too (the mock keeps
// 5 MiB a partition): only the checkpoints in ROOT give the right rows.
TEST_F(KafkaStates, ANewProcessWithAnEmptyStateRestoresCheckpointsWhenTheTopicsStartIsGone) {
  const EventStream pads1 = Pads(3, 0, 40);
  const EventStream first = GenerateEvents(kPartitions, 120, 21);
  ProduceStream(pads1);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  ChildResult a = Snapsink(StateArgs(root, "gc1", dir_ + "/state-a", {"--final"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  // A closed every partition cleanly: a checkpoint of each at its end.
  std::vector<int64_t> ends(kPartitions);
  for (int p = 0; p < kPartitions; ++p) {
    int64_t lo = 0;
    ASSERT_TRUE(cluster_->Watermarks(kTopic, p, &lo, &ends[p]));
    char want[64];
    std::snprintf(want, sizeof want, "e%020d-o%020lld", 1, static_cast<long long>(ends[p]));
    EXPECT_EQ(CheckpointNames(root, p), std::vector<std::string>{want}) << p;
  }
  std::filesystem::remove_all(dir_ + "/state-a");  // A is gone with its disk
  const EventStream second = GenerateEvents(kPartitions, 120, 22, 120);
  const EventStream pads2 = Pads(3, 40, 25);
  ProduceStream(second);
  ProduceStream(pads2);
  int64_t lo = 0, hi = 0;
  ASSERT_TRUE(cluster_->Watermarks(kTopic, 3, &lo, &hi));
  ASSERT_GT(lo, 0) << "the mock kept partition 3's start";
  ASSERT_LE(lo, ends[3]) << "the checkpoint's position is gone as well";
  ChildResult b = Snapsink(StateArgs(root, "gc1", dir_ + "/state-b", {"--final"}));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  for (int p = 0; p < kPartitions; ++p) {
    EXPECT_NE(b.err.find("kafka:orders/" + std::to_string(p) +
                         ": taken at owner epoch 2 (restored from the checkpoint of epoch 1 at offset " +
                         std::to_string(ends[p]) + ")"),
              std::string::npos)
        << b.err;
  }
  ExpectOwnersHold(root, {&pads1, &first, &second, &pads2});
  ChildResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.err.find("unknown file"), std::string::npos) << v.err;
}

// Killed while writing a checkpoint (synced, not renamed) and while
// restoring one (the state's data written, not yet a root): each rerun ends
// with the same partition states as a run without the crash.
TEST_F(KafkaStates, KilledWritingOrRestoringACheckpointThenRerunSameResult) {
  const EventStream first = GenerateEvents(kPartitions, 80, 23);
  ProduceStream(first);
  const std::string root = NewRoot("kafka-root");
  const std::string state_a = dir_ + "/state-a", state_b = dir_ + "/state-b";
  ChildResult r = Snapsink(StateArgs(root, "gc2", state_a, {"--final"}),
                           {"SNAPSINK_CRASH_AT=checkpoint.before_rename", "SNAPSINK_CRASH_HIT=2"});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  r = Snapsink(StateArgs(root, "gc2", state_a, {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int p = 0; p < kPartitions; ++p) {  // the rerun took every partition at epoch 2 and closed it cleanly
    const std::vector<std::string> names = CheckpointNames(root, p);
    ASSERT_FALSE(names.empty()) << p;
    EXPECT_EQ(names.back().substr(0, 21), "e00000000000000000002") << p;
  }
  std::filesystem::remove_all(state_a);
  r = Snapsink(StateArgs(root, "gc2", state_b, {"--final"}),
               {"SNAPSINK_CRASH_AT=checkpoint.restore", "SNAPSINK_CRASH_HIT=3"});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  r = Snapsink(StateArgs(root, "gc2", state_b, {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(restored from the checkpoint of epoch 2 at offset"), std::string::npos) << r.err;
  ExpectOwnersHold(root, {&first});
}

// SPEC 12: three processes share the topic, each partition in its own state;
// ROOT publishes the merged windows, equal to `run --final` over a file.
TEST_F(KafkaStates, ThreeProcessesMergedPublishEqualsRunFinalFromAFile) {
  const EventStream s = GenerateEvents(kPartitions, kMergedEvents, 21);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  std::vector<std::unique_ptr<Child>> procs;
  for (int i = 0; i < 3; ++i) {
    procs.push_back(std::make_unique<Child>(
        g_snapsink, StateArgs(root, "gm1", dir_ + "/state" + std::to_string(i), {"--final"}),
        std::vector<std::string>{}, dir_));
  }
  for (auto& c : procs) {
    ChildResult r = c->Wait(150);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  uint64_t total = 0;
  for (uint64_t n : s.lines) total += n;
  EXPECT_GE(total, uint64_t{kMergedEvents} * kPartitions);
  ExpectOwnersHold(root, {&s});
  ChildResult r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("unknown file"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("unknown file"), std::string::npos) << r.out;
}

// A minmax metric declared in ROOT holds in each partition's state: the
// merged publish of two processes gives the rows, min and max included, of
// a file run over the same events (and rejects the same retracts).
TEST_F(KafkaStates, MinMaxMetricMergedEqualsAFileRun) {
  const EventStream s = GenerateEvents(kPartitions, kMergedEvents, 23);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  const std::string file = NewRoot("file-root-minmax");
  for (const std::string& r : {root, file}) {
    ChildResult set = Snapsink({"metric", r, "set", "clicks", "--kind", "minmax"});
    ASSERT_EQ(set.exit_code, 0) << set.err;
  }
  std::vector<std::unique_ptr<Child>> procs;
  for (int i = 0; i < 2; ++i) {
    procs.push_back(std::make_unique<Child>(
        g_snapsink, StateArgs(root, "gmm", dir_ + "/mm-state" + std::to_string(i), {"--final"}),
        std::vector<std::string>{}, dir_));
  }
  for (auto& c : procs) {
    ChildResult r = c->Wait(150);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  WriteFile(file + ".ndjson", AsFile(s));
  ChildResult r = Snapsink({"run", file, file + ".ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string want = Rows(Query(file));
  EXPECT_NE(want.find("\"metric\":\"clicks\",\"key\":"), std::string::npos);
  EXPECT_NE(want.find("\"min\":"), std::string::npos);
  EXPECT_EQ(Rows(Query(root)), want);
  r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A quantiles metric declared in ROOT holds in each partition's state: the
// merged publish of two processes (partitions' sketches merged, buckets
// summed) gives the rows and quantiles of a file run over the same events,
// retracts and redeliveries included, per window and rolled up.
TEST_F(KafkaStates, QuantilesMetricMergedEqualsAFileRun) {
  const EventStream s = GenerateEvents(kPartitions, kMergedEvents, 24);
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  const std::string file = NewRoot("file-root-quantiles");
  for (const std::string& r : {root, file}) {
    ChildResult set = Snapsink({"metric", r, "set", "orders", "--kind", "quantiles"});
    ASSERT_EQ(set.exit_code, 0) << set.err;
  }
  std::vector<std::unique_ptr<Child>> procs;
  for (int i = 0; i < 2; ++i) {
    procs.push_back(std::make_unique<Child>(
        g_snapsink, StateArgs(root, "gqq", dir_ + "/qq-state" + std::to_string(i), {"--final"}),
        std::vector<std::string>{}, dir_));
  }
  for (auto& c : procs) {
    ChildResult r = c->Wait(150);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  WriteFile(file + ".ndjson", AsFile(s));
  ChildResult r = Snapsink({"run", file, file + ".ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto quantiles = [&](const std::string& at, const std::vector<std::string>& more) {
    std::vector<std::string> args = {"query", at, "--format", "json", "--quantile", "0,0.25,0.5,0.9,0.99,1"};
    args.insert(args.end(), more.begin(), more.end());
    ChildResult q = Snapsink(args);
    EXPECT_EQ(q.exit_code, 0) << q.err;
    return Rows(q.out);
  };
  const std::string want = quantiles(file, {});
  EXPECT_NE(want.find(R"("metric":"orders","key":)"), std::string::npos);
  EXPECT_NE(want.find(R"("p99":)"), std::string::npos) << want;
  EXPECT_EQ(quantiles(root, {}), want);
  EXPECT_EQ(quantiles(root, {"--rollup", "all"}), quantiles(file, {"--rollup", "all"}));
  r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A distinct metric through Kafka: the merged publish of two processes
// (partitions' sketches merged, registers by max) gives the rows and
// distinct counts of a file run over the same events, redeliveries and
// refused retracts included, per window and rolled up.
TEST_F(KafkaStates, DistinctMetricMergedEqualsAFileRun) {
  EventStream s = GenerateEvents(kPartitions, kMergedEvents, 25);
  // Every orders event names an item (one of 41, by its seq); a retract of
  // it is a bad line on both paths.
  for (auto& records : s.records) {
    for (std::string& rec : records) {
      std::string out;
      size_t at = 0;
      while (at <= rec.size()) {
        const size_t nl = std::min(rec.find('\n', at), rec.size());
        std::string line = rec.substr(at, nl - at);
        const size_t seq = line.find("\"seq\":");
        if (!line.empty() && line.find("\"metric\":\"orders\"") != std::string::npos && seq != std::string::npos &&
            line.back() == '}') {
          line.insert(line.size() - 1, ",\"item\":\"u" + std::to_string(std::atoi(line.c_str() + seq + 6) % 41) + "\"");
        }
        out += (at == 0 ? "" : "\n") + line;
        at = nl + 1;
      }
      rec = out;
    }
  }
  ProduceStream(s);
  const std::string root = NewRoot("kafka-root");
  const std::string file = NewRoot("file-root-distinct");
  for (const std::string& r : {root, file}) {
    ChildResult set = Snapsink({"metric", r, "set", "orders", "--kind", "distinct"});
    ASSERT_EQ(set.exit_code, 0) << set.err;
  }
  std::vector<std::unique_ptr<Child>> procs;
  for (int i = 0; i < 2; ++i) {
    procs.push_back(std::make_unique<Child>(
        g_snapsink, StateArgs(root, "gdd", dir_ + "/dd-state" + std::to_string(i), {"--final"}),
        std::vector<std::string>{}, dir_));
  }
  for (auto& c : procs) {
    ChildResult r = c->Wait(150);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  WriteFile(file + ".ndjson", AsFile(s));
  ChildResult r = Snapsink({"run", file, file + ".ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = [&](const std::string& at, const std::vector<std::string>& more) {
    std::vector<std::string> args = {"query", at, "--format", "json"};
    args.insert(args.end(), more.begin(), more.end());
    ChildResult q = Snapsink(args);
    EXPECT_EQ(q.exit_code, 0) << q.err;
    return Rows(q.out);
  };
  const std::string want = rows(file, {});
  EXPECT_NE(want.find(R"("distinct":)"), std::string::npos) << want;
  EXPECT_EQ(rows(root, {}), want);
  EXPECT_EQ(rows(root, {"--rollup", "all"}), rows(file, {"--rollup", "all"}));
  r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A crash at each durable step of the merged publish (SPEC 8); the rerun
// publishes the same snapshot bytes and the same rows as a clean run.
TEST_F(KafkaStates, CrashAtEachMergedPublishStepThenRerunPublishesTheSameBytes) {
  const EventStream s = GenerateEvents(kPartitions, 120, 22);
  ProduceStream(s);
  const std::string clean = NewRoot("clean-root");
  ChildResult r = Snapsink(StateArgs(clean, "gc0", dir_ + "/clean-state", {"--final"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string want = Query(clean);
  ASSERT_EQ(Rows(want), Rows(FileQuery({&s})));
  const auto want_files = SnapshotFiles(clean);
  ASSERT_FALSE(want_files.empty());
  int n = 0;
  for (const std::string point : {"partition.seal_record", "partition.progress", "merge.before_publish",
                                  "publish.before_current", "merge.after_publish"}) {
    const std::string root = NewRoot("root-" + std::to_string(n));
    const std::string state = dir_ + "/state-" + std::to_string(n);
    const std::string group = "gc" + std::to_string(++n);
    r = Snapsink(StateArgs(root, group, state, {"--final"}), {"SNAPSINK_CRASH_AT=" + point});
    ASSERT_EQ(r.exit_code, 99) << point << ": " << r.err;
    r = Snapsink(StateArgs(root, group, state, {"--final"}));
    ASSERT_EQ(r.exit_code, 0) << point << ": " << r.err;
    EXPECT_EQ(Query(root), want) << point;
    EXPECT_TRUE(SnapshotFiles(root) == want_files) << point;
    r = Snapsink({"verify", root});
    EXPECT_EQ(r.exit_code, 0) << point << ": " << r.out << r.err;
  }
}

}  // namespace
}  // namespace snapsink::kafkatest

int main(int argc, char** argv) { return snapsink::kafkatest::RunTests(argc, argv); }
