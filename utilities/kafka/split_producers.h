// A producer's records must all land on one partition of a topic: Kafka
// orders records within a partition only, so a producer whose records are
// spread over two partitions is read out of order (one root: counts that
// depend on how the partitions' reads interleave) or into two states
// (--state: counted by each). SplitProducers finds such a producer as its
// events are written: it remembers, for every producer with seq, the range
// of seqs of its newest epoch each partition brought in this process, and a
// batch whose range, with what its partition brought before, overlaps
// another partition's range of the epoch is a split
// (api::WriteOptions::producer_check, given to every partition's Write).
// Ranges that do not overlap are a key that moved: after partitions are
// added to a topic a keyed producer's later records go to another
// partition, all of its seqs there above those of the old one.
//
// kStop: that batch fails whole with Status Gap naming the producer and
// both partitions (nothing of it is applied; the run stops, exit 3).
// kWarn: the batch goes on; the split is recorded in the state the batch
// commits to (status, metrics) and noted once per producer and partition.
//
// It knows what one process has read since it started: a producer read
// from one partition by an earlier run, or by another process of a
// --state group, and from another partition only now, is not seen as
// split. Thread-safe (partitions' Writes run concurrently).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "snapsink/sink.h"

namespace snapsink::kafka {

enum class OnSplitProducer { kStop, kWarn };

class SplitProducers {
 public:
  SplitProducers(std::string topic, OnSplitProducer on_split) : topic_(std::move(topic)), on_split_(on_split) {}

  // api::WriteOptions::producer_check.
  Status Check(std::string_view source, std::string_view producer, const api::ProducerSeqs& seqs,
               std::string* split);
  // The splits found since the last call (kWarn): the producer, the
  // partitions it came from so far ("kafka:T/0, kafka:T/3") and a note for
  // people, one line.
  struct Found {
    std::string producer, sources, note;
  };
  std::vector<Found> TakeFound();
  // A split the merged publish found (api::MergedPublishOptions): producer
  // is in the states of `sources` (two or more partitions, ascending),
  // whichever processes own them. kStop: Status Gap, the message Check
  // gives, naming the first two. kWarn: OK; the first time this process
  // hears of the producer split it is counted and a Found is added.
  Status FoundMerged(const std::string& producer, const std::vector<std::string>& sources);
  // Producers found split so far.
  uint64_t count() const;

 private:
  struct Range {
    uint32_t source = 0;  // index in sources_
    uint64_t first = 0, last = 0;
  };
  struct Seen {
    uint32_t first = 0;           // index in sources_ of the partition its events first came from
    std::vector<uint32_t> others;  // kWarn: the other partitions found split with it since, in order
    uint32_t epoch = 0;           // the newest epoch seen, and the seqs of it each partition brought
    std::vector<Range> ranges;
  };
  uint32_t SourceIndex(std::string_view source);  // REQUIRES mu_
  Status Stop(const std::string& quoted, const std::string& first, const std::string& second) const;
  std::string Names(const Seen& seen) const;      // REQUIRES mu_

  const std::string topic_;
  const OnSplitProducer on_split_;
  mutable std::mutex mu_;
  std::vector<std::string> sources_;
  std::unordered_map<std::string, Seen> producers_;
  std::vector<Found> found_;
  uint64_t split_ = 0;
};

}  // namespace snapsink::kafka
