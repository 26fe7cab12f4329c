#include "utilities/kafka/merged_publish.h"

#include <cstdio>

namespace snapsink::kafka {

Status MergedPublisher::SealOwned(Consumer* c, bool all, std::vector<api::SealedWindow>* sealed) {
  for (const Consumer::OwnedPartition& op : c->Owned()) {
    api::SealOptions so;
    so.all = all;
    SNAPSINK_ASSIGN_OR_RETURN(auto got, op.state->Seal(so));
    if (sealed) sealed->insert(sealed->end(), got.begin(), got.end());
    api::PartitionRound round{topic_, op.partition, op.epoch, op.position, op.high_watermark};
    auto recorded = api::RecordPartitionSeals(root_, op.state, round);
    if (!recorded.ok()) {
      if (recorded.status().code() != Status::Code::kLocked) return recorded.status();
      const std::string m = recorded.status().message();
      if (on_note_) {
        on_note_(m);
      } else {
        std::fprintf(stderr, "%s\n", m.c_str());
      }
    }
  }
  return Status::OK();
}

Result<api::MergedPublishResult> MergedPublisher::Publish(Consumer* c) {
  if (partitions_ == 0) {
    SNAPSINK_ASSIGN_OR_RETURN(partitions_, c->PartitionCount());
  }
  return api::PublishMerged(root_, topic_, partitions_);
}

}  // namespace snapsink::kafka
