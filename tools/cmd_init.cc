// init ROOT [--window D] [--lateness D] ...: creates a root (api::Sink::Create).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/metric_kinds_table.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// --metric NAME:KIND[:OPTION] ("latency:quantiles:0.01", "slowest:minmax",
// "users:distinct:12"): read from the right, so a metric's name may hold
// ':'. The option is a quantiles metric's accuracy or a distinct metric's
// precision.
Status ParseMetricFlag(const std::string& text, api::MetricKindInfo* out) {
  const std::string usage = "--metric " + text +
                            ": expected NAME:KIND, NAME:quantiles:ACCURACY or NAME:distinct:PRECISION, KIND sum, "
                            "minmax, quantiles or distinct, ACCURACY 0.0001..0.5 (such as latency:quantiles:0.01), "
                            "PRECISION 4..18";
  std::string rest = text;
  std::string option;
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return Status::InvalidArgument(usage);
  if (!ParseKind(rest.substr(colon + 1), &out->kind)) {
    option = rest.substr(colon + 1);
    rest.resize(colon);
    colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || !ParseKind(rest.substr(colon + 1), &out->kind)) {
      return Status::InvalidArgument(usage);
    }
  }
  out->metric = rest.substr(0, colon);
  if (option.empty()) return Status::OK();
  if (out->kind == api::MetricKind::kDistinct) {
    return ParsePrecision(option, &out->precision) ? Status::OK() : Status::InvalidArgument(usage);
  }
  if (out->kind != api::MetricKind::kQuantiles) {
    return Status::InvalidArgument("--metric " + text +
                                   ": an option is a quantiles metric's accuracy or a distinct metric's precision; "
                                   "drop it");
  }
  if (!ParseAccuracy(option, &out->accuracy_ppm) || out->accuracy_ppm < 100 || out->accuracy_ppm > 500000) {
    return Status::InvalidArgument(usage);
  }
  return Status::OK();
}

// init: commit point is the rename of state.init-tmp/ to state/ (Sink::Create).
Status CmdInit(const InitArgs& a) {
  api::InitOptions o;
  if (!api::ParseDuration(a.window, &o.window_size_ms) || o.window_size_ms <= 0) {
    return Status::InvalidArgument("--window " + a.window + ": expected a duration such as 1m, 15m, 1h, 1d");
  }
  int64_t lateness = o.window_size_ms;
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
  for (const std::string& m : a.metrics) {
    SNAPSINK_RETURN_IF_ERROR(ParseMetricFlag(m, &o.metrics.emplace_back()));
  }
  SNAPSINK_RETURN_IF_ERROR(api::Sink::Create(a.root, o));
  SNAPSINK_ASSIGN_OR_RETURN(auto created, api::Sink::OpenReadOnly(a.root));
  const int64_t max_ahead_ms = created->settings().max_ahead_ms;
  std::printf("initialized %s: window %s, lateness %s, on-gap %s, id horizon %s, producer retention %s, "
              "retain %s, max-ahead %s\n",
              a.root.c_str(), api::FormatDuration(o.window_size_ms).c_str(), api::FormatDuration(lateness).c_str(),
              a.on_gap.c_str(), api::FormatDuration(o.id_horizon_ms).c_str(),
              o.producer_retention_ms == 0 ? "never" : api::FormatDuration(o.producer_retention_ms).c_str(),
              RetainText(o.retain_ms).c_str(), MaxAheadText(max_ahead_ms).c_str());
  SNAPSINK_ASSIGN_OR_RETURN(const auto kinds, created->MetricKinds());
  for (const api::MetricKindInfo& k : kinds) {
    if (k.kind == api::MetricKind::kQuantiles) {
      std::printf("metric %s is quantiles (accuracy %s)\n", k.metric.c_str(), AccuracyText(k.accuracy_ppm).c_str());
    } else if (k.kind == api::MetricKind::kDistinct) {
      std::printf("metric %s is distinct (precision %d)\n", k.metric.c_str(), k.precision);
    } else {
      std::printf("metric %s is %s\n", k.metric.c_str(), api::MetricKindName(k.kind));
    }
  }
  return Status::OK();
}

}  // namespace

Command RegisterInit(CLI::App& app) {
  auto a = std::make_shared<InitArgs>();
  auto* c = app.add_subcommand("init", "Create a root");
  c->add_option("ROOT", a->root, "The root directory to create (new, or empty)")->required();
  AddBucketAccess(c, &a->root);
  c->add_option("--window", a->window, "Window size: 1m, 15m, 1h, 1d ... (default 1h)");
  c->add_option("--lateness", a->lateness, "How far the watermark trails the newest event (default: one window)");
  c->add_option("--on-gap", a->on_gap, "accept (default): record a gap and go on; stop: " + ExitText(Exit::kGap) +
                                           " at a gap")
      ->check(OneOf({"accept", "stop"}));
  c->footer(Footer(ExitStatusLine({Exit::kOk, {Exit::kFailure, "usage, or ROOT is not empty, or already a root"}}),
                   "snapsink init /data/orders --window 1h --lateness 30m\n"
                   "         snapsink init /data/orders --metric latency:quantiles:0.01 --metric slowest:minmax"));
  c->add_option("--id-horizon", a->id_horizon, "How far behind the watermark event ids are remembered (default 7d)");
  c->add_option("--producer-retention", a->producer_retention,
                "Retire producers idle this long in event time (default: never)");
  c->add_option("--retain", a->retain,
                "Drop windows whose end the watermark passed more than this ago (default: keep every window)");
  c->add_option("--max-ahead", a->max_ahead,
                "Reject events dated more than this after the newest event (0: no limit; default 1d with --retain, "
                "else no limit)");
  c->add_option("--metric", a->metrics,
                "Declare a metric's kind, as `metric ROOT set` does: NAME:KIND (sum, minmax, quantiles, distinct), "
                "NAME:quantiles:ACCURACY (0.0001..0.5, default 0.01) or NAME:distinct:PRECISION (4..18, default "
                "14); repeat for each metric")
      ->type_name("NAME:KIND[:OPTION]");
  return {c, [a] { return CmdInit(*a); }};
}

}  // namespace snapsink
