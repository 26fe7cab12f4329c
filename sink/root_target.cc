#include "sink/root_target.h"

#include <chrono>
#include <thread>
#include <vector>

#include "publish/maintenance.h"
#include "publish/publisher.h"
#include "publish/seal.h"
#include "sink/sink_impl.h"

namespace snapsink {

RootTarget::RootTarget(Root* root, StepSource* source, bool follower_for_life)
    : root_(root), source_(source), follower_for_life_(follower_for_life), lock_steps_(follower_for_life) {}

Status RootTarget::Begin() {
  lock_steps_ = true;
  if (follower_for_life_) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(LockFollower(root_->env(), root_->path(), &life_));
  // From here LOCK is held one step at a time (engine/writer_lock.h).
  step_ = root_->ReleaseWriterLock();
  hand_back_ = true;
  return Status::OK();
}

Status RootTarget::BeginStep(bool last, const std::function<bool()>& stopped) {
  if (step_ == nullptr && lock_steps_) {
    // The last step waits as long as it takes, asleep (the source's Wait
    // returns at once after a stop).
    std::function<void(int64_t)> wait = [this](int64_t ms) { source_->Wait(ms); };
    if (last) wait = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
    SNAPSINK_RETURN_IF_ERROR(LockRootForStep(root_->env(), root_->path(), stopped, wait, &step_));
  }
  // Another writer may have published or rolled back what this one staged,
  // or staged seals of its own: what is staged now decides.
  // `gc --retain` or `--max-ahead` may have changed them between steps.
  SNAPSINK_RETURN_IF_ERROR(root_->ReloadHistorySettings());
  std::vector<PendingSnapshot> staged;
  SNAPSINK_RETURN_IF_ERROR(StagedSeals(root_->store(), &staged));
  staged_ = !staged.empty();
  return Status::OK();
}

void RootTarget::EndStep(bool last) {
  if (last && hand_back_) {
    root_->HoldWriterLock(std::move(step_));  // the Root holds LOCK after the run, as before it
  } else {
    step_.reset();
  }
}

Status RootTarget::AfterPoll(const api::DriveOptions& options, bool* pending) {
  *pending = staged_;
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root_->store(), root_->config(), /*all=*/false, &windows));
  if (windows.empty()) return Status::OK();
  SealTarget t{root_->env(), root_->path(), root_->store(), root_->config().window_ms};
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealWindows(t, windows, &sealed));
  if (!sealed.empty()) {
    *pending = true;
    if (options.on_sealed) options.on_sealed(sealed);
  }
  return Status::OK();
}

Status RootTarget::Publish(bool, const api::DriveOptions& options) {
  PublishResult r;
  SNAPSINK_RETURN_IF_ERROR(PublishStaged(root_->env(), root_->path(), root_->store(), root_->config(), &r));
  if (r.generation != 0 && options.on_published) options.on_published(r);
  if (r.generation != 0) CollectGarbageAfterPublish(options);
  return Status::OK();
}

// REQUIRES: the source polled to its end (or its stop). Seals (every window
// under final, unless a stop ended it), publishes, and says both, also when
// there was nothing: the job's end. No gc: `run` never removes a generation
// (Sink::Gc, `snapsink gc` do).
Status RootTarget::AtEnd(const api::DriveOptions& options) {
  const Status ended = source_->Ended();
  if (!ended.ok() && !ended.IsGap() && !ended.IsBadInput()) return ended;
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root_->store(), root_->config(), options.final && ended.ok(), &windows));
  SealTarget t{root_->env(), root_->path(), root_->store(), root_->config().window_ms};
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealWindows(t, windows, &sealed));
  if (!sealed.empty() && options.on_sealed) options.on_sealed(sealed);
  if (sealed.empty() && options.on_unsealed) {
    api::UnsealedWindows why;
    SNAPSINK_RETURN_IF_ERROR(api::GatherUnsealed(root_, &why));
    options.on_unsealed(why);
  }
  PublishResult r;
  SNAPSINK_RETURN_IF_ERROR(PublishStaged(root_->env(), root_->path(), root_->store(), root_->config(), &r));
  if (options.on_published) options.on_published(r);
  return ended;
}

// A failed gc loses nothing (what it left, the next one removes): it is
// said once, and following goes on.
void RootTarget::CollectGarbageAfterPublish(const api::DriveOptions& options) {
  GcResult gc;
  Status s = CollectGarbage(root_->env(), root_->path(), root_->store(), options.keep_generations, &gc);
  const std::string note = s.ok() ? std::string() : "gc after publish failed (following goes on): " + s.ToString();
  if (!note.empty() && note != last_gc_note_ && options.on_note) options.on_note(note);
  last_gc_note_ = note;
}

}  // namespace snapsink
