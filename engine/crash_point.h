// Crash points for tests (SPEC 8).
//
// When SNAPSINK_CRASH_AT names `point`, the N-th call of MaybeCrash(point)
// in this process (N = SNAPSINK_CRASH_HIT, default 1) ends the process with
// _exit(99), as abruptly as kill -9: no destructors, no buffered writes.
// Points in use: init.after_layout, init.before_rename, ingest.before_commit, ingest.after_commit, seal.mid_data,
// seal.before_record, publish.after_rename, publish.part_written (after each
// part of the new generation, before its top manifest), publish.manifest_written
// (after the top manifest, before CURRENT.tmp), publish.before_current,
// publish.after_current, publish.after_commit, publish.retention_delete, rollback.part_written, rollback.manifest_written,
// rollback.before_current,
// rollback.after_commit, rollback.after_current; backfill.before_spool_done
// (`backfill -`: the spool is written and synced, its completeness marker
// not yet), backfill.after_spool (the marker is durable, nothing ingested);
// owner.before_claim (a partition's owner claim synced, not yet renamed);
// checkpoint.before_rename (a partition's checkpoint in ROOT synced, not yet
// renamed), checkpoint.restore (a restored state's data synced, not yet renamed to state/);
// partition.seal_record, partition.progress, merge.before_lock (a merged
// publish found windows to publish, LOCK not yet taken), merge.before_publish,
// merge.after_publish (the merged publish, partitions/partition_seals.h);
// gc.seal_record (gc removing a replaced seal record of a partition: its
// seal.json removed, its data not yet); gc.merged_inputs (gc in a bucket
// removed one merged/<topic>/<window>-v<version> no kept generation names);
// upgrade.snapshot_data, upgrade.snapshot, upgrade.part_written, upgrade.manifest, upgrade.current,
// upgrade.backfill_state (each step of `upgrade`, listed in publish/upgrade.h);
// bucket.before_create_put, bucket.after_create_put, bucket.before_swap_put,
// bucket.after_swap_put (the two PUT kinds of a root in a bucket, engine/env_bucket.h);
// bucket.claimed_epoch, bucket.upload_file, bucket.removing_upload (a writer into a root in a bucket,
// engine/env_bucket_root.h).
// cache.before_rename (a reader's cache entry written under its temporary name, engine/object_cache.h).
// publish.state_checkpoint, publish.state_checkpoint_copy, state.restore (a file writer's state checkpoint in a
// bucket, engine/state_checkpoint.h).
//
// Test-only pause hook at the same points: when SNAPSINK_PAUSE_AT names
// `point`, the N-th call of MaybeCrash(point) (N = SNAPSINK_PAUSE_HIT,
// default 1) writes "snapsink: pausing at POINT (SNAPSINK_PAUSE_AT)" to
// stderr and stops the whole process with raise(SIGSTOP); SIGCONT resumes
// it right there. A test stops a process at an exact step (a zombie in the
// middle of a batch, two publishers before the same step) and releases it
// when it chooses. Pause and crash count their hits apart.
#pragma once

namespace snapsink {

void MaybeCrash(const char* point);

}  // namespace snapsink
