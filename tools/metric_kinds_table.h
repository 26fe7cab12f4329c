// The declared metric kinds as a table: what `metric ROOT list` and
// `inspect ROOT metrics` print (metric, kind, and a quantiles metric's
// accuracy as a fraction, the column only when one is listed; a distinct
// metric its precision, likewise).
#pragma once

#include <string>
#include <vector>

#include "snapsink/utilities/table.h"
#include "snapsink/views.h"

namespace snapsink {

api::Table MetricKindsTable(const std::vector<api::MetricKindInfo>& kinds);

// 10000 ppm -> "0.01".
std::string AccuracyText(uint32_t ppm);

}  // namespace snapsink
