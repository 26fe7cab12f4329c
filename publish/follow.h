// Follower: `snapsink run --follow`, the sink as a long-running process.
//
// Inputs are files and directories. A FILE is read like `tail -F`: from its
// committed position on, again on every change, and from its start when the
// file at the path is another one (rotated, rewritten, truncated: the
// Ingester's identity rule, SPEC 5); a missing file is waited for. In a DIR
// every `*.ndjson` file that appears is a source of its own (a spool
// directory). A last line without '\n' is left until it is whole (the input
// is never final while following).
//
// After each pass over the inputs, windows the watermark has closed are
// sealed; everything sealed is published at most every publish_every_ms, all
// in one generation, and garbage is collected after each publish
// (CollectGarbage: keep_generations, the current one and every generation a
// reader pins stay). Between passes the follower sleeps on inotify (the
// directories of the inputs) or at most poll_ms: it never busy-waits.
//
// LOCK (engine/writer_lock.h): the follower holds LOCK.follower for its life
// and LOCK only for a step (a pass, its seal, publish and gc), so gc,
// rollback, backfill, gaps accept and the like run beside it in their own
// processes, each between two steps. A step ends early, between sources,
// when a writer waits; the rest is read at once in the next step. Each step
// starts from what LMDB and the files hold, never from memory of the last
// one: another writer may have published, rolled back or sealed between.
//
// Stop (any thread, or a signal handler's thread) ends the loop after one
// last pass: what was read is committed, what was sealed is published, and
// Run returns OK. Every step is a committed ingest batch, a seal or a
// publish, each crash-safe on its own: after a kill -9 a new Run resumes
// from the committed positions and publishes what was staged, so nothing is
// lost or counted twice.
//
// REQUIRES: root is open as a writer (with or without LOCK; Run takes it
// from the Root and gives it back when it returns). Run is not reentrant.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/root.h"
#include "engine/status.h"
#include "publish/publisher.h"
#include "publish/seal.h"
#include "snapsink/options.h"

namespace snapsink {

// The public options (include/snapsink/options.h), checked by Sink::Follow.
using api::FollowOptions;

class Follower {
 public:
  Follower(Root* root, FollowOptions options);
  ~Follower();
  // Follows until Stop (or an error: a gap or bad line under stop, a failed
  // write); see the file comment.
  Status Run();
  // Thread-safe; Run returns after its last pass.
  void Stop();

 private:
  Status Pass(bool final_pass);
  void CollectGarbageAfterPublish();
  std::vector<std::string> Sources();
  void Wait(int64_t timeout_ms);

  Root* root_;
  FollowOptions options_;
  std::atomic<bool> stop_{false};
  int stop_fd_ = -1;
  int inotify_fd_ = -1;
  bool pending_publish_ = false;
  bool more_to_read_ = false;  // the last step ended early for a waiting writer
  int64_t last_publish_ms_ = 0;
  std::map<std::string, std::string> last_note_;  // source -> the note last said
  std::string last_gc_note_;
};

}  // namespace snapsink
