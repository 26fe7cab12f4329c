// The fixture of the tests that run `snapsink run --kafka` as child
// processes against librdkafka's in-process mock cluster (3 brokers, a topic
// of 8 partitions) hosted by the test process: kafka_mock_harness.cc and
// kafka_scale_test.cc. Each executable includes it from one file, which
// also holds its main() (--snapsink=PATH sets g_snapsink).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/kafka_events.h"
#include "tests/kafka_mock_cluster.h"

namespace snapsink::kafkatest {

inline std::string g_snapsink = SNAPSINK_BINARY;
inline constexpr char kTopic[] = "orders";
inline constexpr int kPartitions = 8;

class KafkaMock : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/snapsink-kafka-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cluster_ = std::make_unique<MockCluster>(3);
    cluster_->CreateTopic(kTopic, kPartitions);
  }
  void TearDown() override {
    cluster_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
    else std::fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
  }

  ChildResult Snapsink(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                       int timeout_s = 90) {
    return RunChild(g_snapsink, args, env, dir_, timeout_s);
  }
  std::string NewRoot(const std::string& name) {
    const std::string root = dir_ + "/" + name;
    ChildResult r = Snapsink({"init", root});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return root;
  }
  std::vector<std::string> RunArgs(const std::string& root, const std::string& group,
                                   std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"run", root, "--kafka", cluster_->bootstraps(), "--topic", kTopic, "--group", group,
                               "--kafka-config", "session.timeout.ms=3000", "--kafka-config",
                               "heartbeat.interval.ms=300", "--kafka-config", "fetch.wait.max.ms=50",
                               "--kafka-config", "topic.metadata.refresh.interval.ms=1000"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  void ProduceStream(const EventStream& s) {
    for (int p = 0; p < kPartitions; ++p) ASSERT_TRUE(cluster_->Produce(kTopic, p, s.records[p])) << p;
  }
  std::string Query(const std::string& root) {
    ChildResult r = Snapsink({"query", root, "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  // What `run --final` publishes over the streams as one file.
  std::string FileQuery(const std::vector<const EventStream*>& streams) {
    const std::string root = NewRoot("file-root" + (file_roots_ ? std::to_string(file_roots_) : std::string()));
    ++file_roots_;
    std::string data;
    for (const EventStream* s : streams) data += AsFile(*s);
    WriteFile(root + ".ndjson", data);
    ChildResult r = Snapsink({"run", root, root + ".ndjson", "--final", "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Query(root);
  }
  // lines = applied + duplicates + fenced + rejected + ignored for every
  // partition's source, and lines = what was produced to it.
  void CheckAccounting(const std::string& root, const std::vector<uint64_t>& lines) {
    ChildResult r = Snapsink({"inspect", root, "sources", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto field = [](const std::string& line, const std::string& name) -> uint64_t {
      std::smatch m;
      if (!std::regex_search(line, m, std::regex("\"" + name + "\":([0-9]+)"))) return UINT64_MAX;
      return std::stoull(m[1]);
    };
    int seen = 0;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, std::regex(R"re("source":"kafka:orders/([0-9]+)")re"))) continue;
      const int p = std::stoi(m[1]);
      ++seen;
      const uint64_t n = field(line, "lines");
      EXPECT_EQ(n, lines[p]) << line;
      EXPECT_EQ(n, field(line, "applied") + field(line, "duplicates") + field(line, "fenced") +
                       field(line, "rejected") + field(line, "ignored"))
          << line;
    }
    EXPECT_EQ(seen, kPartitions) << r.out;
  }
  std::string dir_;
  std::unique_ptr<MockCluster> cluster_;
  int file_roots_ = 0;
};

// The lines produced to each partition, over all of streams.
inline std::vector<uint64_t> Lines(const std::vector<const EventStream*>& streams) {
  std::vector<uint64_t> lines(kPartitions, 0);
  for (const EventStream* s : streams) {
    for (int p = 0; p < kPartitions; ++p) lines[p] += s->lines[p];
  }
  return lines;
}

// version and generation depend on how often a process published; the rows do not.
inline std::string Rows(const std::string& query_json) {
  return std::regex_replace(query_json, std::regex(R"(,"version":[0-9]+,"generation":[0-9]+)"), "");
}

// The state directory (--state DIR) named by the newest owner claim of
// partition p of topic in ROOT ("CLIENT-ID STATE-DIR"); "" before the first
// claim.
inline std::string ClaimedStateDir(const std::string& root, int p, const std::string& topic = "orders") {
  const std::string dir = root + "/owners/kafka_" + topic + "_" + std::to_string(p);
  std::string newest;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 20 && name > newest) newest = name;
  }
  if (newest.empty()) return "";
  std::string who = ReadFile(dir + "/" + newest);
  while (!who.empty() && who.back() == '\n') who.pop_back();
  return who.substr(who.find(' ') + 1);
}

// The body of each executable's main(): gtest's flags, then
// --snapsink=PATH (the binary under test; default SNAPSINK_BINARY).
inline int RunTests(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--snapsink=", 0) == 0) g_snapsink = a.substr(11);
  }
  return RUN_ALL_TESTS();
}

}  // namespace snapsink::kafkatest
