// The read-side views of the public API (include/snapsink/views.h): each
// method's values, and that api::ToTable prints exactly what the command
// line prints for the same view. Also: tools/ commands include only the
// public API.
#include <gtest/gtest.h>


#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/table.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;


std::string Json(const api::Table& t) { return api::FormatTable(t, api::OutputFormat::kJson); }

// What the binary prints on stdout for args (it must succeed).
std::string Cli(const std::vector<std::string>& args) {
  RunResult r = Snapsink(args);
  EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  return r.out;
}

class ApiViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
    ASSERT_STATUS_OK(api::Sink::Create(root_, api::InitOptions{}));
  }
  // Runs `run --final` over text with the writer handle, then closes it.
  void Run(const std::string& text) {
    WriteFile(in_, text);
    ASSERT_STATUS_OK(RunFinalWithApi(root_, in_));
  }
  std::unique_ptr<api::ReadOnlySink> ReadOnly() {
    auto ro = api::Sink::OpenReadOnly(root_);
    EXPECT_STATUS_OK(ro);
    return ro.ok() ? std::move(*ro) : nullptr;
  }
  TempDir dir_;
  std::string root_, in_;
};

TEST_F(ApiViewsTest, ProducersCarryLastSeenAndRetirement) {
  // p first: while it is the only producer its 10-hour jump moves the
  // watermark (engine/watermark.h); after q it would wait for a second one.
  Run(EventLine().Producer("p").Seq(0).Ts("2026-10-21T10:00:00Z").Line() +
      EventLine().Producer("p").Seq(1).Ts("2026-10-21T20:00:00Z").Line() +
      EventLine().Producer("q").Seq(0).Ts("2026-10-21T10:00:00Z").Line());
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    EXPECT_EQ((*sink)->RetireIdleProducers(0).status().code(), Status::Code::kInvalidArgument);
    // Watermark 19:00 (lateness 1h), idle 2h: cutoff 17:00; q was last heard at 10:00.
    auto retired = (*sink)->RetireIdleProducers(2 * kHour);
    ASSERT_STATUS_OK(retired);
    EXPECT_EQ(*retired, std::vector<std::string>{"q"});
  }
  auto ro = ReadOnly();
  auto producers = ro->Producers();
  ASSERT_STATUS_OK(producers);
  ASSERT_EQ(producers->size(), 2u);
  const api::ProducerInfo& p = (*producers)[0];
  EXPECT_EQ(p.producer, "p");
  EXPECT_EQ(p.next_seq, 2u);
  EXPECT_EQ(p.last_seen, std::optional<int64_t>(Ms("2026-10-21T20:00:00Z")));
  EXPECT_FALSE(p.retired);
  const api::ProducerInfo& q = (*producers)[1];
  EXPECT_EQ(q.producer, "q");
  EXPECT_EQ(q.next_seq, 0u);
  EXPECT_EQ(q.last_seen, std::optional<int64_t>(Ms("2026-10-21T10:00:00Z")));
  EXPECT_TRUE(q.retired);
  EXPECT_EQ(Json(api::ToTable(*producers)), Cli({"inspect", root_, "producers", "--json"}));
  EXPECT_EQ(api::FormatTable(api::ToTable(*producers), api::OutputFormat::kTable),
            Cli({"inspect", root_, "producers"}));
}

TEST_F(ApiViewsTest, GapsAndTheirAcceptance) {
  Run(EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line() + EventLine().Seq(5).Ts("2026-10-21T10:01:00Z").Line());
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    api::GapAcceptance bad{"p", std::nullopt, {7, 3}};
    EXPECT_EQ((*sink)->AcceptGaps(bad).status().code(), Status::Code::kInvalidArgument);
    api::GapAcceptance a{"p", 0u, {}};
    ASSERT_TRUE(api::ParseSeqRange("1..3", &a.range));
    auto rec = (*sink)->AcceptGaps(a);
    ASSERT_STATUS_OK(rec);
    EXPECT_EQ(rec->gap.range.first, 1u);
    EXPECT_EQ(rec->gap.range.last, 3u);
    EXPECT_GT(rec->accepted_at_ms, Ms("2026-01-01T00:00:00Z"));  // the wall clock, not event time
  }
  auto ro = ReadOnly();
  auto gaps = ro->Gaps();
  ASSERT_STATUS_OK(gaps);
  ASSERT_EQ(gaps->size(), 1u);
  EXPECT_EQ((*gaps)[0].from_seq, 1u);
  EXPECT_EQ((*gaps)[0].to_seq, 4u);
  EXPECT_EQ((*gaps)[0].missing, 4u);
  auto accepted = ro->AcceptedGaps();
  ASSERT_STATUS_OK(accepted);
  ASSERT_EQ(accepted->size(), 1u);
  EXPECT_EQ((*accepted)[0].gap.producer, "p");
  EXPECT_EQ((*accepted)[0].gap.epoch, std::optional<uint32_t>(0));
  EXPECT_EQ((*accepted)[0].gap.range.last, 3u);
  EXPECT_EQ(Json(api::ToTable(*gaps)), Cli({"inspect", root_, "gaps", "--json"}));
  EXPECT_EQ(Json(api::ToTable(*gaps, *accepted)), Cli({"inspect", root_, "gaps", "--all", "--json"}));
}

