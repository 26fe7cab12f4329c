// metric ROOT set NAME --kind K | list: declare what a metric's aggregates
// hold (api::Sink::SetMetricKind) and list the declared ones.
#include <cstdio>
#include <memory>
#include <string>

#include "snapsink/sink.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/flag_groups.h"
#include "tools/metric_kinds_table.h"
#include "tools/table.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

struct MetricArgs {
  std::string root;
  std::string action;
  std::string name;
  std::string kind;
  std::string accuracy;  // quantiles: a fraction, "0.01" = 1%
  std::string precision;  // distinct: 4..18
  bool json = false;
  std::string state;  // --state DIR: a root in a bucket's local state
};

Status CmdMetricList(const MetricArgs& a) {
  if (!a.name.empty()) return Status::InvalidArgument("metric list takes no NAME");
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
  SNAPSINK_ASSIGN_OR_RETURN(auto kinds, sink->MetricKinds());
  const api::Table t = MetricKindsTable(kinds);
  PrintTable(t, a.json ? OutputFormat::kJson : OutputFormat::kTable);
  return Status::OK();
}

Status CmdMetric(const MetricArgs& a) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.root, a.state));  // --state: a root in a bucket
  if (a.action == "list") return CmdMetricList(a);
  if (a.name.empty()) return Status::InvalidArgument("metric set needs the metric's NAME");
  if (a.kind.empty()) return Status::InvalidArgument("metric set needs --kind sum|minmax|quantiles|distinct");
  api::MetricKind kind = api::MetricKind::kSum;
  ParseKind(a.kind, &kind);  // --kind is checked against the four names where it is read
  int precision = 0;
  if (!a.precision.empty()) {
    if (kind != api::MetricKind::kDistinct) {
      return Status::InvalidArgument("--precision is a distinct metric's: drop it, or set --kind distinct");
    }
    if (!ParsePrecision(a.precision, &precision)) {
      return Status::InvalidArgument("--precision '" + a.precision +
                                     "': expected an integer from 4 to 18 (2^precision registers; 14 by default)");
    }
  }
  uint32_t ppm = 0;
  if (!a.accuracy.empty()) {
    if (kind != api::MetricKind::kQuantiles) {
      return Status::InvalidArgument("--accuracy is a quantiles metric's: drop it, or set --kind quantiles");
    }
    if (!ParseAccuracy(a.accuracy, &ppm) || ppm < 100 || ppm > 500000) {
      return Status::InvalidArgument("--accuracy '" + a.accuracy +
                                     "': expected a relative accuracy from 0.0001 to 0.5 (0.01 is 1%)");
    }
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::Open(a.root));
  SNAPSINK_RETURN_IF_ERROR(sink->SetMetricKind(a.name, kind, ppm, precision));
  if (kind == api::MetricKind::kDistinct) {
    std::printf("metric %s is distinct (precision %d)\n", a.name.c_str(), precision == 0 ? 14 : precision);
  } else if (kind == api::MetricKind::kQuantiles) {
    const std::string accuracy = AccuracyText(ppm == 0 ? 10000 : ppm);
    std::printf("metric %s is quantiles (accuracy %s)\n", a.name.c_str(), accuracy.c_str());
  } else {
    std::printf("metric %s is %s\n", a.name.c_str(), api::MetricKindName(kind));
  }
  return Status::OK();
}

}  // namespace

Command RegisterMetric(CLI::App& app) {
  auto a = std::make_shared<MetricArgs>();
  auto* c = app.add_subcommand("metric",
                               "set: declare a metric's kind (sum: count and exact sum, the default; minmax: also "
                               "the least and greatest value, no retracts; quantiles: also a quantile sketch, "
                               "query --quantile; distinct: also a distinct count of the events' item, no "
                               "retracts); list: the declared metrics");
  AddRoot(c, &a->root);
  c->add_option("ACTION", a->action, "set or list")->required()->check(OneOf({"set", "list"}));
  c->add_option("NAME", a->name, "set: the metric (1..128 bytes)");
  c->add_option("--kind", a->kind, "set: sum, minmax, quantiles or distinct")
      ->check(OneOf({"sum", "minmax", "quantiles", "distinct"}));
  c->add_option("--accuracy", a->accuracy, "set --kind quantiles: relative accuracy, 0.0001..0.5 (default 0.01)");
  c->add_option("--precision", a->precision,
                "set --kind distinct: 4..18, 2^precision registers (default 14: about 0.8% error, 12 KiB a row "
                "at most)");
  c->add_flag("--json", a->json, "list: one JSON object per line");
  AddBucketState(c, &a->state);
  c->footer(Footer(CommonExitLine(), "snapsink metric /data/orders set latency --kind minmax\n"
                                     "         snapsink metric /data/orders set wait --kind quantiles --accuracy 0.01\n"
                                     "         snapsink metric /data/orders set users --kind distinct\n"
                                     "         snapsink metric /data/orders list"));
  return {c, [a] { return CmdMetric(*a); }};
}

}  // namespace snapsink
