// Retention of windows (SPEC 13): how far back in event time windows are kept.
//
// With RootConfig::retain_ms = D > 0, a window whose end the watermark has
// passed by more than D is beyond retention: the next publish leaves it out
// of the new generation and, in the LMDB transaction that records that
// generation, DropWindowsBefore deletes its live state (aggregates, ledger,
// window record, seals) and raises meta::kRetainedFrom. Ingest rejects an
// event for such a window (`beyond retention`, never applied). The floor
// kRetainedFrom only rises: a window once dropped stays dropped even if the
// retention is lengthened later, so no version number is ever reused for
// different rows. The watermark here is the one that closes windows
// (engine/watermark.h), so an event that --max-ahead rejects moves neither.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/root.h"
#include "engine/store.h"

namespace snapsink {

// Start of the oldest window kept: every window that starts before it is
// beyond retention. nullopt: every window is kept (no retention and nothing
// dropped before). Pure arithmetic, saturating at the edges of time.
std::optional<int64_t> OldestKeptWindow(const RootConfig& config, std::optional<int64_t> max_event_ts,
                                        std::optional<int64_t> retained_from);

// The same, from the watermark and floor recorded in txn.
Result<std::optional<int64_t>> OldestKeptWindow(Txn* txn, const RootConfig& config);

// The recorded floor (meta::kRetainedFrom); nullopt when nothing was dropped.
Result<std::optional<int64_t>> RetainedFrom(Txn* txn);

// True when live state in txn holds a window that starts before oldest_kept.
Result<bool> HasWindowsBefore(Txn* txn, int64_t oldest_kept);

// Deletes the live state of every window that starts before oldest_kept
// (DeleteWindowState, engine/window_records.h), appends their starts to
// *dropped, and raises meta::kRetainedFrom to oldest_kept. Runs inside the
// transaction that records the generation leaving them out. Crash point
// publish.retention_delete: the state is deleted in the open transaction,
// nothing committed.
Status DropWindowsBefore(Txn* txn, int64_t oldest_kept, std::vector<int64_t>* dropped);

}  // namespace snapsink
