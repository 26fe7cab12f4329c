// librdkafka's in-process mock cluster, hosted by a producer handle, and the
// snapsink child processes the Kafka tests run against it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/file_util.h"

struct rd_kafka_s;
struct rd_kafka_mock_cluster_s;

namespace snapsink::kafkatest {

class MockCluster {
 public:
  // producer_config: more properties of the producing handle (e.g. compression.type).
  explicit MockCluster(int brokers, const std::vector<std::pair<std::string, std::string>>& producer_config = {});
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  const std::string& bootstraps() const { return bootstraps_; }
  rd_kafka_mock_cluster_s* mock() const { return mock_; }
  void CreateTopic(const std::string& topic, int partitions);
  // Produces values to the partition, in order; true when every one was acknowledged.
  bool Produce(const std::string& topic, int32_t partition, const std::vector<std::string>& values);
  // Produces one tombstone (a record with a key and no value) to the partition.
  bool ProduceTombstone(const std::string& topic, int32_t partition);
  bool Watermarks(const std::string& topic, int32_t partition, int64_t* lo, int64_t* hi);
  // The offsets group has committed to Kafka for partitions 0..n-1 (-1: none), by a consumer that never joins.
  std::vector<int64_t> Committed(const std::string& group, const std::string& topic, int partitions);

 private:
  rd_kafka_s* rk_ = nullptr;
  rd_kafka_mock_cluster_s* mock_ = nullptr;
  std::string bootstraps_;
};

struct ChildResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out, err;
};

class Child {
 public:
  // Starts `binary args...` with extra environment entries ("K=V"),
  // stdout/stderr into files under dir.
  Child(const std::string& binary, const std::vector<std::string>& args, const std::vector<std::string>& env,
        const std::string& dir);
  ~Child();
  void Signal(int sig);
  bool Running();
  // Stopped by a signal (SIGSTOP, or SNAPSINK_PAUSE_AT's raise), not ended.
  bool Stopped();
  std::string Err() const;  // what it wrote to stderr so far
  ChildResult Wait(int timeout_s = 120);  // SIGKILL after the timeout

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  int status_ = 0;
  bool reaped_ = false;
};

ChildResult RunChild(const std::string& binary, const std::vector<std::string>& args,
                     const std::vector<std::string>& env, const std::string& dir, int timeout_s = 120);

using snapsink::testing::ReadFile;
using snapsink::testing::WriteFile;

}  // namespace snapsink::kafkatest
