// A producer whose records land on two partitions (not keyed by producer:
// its seq ranges there overlap) is found as its events are written, and a
// key that moved to another partition (disjoint ranges) is not: under
// --on-split-producer stop (the
// default) the run exits 3 naming the producer and both partitions, and
// nothing of the second partition's batch is applied; under warn it goes
// on and run's output, status, status --json and the metrics list it.
// Keyed runs (one producer a partition) are unchanged: every other test of
// this executable runs with the default, stop. Part of kafka_mock_harness
// (its main() is in kafka_mock_harness.cc).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/kafka_fixture.h"

namespace snapsink::kafkatest {
namespace {

constexpr int kSplitEvents = 40;

class KafkaSplitProducer : public KafkaMock {
 protected:
  // Producer "split": seq 0, 2, 4, ... to partition 0 and 1, 3, 5, ... to
  // partition 3, as kcat without -K spreads them; every partition also
  // gets a keyed producer of its own.
  void ProduceSplit() {
    keyed_ = GenerateEvents(kPartitions, 20, 81);
    ProduceStream(keyed_);
    std::vector<std::string> even, odd;
    for (int seq = 0; seq < kSplitEvents; ++seq) {
      const std::string e = R"({"producer":"split","seq":)" + std::to_string(seq) +
                            R"(,"ts":1792580000000,"metric":"spread","value":1})";
      (seq % 2 == 0 ? even : odd).push_back(e);
    }
    ASSERT_TRUE(cluster_->Produce(kTopic, 0, even));
    ASSERT_TRUE(cluster_->Produce(kTopic, 3, odd));
  }
  EventStream keyed_;
  // Producer "moved", keyed, whose key moved to another partition (as
  // adding partitions to a topic moves keys): seq 0..19 on partition 0, then
  // 20..39 on partition 3. Not a split: all of partition 0's seqs come first.
  EventStream ProduceMoved() {
    keyed_ = GenerateEvents(kPartitions, 20, 82);
    ProduceStream(keyed_);
    EventStream moved;
    moved.records.resize(kPartitions);
    moved.lines.assign(kPartitions, 0);
    for (int seq = 0; seq < kSplitEvents; ++seq) {
      const int p = seq < kSplitEvents / 2 ? 0 : 3;
      moved.records[p].push_back(R"({"producer":"moved","seq":)" + std::to_string(seq) +
                                 R"(,"ts":1792580000000,"metric":"moved","value":1})");
      ++moved.lines[p];
    }
    ProduceStream(moved);
    return moved;
  }
  // Whether the committed position of kafka:orders/P in `inspect ROOT
  // sources --json` is past the partition's keyed records: some of the
  // split producer's records were applied from it.
  bool TookSplitRecords(const std::string& root, int p) {
    ChildResult r = Snapsink({"inspect", root, "sources", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::smatch m;
    const std::regex line("\"source\":\"kafka:orders/" + std::to_string(p) + "\"[^\\n]*\"position\":\"([0-9]+)\"");
    if (!std::regex_search(r.out, m, line)) return false;
    return std::stoull(m[1]) > keyed_.records[p].size();
  }
  // stop: exit 3, one line naming the producer and both partitions, what to do.
  void ExpectStopped(const ChildResult& r) {
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(producer "split" is split over kafka:orders/(0 and kafka:orders/3|3 and kafka:orders/0): )")))
        << r.err;
    EXPECT_NE(r.err.find("key them by producer (kcat -K"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("or --on-split-producer warn to go on"), std::string::npos) << r.err;
  }
  // warn: run's output, status, status --json and the metrics name it.
  void ExpectWarned(const ChildResult& r, const std::string& state) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(warning: producer "split" is split over kafka:orders/[03], kafka:orders/[03]: )")))
        << r.err;
    EXPECT_NE(r.err.find("kafka orders: 1 producers split over partitions (--on-split-producer warn)"), std::string::npos)
        << r.err;
    ChildResult s = Snapsink({"status", state});
    EXPECT_NE(s.out.find(", 1 split over partitions\n"), std::string::npos) << s.out;
    EXPECT_TRUE(std::regex_search(s.out, std::regex(R"(  split  split over kafka:orders/[03], kafka:orders/[03]: key)")))
        << s.out;
    s = Snapsink({"status", state, "--json"});
    EXPECT_TRUE(std::regex_search(s.out, std::regex(R"re("split_producers":\[\{"producer":"split","sources":"kafka:orders/[03], kafka:orders/[03]"\}\])re")))
        << s.out;
    s = Snapsink({"metrics", state});
    EXPECT_NE(s.out.find("\nsnapsink_split_producers 1\n"), std::string::npos) << s.out;
  }
};

TEST_F(KafkaSplitProducer, OneRootStopsAtTheSecondPartitionAndWarnGoesOn) {
  ProduceSplit();
  const std::string root = NewRoot("split-root");
  ChildResult r = Snapsink(RunArgs(root, "gsplit1", {"--final"}));
  ExpectStopped(r);
  // The partition that brought the producer second committed none of its records.
  EXPECT_NE(TookSplitRecords(root, 0), TookSplitRecords(root, 3));
  r = Snapsink({"status", root, "--json"});
  EXPECT_NE(r.out.find(R"("split_producers":[])"), std::string::npos) << r.out;

  // warn, on a root of its own (the first run may have read all of one
  // partition's share of the producer).
  const std::string warned = NewRoot("split-warned");
  r = Snapsink(RunArgs(warned, "gsplit1w", {"--final", "--on-split-producer", "warn"}));
  ExpectWarned(r, warned);
}

// A follower stops by itself, exit 3, as soon as the split comes.
TEST_F(KafkaSplitProducer, FollowerStopsAtTheSecondPartition) {
  ProduceSplit();
  const std::string root = NewRoot("split-follow");
  ChildResult r = Snapsink(RunArgs(root, "gsplit3", {"--follow", "--publish-every", "1s"}), {}, 60);
  ExpectStopped(r);
  EXPECT_NE(TookSplitRecords(root, 0), TookSplitRecords(root, 3));
}

TEST_F(KafkaSplitProducer, StatesStopAtTheSecondPartitionAndWarnGoesOn) {
  ProduceSplit();
  const std::string root = NewRoot("split-states");
  const std::string state = dir_ + "/state";
  ChildResult r = Snapsink(RunArgs(root, "gsplit2", {"--final", "--state", state}));
  ExpectStopped(r);
  r = Snapsink({"query", root});
  EXPECT_NE(r.err.find("nothing is published in " + root + " yet"), std::string::npos) << r.err;

  const std::string warned = NewRoot("split-states-warned");
  r = Snapsink(RunArgs(warned, "gsplit2w", {"--final", "--state", dir_ + "/state-w", "--on-split-producer", "warn"}));
  ExpectWarned(r, warned);
}

// A keyed producer whose later records are on another partition (a key
// that moved when partitions were added) is not a split: its seq ranges on
// the two partitions do not overlap. One root and --state, default stop:
// exit 0, rows equal to a file run of the same events (exit 3 when any
// second partition was a split).
TEST_F(KafkaSplitProducer, AKeyMovedToAnotherPartitionIsNotASplitRowsEqualAFileRun) {
  EventStream moved = ProduceMoved();
  const std::string want = Rows(FileQuery({&keyed_, &moved}));
  const std::string root = NewRoot("moved-root");
  ChildResult r = Snapsink(RunArgs(root, "gmoved1", {"--final"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("split"), std::string::npos) << r.err;
  EXPECT_EQ(Rows(Query(root)), want);

  const std::string states = NewRoot("moved-states");
  r = Snapsink(RunArgs(states, "gmoved2", {"--final", "--state", dir_ + "/state"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("split"), std::string::npos) << r.err;
  EXPECT_EQ(Rows(Query(states)), want);
  r = Snapsink({"status", states, "--json"});
  EXPECT_NE(r.out.find(R"("split_producers":[])"), std::string::npos) << r.out;
}

// Two processes, each owning one partition of a 2-partition topic, with a
// producer's events in both: neither process reads the other's partition,
// so neither Write sees the split. The merged publish finds it, from the
// producer lists the partitions' rounds record in ROOT, before it
// publishes. They start following an empty topic; the events come once each
// owns one partition (see StartTwoAndProduce).
class KafkaSplitAcrossProcesses : public KafkaMock {
 protected:
  static constexpr char kPair[] = "pair";
  std::vector<std::string> Args(const std::string& root, const std::string& group, const std::string& state,
                                const std::vector<std::string>& extra) {
    std::vector<std::string> a = RunArgs(root, group, {"--state", dir_ + "/" + state, "--follow", "--publish-every",
                                                       "1s"});
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == "--topic") a[i + 1] = kPair;
    }
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // The state directory named by partition p's newest claim ("" when none).
  std::string Owner(const std::string& root, int p) { return ClaimedStateDir(root, p, "pair"); }
  // Where partition p's last recorded round ended (-1: none yet).
  int64_t RecordedPosition(const std::string& root, int p) {
    const std::string text = ReadFile(root + "/partitions/kafka_pair_" + std::to_string(p) + "/progress");
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(R"("position":([0-9]+))"))) return -1;
    return std::stoll(m[1]);
  }
  static constexpr int64_t kT0 = 1792576800000LL;  // 2026-10-21T10:00:00Z
  // Starts two followers and waits until each owns one partition.
  void StartTwo(const std::string& root, const std::string& group, const std::vector<std::string>& extra) {
    cluster_->CreateTopic(kPair, 2);
    a_ = std::make_unique<Child>(g_snapsink, Args(root, group, "state-a", extra), std::vector<std::string>{}, dir_);
    b_ = std::make_unique<Child>(g_snapsink, Args(root, group, "state-b", extra), std::vector<std::string>{}, dir_);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline &&
           (Owner(root, 0).empty() || Owner(root, 1).empty() || Owner(root, 0) == Owner(root, 1))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_NE(Owner(root, 0), Owner(root, 1)) << a_->Err() << b_->Err();
    ASSERT_FALSE(Owner(root, 0).empty()) << a_->Err() << b_->Err();
  }
  // Producer `producer`'s events seq first, first + step, ... below last
  // to partition p (metric `metric`, all in the window of kT0), and waits
  // until p has recorded a round at its end.
  void ProduceAndRecord(const std::string& root, int p, const std::string& producer, int first, int step, int last,
                        const std::string& metric) {
    std::vector<std::string> records;
    for (int seq = first; seq < last; seq += step) {
      records.push_back(R"({"producer":")" + producer + R"(","seq":)" + std::to_string(seq) + R"(,"ts":)" +
                        std::to_string(kT0 + 1000 + seq) + R"(,"metric":")" + metric + R"(","value":1})");
      produced_[p].push_back(records.back());
    }
    ASSERT_TRUE(cluster_->Produce(kPair, p, records)) << p;
    int64_t lo = 0, hi = 0;
    ASSERT_TRUE(cluster_->Watermarks(kPair, p, &lo, &hi));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && RecordedPosition(root, p) < hi) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_EQ(RecordedPosition(root, p), hi) << a_->Err() << b_->Err();
  }
  // In each partition, producer "own-P" every 30 minutes of event time for
  // 5 hours, which closes the window of kT0.
  void CloseTheWindow() {
    for (int p = 0; p < 2; ++p) {
      std::vector<std::string> records;
      for (int i = 0; i <= 10; ++i) {
        records.push_back(R"({"producer":"own-)" + std::to_string(p) + R"(","seq":)" + std::to_string(i) +
                          R"(,"ts":)" + std::to_string(kT0 + i * 1800000LL) + R"(,"metric":"own","value":1})");
        produced_[p].push_back(records.back());
      }
      ASSERT_TRUE(cluster_->Produce(kPair, p, records)) << p;
    }
  }
  // Starts two followers; once each owns one partition, produces producer
  // "split" seq 0, 2, ... to partition 0 and 1, 3, ... to partition 1 and
  // waits until both partitions have recorded a round past them (their
  // first window still open: nothing to publish), so that neither can
  // publish the window before the other's state holds its half; then
  // closes the window.
  void StartTwoAndProduce(const std::string& root, const std::string& group, const std::vector<std::string>& extra) {
    StartTwo(root, group, extra);
    if (HasFatalFailure()) return;
    for (int p = 0; p < 2; ++p) {
      ProduceAndRecord(root, p, "split", p, 2, kSplitEvents, "spread");
      if (HasFatalFailure()) return;
    }
    CloseTheWindow();
  }
  std::vector<std::string> produced_[2];  // what each partition was given, in order
  std::unique_ptr<Child> a_, b_;
};

// stop (the default): the first process to publish after both partitions
// recorded their rounds exits 3 with the one-process message, and nothing
// is published.
TEST_F(KafkaSplitAcrossProcesses, StopsTheMergedPublishExitThreeNamingBothPartitions) {
  const std::string root = NewRoot("split-across");
  StartTwoAndProduce(root, "gacross1", {});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && a_->Running() && b_->Running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Child* first = a_->Running() ? b_.get() : a_.get();
  Child* other = first == a_.get() ? b_.get() : a_.get();
  ASSERT_FALSE(first->Running()) << "neither process stopped\n" << a_->Err() << b_->Err();
  if (other->Running()) other->Signal(SIGTERM);
  ChildResult r = first->Wait(30);
  other->Wait(60);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(R"(producer "split" is split over kafka:pair/0 and kafka:pair/1: its records must all go to )"
                       R"(one partition; key them by producer (kcat -K, librdkafka: the message key set to the )"
                       R"(producer id), or --on-split-producer warn to go on)"),
            std::string::npos)
      << r.err;
  ChildResult q = Snapsink({"query", root});
  EXPECT_NE(q.err.find("nothing is published in " + root + " yet"), std::string::npos) << q.out << q.err;
}

// warn: the publish goes on; the process that found it says so once, sums
// it up at the end, and ROOT's status lists it.
TEST_F(KafkaSplitAcrossProcesses, WarnRecordsItInTheRootAndPublishes) {
  const std::string root = NewRoot("split-across-warn");
  StartTwoAndProduce(root, "gacross2", {"--on-split-producer", "warn"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string status;
  while (std::chrono::steady_clock::now() < deadline && a_->Running() && b_->Running()) {
    status = Snapsink({"status", root, "--json"}).out;
    if (status.find(R"("split_producers":[{"producer":"split","sources":"kafka:pair/0, kafka:pair/1"}])") !=
            std::string::npos &&
        Snapsink({"query", root}).exit_code == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  a_->Signal(SIGTERM);
  b_->Signal(SIGTERM);
  ChildResult ra = a_->Wait(60), rb = b_->Wait(60);
  EXPECT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_NE(status.find(R"("split_producers":[{"producer":"split","sources":"kafka:pair/0, kafka:pair/1"}])"),
            std::string::npos)
      << status;
  const std::string both = ra.err + rb.err;
  EXPECT_NE(both.find(R"(warning: producer "split" is split over kafka:pair/0, kafka:pair/1: )"), std::string::npos)
      << both;
  EXPECT_NE(both.find("kafka pair: 1 producers split over partitions (--on-split-producer warn)"), std::string::npos)
      << both;
  ChildResult q = Snapsink({"query", root, "--metric", "spread"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_TRUE(std::regex_search(q.out, std::regex(R"(2026-10-21T10:00:00Z +spread +40 +40 )"))) << q.out;
}

// A keyed producer whose key moved to a partition another process owns
// (as adding partitions to a topic moves keys; the mock cluster cannot add
// partitions, so partition 1 stays empty until the key moves): its seqs
// 0..19 in partition 0's state, 20..39 in partition 1's. Both lists name
// it, with ranges that do not overlap: under the default stop both
// processes go on, and the rows equal a file run of the same events (the
// merged publish exited 3 when a producer in two lists was a split).
TEST_F(KafkaSplitAcrossProcesses, AKeyMovedToTheOtherProcesssPartitionIsNotASplitRowsEqualAFileRun) {
  const std::string root = NewRoot("moved-across");
  StartTwo(root, "gmoved3", {});
  ASSERT_FALSE(HasFatalFailure());
  ProduceAndRecord(root, 0, "moved", 0, 1, kSplitEvents / 2, "moved");
  ASSERT_FALSE(HasFatalFailure());
  ProduceAndRecord(root, 1, "moved", kSplitEvents / 2, 1, kSplitEvents, "moved");
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_NE(ReadFile(root + "/partitions/kafka_pair_0/producers").find(R"("first":0,"last":19})"), std::string::npos);
  EXPECT_NE(ReadFile(root + "/partitions/kafka_pair_1/producers").find(R"("first":20,"last":39})"), std::string::npos);
  CloseTheWindow();

  // What a file run of the same events publishes for the window of kT0.
  const std::string file = NewRoot("moved-file");
  WriteFile(file + ".ndjson", [&] {
    std::string data;
    for (const auto& records : produced_) {
      for (const std::string& r : records) data += r + "\n";
    }
    return data;
  }());
  ChildResult r = Snapsink({"run", file, file + ".ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> query{"query", "", "--metric", "moved", "--format", "json"};
  auto rows = [&](const std::string& at) {
    std::vector<std::string> q = query;
    q[1] = at;
    return Snapsink(q);
  };
  const std::string want = Rows(rows(file).out);
  ASSERT_NE(want.find("moved"), std::string::npos) << want;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string got;
  while (std::chrono::steady_clock::now() < deadline && a_->Running() && b_->Running()) {
    ChildResult q = rows(root);
    got = q.exit_code == 0 ? Rows(q.out) : "";
    if (got == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_TRUE(a_->Running() && b_->Running()) << a_->Err() << b_->Err();
  a_->Signal(SIGTERM);
  b_->Signal(SIGTERM);
  ChildResult ra = a_->Wait(60), rb = b_->Wait(60);
  EXPECT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ((ra.err + rb.err).find("split"), std::string::npos) << ra.err << rb.err;
  EXPECT_EQ(got, want);
  EXPECT_EQ(Rows(rows(root).out), want);
  ChildResult s = Snapsink({"status", root, "--json"});
  EXPECT_NE(s.out.find(R"("split_producers":[])"), std::string::npos) << s.out;
}

TEST_F(KafkaSplitProducer, OnSplitProducerGoesWithKafkaOnly) {
  const std::string root = NewRoot("split-file");
  WriteFile(dir_ + "/a.ndjson", "");
  ChildResult r = Snapsink({"run", root, dir_ + "/a.ndjson", "--on-split-producer", "warn"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--on-split-producer goes with --kafka"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace snapsink::kafkatest
