// A quantiles metric through the binary: `metric set --kind quantiles`, its
// sketch through ingest (retracts applied), seal, publish, query
// (--quantile, /v1/query?quantile=) and roll-ups, its snapshots the same
// bytes whatever the batch sizes, redeliveries or crashes, its roll-ups the
// sketch of all their events, and its answers within the sketch's bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>

#include <httplib.h>

#include "engine/ddsketch.h"
#include "engine/decimal.h"
#include "snapshot/snapshot_format.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/table.h"
#include "tests/file_util.h"
#include "tests/serve_util.h"
#include "tests/delivered_lines.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr char kData[] = "/snapshots/20261021T100000Z/v1/data";

std::string NewRoot(const TempDir& d, const std::string& name, const std::vector<std::string>& init = {}) {
  const std::string root = d / name;
  std::vector<std::string> args = {"init", root};
  args.insert(args.end(), init.begin(), init.end());
  EXPECT_EQ(Snapsink(args).exit_code, 0);
  RunResult r = Snapsink({"metric", root, "set", "latency", "--kind", "quantiles"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "metric latency is quantiles (accuracy 0.01)\n");
  return root;
}

// "12.5" -> 12500000 (a value as the test writes it: at most 6 decimals).
int64_t Micros(const std::string& v) {
  int64_t m = 0;
  EXPECT_TRUE(ParseDecimalMicros(v, &m, nullptr)) << v;
  return m;
}

// latency (quantiles) on keys a and b over two windows, with retracts,
// zeros and negatives; orders (sum). Each line once; Redelivered adds
// copies.
std::vector<std::string> Lines() {
  std::vector<std::string> lines;
  std::mt19937_64 rng(41);
  std::vector<std::string> added;
  for (int i = 0; i < 300; ++i) {
    const std::string ts = i < 200 ? "2026-10-21T10:15:00Z" : "2026-10-21T11:20:00Z";
    EventLine e;
    e.Seq(i).Ts(ts).Metric(i % 10 == 9 ? "orders" : "latency").Key(i % 3 == 0 ? "b" : "a");
    if (i % 17 == 16 && !added.empty()) {
      e.Value(added[rng() % added.size()]).Retract();
    } else {
      const int64_t cents = static_cast<int64_t>(rng() % 200000) - 20000;
      const std::string v = i % 11 == 0 ? "0" : std::to_string(cents / 100) + "." + std::to_string(std::abs(cents % 100));
      if (i % 3 != 0) added.push_back(v);
      e.Value(v);
    }
    lines.push_back(e.Line());
  }
  return lines;
}

TEST(QuantilesKind, RedeliveriesCrashesAndBatchSizesGiveTheSameBytes) {
  TempDir d;
  const std::string clean_in = d / "clean.ndjson";
  const std::string in = d / "in.ndjson";
  WriteFile(clean_in, Join(Lines()));
  WriteFile(in, Redelivered(Lines()));
  const std::string clean = NewRoot(d, "clean");
  ASSERT_EQ(Snapsink({"run", clean, clean_in, "--final"}).exit_code, 0);
  const std::string want = ReadFile(clean + kData);
  ASSERT_FALSE(want.empty());
  // Footer version 5: rows may carry a sketch.
  EXPECT_EQ(want[want.size() - 64 + 8], 5);
  const std::vector<std::string> q = {"query", "", "--format", "csv", "--quantile", "0,0.1,0.5,0.9,0.99,1"};
  auto query = [&](const std::string& root) {
    std::vector<std::string> args = q;
    args[1] = root;
    RunResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string rows = query(clean);
  EXPECT_NE(rows.find("window,metric,key,count,sum,min,max,p0,p10,p50,p90,p99,p100,version,generation\n"),
            std::string::npos)
      << rows;
  for (const char* every : {"1", "7", "64"}) {
    const std::string root = NewRoot(d, std::string("batch") + every);
    RunResult r = Snapsink({"run", root, in, "--final", "--commit-every", every});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(root + kData), want) << every;
    EXPECT_EQ(query(root), rows) << every;
  }
  for (const auto& [point, hit] : std::vector<std::pair<std::string, std::string>>{
           {"ingest.before_commit", "3"}, {"ingest.after_commit", "3"}, {"seal.before_record", "1"}}) {
    const std::string root = NewRoot(d, "crash-" + point);
    RunResult r = Snapsink({"run", root, in, "--final", "--commit-every", "5"},
                           {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", hit}});
    ASSERT_EQ(r.exit_code, 99) << point << r.err;
    // The rerun reads the whole file again: the committed part is redelivered.
    r = Snapsink({"run", root, in, "--final", "--commit-every", "11"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(root + kData), want) << point;
    EXPECT_EQ(query(root), rows) << point;
  }
  EXPECT_EQ(Snapsink({"verify", clean}).exit_code, 0);
}

// A roll-up of many windows answers from the windows' sketches merged: the
// same answers as one sketch of all their events, built here.
TEST(QuantilesKind, RollupEqualsTheSketchOfAllEvents) {
  TempDir d;
  const std::string root = NewRoot(d, "root", {"--window", "1m"});
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(20.0), 1.5);
  DDSketch all;
  std::string in;
  std::vector<std::string> kept;
  int64_t sum = 0;
  for (int i = 0; i < 3000; ++i) {
    // 120 one-minute windows, 10:00 to 11:59.
    const int64_t ts = 1792576800000 + static_cast<int64_t>(i % 120) * 60000 + (i % 7) * 1000;
    EventLine e;
    e.Seq(i).Ts(ts).Metric("latency").Key("k");
    if (i % 23 == 22) {
      const std::string v = kept[rng() % kept.size()];
      e.Value(v).Retract();
      ASSERT_TRUE(all.Retract(Micros(v)));
      sum -= Micros(v);
    } else {
      const int64_t micros = std::llround(dist(rng) * 1000) * 1000 * (i % 31 == 0 ? -1 : 1);
      const std::string v = api::FormatMicros(micros);
      kept.push_back(v);
      e.Value(v);
      ASSERT_TRUE(all.Add(micros));
      sum += micros;
    }
    in += e.Line();
  }
  WriteFile(d / "in.ndjson", in);
  RunResult r = Snapsink({"run", root, d / "in.ndjson", "--final", "--commit-every", "97"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<double> qs = {0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1};
  RunResult q = Snapsink({"query", root, "--rollup", "all", "--format", "csv", "--quantile",
                          "0,0.01,0.1,0.25,0.5,0.75,0.9,0.99,0.999,1"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  std::string want = "bucket,metric,key,count,sum,min,max,p0,p1,p10,p25,p50,p75,p90,p99,p99.9,p100,windows,"
                     "generation\nall,latency,k," +
                     std::to_string(all.count()) + "," + api::FormatMicros(sum) + "," +
                     api::FormatMicros(all.min()) + "," + api::FormatMicros(all.max());
  for (double x : qs) want += "," + api::FormatMicros(std::llround(*all.Quantile(x)));
  want += ",120,1\n";
  EXPECT_EQ(q.out, want);
  // Hour buckets: two roll-ups of 60 windows each, each its own sketch.
  RunResult h = Snapsink({"query", root, "--rollup", "1h", "--format", "csv", "--quantile", "0.5"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 3) << h.out;
}

// On a small input every answer is within the sketch's relative accuracy
// (1%) of the exact value at the same rank, rounded to a micro; the same
// answers through GET /v1/query?quantile=.
TEST(QuantilesKind, AnswersWithinTheBoundOfExactValues) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  std::vector<int64_t> values;
  std::string in;
  for (int i = 0; i < 101; ++i) {
    const int64_t v = (i % 5 == 0 ? -1 : 1) * (static_cast<int64_t>(i) * i * 37 % 5000 + 1) * 10000;
    values.push_back(i == 50 ? 0 : v);
    in += EventLine().Seq(i).Ts("2026-10-21T10:15:00Z").Metric("latency").Key("a").Value(api::FormatMicros(values.back()))
              .Line();
  }
  WriteFile(d / "in.ndjson", in);
  ASSERT_EQ(Snapsink({"run", root, d / "in.ndjson", "--final"}).exit_code, 0);
  std::sort(values.begin(), values.end());
  const std::vector<double> qs = {0, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1};
  RunResult q = Snapsink({"query", root, "--format", "json", "--quantile", "0,0.05,0.25,0.5,0.75,0.9,0.95,0.99,1"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  for (double x : qs) {
    const std::string col = api::QuantileColumn(x);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(q.out, m, std::regex("\"" + col + "\":(-?[0-9.]+)"))) << col << q.out;
    const int64_t got = Micros(m[1].str());
    const int64_t exact = values[static_cast<size_t>(std::floor(x * 100))];
    EXPECT_LE(std::abs(static_cast<double>(got - exact)), 0.01 * std::abs(static_cast<double>(exact)) + 1)
        << col << " got " << got << " exact " << exact;
  }
  Server server = StartServe(root);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  auto r = c.Get("/v1/query?metric=latency&format=json&quantile=0,0.05,0.25,0.5,0.75,0.9,0.95,0.99,1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, q.out);
  r = c.Get("/v1/query?metric=latency&quantile=2");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("quantile '2': expected quantiles between 0 and 1"), std::string::npos) << r->body;
}

// A retract of a quantiles metric applies (its bucket goes down by one): the
// same rows as the events without the value; metric list shows the kind and
// its accuracy; a bad accuracy or quantile is a one-line error.
TEST(QuantilesKind, RetractAppliesAndTheKindIsListed) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  ASSERT_EQ(Snapsink({"metric", root, "set", "wait", "--kind", "quantiles", "--accuracy", "0.02"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"metric", root, "list"}).out,
            "metric   kind       accuracy\nlatency  quantiles  0.01\nwait     quantiles  0.02\n");
  EXPECT_EQ(Snapsink({"inspect", root, "metrics", "--json"}).out,
            "{\"metric\":\"latency\",\"kind\":\"quantiles\",\"accuracy\":0.01}\n"
            "{\"metric\":\"wait\",\"kind\":\"quantiles\",\"accuracy\":0.02}\n");
  RunResult bad = Snapsink({"metric", root, "set", "wait2", "--kind", "quantiles", "--accuracy", "2"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--accuracy '2': expected a relative accuracy from 0.0001 to 0.5"), std::string::npos)
      << bad.err;
  const std::string other = NewRoot(d, "other");
  std::string with, without;
  for (int i = 0; i < 4; ++i) {
    const std::string line = EventLine().Seq(i).Ts("2026-10-21T10:15:00Z").Metric("latency").Value(i * 10 + 1).Line();
    with += line;
    if (i != 2) without += line;
  }
  with += EventLine().Seq(4).Ts("2026-10-21T10:15:00Z").Metric("latency").Value(21).Retract().Line();
  WriteFile(d / "with.ndjson", with);
  WriteFile(d / "without.ndjson", without);
  RunResult r = Snapsink({"run", root, d / "with.ndjson", "--final", "--on-error", "stop"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Snapsink({"run", other, d / "without.ndjson", "--final"}).exit_code, 0);
  const std::vector<std::string> tail = {"--format", "csv", "--quantile", "0,0.5,1"};
  auto query = [&](const std::string& at) {
    std::vector<std::string> args = {"query", at};
    args.insert(args.end(), tail.begin(), tail.end());
    return Snapsink(args).out;
  };
  // count 3, sum 43, min 1, max 31 in both (events, 5 against 3, are not shown).
  EXPECT_EQ(query(root), query(other));
  EXPECT_NE(query(root).find(",3,43,1,31,"), std::string::npos) << query(root);
  RunResult q = Snapsink({"query", root, "--quantile", "0.5,x"});
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_NE(q.err.find("--quantile '0.5,x': expected quantiles between 0 and 1"), std::string::npos) << q.err;
}

// The same through the public API: declare with an accuracy, list, run,
// and read quantiles back through Reader::Query and Reader::Rollup.
TEST(QuantilesKind, PublicApi) {
  TempDir d;
  const std::string root = d / "root";
  std::string in;
  DDSketch want(20000);
  for (int i = 0; i < 200; ++i) {
    in += EventLine().Seq(i).Ts("2026-10-21T10:15:00Z").Metric("latency").Key("a").Value(i).Line();
    ASSERT_TRUE(want.Add(int64_t{i} * 1000000));
  }
  WriteFile(d / "in.ndjson", in);
  ASSERT_STATUS_OK(api::Sink::Create(root, api::InitOptions{}));
  {
    auto sink = api::Sink::Open(root);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->SetMetricKind("latency", api::MetricKind::kQuantiles, 20000));
    EXPECT_EQ((*sink)->SetMetricKind("other", api::MetricKind::kQuantiles, 600000).code(),
              Status::Code::kInvalidArgument);
    auto kinds = (*sink)->MetricKinds();
    ASSERT_STATUS_OK(kinds);
    ASSERT_EQ(kinds->size(), 1u);
    EXPECT_EQ((*kinds)[0].kind, api::MetricKind::kQuantiles);
    EXPECT_EQ((*kinds)[0].accuracy_ppm, 20000u);
    api::RunOptions run;
    run.ingest.files = {d / "in.ndjson"};
    run.final = true;
    ASSERT_STATUS_OK((*sink)->Run(run));
    // Another accuracy is another kind: refused over the live window.
    EXPECT_EQ((*sink)->SetMetricKind("latency", api::MetricKind::kQuantiles, 10000).code(),
              Status::Code::kInvalidArgument);
  }
  auto reader = api::Reader::Open(root);
  ASSERT_STATUS_OK(reader);
  api::QuerySpec q;
  q.quantiles = {0.5, 0.99};
  std::vector<api::QueryRow> rows;
  ASSERT_STATUS_OK((*reader)->Query(q, &rows));
  ASSERT_EQ(rows.size(), 1u);
  const std::vector<std::optional<int64_t>> answers = {std::llround(*want.Quantile(0.5)),
                                                       std::llround(*want.Quantile(0.99))};
  EXPECT_EQ(rows[0].row.quantile_micros, answers);
  EXPECT_EQ(rows[0].row.min_micros, std::optional<int64_t>(0));
  EXPECT_EQ(rows[0].row.max_micros, std::optional<int64_t>(199000000));
  q.rollup_ms = 0;
  std::vector<api::RollupRow> all;
  ASSERT_STATUS_OK((*reader)->Rollup(q, &all));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].quantile_micros, answers);
}

// docs/FORMAT.md's example of a version-5 row (tag 2) decodes to what it
// says, and its sketch to the one value 1 micro.
TEST(QuantilesKind, TheDocumentedSketchRowDecodes) {
  const unsigned char bytes[] = {0x03, 0x6c, 0x61, 0x74, 0x01, 0x61, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0f,
                                 0x02, 0x90, 0x4e, 0x80, 0x10, 0x02, 0x02, 0x01, 0x02, 0x02, 0x00, 0x01, 0x00,
                                 0x02, 0x00};
  const char* p = reinterpret_cast<const char*>(bytes);
  const char* end = p + sizeof(bytes);
  RowView r;
  ASSERT_TRUE(snapshot::GetRow(&p, end, &r, /*extended=*/true));
  EXPECT_EQ(p, end);
  EXPECT_EQ(r.metric, "lat");
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(r.sum_micros, 1);
  EXPECT_TRUE(r.has_range);
  EXPECT_EQ(r.min_micros, 1);
  EXPECT_EQ(r.max_micros, 1);
  DDSketch want;
  ASSERT_TRUE(want.Add(1));
  std::string encoded;
  want.Encode(&encoded);
  EXPECT_EQ(r.sketch, encoded);
}

}  // namespace
}  // namespace snapsink::testing
