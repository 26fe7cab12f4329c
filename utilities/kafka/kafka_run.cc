#include "utilities/kafka/kafka_run.h"

#include <chrono>
#include <functional>
#include <string>

#include "utilities/kafka/merged_publish.h"
#include "utilities/kafka/partitions_target.h"
#include "utilities/status_macros.h"

namespace snapsink::kafka {

void AddRound(const RoundResult& r, RunTotals* totals) {
  if (!totals) return;
  totals->records += r.records;
  totals->lines += r.lines;
}

void RunStop::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);  // a WaitFor between its check and its sleep still wakes
    stopped_ = true;
  }
  woken_.notify_all();
  drive_stop_.Stop();
}

void RunStop::WaitFor(int64_t timeout_ms) {
  if (timeout_ms <= 0) return;
  std::unique_lock<std::mutex> l(mu_);
  woken_.wait_for(l, std::chrono::milliseconds(timeout_ms), [this] { return stopped_.load(); });
}

namespace {

// --state: api::Drive over the partitions' own states (PartitionsTarget):
// at each publish point (every publish_every_ms with follow, and at the end,
// before leaving the group) each owned partition seals and records its
// round in ROOT, and the windows every partition is past are published
// merged (utilities/kafka/merged_publish.h). With final, the run ends only
// when the whole topic is done.
Status RunStates(const RunOptions& o, RunStop* stop, RunTotals* totals) {
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(nullptr, o.consumer));
  MergedPublisher merged(o.consumer.states->root(), o.consumer.topic, o.consumer.states);
  if (o.consumer.on_note) merged.set_on_note(o.consumer.on_note);
  merged.set_split_producers(o.consumer.split_producers);
  std::vector<int64_t> ends;  // final: every partition's end as of now
  if (o.final) {
    auto n = consumer->PartitionCount();
    auto got = n.ok() ? consumer->EndOffsets(*n) : Result<std::vector<int64_t>>(n.status());
    if (!got.ok()) {
      (void)consumer->Close();
      return got.status();
    }
    ends = std::move(*got);
  }
  api::DriveOptions d = o.drive;
  d.final = o.final;
  d.poll_ms = 1;  // between rounds: Round waits in the broker's poll
  d.on_note = [&o](const std::string& note) {
    if (o.consumer.on_note) o.consumer.on_note(note);
  };
  PartitionsTarget target(o, consumer.get(), &merged, std::move(ends), stop, totals);
  Status s = api::Drive(target, d, stop->drive_stop());
  if (!s.ok()) {
    (void)consumer->Close();
    return s;
  }
  return consumer->Close();
}

// The consumer as api::Drive's Source: a poll is one round (its poll, and
// the Writes that commit what it read with the partitions' positions).
// Following (--follow), the last poll leaves the group. To its end (without
// --follow: a source with an end, one step), the poll that finds every
// partition read up to the end offsets seen at start (Consumer::CaughtUp),
// or a stop, leaves the group. The rebalance callbacks write only inside
// a poll, so inside a step. Consumer::Round waits in the broker's poll, so
// there is always more at once; Wait only sleeps (RunStop::WaitFor) while
// Drive waits for LOCK. Drive hears of a stop from RunStop itself, whose
// Stop ends that wait.
class ConsumerSource : public api::Source {
 public:
  ConsumerSource(Consumer* consumer, bool to_end, RunStop* stop, RunTotals* totals)
      : consumer_(consumer), to_end_(to_end), stop_(stop), totals_(totals) {}
  Status Poll(api::Sink&, bool last, bool* more) override {
    *more = false;
    if (to_end_ ? Stopped() : last) return consumer_->Close();  // leaves the group; every round was committed
    if (Stopped()) return Status::OK();
    RoundResult r;
    Status s = consumer_->Round(&r);
    AddRound(r, totals_);
    if (s.ok() && to_end_ && consumer_->CaughtUp()) return consumer_->Close();
    *more = true;
    return s;
  }
  void Wait(int64_t timeout_ms) override { stop_->WaitFor(timeout_ms); }
  void Wake() override {}  // Drive wakes at a stop only, and RunStop::Stop ended the wait already
  bool HasEnd() const override { return to_end_; }

 private:
  bool Stopped() const { return stop_->stopped(); }
  Consumer* consumer_;
  bool to_end_;
  RunStop* stop_;
  RunTotals* totals_;
};

// api::Drive over the consumer. With --follow, on a Sink from OpenFollower
// LOCK is held one step at a time, so gc, rollback, backfill, gaps accept,
// seal and publish run beside it in their own processes. A step is one round
// (max_round_records, one poll_timeout_ms of waiting) and the seal, publish
// and gc due after it: a writer waits at most about that long. Nothing of a
// step is kept for the next but the consumer's offsets, which only this
// process's Writes move (positions are the root's: a rollback does not
// rewind them, a backfill has its own state, an accepted source gap is read
// when Kafka reports the range lost). Without --follow the consumer is a
// source with an end: one step (the Sink from Open holds LOCK), its rounds
// until caught up, then the seal (every window with final) and the publish,
// each said also when there was nothing; no gc.
Status RunDrive(api::Sink* sink, const RunOptions& o, RunStop* stop, RunTotals* totals) {
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(sink, o.consumer));
  api::DriveOptions d = o.drive;
  d.final = o.final;
  d.poll_ms = 1;  // between rounds: Round waits in the broker's poll
  d.on_note = [&o](const std::string& note) {  // a failed gc (following goes on)
    if (o.consumer.on_note) o.consumer.on_note(note);
  };
  ConsumerSource source(consumer.get(), /*to_end=*/!o.follow, stop, totals);
  Status s = api::Drive(*sink, source, d, stop->drive_stop());
  if (!s.ok()) (void)consumer->Close();  // every round flushed: leaving writes nothing
  return s;
}

}  // namespace

Status Run(api::Sink* sink, const RunOptions& o, RunStop* stop, RunTotals* totals) {
  if (o.follow && o.final) return Status::InvalidArgument("RunOptions::final and RunOptions::follow exclude each other");
  RunStop none;  // no stop can come
  if (stop == nullptr) stop = &none;
  if (o.consumer.states != nullptr) return RunStates(o, stop, totals);
  return RunDrive(sink, o, stop, totals);
}

}  // namespace snapsink::kafka
