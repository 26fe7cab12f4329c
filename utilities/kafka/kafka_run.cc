#include "utilities/kafka/kafka_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "utilities/kafka/merged_publish.h"
#include "utilities/status_macros.h"

namespace snapsink::kafka {
namespace {

int64_t NowMs() {  // steady: only how often to publish, never what
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Add(const RoundResult& r, RunTotals* totals) {
  if (!totals) return;
  totals->records += r.records;
  totals->lines += r.lines;
}

// How long --final waits, with nothing moving, for partitions other
// processes own: twice the group's session timeout (--kafka-config
// session.timeout.ms, else librdkafka's default, 45 s), at least 30 s. A
// dead owner's partitions are reassigned after one session timeout.
int64_t FinalWaitMs(const ConsumerOptions& c) {
  int64_t session = 45000;
  for (const auto& [k, v] : c.user_config) {
    if (k != "session.timeout.ms") continue;
    try {
      session = std::stoll(v);
    } catch (...) {  // librdkafka refused it already at Create
    }
  }
  return std::max<int64_t>(2 * session, 30000);
}

// "kafka:T/2, kafka:T/5".
std::string NamePartitions(const std::string& topic, const std::vector<int32_t>& ps) {
  std::string out;
  for (int32_t p : ps) out += (out.empty() ? "" : ", ") + SourceName(topic, p);
  return out;
}

// The partitions this process owns, with their epochs: a change (a partition
// taken or given up) is a reason to seal and record again.
std::string OwnedSignature(const Consumer& c) {
  std::string s;
  for (const Consumer::OwnedPartition& op : c.Owned()) {
    s += std::to_string(op.partition) + "@" + std::to_string(op.epoch) + ",";
  }
  return s;
}

// --state DIR --final: this process's own partitions are sealed to their
// end and recorded; the topic is done only when every partition is sealed up
// to the end offsets seen at start (ends). Until then the process stays in
// the group, polling: when the group gives it a partition (a dead owner's,
// after that owner's session timeout), it reads it, seals it and records it
// (publish_point). Done: one more merged publish, OK. IOError naming the
// partitions left when nothing moved them (their progress, claims,
// checkpoints and the group's committed offsets) for FinalWaitMs, or when
// stopped first.
Status FinishTopic(const RunOptions& o, Consumer* consumer, MergedPublisher* merged, const std::vector<int64_t>& ends,
                   const std::function<Status()>& publish_point, const std::atomic<bool>* stop, RunTotals* totals) {
  const std::string& topic = o.consumer.topic;
  const api::ReadOnlySink& root = *o.consumer.states->root();
  const int64_t bound_ms = FinalWaitMs(o.consumer);
  auto note = [&](const std::string& m) {
    if (o.consumer.on_note) o.consumer.on_note(m);  // the library never prints
  };
  std::string seen, seen_offsets, owned = OwnedSignature(*consumer);
  std::vector<int32_t> undone;
  int64_t moved = NowMs(), looked = 0;
  bool read = false, noted = false;
  auto publish_last = [&]() -> Status {
    // Whoever recorded the last round may have died before publishing it.
    SNAPSINK_ASSIGN_OR_RETURN(auto r, merged->Publish(consumer));
    if (r.generation != 0 && o.drive.on_published) {
      o.drive.on_published(api::PublishResult{r.generation, r.windows.size(), {}});
    }
    return Status::OK();
  };
  while (true) {
    // A partition taken meanwhile is read to its end, sealed and recorded
    // before anything else: the process leaves no half-read state behind
    // as the newest owner's.
    const std::string now_owned = OwnedSignature(*consumer);
    bool caught_up = true;  // every partition owned now is read up to its end seen at start
    for (const Consumer::OwnedPartition& op : consumer->Owned()) {
      if (op.partition >= 0 && static_cast<size_t>(op.partition) < ends.size() && op.position < ends[op.partition]) {
        caught_up = false;
      }
    }
    if (caught_up && (read || now_owned != owned)) {
      SNAPSINK_RETURN_IF_ERROR(publish_point());
      read = false;
      owned = now_owned;
      looked = 0;  // look at once: that may have been the last partition
    }
    const bool settled = caught_up && !read && now_owned == owned;
    if (NowMs() - looked >= 500) {
      looked = NowMs();
      SNAPSINK_ASSIGN_OR_RETURN(auto finish, api::FinishOfTopic(root, topic, ends));
      undone = std::move(finish.undone);
      if (undone.empty() && settled) return publish_last();
      bool changed = finish.fingerprint != seen;
      if (changed) seen = std::move(finish.fingerprint);
      // The group's committed offsets (a broker round trip, which holds up
      // this poll loop) only once the wait has gone on: a live owner reading
      // a long partition writes nothing to ROOT until its seal round.
      if (!changed && !undone.empty() && NowMs() - moved > bound_ms / 2) {
        auto offsets = consumer->GroupOffsets(static_cast<int32_t>(ends.size()));
        if (offsets.ok()) {
          std::string now;
          for (int64_t off : *offsets) now += std::to_string(off) + ",";
          changed = !seen_offsets.empty() && now != seen_offsets;
          seen_offsets = std::move(now);
        }
      }
      if (changed) moved = NowMs();
      if (!noted && !undone.empty()) {
        note("kafka:" + topic + ": --final waits for " + NamePartitions(topic, undone) +
             " (not sealed up to the end offsets seen at start; owned by other processes of the group)");
        noted = true;
      }
      if (!undone.empty() && NowMs() - moved > bound_ms) {
        return Status::IOError("kafka:" + topic + ": " + NamePartitions(topic, undone) +
                               " not sealed up to the end offsets seen at start, and nothing moved them for " +
                               std::to_string(bound_ms / 1000) +
                               " s (twice session.timeout.ms, at least 30 s): no process of group " + o.consumer.group +
                               " took them; run the same command again to finish the topic");
      }
    }
    if (stop && stop->load()) {
      if (undone.empty()) return publish_last();  // the topic is done; what this process read since is committed
      return Status::IOError("kafka:" + topic + ": stopped before " + NamePartitions(topic, undone) +
                             " were sealed up to the end offsets seen at start; run the same command again to finish "
                             "the topic");
    }
    RoundResult r;
    SNAPSINK_RETURN_IF_ERROR(consumer->Round(&r));
    Add(r, totals);
    if (r.records > 0) {
      read = true;
      moved = NowMs();
    }
  }
}

// --state: the partitions' own states take the records; at each publish
// point (every publish_every_ms with follow, and at the end, before leaving
// the group) each owned partition seals and records its round in ROOT, and
// the windows every partition is past are published merged
// (utilities/kafka/merged_publish.h). With final, the run ends only when
// the whole topic is done (FinishTopic).
Status RunStates(const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(nullptr, o.consumer));
  MergedPublisher merged(o.consumer.states->root(), o.consumer.topic, o.consumer.states);
  if (o.consumer.on_note) merged.set_on_note(o.consumer.on_note);
  merged.set_split_producers(o.consumer.split_producers);
  auto publish_point = [&](bool all) -> Status {
    std::vector<api::SealedWindow> sealed;
    SNAPSINK_RETURN_IF_ERROR(merged.SealOwned(consumer.get(), all, &sealed));
    if (!sealed.empty() && o.drive.on_sealed) o.drive.on_sealed(sealed);
    SNAPSINK_ASSIGN_OR_RETURN(auto r, merged.Publish(consumer.get()));
    if (r.generation != 0 && o.drive.on_published) {
      o.drive.on_published(api::PublishResult{r.generation, r.windows.size(), {}});
    }
    return Status::OK();
  };
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
    if (o.follow && NowMs() - last_publish >= o.drive.publish_every_ms) {
      if (Status p = publish_point(false); !p.ok()) {
        (void)consumer->Close();
        return p;
      }
      last_publish = NowMs();
    }
  }
  if (!o.final && !o.follow && o.consumer.on_note) {  // caught up on the rest; the holder owns these
    const std::vector<int32_t> waiting = consumer->Waiting();
    if (!waiting.empty()) {
      o.consumer.on_note("kafka:" + o.consumer.topic + ": " + NamePartitions(o.consumer.topic, waiting) +
                         " not read by this run: another process held their claim lock throughout (it still owns "
                         "them); run again to read them here");
    }
  }
  if (Status p = publish_point(o.final); !p.ok()) {
    (void)consumer->Close();
    return p;
  }
  if (o.final) {
    Status f = FinishTopic(o, consumer.get(), &merged, ends, [&] { return publish_point(true); }, stop, totals);
    if (!f.ok()) {
      (void)consumer->Close();
      return f;
    }
  }
  return consumer->Close();
}

// The consumer as api::Drive's Source: a poll is one round (its poll, and
// the Writes that commit what it read with the partitions' positions).
// Following (--follow), the last poll leaves the group. To its end (without
// --follow: a source with an end, one step), the poll that finds every
// partition read up to the end offsets seen at start (Consumer::CaughtUp),
// or *stop set, leaves the group. The rebalance callbacks write only inside
// a poll, so inside a step. Consumer::Round waits in the broker's poll, so
// there is always more at once; Wait only sleeps while Drive waits for LOCK.
// A stop set in *stop (a signal's thread) is passed on to Drive at the next
// poll or wait.
class ConsumerSource : public api::Source {
 public:
  ConsumerSource(Consumer* consumer, bool to_end, const std::atomic<bool>* stop, api::FollowStop* drive_stop,
                 RunTotals* totals)
      : consumer_(consumer), to_end_(to_end), stop_(stop), drive_stop_(drive_stop), totals_(totals) {}
  Status Poll(api::Sink&, bool last, bool* more) override {
    *more = false;
    if (to_end_ ? Stopped() : last) return consumer_->Close();  // leaves the group; every round was committed
    if (Stopped()) return Status::OK();
    RoundResult r;
    Status s = consumer_->Round(&r);
    Add(r, totals_);
    if (s.ok() && to_end_ && consumer_->CaughtUp()) return consumer_->Close();
    *more = true;
    return s;
  }
  void Wait(int64_t timeout_ms) override {
    for (int64_t left = timeout_ms; left > 0 && !Stopped(); left -= 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 5)));
    }
  }
  void Wake() override {}
  bool HasEnd() const override { return to_end_; }

 private:
  bool Stopped() {
    if (stop_ == nullptr || !stop_->load()) return false;
    drive_stop_->Stop();
    return true;
  }
  Consumer* consumer_;
  bool to_end_;
  const std::atomic<bool>* stop_;
  api::FollowStop* drive_stop_;
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
Status RunDrive(api::Sink* sink, const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(sink, o.consumer));
  api::DriveOptions d = o.drive;
  d.final = o.final;
  d.poll_ms = 1;  // between rounds: Round waits in the broker's poll
  d.on_note = [&o](const std::string& note) {  // a failed gc (following goes on)
    if (o.consumer.on_note) o.consumer.on_note(note);
  };
  api::FollowStop drive_stop;
  ConsumerSource source(consumer.get(), /*to_end=*/!o.follow, stop, &drive_stop, totals);
  Status s = api::Drive(*sink, source, d, &drive_stop);
  if (!s.ok()) (void)consumer->Close();  // every round flushed: leaving writes nothing
  return s;
}

}  // namespace

Status Run(api::Sink* sink, const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  if (o.follow && o.final) return Status::InvalidArgument("RunOptions::final and RunOptions::follow exclude each other");
  if (o.consumer.states != nullptr) return RunStates(o, stop, totals);
  return RunDrive(sink, o, stop, totals);
}

}  // namespace snapsink::kafka
