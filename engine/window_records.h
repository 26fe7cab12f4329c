// Reading and writing the per-window records of a store inside a
// transaction: the window state (Table::kWindows) and its seals
// (Table::kSeals), and its aggregates in order. Ingest, seal, publish and backfill all go through here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/state_codec.h"
#include "engine/store.h"

namespace snapsink {

// The window record of window_ms; a default one (version 0, clean) when absent.
Status ReadWindowState(Txn* txn, int64_t window_ms, WindowState* out);
Status WriteWindowState(Txn* txn, int64_t window_ms, const WindowState& state);

// Deletes every live record of window_ms: its aggregates, ledger, window
// record and seal records. Retention's one way to remove a window's state
// (engine/window_retention.h); whoever changes how a window is stored
// changes this too.
Status DeleteWindowState(Txn* txn, int64_t window_ms);

// Sets the state of the seal record of (window_ms, version). NotFound if absent.
Status SetSealState(Txn* txn, int64_t window_ms, uint64_t version, SealState state);

// Marks every staged (unpublished) seal of window_ms other than keep_version
// superseded, and appends their versions to *superseded. keep_version 0
// keeps none.
Status SupersedeStagedSeals(Txn* txn, int64_t window_ms, uint64_t keep_version, std::vector<uint64_t>* superseded);

// Calls fn(metric, key, aggregate) for every aggregate of window_ms, in
// (metric, key) byte order, natural keys restored (engine/long_key.h), until
// fn returns an error, which it returns.
using AggregateVisitor = std::function<Status(const std::string& metric, std::string_view key, const Aggregate& agg)>;
Status ScanWindowAggregates(Txn* txn, int64_t window_ms, const AggregateVisitor& fn);

// The sums of every window's live aggregates (base records and runs) over
// all its keys: count, sum and events, added with wrap-around.
Status LiveAggregateTotals(Txn* txn, std::map<int64_t, Aggregate>* out);

// Count and events of every window over all its metrics, from the ledger.
Status LedgerTotalsByWindow(Txn* txn, std::map<int64_t, Aggregate>* out);

}  // namespace snapsink
