// What a backfill does to each window it rebuilds: the live totals it
// replaces and the totals it brings (`backfill --dry-run`, and the table a
// real backfill prints after it publishes).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "engine/root.h"
#include "engine/state_codec.h"
#include "publish/backfill.h"

namespace snapsink {

// Ledger totals of each of windows in store (absent windows: zeros).
Status WindowTotals(Store* store, const std::set<int64_t>& windows, std::map<int64_t, Aggregate>* out);

// One WindowImpact per window, current from live, after from backfill.
Status CompareTotals(Store* live, Store* backfill, const std::set<int64_t>& windows, std::vector<WindowImpact>* out);

// The dry run: reads the inputs once, applies the exactly-once rule (SPEC 2)
// in memory as a backfill from scratch would (a gap is accepted), and reports
// per window within [from, to] the live totals and the totals version V would
// publish. Checks the version rule as the real backfill does. Writes nothing.
// (Unlike the real run it does not reject an event whose sum would overflow.)
Status PlanBackfill(Root* root, const BackfillOptions& options, bool* already_done, std::vector<WindowImpact>* out);

}  // namespace snapsink
