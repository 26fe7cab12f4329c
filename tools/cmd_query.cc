// query: rows of the current (or a given) generation (api::Reader::Query).
#include <cstdio>
#include <filesystem>

#include "snapsink/sink.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

Status CmdQuery(const QueryArgs& a) {
  // Opened first: it tells a path that is not a root ("X is not a snapsink
  // root") before anything else is said about the arguments.
  Result<std::unique_ptr<api::Reader>> reader = api::Reader::Open(a.root, a.generation);
  const bool not_a_root =
      !reader.ok() && reader.status().IsNotFound() && !std::filesystem::exists(std::filesystem::path(a.root) / "state");
  if (not_a_root) return reader.status();
  api::QuerySpec spec;
  if (!a.window.empty()) {
    // The window size is a setting of the root; a time names the window holding it.
    SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
    int64_t window = 0;
    SNAPSINK_RETURN_IF_ERROR(ParseWindowArg("--window", a.window, sink->settings().window_ms, &window));
    spec.window = window;
  }
  if (!reader.ok() && reader.status().IsNotFound() && a.generation == 0) {
    std::fprintf(stderr, "snapsink: %s\n", reader.status().message().c_str());
    PrintTable(api::ToTable(std::vector<api::QueryRow>{}, 0), a.format);
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(reader.status());
  spec.metric = a.metric;
  if (a.has_key) spec.key = a.key;
  std::vector<api::QueryRow> rows;
  SNAPSINK_RETURN_IF_ERROR((*reader)->Query(spec, &rows));
  PrintTable(api::ToTable(rows, (*reader)->generation()), a.format);
  if (rows.empty() && (!a.window.empty() || !a.metric.empty() || a.has_key)) {
    std::string filter;
    if (!a.window.empty()) filter += " --window " + a.window;
    if (!a.metric.empty()) filter += " --metric " + a.metric;
    if (a.has_key) filter += " --key " + a.key;
    std::fprintf(stderr, "snapsink: no rows in generation %llu match%s\n",
                 static_cast<unsigned long long>((*reader)->generation()), filter.c_str());
  }
  return Status::OK();
}

}  // namespace snapsink
