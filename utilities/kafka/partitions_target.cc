#include "utilities/kafka/partitions_target.h"

#include <algorithm>
#include <chrono>

#include "snapsink/utilities/partitions.h"
#include "utilities/status_macros.h"

namespace snapsink::kafka {
namespace {

int64_t NowMs() {  // steady: only how long to wait, never what
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long --final waits, with nothing moving, for partitions other
// processes own: three times the group's session timeout (--kafka-config
// session.timeout.ms, else librdkafka's default, 45 s), at least 45 s. A
// dead owner's partitions are reassigned after one session timeout and a
// rebalance: the coordinator waits for the members to join again, then
// for the leader's assignment, and a member that dies inside that
// rebalance costs one more. Twice the session timeout (at least 30 s) was
// passed on a loaded machine by a takeover that then came.
int64_t FinalWaitMs(const ConsumerOptions& c) {
  int64_t session = 45000;
  for (const auto& [k, v] : c.user_config) {
    if (k != "session.timeout.ms") continue;
    try {
      session = std::stoll(v);
    } catch (...) {  // librdkafka refused it already at Create
    }
  }
  return std::max<int64_t>(3 * session, 45000);
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

}  // namespace

PartitionsTarget::PartitionsTarget(const RunOptions& o, Consumer* consumer, MergedPublisher* merged,
                                   std::vector<int64_t> ends, RunStop* stop, RunTotals* totals)
    : o_(o),
      consumer_(consumer),
      merged_(merged),
      ends_(std::move(ends)),
      stop_(stop),
      totals_(totals),
      bound_ms_(FinalWaitMs(o.consumer)) {}

void PartitionsTarget::Note(const std::string& m) const {
  if (o_.consumer.on_note) o_.consumer.on_note(m);  // the library never prints
}

bool PartitionsTarget::Stopped() const { return stop_->stopped(); }

void PartitionsTarget::Wait(int64_t timeout_ms) { stop_->WaitFor(timeout_ms); }

bool PartitionsTarget::WantsPublish() {
  const bool wants = wants_publish_;
  wants_publish_ = false;
  return wants;
}

Status PartitionsTarget::Poll(bool last, bool* more) {
  if (!o_.follow) return finishing_ ? PollFinish(more) : PollToEnd(more);
  *more = false;
  if (last || Stopped()) return Status::OK();  // the last step reads nothing: it seals and publishes what was read
  RoundResult r;
  Status s = consumer_->Round(&r);
  AddRound(r, totals_);
  *more = true;  // Round waits in the broker's poll
  return s;
}

// Rounds until every partition this process owns is read up to the end
// offsets seen at start (Consumer::CaughtUp), or a stop.
Status PartitionsTarget::PollToEnd(bool* more) {
  *more = false;
  if (!Stopped()) {
    RoundResult r;
    Status s = consumer_->Round(&r);
    AddRound(r, totals_);
    SNAPSINK_RETURN_IF_ERROR(s);
    if (!consumer_->CaughtUp()) {
      *more = true;
      return Status::OK();
    }
  }
  if (o_.final) {  // every window of this process's partitions sealed, then the topic's wait
    wants_publish_ = true;
    finishing_ = true;
    owned_ = OwnedSignature(*consumer_);
    *more = true;
    return Status::OK();
  }
  const std::vector<int32_t> waiting = consumer_->Waiting();  // caught up on the rest; the holder owns these
  if (!waiting.empty()) {
    Note("kafka:" + o_.consumer.topic + ": " + NamePartitions(o_.consumer.topic, waiting) +
         " not read by this run: another process held their claim lock throughout (it still owns them); run "
         "again to read them here");
  }
  return Status::OK();
}

// Every partition owned now is read up to its end seen at start.
bool PartitionsTarget::OwnedReadToEnds() const {
  for (const Consumer::OwnedPartition& op : consumer_->Owned()) {
    if (op.partition >= 0 && static_cast<size_t>(op.partition) < ends_.size() && op.position < ends_[op.partition]) {
      return false;
    }
  }
  return true;
}

// --final's wait for the topic, one round a poll. A partition taken
// meanwhile is read to its end, sealed and recorded (a publish point asked
// for) before anything else: the process leaves no half-read state behind
// as the newest owner's.
Status PartitionsTarget::PollFinish(bool* more) {
  *more = true;
  if (moved_ == 0) moved_ = NowMs();  // the wait starts after this process's own end was published
  const bool settled = OwnedReadToEnds() && !read_ && OwnedSignature(*consumer_) == owned_;
  bool done = false;
  if (NowMs() - looked_ >= 500) SNAPSINK_RETURN_IF_ERROR(LookAtTheTopic(settled, &done));
  if (!done && Stopped()) {
    if (!undone_.empty()) {
      return Status::IOError("kafka:" + o_.consumer.topic + ": stopped before " +
                             NamePartitions(o_.consumer.topic, undone_) +
                             " were sealed up to the end offsets seen at start; run the same command again to "
                             "finish the topic");
    }
    done = true;  // the topic is done; what this process read since is committed
  }
  if (done) {
    *more = false;
    return Status::OK();
  }
  RoundResult r;
  SNAPSINK_RETURN_IF_ERROR(consumer_->Round(&r));
  AddRound(r, totals_);
  if (r.records > 0) {
    read_ = true;
    moved_ = NowMs();
  }
  const std::string now_owned = OwnedSignature(*consumer_);
  if (OwnedReadToEnds() && (read_ || now_owned != owned_)) {
    wants_publish_ = true;
    read_ = false;
    owned_ = now_owned;
    looked_ = 0;  // look at once: that may have been the last partition
  }
  return Status::OK();
}

// Asks ROOT which partitions are not sealed up to the end offsets seen at
// start: *done when none is and this process has settled.
Status PartitionsTarget::LookAtTheTopic(bool settled, bool* done) {
  const std::string& topic = o_.consumer.topic;
  looked_ = NowMs();
  SNAPSINK_ASSIGN_OR_RETURN(auto finish, api::FinishOfTopic(*o_.consumer.states->root(), topic, ends_));
  undone_ = std::move(finish.undone);
  if (undone_.empty() && settled) {
    *done = true;
    return Status::OK();
  }
  bool changed = finish.fingerprint != seen_;
  if (changed) seen_ = std::move(finish.fingerprint);
  // The group's committed offsets (a broker round trip, which holds up
  // this poll loop) only once the wait has gone on: a live owner reading
  // a long partition writes nothing to ROOT until its seal round.
  if (!changed && !undone_.empty() && NowMs() - moved_ > bound_ms_ / 2) {
    auto offsets = consumer_->GroupOffsets(static_cast<int32_t>(ends_.size()));
    if (offsets.ok()) {
      std::string now;
      for (int64_t off : *offsets) now += std::to_string(off) + ",";
      changed = !seen_offsets_.empty() && now != seen_offsets_;
      seen_offsets_ = std::move(now);
    }
  }
  if (changed) moved_ = NowMs();
  if (!noted_ && !undone_.empty()) {
    Note("kafka:" + topic + ": --final waits for " + NamePartitions(topic, undone_) +
         " (not sealed up to the end offsets seen at start; owned by other processes of the group)");
    noted_ = true;
  }
  if (!undone_.empty() && NowMs() - moved_ > bound_ms_) {
    return Status::IOError("kafka:" + topic + ": " + NamePartitions(topic, undone_) +
                           " not sealed up to the end offsets seen at start, and nothing moved them for " +
                           std::to_string(bound_ms_ / 1000) +
                           " s (three times session.timeout.ms, at least 45 s): no process of group " + o_.consumer.group +
                           " took them; run the same command again to finish the topic");
  }
  return Status::OK();
}

// A publish point: each owned partition seals (every window with changes
// when all) and records its round in ROOT, then the merged publish.
Status PartitionsTarget::Publish(bool all, const api::DriveOptions& options) {
  std::vector<api::SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(merged_->SealOwned(consumer_, all, &sealed));
  if (!sealed.empty() && options.on_sealed) options.on_sealed(sealed);
  return PublishMerged(options);
}

Status PartitionsTarget::PublishMerged(const api::DriveOptions& options) {
  SNAPSINK_ASSIGN_OR_RETURN(auto r, merged_->Publish(consumer_));
  if (r.generation != 0 && options.on_published) {
    options.on_published(api::PublishResult{r.generation, r.windows.size(), {}});
  }
  return Status::OK();
}

// Without final: this process's partitions read to their end (or a stop)
// are sealed (the closed windows) and published. Under final they were
// sealed whole at the publish points the wait asked for: the topic is done,
// and whoever recorded the last round may have died before publishing it.
Status PartitionsTarget::AtEnd(const api::DriveOptions& options) {
  if (!o_.final) return Publish(/*all=*/false, options);
  return PublishMerged(options);
}

}  // namespace snapsink::kafka
