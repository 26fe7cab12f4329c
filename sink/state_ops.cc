// The operator commands of the read side that write live state: accepting
// gaps (engine/gap_acceptance.h) and retiring idle producers
// (engine/producer_retention.h); and the public time and range helpers.
#include <chrono>

#include "engine/crash_point.h"
#include "engine/gap_acceptance.h"
#include "engine/hyperloglog.h"
#include "engine/metric_kinds.h"
#include "engine/producer_retention.h"
#include "engine/source_gap_acceptance.h"
#include "engine/timeutil.h"
#include "sink/sink_impl.h"

namespace snapsink::api {

Result<AcceptedGapInfo> Sink::AcceptGaps(const GapAcceptance& a) {
  if (a.range.first > a.range.last || a.range.last == UINT64_MAX) {
    return Status::InvalidArgument("gap range " + std::to_string(a.range.first) + ".." +
                                   std::to_string(a.range.last) + ": expected LO <= HI < 2^64-1");
  }
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "AcceptGaps"));
  AcceptedGap rec;
  rec.producer = a.producer;
  if (a.epoch) {
    rec.any_epoch = false;
    rec.epoch = *a.epoch;
  }
  rec.range = Gap{a.range.first, a.range.last + 1};
  // Wall clock: for the audit record only, never for an output's identity.
  rec.accepted_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(impl_->root->store()->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(RecordAcceptedGap(txn.get(), rec));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  return AcceptedGapInfo{a, rec.accepted_at_ms};
}

static_assert(static_cast<int>(MetricKind::kQuantiles) == static_cast<int>(snapsink::MetricKind::kQuantiles) &&
              static_cast<int>(MetricKind::kDistinct) == static_cast<int>(snapsink::MetricKind::kDistinct) &&
              static_cast<int>(MetricKind::kMinMax) == static_cast<int>(snapsink::MetricKind::kMinMax));

Status Sink::SetMetricKind(const std::string& metric, MetricKind kind, uint32_t accuracy_ppm, int precision) {
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "SetMetricKind"));
  if (kind == MetricKind::kDistinct && (precision < 0 || precision > 255)) {
    return Status::InvalidArgument("distinct precision of " + std::to_string(precision) + ": expected " +
                                   std::to_string(HyperLogLog::kMinPrecision) + ".." +
                                   std::to_string(HyperLogLog::kMaxPrecision));
  }
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(impl_->root->store()->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(snapsink::SetMetricKind(
      txn.get(), metric,
      snapsink::MetricSpec{static_cast<snapsink::MetricKind>(kind),
                           kind == MetricKind::kDistinct ? static_cast<uint32_t>(precision) : accuracy_ppm}));
  MaybeCrash("metric.before_commit");
  return txn->Commit();
}

Result<AcceptedSourceGapInfo> Sink::AcceptSourceGap(const SourceGapAcceptance& a) {
  if (a.source.empty()) return Status::InvalidArgument("SourceGapAcceptance::source is empty: name the source");
  if (a.first > a.last || a.last == UINT64_MAX) {
    return Status::InvalidArgument("source range " + std::to_string(a.first) + ".." + std::to_string(a.last) +
                                   ": expected LO <= HI < 2^64-1");
  }
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "AcceptSourceGap"));
  AcceptedSourceGap rec{a.source, a.first, a.last, 0};
  // Wall clock: for the audit record only, never for an output's identity.
  rec.accepted_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(impl_->root->store()->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(RecordAcceptedSourceGap(txn.get(), rec));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  return AcceptedSourceGapInfo{a, rec.accepted_at_ms};
}

Result<std::vector<std::string>> Sink::RetireIdleProducers(int64_t idle_ms) {
  if (idle_ms <= 0) return OutOfRange("idle_ms", idle_ms, "must be greater than zero");
  SNAPSINK_RETURN_IF_ERROR(CheckCanWrite(*impl_, "RetireIdleProducers"));
  Root* root = impl_->root.get();
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginWrite(&txn));
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
  std::optional<int64_t> newest;
  if (max_ts) newest = static_cast<int64_t>(*max_ts);
  std::vector<std::string> retired;
  SNAPSINK_RETURN_IF_ERROR(snapsink::RetireIdleProducers(
      txn.get(), RetentionCutoff(newest, root->config().lateness_ms, idle_ms), &retired));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  return retired;
}

static_assert(kMinTimeMs == kMinTimestampMs && kMaxTimeMs == kMaxTimestampMs);

int64_t WindowStart(int64_t ms, int64_t window_size_ms) { return snapsink::WindowStart(ms, window_size_ms); }

}  // namespace snapsink::api
