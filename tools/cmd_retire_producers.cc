// gc --producers-idle D: retires producers idle for D of event time
// (api::Sink::RetireIdleProducers).
#include <cstdio>

#include "snapsink/sink.h"
#include "tools/commands.h"

namespace snapsink {

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

}  // namespace snapsink
