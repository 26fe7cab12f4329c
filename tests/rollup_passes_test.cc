// A roll-up merged in passes (sink/root_views.h's RollupEach: a bucket's
// windows read a key range at a time, about budget_bytes of sums held) gives
// the same rows whatever its budget, from one row per pass to everything in
// one pass, for every kind (sum, minmax, quantiles: sketches merged
// exactly), for windows holding different keys, prefixes and point lookups,
// one bucket or many; and a caller that stops it stops it.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/env.h"
#include "publish/generation_reader.h"
#include "sink/root_views.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/table.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int kWindows = 12;

// 12 one-hour windows; in each, metrics of the three kinds over keys drawn
// at random (so each window holds a different set), values with micros,
// some negative, a few retracted.
void MakeRoot(const std::string& root, const std::string& input) {
  std::mt19937 rng(42);
  std::string lines;
  uint64_t seq = 0;
  for (int w = 0; w < kWindows; ++w) {
    for (const std::string m : {"latency", "orders", "temp"}) {
      for (int k = 0; k < 150; ++k) {
        if (rng() % 3 != 0) continue;
        const int events = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < events; ++e) {
          const int64_t v = static_cast<int64_t>(rng() % 2000001) - 500000;
          EventLine line;
          line.Seq(seq++).Ts(kBase + w * kHour + e).Metric(m).Key("k" + std::to_string(k));
          line.Value((v < 0 ? "-" : "") + std::to_string(std::llabs(v) / 1000) + "." +
                     std::to_string(100 + std::llabs(v) % 100).substr(1));
          lines += line.Line();
          if (e == 0 && rng() % 7 == 0) lines += EventLine(line).Seq(seq++).Retract().Line();
        }
      }
    }
  }
  WriteFile(input, lines);
  ASSERT_STATUS_OK(api::Sink::Create(root, api::InitOptions{}));
  auto sink = api::Sink::Open(root);
  ASSERT_STATUS_OK(sink);
  ASSERT_STATUS_OK((*sink)->SetMetricKind("latency", api::MetricKind::kQuantiles));
  ASSERT_STATUS_OK((*sink)->SetMetricKind("temp", api::MetricKind::kMinMax));
  api::RunOptions run;
  run.ingest.files = {input};
  run.final = true;
  ASSERT_STATUS_OK((*sink)->Run(run));
}

// The roll-up of q with this budget as JSON text, and how many rows.
std::string Rollup(Reader* reader, const QuerySpec& q, size_t budget, size_t* rows = nullptr) {
  std::vector<api::RollupRow> out;
  EXPECT_STATUS_OK(RollupEach(
      reader, q,
      [&](const api::RollupRow& r) {
        out.push_back(r);
        return true;
      },
      budget));
  if (rows != nullptr) *rows = out.size();
  return api::FormatTable(api::ToTable(out, reader->generation(), q.quantiles), api::OutputFormat::kJson);
}

class RollupPassesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeRoot(dir_ / "root", dir_ / "in.ndjson");
    ASSERT_STATUS_OK(Reader::Open(Env::Default(), dir_ / "root", 0, &reader_));
  }
  TempDir dir_;
  std::unique_ptr<Reader> reader_;
};

TEST_F(RollupPassesTest, EveryBudgetGivesTheRowsOfOnePass) {
  std::vector<QuerySpec> specs;
  for (int64_t rollup : {int64_t{0}, kHour, 3 * kHour, 5 * kHour}) {
    QuerySpec q;
    q.rollup_ms = rollup;
    q.quantiles = {0, 0.5, 0.99, 1};
    specs.push_back(q);
    q.key_prefix = "k1";
    specs.push_back(q);
    q.key_prefix.clear();
    q.metric_prefix = "o";
    specs.push_back(q);
    q.metric_prefix.clear();
    q.metric = "latency";
    q.key = "k17";
    specs.push_back(q);  // a point lookup in each window
    q.key.reset();
    q.from = kBase + 2 * kHour;
    q.to = kBase + 8 * kHour;
    specs.push_back(q);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const QuerySpec& q = specs[i];
    size_t rows = 0;
    const std::string whole = Rollup(reader_.get(), q, std::numeric_limits<size_t>::max(), &rows);
    ASSERT_GT(rows, 0u) << "spec " << i;
    for (size_t budget : {size_t{1}, size_t{700}, size_t{5000}, size_t{60000}}) {
      EXPECT_EQ(Rollup(reader_.get(), q, budget), whole) << "spec " << i << ", budget " << budget;
    }
  }
}

// The public reader's roll-up (RollupEach with the default budget, and Rollup
// collecting it) gives those rows too, and stopping after n rows gives the
// first n.
TEST_F(RollupPassesTest, ThePublicReaderAnswersTheSameAndStops) {
  auto reader = api::Reader::Open(dir_ / "root");
  ASSERT_STATUS_OK(reader);
  QuerySpec q;
  q.rollup_ms = 2 * kHour;
  q.quantiles = {0.5, 0.9};
  std::vector<api::RollupRow> rows;
  ASSERT_STATUS_OK((*reader)->Rollup(q, &rows));
  const std::string whole = Rollup(reader_.get(), q, 1);
  EXPECT_EQ(api::FormatTable(api::ToTable(rows, (*reader)->generation(), q.quantiles), api::OutputFormat::kJson),
            whole);
  std::vector<api::RollupRow> first;
  ASSERT_STATUS_OK((*reader)->RollupEach(q, [&](const api::RollupRow& r) {
    first.push_back(r);
    return first.size() < 100;
  }));
  ASSERT_EQ(first.size(), 100u);
  rows.resize(100);
  EXPECT_EQ(api::FormatTable(api::ToTable(first, 1, q.quantiles), api::OutputFormat::kJson),
            api::FormatTable(api::ToTable(rows, 1, q.quantiles), api::OutputFormat::kJson));
}

}  // namespace
}  // namespace snapsink::testing
