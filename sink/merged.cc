// The merged publish of a topic's partitions (SPEC 12) on the public API:
// publish/partition_seals.h does the work.
#include "publish/partition_seals.h"
#include "sink/sink_impl.h"

namespace snapsink::api {

Result<std::vector<std::pair<int64_t, uint64_t>>> ReadOnlySink::RecordPartitionSeals(Sink* state,
                                                                                     const PartitionRound& round) {
  if (state == nullptr) return Status::InvalidArgument("RecordPartitionSeals: no partition state");
  const ReadOnlySink* s = state;
  snapsink::PartitionRound r{round.topic, round.partition, round.epoch, round.position, round.high_watermark};
  std::vector<std::pair<int64_t, uint64_t>> recorded;
  SNAPSINK_RETURN_IF_ERROR(snapsink::RecordPartitionSeals(impl_->root->env(), impl_->root->path(),
                                                          s->impl_->root.get(), r, &recorded));
  return recorded;
}

Result<MergedPublishResult> ReadOnlySink::PublishMerged(const std::string& topic, int32_t partitions) {
  SNAPSINK_RETURN_IF_ERROR(ReopenWritableHandle(impl_.get()));
  if (partitions <= 0) return Status::InvalidArgument("PublishMerged: the topic has no partitions");
  snapsink::MergedPublishResult r;
  SNAPSINK_RETURN_IF_ERROR(snapsink::PublishMerged(impl_->root.get(), topic, partitions, &r));
  return MergedPublishResult{r.generation, std::move(r.windows), std::move(r.missing)};
}

}  // namespace snapsink::api
