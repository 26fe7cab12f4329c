// status: one look at a root for operators (api::ReadOnlySink::GetStatus;
// --json is api::ReadOnlySink::StatusJson).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <cstring>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/partitions.h"
#include "snapsink/utilities/serve.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/metric_kinds_table.h"
#include "utilities/status_macros.h"

namespace snapsink {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }
// "12s ago at 2026-...Z" for a wall-clock time a writer recorded; display only.
std::string AgeText(const std::optional<int64_t>& at_ms) {
  if (!at_ms) return "at a time not recorded";
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t age = now > *at_ms ? (now - *at_ms) / 1000 : 0;
  return std::to_string(age) + "s ago at " + api::FormatTime(*at_ms);
}
std::string OnGapName(api::GapPolicy g) { return g == api::GapPolicy::kStop ? "stop" : "accept"; }

void PrintText(const std::string& path, const api::RootStatus& s) {
  std::printf("root        %s\n", path.c_str());
  const api::RootSettings& set = s.settings;
  std::printf("settings    window %s, lateness %s, on-gap %s, id horizon %s, producer retention %s\n",
              api::FormatDuration(set.window_size_ms).c_str(), api::FormatDuration(set.lateness_ms).c_str(),
              OnGapName(set.on_gap).c_str(), api::FormatDuration(set.id_horizon_ms).c_str(),
              set.producer_retention_ms > 0 ? api::FormatDuration(set.producer_retention_ms).c_str() : "never");
  std::string kinds;
  for (const api::MetricKindInfo& m : s.metrics) {
    kinds += (kinds.empty() ? "" : ", ") + api::EscapeControl(m.metric) + " " + api::MetricKindName(m.kind) +
             (m.kind == api::MetricKind::kQuantiles ? " (accuracy " + AccuracyText(m.accuracy_ppm) + ")"
              : m.kind == api::MetricKind::kDistinct ? " (precision " + std::to_string(m.precision) + ")"
                                                      : "");
  }
  std::printf("metrics     %s\n", kinds.empty() ? "every metric sum (none declared: snapsink metric ROOT set)"
                                                  : (kinds + "; any other sum").c_str());
  if (s.watermark) {
    std::printf("watermark   %s (newest event %s)\n", api::FormatTime(*s.watermark).c_str(), api::FormatTime(*s.max_event_ts).c_str());
  } else {
    std::printf("watermark   none (no event applied yet)\n");
  }
  std::printf("            rule: %s\n", s.watermark_rule.c_str());
  if (s.settings.retain_ms > 0 || s.oldest_kept_window) {
    std::printf("retention   %s; oldest kept window %s\n", RetainText(s.settings.retain_ms).c_str(),
                s.oldest_kept_window ? api::FormatTime(*s.oldest_kept_window).c_str() : "none dropped yet");
  } else {
    std::printf("retention   keep every window\n");
  }
  if (s.current_generation == 0) {
    std::printf("current     none (nothing published yet)\n");
  } else {
    std::printf("current     generation %llu, %zu window(s), published %s\n",
                static_cast<unsigned long long>(s.current_generation), s.published_windows,
                s.published_at_ms ? api::FormatTime(*s.published_at_ms).c_str() : "(time not recorded)");
  }
  // Each window in one state, so the counts add up to the windows.
  std::string states;
  for (const char* state : api::kWindowStates) {
    size_t k = 0;
    for (const api::WindowStatus& w : s.windows) k += w.state == state;
    states += std::string(states.empty() ? "" : ", ") + state + " " + std::to_string(k);
  }
  std::printf("windows     %zu: %s\n", s.windows.size(), states.c_str());
  std::printf("            (%s)\n", api::kWindowStatesHelp);
  std::printf("open windows (unsealed changes, not yet closed by the watermark; each closes once an event at or "
              "after its closing event time is applied):\n");
  size_t n = 0;
  for (const api::WindowStatus& w : s.windows) {
    if (w.state != "open") continue;
    ++n;
    std::printf("  %s  closes at event time %s  events %lld\n", api::FormatTime(w.window_start_ms).c_str(),
                api::FormatTime(w.closes_at_ms).c_str(), static_cast<long long>(w.events));
  }
  if (n == 0) std::printf("  none\n");
  std::printf("staged, not yet published (snapsink publish):\n");
  n = 0;
  for (const api::WindowStatus& w : s.windows) {
    if (!w.staged) continue;
    ++n;
    std::printf("  %s  v%llu\n", api::FormatTime(w.window_start_ms).c_str(), static_cast<unsigned long long>(w.version));
  }
  if (n == 0) std::printf("  none\n");
  std::printf("sources:\n");
  for (const api::SourceStatus& src : s.sources) {
    std::string lag = src.backfill ? "an archive, read once" : "file not found";
    if (!src.path.empty() && src.path != src.source.source) lag += ", file " + api::EscapeControl(src.path);
    if (src.source.end && src.source.read) {  // the write path's progress (a Kafka partition)
      const uint64_t read = *src.source.read, end = *src.source.end;
      lag = "position " + src.source.position.value_or("none") + ", high watermark " + U(end) + ", lag " +
            U(end > read ? end - read : 0) + ", newest event " +
            (src.source.newest_event_ms ? api::FormatTime(*src.source.newest_event_ms) : std::string("none")) +
            ", progress written " + AgeText(src.progress_at_ms);
    } else if (src.file_size >= 0) {
      const uint64_t size = static_cast<uint64_t>(src.file_size);
      lag = "size " + U(size) + ", lag " + U(size > src.source.offset ? size - src.source.offset : 0) + " bytes" +
            (!src.path.empty() && src.path != src.source.source ? ", file " + api::EscapeControl(src.path) : "");
    }
    const api::SourceView& st = src.source;
    std::printf("  %s  offset %llu (%s), lines %llu\n", api::EscapeControl(st.source).c_str(),
                static_cast<unsigned long long>(st.offset), lag.c_str(), static_cast<unsigned long long>(st.lines));
    std::printf("    duplicates %llu (by id %llu), rejected %llu (beyond id horizon %llu, retired producer %llu)\n",
                static_cast<unsigned long long>(st.duplicates), static_cast<unsigned long long>(st.duplicates_id),
                static_cast<unsigned long long>(st.rejected), static_cast<unsigned long long>(st.rejected_horizon),
                static_cast<unsigned long long>(st.rejected_retired));
  }
  if (s.sources.empty()) std::printf("  none\n");
  const std::string split = s.split_producers.empty()
                                ? std::string()
                                : ", " + std::to_string(s.split_producers.size()) + " split over partitions";
  std::printf("producers   %llu, %zu with open gaps, %llu retired%s\n", static_cast<unsigned long long>(s.producers),
              s.gaps.size(), static_cast<unsigned long long>(s.retired_producers), split.c_str());
  for (const api::ProducerGaps& p : s.gaps) {
    std::string ranges;
    for (const api::SeqRange& g : p.missing) {
      ranges += (ranges.empty() ? "" : ", ") +
                (g.first == g.last ? U(g.first) : U(g.first) + ".." + U(g.last));
    }
    std::printf("  %s  epoch %u  missing seq %s\n", api::EscapeControl(p.producer).c_str(), p.epoch, ranges.c_str());
  }
  for (const api::RootStatus::SplitProducer& p : s.split_producers) {
    std::printf("  %s  split over %s: key the records by producer (docs/KAFKA.md)\n",
                api::EscapeControl(p.producer).c_str(), api::EscapeControl(p.sources).c_str());
  }
  std::printf("ids         %llu held, oldest %s, dedup by id from event time %s\n",
              static_cast<unsigned long long>(s.ids.held), s.ids.oldest ? api::FormatTime(*s.ids.oldest).c_str() : "none",
              s.ids.cutoff ? api::FormatTime(*s.ids.cutoff).c_str() : "(any: no event applied yet)");
  std::printf("disk:\n");
  for (const api::DirUsage& d : s.disk) std::printf("  %-10s %llu bytes\n", d.dir.c_str(), static_cast<unsigned long long>(d.bytes));
}

