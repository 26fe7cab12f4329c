// `snapsink run ROOT --kafka ...` as a library call: consume (Consumer),
// seal, publish. Seal decisions depend on event time and offsets only: after
// each round that wrote lines, the windows the watermark has closed are
// sealed; a publish happens at most every publish_every_ms (--follow) and at
// the end.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "snapsink/drive.h"
#include "snapsink/sink.h"
#include "utilities/kafka/kafka_consumer.h"

namespace snapsink::kafka {

struct RunOptions {
  ConsumerOptions consumer;
  bool follow = false;  // go on until a stop (RunStop); else end once caught up (Consumer::CaughtUp)
  bool final = false;   // at the end, seal every window (not with follow)
  // The cadence and reports (snapsink/drive.h): publish_every_ms (with
  // follow, and --state's publish points), on_sealed, on_published (each
  // publish of a generation; without follow also the end's, generation 0
  // when nothing was pending), on_unsealed (without follow: the end's seal
  // found nothing); with follow also keep_generations (gc after each
  // publish, as the file follower does). Its on_note is not used: the
  // notes, a failed gc's among them ("gc after publish failed (following
  // goes on): ...", said once while it holds; following goes on), go
  // through consumer.on_note. poll_ms is not used: a round waits in the
  // broker's poll. Its final is this struct's final.
  api::DriveOptions drive;
};

struct RunTotals {
  uint64_t records = 0;
  api::WriteResult lines;
};

// Adds a round's counts to totals (if not null).
void AddRound(const RoundResult& r, RunTotals* totals);

// The stop of one Run, asked for from another thread: one that waits for
// SIGTERM in sigwait (tools/stop_signals.h), never a signal handler (Stop
// takes a lock and wakes a condition variable). Thread-safe.
class RunStop {
 public:
  // Stops the run (Run below says how it ends): ends at once the wait in
  // progress and every later one, and stops the api::Drive in progress (or
  // the one still to start).
  void Stop();
  bool stopped() const { return stopped_.load(); }
  // Blocks, asleep, until Stop or timeout_ms has passed; at once after a
  // stop, or for timeout_ms <= 0. Where Run's sources wait between rounds.
  void WaitFor(int64_t timeout_ms);
  // The FollowStop that Run gives api::Drive; Stop stops it.
  api::FollowStop* drive_stop() { return &drive_stop_; }

 private:
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  std::condition_variable woken_;
  api::FollowStop drive_stop_;
};

// Runs until caught up (or a stop, or an error). With follow, each publish
// of a generation is followed by gc (keep_generations). On stop->Stop() (from
// any thread, e.g. at SIGTERM; stop may be null: none comes): finishes the
// round, commits, seals the closed windows, publishes, leaves the group,
// returns OK. A Gap (a position that retention deleted) or a write error
// returns after committing what came before, without sealing.
// The run is api::Drive over the consumer (snapsink/drive.h). With follow,
// sink should come from api::Sink::OpenFollower: it then holds LOCK one
// step at a time (a round and the seal, publish and gc due after it), and gc,
// rollback, backfill, gaps accept, seal and publish run beside it (a Sink
// from Open works too, holding LOCK throughout). Without follow, a Sink
// from Open, and the consumer is a source with an end: one step.
// With options.consumer.states (--state DIR) sink is unused (may be null):
// the records go to the partitions' own states, which seal and record their
// rounds in ROOT, and ROOT publishes the windows every partition is past
// (utilities/kafka/merged_publish.h); on_published then reports the merged
// windows (generation and count). That run is api::Drive too, over the
// partitions' states (utilities/kafka/partitions_target.h).
Status Run(api::Sink* sink, const RunOptions& options, RunStop* stop, RunTotals* totals);

}  // namespace snapsink::kafka
