// Metric kinds declared with the root (`init --metric NAME:KIND[:ACCURACY]`,
// InitOptions::metrics) and shown by `status`, `status --json` and the
// status page.
#include <gtest/gtest.h>

#include <filesystem>

#include "snapsink/sink.h"
#include "snapsink/utilities/serve.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

TEST(InitKinds, InitDeclaresKindsAsMetricSetDoes) {
  TempDir d;
  const std::string root = d / "root";
  RunResult r = Snapsink({"init", root, "--metric", "latency:quantiles:0.005", "--metric", "slowest:minmax",
                          "--metric", "a:b:sum", "--metric", "users:distinct:12"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmetric a:b is sum\nmetric latency is quantiles (accuracy 0.005)\nmetric slowest is minmax\n"
                      "metric users is distinct (precision 12)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Snapsink({"metric", root, "list"}).out,
            "metric   kind       accuracy  precision\n"
            "a:b      sum                  \n"
            "latency  quantiles  0.005     \n"
            "slowest  minmax               \n"
            "users    distinct             12\n");
  // The same state as init then `metric set` for each (the format raised in the same commit).
  const std::string other = d / "other";
  ASSERT_EQ(Snapsink({"init", other}).exit_code, 0);
  ASSERT_EQ(Snapsink({"metric", other, "set", "latency", "--kind", "quantiles", "--accuracy", "0.005"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"metric", other, "set", "slowest", "--kind", "minmax"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"metric", other, "set", "a:b", "--kind", "sum"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"metric", other, "set", "users", "--kind", "distinct", "--precision", "12"}).exit_code, 0);
  std::string want = StateDump(other), got = StateDump(root);
  for (std::string* s : {&want, &got}) {
    for (size_t at; (at = s->find(other)) != std::string::npos;) s->replace(at, other.size(), "ROOT");
    for (size_t at; (at = s->find(root)) != std::string::npos;) s->replace(at, root.size(), "ROOT");
  }
  EXPECT_EQ(got, want);
  // Ingest then sketches latency from its first event.
  const std::string in = d / "in.ndjson";
  WriteFile(in, EventLine().Seq(0).Ts("2026-10-21T10:15:00Z").Metric("latency").Key("a").Value("12.5").Line());
  ASSERT_EQ(Snapsink({"run", root, in, "--final"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"query", root, "--format", "csv", "--quantile", "0.5"}).out,
            "window,metric,key,count,sum,min,max,p50,version,generation\n"
            "2026-10-21T10:00:00Z,latency,a,1,12.5,12.5,12.5,12.5,1,1\n");
}

// The kinds go into the state before init's commit point (the rename of
// state.init-tmp/ to state/): a crash at either of init's points leaves a
// half-made root, and the rerun makes it whole with its kinds.
TEST(InitKinds, CrashAtEachInitPointThenRerunDeclaresTheKinds) {
  for (const char* point : {"init.after_layout", "init.before_rename"}) {
    TempDir d;
    const std::string root = d / "root";
    const std::vector<std::string> init = {"init", root, "--metric", "wait:quantiles:0.02", "--metric", "peak:minmax"};
    RunResult r = Snapsink(init, {{"SNAPSINK_CRASH_AT", point}});
    ASSERT_EQ(r.exit_code, 99) << point << r.err;
    EXPECT_NE(Snapsink({"metric", root, "list"}).exit_code, 0) << point;
    r = Snapsink(init);
    ASSERT_EQ(r.exit_code, 0) << point << r.err;
    EXPECT_EQ(Snapsink({"metric", root, "list"}).out,
              "metric  kind       accuracy\n"
              "peak    minmax     \n"
              "wait    quantiles  0.02\n")
        << point;
  }
}

TEST(InitKinds, BadDeclarationsAreOneLineErrorsAndMakeNoRoot) {
  TempDir d;
  const std::string root = d / "root";
  const std::string long_name(129, 'm');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"latency", "--metric latency: expected NAME:KIND, NAME:quantiles:ACCURACY or NAME:distinct:PRECISION"},
      {"users:distinct:19", "--metric users:distinct:19: expected NAME:KIND"},
      {"users:distinct:0.01", "--metric users:distinct:0.01: expected NAME:KIND"},
      {"latency:median", "--metric latency:median: expected NAME:KIND"},
      {":sum", "--metric :sum: expected NAME:KIND"},
      {"latency:quantiles:0.9", "--metric latency:quantiles:0.9: expected NAME:KIND"},
      {"latency:minmax:0.01", "--metric latency:minmax:0.01: an option is a quantiles metric's accuracy or a distinct metric's "
                                "precision; drop it"},
      {long_name + ":sum", "--metric " + long_name + ": a metric name of 129 bytes"},
  };
  for (const auto& [flag, want] : cases) {
    RunResult r = Snapsink({"init", root, "--metric", flag});
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_NE(r.err.find(want), std::string::npos) << flag << "\n" << r.err;
    EXPECT_LT(r.err.find(want), r.err.find('\n')) << "one line: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(root + "/state")) << flag;
  }
  RunResult r = Snapsink({"init", root, "--metric", "x:sum", "--metric", "x:minmax"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--metric x: named twice; declare each metric once"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(root + "/state"));
}

TEST(InitKinds, PublicApi) {
  TempDir d;
  const std::string root = d / "root";
  api::InitOptions o;
  o.metrics = {{"wait", api::MetricKind::kQuantiles, 0}, {"peak", api::MetricKind::kMinMax, 0}};
  ASSERT_STATUS_OK(api::Sink::Create(root, o));
  auto sink = api::Sink::OpenReadOnly(root);
  ASSERT_STATUS_OK(sink);
  auto kinds = (*sink)->MetricKinds();
  ASSERT_STATUS_OK(kinds);
  ASSERT_EQ(kinds->size(), 2u);
  EXPECT_EQ((*kinds)[0].metric, "peak");
  EXPECT_EQ((*kinds)[0].kind, api::MetricKind::kMinMax);
  EXPECT_EQ((*kinds)[1].metric, "wait");
  EXPECT_EQ((*kinds)[1].kind, api::MetricKind::kQuantiles);
  EXPECT_EQ((*kinds)[1].accuracy_ppm, 10000u);
  // Refused before anything is made, naming the field.
  const std::string bad = d / "bad";
  api::InitOptions twice;
  twice.metrics = {{"m", api::MetricKind::kSum, 0}, {"m", api::MetricKind::kMinMax, 0}};
  Status s = api::Sink::Create(bad, twice);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("InitOptions::metrics m: named twice"), std::string::npos) << s.ToString();
  api::InitOptions coarse;
  coarse.metrics = {{"m", api::MetricKind::kQuantiles, 600000}};
  s = api::Sink::Create(bad, coarse);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("InitOptions::metrics m accuracy_ppm"), std::string::npos) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(bad));
}

