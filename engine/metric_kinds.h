// The kind of each metric of a root: what its aggregates hold.
//
// A metric never declared is kSum (count, exact sum, events), as every
// metric was before kinds: a root that declares none reads, ingests and
// seals exactly as before. kMinMax also keeps the least and greatest value
// applied (Aggregate::has_range); a value cannot be taken back out of a
// minimum, so a retract of a minmax metric is a bad line.
//
// Stored in Table::kMeta, one record per declared metric:
//   "metric_kind/" + metric -> u8 version (1) | u8 kind
// Declaring one of another kind than sum raises the state to
// kMetricKindsFormat (engine/root.h).
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

enum class MetricKind : uint8_t { kSum = 0, kMinMax = 1 };  // stored; do not change

// "sum", "minmax".
const char* MetricKindName(MetricKind kind);
// The kind named `name`; nullopt for an unknown name.
std::optional<MetricKind> ParseMetricKind(std::string_view name);

// Every declared metric and its kind, by metric (byte order).
using MetricKinds = std::map<std::string, MetricKind, std::less<>>;
Status ReadMetricKinds(Txn* txn, MetricKinds* out);

// Declares `metric` of `kind` in txn. Refused (FailedPrecondition, naming
// a window and what to do) when the kind differs from the metric's current
// one and a window of the state still holds the metric: its aggregates were
// made under the old kind. Setting the kind it already has is a no-op.
Status SetMetricKind(Txn* txn, std::string_view metric, MetricKind kind);

// A metric's kind in `kinds` (kSum when undeclared).
inline MetricKind KindOf(const MetricKinds& kinds, std::string_view metric) {
  const auto it = kinds.find(metric);
  return it == kinds.end() ? MetricKind::kSum : it->second;
}

}  // namespace snapsink
