#include "utilities/kafka/merged_publish.h"

#include "utilities/kafka/partition_writer.h"
#include "utilities/status_macros.h"

namespace snapsink::kafka {

void MergedPublisher::Note(const std::string& m) const {
  if (on_note_) on_note_(m);  // the library never prints
}

Status MergedPublisher::SealOwned(Consumer* c, bool all, std::vector<api::SealedWindow>* sealed) {
  for (const Consumer::OwnedPartition& op : c->Owned()) SNAPSINK_RETURN_IF_ERROR(SealOne(op, all, sealed));
  return Status::OK();
}

Status MergedPublisher::SealOne(const Consumer::OwnedPartition& op, bool all, std::vector<api::SealedWindow>* sealed,
                                std::vector<std::pair<int64_t, uint64_t>>* recorded_out) {
  api::SealOptions so;
  so.all = all;
  SNAPSINK_ASSIGN_OR_RETURN(auto got, op.state->Seal(so));
  if (sealed) sealed->insert(sealed->end(), got.begin(), got.end());
  api::PartitionRound round{topic_, op.partition, op.epoch, op.position, op.high_watermark};
  auto recorded = api::RecordPartitionSeals(*root_, *op.state, round);
  if (!recorded.ok()) {
    if (!recorded.status().IsLocked()) return recorded.status();
    Note(recorded.status().message());  // fenced: its next commit gives the partition up
    return Status::OK();
  }
  if (recorded_out) recorded_out->insert(recorded_out->end(), recorded->begin(), recorded->end());
  if (states_ != nullptr && !recorded->empty()) {
    const std::string source = SourceName(topic_, op.partition);
    auto cp = states_->Checkpoint(op.partition, source);
    if (!cp.ok()) Note("warning: " + cp.status().message() + " (" + source + " goes on; its previous checkpoint stays)");
  }
  return Status::OK();
}

Result<api::MergedPublishResult> MergedPublisher::Publish(Consumer* c) {
  if (partitions_ == 0) {
    SNAPSINK_ASSIGN_OR_RETURN(partitions_, c->PartitionCount());
  }
  api::MergedPublishOptions options;
  if (split_ != nullptr) {
    options.on_split_producer = [this](const std::string& producer, const std::vector<std::string>& sources) {
      return split_->FoundMerged(producer, sources);
    };
  }
  auto r = api::PublishMerged(*root_, topic_, partitions_, options);
  if (split_ != nullptr) {  // kWarn: said and recorded once each (RecordSplitProducer takes LOCK: after the publish)
    for (const SplitProducers::Found& f : split_->TakeFound()) {
      Note(f.note);
      Status s = api::RecordSplitProducer(*root_, f.producer, f.sources);
      if (!s.ok()) Note("warning: cannot record the split producer in the root: " + s.ToString());
    }
  }
  return r;
}

}  // namespace snapsink::kafka
