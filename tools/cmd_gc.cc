// gc ROOT [--keep-generations N] [--producers-idle D] [--retain D]
// [--max-ahead D]: removes what no kept generation and no open reader uses
// (api::Sink::Gc), after retiring idle producers
// (api::Sink::RetireIdleProducers) and changing the history settings
// (api::Sink::SetHistory) if asked.
#include <cstdio>
#include <memory>
#include <optional>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"

namespace snapsink {

bool ParseHistoryDuration(const std::string& text, int64_t* ms) {
  if (text == "0") {
    *ms = 0;
    return true;
  }
  return api::ParseDuration(text, ms) && *ms >= 0;
}

std::string RetainText(int64_t ms) { return ms > 0 ? api::FormatDuration(ms) : "every window"; }
std::string MaxAheadText(int64_t ms) { return ms > 0 ? api::FormatDuration(ms) : "no limit"; }

namespace {

Status CmdRetireProducers(const std::string& path, const std::string& idle) {
  int64_t idle_ms = 0;
  if (!api::ParseDuration(idle, &idle_ms) || idle_ms <= 0) {
    return Status::InvalidArgument("--producers-idle " + idle + ": expected a duration such as 1d, 30d");
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::Open(path));
  SNAPSINK_ASSIGN_OR_RETURN(auto retired, sink->RetireIdleProducers(idle_ms));
  for (const std::string& p : retired) std::printf("retired producer %s\n", p.c_str());
  return Status::OK();
}

Status CmdSetHistory(const std::string& path, const std::string& retain, const std::string& max_ahead) {
  std::optional<int64_t> retain_ms, max_ahead_ms;
  int64_t v = 0;
  if (!retain.empty()) {
    if (!ParseHistoryDuration(retain, &v)) {
      return Status::InvalidArgument("--retain " + retain + ": expected a duration such as 1h, 30d (0: keep every window)");
    }
    retain_ms = v;
  }
  if (!max_ahead.empty()) {
    if (!ParseHistoryDuration(max_ahead, &v)) {
      return Status::InvalidArgument("--max-ahead " + max_ahead + ": expected a duration such as 1h, 1d (0: no limit)");
    }
    max_ahead_ms = v;
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::Open(path));
  SNAPSINK_RETURN_IF_ERROR(sink->SetHistory(retain_ms, max_ahead_ms));
  const api::RootSettings& s = sink->settings();
  std::printf("retain %s, max-ahead %s (the next publish applies them)\n", RetainText(s.retain_ms).c_str(),
              MaxAheadText(s.max_ahead_ms).c_str());
  return Status::OK();
}

Status CmdGc(const std::string& path, uint64_t keep) {
  auto sink = api::Sink::Open(path);
  if (!sink.ok()) return sink.status();
  auto r = (*sink)->Gc(keep);
  if (!r.ok()) return r.status();
  for (uint64_t g : r->removed_generations) std::printf("removed generation %llu\n", static_cast<unsigned long long>(g));
  for (const std::string& s : r->removed_snapshots) std::printf("removed snapshot %s\n", s.c_str());
  for (const std::string& t : r->removed_temp_files) std::printf("removed %s (a temporary file a crash left)\n", t.c_str());
  if (r->removed_parts > 0) {
    std::printf("removed %llu manifest part(s) no kept generation names\n", static_cast<unsigned long long>(r->removed_parts));
  }
  if (!r->removed_seal_records.empty()) {
    std::printf("removed %zu seal record(s) of partitions a newer seal of the same window replaced\n",
                r->removed_seal_records.size());
  }
  if (!r->removed_seal_records_beyond_retention.empty()) {
    std::printf("removed %zu seal record(s) of partitions whose window is beyond retention\n",
                r->removed_seal_records_beyond_retention.size());
  }
  if (!r->removed_merged_inputs.empty()) {
    std::printf("removed %zu merged input record(s) no kept generation names\n", r->removed_merged_inputs.size());
  }
  // In a bucket gc cannot see readers: a generation replaced less than
  // --min-age ago stands in for one pinned.
  const char* why = path.rfind("s3://", 0) == 0 ? "replaced less than --min-age ago (a reader elsewhere may still read it)"
                                                 : "pinned by a reader";
  for (uint64_t g : r->pinned) std::printf("kept generation %llu: %s\n", static_cast<unsigned long long>(g), why);
  if (r->removed_generations.empty() && r->removed_snapshots.empty() && r->removed_temp_files.empty() &&
      r->removed_parts == 0 && r->removed_seal_records.empty() &&
      r->removed_seal_records_beyond_retention.empty() && r->removed_merged_inputs.empty()) {
    std::printf("nothing to remove (keeping the newest %llu generation(s) and what they use)\n",
                static_cast<unsigned long long>(keep));
  }
  return Status::OK();
}

struct GcArgs {
  std::string root;
  std::string state;  // --state DIR: a root in a bucket's local state
  uint64_t keep = api::kDefaultKeepGenerations;
  std::string producers_idle;
  std::string retain, max_ahead;
};

Status CmdGcAll(const GcArgs& a) {
  Status s = UseBucketState(a.root, a.state);
  if (s.ok() && (!a.retain.empty() || !a.max_ahead.empty())) s = CmdSetHistory(a.root, a.retain, a.max_ahead);
  if (s.ok() && !a.producers_idle.empty()) s = CmdRetireProducers(a.root, a.producers_idle);
  if (s.ok()) s = CmdGc(a.root, a.keep);
  return s;
}

}  // namespace

Command RegisterGc(CLI::App& app) {
  auto a = std::make_shared<GcArgs>();
  auto* c = app.add_subcommand("gc", "Remove what no kept generation and no open reader uses");
  AddRoot(c, &a->root);
  c->add_option("--keep-generations", a->keep, "Newest generations to keep, the current one always (default " +
                    std::to_string(api::kDefaultKeepGenerations) + ")")
      ->check(AtLeast(1));
  c->footer(Footer(CommonExitLine(), "snapsink gc /data/orders --keep-generations 3"));
  c->add_option("--producers-idle", a->producers_idle, "Also retire producers idle this long in event time");
  c->add_option("--retain", a->retain, "Change the retention (0: keep every window); the next publish applies it");
  c->add_option("--max-ahead", a->max_ahead, "Change the max-ahead limit (0: no limit)");
  AddBucketState(c, &a->state);
  AddBucketGcMinAge(c);
  return {c, [a] { return CmdGcAll(*a); }};
}

}  // namespace snapsink
