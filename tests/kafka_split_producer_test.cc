// A producer whose records land on two partitions (not keyed by producer)
// is found as its events are written: under --on-split-producer stop (the
// default) the run exits 3 naming the producer and both partitions, and
// nothing of the second partition's batch is applied; under warn it goes
// on and run's output, status, status --json and the metrics list it.
// Keyed runs (one producer a partition) are unchanged: every other test of
// this executable runs with the default, stop. Part of kafka_mock_harness
// (its main() is in kafka_mock_harness.cc).
#include <gtest/gtest.h>

#include <regex>
#include <string>
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

TEST_F(KafkaSplitProducer, OnSplitProducerGoesWithKafkaOnly) {
  const std::string root = NewRoot("split-file");
  WriteFile(dir_ + "/a.ndjson", "");
  ChildResult r = Snapsink({"run", root, dir_ + "/a.ndjson", "--on-split-producer", "warn"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--on-split-producer goes with --kafka"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace snapsink::kafkatest
