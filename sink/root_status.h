// GatherRootStatus: one consistent look at a root for operators, in the
// public api::RootStatus: its settings, watermark, generation, windows,
// sources, producers with gaps and disk use.
// `snapsink status` prints it, `snapsink metrics` exposes it (sink/metrics.h),
// and the numbers are the ones `inspect --json` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/id_dedup.h"
#include "engine/metric_kinds.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "snapsink/views.h"

namespace snapsink {

// Each window is in exactly one state (status, metrics): "open" (unsealed
// changes, the watermark has not passed its end), "closed_unsealed" (closed
// by the watermark, changes not sealed yet), "staged" (sealed, waiting for
// publish), "published" (the current generation holds its last version),
// "unpublished" (sealed before, not in the current generation: rolled back).
const char* WindowStateName(bool dirty, bool closed, bool staged, bool published);
using api::kWindowStates;
using api::kWindowStatesHelp;

// Whole seconds from at_ms (wall clock) to now, 0 when at_ms is ahead:
// for display only (status, metrics), never written anywhere.
uint64_t ProgressAgeSeconds(int64_t at_ms);

using api::DirUsage;  // the public records (include/snapsink/views.h)
using api::RootStatus;

// A declared metric as the public record holds it: a quantiles spec's
// parameter is its accuracy, a distinct spec's its precision.
api::MetricKindInfo PublicKindInfo(const std::string& metric, const MetricSpec& spec);

// Reads status in one read transaction of the live state, CURRENT and its
// manifest, and the sizes of the root's files, into the public record
// (ReadOnlySink::GetStatus returns it; status --json and the metrics read it).
Status GatherRootStatus(Root* root, RootStatus* out);

// What `snapsink status --json` prints and GET /v1/status returns: one JSON
// object and a newline; path is the root as given, config its configuration.
std::string RootStatusJson(const std::string& path, const RootConfig& config, const RootStatus& s);

}  // namespace snapsink