// Partitions shared through ROOT/owners/ (run --kafka --state): who owns
// each, where its owner's last progress write left it (position, high
// watermark, lag, last seal) and its newest checkpoint.
void PrintPartitions(const std::vector<api::PartitionOwnerInfo>& parts) {
  std::printf("partitions  %zu shared through owners/ (position, high watermark and lag as of each one's last "
              "progress write)\n", parts.size());
  for (const auto& p : parts) {
    std::string progress = "no progress recorded yet";
    if (const auto& g = p.progress) {
      progress = "position " + std::to_string(g->position) + " of " + std::to_string(g->high_watermark) + " (lag " +
                 std::to_string(g->lag) + ", written by epoch " + U(g->epoch) + " " + AgeText(g->written_at_ms) +
                 "), last seal ";
      progress += g->last_seal_window_start_ms ? api::FormatTime(*g->last_seal_window_start_ms) + " v" + U(g->last_seal_version) +
                                               " to offset " + std::to_string(g->last_seal_to)
                                         : std::string("none");
    }
    std::string ckpt = "none";
    if (p.checkpoint) {
      ckpt = "epoch " + U(p.checkpoint->epoch) + " at offset " + U(p.checkpoint->offset) + ", " +
             U(p.checkpoint->bytes) + " bytes";
    }
    std::printf("  %s  owner epoch %llu (%s), %s, last checkpoint %s\n", api::EscapeControl(p.name).c_str(),
                static_cast<unsigned long long>(p.epoch), api::EscapeControl(p.who).c_str(), progress.c_str(),
                ckpt.c_str());
  }
}

