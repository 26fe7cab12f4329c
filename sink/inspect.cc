// The read-side views of ReadOnlySink: each opens one read transaction (or
// reads the published files) and calls the one implementation of the view
// in sink/root_views.h.
#include "engine/env_bucket_root.h"
#include "engine/metric_kinds.h"
#include "sink/metrics.h"
#include "engine/watermark.h"
#include "sink/root_status.h"
#include "sink/root_views.h"
#include "sink/partition_owners.h"
#include "sink/sink_impl.h"

namespace snapsink::api {
namespace {

// Runs fn(root, txn) in one read transaction of root's store.
template <typename Fn>
Status InReadTxn(Root* root, Fn&& fn) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  return fn(txn.get());
}

template <typename T, typename Fn>
Result<std::vector<T>> LiveView(Root* root, Fn&& fn) {
  std::vector<T> out;
  SNAPSINK_RETURN_IF_ERROR(InReadTxn(root, [&](Txn* txn) { return fn(txn, &out); }));
  return out;
}

}  // namespace

Result<std::vector<ProducerInfo>> ReadOnlySink::Producers() const {
  return LiveView<ProducerInfo>(impl_->root.get(), ProducerInfos);
}

Result<std::vector<GapInfo>> ReadOnlySink::Gaps() const { return LiveView<GapInfo>(impl_->root.get(), GapInfos); }

Result<std::vector<AcceptedGapInfo>> ReadOnlySink::AcceptedGaps() const {
  return LiveView<AcceptedGapInfo>(impl_->root.get(), AcceptedGapInfos);
}

Result<std::vector<MetricKindInfo>> ReadOnlySink::MetricKinds() const {
  return LiveView<MetricKindInfo>(impl_->root.get(), [](Txn* txn, std::vector<MetricKindInfo>* out) {
    snapsink::MetricKinds kinds;
    SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(txn, &kinds));
    for (const auto& [metric, spec] : kinds) out->push_back(PublicKindInfo(metric, spec));
    return Status::OK();
  });
}

Result<std::vector<AcceptedSourceGapInfo>> ReadOnlySink::AcceptedSourceGaps() const {
  return LiveView<AcceptedSourceGapInfo>(impl_->root.get(), AcceptedSourceGapInfos);
}

Result<std::vector<SourceView>> ReadOnlySink::Sources() const {
  return LiveView<SourceView>(impl_->root.get(), SourceViews);
}

Result<IdsInfo> ReadOnlySink::Ids() const {
  Root* root = impl_->root.get();
  IdsInfo out;
  SNAPSINK_RETURN_IF_ERROR(InReadTxn(root, [&](Txn* txn) { return IdsView(*root, txn, &out); }));
  return out;
}

Result<std::vector<WindowInfo>> ReadOnlySink::Windows() const {
  Root* root = impl_->root.get();
  return LiveView<WindowInfo>(root, [root](Txn* txn, std::vector<WindowInfo>* out) {
    return WindowInfos(*root, txn, out);
  });
}

Result<std::vector<GenerationInfo>> ReadOnlySink::Generations() const {
  std::vector<GenerationInfo> out;
  SNAPSINK_RETURN_IF_ERROR(ListPublished(impl_->root->env(), path(), &out, nullptr));
  return out;
}

Result<std::vector<SnapshotInfo>> ReadOnlySink::Snapshots() const {
  std::vector<SnapshotInfo> out;
  SNAPSINK_RETURN_IF_ERROR(ListPublished(impl_->root->env(), path(), nullptr, &out));
  return out;
}

Result<RootStatus> ReadOnlySink::GetStatus() const {
  RootStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(impl_->root.get(), &s));
  return s;
}

Result<std::string> ReadOnlySink::StatusJson() const {
  RootStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(impl_->root.get(), &s));
  std::string json = RootStatusJson(path(), impl_->root->config(), s);
  SNAPSINK_ASSIGN_OR_RETURN(auto parts, PartitionOwners(*this));
  if (!parts.empty() && json.size() >= 2 && json.compare(json.size() - 2, 2, "}\n") == 0) {
    json.resize(json.size() - 2);
    json += "," + PartitionOwnersJson(parts) + "}\n";
  }
  return json;
}

Result<std::string> ReadOnlySink::MetricsText() const {
  RootStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(impl_->root.get(), &s));
  prometheus::Registry registry;
  AddRootMetrics(s, &registry);
  SNAPSINK_ASSIGN_OR_RETURN(auto parts, PartitionOwners(*this));
  AddPartitionOwnerMetrics(parts, &registry);
  if (const ObjectCache* cache = CacheOfRoot(path())) AddCacheMetrics(*cache, &registry);
  return SerializeMetrics(registry);
}

}  // namespace snapsink::api
