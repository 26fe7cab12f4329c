// Backfill (SPEC 9): rebuild historical windows from archived input into a
// named version V, apart from live state, and publish them in one switch.
//
// A backfill has its own LMDB environment, state/backfill-v<V>/ (producers,
// offsets, aggregates, ledger, seals), so archived events that live ingest
// already saw are not taken for duplicates and live state is not disturbed.
// Steps, each repeatable after a crash:
//   1. If live state records backfill V as published: nothing to do.
//   1b. Input "-": standard input is copied to state/backfill-v<V>/stdin.spool
//      (synced), then stdin.spool.done records its length and XXH64; from
//      here on the spool is read like a file (source name "-" or --source).
//      A rerun that finds the marker reads its standard input to the end and
//      compares length and hash: the same input reuses the spool (and the
//      backfill state's offsets in it); a different one is InvalidArgument,
//      nothing changed (pipe the same input, or remove state/backfill-v<V>/
//      to start that backfill over). A spool without its marker was cut by
//      a crash before anything read it, and is written again.
//   2. A parse-only pass over the inputs finds the windows they touch within
//      [from, to]; V must exceed every version those windows have in live
//      state, else InvalidArgument before any work.
//   3. Ingest the inputs into the backfill state (resuming from its offsets),
//      without the root's LOCK: live ingest goes on meanwhile.
//   4. Under the root's LOCK: check the version rule again, seal every
//      backfilled window as v<V>, reconcile and publish them all in one
//      generation. In the same LMDB transaction that records the generation,
//      each backfilled window's aggregates and ledger replace the live ones
//      (the backfill becomes the window's base: later live events land on top
//      and seal as V+1), and backfill V is recorded as done.
//   5. The backfill's environment is removed.
// Only step 4's publish marks V as used (SPEC 9): a backfill that fails or
// crashes before it, or finds no window to publish, leaves V free.
// Live events applied to a backfilled window between step 2 and step 4 are
// superseded by the backfill (the archive is taken as the truth for it).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/root.h"
#include "publish/seal.h"
#include "snapsink/options.h"

namespace snapsink {

// The public records (include/snapsink/options.h), used here directly.
// RunBackfill ignores options.dry_run (PlanBackfill, publish/backfill_impact.h,
// is the dry run) and leaves result->rejects_files to its caller; on_progress
// reports step 3. result->impact is per published window, taken just before
// the switch.
using api::BackfillOptions;
using api::BackfillResult;
using api::WindowImpact;

// REQUIRES: root was opened without the writer lock (writer=false); the
// backfill takes LOCK itself for step 4 only.
Status RunBackfill(Root* root, const BackfillOptions& options, BackfillResult* result);

// The name a published backfill's source keeps in live state ("backfill v2:
// archive"), and whether a source name is one (status looks up no file for it).
inline constexpr char kBackfillSourcePrefix[] = "backfill v";
inline std::string BackfillSourceName(uint64_t version, const std::string& source) {
  return kBackfillSourcePrefix + std::to_string(version) + ": " + source;
}
bool IsBackfillSourceName(std::string_view name);

}  // namespace snapsink
