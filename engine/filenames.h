// Every path inside a snapsink root is built here, and parsed back here.
//
//   ROOT/LOCK                                 one writer at a time
//   ROOT/LOCK.follower                        held by a running follower (engine/writer_lock.h)
//   ROOT/LOCK.queue                           writers waiting for the follower's step
//   ROOT/state/                               LMDB: live engine state
//   ROOT/state.init-tmp/                      LMDB being built by init (renamed to state/)
//   ROOT/state/backfill-v<V>/                 LMDB: state of backfill version V
//   ROOT/state/backfill-v<V>/LOCK             one process per backfill
//   ROOT/state/backfill-v<V>/stdin.spool      standard input of `backfill -`
//   ROOT/state/backfill-v<V>/stdin.spool.done its length and XXH64: the spool is whole
//   ROOT/staging/<window>/v<version>/         snapshots being built
//   ROOT/snapshots/<window>/v<version>/       published snapshots
//       data                                  rows (docs/FORMAT.md)
//       manifest.json                         the snapshot's manifest
//   ROOT/manifests/<generation>               one file per published generation (its top manifest)
//   ROOT/manifests/parts/<xxh64>              a part of generations' window lists, named by its XXH64
//   ROOT/CURRENT                              names the current generation
//   ROOT/settings                             a root in a bucket: its settings (in place of state/)
//   ROOT/writers/<epoch>                      a root in a bucket: the writer epochs claimed (create-only)
//   ROOT/rejects/<source>.ndjson              bad input lines (<source>: see RejectsFileName)
//   ROOT/owners/<source>/<epoch>              owner claims of a shared partition (below)
//   ROOT/partitions/<source>/checkpoints/e<epoch>-o<offset>
//                                             a partition's state, copied by its owner (docs/FORMAT.md)
//   ROOT/partitions/<source>/seals/<window>-v<version>-e<epoch>/{data,seal.json}
//                                             a partition's seal record (merged publish)
//   ROOT/partitions/<source>/progress         a partition's accepted seals and how far it read
//   <partition state root>/checkpoint.tmp/    the LMDB copy a checkpoint is made from
//   <any of the above>.tmp                    WriteFileAtomic's temp file
//
// <window> is the window start in compact UTC form (20261021T100000Z).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace snapsink::filenames {

inline constexpr char kDataFile[] = "data";
inline constexpr char kSnapshotManifestFile[] = "manifest.json";

std::string LockFile(const std::string& root);
// "ROOT/LOCK.follower": held by a running `run --follow` for its life.
std::string FollowerLockFile(const std::string& root);
// "ROOT/LOCK.queue": held (shared) by writers waiting for the follower's step.
std::string LockQueueFile(const std::string& root);
std::string StateDir(const std::string& root);
std::string InitStateDir(const std::string& root);
// "<dir>/data.mdb": the data file of the LMDB environment in dir.
std::string LmdbDataFile(const std::string& dir);
std::string BackfillStateDir(const std::string& root, uint64_t version);
std::string BackfillLockFile(const std::string& root, uint64_t version);
// "<backfill dir>/state.init-tmp": where the backfill's environment is built
// before its data.mdb is renamed into the backfill dir (publish/backfill.cc).
std::string BackfillEnvBuildDir(const std::string& root, uint64_t version);
// "<dir>/lock.mdb": the lock file of the LMDB environment in dir.
std::string LmdbLockFile(const std::string& dir);
std::string StagingDir(const std::string& root);
std::string StagingWindowDir(const std::string& root, int64_t window_ms);
std::string StagingSnapshotDir(const std::string& root, int64_t window_ms, uint64_t version);
std::string SnapshotsDir(const std::string& root);
std::string SnapshotWindowDir(const std::string& root, int64_t window_ms);
std::string SnapshotDir(const std::string& root, int64_t window_ms, uint64_t version);
std::string ManifestsDir(const std::string& root);
std::string GenerationManifest(const std::string& root, uint64_t generation);
// "ROOT/manifests/parts" and "ROOT/manifests/parts/<16 hex digits>": a part is
// named by the XXH64 (seed 0) of its bytes (publish/generation_manifest.h).
std::string PartsDir(const std::string& root);
std::string GenerationPart(const std::string& root, uint64_t xxh64);
// Parses a part's name (16 lowercase hex digits); false for anything else.
bool ParsePartName(std::string_view name, uint64_t* xxh64);
std::string Current(const std::string& root);
// A root in a bucket (engine/root_bucket.h): "ROOT/settings", the object
// init writes in place of state/, and "ROOT/writers", the writer epochs.
std::string BucketSettings(const std::string& root);
std::string WritersDir(const std::string& root);
// A root in a bucket under run --kafka --state: merged/<topic>/<window ms>-v<version>,
// what the merged version of a window was made from (docs/FORMAT.md).
std::string MergedInputsDir(const std::string& root);
// checkpoints/: a file writer's state at each generation it published, in a
// root in a bucket (engine/state_checkpoint.h).
std::string StateCheckpointsDir(const std::string& root);
// "<root>/state.checkpoint": on the writer's disk (in its --state DIR), an
// LMDB copy of the state its newest checkpoint in the bucket makes, the
// state the next checkpoint is a delta against (engine/state_checkpoint.h).
std::string StateCheckpointCopyDir(const std::string& root);
std::string MergedInputsFile(const std::string& root, const std::string& topic, int64_t window_ms, uint64_t version);
std::string RejectsDir(const std::string& root);
// Owner epochs of partitions shared by many processes (SPEC 12):
// owners/<sanitized source>/<epoch, 20 digits> holds who took that epoch;
// owners/<sanitized source>/LOCK serializes the claims.
std::string OwnersDir(const std::string& root);
std::string OwnerDir(const std::string& root, std::string_view source);
std::string OwnerClaimFile(const std::string& root, std::string_view source, uint64_t epoch);
std::string OwnerLockFile(const std::string& root, std::string_view source);
bool ParseOwnerClaimName(std::string_view name, uint64_t* epoch);
// The merged publish of a topic's partitions (partitions/partition_seals.h):
// partitions/<sanitized source>/seals/<window>-v<version>-e<epoch>/ holds one
// seal record ({data, seal.json}) of the partition's state, named by the
// work; partitions/<sanitized source>/progress names the partition's
// accepted seals and how far it has read.
inline constexpr char kSealRecordFile[] = "seal.json";
std::string PartitionDir(const std::string& root, std::string_view source);
std::string PartitionSealsDir(const std::string& root, std::string_view source);
std::string PartitionSealDir(const std::string& root, std::string_view source, int64_t window_ms, uint64_t version,
                             uint64_t epoch);
