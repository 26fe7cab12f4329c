// A quantiles metric exactly once on the other roads in: the write path
// (api::Sink::Write, batches of any size, redeliveries, gaps filled late)
// gives the bytes of the file path, and a backfill version gives the bytes
// of a fresh run over the same events.
#include <gtest/gtest.h>

#include <random>

#include "snapsink/sink.h"
#include "tests/delivered_lines.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

constexpr char kWindow[] = "/snapshots/20261021T100000Z";

// latency (quantiles) on three keys with zeros, negatives and retracts of
// values added; orders (sum). Two producers, so that one's gaps are filled
// while the other goes on. Value `shift` moves every value (a corrected
// archive).
std::vector<std::string> Lines(int shift) {
  std::vector<std::string> lines;
  std::mt19937_64 rng(4141);
  std::vector<std::string> added;
  for (int i = 0; i < 600; ++i) {
    EventLine e;
    e.Producer(i % 2 ? "p" : "q").Seq(i / 2).Ts(1792576800000 + (i % 50) * 60000);
    e.Metric(i % 10 == 9 ? "orders" : "latency").Key(std::string(1, static_cast<char>('a' + i % 3)));
    if (i % 19 == 18 && !added.empty()) {
      e.Value(added[rng() % added.size()]).Retract();
    } else {
      const int64_t v = i % 13 == 0 ? 0 : static_cast<int64_t>(rng() % 100000) - 10000 + shift;
      const std::string text = std::to_string(v / 100) + "." + std::to_string(100 + std::abs(v % 100)).substr(1);
      e.Value(v < 0 && v > -100 ? "-" + text : text);
      if (i % 10 != 9) added.push_back(v < 0 && v > -100 ? "-" + text : text);
    }
    lines.push_back(e.Line());
  }
  return lines;
}

std::string FileRoot(const TempDir& d, const std::string& name, const std::string& events) {
  const std::string root = d / name, in = d / (name + ".ndjson");
  WriteFile(in, events);
  EXPECT_EQ(Snapsink({"init", root, "--metric", "latency:quantiles"}).exit_code, 0);
  RunResult r = Snapsink({"run", root, in, "--final"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return root;
}

TEST(QuantilesExactlyOnce, WritePathEqualsTheFilePath) {
  TempDir d;
  const std::vector<std::string> lines = Lines(0);
  const std::string file_root = FileRoot(d, "file", Join(lines));
  const std::string want = ReadFile(file_root + kWindow + "/v1/data");
  ASSERT_FALSE(want.empty());
  for (size_t batch : {1, 9, 1000}) {
    const std::string root = d / ("write" + std::to_string(batch));
    api::InitOptions o;
    o.metrics = {{"latency", api::MetricKind::kQuantiles, 0}};
    ASSERT_STATUS_OK(api::Sink::Create(root, o));
    auto sink = api::Sink::Open(root);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK(WriteInBatches(**sink, "orders-topic", Delivered(lines), batch));
    ASSERT_STATUS_OK((*sink)->Seal({.windows = {}, .all = true}));
    ASSERT_STATUS_OK((*sink)->Publish());
    sink->reset();
    EXPECT_EQ(ReadFile(root + kWindow + "/v1/data"), want) << "batches of " << batch;
    const std::vector<std::string> q = {"--format", "csv", "--quantile", "0,0.25,0.5,0.99,1"};
    std::vector<std::string> a = {"query", root}, b2 = {"query", file_root};
    a.insert(a.end(), q.begin(), q.end());
    b2.insert(b2.end(), q.begin(), q.end());
    EXPECT_EQ(Snapsink(a).out, Snapsink(b2).out) << "batches of " << batch;
  }
}

TEST(QuantilesExactlyOnce, BackfillVersionEqualsAFreshRun) {
  TempDir d;
  // Live: the events as delivered, published at v1. The archive: the
  // corrected events, once each, backfilled as v2.
  const std::string root = FileRoot(d, "live", Join(Delivered(Lines(0))));
  const std::string archive = d / "archive.ndjson";
  WriteFile(archive, Join(Lines(37)));
  RunResult r = Snapsink({"backfill", root, "--version", "2", archive});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string fresh = FileRoot(d, "fresh", Join(Delivered(Lines(37))));
  const std::string want = ReadFile(fresh + kWindow + "/v1/data");
  ASSERT_FALSE(want.empty());
  EXPECT_NE(ReadFile(root + kWindow + "/v1/data"), want) << "the correction changes the sketches";
  EXPECT_EQ(ReadFile(root + kWindow + "/v2/data"), want);
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

}  // namespace
}  // namespace snapsink::testing
