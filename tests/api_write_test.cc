// The writing side of the public API (include/snapsink/sink.h): init
// settings, ingest options and reports, why nothing sealed, follow, and the
// backfill dry run, as an embedder uses them.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <future>
#include <thread>

#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;


class ApiWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
  }
  void Create(const api::InitOptions& o = {}) { ASSERT_STATUS_OK(api::Sink::Create(root_, o)); }
  TempDir dir_;
  std::string root_, in_;
};

TEST_F(ApiWriteTest, InitStoresIdHorizonAndProducerRetention) {
  api::InitOptions o;
  o.window_size_ms = 15 * 60 * 1000;
  o.lateness_ms = 0;
  o.id_horizon_ms = kHour;
  o.producer_retention_ms = 30 * 24 * kHour;
  Create(o);
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  const api::RootSettings& s = (*ro)->settings();
  EXPECT_EQ(s.window_size_ms, 15 * 60 * 1000);
  EXPECT_EQ(s.lateness_ms, 0);
  EXPECT_EQ(s.id_horizon_ms, kHour);
  EXPECT_EQ(s.producer_retention_ms, 30 * 24 * kHour);
  // The same as the tool's status reports.
  RunResult st = Snapsink({"status", root_, "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("\"id_horizon\":\"1h\""), std::string::npos) << st.out;
}

TEST_F(ApiWriteTest, InitRefusesANonPositiveIdHorizon) {
  api::InitOptions o;
  o.id_horizon_ms = 0;
  Status s = api::Sink::Create(root_, o);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "InitOptions::id_horizon_ms 0: must be greater than zero");
}

// Events without seq or id: with id_from_content the same content counts once.
TEST_F(ApiWriteTest, IdFromContentDeduplicates) {
  Create();
  const std::string e = "{\"ts\":\"2026-10-21T10:00:00Z\",\"metric\":\"m\",\"value\":1.5}\n";
  WriteFile(in_, e + e + "{\"ts\":\"2026-10-21T10:00:00Z\",\"metric\":\"m\",\"value\":2}\n");
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::IngestOptions o;
  o.files = {in_};
  o.id_from_content = true;
  api::IngestResult r;
  ASSERT_STATUS_OK((*sink)->Ingest(o, &r));
  ASSERT_EQ(r.sources.size(), 1u);
  EXPECT_EQ(r.sources[0].lines, 3u);
  EXPECT_EQ(r.sources[0].applied, 2u);
  EXPECT_EQ(r.sources[0].duplicates, 1u);
  EXPECT_EQ(r.sources[0].rejected, 0u);

  // Without it such lines lack what the seq rule needs: rejected.
  const std::string other = dir_ / "other.ndjson";
  WriteFile(other, e);
  o.files = {other};
  o.id_from_content = false;
  ASSERT_STATUS_OK((*sink)->Ingest(o, &r));
  EXPECT_EQ(r.sources[0].rejected, 1u);
}

// on_source_done reports each file as it finishes, with where its rejected
// lines went; this_run is this call's share of the source totals.
TEST_F(ApiWriteTest, IngestReportsEachSourceAndItsRejectsFile) {
  Create();
  const std::string second = dir_ / "second.ndjson";
  WriteFile(in_, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line() + "not json\n");
  WriteFile(second, EventLine().Producer("q").Seq(0).Ts("2026-10-21T10:00:00Z").Line());
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::IngestOptions o;
  o.files = {in_, second};
  std::vector<std::string> done;
  o.on_source_done = [&](const api::IngestResult& so_far) {
    ASSERT_EQ(so_far.sources.size(), done.size() + 1);
    ASSERT_EQ(so_far.rejects_files.size(), so_far.sources.size());
    done.push_back(so_far.sources.back().source);
  };
  api::IngestResult r;
  ASSERT_STATUS_OK((*sink)->Ingest(o, &r));
  EXPECT_EQ(done, (std::vector<std::string>{in_, second}));
  ASSERT_EQ(r.rejects_files.size(), 2u);
  EXPECT_EQ(r.sources[0].rejected, 1u);
  EXPECT_NE(ReadFile(r.rejects_files[0]).find("not json"), std::string::npos) << r.rejects_files[0];
  EXPECT_EQ(r.rejects_files[0].rfind(root_ + "/rejects/", 0), 0u) << r.rejects_files[0];

  // Again with one more line: this run is that line, the totals are all three.
  AppendFile(in_, EventLine().Seq(1).Ts("2026-10-21T10:01:00Z").Line());
  o.files = {in_};
  o.on_source_done = nullptr;
  ASSERT_STATUS_OK((*sink)->Ingest(o, &r));
  EXPECT_EQ(r.this_run[0].lines, 1u);
  EXPECT_EQ(r.this_run[0].applied, 1u);
  EXPECT_EQ(r.sources[0].lines, 3u);
  EXPECT_EQ(r.this_run[0].offset, r.sources[0].offset);
}

