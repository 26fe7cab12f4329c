// init and ingest.
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/commands.h"
#include "tools/ingest_options.h"

namespace snapsink {

// init: commit point is the rename of state.init-tmp/ to state/ (Sink::Create).
Status CmdInit(const InitArgs& a) {
  api::InitOptions o;
  if (!api::ParseDuration(a.window, &o.window_ms) || o.window_ms <= 0) {
    return Status::InvalidArgument("--window " + a.window + ": expected a duration such as 1m, 15m, 1h, 1d");
  }
  int64_t lateness = o.window_ms;
  if (!a.lateness.empty() && (!api::ParseDuration(a.lateness, &lateness) || lateness < 0)) {
    return Status::InvalidArgument("--lateness " + a.lateness + ": expected a duration such as 0s, 30m, 1h");
  }
  o.lateness_ms = lateness;
  o.on_gap = a.on_gap == "stop" ? api::GapPolicy::kStop : api::GapPolicy::kAccept;
  if (!api::ParseDuration(a.id_horizon, &o.id_horizon_ms) || o.id_horizon_ms <= 0) {
    return Status::InvalidArgument("--id-horizon " + a.id_horizon + ": expected a duration such as 1h, 7d");
  }
  if (!a.producer_retention.empty() &&
      (!api::ParseDuration(a.producer_retention, &o.producer_retention_ms) || o.producer_retention_ms <= 0)) {
    return Status::InvalidArgument("--producer-retention " + a.producer_retention +
                                   ": expected a duration such as 1d, 30d");
  }
  if (!a.retain.empty() && (!api::ParseDuration(a.retain, &o.retain_ms) || o.retain_ms <= 0)) {
    return Status::InvalidArgument("--retain " + a.retain + ": expected a duration such as 1h, 30d");
  }
  if (!a.max_ahead.empty()) {
    int64_t max_ahead = 0;
    if (!ParseHistoryDuration(a.max_ahead, &max_ahead)) {
      return Status::InvalidArgument("--max-ahead " + a.max_ahead + ": expected a duration such as 1h, 1d (0: no limit)");
    }
    o.max_ahead_ms = max_ahead;
  }
  SNAPSINK_RETURN_IF_ERROR(api::Sink::Create(a.root, o));
  SNAPSINK_ASSIGN_OR_RETURN(auto created, api::Sink::OpenReadOnly(a.root));
  const int64_t max_ahead_ms = created->settings().max_ahead_ms;
  std::printf("initialized %s: window %s, lateness %s, on-gap %s, id horizon %s, producer retention %s, "
              "retain %s, max-ahead %s\n",
              a.root.c_str(), api::FormatDuration(o.window_ms).c_str(), api::FormatDuration(lateness).c_str(),
              a.on_gap.c_str(), api::FormatDuration(o.id_horizon_ms).c_str(),
              o.producer_retention_ms == 0 ? "never" : api::FormatDuration(o.producer_retention_ms).c_str(),
              RetainText(o.retain_ms).c_str(), MaxAheadText(max_ahead_ms).c_str());
  return Status::OK();
}

// ingest: commit point is each batch's LMDB commit (engine Ingester).
Status CmdIngest(const IngestArgs& a) {
  auto sink = api::Sink::Open(a.root);
  if (!sink.ok()) return sink.status();
  SNAPSINK_RETURN_IF_ERROR(CheckIngestArgs(a));
  std::unique_ptr<Progress> progress;
  return (*sink)->Ingest(IngestOptionsFor(a, &progress));
}

}  // namespace snapsink
