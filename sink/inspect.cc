// The read-side views of ReadOnlySink: each opens one read transaction (or
// reads the published files) and calls the one implementation of the view
// in publish/views.h.
#include "engine/metric_kinds.h"
#include "publish/metrics.h"
#include "engine/watermark.h"
#include "publish/root_status.h"
#include "publish/views.h"
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
    for (const auto& [metric, kind] : kinds) {
      out->push_back({metric, kind == snapsink::MetricKind::kMinMax ? MetricKind::kMinMax : MetricKind::kSum});
    }
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
  snapsink::GatheredStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(impl_->root.get(), &s));
  return ToPublic(s);
}

RootStatus ToPublic(const snapsink::GatheredStatus& s) {
  RootStatus out;
  out.settings = ToPublic(s.config);  // every field: the same function as settings()
  out.max_event_ts = s.max_event_ts;
  out.watermark = s.watermark;
  out.watermark_rule = WatermarkRule(s.config, s.held_event_ts, s.held_producer);
  out.oldest_kept_window = s.oldest_kept_window;
  out.current_generation = s.current_generation;
  out.published_at_ms = s.published_at_ms;
  out.published_windows = s.published_windows;
  for (const snapsink::GatheredWindow& w : s.windows) {
    out.windows.push_back({w.start_ms, static_cast<uint64_t>(w.state.last_version), w.state.dirty, w.closed,
                           w.closes_at_ms, w.totals.events, w.totals.count, w.staged, w.published,
                           snapsink::WindowStateName(w)});
  }
  for (const snapsink::GatheredSource& src : s.sources) {
    out.sources.push_back(
        {ToSourceView(src.name, src.state, src.ids), src.file_size, src.path, src.backfill, src.progress_at_ms});
  }
  out.producers = s.producers;
  for (const snapsink::GatheredGaps& p : s.gaps) {
    ProducerGaps g{p.producer, p.epoch, {}};
    for (const Gap& r : p.gaps) g.missing.push_back({r.lo, r.hi - 1});
    out.gaps.push_back(std::move(g));
  }
  out.retired_producers = s.retired_producers;
  for (const auto& [producer, sources] : s.split_producers) out.split_producers.push_back({producer, sources});
  out.ids = ToIdsInfo(s.ids, s.config.id_horizon_ms);
  out.disk = s.disk;
  out.state_bytes = s.state_bytes;
  return out;
}

Result<std::string> ReadOnlySink::StatusJson() const {
  snapsink::GatheredStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(impl_->root.get(), &s));
  std::string json = RootStatusJson(path(), s);
  SNAPSINK_ASSIGN_OR_RETURN(auto parts, PartitionOwners(*this));
  if (!parts.empty() && json.size() >= 2 && json.compare(json.size() - 2, 2, "}\n") == 0) {
    json.resize(json.size() - 2);
    json += "," + PartitionOwnersJson(parts) + "}\n";
  }
  return json;
}

Result<std::string> ReadOnlySink::MetricsText() const {
  snapsink::GatheredStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(impl_->root.get(), &s));
  prometheus::Registry registry;
  AddRootMetrics(s, &registry);
  SNAPSINK_ASSIGN_OR_RETURN(auto parts, PartitionOwners(*this));
  AddPartitionOwnerMetrics(parts, &registry);
  return SerializeMetrics(registry);
}

}  // namespace snapsink::api
