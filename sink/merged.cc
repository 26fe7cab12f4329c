// The merged publish of a topic's partitions (SPEC 12) on the public API:
// publish/partition_seals.h does the work.
#include "snapsink/merged.h"

#include "publish/partition_seals.h"
#include "sink/sink_impl.h"

namespace snapsink::api {

Result<std::vector<std::pair<int64_t, uint64_t>>> RecordPartitionSeals(ReadOnlySink* root, Sink* state,
                                                                     const PartitionRound& round) {
  if (root == nullptr || state == nullptr) return Status::InvalidArgument("RecordPartitionSeals: no root or state");
  SinkImpl* r = SinkAccess::Get(root);
  std::vector<std::pair<int64_t, uint64_t>> recorded;
  SNAPSINK_RETURN_IF_ERROR(snapsink::RecordPartitionSeals(r->root->env(), r->root->path(),
                                                          SinkAccess::Get(state)->root.get(), round, &recorded));
  return recorded;
}

Result<MergedPublishResult> PublishMerged(ReadOnlySink* root, const std::string& topic, int32_t partitions) {
  if (root == nullptr) return Status::InvalidArgument("PublishMerged: no root");
  if (partitions <= 0) return Status::InvalidArgument("PublishMerged: the topic has no partitions");
  SinkImpl* impl = SinkAccess::Get(root);
  SNAPSINK_RETURN_IF_ERROR(ReopenWritableHandle(impl));
  MergedPublishResult r;
  SNAPSINK_RETURN_IF_ERROR(snapsink::PublishMerged(impl->root.get(), topic, partitions, &r));
  return r;
}

}  // namespace snapsink::api
