// A root and what it reads (a StepSource, sink/follower.h) as the Driver's
// api::DriveTarget: every Sink's (Sink::Follow, Sink::Run, api::Drive over
// a Sink). A step holds the root's LOCK (taken for the step, unless the
// writer holds it for its life: a source with an end under a Sink from
// Open) and starts from what LMDB and the files hold, never from memory of
// the last one: another writer may have published, rolled back or sealed
// between. After each poll the windows the watermark closed are sealed; a
// publish publishes what is staged, then collects garbage
// (keep_generations; a failure is said once while it holds, and following
// goes on). The end of a source with an end is sealed (every window under
// final, unless a stop ended it) and published, both said also when there
// was nothing, without gc.
#pragma once

#include <memory>
#include <string>

#include "engine/root.h"
#include "engine/status.h"
#include "engine/writer_lock.h"
#include "sink/follower.h"
#include "snapsink/drive.h"

namespace snapsink {

class RootTarget : public api::DriveTarget {
 public:
  // follower_for_life: the caller holds root's LOCK.follower (a Sink from
  // OpenFollower) and root holds no LOCK between steps nor after the run;
  // otherwise a followed run (Begin) takes LOCK.follower and gives LOCK
  // back to root at its last step.
  RootTarget(Root* root, StepSource* source, bool follower_for_life);
  // Before the Driver runs a followed source: LOCK.follower (unless
  // follower_for_life), and root's LOCK goes to the steps.
  // Errors: Locked (another follower runs), IOError.
  Status Begin();

  Status Poll(bool last, bool* more) override { return source_->Poll(root_, last, more); }
  void Wait(int64_t timeout_ms) override { source_->Wait(timeout_ms); }
  void Wake() override { source_->Wake(); }
  bool HasEnd() const override { return source_->HasEnd(); }
  Status BeginStep(bool last, const std::function<bool()>& stopped) override;
  void EndStep(bool last) override;
  Status AfterPoll(const api::DriveOptions& options, bool* pending) override;
  Status Publish(bool all, const api::DriveOptions& options) override;
  Status AtEnd(const api::DriveOptions& options) override;

 private:
  void CollectGarbageAfterPublish(const api::DriveOptions& options);

  Root* root_;
  StepSource* source_;
  bool follower_for_life_;
  bool lock_steps_;          // BeginStep takes LOCK (root does not hold it for the run)
  bool hand_back_ = false;   // the last step's LOCK goes back to root
  std::unique_ptr<FileLock> life_, step_;
  bool staged_ = false;  // seals staged at the step's start (this writer's or another's)
  std::string last_gc_note_;
};

}  // namespace snapsink
