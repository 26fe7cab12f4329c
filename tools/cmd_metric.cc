// metric ROOT set NAME --kind K | list: declare what a metric's aggregates
// hold (api::Sink::SetMetricKind) and list the declared ones.
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/flag_groups.h"
#include "tools/table.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

struct MetricArgs {
  std::string root;
  std::string action;
  std::string name;
  std::string kind;
  bool json = false;
  std::string state;  // --state DIR: a root in a bucket's local state
};

Status CmdMetricList(const MetricArgs& a) {
  if (!a.name.empty()) return Status::InvalidArgument("metric list takes no NAME");
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(a.root));
  SNAPSINK_ASSIGN_OR_RETURN(auto kinds, sink->MetricKinds());
  api::Table t{{"metric", "kind"}, {}};
  for (const api::MetricKindInfo& k : kinds) {
    Record r;
    r.Str("metric", k.metric);
    r.Str("kind", api::MetricKindName(k.kind));
    t.records.push_back(std::move(r));
  }
  PrintTable(t, a.json ? OutputFormat::kJson : OutputFormat::kTable);
  return Status::OK();
}

Status CmdMetric(const MetricArgs& a) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.root, a.state));  // --state: a root in a bucket
  if (a.action == "list") return CmdMetricList(a);
  if (a.name.empty()) return Status::InvalidArgument("metric set needs the metric's NAME");
  if (a.kind.empty()) return Status::InvalidArgument("metric set needs --kind sum|minmax");
  const api::MetricKind kind = a.kind == "minmax" ? api::MetricKind::kMinMax : api::MetricKind::kSum;
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::Open(a.root));
  SNAPSINK_RETURN_IF_ERROR(sink->SetMetricKind(a.name, kind));
  std::printf("metric %s is %s\n", a.name.c_str(), api::MetricKindName(kind));
  return Status::OK();
}

}  // namespace

Command RegisterMetric(CLI::App& app) {
  auto a = std::make_shared<MetricArgs>();
  auto* c = app.add_subcommand("metric",
                               "set: declare a metric's kind (sum: count and exact sum, the default; minmax: also "
                               "the least and greatest value, no retracts); list: the declared metrics");
  AddRoot(c, &a->root);
  c->add_option("ACTION", a->action, "set or list")->required()->check(OneOf({"set", "list"}));
  c->add_option("NAME", a->name, "set: the metric (1..128 bytes)");
  c->add_option("--kind", a->kind, "set: sum or minmax")->check(OneOf({"sum", "minmax"}));
  c->add_flag("--json", a->json, "list: one JSON object per line");
  AddBucketState(c, &a->state);
  c->footer(Footer(CommonExitLine(), "snapsink metric /data/orders set latency --kind minmax\n"
                                     "         snapsink metric /data/orders list"));
  return {c, [a] { return CmdMetric(*a); }};
}

}  // namespace snapsink
