// Every source of a state, with its id-dedup counts: the scan the views
// (sink/root_views.h) and a backfill's publish share.
#pragma once

#include <functional>
#include <string>

#include "engine/id_dedup.h"
#include "engine/state_codec.h"
#include "engine/status.h"

namespace snapsink {

class Txn;

// Calls fn(name, state, id-dedup counts) for every source, by name; long
// names too (engine/long_key.h).
Status ScanSources(Txn* txn,
                   const std::function<void(const std::string&, const SourceState&, const SourceIdCounts&)>& fn);

}  // namespace snapsink
