// gc --producers-idle D: retires producers idle for D of event time
// (api::Sink::RetireIdleProducers); gc --retain D / --max-ahead D: the
// history settings (api::Sink::SetHistory).
#include <cstdio>
#include <optional>

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

bool ParseHistoryDuration(const std::string& text, int64_t* ms) {
  if (text == "0") {
    *ms = 0;
    return true;
  }
  return api::ParseDuration(text, ms) && *ms >= 0;
}

std::string RetainText(int64_t ms) { return ms > 0 ? api::FormatDuration(ms) : "every window"; }
std::string MaxAheadText(int64_t ms) { return ms > 0 ? api::FormatDuration(ms) : "no limit"; }

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

}  // namespace snapsink
