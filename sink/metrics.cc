#include "sink/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include "engine/object_cache.h"

namespace snapsink {
namespace {

double D(uint64_t v) { return static_cast<double>(v); }

}  // namespace

void AddRootMetrics(const RootStatus& s, prometheus::Registry* registry) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  struct SourceCounter {
    const char* name;
    const char* help;
    uint64_t api::LineCounts::*field;
  };
  static constexpr SourceCounter kSourceCounters[] = {
      {"snapsink_lines_total", "Input lines consumed and committed, per source.", &api::LineCounts::lines},
      {"snapsink_events_applied_total", "Events applied exactly once, per source.", &api::LineCounts::applied},
      {"snapsink_events_fenced_total", "Events dropped for an epoch below the producer's current one, per source.",
       &api::LineCounts::fenced},
      {"snapsink_lines_ignored_total", "Backfill events outside --from/--to, per source.", &api::LineCounts::ignored},
  };
  for (const SourceCounter& c : kSourceCounters) {
    auto& family = BuildCounter().Name(c.name).Help(c.help).Register(*registry);
    for (const api::SourceStatus& src : s.sources) {
      family.Add({{"source", src.source.source}}).Increment(D(src.source.*(c.field)));
    }
  }
  // The split parts sum to inspect's `duplicates` and `rejected`; the id
  // counts are parts of them (engine/id_dedup.h), so seq and bad_input are
  // the remainders.
  auto& dups = BuildCounter().Name("snapsink_duplicates_suppressed_total")
                   .Help("Repeated events dropped, per source and kind: seq (by sequence number), id (an id seen "
                         "within the dedup horizon).")
                   .Register(*registry);
  auto& rejected = BuildCounter().Name("snapsink_lines_rejected_total")
                       .Help("Lines written to the rejects file, per source and reason: bad_input, horizon (beyond "
                             "the id dedup horizon), retired (a retired producer at its old epoch).")
                       .Register(*registry);
  for (const api::SourceStatus& src : s.sources) {
    const api::SourceView& ids = src.source;
    const std::string& name = ids.source;
    dups.Add({{"source", name}, {"kind", "seq"}}).Increment(D(ids.duplicates - ids.duplicates_id));
    dups.Add({{"source", name}, {"kind", "id"}}).Increment(D(ids.duplicates_id));
    const uint64_t bad = ids.rejected - ids.rejected_horizon - ids.rejected_retired;
    rejected.Add({{"source", name}, {"reason", "bad_input"}}).Increment(D(bad));
    rejected.Add({{"source", name}, {"reason", "horizon"}}).Increment(D(ids.rejected_horizon));
    rejected.Add({{"source", name}, {"reason", "retired"}}).Increment(D(ids.rejected_retired));
  }
  // Sources of the write path with progress only (a Kafka partition: read =
  // the committed offset, end = the high watermark); a family with no
  // source prints its HELP and TYPE lines only.
  auto& read = BuildGauge().Name("snapsink_source_read_position")
                   .Help("How far a source is read and committed (a Kafka partition's next offset).")
                   .Register(*registry);
  auto& end = BuildGauge().Name("snapsink_source_end_position")
                  .Help("How far a source reaches (a Kafka partition's high watermark), as last seen.")
                  .Register(*registry);
  auto& lag = BuildGauge().Name("snapsink_source_lag").Help("end - read, per source with progress.")
                  .Register(*registry);
  auto& newest = BuildGauge().Name("snapsink_source_newest_event_seconds")
                     .Help("The newest event time applied from a source, seconds since the Unix epoch.")
                     .Register(*registry);
  auto& age = BuildGauge().Name("snapsink_source_progress_age_seconds")
                  .Help("Seconds since a source's progress was last written (a Kafka partition's owner): a stopped "
                        "owner's lag stays as it left it, its age grows.")
                  .Register(*registry);
  for (const api::SourceStatus& src : s.sources) {
    const api::SourceView& v = src.source;
    if (!v.read) continue;
    if (src.progress_at_ms) age.Add({{"source", v.source}}).Set(D(ProgressAgeSeconds(*src.progress_at_ms)));
    read.Add({{"source", v.source}}).Set(D(*v.read));
    end.Add({{"source", v.source}}).Set(D(*v.end));
    lag.Add({{"source", v.source}}).Set(D(*v.end > *v.read ? *v.end - *v.read : 0));
    if (v.newest_event_ms) {
      newest.Add({{"source", v.source}}).Set(static_cast<double>(*v.newest_event_ms) / 1000.0);
    }
  }
  auto& gaps = BuildGauge().Name("snapsink_open_gaps").Help("Open sequence gaps, per producer that has any.")
                   .Register(*registry);
  for (const api::ProducerGaps& p : s.gaps) gaps.Add({{"producer", p.producer}}).Set(D(p.missing.size()));
  BuildGauge().Name("snapsink_producers").Help("Producers the engine remembers.").Register(*registry).Add({})
      .Set(D(s.producers));
  BuildGauge().Name("snapsink_producers_retired").Help("Producers retired by producer retention (tombstones).")
      .Register(*registry).Add({}).Set(D(s.retired_producers));
  BuildGauge().Name("snapsink_split_producers")
      .Help("Producers whose events came from two Kafka partitions (run --on-split-producer warn): their records are "
            "not keyed by producer.")
      .Register(*registry).Add({}).Set(D(s.split_producers.size()));
  BuildGauge().Name("snapsink_ids_held").Help("Event ids held for id dedup (as inspect ids).").Register(*registry)
      .Add({}).Set(D(s.ids.held));
  auto& wm = BuildGauge().Name("snapsink_watermark_seconds")
                 .Help("Watermark (newest confirmed event time minus lateness), seconds since the Unix epoch.")
                 .Register(*registry);
  if (s.watermark) wm.Add({}).Set(static_cast<double>(*s.watermark) / 1000.0);
  auto& held = BuildGauge().Name("snapsink_watermark_held_seconds")
                   .Help("A far-ahead event time that waits for a second producer before it moves the watermark, "
                         "seconds since the Unix epoch.")
                   .Register(*registry);
  if (s.held_event_ts) held.Add({}).Set(static_cast<double>(*s.held_event_ts) / 1000.0);
  BuildGauge().Name("snapsink_retain_seconds").Help("Retention of windows (gc --retain); 0: keep every window.")
      .Register(*registry).Add({}).Set(static_cast<double>(s.settings.retain_ms) / 1000.0);
  BuildGauge().Name("snapsink_max_ahead_seconds")
      .Help("Events dated more than this after the newest confirmed event are rejected (beyond max-ahead); 0: no limit.")
      .Register(*registry).Add({}).Set(static_cast<double>(s.settings.max_ahead_ms) / 1000.0);
  auto& oldest = BuildGauge().Name("snapsink_oldest_kept_window_seconds")
                     .Help("Start of the oldest window retention keeps, seconds since the Unix epoch (absent: all kept).")
                     .Register(*registry);
  if (s.oldest_kept_window) oldest.Add({}).Set(static_cast<double>(*s.oldest_kept_window) / 1000.0);
  BuildGauge().Name("snapsink_current_generation").Help("The generation CURRENT names (0: none).")
      .Register(*registry).Add({}).Set(D(s.current_generation));
  auto& windows = BuildGauge().Name("snapsink_windows")
                      .Help(std::string("Windows by state, each window in one: ") + kWindowStatesHelp + ".")
                      .Register(*registry);
  for (const char* state : kWindowStates) {
    uint64_t n = 0;
    for (const api::WindowStatus& w : s.windows) n += w.state == state;
    windows.Add({{"state", state}}).Set(D(n));
  }
  BuildGauge().Name("snapsink_state_bytes").Help("Bytes of the LMDB state under state/.").Register(*registry)
      .Add({}).Set(D(s.state_bytes));
}

void AddCacheMetrics(const ObjectCache& cache, prometheus::Registry* registry) {
  prometheus::BuildCounter().Name("snapsink_cache_hits_total")
      .Help("Reads of a root in a bucket answered from the local cache (--cache-dir).").Register(*registry).Add({})
      .Increment(D(cache.hits()));
  prometheus::BuildCounter().Name("snapsink_cache_misses_total")
      .Help("Reads of a root in a bucket the local cache could not answer (absent, evicted or damaged).")
      .Register(*registry).Add({}).Increment(D(cache.misses()));
  prometheus::BuildCounter().Name("snapsink_cache_evictions_total")
      .Help("Entries removed from the local cache, least recently used first, past --cache-size.")
      .Register(*registry).Add({}).Increment(D(cache.evictions()));
  prometheus::BuildGauge().Name("snapsink_cache_bytes").Help("Bytes of the entries the local cache holds.")
      .Register(*registry).Add({}).Set(D(cache.bytes()));
  prometheus::BuildGauge().Name("snapsink_cache_capacity_bytes").Help("The local cache's capacity (--cache-size).")
      .Register(*registry).Add({}).Set(D(cache.capacity()));
}

std::string SerializeMetrics(const prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace snapsink