TEST(ApiSeqRange, Parse) {
  api::SeqRange r;
  ASSERT_TRUE(api::ParseSeqRange("7", &r));
  EXPECT_EQ(r.first, 7u);
  EXPECT_EQ(r.last, 7u);
  EXPECT_FALSE(api::ParseSeqRange("3..1", &r));
  EXPECT_FALSE(api::ParseSeqRange("a..b", &r));
  EXPECT_EQ(api::SeqRange().first, 0u);
  EXPECT_EQ(api::SeqRange().last, UINT64_MAX - 1);
}

TEST_F(ApiViewsTest, SourcesCountDuplicatesByIdAndIdsAreHeld) {
  const std::string e = "{\"id\":\"a\",\"ts\":\"2026-10-21T10:00:00Z\",\"metric\":\"m\",\"key\":\"k\",\"value\":1}\n";
  Run(e + e);
  auto ro = ReadOnly();
  auto sources = ro->Sources();
  ASSERT_STATUS_OK(sources);
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ((*sources)[0].source, in_);
  EXPECT_EQ((*sources)[0].applied, 1u);
  EXPECT_EQ((*sources)[0].duplicates, 1u);
  EXPECT_EQ((*sources)[0].duplicates_id, 1u);
  EXPECT_EQ((*sources)[0].rejected_horizon, 0u);
  auto ids = ro->Ids();
  ASSERT_STATUS_OK(ids);
  EXPECT_EQ(ids->held, 1u);
  EXPECT_EQ(ids->oldest, std::optional<int64_t>(Ms("2026-10-21T10:00:00Z")));
  EXPECT_EQ(ids->horizon_ms, 7 * 24 * kHour);
  // Watermark 09:00 (newest event minus 1h lateness), minus the 7d horizon.
  EXPECT_EQ(ids->cutoff, std::optional<int64_t>(Ms("2026-10-14T09:00:00Z")));
  EXPECT_GT(ids->table_bytes, 0u);
  EXPECT_EQ(Json(api::ToTable(*sources)), Cli({"inspect", root_, "sources", "--json"}));
  EXPECT_EQ(Json(api::ToTable(*ids)), Cli({"inspect", root_, "ids", "--json"}));
}

TEST_F(ApiViewsTest, GenerationsNameWhatARollbackCopied) {
  Run(EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line());
  Run(EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line() + EventLine().Seq(1).Ts("2026-10-21T11:00:00Z").Line());
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->Rollback(1));
  }
  auto ro = ReadOnly();
  auto gens = ro->Generations();
  ASSERT_STATUS_OK(gens);
  ASSERT_EQ(gens->size(), 3u);
  EXPECT_EQ((*gens)[0].rollback_of, 0u);
  EXPECT_EQ((*gens)[2].generation, 3u);
  EXPECT_EQ((*gens)[2].parent, 2u);
  EXPECT_EQ((*gens)[2].rollback_of, 1u);
  EXPECT_EQ((*gens)[2].windows, 1u);
  EXPECT_TRUE((*gens)[2].current);
  auto snaps = ro->Snapshots();
  ASSERT_STATUS_OK(snaps);
  EXPECT_EQ(Json(api::ToTable(*gens)), Cli({"inspect", root_, "generations", "--json"}));
  EXPECT_EQ(Json(api::ToTable(*snaps)), Cli({"inspect", root_, "snapshots", "--json"}));
  auto windows = ro->Windows();
  ASSERT_STATUS_OK(windows);
  EXPECT_EQ(Json(api::ToTable(*windows)), Cli({"inspect", root_, "windows", "--json"}));
}

