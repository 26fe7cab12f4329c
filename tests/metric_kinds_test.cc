// Metric kinds through the binary: `metric set|list`, a minmax metric's min
// and max through ingest, seal, publish, query and roll-up, its retracts
// refused, a kind change over live windows refused, and the bytes of its
// snapshots the same whatever the batch sizes or crashes.
#include <gtest/gtest.h>

#include <cctype>
#include <climits>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include <httplib.h>

#include "engine/decimal.h"
#include "snapshot/snapshot_format.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "tests/file_util.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr char kData[] = "/snapshots/20261021T100000Z/v1/data";

// latency (minmax) on keys a and b, orders (sum) on key a.
std::string Input() {
  std::string s;
  const char* values[] = {"3", "-1.5", "7.25", "2", "0"};
  for (int i = 0; i < 5; ++i) {
    s += EventLine().Seq(i).Ts("2026-10-21T10:15:00Z").Metric("latency").Key(i == 3 ? "b" : "a").Value(values[i]).Line();
  }
  s += EventLine().Seq(5).Ts("2026-10-21T10:16:00Z").Metric("orders").Key("a").Value("4").Line();
  s += EventLine().Seq(6).Ts("2026-10-21T11:16:00Z").Metric("latency").Key("a").Value("-9").Line();
  return s;
}

// ROOT/rejects/<the source name, each byte but [A-Za-z0-9._-] as _>.ndjson
std::string RejectsName(std::string source) {
  for (char& c : source) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return source + ".ndjson";
}

