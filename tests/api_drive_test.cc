// api::Drive (include/snapsink/drive.h): the follow loop over a Source of
// a program's own. A source that writes batches with their positions is
// sealed and published as Sink::Follow's files are, resumes from its
// committed position, and is stopped with one last step. A source with an
// end is one step, as Sink::Run, and an error of its poll applies nothing
// after it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
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
  return EventLine().Producer("p").Seq(seq).Ts(kBase + minute * kMinute + seq).Metric("m").Key("k").Value(1).Line();
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
  EXPECT_EQ(sealed[0].window_start_ms, kBase);
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
  EXPECT_EQ(sealed[1].window_start_ms, kBase + kMinute);
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[1].generation, 2u);
  auto sources = (*sink)->Sources();
  ASSERT_STATUS_OK(sources);
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ((*sources)[0].applied, 4u) << "each line once";
  auto reader = (*sink)->NewReader();
  ASSERT_STATUS_OK(reader);
  auto row = (*reader)->Get(kBase, "m", "k");
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

// A source with an end: LinesSource that says so, and that fails its read
// (an IOError of its own, as a broker or a pipe may) at line fail_at.
class EndingSource : public LinesSource {
 public:
  EndingSource(std::string name, std::vector<std::string> lines, size_t next, size_t fail_at = SIZE_MAX)
      : LinesSource(std::move(name), std::move(lines), next), fail_at_(fail_at) {}
  Status Poll(api::Sink& sink, bool last, bool* more) override {
    if (read_ == fail_at_) {
      *more = false;
      return Status::IOError("mem: the read failed");
    }
    ++read_;
    return LinesSource::Poll(sink, last, more);
  }
  bool HasEnd() const override { return true; }

 private:
  size_t read_ = 0;
  size_t fail_at_;
};

// Drive over source without a stop, failing the test (rather than hanging)
// if it does not end by itself.
Status DriveToEnd(api::Sink& sink, api::Source& source, const api::DriveOptions& o) {
  api::FollowStop stop;
  auto done = std::async(std::launch::async, [&] { return api::Drive(sink, source, o, &stop); });
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "Drive did not end at the source's end";
    stop.Stop();
  }
  return done.get();
}

// A source with an end is one step, as Sink::Run: read to its end without a
// stop, every window sealed under final (the open 10:02 too), published
// once, and no gc however few generations are kept. At an end with nothing
// new, the seal says why and the publish says there was nothing.
TEST_F(ApiDriveTest, ASourceWithAnEndIsOneStepSealedUnderFinalAndPublished) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  std::vector<api::SealedWindow> sealed;
  std::vector<api::PublishResult> published;
  std::vector<api::UnsealedWindows> unsealed;
  api::DriveOptions o;
  o.final = true;
  o.keep_generations = 1;
  o.publish_every_ms = 0;
  o.on_sealed = [&](const std::vector<api::SealedWindow>& s) { sealed.insert(sealed.end(), s.begin(), s.end()); };
  o.on_unsealed = [&](const api::UnsealedWindows& why) { unsealed.push_back(why); };
  o.on_published = [&](const api::PublishResult& p) { published.push_back(p); };
  EndingSource first("mem", {Line(0, 0), Line(1, 1), Line(2, 2)}, 0);
  ASSERT_STATUS_OK(DriveToEnd(**sink, first, o));
  EXPECT_EQ(first.polls(), 3) << "polled until it had no more, in its one step";
  ASSERT_EQ(sealed.size(), 3u) << "final: the open 10:02 too";
  EXPECT_EQ(sealed[2].window_start_ms, kBase + 2 * kMinute);
  ASSERT_EQ(published.size(), 1u);
  EXPECT_EQ(published[0].generation, 1u);
  EXPECT_TRUE(unsealed.empty());

  EndingSource second("mem", {Line(0, 0), Line(1, 1), Line(2, 2), Line(3, 3)}, 3);
  ASSERT_STATUS_OK(DriveToEnd(**sink, second, o));
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[1].generation, 2u);
  auto generations = (*sink)->Generations();
  ASSERT_STATUS_OK(generations);
  EXPECT_EQ(generations->size(), 2u) << "a job collects no garbage (keep_generations is following's)";

  EndingSource nothing("mem", {}, 0);
  ASSERT_STATUS_OK(DriveToEnd(**sink, nothing, o));
  ASSERT_EQ(published.size(), 3u) << "the end's publish is said also when nothing was pending";
  EXPECT_EQ(published[2].generation, 0u);
  ASSERT_EQ(unsealed.size(), 1u) << "the end's seal found nothing: why";
  EXPECT_TRUE(unsealed[0].open.empty());
  ASSERT_TRUE(unsealed[0].watermark.has_value());
  EXPECT_EQ(sealed.size(), 4u);
}

