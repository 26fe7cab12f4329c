// Prometheus metrics of a root (text exposition format 0.0.4), built with
// prometheus-cpp's core library. `snapsink metrics` prints them once; a
// future `serve` registers the same families for scraping.
//
// Families (every number is the one `inspect --json` prints):
//   snapsink_lines_total{source}                  counter  LineCounts::lines
//   snapsink_events_applied_total{source}         counter  applied
//   snapsink_duplicates_suppressed_total{source,kind="seq|id"}  counter
//       id: duplicates_id; seq: duplicates - duplicates_id (the sum is duplicates)
//   snapsink_events_fenced_total{source}          counter  fenced
//   snapsink_lines_rejected_total{source,reason="bad_input|horizon|retired"}  counter
//       horizon: rejected_horizon; retired: rejected_retired; bad_input: the rest of rejected
//   snapsink_lines_ignored_total{source}          counter  ignored
//   snapsink_open_gaps{producer}                  gauge    open gap ranges (producers with gaps only)
//   snapsink_producers                            gauge
//   snapsink_producers_retired                    gauge    tombstones of retired producers
//   snapsink_split_producers                      gauge    producers seen on two Kafka partitions (run --on-split-producer warn)
//   snapsink_ids_held                             gauge    ids held for id dedup (inspect ids)
//   snapsink_watermark_seconds                    gauge    absent until an event is applied
//   snapsink_watermark_held_seconds               gauge    a far-ahead event time waiting for a second
//                                                          producer (engine/watermark.h); absent: none
//   snapsink_current_generation                   gauge    0 = none
//   snapsink_windows{state="open|staged|published"} gauge  open: not closed by the watermark;
//                                                          staged: a seal waits for publish;
//                                                          published: in the current generation
//   snapsink_state_bytes                          gauge    bytes under state/
//
// A reader of a root in a bucket with a local cache (query, serve; its
// --cache-dir) adds the cache's families (engine/object_cache.h), counted
// by this process since it opened the cache:
//   snapsink_cache_hits_total                     counter  entries answered from the cache
//   snapsink_cache_misses_total                   counter  entries asked of the bucket (absent, evicted or damaged)
//   snapsink_cache_evictions_total                counter  entries removed past the capacity
//   snapsink_cache_bytes                          gauge    bytes of the entries held
//   snapsink_cache_capacity_bytes                 gauge    --cache-size
#pragma once

#include <string>

#include <prometheus/registry.h>

#include "sink/root_status.h"

namespace snapsink {

// Adds the families above, with values from status, to registry.
void AddRootMetrics(const RootStatus& status, prometheus::Registry* registry);

class ObjectCache;
// Adds the cache families above, from cache, to registry.
void AddCacheMetrics(const ObjectCache& cache, prometheus::Registry* registry);

// The registry in the Prometheus text format.
std::string SerializeMetrics(const prometheus::Registry& registry);

}  // namespace snapsink