// GetStatus()->settings once carried only window, lateness and gap policy:
// id_horizon_ms and producer_retention_ms read 0 while settings() had them.
// Every setting here differs from its default, so a field either side drops
// (or fills from another) shows.
TEST(ApiStatus, SettingsMatchTheRootsSettingsFieldByField) {
  TempDir dir;
  const std::string root = dir / "root";
  api::InitOptions init;
  init.window_size_ms = 2 * kHour;
  init.lateness_ms = 3 * kHour;
  init.on_gap = api::GapPolicy::kStop;
  init.id_horizon_ms = 5 * kHour;
  init.producer_retention_ms = 11 * kHour;
  init.retain_ms = 13 * kHour;
  init.max_ahead_ms = 17 * kHour;
  ASSERT_STATUS_OK(api::Sink::Create(root, init));
  auto ro = api::Sink::OpenReadOnly(root);
  ASSERT_STATUS_OK(ro);
  auto s = (*ro)->GetStatus();
  ASSERT_STATUS_OK(s);
  const api::RootSettings& want = (*ro)->settings();
  EXPECT_EQ(want.window_size_ms, 2 * kHour);
  EXPECT_EQ(want.lateness_ms, 3 * kHour);
  EXPECT_EQ(want.on_gap, api::GapPolicy::kStop);
  EXPECT_EQ(want.id_horizon_ms, 5 * kHour);
  EXPECT_EQ(want.producer_retention_ms, 11 * kHour);
  EXPECT_EQ(want.retain_ms, 13 * kHour);
  EXPECT_EQ(want.max_ahead_ms, 17 * kHour);
  EXPECT_EQ(s->settings.window_size_ms, want.window_size_ms);
  EXPECT_EQ(s->settings.lateness_ms, want.lateness_ms);
  EXPECT_EQ(s->settings.on_gap, want.on_gap);
  EXPECT_EQ(s->settings.id_horizon_ms, want.id_horizon_ms);
  EXPECT_EQ(s->settings.producer_retention_ms, want.producer_retention_ms);
  EXPECT_EQ(s->settings.retain_ms, want.retain_ms);
  EXPECT_EQ(s->settings.max_ahead_ms, want.max_ahead_ms);
  // A field added to RootSettings is added to this test too.
  static_assert(sizeof(api::RootSettings) == 7 * sizeof(int64_t), "RootSettings changed: check every field above");
}

TEST_F(ApiViewsTest, StatusAndMetrics) {
  Run(EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("orders").Key("eu").Value("1.5").Line() +
      EventLine().Seq(3).Ts("2026-10-21T11:00:00Z").Metric("orders").Key("eu").Value("4").Line());
  auto ro = ReadOnly();
  auto s = ro->GetStatus();
  ASSERT_STATUS_OK(s);
  EXPECT_EQ(s->settings.window_size_ms, kHour);
  EXPECT_EQ(s->settings.lateness_ms, kHour);
  EXPECT_EQ(s->settings.id_horizon_ms, 7 * 24 * kHour);
  EXPECT_EQ(s->settings.producer_retention_ms, 0);
  EXPECT_EQ(s->max_event_ts, std::optional<int64_t>(Ms("2026-10-21T11:00:00Z")));
  EXPECT_EQ(s->watermark, std::optional<int64_t>(Ms("2026-10-21T10:00:00Z")));
  EXPECT_EQ(s->current_generation, 1u);
  EXPECT_TRUE(s->published_at_ms.has_value());
  EXPECT_EQ(s->published_windows, 2u);
  ASSERT_EQ(s->windows.size(), 2u);
  EXPECT_EQ(s->windows[0].window_start_ms, Ms("2026-10-21T10:00:00Z"));
  EXPECT_EQ(s->windows[0].closes_at_ms, Ms("2026-10-21T12:00:00Z"));
  EXPECT_EQ(s->windows[0].version, 1u);
  EXPECT_TRUE(s->windows[0].published);
  EXPECT_FALSE(s->windows[0].staged);
  EXPECT_EQ(s->windows[1].events, 1);
  ASSERT_EQ(s->sources.size(), 1u);
  EXPECT_EQ(s->sources[0].source.source, in_);
  EXPECT_EQ(s->sources[0].source.applied, 2u);
  EXPECT_EQ(s->sources[0].file_size, static_cast<int64_t>(ReadFile(in_).size()));
  EXPECT_EQ(s->producers, 1u);
  ASSERT_EQ(s->gaps.size(), 1u);
  ASSERT_EQ(s->gaps[0].missing.size(), 1u);
  EXPECT_EQ(s->gaps[0].missing[0].first, 1u);
  EXPECT_EQ(s->gaps[0].missing[0].last, 2u);
  ASSERT_EQ(s->disk.size(), 5u);
  EXPECT_EQ(s->disk[0].dir, "state");
  EXPECT_EQ(s->state_bytes, s->disk[0].bytes);
  EXPECT_GT(s->state_bytes, 0u);
  auto json = ro->StatusJson();
  ASSERT_STATUS_OK(json);
  EXPECT_EQ(*json, Cli({"status", root_, "--json"}));
  EXPECT_NE(json->find("\"current_generation\":1,"), std::string::npos) << *json;
  auto metrics = ro->MetricsText();
  ASSERT_STATUS_OK(metrics);
  EXPECT_NE(metrics->find("snapsink_current_generation 1\n"), std::string::npos) << *metrics;
  EXPECT_NE(metrics->find("snapsink_producers 1\n"), std::string::npos) << *metrics;
  EXPECT_EQ(*metrics, Cli({"metrics", root_}));
}

