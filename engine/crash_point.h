// Crash points for tests (SPEC 8).
//
// When SNAPSINK_CRASH_AT names `point`, the N-th call of MaybeCrash(point)
// in this process (N = SNAPSINK_CRASH_HIT, default 1) ends the process with
// _exit(99), as abruptly as kill -9: no destructors, no buffered writes.
// Points in use: init.after_layout, init.before_rename, ingest.before_commit, ingest.after_commit, seal.mid_data,
// seal.before_record, publish.after_rename, publish.before_current,
// publish.after_current, publish.after_commit, publish.retention_delete, rollback.before_current,
// rollback.after_commit, rollback.after_current; backfill.before_spool_done
// (`backfill -`: the spool is written and synced, its completeness marker
// not yet), backfill.after_spool (the marker is durable, nothing ingested);
// owner.before_claim (a partition's owner claim synced, not yet renamed);
// partition.seal_record, partition.progress, merge.before_publish,
// merge.after_publish (the merged publish, publish/partition_seals.h);
// upgrade.snapshot_data, upgrade.snapshot, upgrade.manifest, upgrade.current,
// upgrade.backfill_state (each step of `upgrade`, listed in publish/upgrade.h).
#pragma once

namespace snapsink {

void MaybeCrash(const char* point);

}  // namespace snapsink