Status CmdStatus(const std::string& path, bool json, const std::string& html_file) {
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(path));
  if (!html_file.empty()) {
    SNAPSINK_ASSIGN_OR_RETURN(const std::string html, api::StatusPage(*sink));
    std::FILE* f = std::fopen(html_file.c_str(), "wb");
    if (f == nullptr) return Status::IOError("--html " + html_file + ": cannot create: " + std::strerror(errno));
    const bool ok = std::fwrite(html.data(), 1, html.size(), f) == html.size();
    if (std::fclose(f) != 0 || !ok) return Status::IOError("--html " + html_file + ": write failed");
    if (!json) {
      std::printf("wrote %s (%zu bytes)\n", html_file.c_str(), html.size());
      return Status::OK();
    }
  }
  if (json) {
    SNAPSINK_ASSIGN_OR_RETURN(const std::string text, sink->StatusJson());
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::OK();
  }
  SNAPSINK_ASSIGN_OR_RETURN(const api::RootStatus s, sink->GetStatus());
  PrintText(path, s);
  SNAPSINK_ASSIGN_OR_RETURN(const auto parts, api::PartitionOwners(*sink));
  if (!parts.empty()) PrintPartitions(parts);
  return Status::OK();
}

}  // namespace

Command RegisterStatus(CLI::App& app) {
  struct Flags {
    std::string root;
    bool json = false;
    std::string html;
    std::string state;
  };
  auto f = std::make_shared<Flags>();
  auto* c = app.add_subcommand(
      "status",
      "Settings, watermark, current generation, windows by state, open and staged windows, sources, gaps, disk use");
  AddRoot(c, &f->root);
  c->add_flag("--json", f->json, "One JSON object");
  c->add_option("--html", f->html,
                "Write the status page (what `serve` answers GET / with) to FILE: windows, generations, gaps, "
                "sources, health and disk use")
      ->type_name("FILE");
  AddBucketState(c, &f->state);
  c->footer(Footer(ExitStatusLine({Exit::kOk, Exit::kFailure}), "snapsink status /data/orders --json"));
  return {c, [f] {
            SNAPSINK_RETURN_IF_ERROR(UseBucketState(f->root, f->state));
            return CmdStatus(f->root, f->json, f->html);
          }};
}

}  // namespace snapsink
