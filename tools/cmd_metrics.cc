// metrics: the root's Prometheus metrics, printed once (api::ReadOnlySink::MetricsText).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

Status CmdMetrics(const std::string& path) {
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(path));
  SNAPSINK_ASSIGN_OR_RETURN(const std::string text, sink->MetricsText());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::OK();
}

}  // namespace

Command RegisterMetrics(CLI::App& app) {
  auto root = std::make_shared<std::string>();
  auto* c = app.add_subcommand("metrics", "Print the root's metrics in the Prometheus text format 0.0.4");
  AddRoot(c, root.get());
  c->footer(Footer(ExitStatusLine({Exit::kOk, Exit::kFailure}), "snapsink metrics /data/orders > snapsink.prom"));
  return {c, [root] { return CmdMetrics(*root); }};
}

}  // namespace snapsink
