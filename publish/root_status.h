// GatheredStatus: one consistent look at a root for operators, in the
// engine's own records (RootConfig, SourceState, Gap, IdStats): its settings,
// watermark, generation, windows, sources, producers with gaps and disk use.
// `snapsink status` prints it, `snapsink metrics` exposes it (publish/metrics.h),
// and the numbers are the ones `inspect --json` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/id_dedup.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "snapsink/views.h"

namespace snapsink {

struct GatheredWindow {
  int64_t start_ms = 0;
  WindowState state;
  bool closed = false;        // by the watermark (engine/watermark.h)
  int64_t closes_at_ms = 0;   // the event time at which it closes: start + window + lateness
  Aggregate totals;           // ledger totals over its metrics (count, events) as `inspect windows`
  bool staged = false;        // a seal waits for publish
  bool published = false;     // in the current generation
};

// Each window is in exactly one state (status, metrics): "open" (unsealed
// changes, the watermark has not passed its end), "closed_unsealed" (closed
// by the watermark, changes not sealed yet), "staged" (sealed, waiting for
// publish), "published" (the current generation holds its last version),
// "unpublished" (sealed before, not in the current generation: rolled back).
const char* WindowStateName(bool dirty, bool closed, bool staged, bool published);
inline const char* WindowStateName(const GatheredWindow& w) {
  return WindowStateName(w.state.dirty, w.closed, w.staged, w.published);
}
using api::kWindowStates;
using api::kWindowStatesHelp;

// Whole seconds from at_ms (wall clock) to now, 0 when at_ms is ahead:
// for display only (status, metrics), never written anywhere.
uint64_t ProgressAgeSeconds(int64_t at_ms);

struct GatheredSource {
  std::string name;
  SourceState state;
  SourceIdCounts ids;         // the parts of state.duplicates/rejected that id dedup and retention add
  int64_t file_size = -1;     // size of the source's file; -1 if not a readable file
  std::string path;           // absolute path ingest recorded for it ("" none: standard input, older roots)
  bool backfill = false;      // a published backfill's source ("backfill vN: NAME"), read once
  std::optional<int64_t> progress_at_ms;  // meta::ProgressAtKey: wall clock of its last progress write
};

struct GatheredGaps {
  std::string producer;
  uint32_t epoch = 0;
  std::vector<Gap> gaps;
};

using api::DirUsage;  // the public record (include/snapsink/views.h)

// The public RootStatus (ReadOnlySink::GetStatus, sink/inspect.cc) is made
// from it; status --json and the metrics read it directly.
struct GatheredStatus {
  RootConfig config;
  std::optional<int64_t> max_event_ts;
  std::optional<int64_t> watermark;      // max_event_ts - lateness
  // A far-ahead event waiting for a second producer (engine/watermark.h).
  std::optional<int64_t> held_event_ts;
  std::string held_producer;
  // Start of the oldest window retention keeps (engine/window_retention.h);
  // nullopt: every window is kept.
  std::optional<int64_t> oldest_kept_window;
  uint64_t current_generation = 0;       // what CURRENT names; 0 = none
  std::optional<int64_t> published_at_ms;  // wall clock, when recorded
  std::vector<GatheredWindow> windows;     // every window with state, in time order
  size_t published_windows = 0;          // windows in the current generation
  std::vector<GatheredSource> sources;
  uint64_t producers = 0;
  std::vector<GatheredGaps> gaps;        // only producers with open gaps
  uint64_t retired_producers = 0;        // tombstones (engine/producer_retention.h)
  // Producers whose events came from two sources where one was expected
  // (meta::SplitProducerKey: a Kafka producer on two partitions): producer
  // and the sources as recorded, by producer.
  std::vector<std::pair<std::string, std::string>> split_producers;
  IdStats ids;                           // ids held, oldest, cutoff (as `inspect ids`)
  std::vector<DirUsage> disk;
  uint64_t state_bytes = 0;              // bytes under state/
};

// Reads status in one read transaction of the live state, CURRENT and its
// manifest, and the sizes of the root's files.
Status GatherRootStatus(Root* root, GatheredStatus* out);

// What `snapsink status --json` prints and GET /v1/status returns: one JSON
// object and a newline; path is the root as given.
std::string RootStatusJson(const std::string& path, const GatheredStatus& s);

}  // namespace snapsink