TEST_F(ApiViewsTest, ReaderQuerySelectsRowsAsTheCliDoes) {
  Run(EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("orders").Key("eu").Value("1.5").Line() +
      EventLine().Seq(1).Ts("2026-10-21T10:10:00Z").Metric("orders").Key("us").Value("3").Line() +
      EventLine().Seq(2).Ts("2026-10-21T11:00:00Z").Metric("orders").Key("eu").Value("4").Line());
  auto ro = ReadOnly();
  auto reader = ro->NewReader();
  ASSERT_STATUS_OK(reader);
  std::vector<api::QueryRow> all;
  ASSERT_STATUS_OK((*reader)->Query({}, &all));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].row.key, "eu");
  EXPECT_EQ(all[1].row.key, "us");
  EXPECT_EQ(all[2].window_start_ms, Ms("2026-10-21T11:00:00Z"));
  EXPECT_EQ(all[2].row.sum_micros, 4000000);
  EXPECT_EQ(all[2].version, 1u);
  api::QuerySpec point;
  point.window = Ms("2026-10-21T10:00:00Z");
  point.metric = "orders";
  point.key = "eu";
  std::vector<api::QueryRow> one;
  ASSERT_STATUS_OK((*reader)->Query(point, &one));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].row.count, 1);
  EXPECT_EQ(one[0].row.sum_micros, 1500000);
  api::QuerySpec other_window;
  other_window.window = Ms("2026-10-22T10:00:00Z");
  std::vector<api::QueryRow> none;
  ASSERT_STATUS_OK((*reader)->Query(other_window, &none));
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(api::FormatTable(api::ToTable(all, (*reader)->generation()), api::OutputFormat::kCsv),
            Cli({"query", root_, "--format", "csv"}));
  EXPECT_EQ(Json(api::ToTable(one, (*reader)->generation())),
            Cli({"query", root_, "--window", "2026-10-21T10:30:00Z", "--metric", "orders", "--key", "eu",
                 "--format", "json"}));
}

// Regression: status and metrics read source records by their stored LMDB
// key, so a source name longer than a key (kept in long form, engine/long_key.h)
// failed both with "malformed source record in state". They now share the one
// source scan with inspect sources.
TEST_F(ApiViewsTest, StatusAndMetricsTakeASourceNameLongerThanAnLmdbKey) {
  const std::string long_name(600, 's');
  WriteFile(in_, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line());
  RunResult ingest = Snapsink({"ingest", root_, in_, "--source", long_name, "--quiet"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  RunResult status = Snapsink({"status", root_, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("\"source\":\"" + long_name + "\",\"path\":\"" + in_ + "\",\"backfill\":false,\"offset\":"),
            std::string::npos)
      << status.out;
  RunResult metrics = Snapsink({"metrics", root_});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_NE(metrics.out.find("snapsink_lines_total{source=\"" + long_name + "\"} 1"), std::string::npos);
  auto ro = ReadOnly();
  auto s = ro->GetStatus();
  ASSERT_STATUS_OK(s);
  ASSERT_EQ(s->sources.size(), 1u);
  EXPECT_EQ(s->sources[0].source.source, long_name);
  EXPECT_EQ(s->sources[0].source.applied, 1u);
}

TEST(ApiTimes, WindowStartAndRange) {
  EXPECT_EQ(api::WindowStart(Ms("2026-10-21T10:30:00Z"), kHour), Ms("2026-10-21T10:00:00Z"));
  EXPECT_EQ(api::WindowStart(-1, 1000), -1000);
  EXPECT_EQ(api::FormatTime(api::kMinTimeMs), "0000-01-01T00:00:00Z");
  EXPECT_EQ(api::FormatTime(api::kMaxTimeMs - 999), "9999-12-31T23:59:59Z");
}

TEST(ApiFormat, TablesAlignJsonQuotesStringsOnly) {
  api::Table t{{"a", "b"}, {}};
  api::Record r;
  r.Str("a", "x\ty");
  r.Num("b", "12");
  t.records.push_back(r);
  EXPECT_EQ(api::FormatTable(t, api::OutputFormat::kTable), "a     b\nx\\ty  12\n");
  EXPECT_EQ(api::FormatTable(t, api::OutputFormat::kJson), "{\"a\":\"x\\u0009y\",\"b\":12}\n");
  EXPECT_EQ(api::FormatTable(t, api::OutputFormat::kCsv), "a,b\n\"x\ty\",12\n");
}

}  // namespace
}  // namespace snapsink::testing
