// The steps of RunBackfill (publish/backfill.h lists them), one function
// each; internal to backfill. Grouped by file: the backfill's own state
// (backfill_state.cc), step 1b's spool of standard input
// (backfill_spool.cc), steps 2 and 3 over the inputs (backfill_ingest.cc),
// step 4's seal, publish and adoption (backfill_publish.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/root.h"
#include "publish/backfill.h"

namespace snapsink::backfill_steps {

// --- The backfill's own state, state/backfill-v<V>/ (backfill_state.cc).

// Step 1: whether live state records backfill `version` as published.
Result<bool> IsDone(Store* live, uint64_t version);

// Takes the backfill's lock (one process per version), creating its dir.
Status LockBackfill(Env* env, const std::string& root, uint64_t version, std::unique_ptr<FileLock>* lock);

// Opens the backfill's LMDB environment, creating it whole if absent.
Status OpenBackfillStore(Env* env, const std::string& root, uint64_t version, std::unique_ptr<Store>* out);

// Step 5: removes the backfill's state and syncs state/.
Status RemoveBackfillState(Env* env, const std::string& root, uint64_t version);

// --- Step 1b (backfill_spool.cc). REQUIRES: the backfill's lock is held.

// Copies standard input to the spool, or checks it against one an earlier
// run finished.
Status SpoolStdin(Env* env, const std::string& root, uint64_t version);

// --- Steps 2 and 3 (backfill_ingest.cc).

// The options' own checks: the window range [*first, *last] they name
// (INT64_MIN/INT64_MAX when open), standard input at most once, a source
// name for exactly one input.
Status CheckOptions(const BackfillOptions& o, int64_t window_ms, int64_t* first, int64_t* last);

// V must exceed every version the windows have in live state.
Status CheckVersion(Store* live, const std::set<int64_t>& windows, uint64_t version);

// Step 2: the windows the inputs touch within [first, last], by a parse-only pass.
Status TouchedWindows(const std::vector<std::string>& files, int64_t window_ms, int64_t first, int64_t last,
                      std::set<int64_t>* out);

// Step 3: ingests inputs into the backfill's own state bf, adding the
// accounting to *result.
Status IngestInputs(Root* root, Store* bf, const BackfillOptions& o, const std::vector<std::string>& inputs,
                    int64_t first, int64_t last, BackfillResult* result);

// --- Step 4 (backfill_publish.cc). REQUIRES: the root's LOCK is held.

// Seals the backfill's windows as v<version> and publishes them, with those
// a crashed attempt already sealed, in one generation whose live commit
// adopts the backfill.
Status SealAndPublish(Root* root, Store* bf, uint64_t version, BackfillResult* result);

// A backfill found already published: finishes its publish and removes the
// backfill's state.
Status FinishDone(Root* root, uint64_t version, BackfillResult* result);

}  // namespace snapsink::backfill_steps
