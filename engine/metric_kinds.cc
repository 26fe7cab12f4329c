#include "engine/metric_kinds.h"

#include "engine/coding.h"
#include "engine/ddsketch.h"
#include "engine/hyperloglog.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"

namespace snapsink {
namespace {

constexpr char kKeyPrefix[] = "metric_kind/";
constexpr char kRecordVersion = 1;

std::string KindKey(std::string_view metric) { return kKeyPrefix + std::string(metric); }

// 10000 ppm -> "0.01".
std::string FormatAccuracy(uint32_t ppm) {
  std::string s = std::to_string(ppm / 1000000) + "." + std::to_string(1000000 + ppm % 1000000).substr(1);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// "quantiles (accuracy 0.01)", "distinct (precision 14)", "minmax".
std::string SpecName(const MetricSpec& spec) {
  std::string s = MetricKindName(spec.kind);
  if (spec.kind == MetricKind::kQuantiles) s += " (accuracy " + FormatAccuracy(spec.parameter) + ")";
  if (spec.kind == MetricKind::kDistinct) s += " (precision " + std::to_string(spec.parameter) + ")";
  return s;
}

// A kind record's value (version, kind, the kind's parameter) into *spec;
// false when it is not one this build writes.
bool DecodeSpec(std::string_view v, MetricSpec* spec) {
  if (v.size() < 2 || v[0] != kRecordVersion || static_cast<uint8_t>(v[1]) > uint8_t(MetricKind::kDistinct)) {
    return false;
  }
  spec->kind = static_cast<MetricKind>(v[1]);
  switch (spec->kind) {
    case MetricKind::kQuantiles:
      if (v.size() != 6) return false;
      spec->parameter = coding::DecodeFixed32(v.data() + 2);
      return DDSketch::ValidParameters(spec->parameter, DDSketch::kDefaultMaxBuckets);
    case MetricKind::kDistinct:
      spec->parameter = v.size() == 3 ? static_cast<uint8_t>(v[2]) : 0;
      return v.size() == 3 && HyperLogLog::ValidPrecision(static_cast<int>(spec->parameter));
    default:
      return v.size() == 2;
  }
}

}  // namespace

const char* MetricKindName(MetricKind kind) {
  switch (kind) {
    case MetricKind::kSum:
      return "sum";
    case MetricKind::kMinMax:
      return "minmax";
    case MetricKind::kQuantiles:
      return "quantiles";
    case MetricKind::kDistinct:
      return "distinct";
  }
  return "?";
}

std::optional<MetricKind> ParseMetricKind(std::string_view name) {
  if (name == "sum") return MetricKind::kSum;
  if (name == "minmax") return MetricKind::kMinMax;
  if (name == "quantiles") return MetricKind::kQuantiles;
  if (name == "distinct") return MetricKind::kDistinct;
  return std::nullopt;
}

Status ReadMetricKinds(Txn* txn, MetricKinds* out) {
  out->clear();
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kMeta, kKeyPrefix, [&](std::string_view k, std::string_view v) {
    MetricSpec spec;
    if (!DecodeSpec(v, &spec)) {
      st = Status::Corruption("malformed metric kind record in state");
      return false;
    }
    out->emplace(std::string(k.substr(sizeof(kKeyPrefix) - 1)), spec);
    return true;
  }));
  return st;
}

Status SetMetricKind(Txn* txn, std::string_view metric, MetricSpec spec) {
  if (metric.empty() || metric.size() > 128) {
    return Status::InvalidArgument("metric name of " + std::to_string(metric.size()) + " bytes: expected 1..128");
  }
  const MetricKind kind = spec.kind;
  if (kind == MetricKind::kDistinct) {
    if (spec.parameter == 0) {
      spec.parameter = HyperLogLog::kDefaultPrecision;
    } else if (spec.parameter > 255 || !HyperLogLog::ValidPrecision(static_cast<int>(spec.parameter))) {
      return Status::InvalidArgument("distinct precision of " + std::to_string(spec.parameter) + ": expected " +
                                     std::to_string(HyperLogLog::kMinPrecision) + ".." +
                                     std::to_string(HyperLogLog::kMaxPrecision));
    }
  } else if (kind != MetricKind::kQuantiles) {
    spec.parameter = 0;
  } else if (spec.parameter == 0) {
    spec.parameter = DDSketch::kDefaultAccuracyPpm;
  } else if (!DDSketch::ValidParameters(spec.parameter, DDSketch::kDefaultMaxBuckets)) {
    return Status::InvalidArgument("quantiles accuracy of " + FormatAccuracy(spec.parameter) + ": expected " +
                                   FormatAccuracy(DDSketch::kMinAccuracyPpm) + ".." +
                                   FormatAccuracy(DDSketch::kMaxAccuracyPpm));
  }
  MetricKinds kinds;
  SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(txn, &kinds));
  const MetricSpec old_spec = SpecOf(kinds, metric);
  if (old_spec == spec && kinds.count(metric) == 1) return Status::OK();
  if (!(old_spec == spec)) {
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
          "metric " + std::string(metric) + " is " + SpecName(old_spec) + " and window " + FormatIso(*held) +
          (windows > 1 ? " (and " + std::to_string(windows - 1) + " more)" : std::string()) +
          " still holds its aggregates: its kind cannot change to " + SpecName(spec) +
          " until those windows leave the state (retention: RootSettings::retain_ms), or send the new kind's events under a "
          "new metric name");
    }
  }
  std::string v;
  v.push_back(kRecordVersion);
  v.push_back(static_cast<char>(kind));
  if (kind == MetricKind::kQuantiles) coding::PutFixed32(&v, spec.parameter);
  if (kind == MetricKind::kDistinct) v.push_back(static_cast<char>(spec.parameter));
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kMeta, KindKey(metric), v));
  // A sum declaration changes no record or file: an older build still reads the root.
  if (kind == MetricKind::kSum) return Status::OK();
  return Root::RaiseFormatTo(txn, kind == MetricKind::kDistinct    ? kDistinctFormat
                                  : kind == MetricKind::kQuantiles ? kSketchFormat
                                                                   : kMetricKindsFormat);
}

}  // namespace snapsink
