// snapsink public API: one loop that reads a source as it grows, seals and
// publishes. Sink::Follow is this loop over files and spool directories; a
// program with events of its own (a socket, a queue, the next broker)
// implements Source and calls Drive.
//
//   class Queue : public snapsink::api::Source { ... };   // Poll: sink.Write(batch)
//   snapsink::api::FollowStop stop;                       // stop.Stop() at SIGTERM
//   Status s = snapsink::api::Drive(**sink, queue, {.publish_every_ms = 10000}, &stop);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "snapsink/options.h"
#include "snapsink/sink.h"
#include "snapsink/status.h"

namespace snapsink::api {

// What Drive reads from. Drive calls it from the thread that called Drive,
// but for Wake.
class Source {
 public:
  virtual ~Source() = default;
  // Called inside one of Drive's steps (the root's LOCK held), once a
  // step: reads a bounded part of what the source has now (one batch, one
  // poll of a broker) and commits it into sink with the source's position:
  // Sink::Write of a WriteBatch with SetPosition, so that a crash loses
  // nothing and counts nothing twice. Sets *more when it has more to read
  // at once: the next step follows without a Wait (a waiting writer goes
  // first). In the last step (last: after a stop) Drive polls until *more is
  // false: a source that ends there (leaves a group) says so.
  // Errors: what the source's Writes return (Gap, BadInput, Locked, IOError,
  //   Corruption) or its own reading fails with; Drive returns it.
  virtual Status Poll(Sink& sink, bool last, bool* more) = 0;
  // Blocks until the source may have more, timeout_ms (>= 1) has passed,
  // or Wake was called.
  virtual void Wait(int64_t timeout_ms) = 0;
  // Thread-safe: makes the Wait in progress and every later one return at
  // once (Drive calls it on FollowStop::Stop).
  virtual void Wake() = 0;
  // A source with an end (files read once, standard input, a topic up to
  // the end offsets seen at start) says so: Drive then makes its last step
  // at once, polling until *more is false (the source is at its end, or
  // stopped by a stop of its own), and returns after it: a job, as
  // Sink::Run. false: a source followed until FollowStop::Stop.
  virtual bool HasEnd() const { return false; }
};

// The cadence of Drive (FollowOptions' fields of the same names).
struct DriveOptions {
  int64_t publish_every_ms = kDefaultPublishEveryMs;  // >= 0: publish at most this often
  int64_t poll_ms = kDefaultPollMs;                   // > 0: longest Wait between polls
  // After each publish, gc keeps this many newest generations (>= 1), the
  // current one and every generation a Reader pins (Sink::Gc).
  uint64_t keep_generations = kDefaultKeepGenerations;
  // A source with an end: its last step seals every window with changes,
  // open ones too (the end of the input is the end of the data); else the
  // closed ones.
  bool final = false;
  // Reports (dropped when unset: the library never prints): a gc after a
  // publish that failed (said once while it holds; Drive goes on); windows
  // sealed after a poll; generations published. At the end of a source with
  // one, on_published is called also when nothing was pending (generation
  // 0), and on_unsealed says why when its seal found nothing.
  std::function<void(const std::string& note)> on_note;
  std::function<void(const std::vector<SealedWindow>&)> on_sealed;
  std::function<void(const UnsealedWindows&)> on_unsealed;
  std::function<void(const PublishResult&)> on_published;
};

// What Drive reads from and seals and publishes into, when that is not one
// Sink: Drive(Sink&, Source&, ...) is this over a Sink (the root's LOCK a
// step, a seal after each poll, a publish of what is staged, gc after it),
// and a program whose records go elsewhere implements it (the Kafka
// partitions' own states, sealed at publish points and merged into a root
// they share: utilities/kafka/partitions_target.h). Drive owns the cadence:
// when a step begins and ends, when to poll, wait, publish and end; the
// target owns what each of those is, and says what it sealed and published
// through the reports of the DriveOptions each hook is given. Drive calls it
// from the thread that called Drive, but for Wake.
class DriveTarget {
 public:
  virtual ~DriveTarget() = default;
  // Source's Poll, Wait, Wake and HasEnd, with the records going where the
  // target keeps them (Source::Poll's sink is the Sink target's).
  // Errors: what the reading or the writes fail with; Drive returns it.
  virtual Status Poll(bool last, bool* more) = 0;
  virtual void Wait(int64_t timeout_ms) = 0;
  virtual void Wake() = 0;
  virtual bool HasEnd() const { return false; }
  // Begins a step: takes what one step holds (a root's LOCK), waiting as
  // long as it takes for the last step (last), else until stopped() (then
  // Locked: Drive makes its last step). EndStep(last) ends it, also after
  // an error of the step or of BeginStep. Default: nothing to hold.
  // Errors: Locked (stopped while waiting), IOError, Corruption.
  virtual Status BeginStep(bool last, const std::function<bool()>& stopped);
  virtual void EndStep(bool last);
  // After the polls of a step of a followed source: seals what they closed
  // (on_sealed), and sets *pending when a publish would have something to
  // do (a target that publishes whenever due sets it always).
  // Errors: what the seal returns (IOError, Corruption).
  virtual Status AfterPoll(const DriveOptions& options, bool* pending) = 0;
  // A publish point (due by the cadence, asked for by WantsPublish, or the
  // last step's): publishes (on_published for a generation), and a Sink
  // target collects garbage after a generation (keep_generations). all:
  // seal every window with changes first (the points a source with an end
  // asks for under DriveOptions::final; a Sink target seals after polls
  // and ignores it).
  // Errors: what the seal and publish return (Reconcile, IOError, Corruption).
  virtual Status Publish(bool all, const DriveOptions& options) = 0;
  // A source with an end, polled until it has no more: seals and publishes
  // its end and says both.
  // Errors: what the seal and publish return, or the stop that ended the
  //   source (Gap, BadInput) after what came before it is published.
  virtual Status AtEnd(const DriveOptions& options) = 0;
  // Asked after each poll: true for a publish point the target's own
  // progress calls for, cadence aside (partitions taken and read to their
  // end). Default: never.
  // Errors: none.
  virtual bool WantsPublish() { return false; }
  // true: a followed target's first publish comes publish_every_ms after
  // the start, not at the first step (a Sink publishes what it finds
  // staged at once). Default: false.
  // Errors: none.
  virtual bool FirstPublishAfterEvery() const { return false; }
};

// Polls source, seals the windows its watermark closed after each step,
// publishes what is sealed at most every publish_every_ms, and collects
// garbage after each publish, until stop->Stop() (then one last step: what
// was read is committed, what was sealed is published, OK) or an error.
// A source with an end (Source::HasEnd) is one step, as Sink::Run is: polled
// to its end, sealed (every window under final), published, no gc (a job
// leaves that to Sink::Gc), under the LOCK a Sink from Open holds (one
// from OpenFollower takes it for the step); a stop does not cut it short
// (the source stops itself). An error of a poll returns at once: the writes committed before it
// stay, each whole, and nothing is sealed or published after it.
// Holds sink's LOCK one step at a time (its comment in sink.h says what
// other writers may do between steps): on a Sink from Open as Sink::Follow
// does, on one from OpenFollower as its Steps do. The Source's Writes run
// inside a step. Each step is crash-safe: a new Drive resumes from the
// positions the source committed.
// Errors: InvalidArgument (a Step of sink held; a DriveOptions field out
//   of range, naming it; final for a source without an end), Locked
//   (another follower runs), what Source::Poll returns, and what a step's
//   seal, publish returns (Reconcile, IOError, Corruption).
Status Drive(Sink& sink, Source& source, const DriveOptions& options, FollowStop* stop);

// The same loop over a target of a program's own (DriveTarget above):
// steps as BeginStep and EndStep say, AfterPoll after each step's polls
// (the last step polls until it has no more), Publish when pending and
// publish_every_ms has passed since the last (or the start, under
// FirstPublishAfterEvery), when WantsPublish, and in the last step; at a
// source's end (HasEnd) one step polled to its end, with Publish(final)
// whenever WantsPublish, then AtEnd. Drive(Sink&, ...) is this over a Sink.
// Errors: InvalidArgument (a DriveOptions field out of range, naming it;
//   final for a source without an end), and what the target's hooks return.
Status Drive(DriveTarget& target, const DriveOptions& options, FollowStop* stop);

}  // namespace snapsink::api
