// Sink::OpenFollower and its steps (include/snapsink/sink.h): a follower
// holds LOCK only inside a Step, a plain writer runs between its steps, and
// the follower's next step sees what that writer committed.
//
// Both Sinks live in this process, taking turns: LOCK is an
// open-file-description lock, so two handles of one process exclude each
// other as two processes do.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;


// Events of producer seq first..last, one a second from kBase + minute.
api::WriteBatch Batch(const std::string& source, const std::string& producer, int first, int last, int minute = 0) {
  api::WriteBatch b(source);
  for (int seq = first; seq <= last; ++seq) {
    b.Add(EventLine().Producer(producer).Seq(seq).Ts(kBase + minute * kMinute + seq * 1000).Metric("m").Key("k").Value(1).Line());
  }
  b.SetPosition(std::to_string(last + 1));
  return b;
}

class ApiFollowerTest : public ::testing::Test {
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

TEST_F(ApiFollowerTest, WritesOnlyInsideAStep) {
  auto follower = api::Sink::OpenFollower(root_);
  ASSERT_STATUS_OK(follower);
  api::Sink& f = **follower;
  api::WriteResult r;
  Status s = f.Write(Batch("src", "p", 0, 2), {}, &r);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("outside a step"), std::string::npos) << s.message();
  EXPECT_EQ(f.Seal({}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(f.Publish().status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(f.Gc(1).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(f.RetireIdleProducers(kMinute).status().code(), Status::Code::kInvalidArgument);
  {
    auto step = f.BeginStep();
    ASSERT_STATUS_OK(step);
    EXPECT_EQ(f.BeginStep().status().code(), Status::Code::kInvalidArgument) << "a second step of one Sink";
    ASSERT_STATUS_OK(f.Write(Batch("src", "p", 0, 2), {}, &r));
    EXPECT_EQ(r.applied, 3u);
    // Inside the step LOCK is held: a plain writer would wait, Follow is refused.
    api::FollowStop stop;
    api::FollowOptions follow;
    follow.inputs = {"x"};
    EXPECT_EQ(f.Follow(follow, &stop).code(), Status::Code::kInvalidArgument);
  }
  // Between steps a plain writer opens at once; while it holds LOCK a second
  // follower is refused only after its wait, so only the first is tried here.
  auto plain = api::Sink::Open(root_);
  ASSERT_STATUS_OK(plain);
  auto position = (*plain)->Position("src");
  ASSERT_STATUS_OK(position);
  EXPECT_EQ(**position, "3");
  // On a plain Sink a step holds nothing more, and WritersWaiting is false.
  {
    auto step = (*plain)->BeginStep();
    ASSERT_STATUS_OK(step);
    EXPECT_FALSE((*plain)->WritersWaiting());
  }
  // The plain writer holds LOCK: the follower's step waits, and gives up when told.
  int asked = 0;
  auto refused = f.BeginStep([&] { return ++asked > 3; });
  EXPECT_EQ(refused.status().code(), Status::Code::kLocked);
  EXPECT_GT(asked, 3);
  plain->reset();
  ASSERT_STATUS_OK(f.BeginStep());
}

TEST_F(ApiFollowerTest, SecondFollowerIsLocked) {
  auto first = api::Sink::OpenFollower(root_);
  ASSERT_STATUS_OK(first);
  auto second = api::Sink::OpenFollower(root_);
  EXPECT_EQ(second.status().code(), Status::Code::kLocked);
  EXPECT_NE(second.status().message().find("followed by another"), std::string::npos) << second.status().message();
}

// A plain writer waits for the follower's step (queued), the follower sees
// it waiting, and the writer gets LOCK as soon as the step ends.
TEST_F(ApiFollowerTest, AWaitingWriterGetsInWhenTheStepEnds) {
  auto follower = api::Sink::OpenFollower(root_);
  ASSERT_STATUS_OK(follower);
  api::Sink& f = **follower;
  auto step = f.BeginStep();
  ASSERT_STATUS_OK(step);
  std::atomic<bool> step_over{false};
  auto writer = std::async(std::launch::async, [&]() -> Status {
    auto plain = api::Sink::Open(root_);  // waits for the step
    if (!plain.ok()) return plain.status();
    if (!step_over) return Status::InvalidArgument("opened while the follower's step held LOCK");
    api::WriteResult r;
    return (*plain)->Write(Batch("other", "q", 0, 4), {}, &r);
  });
  bool waiting = false;
  for (int i = 0; i < 3000 && !waiting; ++i) {  // bounded, not timed: up to a minute
    waiting = f.WritersWaiting();
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(waiting) << "the writer never queued";
  step_over = true;
  step->reset();
  ASSERT_STATUS_OK(writer.get());
  // While the writer is queued or holds LOCK, the next step waits; then it runs.
  auto next = f.BeginStep();
  ASSERT_STATUS_OK(next);
  EXPECT_FALSE(f.WritersWaiting());
}

// What another writer commits between two steps is what the next step
// builds on: producers' sequences (no event counted twice), retired
// producers, the history settings, a rollback's window state.
TEST_F(ApiFollowerTest, NextStepReadsWhatTheOtherWriterCommitted) {
  auto follower = api::Sink::OpenFollower(root_);
  ASSERT_STATUS_OK(follower);
  api::Sink& f = **follower;
  api::WriteResult r;
  {
    auto step = f.BeginStep();
    ASSERT_STATUS_OK(step);
    ASSERT_STATUS_OK(f.Write(Batch("a", "p", 0, 4), {}, &r));  // minute 0
    EXPECT_EQ(r.applied, 5u);
    ASSERT_STATUS_OK(f.Write(Batch("a", "p", 5, 9, 1), {}, &r));  // minute 1: minute 0 closes
    ASSERT_STATUS_OK(f.Seal({}));
    auto published = f.Publish();
    ASSERT_STATUS_OK(published);
    EXPECT_EQ(published->generation, 1u);
  }
  {  // Another writer, between the steps.
    auto plain = api::Sink::Open(root_);
    ASSERT_STATUS_OK(plain);
    // Producer p's next events, by another source.
    ASSERT_STATUS_OK((*plain)->Write(Batch("b", "p", 10, 14, 1), {}, &r));
    EXPECT_EQ(r.applied, 5u);
    // At most 5 minutes ahead from now on.
    ASSERT_STATUS_OK((*plain)->SetHistory(std::nullopt, 5 * kMinute));
    // Minute 1 sealed and published, then rolled back to generation 1
    // (which has minute 0 only): minute 1's state is emptied.
    api::SealOptions all;
    all.all = true;
    ASSERT_STATUS_OK((*plain)->Seal(all));
    ASSERT_STATUS_OK((*plain)->Publish());
    auto rolled = (*plain)->Rollback(1);
    ASSERT_STATUS_OK(rolled);
    EXPECT_EQ(rolled->generation, 3u);
  }
  auto step = f.BeginStep();
  ASSERT_STATUS_OK(step);
  EXPECT_EQ(f.settings().max_ahead_ms, 5 * kMinute);
  // The same events again, from the follower's source: seen, not applied.
  ASSERT_STATUS_OK(f.Write(Batch("a", "p", 10, 14, 1), {}, &r));
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.duplicates, 5u);
  // An event 10 minutes ahead is beyond the max-ahead the other writer set.
  ASSERT_STATUS_OK(f.Write(Batch("a", "p", 15, 15, 12), {}, &r));
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.rejected, 1u);
  // The next publish builds on the rollback: minute 1 holds what came after it (nothing).
  ASSERT_STATUS_OK(f.Write(Batch("a", "p", 16, 16, 2), {}, &r));  // closes minute 1
  EXPECT_EQ(r.applied, 1u);
  ASSERT_STATUS_OK(f.Seal({}));
  auto published = f.Publish();
  ASSERT_STATUS_OK(published);
  auto reader = f.NewReader();
  ASSERT_STATUS_OK(reader);
  int64_t events = 0;
  ASSERT_STATUS_OK((*reader)->Scan(kBase, std::string("m"), [&](const api::Row& row) { events += row.count; }));
  EXPECT_EQ(events, 5) << "minute 0: the follower's first five events";
  events = 0;
  Status minute1 =
      (*reader)->Scan(kBase + kMinute, std::string("m"), [&](const api::Row& row) { events += row.count; });
  EXPECT_TRUE(minute1.ok() || minute1.IsNotFound()) << minute1.ToString();
  EXPECT_EQ(events, 0) << "minute 1 was rolled back; its events are seen and never come back";
}

}  // namespace
}  // namespace snapsink::testing
