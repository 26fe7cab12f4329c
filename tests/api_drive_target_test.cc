// api::Drive over a DriveTarget (include/snapsink/drive.h): the cadence the
// one loop owns, seen as the order of a fake target's hooks. Each hook
// writes a token:
//   B / B!  BeginStep (a step / the last step)     E / E!  EndStep
//   P / P!  Poll (last: true)                      A       AfterPoll
//   U / U*  Publish (all: false / true)            Z       AtEnd
//   W       Wait
// and a step is followed by "|". The Sink target and the Kafka partitions'
// target are this loop with different hooks: a seal after each poll, the
// first publish at once, a publish only when something is pending (a
// Sink), against nothing sealed after a poll, the first publish after
// publish_every_ms, and a publish at every publish point (the partitions).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <string>
#include <thread>

#include "snapsink/drive.h"
#include "snapsink/sink.h"
#include "utilities/kafka/partitions_target.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

class FakeTarget : public api::DriveTarget {
 public:
  explicit FakeTarget(api::FollowStop* stop) : stop_(stop) {}

  // What the fake does.
  int stop_after_polls = 3;       // a followed target: FollowStop::Stop in this poll
  int more_in_last = 0;           // polls of the last step that say there is more
  bool pending = true;            // what AfterPoll says
  bool first_after_every = false;
  bool has_end = false;
  int wants_publish_at_poll = -1;  // WantsPublish after this poll (1-based)
  int fail_at_poll = -1;           // Poll returns IOError at this poll
  bool locked_when_stopped = false;  // BeginStep of a step after the stop: Locked, as a wait for LOCK

  std::string log;

  Status Poll(bool last, bool* more) override {
    ++polls_;
    log += last ? "P! " : "P ";
    *more = false;
    if (polls_ == fail_at_poll) return Status::IOError("fake: the read failed");
    if (last && more_in_last > 0) {
      --more_in_last;
      *more = true;
    }
    if (has_end) *more = polls_ < stop_after_polls;
    if (!has_end && polls_ == stop_after_polls) stop_->Stop();
    return Status::OK();
  }
  void Wait(int64_t) override { log += "W "; }
  void Wake() override {}
  bool HasEnd() const override { return has_end; }
  Status BeginStep(bool last, const std::function<bool()>& stopped) override {
    log += last ? "B! " : "B ";
    if (!last && locked_when_stopped && polls_ >= stop_after_polls - 1) {
      stop_->Stop();
      if (stopped()) return Status::Locked("fake: stopped while waiting for LOCK");
    }
    return Status::OK();
  }
  void EndStep(bool last) override { log += last ? "E! | " : "E | "; }
  Status AfterPoll(const api::DriveOptions&, bool* p) override {
    log += "A ";
    *p = pending;
    return Status::OK();
  }
  Status Publish(bool all, const api::DriveOptions&) override {
    log += all ? "U* " : "U ";
    return Status::OK();
  }
  Status AtEnd(const api::DriveOptions&) override {
    log += "Z ";
    return Status::OK();
  }
  bool WantsPublish() override { return polls_ == wants_publish_at_poll; }
  bool FirstPublishAfterEvery() const override { return first_after_every; }

 private:
  api::FollowStop* stop_;
  int polls_ = 0;
};

api::DriveOptions Every(int64_t ms) {
  api::DriveOptions o;
  o.publish_every_ms = ms;
  o.poll_ms = 1;
  return o;
}

// A Sink's cadence: AfterPoll (its seal) after each step's poll; the first
// step publishes what is pending at once, then not again before
// publish_every_ms; the stop's last step polls until there is no more,
// seals and publishes.
TEST(ApiDriveTarget, SealAfterEachPollFirstPublishAtOnceLastStepPublishes) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.more_in_last = 2;
  ASSERT_TRUE(api::Drive(t, Every(3600 * 1000), &stop).ok());
  EXPECT_EQ(t.log,
            "B P A U E | W "
            "B P A E | W "
            "B P A E | "
            "B! P! P! P! A U E! | ");
}

// The partitions' cadence: the first publish comes publish_every_ms after
// the start, so none before the last step's.
TEST(ApiDriveTarget, FirstPublishAfterEveryWaitsForTheCadence) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.first_after_every = true;
  ASSERT_TRUE(api::Drive(t, Every(3600 * 1000), &stop).ok());
  EXPECT_EQ(t.log, "B P A E | W B P A E | W B P A E | B! P! A U E! | ");
}

// publish_every_ms 0: every step with something pending publishes.
TEST(ApiDriveTarget, PublishEveryZeroPublishesEachStep) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.first_after_every = true;
  ASSERT_TRUE(api::Drive(t, Every(0), &stop).ok());
  EXPECT_EQ(t.log, "B P A U E | W B P A U E | W B P A U E | B! P! A U E! | ");
}

// Nothing pending, nothing published, not even at the last step (a Sink
// with nothing staged); a target that publishes with nothing pending says
// pending always (the partitions' merged publish), as the tests above do.
TEST(ApiDriveTarget, NothingPendingIsNeverPublished) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.pending = false;
  ASSERT_TRUE(api::Drive(t, Every(0), &stop).ok());
  EXPECT_EQ(t.log, "B P A E | W B P A E | W B P A E | B! P! A E! | ");
}

