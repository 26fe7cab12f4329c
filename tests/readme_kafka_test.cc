// README's Kafka blocks (`sh kafka`) run as written against librdkafka's
// mock cluster, its address in place of README's localhost:9092: the
// bundled sample produced to the topic `orders`, each producer's events on
// one partition (keyed by producer, as README says they must be); one
// consumer to the end of the topic, then two `--state --final` processes
// sharing it, each publishing what `run --final` over the file publishes.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/kafka_fixture.h"
#include "tests/readme_blocks.h"

namespace snapsink::kafkatest {
namespace {

using snapsink::testing::BlocksScript;
using snapsink::testing::FencedBlocks;
using snapsink::testing::LastBlock;
using snapsink::testing::RunScript;
using snapsink::testing::ScriptResult;

const std::string kSource = SNAPSINK_SOURCE_DIR;

// A producer's partition: FNV-1a of its name, so one producer keeps to one.
int PartitionOf(const std::string& line) {
  std::smatch m;
  const std::string producer = std::regex_search(line, m, std::regex("\"producer\":\"([^\"]*)\"")) ? m[1].str() : "";
  uint32_t h = 2166136261u;
  for (unsigned char c : producer) h = (h ^ c) * 16777619u;
  return static_cast<int>(h % kPartitions);
}

class ReadmeKafka : public KafkaMock {
 protected:
  // The rows `snapsink run` over the sample file publishes, with extra flags.
  std::string FileRows(const std::string& name, const std::vector<std::string>& extra) {
    const std::string root = NewRoot(name);
    std::vector<std::string> args{"run", root, kSource + "/sample/events.ndjson", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    ChildResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string rows = Rows(Query(root));
    EXPECT_NE(rows.find("2026-10-21T11:00:00Z"), std::string::npos) << rows;
    return rows;
  }
};

TEST_F(ReadmeKafka, BlocksRunAsWrittenAgainstTheMockCluster) {
  std::vector<std::vector<std::string>> records(kPartitions);
  std::istringstream sample(ReadFile(kSource + "/sample/events.ndjson"));
  for (std::string line; std::getline(sample, line);) records[PartitionOf(line)].push_back(line);
  for (int p = 0; p < kPartitions; ++p) ASSERT_TRUE(cluster_->Produce(kTopic, p, records[p])) << p;

  std::filesystem::create_directories(dir_ + "/bin");
  std::filesystem::create_symlink(g_snapsink, dir_ + "/bin/snapsink");
  const std::string script = BlocksScript(FencedBlocks(ReadFile(kSource + "/README.md")), "sh kafka");
  ASSERT_NE(script.find("localhost:9092"), std::string::npos);
  const std::string here = std::regex_replace(script, std::regex("localhost:9092"), cluster_->bootstraps());
  const ScriptResult r = RunScript(dir_, here, {{"PATH", dir_ + "/bin:" + std::getenv("PATH")}}, 240);
  ASSERT_EQ(r.exit_code, 0) << "failed in the block at " << LastBlock(r.err) << "\nstderr:\n"
                            << r.err << "\nstdout:\n" << r.out;

  // The one consumer publishes what `run` over the file publishes (the
  // windows the watermark closed), the two processes with --final what
  // `run --final` does (every window).
  EXPECT_EQ(Rows(Query(dir_ + "/orders")), FileRows("file-run", {}));
  EXPECT_EQ(Rows(Query(dir_ + "/orders-merged")), FileRows("file-final", {"--final"}));
}

}  // namespace
}  // namespace snapsink::kafkatest
