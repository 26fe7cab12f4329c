// One root, one kind of source (docs/SCALE-OUT.md): a merged publish
// (`run --kafka --state`) gives each window the rows of one topic's
// partitions, so it would replace rows that came into the root another way.
// The mix is refused before anything is written, in either order and for a
// second topic, and the root goes on publishing exactly what it published:
// the rows `run --final` publishes over the same events from a file.
// Part of kafka_scale_test (its main() is in kafka_scale_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/kafka_fixture.h"

namespace snapsink::kafkatest {
namespace {

class KafkaMixedRoot : public KafkaMock {
 protected:
  // `run ROOT --kafka ... --topic TOPIC --group GROUP --state STATE --final`.
  std::vector<std::string> StateRun(const std::string& root, const std::string& topic, const std::string& group,
                                    const std::string& state) {
    std::vector<std::string> a = RunArgs(root, group, {"--state", dir_ + "/" + state, "--final"});
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == "--topic") a[i + 1] = topic;
    }
    return a;
  }
  // The names in ROOT/owners/ (every partition claimed through --state).
  std::vector<std::string> Claimed(const std::string& root) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root + "/owners", ec)) {
      out.push_back(e.path().filename().string());
    }
    return out;
  }
};

// A file first, then a topic through --state: refused, naming the file,
// with no claim made; the file's rows stay published.
TEST_F(KafkaMixedRoot, FileThenTopicThroughStateIsRefusedBeforeAnythingIsWritten) {
  const EventStream file_events = GenerateEvents(kPartitions, 60, 71);
  const EventStream topic_events = GenerateEvents(kPartitions, 60, 72);
  ProduceStream(topic_events);
  const std::string root = NewRoot("mixed");
  WriteFile(dir_ + "/a.ndjson", AsFile(file_events));
  ChildResult r = Snapsink({"run", root, dir_ + "/a.ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string before = Query(root);
  ASSERT_EQ(Rows(before), Rows(FileQuery({&file_events})));

  r = Snapsink(StateRun(root, kTopic, "gm1", "state-1"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("already takes rows from its own sources " + dir_ + "/a.ndjson"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give topic orders a root of its own"), std::string::npos) << r.err;
  EXPECT_TRUE(Claimed(root).empty());
  EXPECT_FALSE(std::filesystem::exists(root + "/partitions"));
  EXPECT_EQ(Query(root), before);
  r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A topic through --state first, then a file, `ingest` or the topic read
// without --state: each refused naming the merged topic; the topic's rows
// stay published, equal to a file run's over the same events.
TEST_F(KafkaMixedRoot, TopicThroughStateThenFileIsRefusedBeforeAnythingIsWritten) {
  const EventStream topic_events = GenerateEvents(kPartitions, 60, 73);
  const EventStream file_events = GenerateEvents(kPartitions, 60, 74);
  ProduceStream(topic_events);
  const std::string root = NewRoot("mixed");
  ChildResult r = Snapsink(StateRun(root, kTopic, "gm2", "state-1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string before = Query(root);
  ASSERT_EQ(Rows(before), Rows(FileQuery({&topic_events})));

  WriteFile(dir_ + "/a.ndjson", AsFile(file_events));
  const std::vector<std::vector<std::string>> writes = {
      {"run", root, dir_ + "/a.ndjson", "--final", "--quiet"},
      {"ingest", root, dir_ + "/a.ndjson", "--quiet"},
      RunArgs(root, "gm3", {"--final"}),  // the same topic without --state
  };
  for (const auto& args : writes) {
    r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << " " << args[2] << "\n" << r.err;
    EXPECT_NE(r.err.find(root + ": publishes the merged partitions of topic orders (8 partitions"), std::string::npos)
        << r.err;
  }
  ChildResult sources = Snapsink({"inspect", root, "sources", "--json"});
  EXPECT_EQ(sources.out.find("\"source\""), std::string::npos) << sources.out;  // nothing was written
  EXPECT_EQ(Query(root), before);
  r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// Two topics through two --state groups into one root: the second is
// refused naming the first, before it claims a partition.
TEST_F(KafkaMixedRoot, SecondTopicThroughStateIsRefusedBeforeAnythingIsWritten) {
  const EventStream orders = GenerateEvents(kPartitions, 60, 75);
  const EventStream refunds = GenerateEvents(kPartitions, 60, 76);
  ProduceStream(orders);
  cluster_->CreateTopic("refunds", kPartitions);
  for (int p = 0; p < kPartitions; ++p) ASSERT_TRUE(cluster_->Produce("refunds", p, refunds.records[p])) << p;
  const std::string root = NewRoot("mixed");
  ChildResult r = Snapsink(StateRun(root, kTopic, "gm4", "state-1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string before = Query(root);
  ASSERT_EQ(Rows(before), Rows(FileQuery({&orders})));

  r = Snapsink(StateRun(root, "refunds", "gm5", "state-2"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("already takes rows from topic orders (8 partitions through run --kafka --state); a merged "
                       "publish of topic refunds"),
            std::string::npos)
      << r.err;
  for (const std::string& name : Claimed(root)) EXPECT_EQ(name.find("refunds"), std::string::npos) << name;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/state-2/refunds"));
  EXPECT_EQ(Query(root), before);
  // The same topic through another group is the same source: it goes on.
  r = Snapsink(StateRun(root, kTopic, "gm6", "state-3"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Rows(Query(root)), Rows(before));
}

}  // namespace
}  // namespace snapsink::kafkatest
