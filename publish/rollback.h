// Rollback (SPEC 10): a new generation that copies generation G, and a
// rewind of the engine's window state to match it.
//
// COMMIT POINT: one LMDB commit (CommitGeneration, publish/publisher.h). In it
// the new generation N = last + 1 (windows and versions exactly G's, parent
// the current generation, rollback_of G) becomes current, and every window's
// state becomes what G holds:
//   - a window G does not have becomes empty and unpublished: its aggregates
//     and ledger are removed, its staged seals superseded; its last_version
//     stays, so a later seal never reuses a version;
//   - a window whose version differs from the current generation's, or that
//     has changes since (dirty, or staged seals), gets its aggregates and
//     ledger rebuilt from G's snapshot rows; a later live event lands on top
//     of G's numbers and seals as last_version + 1;
//   - any other window is left as it is.
// Windows of G that retention has dropped (before meta::kRetainedFrom) are
// left out of N and listed in beyond_retention: their state is gone and
// their versions must not be published again.
// Producer and source positions are not rewound. Before the commit only
// manifests/<N> and CURRENT.tmp are written, which nothing reads: a failure
// there changes nothing, and running the same rollback again reuses them and
// finishes. A rollback to G when the current generation already has G's
// windows and no window differs has nothing to do (so a rerun after the
// commit changes nothing more).
//
// Crash points: rollback.before_current, rollback.after_commit,
// rollback.after_current.
//
// REQUIRES: the caller holds the root's LOCK.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "snapsink/options.h"

namespace snapsink {

// The public records (include/snapsink/options.h), filled here directly:
// per window, what a rollback takes out of (or puts back into) the live view
// (version_before: in the current generation; version_after: in G), and G's
// windows left out because retention dropped them before (SPEC 13).
using api::RollbackChange;
using api::RollbackResult;

// dry_run: computes the changes and returns without writing anything.
Status Rollback(Env* env, const std::string& root, Store* live, uint64_t generation, bool dry_run,
                RollbackResult* result);

}  // namespace snapsink
