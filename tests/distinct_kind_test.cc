// A distinct metric through the binary: `metric set --kind distinct`, the
// events' `item` through ingest, seal, publish, query (csv, json, table,
// /v1/query) and roll-ups; its snapshots the same bytes whatever the batch
// sizes, redeliveries or crashes; its roll-ups the estimate of the union of
// their items; small inputs counted exactly; bad items and retracts bad
// lines, counted and dead-lettered, nothing half applied; the write path
// gives the file path's bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include <httplib.h>

#include "engine/hyperloglog.h"
#include "snapshot/snapshot_format.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "tests/delivered_lines.h"
#include "tests/file_util.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr char kData[] = "/snapshots/20261021T100000Z/v1/data";

std::string NewRoot(const TempDir& d, const std::string& name, const std::vector<std::string>& init = {}) {
  const std::string root = d / name;
  std::vector<std::string> args = {"init", root};
  args.insert(args.end(), init.begin(), init.end());
  EXPECT_EQ(Snapsink(args).exit_code, 0);
  RunResult r = Snapsink({"metric", root, "set", "users", "--kind", "distinct"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "metric users is distinct (precision 14)\n");
  return root;
}

// line (EventLine's, "}\n" at its end) with an "item" field before the end;
// `json` is the field's JSON text as written.
std::string WithItemJson(std::string line, const std::string& json) {
  line.insert(line.size() - 2, ",\"item\":" + json);
  return line;
}
std::string WithItem(const std::string& line, const std::string& item) {
  return WithItemJson(line, "\"" + item + "\"");
}

// users (distinct) on keys a and b over two windows, items drawn from 400
// (so many repeat), orders (sum, some with an item it ignores). Each line once.
std::vector<std::string> Lines() {
  std::vector<std::string> lines;
  std::mt19937_64 rng(41);
  for (int i = 0; i < 600; ++i) {
    const std::string ts = i < 400 ? "2026-10-21T10:15:00Z" : "2026-10-21T11:20:00Z";
    const bool orders = i % 10 == 9;
    const std::string line =
        EventLine().Seq(i).Ts(ts).Metric(orders ? "orders" : "users").Key(i % 3 == 0 ? "b" : "a").Value(i % 5).Line();
    lines.push_back(orders && i % 20 != 9 ? line : WithItem(line, "user-" + std::to_string(rng() % 400)));
  }
  return lines;
}

std::string Query(const std::vector<std::string>& args) {
  RunResult r = Snapsink(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(DistinctKind, RedeliveriesCrashesAndBatchSizesGiveTheSameBytes) {
  TempDir d;
  const std::string clean_in = d / "clean.ndjson";
  const std::string in = d / "in.ndjson";
  WriteFile(clean_in, Join(Lines()));
  WriteFile(in, Redelivered(Lines()));
  const std::string clean = NewRoot(d, "clean");
  ASSERT_EQ(Snapsink({"run", clean, clean_in, "--final"}).exit_code, 0);
  const std::string want = ReadFile(clean + kData);
  ASSERT_FALSE(want.empty());
  // Footer version 6: rows may carry a distinct-count sketch.
  EXPECT_EQ(want[want.size() - 64 + 8], 6);
  const std::string rows = Query({"query", clean, "--format", "csv"});
  EXPECT_NE(rows.find("window,metric,key,count,sum,min,max,distinct,version,generation\n"), std::string::npos)
      << rows;
  for (const char* every : {"1", "7", "64"}) {
    const std::string root = NewRoot(d, std::string("batch") + every);
    RunResult r = Snapsink({"run", root, in, "--final", "--commit-every", every});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(root + kData), want) << every;
    EXPECT_EQ(Query({"query", root, "--format", "csv"}), rows) << every;
  }
  for (const auto& [point, hit] : std::vector<std::pair<std::string, std::string>>{
           {"ingest.before_commit", "3"},
           {"ingest.after_commit", "3"},
           {"seal.mid_data", "1"},
           {"seal.before_record", "1"},
           {"publish.after_rename", "1"}}) {
    const std::string root = NewRoot(d, "crash-" + point);
    RunResult r = Snapsink({"run", root, in, "--final", "--commit-every", "5"},
                           {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", hit}});
    ASSERT_EQ(r.exit_code, 99) << point << r.err;
    // The rerun reads the whole file again: the committed part is redelivered.
    r = Snapsink({"run", root, in, "--final", "--commit-every", "11"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(root + kData), want) << point;
    EXPECT_EQ(Query({"query", root, "--format", "csv"}), rows) << point;
    EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0) << point;
  }
}

// A roll-up of many windows answers from the windows' sketches merged: the
// estimate of one sketch of all their items, built here; an hour's bucket
// likewise of its own items.
TEST(DistinctKind, RollupEqualsTheEstimateOfTheUnion) {
  TempDir d;
  const std::string root = NewRoot(d, "root", {"--window", "1m"});
  std::mt19937_64 rng(7);
  HyperLogLog all, first_hour;
  std::set<std::string> exact;
  std::string in;
  for (int i = 0; i < 6000; ++i) {
    // 120 one-minute windows, 10:00 to 11:59; items overlap across windows.
    const int minute = i % 120;
    const int64_t ts = 1792576800000 + static_cast<int64_t>(minute) * 60000 + (i % 7) * 1000;
    const std::string item = "u" + std::to_string(rng() % 3000);
    in += WithItem(EventLine().Seq(i).Ts(ts).Metric("users").Key("k").Line(), item);
    all.Add(item);
    if (minute < 60) first_hour.Add(item);
    exact.insert(item);
  }
  WriteFile(d / "in.ndjson", in);
  RunResult r = Snapsink({"run", root, d / "in.ndjson", "--final", "--commit-every", "97"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query({"query", root, "--rollup", "all", "--format", "csv"}),
            "bucket,metric,key,count,sum,min,max,distinct,windows,generation\nall,users,k,6000,6000,1,1," +
                std::to_string(all.Estimate()) + ",120,1\n");
  // Within the sketch's error of the exact count (about 0.8% at precision 14).
  EXPECT_NEAR(static_cast<double>(all.Estimate()), static_cast<double>(exact.size()), 0.03 * exact.size());
  const std::string hours = Query({"query", root, "--rollup", "1h", "--format", "csv"});
  EXPECT_NE(hours.find("2026-10-21T10:00:00Z,users,k,3000,3000,1,1," + std::to_string(first_hour.Estimate()) + ",60,1\n"),
            std::string::npos)
      << hours;
}

// Small inputs count exactly: a key of 1, of 2 and of 100 distinct items,
// each sent many times, against the sets counted here; a key whose only
// events were bad lines has no row (0 items); count, min and max exact.
TEST(DistinctKind, SmallInputsCountExactly) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  std::string in;
  std::map<std::string, std::set<std::string>> items;
  std::map<std::string, int> count;
  int seq = 0;
  for (const auto& [key, n] : std::vector<std::pair<std::string, int>>{{"one", 1}, {"two", 2}, {"hundred", 100}}) {
    for (int i = 0; i < 5 * n + 3; ++i) {
      const std::string item = key + "-" + std::to_string(i % n);
      in += WithItem(EventLine().Seq(seq++).Ts("2026-10-21T10:15:00Z").Metric("users").Key(key).Value(i % 7).Line(),
                     item);
      items[key].insert(item);
      ++count[key];
    }
  }
  in += EventLine().Seq(seq++).Ts("2026-10-21T10:15:00Z").Metric("users").Key("none").Line();  // no item
  WriteFile(d / "in.ndjson", in);
  ASSERT_EQ(Snapsink({"run", root, d / "in.ndjson", "--final"}).exit_code, 0);
  std::string want = "window,metric,key,count,sum,min,max,distinct,version,generation\n";
  for (const std::string key : {"hundred", "one", "two"}) {
    int sum = 0;
    for (int i = 0; i < count[key]; ++i) sum += i % 7;
    want += "2026-10-21T10:00:00Z,users," + key + "," + std::to_string(count[key]) + "," + std::to_string(sum) +
            ",0,6," + std::to_string(items[key].size()) + ",1,1\n";
  }
  EXPECT_EQ(Query({"query", root, "--format", "csv"}), want);
  EXPECT_EQ(Query({"query", root, "--key", "one"}),
            "window                metric  key  count  sum  min  max  distinct  version  generation\n"
            "2026-10-21T10:00:00Z  users   one  8      21   0    6    1         1        1\n");
}

// A distinct metric's event without a well-formed item, and a retract, are
// bad lines: named, counted, dead-lettered, and the rows are those of the
// good lines alone. Another metric's event ignores item, well formed or not.
TEST(DistinctKind, BadItemsAndRetractsAreBadLinesNothingHalfApplied) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  const std::string other = NewRoot(d, "other");
  // The bad lines come from a producer of their own: no gap is left behind.
  auto e = [](int seq, const std::string& metric, const std::string& producer = "bad") {
    return EventLine().Producer(producer).Seq(seq).Ts("2026-10-21T10:15:00Z").Metric(metric).Key("a").Value(2).Line();
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {e(0, "users"), "missing field item (a distinct metric counts the distinct items of its events)"},
      {WithItemJson(e(1, "users"), "7"), "field item: expected string"},
      {WithItem(e(2, "users"), ""), "field item: length 0 not in 1..256"},
      {WithItem(e(3, "users"), std::string(257, 'x')), "field item: length 257 not in 1..256"},
      {WithItemJson(WithItem(e(4, "users"), "x"), "\"y\""), "duplicate field item"},
      {WithItem(EventLine().Producer("bad").Seq(5).Ts("2026-10-21T10:15:00Z").Metric("users").Key("a").Value(2)
                    .Retract().Line(),
                "x"),
       "op retract: metric is distinct, whose distinct-count sketch cannot take an item back"},
  };
  const std::vector<std::string> good = {WithItem(e(0, "users", "p"), "x"),
                                         WithItem(e(1, "users", "p"), std::string(256, 'y')),
                                         WithItemJson(e(2, "orders", "p"), "[1]"), e(3, "orders", "p")};
  std::string with = good[0];
  for (const auto& [line, reason] : bad) with += line;
  for (size_t i = 1; i < good.size(); ++i) with += good[i];
  WriteFile(d / "with.ndjson", with);
  WriteFile(d / "good.ndjson", Join(good));
  for (size_t i = 0; i < bad.size(); ++i) {
    WriteFile(d / "one.ndjson", bad[i].first);
    RunResult r =
        Snapsink({"ingest", NewRoot(d, "stop" + std::to_string(i)), d / "one.ndjson", "--on-error", "stop"});
    EXPECT_EQ(r.exit_code, 2) << bad[i].second;
    EXPECT_NE(r.err.find(":1: " + bad[i].second), std::string::npos) << r.err;
  }
  RunResult r = Snapsink({"run", root, d / "with.ndjson", "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string rejects;  // the one source's rejects file
  for (const auto& f : std::filesystem::directory_iterator(root + "/rejects")) rejects += ReadFile(f.path().string());
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_NE(rejects.find("\"line\":" + std::to_string(i + 2) + ","), std::string::npos) << rejects;
    EXPECT_NE(rejects.find("\"reason\":\"" + bad[i].second + "\""), std::string::npos) << bad[i].second;
  }
  const std::string status = Snapsink({"status", root, "--json"}).out;
  EXPECT_NE(status.find("\"rejected\":6"), std::string::npos) << status;
  ASSERT_EQ(Snapsink({"run", other, d / "good.ndjson", "--final"}).exit_code, 0);
  EXPECT_EQ(Query({"query", root, "--format", "csv"}), Query({"query", other, "--format", "csv"}));
  EXPECT_NE(Query({"query", root, "--format", "csv"}).find(",users,a,2,4,2,2,2,1,1\n"), std::string::npos);
  // A precision out of range, or on another kind, is a one-line error; the
  // kind cannot change over the live window.
  RunResult p = Snapsink({"metric", root, "set", "x", "--kind", "distinct", "--precision", "19"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("--precision '19': expected an integer from 4 to 18"), std::string::npos) << p.err;
  p = Snapsink({"metric", root, "set", "x", "--kind", "sum", "--precision", "12"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("--precision is a distinct metric's"), std::string::npos) << p.err;
  p = Snapsink({"metric", root, "set", "users", "--kind", "distinct", "--precision", "12"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.err.find("metric users is distinct (precision 14) and window 2026-10-21T10:00:00Z still holds its "
                       "aggregates: its kind cannot change to distinct (precision 12)"),
            std::string::npos)
      << p.err;
}

// The public API and HTTP: declare with a precision, list it, read the
// estimate through Reader::Query and Rollup, and GET /v1/query answers
// what the CLI prints (json and csv).
TEST(DistinctKind, PublicApiAndHttp) {
  TempDir d;
  const std::string root = d / "root";
  std::string in;
  HyperLogLog want(10);
  for (int i = 0; i < 3000; ++i) {
    const std::string item = "i" + std::to_string(i % 1700);
    in += WithItem(EventLine().Seq(i).Ts("2026-10-21T10:15:00Z").Metric("users").Key("a").Line(), item);
    want.Add(item);
  }
  WriteFile(d / "in.ndjson", in);
  ASSERT_STATUS_OK(api::Sink::Create(root, api::InitOptions{}));
  {
    auto sink = api::Sink::Open(root);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->SetMetricKind("users", api::MetricKind::kDistinct, 0, 10));
    EXPECT_EQ((*sink)->SetMetricKind("other", api::MetricKind::kDistinct, 0, 3).code(), Status::Code::kInvalidArgument);
    auto kinds = (*sink)->MetricKinds();
    ASSERT_STATUS_OK(kinds);
    ASSERT_EQ(kinds->size(), 1u);
    EXPECT_EQ((*kinds)[0].kind, api::MetricKind::kDistinct);
    EXPECT_EQ((*kinds)[0].precision, 10);
    api::RunOptions run;
    run.ingest.files = {d / "in.ndjson"};
    run.final = true;
    ASSERT_STATUS_OK((*sink)->Run(run));
  }
  EXPECT_EQ(Query({"metric", root, "list"}), "metric  kind      precision\nusers   distinct  10\n");
  EXPECT_EQ(Query({"inspect", root, "metrics", "--json"}),
            "{\"metric\":\"users\",\"kind\":\"distinct\",\"precision\":10}\n");
  auto reader = api::Reader::Open(root);
  ASSERT_STATUS_OK(reader);
  api::QuerySpec q;
  std::vector<api::QueryRow> rows;
  ASSERT_STATUS_OK((*reader)->Query(q, &rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].row.distinct, std::optional<uint64_t>(want.Estimate()));
  EXPECT_EQ(rows[0].row.count, 3000);
  q.rollup_ms = 0;
  std::vector<api::RollupRow> all;
  ASSERT_STATUS_OK((*reader)->Rollup(q, &all));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].distinct, std::optional<uint64_t>(want.Estimate()));
  Server server = StartServe(root);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  for (const char* format : {"json", "csv"}) {
    auto r = c.Get(std::string("/v1/query?format=") + format);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, Query({"query", root, "--format", format})) << format;
    r = c.Get(std::string("/v1/query?rollup=all&format=") + format);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, Query({"query", root, "--rollup", "all", "--format", format})) << format;
  }
  EXPECT_NE(Query({"query", root, "--format", "json"}).find("\"distinct\":" + std::to_string(want.Estimate())),
            std::string::npos);
}

// docs/FORMAT.md's example of a version-6 row (tag 3) decodes to what it
// says, and its sketch to that of "alice" and "bob".
TEST(DistinctKind, TheDocumentedDistinctRowDecodes) {
  const unsigned char bytes[] = {0x03, 0x75, 0x73, 0x72, 0x01, 0x61, 0x04, 0x04, 0x80, 0x92, 0xf4, 0x01,
                                 0x03, 0x80, 0x89, 0x7a, 0x80, 0x89, 0x7a, 0x0a, 0x01, 0x0e, 0x00, 0x02,
                                 0x80, 0x0a, 0x01, 0xe8, 0x1c, 0x02};
  const char* p = reinterpret_cast<const char*>(bytes);
  const char* end = p + sizeof(bytes);
  RowView r;
  ASSERT_TRUE(snapshot::GetRow(&p, end, &r, /*extended=*/true));
  EXPECT_EQ(p, end);
  EXPECT_EQ(r.metric, "usr");
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.sum_micros, 2000000);
  EXPECT_TRUE(r.has_range);
  EXPECT_EQ(r.min_micros, 1000000);
  EXPECT_EQ(r.max_micros, 1000000);
  HyperLogLog want;
  want.Add("alice");
  want.Add("bob");
  std::string encoded;
  want.Encode(&encoded);
  EXPECT_EQ(r.sketch, encoded);
  // Tag 3 with a quantile sketch's first byte (or tag 2 with this one) is refused.
  std::string swapped(reinterpret_cast<const char*>(bytes), sizeof(bytes));
  swapped[12] = 0x02;
  p = swapped.data();
  EXPECT_FALSE(snapshot::GetRow(&p, p + swapped.size(), &r, /*extended=*/true));
}

// A backfill version of a distinct metric is the bytes of a fresh run over
// the same events: live holds the events as delivered (redelivered, v1),
// the archive a correction (every 4th user's item another), backfilled as
// v2; a fresh root fed the corrected events as delivered publishes v1 with
// v2's bytes.
TEST(DistinctKind, BackfillVersionEqualsAFreshRun) {
  TempDir d;
  std::vector<std::string> corrected = Lines();
  for (size_t i = 0; i < corrected.size(); i += 4) {
    const size_t at = corrected[i].find("\"item\":\"user-");
    if (at != std::string::npos) corrected[i].insert(at + 8, "fixed-");
  }
  const auto run = [&](const std::string& name, const std::string& events) {
    const std::string root = NewRoot(d, name), in = d / (name + ".ndjson");
    WriteFile(in, events);
    RunResult r = Snapsink({"run", root, in, "--final"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return root;
  };
  const std::string live = run("live", Redelivered(Lines()));
  const std::string archive = d / "archive.ndjson";
  WriteFile(archive, Join(corrected));
  RunResult r = Snapsink({"backfill", live, "--version", "2", archive});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string fresh = run("fresh", Redelivered(corrected));
  const std::string want = ReadFile(fresh + kData);
  ASSERT_FALSE(want.empty());
  const std::string v2 = std::string(kData).replace(std::string(kData).find("/v1/"), 4, "/v2/");
  EXPECT_NE(ReadFile(live + kData), want) << "the correction changes the sketches";
  EXPECT_EQ(ReadFile(live + v2), want);
  EXPECT_EQ(Snapsink({"verify", live}).exit_code, 0);
}

// The write path (api::Sink::Write, batches of 1, 9 and 1,000 records) fed
// the lines with redeliveries, late and at the end, and every 11th line
// from 30 on held back to the end (a gap filled late; Delivered) publishes
// the bytes of a file run over each line once, in both windows, and the
// same query answer.
TEST(DistinctKind, WritePathEqualsTheFilePath) {
  TempDir d;
  const std::vector<std::string> lines = Lines();
  const std::string file_root = NewRoot(d, "file"), in = d / "file.ndjson";
  WriteFile(in, Join(lines));
  ASSERT_EQ(Snapsink({"run", file_root, in, "--final"}).exit_code, 0);
  const std::string second = "/snapshots/20261021T110000Z/v1/data";
  const std::string want = ReadFile(file_root + kData), want_second = ReadFile(file_root + second);
  ASSERT_FALSE(want.empty());
  ASSERT_FALSE(want_second.empty());
  const std::vector<std::string> delivered = Delivered(lines);
  for (size_t batch : {1, 9, 1000}) {
    const std::string root = d / ("write" + std::to_string(batch));
    api::InitOptions o;
    o.metrics = {{"users", api::MetricKind::kDistinct, 0}};
    ASSERT_STATUS_OK(api::Sink::Create(root, o));
    auto sink = api::Sink::Open(root);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK(WriteInBatches(**sink, "users-topic", delivered, batch));
    ASSERT_STATUS_OK((*sink)->Seal({.windows = {}, .all = true}));
    ASSERT_STATUS_OK((*sink)->Publish());
    sink->reset();
    EXPECT_EQ(ReadFile(root + kData), want) << "batches of " << batch;
    EXPECT_EQ(ReadFile(root + second), want_second) << "batches of " << batch;
    EXPECT_EQ(Query({"query", root, "--format", "csv"}), Query({"query", file_root, "--format", "csv"}))
        << "batches of " << batch;
  }
}

}  // namespace
}  // namespace snapsink::testing