// What `seal` and `run` print when nothing closed: the open windows with
// changes, when each closes, and the watermark.
TEST_F(ApiWriteTest, UnsealedNamesTheOpenWindowsAndTheWatermark) {
  Create();  // 1h windows, 1h lateness
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    auto none = (*sink)->Unsealed();
    ASSERT_STATUS_OK(none);
    EXPECT_TRUE(none->open.empty());
    EXPECT_FALSE(none->watermark.has_value());
  }
  WriteFile(in_, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line() +
                     EventLine().Seq(1).Ts("2026-10-21T11:30:00Z").Line());
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::RunOptions run;
  run.ingest.files = {in_};
  api::RunResult r;
  ASSERT_STATUS_OK((*sink)->Run(run, &r));
  EXPECT_TRUE(r.sealed.empty());
  ASSERT_TRUE(r.nothing_sealed.has_value());
  ASSERT_EQ(r.nothing_sealed->open.size(), 2u);
  EXPECT_EQ(r.nothing_sealed->open[0].window_start_ms, Ms("2026-10-21T10:00:00Z"));
  EXPECT_EQ(r.nothing_sealed->open[0].closes_at_ms, Ms("2026-10-21T12:00:00Z"));
  EXPECT_EQ(r.nothing_sealed->open[1].window_start_ms, Ms("2026-10-21T11:00:00Z"));
  EXPECT_EQ(r.nothing_sealed->watermark, std::optional<int64_t>(Ms("2026-10-21T10:30:00Z")));
  EXPECT_EQ(r.publish.generation, 0u);
  auto again = (*sink)->Unsealed();
  ASSERT_STATUS_OK(again);
  EXPECT_EQ(again->open.size(), 2u);

  // Once something seals, there is no explanation.
  run.final = true;
  ASSERT_STATUS_OK((*sink)->Run(run, &r));
  EXPECT_EQ(r.sealed.size(), 2u);
  EXPECT_FALSE(r.nothing_sealed.has_value());
}

// Follow, stopped before it starts, makes one pass: it reads what was
// appended since the last one, seals what the watermark closed, publishes.
TEST_F(ApiWriteTest, FollowIngestsAnAppendedLineAndPublishes) {
  api::InitOptions init;
  init.lateness_ms = 0;
  Create(init);
  WriteFile(in_, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("orders").Key("eu").Value("1.5").Line());
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::FollowOptions o;
  o.inputs = {in_};
  o.publish_every_ms = 0;
  std::vector<api::SealedWindow> sealed;
  std::vector<api::PublishResult> published;
  o.on_sealed = [&](const std::vector<api::SealedWindow>& s) { sealed.insert(sealed.end(), s.begin(), s.end()); };
  o.on_published = [&](const api::PublishResult& p) { published.push_back(p); };
  {
    api::FollowStop stop;
    stop.Stop();
    ASSERT_STATUS_OK((*sink)->Follow(o, &stop));
  }
  EXPECT_TRUE(sealed.empty()) << "the 10:00 window is still open";
  EXPECT_TRUE(published.empty());

  // An appended line moves the watermark past 11:00: the 10:00 window closes.
  AppendFile(in_, EventLine().Seq(1).Ts("2026-10-21T11:30:00Z").Metric("orders").Key("eu").Value("2").Line());
  {
    api::FollowStop stop;
    stop.Stop();
    ASSERT_STATUS_OK((*sink)->Follow(o, &stop));
  }
  ASSERT_EQ(sealed.size(), 1u);
  EXPECT_EQ(sealed[0].window_start_ms, Ms("2026-10-21T10:00:00Z"));
  EXPECT_EQ(sealed[0].events, 1);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].generation, 1u);
  EXPECT_EQ(published[0].windows, 1u);
  auto sources = (*sink)->Sources();
  ASSERT_STATUS_OK(sources);
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ((*sources)[0].applied, 2u);
  auto reader = (*sink)->NewReader();
  ASSERT_STATUS_OK(reader);
  auto eu = (*reader)->Get(Ms("2026-10-21T10:00:00Z"), "orders", "eu");
  ASSERT_STATUS_OK(eu);
  EXPECT_EQ(eu->sum_micros, 1500000);
}

