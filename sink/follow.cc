// Sink::Follow, api::Drive and FollowStop: the public face of
// sink/follower.h (its Driver over a RootTarget reading a FileSource or a
// public Source, or over a public DriveTarget).
#include <algorithm>
#include <mutex>

#include "engine/writer_lock.h"
#include "sink/follower.h"
#include "sink/root_target.h"
#include "sink/sink_impl.h"
#include "snapsink/drive.h"

namespace snapsink::api {

// Stop may come before, during or after Follow, from another thread: the
// driver is reachable only under the mutex while Follow runs.
struct FollowStop::State {
  std::mutex mu;
  bool stopped = false;
  Driver* driver = nullptr;
};

FollowStop::FollowStop() : state_(std::make_unique<State>()) {}
FollowStop::~FollowStop() = default;

void FollowStop::Stop() {
  std::lock_guard<std::mutex> l(state_->mu);
  state_->stopped = true;
  if (state_->driver != nullptr) state_->driver->Stop();
}

namespace {

// The cadence fields Follow and Drive share; `t` names the options' struct.
Status CheckCadence(const std::string& t, int64_t publish_every_ms, int64_t poll_ms, uint64_t keep_generations) {
  if (publish_every_ms < 0) return OutOfRange(t + "::publish_every_ms", publish_every_ms, "must not be negative");
  if (poll_ms <= 0) return OutOfRange(t + "::poll_ms", poll_ms, "must be greater than zero");
  if (keep_generations == 0) return OutOfRange(t + "::keep_generations", 0, "must be at least 1");
  return Status::OK();
}

// Runs driver until stop (which may have come already) or an error.
Status RunDriver(Driver* driver, FollowStop* stop) {
  SinkAccess::FollowState* state = SinkAccess::Get(stop);
  {
    std::lock_guard<std::mutex> l(state->mu);
    state->driver = driver;
    if (state->stopped) driver->Stop();
  }
  Status s = driver->Run();
  std::lock_guard<std::mutex> l(state->mu);
  state->driver = nullptr;
  return s;
}

// A public Source as the Driver's: one poll a step (the next step follows
// at once when it has more, a waiting writer first; the last step polls
// until it has no more). Its Writes run inside the step.
class PublicSource : public StepSource {
 public:
  PublicSource(Sink* sink, SinkImpl* impl, Source* source) : sink_(sink), impl_(impl), source_(source) {}
  Status Poll(Root*, bool final_pass, bool* more) override {
    // Another writer may have changed the history settings the Write path copied.
    SNAPSINK_RETURN_IF_ERROR(StartStep(impl_));
    impl_->in_step = true;  // a follower's Writes are let in (CheckCanWrite)
    Status s = source_->Poll(*sink_, final_pass, more);
    impl_->in_step = false;
    return s;
  }
  void Wait(int64_t timeout_ms) override { source_->Wait(timeout_ms); }
  void Wake() override { source_->Wake(); }
  bool HasEnd() const override { return source_->HasEnd(); }

 private:
  Sink* sink_;
  SinkImpl* impl_;
  Source* source_;
};

// Drive over a root: a followed source begins (LOCK.follower) first.
Status DriveRoot(Root* root, StepSource* source, DriveOptions options, bool follower_for_life, FollowStop* stop) {
  RootTarget target(root, source, follower_for_life);
  if (!source->HasEnd()) SNAPSINK_RETURN_IF_ERROR(target.Begin());
  Driver driver(&target, std::move(options));
  return RunDriver(&driver, stop);
}

}  // namespace

Status DriveTarget::BeginStep(bool, const std::function<bool()>&) { return Status::OK(); }
void DriveTarget::EndStep(bool) {}

Status Sink::Follow(const FollowOptions& o, FollowStop* stop) {
  if (impl_->follower_lock != nullptr) {
    return Status::InvalidArgument("Follow takes a Sink from Open; one from OpenFollower follows already");
  }
  if (std::find(o.inputs.begin(), o.inputs.end(), "-") != o.inputs.end()) {
    return Status::InvalidArgument("follow reads files and directories, not standard input");
  }
  if (o.inputs.empty()) return Status::InvalidArgument("FollowOptions::inputs is empty: give a file or directory");
  SNAPSINK_RETURN_IF_ERROR(CheckCadence("FollowOptions", o.publish_every_ms, o.poll_ms, o.keep_generations));
  FileSource files(impl_->root->env(), o);
  DriveOptions cadence;  // the Driver's fields of it; the inputs are the source's business
  cadence.publish_every_ms = o.publish_every_ms;
  cadence.poll_ms = o.poll_ms;
  cadence.keep_generations = o.keep_generations;
  cadence.on_note = o.on_note;
  cadence.on_sealed = o.on_sealed;
  cadence.on_published = o.on_published;
  return DriveRoot(impl_->root.get(), &files, std::move(cadence), /*follower_for_life=*/false, stop);
}

Status Drive(Sink& sink, Source& source, const DriveOptions& o, FollowStop* stop) {
  SinkImpl* impl = SinkAccess::Get(&sink);
  if (impl->in_step) return Status::InvalidArgument("Drive: a step of this Sink is held (Sink::BeginStep)");
  SNAPSINK_RETURN_IF_ERROR(CheckCadence("DriveOptions", o.publish_every_ms, o.poll_ms, o.keep_generations));
  if (o.final && !source.HasEnd()) {
    return Status::InvalidArgument("DriveOptions::final seals every window at a source's end; this source has none "
                                   "(Source::HasEnd)");
  }
  PublicSource adapter(&sink, impl, &source);
  return DriveRoot(impl->root.get(), &adapter, o, /*follower_for_life=*/impl->follower_lock != nullptr, stop);
}

Status Drive(DriveTarget& target, const DriveOptions& o, FollowStop* stop) {
  SNAPSINK_RETURN_IF_ERROR(CheckCadence("DriveOptions", o.publish_every_ms, o.poll_ms, o.keep_generations));
  if (o.final && !target.HasEnd()) {
    return Status::InvalidArgument("DriveOptions::final seals every window at a source's end; this target has none "
                                   "(DriveTarget::HasEnd)");
  }
  Driver driver(&target, o);
  return RunDriver(&driver, stop);
}

}  // namespace snapsink::api
