// A Kafka consumer that stores its offsets in a snapsink root, not in Kafka
// (README.md, "Kafka"): built on the public API only (snapsink/*.h), as a user would.
//
// Each partition P of the topic is the source "kafka:T/P"; its position (the
// Write path's opaque position, decimal text) is the next offset to read,
// committed by Sink::Write in the same LMDB transaction as the effects of the
// records before it. Every assignment (eager or cooperative) starts each
// partition at the root's position; a partition the root has never seen
// starts at the log start (or end, start_latest), and that choice is
// committed at once. Offsets are committed to Kafka after each root commit,
// asynchronously, for lag tools only.
//
// A position Kafka no longer holds (retention deleted it) is Status Gap
// naming the topic, partition and missing range LO..HI, unless an accepted
// source gap (Sink::AcceptSourceGap) covers it: the partition then goes on
// from HI+1.
//
// Not thread-safe except Stop(); one Consumer per Sink.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "snapsink/sink.h"
#include "utilities/kafka/kafka_config.h"
#include "utilities/kafka/partition_states.h"
#include "utilities/kafka/partition_writer.h"
#include "utilities/kafka/split_producers.h"

namespace snapsink::kafka {

struct ConsumerOptions {
  std::string brokers, topic, group;
  bool start_latest = false;  // --kafka-start latest
  ConfigPairs user_config;    // checked by ParseUserConfig
  api::WriteOptions write;    // stop_on_error, id_from_content
  size_t max_round_records = 20000;
  size_t max_round_bytes = 32 << 20;
  int poll_timeout_ms = 200;
  // --state DIR (SPEC 12): each partition's state is its own (taken with a
  // new owner epoch at each assignment, dropped when revoked or fenced); the
  // Sink given to Create is then unused. Not owned; outlives the Consumer.
  PartitionStates* states = nullptr;
  // Set: every partition's Write checks that each producer keeps to one
  // partition (utilities/kafka/split_producers.h), and its warnings come
  // through on_note. Not owned; outlives the Consumer.
  SplitProducers* split_producers = nullptr;
  // Before the first assignment: after this long with no broker answering
  // (a metadata request to the bootstrap brokers fails), Round returns
  // IOError "no broker reachable at BROKERS (...)". 0: wait as long as it takes.
  int64_t connect_timeout_ms = 30000;
  // At least this often each assigned partition's progress (position, high
  // watermark) is written even when no record came: an idle partition of a
  // running consumer then shows a fresh progress age (status), a stopped
  // one an old age. 0: written only when the position moves.
  int64_t progress_every_ms = 0;
  // Notes for people (a broker error that librdkafka retries, and
  // librdkafka's own log lines, "kafka: FACILITY: ..."); dropped when unset:
  // the library never prints.
  // Called on the thread that calls Round and Close.
  std::function<void(const std::string&)> on_note;
};

// What one Round wrote.
struct RoundResult {
  uint64_t records = 0;  // Kafka records taken
  api::WriteResult lines;  // summed over the round's batches
};

class Consumer {
 public:
  // Subscribes to the topic (the group join happens in the first rounds).
  static Result<std::unique_ptr<Consumer>> Create(api::Sink* sink, ConsumerOptions options);
  ~Consumer();  // Close()s if not closed
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  // Polls up to max_round_records records (waiting up to poll_timeout_ms for
  // the first) and writes them, one Sink::Write per partition with records.
  Status Round(RoundResult* result);

  // Every partition assigned has reached the high watermark it had when it
  // was first assigned (false before the first assignment; with nothing
  // assigned, as between a revoke and the next assignment, every partition
  // ever assigned must have). A partition waiting for its claim lock
  // (Waiting) does not count.
  bool CaughtUp() const;

  // --state: the partitions the group gave this process whose claim lock
  // another live process holds (stopped or stuck while it claims or records
  // a seal round). They are not taken, read or counted as owned; each Round
  // claims them again, backing off (250 ms doubled up to 4 s), until the
  // claim goes through (then they are read like any other) or the group
  // takes them back.
  std::vector<int32_t> Waiting() const;

  // --state: the partitions this process owns now, each with its state, its
  // owner epoch, its committed position and its newest high watermark.
  struct OwnedPartition {
    int32_t partition = 0;
    api::Sink* state = nullptr;
    uint64_t epoch = 0;
    int64_t position = 0;
    int64_t high_watermark = 0;
  };
  std::vector<OwnedPartition> Owned() const;

  // The topic's number of partitions (broker metadata).
  Result<int32_t> PartitionCount();
  // The high watermark of each of partitions 0 .. n-1 now (a broker query).
  Result<std::vector<int64_t>> EndOffsets(int32_t n);
  // The group's offsets committed to Kafka for partitions 0 .. n-1 (-1: none),
  // whoever owns them: they move while an owner is reading.
  Result<std::vector<int64_t>> GroupOffsets(int32_t n);

  // Leaves the group (revoking writes nothing new: every round flushes) and
  // destroys the handle. Safe to call twice.
  Status Close();

  struct Impl;

 private:
  explicit Consumer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink::kafka
