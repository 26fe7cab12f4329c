// Producer retention: a bound on producer state (README "The retention bet").
//
// Per producer the engine keeps, in its producer record beside its
// ProducerState, the greatest event time heard from it (its last-seen time,
// codec::ProducerSeen), and one key in Table::kProducerIdle: the start of the
// coarse bucket of event time its last-seen time was in when the key was
// written, then its id. A key is moved only when the last-seen time leaves
// the key's bucket (IdleBucketMs wide), so a commit writes a producer that
// sent one record, not three. A producer whose last-seen time is before the
// retention cutoff (watermark minus the retention: init
// --producer-retention, applied during ingest, or gc --producers-idle, once)
// is retired: its ProducerState (epoch, next seq, gaps) and idle key are
// deleted and a tombstone (Table::kRetired: epoch, last seen) is kept.
// Retirement is exact: a key's time is at or before the producer's last-seen
// time, so every idle producer's key is before the cutoff, and the sweep
// checks each such candidate's exact last-seen time in its record.
//
// Formats 3 and 4 kept the last-seen time in Table::kProducerSeen and keyed
// the idle index by the exact time. Such records are read as they are; the
// producer's next write moves them into its record (and its key, if the
// last-seen time left the old key's bucket: an exact time is a bucket of one).
//
// A retired producer that sends again at an epoch above its tombstone's
// starts afresh (seq from 0) and its tombstone goes; at the same or a lower
// epoch its events are rejected ("producer retired; bump its epoch"): the
// engine no longer knows which of its seqs were applied, so it does not guess.
//
// Ingest keeps a ProducerLife per producer it touched in the run, retires a
// producer lazily when it is next touched (so outcomes do not depend on where
// batches end) and sweeps idle producers at each commit (so state stays
// bounded). Producers that only send events with an id (no seq) have no
// ProducerState and are not tracked here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state_codec.h"
#include "engine/status.h"
#include "engine/store.h"

namespace snapsink {

inline constexpr char kRetiredReason[] = "producer retired; bump its epoch";

struct ProducerTombstone {
  uint32_t epoch = 0;
  int64_t last_seen = 0;
};

// What ingest caches of one producer besides its ProducerState.
struct ProducerLife {
  std::optional<int64_t> last_seen;          // greatest event time heard (as of this run)
  std::optional<int64_t> stored_seen;        // the last-seen time the state holds
  std::optional<int64_t> stored_idle;        // the time of its kProducerIdle key in the state
  bool legacy_seen = false;                  // a kProducerSeen record (formats 3, 4) to delete
  std::optional<ProducerTombstone> retired;  // the tombstone, while retired
  bool tombstone_dirty = false;              // write (retired) or delete (!retired) at commit
};

// The width of the idle index's buckets for a root: an eighth of the
// producer retention, at most an hour (an hour without retention, for gc
// --producers-idle). A sweep then reads, besides the idle producers, only
// those last heard within one bucket after the cutoff, and an active
// producer's key moves about 8 times per retention of event time.
int64_t IdleBucketMs(int64_t producer_retention_ms);

// The start of ts's bucket (floor).
int64_t IdleBucket(int64_t ts, int64_t bucket_ms);

// The earliest last-seen time a producer may have and stay; INT64_MIN when
// retention is off (retention_ms == 0) or no event was applied yet.
int64_t RetentionCutoff(std::optional<int64_t> max_event_ts, int64_t lateness_ms, int64_t retention_ms);

// Reads the producer's record, last-seen time and tombstone.
Status LoadProducerLife(Txn* txn, std::string_view producer, ProducerLife* life);
// The same when the caller has decoded the record: `seen` is what it held
// (nullopt: no record, or one of formats 3 and 4).
Status LoadProducerLife(Txn* txn, std::string_view producer, const std::optional<ProducerSeen>& seen,
                        ProducerLife* life);

// Retires, in the cache, a producer whose last-seen time is before cutoff.
// Returns true if it did (the caller resets its ProducerState and deletes it
// at commit).
bool RetireIfIdle(ProducerLife* life, const ProducerState& state, int64_t cutoff);

inline void HeardAt(ProducerLife* life, int64_t ts) {
  if (!life->last_seen || ts > *life->last_seen) life->last_seen = ts;
}

// Writes what changed of one producer: its record (state_dirty, or its
// last-seen time moved), idle key and tombstone. scratch (if not null): a
// buffer for the record's bytes, reused from one call to the next. The
// record goes in through Txn::PutInOrder: calls in producer order search
// little of the table.
Status CommitProducer(Txn* txn, std::string_view producer, const ProducerState& state, bool state_dirty,
                      ProducerLife* life, int64_t bucket_ms, std::string* scratch = nullptr);

// Retires every producer with a last-seen time before cutoff; appends their
// ids to *retired (if not null).
Status RetireIdleProducers(Txn* txn, int64_t cutoff, std::vector<std::string>* retired);

Status DecodeTombstone(std::string_view v, ProducerTombstone* t);

}  // namespace snapsink
