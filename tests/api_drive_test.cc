// api::Drive (include/snapsink/drive.h): the follow loop over a Source of
// a program's own. A source that writes batches with their positions is
// sealed and published as Sink::Follow's files are, resumes from its
// committed position, and is stopped with one last step.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "snapsink/drive.h"
#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

constexpr int64_t kBaseMs = 1792576800000LL;  // 2026-10-21T10:00:00Z
constexpr int64_t kMinute = 60 * 1000;

// Lines in memory, one per poll (a bounded read), each committed with its
// index as the position: a restarted source resumes from Position().
class LinesSource : public api::Source {
 public:
  LinesSource(std::string name, std::vector<std::string> lines, size_t next)
      : name_(std::move(name)), lines_(std::move(lines)), next_(next) {}
  Status Poll(api::Sink& sink, bool last, bool* more) override {
    ++polls_;
    last_seen_ = last_seen_ || last;
    *more = false;
    if (next_ >= lines_.size()) return Status::OK();
    api::WriteBatch batch(name_);
    batch.Add(lines_[next_]);
    batch.SetPosition(std::to_string(next_ + 1));
    if (Status s = sink.Write(batch); !s.ok()) return s;
    ++next_;
    *more = next_ < lines_.size();
    return Status::OK();
  }
  void Wait(int64_t) override {}
  void Wake() override {}
  int polls() const { return polls_; }
  bool last_seen() const { return last_seen_; }

 private:
  std::string name_;
  std::vector<std::string> lines_;
  size_t next_;
  int polls_ = 0;
  bool last_seen_ = false;
};

std::string Line(int seq, int minute) {
  return EventLine().Producer("p").Seq(seq).Ts(kBaseMs + minute * kMinute + seq).Metric("m").Key("k").Value(1).Line();
}

class ApiDriveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    api::InitOptions o;
    o.window_size_ms = kMinute;
    o.lateness_ms = 0;
    ASSERT_STATUS_OK(api::Sink::Create(root_, o));
  }
  TempDir dir_;
  std::string root_;
};

// Stopped before it starts, Drive makes its one last step: every line the
// source has (polled until it has no more), the closed windows sealed and
// published in one generation. A second Drive resumes from the position.
TEST_F(ApiDriveTest, LastStepReadsTheSourceToItsEndSealsAndPublishes) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  std::vector<std::string> lines = {Line(0, 0), Line(1, 0), Line(2, 1), Line(3, 2)};
  std::vector<api::SealedWindow> sealed;
  std::vector<api::PublishResult> published;
  api::DriveOptions o;
  o.publish_every_ms = 0;
  o.on_sealed = [&](const std::vector<api::SealedWindow>& s) { sealed.insert(sealed.end(), s.begin(), s.end()); };
  o.on_published = [&](const api::PublishResult& p) { published.push_back(p); };
  LinesSource first("mem", {lines.begin(), lines.begin() + 3}, 0);
  {
    api::FollowStop stop;
    stop.Stop();
    ASSERT_STATUS_OK(api::Drive(**sink, first, o, &stop));
  }
  EXPECT_TRUE(first.last_seen());
  EXPECT_EQ(first.polls(), 3) << "polled until it had no more";
  ASSERT_EQ(sealed.size(), 1u) << "the 10:00 minute closed; 10:01 is open";
  EXPECT_EQ(sealed[0].window_start_ms, kBaseMs);
  EXPECT_EQ(sealed[0].events, 2);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].generation, 1u);

  auto position = (*sink)->Position("mem");
  ASSERT_STATUS_OK(position);
  ASSERT_TRUE(position->has_value());
  LinesSource second("mem", lines, std::stoul(**position));
  {
    api::FollowStop stop;
    stop.Stop();
    ASSERT_STATUS_OK(api::Drive(**sink, second, o, &stop));
  }
  EXPECT_EQ(second.polls(), 1);
  ASSERT_EQ(sealed.size(), 2u);
  EXPECT_EQ(sealed[1].window_start_ms, kBaseMs + kMinute);
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[1].generation, 2u);
  auto sources = (*sink)->Sources();
  ASSERT_STATUS_OK(sources);
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ((*sources)[0].applied, 4u) << "each line once";
  auto reader = (*sink)->NewReader();
  ASSERT_STATUS_OK(reader);
  auto row = (*reader)->Get(kBaseMs, "m", "k");
  ASSERT_STATUS_OK(row);
  EXPECT_EQ(row->count, 2);
}

// While it runs, Drive holds LOCK one step at a time: a writer of another
// handle gets in between steps; Stop from another thread ends it.
TEST_F(ApiDriveTest, AnotherWriterRunsBetweenStepsAndStopEndsIt) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  LinesSource source("mem", {Line(0, 0), Line(1, 1)}, 0);
  std::promise<void> published;
  bool said = false;
  api::DriveOptions o;
  o.publish_every_ms = 0;
  o.poll_ms = 10;
  o.on_published = [&](const api::PublishResult&) {
    if (!said) published.set_value();
    said = true;
  };
  api::FollowStop stop;
  Status result;
  std::thread drive([&] { result = api::Drive(**sink, source, o, &stop); });
  published.get_future().get();
  {
    auto other = api::Sink::Open(root_);  // waits for the step in flight, if any
    ASSERT_STATUS_OK(other);
    auto gc = (*other)->Gc(1);
    EXPECT_STATUS_OK(gc);
  }
  stop.Stop();
  drive.join();
  EXPECT_STATUS_OK(result);
  EXPECT_TRUE(source.last_seen());
}

// On a Sink from OpenFollower the source's Writes run inside Drive's
// steps, and outside them the follower writes nothing, as before.
TEST_F(ApiDriveTest, OnAFollowerSinkTheSourcesWritesRunInsideItsSteps) {
  auto follower = api::Sink::OpenFollower(root_);
  ASSERT_STATUS_OK(follower);
  LinesSource source("mem", {Line(0, 0), Line(1, 1)}, 0);
  std::vector<api::PublishResult> published;
  api::DriveOptions o;
  o.on_published = [&](const api::PublishResult& p) { published.push_back(p); };
  {
    api::FollowStop stop;
    stop.Stop();
    ASSERT_STATUS_OK(api::Drive(**follower, source, o, &stop));
  }
  EXPECT_EQ(source.polls(), 2);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].generation, 1u);
  api::WriteBatch outside("mem");
  outside.Add(Line(2, 2));
  EXPECT_EQ((*follower)->Write(outside).code(), Status::Code::kInvalidArgument) << "outside a step";
  auto plain = api::Sink::Open(root_);  // no LOCK left held
  ASSERT_STATUS_OK(plain);
}

TEST_F(ApiDriveTest, RefusesOptionsOutOfRangeNamingThem) {
  LinesSource source("mem", {}, 0);
  api::FollowStop stop;
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::DriveOptions o;
  o.poll_ms = 0;
  Status s = api::Drive(**sink, source, o, &stop);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("DriveOptions::poll_ms 0"), std::string::npos) << s.message();
  o.poll_ms = 1;
  o.keep_generations = 0;
  s = api::Drive(**sink, source, o, &stop);
  EXPECT_NE(s.message().find("DriveOptions::keep_generations 0"), std::string::npos) << s.message();
  EXPECT_EQ(source.polls(), 0);
}

}  // namespace
}  // namespace snapsink::testing
