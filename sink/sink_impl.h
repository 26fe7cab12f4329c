// Internal to sink/: what a ReadOnlySink / Sink handle holds, and the public
// records made from the engine's own (its RootConfig, the status publish/
// gathers). The other records publish/ fills directly. Nothing here is
// installed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/root.h"
#include "engine/status.h"
#include "sink/root_status.h"
#include "publish/seal.h"
#include "sink/root_views.h"
#include "snapsink/sink.h"

namespace snapsink::api {

class WriteQueue;  // sink/write_queue.h

// The one friend of the public handles (sink.h): sink/'s way to their
// private state. Nothing outside sink/ includes this header.
struct SinkAccess {
  using Impl = ReadOnlySink::Impl;
  using FollowState = FollowStop::State;
  using StepState = Sink::Step::State;
  static Impl* Get(ReadOnlySink* h) { return h->impl_.get(); }
  static const Impl* Get(const ReadOnlySink& h) { return h.impl_.get(); }
  static FollowState* Get(FollowStop* stop) { return stop->state_.get(); }
  static std::unique_ptr<ReadOnlySink> NewReadOnly(std::unique_ptr<Impl> impl) {
    return std::unique_ptr<ReadOnlySink>(new ReadOnlySink(std::move(impl)));
  }
  static std::unique_ptr<Sink::Step> NewStep(std::unique_ptr<StepState> state);  // sink/step.cc
};
using SinkImpl = SinkAccess::Impl;

struct ReadOnlySink::Impl {
  // Sink::OpenFollower: LOCK.follower for the handle's life (before root:
  // let go after the root is closed); nullptr on every other handle.
  std::unique_ptr<FileLock> follower_lock;
  std::unique_ptr<Root> root;
  std::shared_ptr<WriteQueue> writes;  // a Sink's group commit (Sink::Write); after root: destroyed first
  RootSettings settings;
  bool read_only = false;  // LMDB opened read-only (Sink::OpenReadOnly)
  // A Sink (Open, OpenFollower): its LOCK is its own, so Backfill, which
  // takes LOCK for its last step, refuses it.
  bool writer = false;
  // A Sink::Step is held (sink/step.cc). Read by Write's callers on any thread.
  std::atomic<bool> in_step{false};
};

// OK when the Sink may write now: always on a Sink from Open; on a follower
// (Sink::OpenFollower) only while it holds a Step, else InvalidArgument
// naming `what`.
Status CheckCanWrite(const SinkImpl& impl, const char* what);

// At the start of a step of a writer that let LOCK go since its last one
// (sink/step.cc): rereads the history settings another writer may have
// changed, and gives the Write path a new Ingester when they did.
Status StartStep(SinkImpl* impl);

// A handle opened read-only reopens its store for writing (still without
// LOCK): backfill's last step, the merged publish.
Status ReopenWritableHandle(SinkImpl* impl);

// Why a seal of the closed windows found nothing: the open windows with
// unsealed changes and the watermark (ReadOnlySink::Unsealed, a job's end).
Status GatherUnsealed(Root* root, UnsealedWindows* out);

// The public settings of a root's configuration (sink/root_views.h).
inline RootSettings ToPublic(const RootConfig& c) { return ToRootSettings(c); }

}  // namespace snapsink::api
