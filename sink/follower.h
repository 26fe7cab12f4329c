// The follow loop: `snapsink run --follow` (and api::Drive, Sink::Follow,
// `run --kafka --follow`), the sink as a long-running process.
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
// The loop (Driver: steps, seal, publish and gc cadence, stop) is apart
// from what it reads and where that goes (an api::DriveTarget): a root and
// a StepSource (RootTarget, sink/root_target.h) for every Sink, whose
// FileSource reads files and directories as above and whose sink/follow.cc
// adapter plugs any public api::Source in (api::Drive), its polls taking
// the place of the pass over the inputs; and a program's own target (the
// Kafka partitions' states, utilities/kafka/partitions_target.h). A
// source with an end (HasEnd: Sink::Run's IngestSource in sink/sink.cc, a
// Kafka topic read up to the end offsets seen at start) is one step of it,
// the last: polled to its end, sealed, published, no gc.
//
// REQUIRES (RootTarget): root is open as a writer (with or without LOCK;
// a followed run takes it from the Root and gives it back when it returns),
// or by a follower that holds LOCK.follower itself (follower_for_life).
// Run is not reentrant.
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
#include "snapsink/drive.h"
#include "snapsink/options.h"

namespace snapsink {

// The public options (include/snapsink/options.h), checked by Sink::Follow.
using api::FollowOptions;

// What the Driver reads from, one step at a time: files and directories
// (FileSource below) and, through sink/, any source of the public API.
class StepSource {
 public:
  virtual ~StepSource() = default;
  // REQUIRES: LOCK held (one step). Reads what the source has now into root,
  // committing it with its positions. Sets *more when it stopped early for a
  // waiting writer (never on the final pass): the Driver reads again at once.
  virtual Status Poll(Root* root, bool final_pass, bool* more) = 0;
  // Blocks until the input may have grown, Wake, or timeout_ms (>= 1) passed.
  virtual void Wait(int64_t timeout_ms) = 0;
  // Thread-safe: makes Wait return now and from then on.
  virtual void Wake() = 0;
  // A source with an end (api::Source::HasEnd): Run is its last step at
  // once, polled until *more is false.
  virtual bool HasEnd() const { return false; }
  // After that step's polls: what ended it. OK: the end of the input
  // (DriveOptions::final seals every window). Gap or BadInput: a stop in its
  // data (on-gap or on-error stop), everything before it committed: the
  // closed windows are sealed and published, as a stop never holds back what
  // came before it, and Run returns the stop.
  virtual Status Ended() const { return Status::OK(); }
};

// The cadence of a follower (the options' publish_every_ms, poll_ms and
// final; its reports go to the target's hooks) and its steps: see the file
// comment and api::Drive(DriveTarget&, ...). A target with an end is one
// step (RunToEnd): Sink::Run, `run -`, `run --kafka` without --follow.
class Driver {
 public:
  Driver(api::DriveTarget* target, api::DriveOptions options);
  // Follows until Stop (or an error: a gap or bad line under stop, a failed
  // write); see the file comment.
  Status Run();
  // Thread-safe; Run returns after its last pass.
  void Stop();

 private:
  Status Step(bool last);
  Status RunToEnd();

  api::DriveTarget* target_;
  api::DriveOptions options_;
  std::atomic<bool> stop_{false};
  bool pending_publish_ = false;
  bool more_to_read_ = false;  // the last step ended early for a waiting writer
  int64_t last_publish_ms_ = 0;
};

// Files and directories (options.inputs), as the file comment says: each
// FILE a source tailed from its committed position, each `*.ndjson` file
// that appears in a DIR a source of its own. Waits on inotify.
class FileSource : public StepSource {
 public:
  FileSource(Env* env, FollowOptions options);
  ~FileSource() override;
  Status Poll(Root* root, bool final_pass, bool* more) override;
  void Wait(int64_t timeout_ms) override;
  void Wake() override;

 private:
  std::vector<std::string> Sources();

  Env* env_;
  FollowOptions options_;
  int wake_fd_ = -1;
  int inotify_fd_ = -1;
  std::map<std::string, std::string> last_note_;  // source -> the note last said
};

}  // namespace snapsink
