// The write side of the Kafka consumer, apart from librdkafka: per partition
// a pending api::WriteBatch of the records read since the last commit, and
// the next offset; Flush writes each partition's batch with its position
// (the next offset, decimal text) and progress (next offset, high watermark)
// through Sink::Write. The Consumer feeds it from librdkafka's messages; the
// benchmark (bench/kafka_bench.cc) from memory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapsink/sink.h"

namespace snapsink::kafka {

// "kafka:T/P".
std::string SourceName(std::string_view topic, int32_t partition);

class PartitionWriter {
 public:
  struct Partition {
    int64_t next = 0;        // next offset to read: the root's position plus what is pending
    int64_t committed = -1;  // the root's position (-1: none yet; the first flush records one)
    int64_t start_hwm = -1;  // the high watermark at the first assignment
    int64_t hwm = 0;         // the newest high watermark known
    bool assigned = false;
    bool refresh = false;    // the next flush writes the progress even with nothing new
    api::WriteBatch batch{"-"};
    api::Sink* sink = nullptr;  // --state: the partition's own state (owner epoch set on batch); else the root
    std::string at_prefix;      // "kafka:T/P@": a record's label is this and its offset
  };

  PartitionWriter(api::Sink* sink, std::string topic, api::WriteOptions options);

  // Partition p's state, made on first use.
  Partition& Get(int32_t p);
  const std::map<int32_t, Partition>& partitions() const { return parts_; }
  std::string Source(int32_t p) const { return SourceName(topic_, p); }

  // Adds record `offset` of p (ignored below p's next offset: a redelivery
  // of what is pending or committed); returns the bytes taken. An empty
  // payload (an empty record, a tombstone) is one empty line.
  size_t Add(int32_t p, int64_t offset, std::string_view payload);

  // Writes p's batch with its position and progress, if there is anything
  // new; adds what it did to *sum. On failure nothing of it was applied and
  // p is back at its committed offset.
  Status FlushOne(int32_t p, api::WriteResult* sum);
  // FlushOne for every partition; *flushed (if given) gets each (partition,
  // committed offset) that moved. Returns the first failure.
  // The partitions' Writes run concurrently (one thread each) unless
  // set_parallel(false): Sink::Write commits them together.
  Status Flush(api::WriteResult* sum, std::vector<std::pair<int32_t, int64_t>>* flushed);
  void set_parallel(bool on) { parallel_ = on; }
  // Called inside each partition's Write, right before its commit
  // (WriteBatch::SetCommitCheck; --state: is this process still the
  // partition's newest owner?); a failure fails that partition's flush and
  // nothing of its batch commits.
  void set_commit_check(std::function<Status(int32_t)> f) { commit_check_ = std::move(f); }
  // Flush asks it about each partition's failure (after every Write of the
  // round has returned); true: handled (the partition was given up), not
  // returned.
  void set_on_failure(std::function<bool(int32_t, const Status&)> f) { on_failure_ = std::move(f); }

 private:
  api::Sink* sink_;
  std::string topic_;
  api::WriteOptions options_;
  std::map<int32_t, Partition> parts_;
  std::string label_;  // Add's record label, built in place (no allocation per record)
  bool parallel_ = true;
  std::function<Status(int32_t)> commit_check_;
  std::function<bool(int32_t, const Status&)> on_failure_;
};

}  // namespace snapsink::kafka
