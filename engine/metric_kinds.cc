#include "engine/metric_kinds.h"

#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"

namespace snapsink {
namespace {

constexpr char kKeyPrefix[] = "metric_kind/";
constexpr char kRecordVersion = 1;

std::string KindKey(std::string_view metric) { return kKeyPrefix + std::string(metric); }

}  // namespace

const char* MetricKindName(MetricKind kind) {
  switch (kind) {
    case MetricKind::kSum:
      return "sum";
    case MetricKind::kMinMax:
      return "minmax";
  }
  return "?";
}

std::optional<MetricKind> ParseMetricKind(std::string_view name) {
  if (name == "sum") return MetricKind::kSum;
  if (name == "minmax") return MetricKind::kMinMax;
  return std::nullopt;
}

Status ReadMetricKinds(Txn* txn, MetricKinds* out) {
  out->clear();
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kMeta, kKeyPrefix, [&](std::string_view k, std::string_view v) {
    if (v.size() != 2 || v[0] != kRecordVersion || static_cast<uint8_t>(v[1]) > uint8_t(MetricKind::kMinMax)) {
      st = Status::Corruption("malformed metric kind record in state");
      return false;
    }
    out->emplace(std::string(k.substr(sizeof(kKeyPrefix) - 1)), static_cast<MetricKind>(v[1]));
    return true;
  }));
  return st;
}

Status SetMetricKind(Txn* txn, std::string_view metric, MetricKind kind) {
  if (metric.empty() || metric.size() > 128) {
    return Status::InvalidArgument("metric name of " + std::to_string(metric.size()) + " bytes: expected 1..128");
  }
  MetricKinds kinds;
  SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(txn, &kinds));
  const MetricKind old = KindOf(kinds, metric);
  if (old == kind && kinds.count(metric) == 1) return Status::OK();
  if (old != kind) {
    // Any window of the state that holds the metric has it in its ledger.
    std::optional<int64_t> held;
    uint64_t windows = 0;
    std::string name;
    Status st;
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kLedger, "", [&](std::string_view k, std::string_view) {
      std::string_view rest;
      if (k.size() < 8 || !codec::SplitEscapedMetric(k.substr(8), &name, &rest)) {
        st = Status::Corruption("malformed ledger key in state");
        return false;
      }
      if (name == metric) {
        if (!held) held = codec::DecodeWindowKey(k);
        ++windows;
      }
      return true;
    }));
    SNAPSINK_RETURN_IF_ERROR(st);
    if (held) {
      return Status::InvalidArgument(
          "metric " + std::string(metric) + " is " + MetricKindName(old) + " and window " + FormatIso(*held) +
          (windows > 1 ? " (and " + std::to_string(windows - 1) + " more)" : std::string()) +
          " still holds its aggregates: its kind cannot change to " + MetricKindName(kind) +
          " until those windows leave the state (retention: RootSettings::retain_ms), or send the new kind's events under a "
          "new metric name");
    }
  }
  std::string v;
  v.push_back(kRecordVersion);
  v.push_back(static_cast<char>(kind));
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, KindKey(metric), v));
  // A sum declaration changes no record or file: an older build still reads the root.
  return kind == MetricKind::kSum ? Status::OK() : Root::RaiseFormatTo(txn, kMetricKindsFormat);
}

}  // namespace snapsink
