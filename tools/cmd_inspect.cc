// inspect producers|gaps|sources|ids|windows|snapshots|generations: a view of
// api::ReadOnlySink, printed by api::ToTable.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/metric_kinds_table.h"
#include "utilities/status_macros.h"

namespace snapsink {
namespace {

// Prints view (a Result of a ReadOnlySink view) as a table.
template <typename T>
Status Print(const Result<T>& view, OutputFormat format) {
  SNAPSINK_RETURN_IF_ERROR(view.status());
  PrintTable(api::ToTable(*view), format);
  return Status::OK();
}

// Producers seen on two or more partitions shared through ROOT/owners/, as
// of each partition's newest checkpoint (each restored into a scratch
// directory): a producer is meant to keep to one partition (keyed by its
// id), else its sequence numbers are split between two states. One warning
// line a producer on stderr.
Status WarnProducersOnManyPartitions(api::ReadOnlySink* root) {
  SNAPSINK_ASSIGN_OR_RETURN(const auto parts, api::PartitionOwners(*root));
  std::map<std::string, std::vector<std::string>> seen;  // producer -> partitions
  std::error_code ec;
  for (const auto& p : parts) {
    if (!p.checkpoint) continue;
    const std::filesystem::path scratch = std::filesystem::temp_directory_path(ec) /
                                          ("snapsink-inspect-" + std::to_string(getpid()) + "-" + p.name);
    std::filesystem::remove_all(scratch, ec);
    std::vector<std::string> warnings;
    auto restored = api::RestoreCheckpoint(*root, p.checkpoint->source, scratch.string(), p.checkpoint->epoch, &warnings);
    Status s = restored.status();
    if (s.ok()) {
      auto state = api::Sink::OpenReadOnly(scratch.string());
      s = state.status();
      if (s.ok()) {
        auto producers = (*state)->Producers();
        s = producers.status();
        if (s.ok()) for (const api::ProducerInfo& pr : *producers) seen[pr.producer].push_back(p.name);
      }
    }
    std::filesystem::remove_all(scratch, ec);
    for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
    if (!s.ok()) std::fprintf(stderr, "warning: %s: cannot read its newest checkpoint: %s\n", p.name.c_str(),
                              s.ToString().c_str());
  }
  for (const auto& [producer, on] : seen) {
    if (on.size() < 2) continue;
    std::string list;
    for (const std::string& n : on) list += (list.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "warning: producer %s is on %zu partitions (%s, as of their newest checkpoints): its "
                 "sequence numbers are split between their states\n", api::EscapeControl(producer).c_str(),
                 on.size(), list.c_str());
  }
  return Status::OK();
}

Status CmdInspect(const InspectArgs& a) {
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
  const OutputFormat format = a.json ? OutputFormat::kJson : OutputFormat::kTable;
  if (a.what == "producers") {
    SNAPSINK_RETURN_IF_ERROR(Print(sink->Producers(), format));
    return WarnProducersOnManyPartitions(sink.get());
  }
  if (a.what == "gaps" && a.all) {
    SNAPSINK_ASSIGN_OR_RETURN(auto open, sink->Gaps());
    SNAPSINK_ASSIGN_OR_RETURN(auto accepted, sink->AcceptedGaps());
    PrintTable(api::ToTable(open, accepted), format);
    SNAPSINK_ASSIGN_OR_RETURN(auto sources, sink->AcceptedSourceGaps());
    if (!sources.empty()) {
      if (format == OutputFormat::kTable) std::printf("\n");
      PrintTable(api::ToTable(sources), format);
    }
    return Status::OK();
  }
  if (a.what == "gaps") return Print(sink->Gaps(), format);
  if (a.what == "sources") return Print(sink->Sources(), format);
  if (a.what == "ids") return Print(sink->Ids(), format);
  if (a.what == "windows") return Print(sink->Windows(), format);
  if (a.what == "snapshots") return Print(sink->Snapshots(), format);
  if (a.what == "generations") return Print(sink->Generations(), format);
  if (a.what == "metrics") {
    SNAPSINK_ASSIGN_OR_RETURN(auto kinds, sink->MetricKinds());
    PrintTable(MetricKindsTable(kinds), format);
    return Status::OK();
  }
  return Status::InvalidArgument("inspect: unknown " + a.what);
}

}  // namespace

Command RegisterInspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  auto* c = app.add_subcommand("inspect", "Show state");
  AddRoot(c, &a->root);
  c->add_option("WHAT", a->what,
                "producers, gaps, sources, windows, ids, snapshots, generations or metrics (the declared kinds)")
      ->required()
      ->check(OneOf({"producers", "gaps", "sources", "windows", "ids", "snapshots", "generations", "metrics"}));
  c->add_flag("--json", a->json, "One JSON object per line");
  c->add_flag("--all", a->all, "gaps: also the accepted-gap records (snapsink gaps accept)");
  c->footer(Footer(
      "windows columns: window (start), version (highest sealed, 0 = none), dirty (events applied since the last "
      "seal), closed (the watermark has passed its end), events (adds and retracts applied), count (net rows: adds "
      "minus retracts).\nsources columns: offset (bytes committed), lines = applied + duplicates + fenced + "
      "rejected + ignored (ignored: backfill events outside --from/--to).\n" + CommonExitLine(),
      "snapsink inspect /data/orders windows --json"));
  return {c, [a] {
            if (a->all && a->what != "gaps") return Status::InvalidArgument("--all goes with inspect gaps only");
            return CmdInspect(*a);
          }};
}

}  // namespace snapsink