// Stop from another thread ends a running Follow (as `run --follow` does on
// SIGTERM); no clock: the follower's own publish says when to stop.
TEST_F(ApiWriteTest, FollowStopsFromAnotherThread) {
  api::InitOptions init;
  init.lateness_ms = 0;
  Create(init);
  WriteFile(in_, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Line() +
                     EventLine().Seq(1).Ts("2026-10-21T11:30:00Z").Line());
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::FollowOptions o;
  o.inputs = {in_};
  o.publish_every_ms = 0;
  std::promise<uint64_t> first;
  int published = 0;
  o.on_published = [&](const api::PublishResult& p) {
    if (published++ == 0) first.set_value(p.generation);
  };
  api::FollowStop stop;
  Status result;
  std::thread follow([&] { result = (*sink)->Follow(o, &stop); });
  const uint64_t generation = first.get_future().get();  // Follow is past its first pass, still running
  stop.Stop();
  follow.join();
  EXPECT_STATUS_OK(result);
  EXPECT_EQ(generation, 1u);
  EXPECT_EQ(published, 1);
}

TEST_F(ApiWriteTest, FollowRefusesStandardInput) {
  Create();
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::FollowOptions o;
  o.inputs = {"-"};
  api::FollowStop stop;
  EXPECT_EQ((*sink)->Follow(o, &stop).code(), Status::Code::kInvalidArgument);
}

// The dry run reports the per-window impact and writes nothing; the real
// backfill then publishes exactly those totals.
TEST_F(ApiWriteTest, BackfillDryRunWritesNothing) {
  Create();
  WriteFile(in_, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("orders").Value("1").Line());
  ASSERT_STATUS_OK(RunFinalWithApi(root_, in_));
  const std::string archive = dir_ / "archive.ndjson";
  WriteFile(archive, EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("orders").Value("1").Line() +
                         EventLine().Seq(1).Ts("2026-10-21T10:05:00Z").Metric("orders").Value("2.5").Line() +
                         "broken\n");
  const auto before = TreeContents(root_);  // all but state/
  const std::string state_before = StateDump(root_);
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  api::BackfillOptions b;
  b.version = 2;
  b.files = {archive};
  b.dry_run = true;
  api::BackfillResult plan;
  ASSERT_STATUS_OK(api::Backfill(**ro, b, &plan));
  EXPECT_FALSE(plan.already_done);
  EXPECT_EQ(plan.generation, 0u);
  ASSERT_EQ(plan.impact.size(), 1u);
  const api::WindowImpact& i = plan.impact[0];
  EXPECT_EQ(i.window_start_ms, Ms("2026-10-21T10:00:00Z"));
  EXPECT_EQ(i.before.events, 1);
  EXPECT_EQ(i.before.sum_micros, 1000000);
  EXPECT_EQ(i.after.events, 2);
  EXPECT_EQ(i.after.count, 2);
  EXPECT_EQ(i.after.sum_micros, 3500000);
  EXPECT_EQ(TreeDiff(TreeContents(root_), before), "") << "the dry run wrote to the root";
  ro->reset();  // StateDump opens the state itself
  EXPECT_EQ(StateDump(root_), state_before);
  EXPECT_FALSE(boost::filesystem::exists(root_ + "/state/backfill-v2")) << "the dry run made a backfill state";

  b.dry_run = false;
  ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  api::BackfillResult r;
  ASSERT_STATUS_OK(api::Backfill(**ro, b, &r));
  EXPECT_EQ(r.generation, 2u);
  ASSERT_EQ(r.impact.size(), 1u);
  EXPECT_EQ(r.impact[0].after.sum_micros, i.after.sum_micros);
  EXPECT_EQ(r.impact[0].before.events, i.before.events);
  EXPECT_EQ(r.rejected, 1u);
  ASSERT_EQ(r.rejects_files.size(), 1u);
  EXPECT_NE(ReadFile(r.rejects_files[0]).find("broken"), std::string::npos) << r.rejects_files[0];

  // Published once: a second dry run says so.
  b.dry_run = true;
  ASSERT_STATUS_OK(api::Backfill(**ro, b, &plan));
  EXPECT_TRUE(plan.already_done);
}

}  // namespace
}  // namespace snapsink::testing
