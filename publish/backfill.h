// Backfill (SPEC 9): rebuild historical windows from archived input into a
// named version V, apart from live state, and publish them in one switch.
//
// A backfill has its own LMDB environment, state/backfill-v<V>/ (producers,
// offsets, aggregates, ledger, seals), so archived events that live ingest
// already saw are not taken for duplicates and live state is not disturbed.
// Steps, each repeatable after a crash:
//   1. If live state records backfill V as published: nothing to do.
//   1b. Input "-": standard input is copied to state/backfill-v<V>/stdin.spool
//      (synced), then stdin.spool.done records its length and XXH64; from
//      here on the spool is read like a file (source name "-" or --source).
//      A rerun that finds the marker reads its standard input to the end and
//      compares length and hash: the same input reuses the spool (and the
//      backfill state's offsets in it); a different one is InvalidArgument,
//      nothing changed (pipe the same input, or remove state/backfill-v<V>/
//      to start that backfill over). A spool without its marker was cut by
//      a crash before anything read it, and is written again.
//   2. A parse-only pass over the inputs finds the windows they touch within
//      [from, to]; V must exceed every version those windows have in live
//      state, else InvalidArgument before any work.
//   3. Ingest the inputs into the backfill state (resuming from its offsets),
//      without the root's LOCK: live ingest goes on meanwhile.
//   4. Under the root's LOCK: check the version rule again, seal every
//      backfilled window as v<V>, reconcile and publish them all in one
//      generation. In the same LMDB transaction that records the generation,
//      each backfilled window's aggregates and ledger replace the live ones
//      (the backfill becomes the window's base: later live events land on top
//      and seal as V+1), and backfill V is recorded as done.
//   5. The backfill's environment is removed.
// Only step 4's publish marks V as used (SPEC 9): a backfill that fails or
// crashes before it, or finds no window to publish, leaves V free.
// Live events applied to a backfilled window between step 2 and step 4 are
// superseded by the backfill (the archive is taken as the truth for it).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/root.h"
#include "publish/seal.h"

namespace snapsink {

struct BackfillOptions {
  uint64_t version = 0;
  std::vector<std::string> files;  // "-" (at most once) is standard input
  std::string source;              // the source name of the one file; default: the path as given
  // Window range, both inclusive: the windows holding these times. nullopt =
  // unbounded on that side.
  std::optional<int64_t> from, to;
  uint64_t commit_every = 10000;
  // Progress of step 3: bytes done of total (-1 unknown), lines done.
  std::function<void(uint64_t, int64_t, uint64_t)> on_progress;
};

// What the backfill did to one window: the live totals (events, count, sum)
// it replaced and the ones it published (publish/backfill_impact.h).
struct WindowImpact {
  int64_t window_ms = 0;
  Aggregate current;
  Aggregate after;
};

struct BackfillResult {
  bool already_done = false;
  std::vector<SealedWindow> sealed;
  uint64_t generation = 0;
  size_t published_windows = 0;
  std::vector<WindowImpact> impact;  // per published window, taken just before the switch
  uint64_t lines = 0, applied = 0, duplicates = 0, fenced = 0, rejected = 0, ignored = 0;
};

// REQUIRES: root was opened without the writer lock (writer=false); the
// backfill takes LOCK itself for step 4 only.
Status RunBackfill(Root* root, const BackfillOptions& options, BackfillResult* result);

// The name a published backfill's source keeps in live state ("backfill v2:
// archive"), and whether a source name is one (status looks up no file for it).
inline constexpr char kBackfillSourcePrefix[] = "backfill v";
inline std::string BackfillSourceName(uint64_t version, const std::string& source) {
  return kBackfillSourcePrefix + std::to_string(version) + ": " + source;
}
bool IsBackfillSourceName(std::string_view name);

}  // namespace snapsink
