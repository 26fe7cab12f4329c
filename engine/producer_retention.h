// Producer retention: a bound on producer state (README "The retention bet").
//
// Per producer the engine keeps, beside its ProducerState, the greatest event
// time heard from it (Table::kProducerSeen, indexed in time order by
// Table::kProducerIdle). A producer whose last-seen time is before the
// retention cutoff (watermark minus the retention: init
// --producer-retention, applied during ingest, or gc --producers-idle, once)
// is retired: its ProducerState (epoch, next seq, gaps) and last-seen records
// are deleted and a tombstone (Table::kRetired: epoch, last seen) is kept.
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
  std::optional<int64_t> last_seen;         // greatest event time heard (as of this run)
  std::optional<int64_t> stored_seen;       // what kProducerSeen holds
  std::optional<ProducerTombstone> retired;  // the tombstone, while retired
  bool tombstone_dirty = false;              // write (retired) or delete (!retired) at commit
};

// The earliest last-seen time a producer may have and stay; INT64_MIN when
// retention is off (retention_ms == 0) or no event was applied yet.
int64_t RetentionCutoff(std::optional<int64_t> max_event_ts, int64_t lateness_ms, int64_t retention_ms);

Status LoadProducerLife(Txn* txn, std::string_view producer, ProducerLife* life);

// Retires, in the cache, a producer whose last-seen time is before cutoff.
// Returns true if it did (the caller resets its ProducerState and deletes it
// at commit).
bool RetireIfIdle(ProducerLife* life, const ProducerState& state, int64_t cutoff);

inline void HeardAt(ProducerLife* life, int64_t ts) {
  if (!life->last_seen || ts > *life->last_seen) life->last_seen = ts;
}

// Writes last-seen and tombstone changes of one producer.
Status CommitProducerLife(Txn* txn, std::string_view producer, ProducerLife* life);

// Retires every producer with a last-seen time before cutoff; appends their
// ids to *retired (if not null).
Status RetireIdleProducers(Txn* txn, int64_t cutoff, std::vector<std::string>* retired);

Status DecodeTombstone(std::string_view v, ProducerTombstone* t);

}  // namespace snapsink
