#include "publish/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

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
    uint64_t SourceState::*field;
  };
  static constexpr SourceCounter kSourceCounters[] = {
      {"snapsink_lines_total", "Input lines consumed and committed, per source.", &SourceState::lines},
      {"snapsink_events_applied_total", "Events applied exactly once, per source.", &SourceState::applied},
      {"snapsink_duplicates_suppressed_total", "Repeated events dropped by sequence number, per source.",
       &SourceState::duplicates},
      {"snapsink_events_fenced_total", "Events dropped for an epoch below the producer's current one, per source.",
       &SourceState::fenced},
      {"snapsink_lines_rejected_total", "Bad input lines written to the rejects file, per source.",
       &SourceState::rejected},
      {"snapsink_lines_ignored_total", "Backfill events outside --from/--to, per source.", &SourceState::ignored},
  };
  for (const SourceCounter& c : kSourceCounters) {
    auto& family = BuildCounter().Name(c.name).Help(c.help).Register(*registry);
    for (const SourceStatus& src : s.sources) family.Add({{"source", src.name}}).Increment(D(src.state.*(c.field)));
  }
  auto& gaps = BuildGauge().Name("snapsink_open_gaps").Help("Open sequence gaps, per producer that has any.")
                   .Register(*registry);
  for (const ProducerGaps& p : s.gaps) gaps.Add({{"producer", p.producer}}).Set(D(p.gaps.size()));
  BuildGauge().Name("snapsink_producers").Help("Producers the engine remembers.").Register(*registry).Add({})
      .Set(D(s.producers));
  auto& wm = BuildGauge().Name("snapsink_watermark_seconds")
                 .Help("Watermark (newest event time minus lateness), seconds since the Unix epoch.")
                 .Register(*registry);
  if (s.watermark) wm.Add({}).Set(static_cast<double>(*s.watermark) / 1000.0);
  BuildGauge().Name("snapsink_current_generation").Help("The generation CURRENT names (0: none).")
      .Register(*registry).Add({}).Set(D(s.current_generation));
  uint64_t open = 0, staged = 0;
  for (const WindowStatus& w : s.windows) {
    open += !w.closed;
    staged += w.staged;
  }
  auto& windows = BuildGauge().Name("snapsink_windows")
                      .Help("Windows by state: open (not closed by the watermark), staged (sealed, not published), "
                            "published (in the current generation).")
                      .Register(*registry);
  windows.Add({{"state", "open"}}).Set(D(open));
  windows.Add({{"state", "staged"}}).Set(D(staged));
  windows.Add({{"state", "published"}}).Set(D(s.published_windows));
  BuildGauge().Name("snapsink_state_bytes").Help("Bytes of the LMDB state under state/.").Register(*registry)
      .Add({}).Set(D(s.state_bytes));
}

std::string SerializeMetrics(const prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

}  // namespace snapsink