TEST(InitKinds, StatusAndItsPageShowEachKind) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunResult r = Snapsink({"status", root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmetrics     every metric sum (none declared: snapsink metric ROOT set)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(Snapsink({"status", root, "--json"}).out.find(",\"metrics\":[],"), std::string::npos);
  ASSERT_EQ(Snapsink({"metric", root, "set", "latency", "--kind", "quantiles", "--accuracy", "0.02"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"metric", root, "set", "slowest", "--kind", "minmax"}).exit_code, 0);
  r = Snapsink({"status", root});
  EXPECT_NE(r.out.find("\nmetrics     latency quantiles (accuracy 0.02), slowest minmax; any other sum\n"),
            std::string::npos)
      << r.out;
  r = Snapsink({"status", root, "--json"});
  EXPECT_NE(r.out.find(",\"metrics\":[{\"metric\":\"latency\",\"kind\":\"quantiles\",\"accuracy\":0.02},"
                       "{\"metric\":\"slowest\",\"kind\":\"minmax\"}],"),
            std::string::npos)
      << r.out;
  auto sink = api::Sink::OpenReadOnly(root);
  ASSERT_STATUS_OK(sink);
  auto page = api::StatusPage(**sink);
  ASSERT_STATUS_OK(page);
  EXPECT_NE(page->find("<h2>Metric kinds</h2>\n<p>A metric not listed is <b>sum</b> (count and exact sum).</p>\n"),
            std::string::npos)
      << *page;
  EXPECT_NE(page->find("<tr class=\"metric\"><td class=\"name\">latency</td><td class=\"kind\">quantiles</td>"
                       "<td>2%</td></tr>\n<tr class=\"metric\"><td class=\"name\">slowest</td><td class=\"kind\">"
                       "minmax</td><td></td></tr>\n"),
            std::string::npos)
      << *page;
  auto status = (*sink)->GetStatus();
  ASSERT_STATUS_OK(status);
  ASSERT_EQ(status->metrics.size(), 2u);
  EXPECT_EQ(status->metrics[0].accuracy_ppm, 20000u);
}

}  // namespace
}  // namespace snapsink::testing
