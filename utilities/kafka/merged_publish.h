// `run ROOT --kafka ... --state DIR`: the merged publish into ROOT (SPEC 12,
// docs/SCALE-OUT.md). At each publish point every partition this process
// owns seals its windows in its own state (the closed ones, or all of them at
// the end of --final), its round is recorded in ROOT
// (api::RecordPartitionSeals: seal records and progress, refused for
// a fenced owner), and then ROOT publishes every window all of the topic's
// partitions are past (api::PublishMerged, which takes LOCK for that
// step only). Any process may publish; each does after its own rounds.
//
// Built on the public API only. Not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "snapsink/merged.h"
#include "snapsink/sink.h"
#include "utilities/kafka/kafka_consumer.h"

namespace snapsink::kafka {

class MergedPublisher {
 public:
  // root: ROOT, opened without its LOCK.
  MergedPublisher(api::ReadOnlySink* root, std::string topic) : root_(root), topic_(std::move(topic)) {}

  // Seals each partition c owns (every window with changes when all) and
  // records its round in ROOT. A partition whose owner was fenced meanwhile
  // is reported through on_note and skipped (its next commit gives it up).
  Status SealOwned(Consumer* c, bool all, std::vector<api::SealedWindow>* sealed);

  // The merged publish of what every partition has recorded (see above).
  Result<api::MergedPublishResult> Publish(Consumer* c);

  void set_on_note(std::function<void(const std::string&)> f) { on_note_ = std::move(f); }

 private:
  api::ReadOnlySink* root_;
  std::string topic_;
  int32_t partitions_ = 0;  // the topic's, once known
  std::function<void(const std::string&)> on_note_;
};

}  // namespace snapsink::kafka
