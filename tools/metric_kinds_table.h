// The declared metric kinds as a table: what `metric ROOT list` and
// `inspect ROOT metrics` print (metric, kind, and a quantiles metric's
// accuracy as a fraction, the column only when one is listed; a distinct
// metric its precision, likewise); a kind's name, an accuracy and a
// precision as `metric set` and `init --metric` read them.
#pragma once

#include <string>
#include <vector>

#include "snapsink/utilities/table.h"
#include "snapsink/views.h"

namespace snapsink {

api::Table MetricKindsTable(const std::vector<api::MetricKindInfo>& kinds);

// 10000 ppm -> "0.01".
std::string AccuracyText(uint32_t ppm);
// "0.01" -> 10000 ppm: a decimal fraction of at most 6 places, in (0, 1).
bool ParseAccuracy(const std::string& text, uint32_t* ppm);
// "sum", "minmax", "quantiles", "distinct" (api::MetricKindName) -> the kind.
bool ParseKind(const std::string& text, api::MetricKind* kind);
// "4".."18" -> a distinct metric's precision.
bool ParsePrecision(const std::string& text, int* precision);

}  // namespace snapsink
