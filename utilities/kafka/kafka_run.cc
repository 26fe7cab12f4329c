#include "utilities/kafka/kafka_run.h"

#include <chrono>

#include "utilities/kafka/merged_publish.h"
#include "utilities/status_macros.h"

namespace snapsink::kafka {
namespace {

int64_t NowMs() {  // steady: only how often to publish, never what
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status SealAndReport(api::Sink* sink, const RunOptions& o, bool all, bool report_nothing) {
  api::SealOptions so;
  so.all = all;
  SNAPSINK_ASSIGN_OR_RETURN(auto sealed, sink->Seal(so));
  if (!sealed.empty() && o.on_sealed) o.on_sealed(sealed);
  if (sealed.empty() && report_nothing && o.on_nothing_sealed) {
    SNAPSINK_ASSIGN_OR_RETURN(auto why, sink->Unsealed());
    o.on_nothing_sealed(why);
  }
  return Status::OK();
}

Status PublishAndReport(api::Sink* sink, const RunOptions& o, bool always_report) {
  SNAPSINK_ASSIGN_OR_RETURN(auto published, sink->Publish());
  if ((published.generation != 0 || always_report) && o.on_published) o.on_published(published);
  if (o.follow && published.generation != 0) {
    auto gc = sink->Gc(o.keep_generations);
    if (!gc.ok() && o.on_gc_failed) o.on_gc_failed(gc.status());
  }
  return Status::OK();
}

void Add(const RoundResult& r, RunTotals* totals) {
  if (!totals) return;
  totals->records += r.records;
  totals->lines.lines += r.lines.lines;
  totals->lines.applied += r.lines.applied;
  totals->lines.duplicates += r.lines.duplicates;
  totals->lines.fenced += r.lines.fenced;
  totals->lines.rejected += r.lines.rejected;
  totals->lines.ignored += r.lines.ignored;
}

// --state: the partitions' own states take the records; at each publish
// point (every publish_every_ms with follow, and at the end, before leaving
// the group) each owned partition seals and records its round in ROOT, and
// the windows every partition is past are published merged
// (utilities/kafka/merged_publish.h).
Status RunStates(const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(nullptr, o.consumer));
  MergedPublisher merged(o.consumer.states->root(), o.consumer.topic, o.consumer.states);
  if (o.consumer.on_note) merged.set_on_note(o.consumer.on_note);
  auto publish_point = [&](bool all) -> Status {
    std::vector<api::SealedWindow> sealed;
    SNAPSINK_RETURN_IF_ERROR(merged.SealOwned(consumer.get(), all, &sealed));
    if (!sealed.empty() && o.on_sealed) o.on_sealed(sealed);
    SNAPSINK_ASSIGN_OR_RETURN(auto r, merged.Publish(consumer.get()));
    if (r.generation != 0 && o.on_published) o.on_published(api::PublishResult{r.generation, r.windows.size(), {}});
    return Status::OK();
  };
  int64_t last_publish = NowMs();
  while (!stop || !stop->load()) {
    RoundResult r;
    Status s = consumer->Round(&r);
    Add(r, totals);
    if (!s.ok()) {
      (void)consumer->Close();
      return s;
    }
    if (!o.follow && consumer->CaughtUp()) break;
    if (o.follow && NowMs() - last_publish >= o.publish_every_ms) {
      if (Status p = publish_point(false); !p.ok()) {
        (void)consumer->Close();
        return p;
      }
      last_publish = NowMs();
    }
  }
  if (Status p = publish_point(o.final); !p.ok()) {
    (void)consumer->Close();
    return p;
  }
  return consumer->Close();
}

// --follow on a Sink from OpenFollower: LOCK is held one step at a time, so
// gc, rollback, backfill, gaps accept, seal and publish run beside it in
// their own processes. One consumer round (its poll, and the Writes that
// commit what it read with the partitions' positions) is a step; sealing
// what the rounds wrote, and the publish and gc when due, are another. The
// rebalance callbacks write only inside a poll, so inside a round's step.
// BeginStep lets a waiting writer in first, and a step is at most one round
// (max_round_records, one poll_timeout_ms of waiting): a writer waits at
// most about that long. Nothing of a step is kept for the next but the
// consumer's offsets, which only this process's Writes move (positions are
// the root's: a rollback does not rewind them, a backfill has its own
// state, an accepted source gap is read when Kafka reports the range lost).
Status RunFollow(api::Sink* sink, const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  auto stopped = [stop] { return stop != nullptr && stop->load(); };
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(sink, o.consumer));
  int64_t last_publish = NowMs() - o.publish_every_ms;  // the first publish is at once: what a crashed run staged
  bool unsealed = false;  // a round wrote lines that no seal has looked at
  Status s;
  while (s.ok() && !stopped()) {
    {
      auto step = sink->BeginStep(stopped);
      if (!step.ok()) {
        if (!stopped()) s = step.status();
        break;  // Locked: stopped while another writer held LOCK; the last step follows
      }
      RoundResult r;
      s = consumer->Round(&r);
      Add(r, totals);
      unsealed = unsealed || r.lines.lines > 0;
    }
    const bool publish_due = NowMs() - last_publish >= o.publish_every_ms;
    if (!s.ok() || (!unsealed && !publish_due)) continue;
    auto step = sink->BeginStep(stopped);
    if (!step.ok()) {
      if (!stopped()) s = step.status();
      break;
    }
    if (unsealed) s = SealAndReport(sink, o, false, false);
    unsealed = false;
    if (s.ok() && publish_due) {
      s = PublishAndReport(sink, o, false);
      last_publish = NowMs();
    }
  }
  if (!s.ok()) {
    (void)consumer->Close();  // every round flushed: leaving writes nothing
    return s;
  }
  // The last step waits for LOCK as long as it takes: what was read is
  // sealed and published.
  SNAPSINK_ASSIGN_OR_RETURN(auto step, sink->BeginStep());
  SNAPSINK_RETURN_IF_ERROR(consumer->Close());  // leaves the group; every round was committed
  SNAPSINK_RETURN_IF_ERROR(SealAndReport(sink, o, false, false));
  return PublishAndReport(sink, o, false);
}

}  // namespace

Status Run(api::Sink* sink, const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  if (o.follow && o.final) return Status::InvalidArgument("RunOptions::final and RunOptions::follow exclude each other");
  if (o.consumer.states != nullptr) return RunStates(o, stop, totals);
  if (o.follow) return RunFollow(sink, o, stop, totals);
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(sink, o.consumer));
  while (!stop || !stop->load()) {
    RoundResult r;
    Status s = consumer->Round(&r);
    Add(r, totals);
    if (!s.ok()) {
      (void)consumer->Close();
      return s;
    }
    if (consumer->CaughtUp()) break;
  }
  SNAPSINK_RETURN_IF_ERROR(consumer->Close());  // leaves the group; every round was committed
  SNAPSINK_RETURN_IF_ERROR(SealAndReport(sink, o, o.final, true));
  return PublishAndReport(sink, o, true);
}

}  // namespace snapsink::kafka
