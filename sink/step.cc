// Sink::OpenFollower's steps: LOCK one step at a time for a long-running
// embedder (include/snapsink/sink.h; engine/writer_lock.h has the protocol
// it shares with `run --follow` and the writers that wait for it).
#include <chrono>
#include <thread>

#include "engine/writer_lock.h"
#include "sink/sink_impl.h"
#include "sink/write_queue.h"

namespace snapsink::api {

struct Sink::Step::State {
  SinkImpl* impl = nullptr;
  bool holds_lock = false;  // a follower's step: LOCK is held by impl->root
};

Sink::Step::Step(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<Sink::Step> SinkAccess::NewStep(std::unique_ptr<StepState> state) {
  return std::unique_ptr<Sink::Step>(new Sink::Step(std::move(state)));
}

Sink::Step::~Step() {
  SinkImpl* impl = state_->impl;
  if (state_->holds_lock) impl->root->ReleaseWriterLock().reset();  // other writers may run now
  impl->in_step = false;
}

Status CheckCanWrite(const SinkImpl& impl, const char* what) {
  if (impl.follower_lock == nullptr || impl.in_step) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " on a follower of " + impl.root->path() +
                                 " outside a step: it holds LOCK only inside one (Sink::BeginStep)");
}

// What another writer may have changed since the last step and this handle
// keeps in memory. LMDB's records are read per transaction, and the Write
// path's Ingester drops its caches (producers, aggregates, sources, ids,
// watermark) by itself when another transaction committed since its own
// last one (engine/ingest.h). Left: the history settings, which the Root,
// the handle and that Ingester copied.
Status StartStep(SinkImpl* impl) {
  Root* root = impl->root.get();
  SNAPSINK_RETURN_IF_ERROR(root->ReloadHistorySettings());
  const RootConfig& c = root->config();
  if (c.retain_ms != impl->settings.retain_ms || c.max_ahead_ms != impl->settings.max_ahead_ms) {
    impl->settings = ToPublic(c);
    impl->writes = std::make_shared<WriteQueue>(root);  // its Ingester copied the old settings
  }
  return Status::OK();
}

Result<std::unique_ptr<Sink::Step>> Sink::BeginStep(const std::function<bool()>& give_up) {
  SinkImpl* impl = impl_.get();
  if (impl->in_step) return Status::InvalidArgument("BeginStep: a step of this Sink is held already");
  auto state = std::make_unique<SinkAccess::StepState>();
  state->impl = impl;
  if (impl->follower_lock != nullptr) {
    Root* root = impl->root.get();
    std::unique_ptr<FileLock> lock;
    SNAPSINK_RETURN_IF_ERROR(LockRootForStep(
        root->env(), root->path(), [&give_up] { return give_up && give_up(); },
        [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }, &lock));
    root->HoldWriterLock(std::move(lock));
    state->holds_lock = true;
  }
  impl->in_step = true;
  std::unique_ptr<Step> step = SinkAccess::NewStep(std::move(state));
  if (impl->follower_lock != nullptr) SNAPSINK_RETURN_IF_ERROR(StartStep(impl));  // ~Step lets LOCK go
  return step;
}

bool Sink::WritersWaiting() const {
  if (impl_->follower_lock == nullptr) return false;
  return snapsink::WritersWaiting(impl_->root->env(), impl_->root->path());
}

}  // namespace snapsink::api
