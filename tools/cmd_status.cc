// status: one look at a root for operators (publish/root_status.h).
#include <cstdio>

#include "engine/json_escape.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/root_status.h"
#include "tools/commands.h"

namespace snapsink {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }
std::string OnGapName(OnGap g) { return g == OnGap::kStop ? "stop" : "accept"; }

void PrintText(const std::string& path, const RootStatus& s) {
  std::printf("root        %s\n", path.c_str());
  std::printf("settings    window %s, lateness %s, on-gap %s, id horizon %s, producer retention %s\n",
              FormatDuration(s.config.window_ms).c_str(), FormatDuration(s.config.lateness_ms).c_str(),
              OnGapName(s.config.on_gap).c_str(), FormatDuration(s.config.id_horizon_ms).c_str(),
              s.config.producer_retention_ms > 0 ? FormatDuration(s.config.producer_retention_ms).c_str() : "never");
  if (s.watermark) {
    std::printf("watermark   %s (newest event %s)\n", FormatIso(*s.watermark).c_str(), FormatIso(*s.max_event_ts).c_str());
  } else {
    std::printf("watermark   none (no event applied yet)\n");
  }
  if (s.current_generation == 0) {
    std::printf("current     none (nothing published yet)\n");
  } else {
    std::printf("current     generation %llu, %zu window(s), published %s\n",
                static_cast<unsigned long long>(s.current_generation), s.published_windows,
                s.published_at_ms ? FormatIso(*s.published_at_ms).c_str() : "(time not recorded)");
  }
  std::printf("open windows (each closes once an event at or after its closing event time is applied):\n");
  size_t n = 0;
  for (const WindowStatus& w : s.windows) {
    if (w.closed) continue;
    ++n;
    std::printf("  %s  closes at event time %s  events %lld%s\n", FormatIso(w.start_ms).c_str(),
                FormatIso(w.closes_at_ms).c_str(), static_cast<long long>(w.totals.events),
                w.state.dirty ? "  unsealed changes" : "");
  }
  if (n == 0) std::printf("  none\n");
  std::printf("staged, not yet published (snapsink publish):\n");
  n = 0;
  for (const WindowStatus& w : s.windows) {
    if (!w.staged) continue;
    ++n;
    std::printf("  %s  v%llu\n", FormatIso(w.start_ms).c_str(), static_cast<unsigned long long>(w.state.last_version));
  }
  if (n == 0) std::printf("  none\n");
  std::printf("sources:\n");
  for (const SourceStatus& src : s.sources) {
    std::string lag = "file not found";
    if (src.file_size >= 0) {
      const uint64_t size = static_cast<uint64_t>(src.file_size);
      lag = "size " + U(size) + ", lag " + U(size > src.state.offset ? size - src.state.offset : 0) + " bytes";
    }
    const SourceState& st = src.state;
    std::printf("  %s  offset %llu (%s), lines %llu\n", EscapeControl(src.name).c_str(),
                static_cast<unsigned long long>(st.offset), lag.c_str(), static_cast<unsigned long long>(st.lines));
    std::printf("    duplicates %llu (by id %llu), rejected %llu (beyond id horizon %llu, retired producer %llu)\n",
                static_cast<unsigned long long>(st.duplicates), static_cast<unsigned long long>(src.ids.duplicates_id),
                static_cast<unsigned long long>(st.rejected), static_cast<unsigned long long>(src.ids.rejected_horizon),
                static_cast<unsigned long long>(src.ids.rejected_retired));
  }
  if (s.sources.empty()) std::printf("  none\n");
  std::printf("producers   %llu, %zu with open gaps, %llu retired\n", static_cast<unsigned long long>(s.producers),
              s.gaps.size(), static_cast<unsigned long long>(s.retired_producers));
  for (const ProducerGaps& p : s.gaps) {
    std::string ranges;
    for (const Gap& g : p.gaps) {
      ranges += (ranges.empty() ? "" : ", ") +
                (g.lo + 1 == g.hi ? U(g.lo) : U(g.lo) + ".." + U(g.hi - 1));
    }
    std::printf("  %s  epoch %u  missing seq %s\n", EscapeControl(p.producer).c_str(), p.epoch, ranges.c_str());
  }
  std::printf("ids         %llu held, oldest %s, dedup by id from event time %s\n",
              static_cast<unsigned long long>(s.ids.held), s.ids.oldest ? FormatIso(*s.ids.oldest).c_str() : "none",
              s.ids.cutoff != INT64_MIN ? FormatIso(s.ids.cutoff).c_str() : "(any: no event applied yet)");
  std::printf("disk:\n");
  for (const DirUsage& d : s.disk) std::printf("  %-10s %llu bytes\n", d.dir.c_str(), static_cast<unsigned long long>(d.bytes));
}

}  // namespace

Status CmdStatus(const std::string& path, bool json) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/false, &root));
  RootStatus s;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(root.get(), &s));
  if (json) {
    const std::string text = RootStatusJson(path, s);
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    PrintText(path, s);
  }
  return Status::OK();
}

}  // namespace snapsink
