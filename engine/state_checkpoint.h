// Checkpoints of a file writer's state in a root in a bucket (docs/BUCKET.md,
// "A writer whose --state DIR was lost"). The writer's LMDB state (its
// sources' positions, producers' seqs, ids, open windows' records, the
// window versions and the generation it published) lives only in its
// --state DIR; after each publish into the bucket it goes there as the
// create-only object checkpoints/<generation, 20 digits> (docs/FORMAT.md):
// a base (every record, engine/state_records.h) or a delta (the puts and
// deletes since its parent, the checkpoint before it), taken against
// <DIR>/state.checkpoint/, an LMDB copy of the state the last checkpoint
// put makes; its records go in zstd frames of at most 1 MiB of records
// each. A chain is a base and at most 32 deltas whose bytes stay
// within half the base's. A writer with an empty DIR on a root that has
// published restores the chain of the generation CURRENT names (each
// object checked whole, the state made checked against the digest the last
// one names), through Root::InitWithState (init's own commit point), and
// reads on from the positions it holds: no event is applied twice. Without
// that checkpoint (a writer stopped between its CURRENT swap and the
// checkpoint, not run since; a root published by an older snapsink, or by
// `run --kafka`) nothing is restored and the writer is refused.
//
// Crash points (engine/crash_point.h): publish.state_checkpoint (a
// generation published, its checkpoint not yet PUT),
// publish.state_checkpoint_copy (PUT, the local copy not yet moved on: the
// next checkpoint is a delta on the one before), state.restore (the
// restored state's data written and synced, not yet renamed to state/).
#pragma once

#include <cstdint>
#include <string>

#include "engine/env.h"
#include "engine/status.h"
#include "engine/store.h"

namespace snapsink {

// checkpoints/<generation, 20 digits> under root.
std::string StateCheckpointFile(const std::string& root, uint64_t generation);

// Puts the checkpoint of live (whose recorded current generation is
// `generation`) into the bucket, unless one of that generation is there
// already, and moves the local copy on to it; then removes the checkpoints
// of older generations that neither its chain nor the previous one's names. Does
// nothing for a root not in a bucket, for a process without --state DIR and
// under shared publishing (run --kafka: each process restores its
// partitions from their own checkpoints). REQUIRES: nothing is staged and
// unpublished in live (a restored state could not find its staging files).
Status WriteStateCheckpoint(Env* env, const std::string& root, Store* live, uint64_t generation);

// Makes root's local state (and the local copy) from the checkpoint of
// `generation` and its chain when the bucket holds it (*restored = true);
// *restored = false when it holds none. Corruption naming the object when
// a link is missing, or its header, size or checksum do not hold, or a
// zstd frame does not decompress, or the state made is not the one the
// checkpoint names.
Status RestoreStateCheckpoint(Env* env, const std::string& root, uint64_t generation, bool* restored);

}  // namespace snapsink