// A publish point the target asks for comes at once, cadence aside.
TEST(ApiDriveTarget, WantsPublishIsAPublishPointCadenceAside) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.first_after_every = true;
  t.wants_publish_at_poll = 2;
  ASSERT_TRUE(api::Drive(t, Every(3600 * 1000), &stop).ok());
  EXPECT_EQ(t.log, "B P A E | W B P A U E | W B P A E | B! P! A U E! | ");
}

// A target with an end is one step, the last: polled until it has no
// more, with a publish point whenever it asks for one (every window sealed
// under final), then AtEnd. No AfterPoll, no Wait, no cadence.
TEST(ApiDriveTarget, ATargetWithAnEndIsOneStepThenAtEnd) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.has_end = true;
  t.stop_after_polls = 4;
  t.wants_publish_at_poll = 2;
  api::DriveOptions o = Every(3600 * 1000);
  o.final = true;
  ASSERT_TRUE(api::Drive(t, o, &stop).ok());
  EXPECT_EQ(t.log, "B! P! P! U* P! P! Z E! | ");
}

// Stopped while a step waits for what it holds (BeginStep: Locked): no
// step then, and the last step follows.
TEST(ApiDriveTarget, StoppedWhileBeginningAStepMakesTheLastStep) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.locked_when_stopped = true;
  ASSERT_TRUE(api::Drive(t, Every(3600 * 1000), &stop).ok());
  EXPECT_EQ(t.log, "B P A U E | W B P A E | W B E | B! P! A U E! | ");
}

// An error of a poll returns at once: nothing sealed or published after
// it; the step is ended, and so is the last step begun (a Sink's Root
// holds LOCK after Drive, also after an error).
TEST(ApiDriveTarget, AnErrorOfAPollReturnsAtOnce) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  t.fail_at_poll = 2;
  Status s = api::Drive(t, Every(0), &stop);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(t.log, "B P A U E | W B P E | B! E! | ");
}

TEST(ApiDriveTarget, FinalWithoutAnEndIsRefused) {
  api::FollowStop stop;
  FakeTarget t(&stop);
  api::DriveOptions o = Every(0);
  o.final = true;
  Status s = api::Drive(t, o, &stop);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("DriveOptions::final"), std::string::npos) << s.message();
  EXPECT_EQ(t.log, "");
}

// `run --kafka --state`'s target (utilities/kafka/partitions_target.h)
// gives the loop above the partitions' cadence: no LOCK a step, always
// pending (the merged publish is tried at every publish point), the first
// publish point after publish_every_ms, and a last step that reads nothing
// more (its publish point seals and publishes what was read). None of
// these touches the consumer (null here).
TEST(ApiDriveTarget, FollowingPartitionsPublishAfterEveryWithNothingPendingAndReadNothingLast) {
  kafka::RunOptions o;
  o.follow = true;
  kafka::RunStop none;
  kafka::PartitionsTarget t(o, nullptr, nullptr, {}, &none, nullptr);
  EXPECT_FALSE(t.HasEnd());
  EXPECT_TRUE(t.FirstPublishAfterEvery());
  EXPECT_TRUE(t.BeginStep(/*last=*/false, [] { return false; }).ok());
  bool pending = false;
  ASSERT_TRUE(t.AfterPoll(api::DriveOptions(), &pending).ok());
  EXPECT_TRUE(pending) << "a publish point with nothing sealed here still tries the merged publish";
  bool more = true;
  ASSERT_TRUE(t.Poll(/*last=*/true, &more).ok());
  EXPECT_FALSE(more) << "the last step reads no round";
  EXPECT_FALSE(t.WantsPublish());

  kafka::RunStop stop;  // after a stop the next poll reads nothing
  stop.Stop();
  kafka::PartitionsTarget stopped(o, nullptr, nullptr, {}, &stop, nullptr);
  more = true;
  ASSERT_TRUE(stopped.Poll(/*last=*/false, &more).ok());
  EXPECT_FALSE(more);
}

// Voluntary context switches of this thread so far.
long ThreadSwitches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

// The target's Wait sleeps until its timeout or the run's stop, which comes
// from another thread (the one that waits for SIGTERM): it does not wake to
// look for the stop (an idle run uses no CPU there), and a stop ends it, and
// every later Wait, at once.
TEST(ApiDriveTarget, PartitionsWaitAsleepUntilAStopFromAnotherThread) {
  kafka::RunOptions o;
  o.follow = true;
  kafka::RunStop stop;
  kafka::PartitionsTarget t(o, nullptr, nullptr, {}, &stop, nullptr);
  const long before = ThreadSwitches();
  const auto start = std::chrono::steady_clock::now();
  t.Wait(300);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_LE(ThreadSwitches() - before, 5) << "woke to look for a stop while waiting";
  std::thread signal([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.Stop();
  });
  const auto waited = std::chrono::steady_clock::now();
  t.Wait(60000);
  EXPECT_LT(std::chrono::steady_clock::now() - waited, std::chrono::seconds(30)) << "the stop did not wake the wait";
  signal.join();
  const auto after = std::chrono::steady_clock::now();
  t.Wait(60000);
  EXPECT_LT(std::chrono::steady_clock::now() - after, std::chrono::seconds(1));
}

// Without --follow the partitions are a source with an end (one step).
TEST(ApiDriveTarget, PartitionsToTheirEndAreASourceWithAnEnd) {
  kafka::RunOptions o;
  kafka::RunStop none;
  kafka::PartitionsTarget t(o, nullptr, nullptr, {}, &none, nullptr);
  EXPECT_TRUE(t.HasEnd());
}

}  // namespace
}  // namespace snapsink::testing
