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

}  // namespace

std::string RootStatusJson(const std::string& path, const RootStatus& s) {
  auto opt_time = [](const std::optional<int64_t>& t) { return t ? JsonQuote(FormatIso(*t)) : std::string("null"); };
  std::string o = "{\"root\":" + JsonQuote(path);
  o += ",\"window\":" + JsonQuote(FormatDuration(s.config.window_ms));
  o += ",\"lateness\":" + JsonQuote(FormatDuration(s.config.lateness_ms));
  o += ",\"on_gap\":" + JsonQuote(OnGapName(s.config.on_gap));
  o += ",\"max_event_ts\":" + opt_time(s.max_event_ts);
  o += ",\"watermark\":" + opt_time(s.watermark);
  o += ",\"current_generation\":" + U(s.current_generation);
  o += ",\"published_at\":" + opt_time(s.published_at_ms);
  o += ",\"open_windows\":[";
  bool first = true;
  for (const WindowStatus& w : s.windows) {
    if (w.closed) continue;
    o += first ? "" : ",";
    first = false;
    o += "{\"window\":" + JsonQuote(FormatIso(w.start_ms)) + ",\"closes_at\":" + JsonQuote(FormatIso(w.closes_at_ms)) +
         ",\"dirty\":" + (w.state.dirty ? "true" : "false") + ",\"events\":" + std::to_string(w.totals.events) +
         ",\"count\":" + std::to_string(w.totals.count) + "}";
  }
  o += "],\"staged_windows\":[";
  first = true;
  for (const WindowStatus& w : s.windows) {
    if (!w.staged) continue;
    o += first ? "" : ",";
    first = false;
    o += "{\"window\":" + JsonQuote(FormatIso(w.start_ms)) + ",\"version\":" + U(w.state.last_version) + "}";
  }
  o += "],\"sources\":[";
  first = true;
  for (const SourceStatus& src : s.sources) {
    o += first ? "" : ",";
    first = false;
    const SourceState& st = src.state;
    o += "{\"source\":" + JsonQuote(src.name) + ",\"offset\":" + U(st.offset);
    if (src.file_size >= 0) {
      const uint64_t size = static_cast<uint64_t>(src.file_size);
      o += ",\"size\":" + U(size) + ",\"lag\":" + U(size > st.offset ? size - st.offset : 0);
    } else {
      o += ",\"size\":null,\"lag\":null";
    }
    o += ",\"lines\":" + U(st.lines) + ",\"applied\":" + U(st.applied) + ",\"duplicates\":" + U(st.duplicates) +
         ",\"fenced\":" + U(st.fenced) + ",\"rejected\":" + U(st.rejected) + ",\"ignored\":" + U(st.ignored) + "}";
  }
  o += "],\"producers\":" + U(s.producers) + ",\"producers_with_gaps\":[";
  first = true;
  for (const ProducerGaps& p : s.gaps) {
    o += first ? "" : ",";
    first = false;
    uint64_t missing = 0;
    for (const Gap& g : p.gaps) missing += g.hi - g.lo;
    o += "{\"producer\":" + JsonQuote(p.producer) + ",\"epoch\":" + U(p.epoch) + ",\"open_gaps\":" +
         U(p.gaps.size()) + ",\"missing\":" + U(missing) + "}";
  }
  o += "],\"disk\":{";
  first = true;
  for (const DirUsage& d : s.disk) {
    o += (first ? "" : ",") + JsonQuote(d.dir) + ":" + U(d.bytes);
    first = false;
  }
  o += "}}\n";
  return o;
}

namespace {

void PrintText(const std::string& path, const RootStatus& s) {
  std::printf("root        %s\n", path.c_str());
  std::printf("settings    window %s, lateness %s, on-gap %s\n", FormatDuration(s.config.window_ms).c_str(),
              FormatDuration(s.config.lateness_ms).c_str(), OnGapName(s.config.on_gap).c_str());
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
    std::printf("  %s  offset %llu (%s), lines %llu\n", EscapeControl(src.name).c_str(),
                static_cast<unsigned long long>(src.state.offset), lag.c_str(),
                static_cast<unsigned long long>(src.state.lines));
  }
  if (s.sources.empty()) std::printf("  none\n");
  std::printf("producers   %llu, %zu with open gaps\n", static_cast<unsigned long long>(s.producers), s.gaps.size());
  for (const ProducerGaps& p : s.gaps) {
    std::string ranges;
    for (const Gap& g : p.gaps) {
      ranges += (ranges.empty() ? "" : ", ") +
                (g.lo + 1 == g.hi ? U(g.lo) : U(g.lo) + ".." + U(g.hi - 1));
    }
    std::printf("  %s  epoch %u  missing seq %s\n", EscapeControl(p.producer).c_str(), p.epoch, ranges.c_str());
  }
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
