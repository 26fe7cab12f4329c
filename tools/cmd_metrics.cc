// metrics: the root's Prometheus metrics, printed once (api::ReadOnlySink::MetricsText).
#include <cstdio>

#include "snapsink/sink.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdMetrics(const std::string& path) {
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(path));
  SNAPSINK_ASSIGN_OR_RETURN(const std::string text, sink->MetricsText());
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::OK();
}

}  // namespace snapsink