// On a Sink from OpenFollower the one step of a source with an end takes
// LOCK for itself: it waits while a writer holds it, then reads, seals and
// publishes, and lets LOCK go again.
TEST_F(ApiDriveTest, OnAFollowerSinkASourceWithAnEndWaitsForLockForItsStep) {
  auto follower = api::Sink::OpenFollower(root_);
  ASSERT_STATUS_OK(follower);
  auto writer = api::Sink::Open(root_);  // holds LOCK
  ASSERT_STATUS_OK(writer);
  std::atomic<int> published{0};
  api::DriveOptions o;
  o.final = true;
  o.on_published = [&](const api::PublishResult& p) { published = static_cast<int>(p.generation); };
  EndingSource source("mem", {Line(0, 0), Line(1, 1)}, 0);
  auto done = std::async(std::launch::async, [&] { return DriveToEnd(**follower, source, o); });
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout) << "ran beside LOCK's holder";
  EXPECT_EQ(source.polls(), 0);
  writer->reset();  // lets LOCK go
  ASSERT_STATUS_OK(done.get());
  EXPECT_EQ(source.polls(), 2);
  EXPECT_EQ(published.load(), 1);
  auto plain = api::Sink::Open(root_);  // no LOCK left held
  ASSERT_STATUS_OK(plain);
}

// Without final, the end seals the closed windows only (10:00 and 10:01
// here; 10:02 stays open for the next run), as `run` without --final.
TEST_F(ApiDriveTest, ASourceWithAnEndSealsOnlyClosedWindowsWithoutFinal) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  std::vector<api::SealedWindow> sealed;
  api::DriveOptions o;
  o.on_sealed = [&](const std::vector<api::SealedWindow>& s) { sealed.insert(sealed.end(), s.begin(), s.end()); };
  EndingSource source("mem", {Line(0, 0), Line(1, 1), Line(2, 2)}, 0);
  ASSERT_STATUS_OK(DriveToEnd(**sink, source, o));
  ASSERT_EQ(sealed.size(), 2u);
  EXPECT_EQ(sealed[1].window_start_ms, kBase + kMinute);
}

// An error of the source midway returns at once: the lines written before it
// stay, each whole with its position, nothing is sealed or published after
// it, and a rerun from the committed position ends byte for byte where a
// clean run does.
TEST_F(ApiDriveTest, AnErrorOfTheSourceMidwayStopsWithNothingHalfApplied) {
  const std::vector<std::string> lines = {Line(0, 0), Line(1, 1), Line(2, 1), Line(3, 2), Line(4, 3)};
  std::vector<api::SealedWindow> sealed;
  std::vector<api::PublishResult> published;
  api::DriveOptions o;
  o.final = true;
  o.on_sealed = [&](const std::vector<api::SealedWindow>& s) { sealed.insert(sealed.end(), s.begin(), s.end()); };
  o.on_published = [&](const api::PublishResult& p) { published.push_back(p); };
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    EndingSource failing("mem", lines, 0, /*fail_at=*/3);
    Status s = DriveToEnd(**sink, failing, o);
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_TRUE(sealed.empty()) << "nothing sealed after the error";
    EXPECT_TRUE(published.empty()) << "nothing published after the error";
    EXPECT_EQ(CurrentGeneration(root_), 0u);
    auto position = (*sink)->Position("mem");
    ASSERT_STATUS_OK(position);
    ASSERT_TRUE(position->has_value());
    EXPECT_EQ(**position, "3") << "the three lines before the error, committed whole";
    auto sources = (*sink)->Sources();
    ASSERT_STATUS_OK(sources);
    ASSERT_EQ(sources->size(), 1u);
    EXPECT_EQ((*sources)[0].applied, 3u);
    EndingSource rest("mem", lines, std::stoul(**position));
    ASSERT_STATUS_OK(DriveToEnd(**sink, rest, o));
  }
  const std::string clean = dir_ / "clean";
  api::InitOptions init;
  init.window_size_ms = kMinute;
  init.lateness_ms = 0;
  ASSERT_STATUS_OK(api::Sink::Create(clean, init));
  {
    auto sink = api::Sink::Open(clean);
    ASSERT_STATUS_OK(sink);
    EndingSource all("mem", lines, 0);
    ASSERT_STATUS_OK(DriveToEnd(**sink, all, o));
  }
  EXPECT_EQ(TreeDiff(TreeContents(root_), TreeContents(clean)), "");
  EXPECT_EQ(StateDump(root_), StateDump(clean));
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[0].generation, 1u);
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
  o.keep_generations = 1;
  o.final = true;  // the end of a source that has none
  s = api::Drive(**sink, source, o, &stop);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("DriveOptions::final"), std::string::npos) << s.message();
  EXPECT_EQ(source.polls(), 0);
}

}  // namespace
}  // namespace snapsink::testing
