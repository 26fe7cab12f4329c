// Publishing: the reconciliation gate and the atomic switch of CURRENT (SPEC 4).
//
// For every pending snapshot, ReconcileSnapshot checks the files against the
// seal record: every checksum, and per metric the events, count and sum of
// the rows against the ledger as of the seal, and the row count. Only when
// all of them hold does PublishSnapshots move each snapshot directory from
// staging/ to snapshots/ by rename, write manifests/<G> (synced, naming every
// window's current version), replace CURRENT by temp file, fsync, rename and
// fsync of the directory, and finally record the generation in LMDB.
//
// Every step is repeatable: a rerun after a crash anywhere finds snapshots
// already moved, rewrites the same manifest bytes under the same generation
// number (LMDB still holds the old numbers until the last step), and leaves
// the root as a run without the crash would.
//
// REQUIRES: the caller holds the root's LOCK.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "publish/generation_manifest.h"
#include "publish/snapshot_manifest.h"

namespace snapsink {

struct PendingSnapshot {
  int64_t window_ms = 0;
  uint32_t version = 0;
  SealRecord seal;
};

// The staged (sealed, not yet published) snapshots recorded in store.
Status StagedSeals(Store* store, std::vector<PendingSnapshot>* out);

// Checks the snapshot in dir against p (see above). Reconcile on a count
// mismatch, Corruption on a damaged file. *manifest_xxh64 receives the
// XXH64 of its manifest.json.
Status ReconcileSnapshot(Env* env, const std::string& dir, const PendingSnapshot& p, uint64_t* manifest_xxh64);

struct PublishResult {
  uint64_t generation = 0;  // 0: nothing was pending
  size_t windows = 0;
};

// Reconciles and publishes pending in one generation. bookkeeping runs in the
// final LMDB write transaction of live (it marks the seals published).
Status PublishSnapshots(Env* env, const std::string& root, Store* live, const std::vector<PendingSnapshot>& pending,
                        const std::function<Status(Txn*)>& bookkeeping, PublishResult* result);

// Publishes everything staged in live state: StagedSeals + PublishSnapshots.
Status PublishStaged(Env* env, const std::string& root, Store* live, PublishResult* result);

// The current generation as LMDB records it (0 = none) and its manifest.
Status ReadGenerationManifest(Env* env, const std::string& root, uint64_t generation, GenerationManifest* out);

}  // namespace snapsink