bool ParsePartitionSealName(std::string_view name, int64_t* window_ms, uint64_t* version, uint64_t* epoch);
std::string PartitionProgressFile(const std::string& root, std::string_view source);
// Checkpoints of a partition's state (sink/checkpoint.cc):
// partitions/<sanitized source>/checkpoints/e<epoch, 20 digits>-o<offset, 20 digits>,
// so names sort as (epoch, offset).
std::string PartitionsDir(const std::string& root);
std::string CheckpointDir(const std::string& root, std::string_view source);
std::string CheckpointFile(const std::string& root, std::string_view source, uint64_t epoch, uint64_t offset);
bool ParseCheckpointName(std::string_view name, uint64_t* epoch, uint64_t* offset);
// "<state root>/checkpoint.tmp": where a state's compacted LMDB copy is made.
std::string CheckpointCopyDir(const std::string& state_root);
// A file name component is at most 255 bytes; the longest prefix put before
// a rejects file name is "backfill-v4294967295-" (21). A sanitized source
// name longer than kMaxRejectsStem is cut to kRejectsStemCut bytes and
// suffixed with "-" and the 16 hex digits of XXH64 (seed 0) of the full,
// unsanitized source name, so two long names that share their start get
// two files.
inline constexpr size_t kMaxRejectsStem = 217;
inline constexpr size_t kRejectsStemCut = 200;
// "<sanitized source>.ndjson", cut as above.
std::string RejectsFileName(std::string_view source);
std::string RejectsFile(const std::string& root, std::string_view source);
// rejects/backfill-v<V>-<source>.ndjson
std::string BackfillRejectsFile(const std::string& root, uint64_t version, std::string_view source);
// The spool of standard input for `backfill -`, and the marker that it is complete.
std::string BackfillSpoolFile(const std::string& root, uint64_t version);
std::string BackfillSpoolDoneFile(const std::string& root, uint64_t version);

// Whether name is one of the entries init makes directly under a root
// (LOCK, state, staging, snapshots, manifests, CURRENT, rejects).
bool IsRootEntry(std::string_view name);

// "<dir>/<name>"
std::string Join(const std::string& dir, std::string_view name);
// "v3" for 3.
std::string VersionDirName(uint64_t version);
// Parses "v3"; false for anything else.
bool ParseVersionDirName(std::string_view name, uint64_t* version);
// Parses a window directory's name (20261021T100000Z); false for anything else.
bool ParseWindowDirName(std::string_view name, int64_t* window_ms);
// Parses a generation manifest's name ("12"); false for anything else.
bool ParseGenerationName(std::string_view name, uint64_t* generation);
// The source name with each byte other than [A-Za-z0-9._-] replaced by '_'.
std::string SanitizeSourceName(std::string_view source);

// What an entry of a root is, by its path relative to the root ("LOCK",
// "snapshots/20261021T100000Z/v1/data"). kTemp is a *.tmp a crash left
// outside state/ (LMDB owns everything in there); kUnknown is anything this
// build does not write.
enum class FileKind {
  kLock, kState, kStaging, kSnapshots, kManifests, kCurrent, kRejects, kOwners, kPartitions, kTemp, kUnknown
};
FileKind ClassifyRootPath(std::string_view relative);
const char* FileKindName(FileKind kind);

}  // namespace snapsink::filenames
