// Operations on published state: verify and gc.
//
// Verify re-checks every kept generation: its manifest, every snapshot it
// names (manifest hash, every data byte, row sums against the manifest) and
// the reconciliation of each snapshot with its seal record in LMDB. It
// reports every problem, one line each, and returns Corruption if any. CURRENT
// must hash-match the manifest it names and name the generation LMDB records
// (or, after a crash between a commit and its rename, with CURRENT.tmp naming
// the recorded one, the previous one).
//
// CollectGarbage first removes the *.tmp files a crash left (root_files.h),
// then generation manifests that are neither among the
// `keep` newest nor current nor pinned by a Reader (in any process: a pinned
// manifest cannot be locked exclusively), then every published snapshot that
// no remaining generation names and no staged seal needs, and last the
// partitions' seal records a newer accepted seal replaced
// and those of windows beyond retention (RemoveDeadSealRecords,
// partitions/partition_seals.h).
//
// Rollback lives in publish/rollback.h.
//
// With live == nullptr (a root in a bucket read without the writer's
// state), Verify checks each snapshot against its own manifest and CURRENT
// against the manifest it names, and reconciles nothing with seal records.
//
// REQUIRES for CollectGarbage: the caller holds the root's LOCK.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/store.h"
#include "snapsink/options.h"

namespace snapsink {

Status Verify(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
              size_t* snapshots_checked);
// The same, beside a running writer: every generation is pinned while it is
// checked; one that gc removes meanwhile is skipped, and a backfill whose
// publish stopped before its live bookkeeping is not damage; each such fact
// is one line of *notes, never a problem. Reads only: works with a Store
// opened read-only.
Status Verify(Env* env, const std::string& root, Store* live, std::vector<std::string>* problems,
              std::vector<std::string>* notes, size_t* snapshots_checked);

using api::GcResult;  // the public record (include/snapsink/options.h), filled here directly
Status CollectGarbage(Env* env, const std::string& root, Store* live, uint64_t keep, GcResult* result);

// The generation numbers in manifests/, ascending.
Status ListGenerations(Env* env, const std::string& root, std::vector<uint64_t>* out);

}  // namespace snapsink
