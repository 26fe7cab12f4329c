// Sink::Follow and FollowStop: the public face of publish/follow.h.
#include <algorithm>
#include <mutex>

#include "publish/follow.h"
#include "sink/sink_impl.h"

namespace snapsink::api {

// Stop may come before, during or after Follow, from another thread: the
// follower is reachable only under the mutex while Follow runs.
struct FollowStop::State {
  std::mutex mu;
  bool stopped = false;
  Follower* follower = nullptr;
};

FollowStop::FollowStop() : state_(std::make_unique<State>()) {}
FollowStop::~FollowStop() = default;

void FollowStop::Stop() {
  std::lock_guard<std::mutex> l(state_->mu);
  state_->stopped = true;
  if (state_->follower != nullptr) state_->follower->Stop();
}

Status Sink::Follow(const FollowOptions& o, FollowStop* stop) {
  if (impl_->follower_lock != nullptr) {
    return Status::InvalidArgument("Follow takes a Sink from Open; one from OpenFollower follows already");
  }
  if (std::find(o.inputs.begin(), o.inputs.end(), "-") != o.inputs.end()) {
    return Status::InvalidArgument("follow reads files and directories, not standard input");
  }
  if (o.inputs.empty()) return Status::InvalidArgument("FollowOptions::inputs is empty: give a file or directory");
  if (o.publish_every_ms < 0) return OutOfRange("FollowOptions::publish_every_ms", o.publish_every_ms, "must not be negative");
  if (o.poll_ms <= 0) return OutOfRange("FollowOptions::poll_ms", o.poll_ms, "must be greater than zero");
  if (o.keep_generations == 0) return OutOfRange("FollowOptions::keep_generations", 0, "must be at least 1");
  Follower follower(impl_->root.get(), o);
  SinkAccess::FollowState* state = SinkAccess::Get(stop);
  {
    std::lock_guard<std::mutex> l(state->mu);
    state->follower = &follower;
    if (state->stopped) follower.Stop();
  }
  Status s = follower.Run();
  std::lock_guard<std::mutex> l(state->mu);
  state->follower = nullptr;
  return s;
}

}  // namespace snapsink::api
