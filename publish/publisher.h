// Publishing: the reconciliation gate and the atomic switch of CURRENT (SPEC 4, 10).
//
// COMMIT POINT: one LMDB commit. It records the new generation (number and
// the XXH64 of its manifest, publish/current_file.h) together with the
// command's bookkeeping (seals published; for a backfill its windows adopted;
// for a rollback the rewound windows). Everything before it only adds files
// no reader looks at; a failure there (a full disk, a crash) changes nothing
// a reader or a later command can see, and a rerun finishes the work.
//
// For every pending snapshot, ReconcileSnapshot checks the files against the
// seal record: every checksum, and per metric the events, count and sum of
// the rows against the ledger as of the seal, and the row count. Only when
// all of them hold does PublishSnapshots move each snapshot directory from
// staging/ to snapshots/ by rename; then CommitGeneration writes
// manifests/<G> (synced, naming every window's current version), writes and
// syncs CURRENT.tmp, commits LMDB, and renames CURRENT.tmp over CURRENT.
//
// A generation number is never reused (SPEC 10): G is one above the last
// committed one, except that a manifest file left above it by a command that
// stopped before its commit keeps its number; the same bytes are a rerun of
// that command and reuse it, anything else takes the next free number. After
// a crash between the commit and the rename, the next writer's FinishCurrent
// installs CURRENT.
//
// REQUIRES: the caller holds the root's LOCK.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "publish/generation_manifest.h"
#include "snapshot/snapshot_manifest.h"
#include "snapsink/options.h"

namespace snapsink {

struct PendingSnapshot {
  int64_t window_ms = 0;
  uint64_t version = 0;
  SealRecord seal;
};

// The staged (sealed, not yet published) snapshots recorded in store.
Status StagedSeals(Store* store, std::vector<PendingSnapshot>* out);

// Checks the snapshot in dir against p (see above). Reconcile on a count
// mismatch, Corruption on a damaged file. *manifest_xxh64 receives the
// XXH64 of its manifest.json.
Status ReconcileSnapshot(Env* env, const std::string& dir, const PendingSnapshot& p, uint64_t* manifest_xxh64);

// The public record (include/snapsink/options.h); `dropped` are the windows
// that left by retention, their state deleted with the commit.
using api::PublishResult;

// Reconciles and publishes pending in one generation. bookkeeping runs in the
// final LMDB write transaction of live (it marks the seals published).
// Retention (engine/window_retention.h): windows beyond it are left out of
// the generation and their live state is deleted in that same transaction,
// after bookkeeping; with nothing pending a publish still happens when some
// window is due to leave.
Status PublishSnapshots(Env* env, const std::string& root, Store* live, const RootConfig& config,
                        const std::vector<PendingSnapshot>& pending, const std::function<Status(Txn*)>& bookkeeping,
                        PublishResult* result);

// True when retention has a window to take out of the live state or the
// current generation: what makes PublishSnapshots run with nothing pending.
// Reads only (one read transaction of live and the current top manifest).
Result<bool> RetentionDue(Env* env, const std::string& root, Store* live, const RootConfig& config);

// Chooses the number of gm (above last, see above), writes its parts (those
// not on disk yet), its top manifest and CURRENT.tmp, commits bookkeeping
// with the new current generation in one LMDB transaction, and installs
// CURRENT. gm->windows is every window of the generation; it is split into
// the tree of parts of the root's window size (BuildPartTree), so equal spans
// are the same part files as before. Crash points <crash_prefix>.part_written
// (after each part written), .manifest_written (after the top manifest),
// .before_current (before the commit), .after_commit and .after_current. On
// return gm->generation is the number used.
Status CommitGeneration(Env* env, const std::string& root, Store* live, GenerationManifest* gm,
                        const std::function<Status(Txn*)>& bookkeeping, const std::string& crash_prefix);
// The same for a gm whose parts are set (publish/generation_parts.h
// UpdateParts): new_parts are the bytes of those not on disk yet.
// parts_written, when given, runs once the parts are written and before the
// top manifest (a publish waits there for its snapshots' uploads): its error
// stops the commit before anything names them.
Status CommitGenerationParts(Env* env, const std::string& root, Store* live, GenerationManifest* gm,
                             const std::vector<std::string>& new_parts, const std::function<Status(Txn*)>& bookkeeping,
                             const std::string& crash_prefix, const std::function<Status()>& parts_written = {});

// The work after a commit point, for a command that stopped there:
// FinishCurrent, then the staging directories of superseded seals and empty
// staging windows are removed. Repeatable. Run first by publish, rollback,
// gc and a backfill that finds itself done.
Status FinishPublish(Env* env, const std::string& root, Store* live);

// Meta key recording that generation number g was skipped: a manifest file
// of a command that failed before its commit holds it. Never rolled back to.
std::string UnpublishedGenerationKey(uint64_t g);

// Retention's one filter of a new generation (engine/window_retention.h):
// removes from *windows every entry that starts before oldest_kept and
// appends their starts to *left_out. nullopt keeps all.
void LeaveOutBeyondRetention(std::optional<int64_t> oldest_kept, std::vector<GenerationEntry>* windows,
                             std::vector<int64_t>* left_out);

// Publishes everything staged in live state: StagedSeals + PublishSnapshots,
// then CheckpointState.
Status PublishStaged(Env* env, const std::string& root, Store* live, const RootConfig& config, PublishResult* result);

// In a root in a bucket, when nothing sealed is left unpublished in live:
// the writer's state checkpoint of the generation live records as current
// (engine/state_checkpoint.h), unless the bucket has it already (so a
// command that stopped before it puts it when run again). Nothing for a
// local root. Run by publish, rollback and backfill after their commit.
Status CheckpointState(Env* env, const std::string& root, Store* live);

// manifests/<generation>, decoded and checked to name that generation, with
// every window of its parts (out->windows).
Status ReadGenerationManifest(Env* env, const std::string& root, uint64_t generation, GenerationManifest* out);
// Its top manifest only (checked; windows empty unless format 2).
Status ReadGenerationTop(Env* env, const std::string& root, uint64_t generation, GenerationManifest* out);

}  // namespace snapsink
