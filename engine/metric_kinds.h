// The kind of each metric of a root: what its aggregates hold.
//
// A metric never declared is kSum (count, exact sum, events), as every
// metric was before kinds: a root that declares none reads, ingests and
// seals exactly as before. kMinMax also keeps the least and greatest value
// applied (Aggregate::has_range); a value cannot be taken back out of a
// minimum, so a retract of a minmax metric is a bad line. kQuantiles keeps
// the range of every value applied (added or retracted) and a DDSketch of
// the values (Aggregate::sketch, engine/ddsketch.h) of the declared
// accuracy; a retract takes its value's bucket down by one. kDistinct keeps
// the range of every value applied and a HyperLogLog of the events' items
// (Aggregate::sketch, engine/hyperloglog.h) of the declared precision; an
// item cannot be taken back out of it, so a retract is a bad line, as is an
// event of a distinct metric without a well-formed item.
//
// Stored in Table::kMeta, one record per declared metric:
//   "metric_kind/" + metric -> u8 version (1) | u8 kind
//                              [| u32 accuracy_ppm, little-endian: quantiles]
//                              [| u8 precision: distinct]
// Declaring one of another kind than sum raises the state to
// kMetricKindsFormat (engine/root.h), a quantiles one to kSketchFormat, a
// distinct one to kDistinctFormat.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "engine/status.h"
#include "engine/store.h"

namespace snapsink {

enum class MetricKind : uint8_t { kSum = 0, kMinMax = 1, kQuantiles = 2, kDistinct = 3 };  // stored; do not change

// A declared metric: its kind and the kind's parameter.
struct MetricSpec {
  MetricKind kind = MetricKind::kSum;
  // The kind's parameter: kQuantiles' relative accuracy in parts per million
  // (DDSketch), kDistinct's precision (HyperLogLog); 0 for the others.
  uint32_t parameter = 0;
  bool operator==(const MetricSpec&) const = default;
};

// "sum", "minmax", "quantiles", "distinct".
const char* MetricKindName(MetricKind kind);
// The kind named `name`; nullopt for an unknown name.
std::optional<MetricKind> ParseMetricKind(std::string_view name);

// Every declared metric and its kind, by metric (byte order).
using MetricKinds = std::map<std::string, MetricSpec, std::less<>>;
Status ReadMetricKinds(Txn* txn, MetricKinds* out);

// Declares `metric` of `spec` in txn. Refused (InvalidArgument, naming
// a window and what to do) when the kind or its accuracy differs from the
// metric's current one and a window of the state still holds the metric: its
// aggregates were made under the old kind. Setting the spec it already has is
// a no-op. A quantiles spec of parameter (accuracy) 0 takes
// DDSketch::kDefaultAccuracyPpm; one out of DDSketch's range is refused. A
// distinct spec of parameter (precision) 0 takes
// HyperLogLog::kDefaultPrecision; one out of its range is refused.
Status SetMetricKind(Txn* txn, std::string_view metric, MetricSpec spec);

// A metric's spec in `kinds` (kSum when undeclared).
inline MetricSpec SpecOf(const MetricKinds& kinds, std::string_view metric) {
  const auto it = kinds.find(metric);
  return it == kinds.end() ? MetricSpec{} : it->second;
}
inline MetricKind KindOf(const MetricKinds& kinds, std::string_view metric) { return SpecOf(kinds, metric).kind; }

}  // namespace snapsink
