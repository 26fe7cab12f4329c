// `run ROOT --kafka ... --state DIR`: the merged publish into ROOT (SPEC 12,
// docs/SCALE-OUT.md). At each publish point every partition this process
// owns seals its windows in its own state (the closed ones, or all of them at
// the end of --final), its round is recorded in ROOT
// (api::RecordPartitionSeals: seal records and progress, refused for
// a fenced owner), and then ROOT publishes every window all of the topic's
// partitions are past (api::PublishMerged, which takes LOCK for that
// step only). Any process may publish; each does after its own rounds.
//
// A round that recorded seals is followed by a checkpoint of the partition
// (PartitionStates::Checkpoint), taken after the state marked those seals
// recorded: a new owner restores a state that already knows its sealed
// windows and the round's end, so it neither seals them again nor records
// offsets that do not follow. A failed checkpoint is a warning: the
// previous one stays and the topic holds what it lacks.
//
// Built on the public API only. Not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "utilities/kafka/kafka_consumer.h"
#include "utilities/kafka/partition_states.h"
#include "utilities/kafka/split_producers.h"

namespace snapsink::kafka {

class MergedPublisher {
 public:
  // root: ROOT, opened without its LOCK.
  // states: the partitions' states (for the checkpoint after a recorded
  // round); nullptr: no checkpoints.
  MergedPublisher(api::ReadOnlySink* root, std::string topic, PartitionStates* states = nullptr)
      : root_(root), topic_(std::move(topic)), states_(states) {}

  // Seals each partition c owns (every window with changes when all) and
  // records its round in ROOT. A partition whose owner was fenced meanwhile
  // is reported through on_note and skipped (its next commit gives it up).
  Status SealOwned(Consumer* c, bool all, std::vector<api::SealedWindow>* sealed);
  // SealOwned's step for one partition: seal, record the round, and when it
  // recorded seals, checkpoint the partition. The recorded (window, version)
  // pairs go to *recorded (if given).
  Status SealOne(const Consumer::OwnedPartition& op, bool all, std::vector<api::SealedWindow>* sealed,
                 std::vector<std::pair<int64_t, uint64_t>>* recorded = nullptr);

  // The merged publish of what every partition has recorded (see above).
  Result<api::MergedPublishResult> Publish(Consumer* c);

  void set_on_note(std::function<void(const std::string&)> f) { on_note_ = std::move(f); }
  // What Publish does with a producer the merged publish finds in two
  // partitions' states (SplitProducers::FoundMerged: kStop fails the
  // publish, kWarn notes it, records it in ROOT and publishes). Not owned;
  // nullptr: api::PublishMerged's default (the publish stops).
  void set_split_producers(SplitProducers* s) { split_ = s; }

 private:
  void Note(const std::string& m) const;

  api::ReadOnlySink* root_;
  std::string topic_;
  PartitionStates* states_;
  SplitProducers* split_ = nullptr;
  int32_t partitions_ = 0;  // the topic's, once known
  std::function<void(const std::string&)> on_note_;
};

}  // namespace snapsink::kafka
