// Sealing: a window's aggregates written into staging/<window>/v<version>/,
// named by the work (window and version), never by the attempt.
//
// Sealing writes the data file and the snapshot manifest, syncs them,
// and only then records the seal in LMDB: the seal record holds the ledger
// of the window as of the seal (the "records in" publish reconciles the
// files against), the window's last_version becomes version and its dirty
// flag is cleared, in one transaction. A crash before the record leaves the
// window dirty at the same last_version, so the next seal picks the same
// version and rewrites the same directory. An unpublished staged version of
// the window that the new one replaces is marked superseded and removed.
//
// Windows are sealed in batches of up to kSealBatchWindows: every window's
// files are written first, then each file and each directory is fsynced
// once (staging/ once per batch), then one LMDB transaction records every
// seal of the batch. That is 4 fsyncs per window (data, manifest.json,
// v<version>/, <window>/) plus a few per batch, instead of a commit per window.
//
// REQUIRES: the caller holds the writer lock of the store (the root's LOCK,
// or a backfill's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/root.h"
#include "engine/store.h"
#include "engine/window_records.h"
#include "snapsink/options.h"

namespace snapsink {

struct SealTarget {
  Env* env = nullptr;
  std::string root;
  Store* store = nullptr;  // live state or a backfill's
  int64_t window_size_ms = 0;
};

// The public record (include/snapsink/options.h), filled here directly.
using api::SealedWindow;

// The windows of store with changes since their last seal: closed ones, or
// every one when all is set.
Status DirtyWindows(Store* store, const RootConfig& config, bool all, std::vector<int64_t>* out);

// Windows per batch: each holds two files open until the batch is synced.
inline constexpr size_t kSealBatchWindows = 128;

struct SealJob {
  int64_t window_ms = 0;
  uint64_t version = 0;
};

// Seals each window at its given version, in batches (see above).
Status SealBatch(const SealTarget& t, const std::vector<SealJob>& jobs, std::vector<SealedWindow>* out);

// Seals one window at the given version (a batch of one).
Status SealWindow(const SealTarget& t, int64_t window_ms, uint64_t version, SealedWindow* out);

// Seals each window at its last_version + 1, in order, skipping windows
// without changes. Removes staging leftovers of earlier attempts first.
Status SealWindows(const SealTarget& t, const std::vector<int64_t>& windows, std::vector<SealedWindow>* out);

}  // namespace snapsink
