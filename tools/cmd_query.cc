// query: rows of the current (or a given) generation (api::Reader::Query).
#include <cstdio>
#include <filesystem>

#include "snapsink/sink.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

Status CmdQuery(const QueryArgs& a) {
  // Opened first: it tells a path that is not a root ("X is not a snapsink
  // root") before anything else is said about the arguments. Only the top
  // manifest: a query reads the manifest parts of the windows it selects.
  Result<std::unique_ptr<api::Reader>> reader = api::Reader::OpenTop(a.root, a.generation);
  const bool not_a_root =
      !reader.ok() && reader.status().IsNotFound() && !std::filesystem::exists(std::filesystem::path(a.root) / "state");
  if (not_a_root) return reader.status();
  api::QuerySpec spec;
  if (!a.window.empty() || !a.from.empty() || !a.to.empty() || a.has_rollup) {
    // The window size is a setting of the root; a time names the window holding it.
    SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
    const int64_t window_ms = sink->settings().window_ms;
    int64_t w = 0;
    if (!a.window.empty()) {
      SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--window", a.window, window_ms, &w));
      spec.window = w;
    }
    if (!a.from.empty()) {
      SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--from", a.from, window_ms, &w));
      spec.from = w;
    }
    if (!a.to.empty()) {
      SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--to", a.to, window_ms, &w));
      spec.to = w;
    }
    if (spec.from && spec.to) {
      SNAPSINK_RETURN_IF_ERROR(api::CheckRange("--from", a.from, *spec.from, "--to", a.to, *spec.to));
    }
    if (a.has_rollup) {
      SNAPSINK_RETURN_IF_ERROR(api::ParseRollup("--rollup", a.rollup, window_ms, &w));
      spec.rollup_ms = w;
    }
  }
  if (!reader.ok() && reader.status().IsNotFound() && a.generation == 0) {
    std::fprintf(stderr, "snapsink: %s\n", reader.status().message().c_str());
    PrintTable(a.has_rollup ? api::ToTable(std::vector<api::RollupRow>{}, 0)
                            : api::ToTable(std::vector<api::QueryRow>{}, 0), a.format);
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(reader.status());
  spec.metric = a.metric;
  if (a.has_key) spec.key = a.key;
  spec.metric_prefix = a.metric_prefix;
  spec.key_prefix = a.key_prefix;
  bool empty = false;
  if (spec.rollup_ms) {
    std::vector<api::RollupRow> rows;
    SNAPSINK_RETURN_IF_ERROR((*reader)->Rollup(spec, &rows));
    PrintTable(api::ToTable(rows, (*reader)->generation()), a.format);
    empty = rows.empty();
  } else {
    std::vector<api::QueryRow> rows;
    SNAPSINK_RETURN_IF_ERROR((*reader)->Query(spec, &rows));
    PrintTable(api::ToTable(rows, (*reader)->generation()), a.format);
    empty = rows.empty();
  }
  const bool filtered = !a.window.empty() || !a.metric.empty() || a.has_key || !a.from.empty() || !a.to.empty() ||
                        !a.metric_prefix.empty() || !a.key_prefix.empty();
  if (empty && filtered) {
    std::string filter;
    if (!a.window.empty()) filter += " --window " + a.window;
    if (!a.from.empty()) filter += " --from " + a.from;
    if (!a.to.empty()) filter += " --to " + a.to;
    if (!a.metric.empty()) filter += " --metric " + a.metric;
    if (!a.metric_prefix.empty()) filter += " --metric-prefix " + a.metric_prefix;
    if (a.has_key) filter += " --key " + a.key;
    if (!a.key_prefix.empty()) filter += " --key-prefix " + a.key_prefix;
    std::fprintf(stderr, "snapsink: no rows in generation %llu match%s\n",
                 static_cast<unsigned long long>((*reader)->generation()), filter.c_str());
  }
  return Status::OK();
}

}  // namespace snapsink