std::string NewRoot(const TempDir& d, const std::string& name) {
  const std::string root = d / name;
  EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunResult r = Snapsink({"metric", root, "set", "latency", "--kind", "minmax"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "metric latency is minmax\n");
  return root;
}

TEST(MetricKinds, MinMaxThroughQueryAndRollup) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  EXPECT_EQ(Snapsink({"metric", root, "list"}).out, "metric   kind\nlatency  minmax\n");
  const std::string in = d / "in.ndjson";
  WriteFile(in, Input() + EventLine().Seq(7).Ts("2026-10-21T10:17:00Z").Metric("latency").Key("a").Value("3")
                              .Retract().Line());
  RunResult r = Snapsink({"run", root, in, "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The retract is a bad line (counted below), and nothing of it applied.
  RunResult q = Snapsink({"query", root, "--format", "json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out,
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"latency\",\"key\":\"a\",\"count\":4,\"sum\":8.75,"
            "\"min\":-1.5,\"max\":7.25,\"version\":1,\"generation\":1}\n"
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"latency\",\"key\":\"b\",\"count\":1,\"sum\":2,"
            "\"min\":2,\"max\":2,\"version\":1,\"generation\":1}\n"
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"a\",\"count\":1,\"sum\":4,"
            "\"version\":1,\"generation\":1}\n"
            "{\"window\":\"2026-10-21T11:00:00Z\",\"metric\":\"latency\",\"key\":\"a\",\"count\":1,\"sum\":-9,"
            "\"min\":-9,\"max\":-9,\"version\":1,\"generation\":1}\n");
  EXPECT_EQ(Snapsink({"query", root, "--metric", "latency", "--key", "b", "--format", "csv"}).out,
            "window,metric,key,count,sum,min,max,version,generation\n"
            "2026-10-21T10:00:00Z,latency,b,1,2,2,2,1,1\n");
  EXPECT_EQ(Snapsink({"query", root, "--rollup", "1d", "--metric", "latency", "--format", "csv"}).out,
            "bucket,metric,key,count,sum,min,max,windows,generation\n"
            "2026-10-21T00:00:00Z,latency,a,5,-0.25,-9,7.25,2,1\n"
            "2026-10-21T00:00:00Z,latency,b,1,2,2,2,2,1\n");
  // A sum metric's output is what it always was.
  EXPECT_EQ(Snapsink({"query", root, "--metric", "orders", "--format", "csv"}).out,
            "window,metric,key,count,sum,version,generation\n2026-10-21T10:00:00Z,orders,a,1,4,1,1\n");
  RunResult src = Snapsink({"inspect", root, "sources", "--json"});
  EXPECT_NE(src.out.find("\"rejected\":1"), std::string::npos) << src.out;
  EXPECT_NE(src.out.find("\"applied\":7"), std::string::npos) << src.out;
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

// The same through the public API: declare, list, run, read back.
TEST(MetricKinds, PublicApi) {
  TempDir d;
  const std::string root = d / "root";
  const std::string in = d / "in.ndjson";
  WriteFile(in, Input());
  ASSERT_STATUS_OK(api::Sink::Create(root, api::InitOptions{}));
  {
    auto sink = api::Sink::Open(root);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->SetMetricKind("latency", api::MetricKind::kMinMax));
    EXPECT_EQ((*sink)->SetMetricKind("", api::MetricKind::kMinMax).code(), Status::Code::kInvalidArgument);
    auto kinds = (*sink)->MetricKinds();
    ASSERT_STATUS_OK(kinds);
    ASSERT_EQ(kinds->size(), 1u);
    EXPECT_EQ((*kinds)[0].metric, "latency");
    EXPECT_EQ((*kinds)[0].kind, api::MetricKind::kMinMax);
    api::RunOptions run;
    run.ingest.files = {in};
    run.final = true;
    ASSERT_STATUS_OK((*sink)->Run(run));
    EXPECT_EQ((*sink)->SetMetricKind("latency", api::MetricKind::kSum).code(), Status::Code::kInvalidArgument);
  }
  auto reader = api::Reader::Open(root);
  ASSERT_STATUS_OK(reader);
  auto a = (*reader)->Get(Ms("2026-10-21T10:00:00Z"), "latency", "a");
  ASSERT_STATUS_OK(a);
  EXPECT_EQ(a->count, 4);
  EXPECT_EQ(a->min_micros, std::optional<int64_t>(-1500000));
  EXPECT_EQ(a->max_micros, std::optional<int64_t>(7250000));
  auto orders = (*reader)->Get(Ms("2026-10-21T10:00:00Z"), "orders", "a");
  ASSERT_STATUS_OK(orders);
  EXPECT_FALSE(orders->min_micros.has_value());
  EXPECT_FALSE(orders->max_micros.has_value());
}

// docs/FORMAT.md's example of an extended row decodes to what it says.
TEST(MetricKinds, TheDocumentedExtendedRowDecodes) {
  const unsigned char bytes[] = {0x03, 0x6c, 0x61, 0x74, 0x01, 0x61, 0x04, 0x04, 0xc0, 0xb1, 0x9f,
                                 0x05, 0x01, 0xc0, 0x8d, 0xb7, 0x01, 0x80, 0xa4, 0xe8, 0x03};
  const char* p = reinterpret_cast<const char*>(bytes);
  const char* end = p + sizeof(bytes);
  RowView r;
  ASSERT_TRUE(snapshot::GetRow(&p, end, &r, /*extended=*/true));
  EXPECT_EQ(p, end);
  EXPECT_EQ(r.metric, "lat");
  EXPECT_EQ(r.key, "a");
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.events, 2);
  EXPECT_EQ(r.sum_micros, 5500000);
  EXPECT_TRUE(r.has_range);
  EXPECT_EQ(r.min_micros, 1500000);
  EXPECT_EQ(r.max_micros, 4000000);
  // The same row without its extension, in a version 3 file: the bytes as before.
  p = reinterpret_cast<const char*>(bytes);
  ASSERT_TRUE(snapshot::GetRow(&p, end, &r, /*extended=*/false));
  EXPECT_EQ(p - reinterpret_cast<const char*>(bytes), 12);
  EXPECT_FALSE(r.has_range);
}

// GET /v1/query answers a minmax metric's min and max as query does.
TEST(MetricKinds, ServeAnswersMinAndMax) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  const std::string in = d / "in.ndjson";
  WriteFile(in, Input());
  ASSERT_EQ(Snapsink({"run", root, in, "--final"}).exit_code, 0);
  Server server = StartServe(root);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  auto r = c.Get("/v1/query?metric=latency&key=a&format=json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, Snapsink({"query", root, "--metric", "latency", "--key", "a", "--format", "json"}).out);
  EXPECT_EQ(r->body,
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"latency\",\"key\":\"a\",\"count\":4,\"sum\":8.75,"
            "\"min\":-1.5,\"max\":7.25,\"version\":1,\"generation\":1}\n"
            "{\"window\":\"2026-10-21T11:00:00Z\",\"metric\":\"latency\",\"key\":\"a\",\"count\":1,\"sum\":-9,"
            "\"min\":-9,\"max\":-9,\"version\":1,\"generation\":1}\n");
  r = c.Get("/v1/query?metric=latency&rollup=all&format=json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body,
            "{\"bucket\":\"all\",\"metric\":\"latency\",\"key\":\"a\",\"count\":5,\"sum\":-0.25,\"min\":-9,"
            "\"max\":7.25,\"windows\":2,\"generation\":1}\n"
            "{\"bucket\":\"all\",\"metric\":\"latency\",\"key\":\"b\",\"count\":1,\"sum\":2,\"min\":2,"
            "\"max\":2,\"windows\":2,\"generation\":1}\n");
  // CSV: the columns are the whole answer's, min and max among them when a
  // row has them (a sum metric's row leaves them empty), as query prints.
  r = c.Get("/v1/query?format=csv");
  ASSERT_TRUE(r);
  const std::string csv = Snapsink({"query", root, "--format", "csv"}).out;
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "window,metric,key,count,sum,min,max,version,generation");
  EXPECT_EQ(r->body, csv);
  r = c.Get("/v1/query?rollup=all&format=csv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, Snapsink({"query", root, "--rollup", "all", "--format", "csv"}).out);
}

TEST(MetricKinds, RetractOfMinMaxIsABadLine) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  const std::string in = d / "in.ndjson";
  WriteFile(in, EventLine().Seq(0).Ts("2026-10-21T10:15:00Z").Metric("latency").Value("3").Line() +
                    EventLine().Seq(1).Ts("2026-10-21T10:15:00Z").Metric("latency").Value("3").Retract().Line());
  RunResult r = Snapsink({"ingest", root, in, "--on-error", "stop"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(":2: op retract: metric is minmax"), std::string::npos) << r.err;
  r = Snapsink({"ingest", root, in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rejects = ReadFile(root + "/rejects/" + RejectsName(in));
  EXPECT_NE(rejects.find("\"line\":2,"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("\"reason\":\"op retract: metric is minmax, whose min and max cannot take a value back\""),
            std::string::npos)
      << rejects;
}

TEST(MetricKinds, KindChangeOverALiveWindowIsRefused) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const std::string in = d / "in.ndjson";
  WriteFile(in, EventLine().Seq(0).Ts("2026-10-21T10:15:00Z").Metric("latency").Value("3").Line());
  ASSERT_EQ(Snapsink({"ingest", root, in}).exit_code, 0);
  RunResult r = Snapsink({"metric", root, "set", "latency", "--kind", "minmax"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "snapsink: metric latency is sum and window 2026-10-21T10:00:00Z still holds its aggregates: its kind "
            "cannot change to minmax until those windows leave the state (retention: gc --retain), or send the new "
            "kind's events under a new metric name\n");
  EXPECT_EQ(Snapsink({"metric", root, "list"}).out, "metric  kind\n");
  // Another metric, with no window yet, may be declared; setting it again is a no-op.
  EXPECT_EQ(Snapsink({"metric", root, "set", "size", "--kind", "minmax"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"metric", root, "set", "size", "--kind", "minmax"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"metric", root, "set", "latency", "--kind", "sum"}).exit_code, 0);  // what it is
  EXPECT_EQ(Snapsink({"metric", root, "list", "--json"}).out,
            "{\"metric\":\"latency\",\"kind\":\"sum\"}\n{\"metric\":\"size\",\"kind\":\"minmax\"}\n");
}

// A rollback rewinds a minmax metric's range with its window: later events
// widen the range the rolled-back generation held, not the one it replaced.
TEST(MetricKinds, RollbackRewindsTheRange) {
  TempDir d;
  const std::string root = NewRoot(d, "root");
  const std::string in = d / "in.ndjson";
  WriteFile(in, EventLine().Seq(0).Ts("2026-10-21T10:15:00Z").Metric("latency").Key("a").Value("5").Line());
  ASSERT_EQ(Snapsink({"run", root, in, "--final"}).exit_code, 0);
  AppendFile(in, EventLine().Seq(1).Ts("2026-10-21T10:16:00Z").Metric("latency").Key("a").Value("100").Line());
  ASSERT_EQ(Snapsink({"run", root, in, "--final"}).exit_code, 0);
  RunResult r = Snapsink({"rollback", root, "--generation", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  AppendFile(in, EventLine().Seq(2).Ts("2026-10-21T10:17:00Z").Metric("latency").Key("a").Value("7").Line());
  ASSERT_EQ(Snapsink({"run", root, in, "--final"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"query", root, "--format", "csv"}).out,
            "window,metric,key,count,sum,min,max,version,generation\n"
            "2026-10-21T10:00:00Z,latency,a,2,12,5,7,3,4\n");
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

// Only a kind other than sum raises the state's format (older builds then
// refuse the root); a sum declaration leaves it readable by them.
TEST(MetricKinds, OnlyAnotherKindThanSumRaisesTheFormat) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  ASSERT_EQ(Snapsink({"metric", root, "set", "orders", "--kind", "sum"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"upgrade", root, "--dry-run"}).out, root + " is already of format 5; nothing to do\n");
  ASSERT_EQ(Snapsink({"metric", root, "set", "latency", "--kind", "minmax"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"upgrade", root, "--dry-run"}).out, root + " is already of format 6; nothing to do\n");
}

// A crash before the kind's commit leaves the metric undeclared; the rerun declares it.
TEST(MetricKinds, CrashBeforeTheKindCommitsThenRerun) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunResult r = Snapsink({"metric", root, "set", "latency", "--kind", "minmax"},
                         {{"SNAPSINK_CRASH_AT", "metric.before_commit"}});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  EXPECT_EQ(Snapsink({"metric", root, "list"}).out, "metric  kind\n");
  ASSERT_EQ(Snapsink({"metric", root, "set", "latency", "--kind", "minmax"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"metric", root, "list"}).out, "metric   kind\nlatency  minmax\n");
}

// A crash mid-ingest then a rerun, and other batch sizes, give the snapshot
// bytes of a clean run.
TEST(MetricKinds, CrashRerunAndBatchSizesGiveTheSameBytes) {
  TempDir d;
  const std::string in = d / "in.ndjson";
  WriteFile(in, Input());
  const std::string clean = NewRoot(d, "clean");
  ASSERT_EQ(Snapsink({"run", clean, in, "--final"}).exit_code, 0);
  const std::string want = ReadFile(clean + kData);
  ASSERT_FALSE(want.empty());
  // Footer version 4: the rows end in their extension.
  EXPECT_EQ(want[want.size() - 64 + 8], 4);
  const std::string rows =
      "window,metric,key,count,sum,min,max,version,generation\n"
      "2026-10-21T10:00:00Z,latency,a,4,8.75,-1.5,7.25,1,1\n"
      "2026-10-21T10:00:00Z,latency,b,1,2,2,2,1,1\n"
      "2026-10-21T10:00:00Z,orders,a,1,4,,,1,1\n"
      "2026-10-21T11:00:00Z,latency,a,1,-9,-9,-9,1,1\n";
  EXPECT_EQ(Snapsink({"query", clean, "--format", "csv"}).out, rows);
  for (const char* every : {"1", "2", "3"}) {
    const std::string root = NewRoot(d, std::string("batch") + every);
    RunResult r = Snapsink({"run", root, in, "--final", "--commit-every", every});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(root + kData), want) << every;
    EXPECT_EQ(Snapsink({"query", root, "--format", "csv"}).out, rows) << every;
  }
  for (const char* point : {"ingest.before_commit", "ingest.after_commit"}) {
    const std::string root = NewRoot(d, std::string("crash-") + point);
    RunResult r = Snapsink({"ingest", root, in, "--commit-every", "2"},
                           {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", "2"}});
    ASSERT_EQ(r.exit_code, 99) << r.err;
    r = Snapsink({"run", root, in, "--final", "--commit-every", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(root + kData), want) << point;
    EXPECT_EQ(Snapsink({"query", root, "--format", "csv"}).out, rows) << point;
  }
  // A backfill of the same events gives the same rows (its version 2).
  const std::string bf = NewRoot(d, "backfill");
  ASSERT_EQ(Snapsink({"run", bf, in, "--final"}).exit_code, 0);
  RunResult r = Snapsink({"backfill", bf, "--version", "2", in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(bf + "/snapshots/20261021T100000Z/v2/data"), want);
}

// An oracle check, as the SQLite comparisons are for sums: small random
// inputs (three seeds) of a minmax metric and a distinct metric over three
// windows and four keys, delivered with redeliveries and a gap filled late,
// among bad lines (a value that is not a number, a retract on either kind,
// a distinct event without an item), against count, sum, min, max and the
// exact number of distinct items computed here, per window and rolled up
// over the day; every bad line rejected, nothing of it applied.
TEST(MetricKinds, SmallRandomInputsEqualAReferenceComputedHere) {
  struct Ref {
    int64_t count = 0, sum = 0, min = INT64_MAX, max = INT64_MIN;
    std::set<std::string> items;
    void Add(int64_t v, const std::string& item) {
      ++count;
      sum += v;
      min = std::min(min, v);
      max = std::max(max, v);
      if (!item.empty()) items.insert(item);
    }
  };
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    TempDir d;
    const std::string root = d / "root";
    ASSERT_EQ(Snapsink({"init", root, "--metric", "latency:minmax", "--metric", "users:distinct"}).exit_code, 0);
    std::mt19937_64 rng(seed);
    std::map<std::tuple<int, std::string, std::string>, Ref> by_window;  // (hour, metric, key)
    std::map<std::pair<std::string, std::string>, Ref> by_day;
    std::vector<std::string> good, bad;
    for (int i = 0; i < 160; ++i) {
      const bool users = rng() % 2 == 0;
      const int hour = static_cast<int>(rng() % 3);
      const std::string metric = users ? "users" : "latency", key(1, static_cast<char>('a' + rng() % 4));
      const int64_t micros = (static_cast<int64_t>(rng() % 20001) - 10000) * 10000;  // -100.00..100.00
      const std::string item = users ? "u" + std::to_string(rng() % 12) : "";
      const std::string ts = "2026-10-21T1" + std::to_string(hour) + ":15:00Z";
      const int fault = static_cast<int>(rng() % 10);
      EventLine e;
      e.Ts(ts).Metric(metric).Key(key).Value(FormatMicros(micros));
      if (fault == 0) e.Value("\"" + FormatMicros(micros) + "\"");  // a string, not a number
      if (fault == 1) e.Retract();
      std::string line = (fault <= 1 || (users && fault == 2) ? e.Producer("bad").Seq(bad.size())
                                                              : e.Seq(good.size())).Line();
      if (users && fault != 2) line.insert(line.size() - 2, ",\"item\":\"" + item + "\"");
      if (fault <= 1 || (users && fault == 2)) {
        bad.push_back(line);
        continue;
      }
      good.push_back(line);
      by_window[{hour, metric, key}].Add(micros, item);
      by_day[{metric, key}].Add(micros, item);
    }
    // Every 5th good line twice, lines 20..29 held back to the end (a gap
    // filled late), the bad lines among them.
    std::string in_text;
    size_t next_bad = 0;
    for (size_t i = 0; i < good.size(); ++i) {
      if (i % 3 == 0 && next_bad < bad.size()) in_text += bad[next_bad++];
      if (i >= 20 && i < 30) continue;
      in_text += good[i];
      if (i % 5 == 0) in_text += good[i];
    }
    for (size_t i = 20; i < 30; ++i) in_text += good[i];
    while (next_bad < bad.size()) in_text += bad[next_bad++];
    const std::string in = d / "in.ndjson";
    WriteFile(in, in_text);
    RunResult r = Snapsink({"run", root, in, "--final"});
    ASSERT_EQ(r.exit_code, 0) << r.err;

    auto row = [](const Ref& ref, bool users) {
      return std::to_string(ref.count) + "," + FormatMicros(ref.sum) + "," + FormatMicros(ref.min) + "," +
             FormatMicros(ref.max) + "," + (users ? std::to_string(ref.items.size()) : "");
    };
    std::string want = "window,metric,key,count,sum,min,max,distinct,version,generation\n";
    for (const auto& [k, ref] : by_window) {
      const auto& [hour, metric, key] = k;
      want += "2026-10-21T1" + std::to_string(hour) + ":00:00Z," + metric + "," + key + "," +
              row(ref, metric == "users") + ",1,1\n";
    }
    EXPECT_EQ(Snapsink({"query", root, "--format", "csv"}).out, want);
    want = "bucket,metric,key,count,sum,min,max,distinct,windows,generation\n";
    for (const auto& [k, ref] : by_day) {
      want += "2026-10-21T00:00:00Z," + k.first + "," + k.second + "," + row(ref, k.first == "users") + ",3,1\n";
    }
    EXPECT_EQ(Snapsink({"query", root, "--rollup", "1d", "--format", "csv"}).out, want);
    const std::string sources = Snapsink({"inspect", root, "sources", "--json"}).out;
    EXPECT_NE(sources.find("\"rejected\":" + std::to_string(bad.size()) + ","), std::string::npos) << sources;
    EXPECT_NE(sources.find("\"applied\":" + std::to_string(good.size()) + ","), std::string::npos) << sources;
  }
}

}  // namespace
}  // namespace snapsink::testing
