// `snapsink upgrade ROOT [--dry-run]`: converts, in place, a root written by
// an earlier build (state format 1 or 2; docs/FORMAT.md "Old roots") to the
// format this build writes, keeping every published generation: the rows a
// query of any generation gives are the same after as before.
//
// First it reads everything it will convert (every row of every old data
// file against its manifest, every generation manifest's links), so that
// damage stops it (Corruption, exit 10) before it changes anything. Then the
// steps, in this order (each a crash point, each idempotent, so that a rerun
// after a crash anywhere finishes the work and leaves the same bytes as an
// upgrade that never stopped):
//   1. upgrade.snapshot   every snapshot (published or staged) whose
//      manifest is version 1: its rows are read from the old data file and
//      written into a new one (data.tmp, synced, renamed over data), then
//      the version 2 manifest replaces the old one (WriteFileAtomic). A
//      crash between the two leaves a new data file beside an old manifest;
//      the rerun reads the rows from the new file (the bytes depend only on
//      the rows, so they come out the same).
//   2. upgrade.manifest   every generation manifest of version 1 is
//      rewritten as version 3: its parts (crash point upgrade.part_written
//      after each), then its top manifest (64-bit versions, rollback_of 0,
//      each window's manifest_xxh64 of its new snapshot manifest). The old
//      links are checked before step 1 changes anything. A version 2
//      manifest (windows inline) is read as it is by this build and needs
//      no conversion: the next publish writes parts.
//   3. upgrade.current    CURRENT "<G>\n" becomes "<G> <xxh64>\n".
//   4. upgrade.backfill_state   each backfill state environment, then the
//      root's own state in one LMDB transaction (the commit point): window
//      records and seal keys widened from 32-bit to 64-bit versions (told
//      apart by their sizes, so a rerun widens only what is left), CURRENT's
//      checksum recorded, and the format set to kProducerTimesFormat. Until that
//      commit every command but upgrade refuses the root, naming upgrade.
//
// The upgrade holds LOCK; a dry run takes no lock, opens LMDB read-only and
// writes nothing: it reports the same actions it would take.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/status.h"
#include "snapsink/options.h"

namespace snapsink {

using api::UpgradeResult;  // format_after: kProducerTimesFormat; actions: done, or (dry run) to do

Status UpgradeRoot(Env* env, const std::string& root, bool dry_run, UpgradeResult* report);

}  // namespace snapsink
