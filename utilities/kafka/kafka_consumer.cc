#include "utilities/kafka/kafka_consumer.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "snapsink/utilities/partitions.h"
#include "utilities/status_macros.h"

namespace snapsink::kafka {
namespace {

constexpr int kQueryTimeoutMs = 5000;
constexpr int kQueryAttempts = 4;
constexpr int kReachableProbeMs = 1000;  // the metadata request that tells "no broker" from "no group yet"
// --state: a partition whose claim lock another process holds is claimed
// again after this long, doubled each time up to kClaimRetryMaxMs.
constexpr int64_t kClaimRetryFirstMs = 250;
constexpr int64_t kClaimRetryMaxMs = 4000;
// Round takes up to this many queued messages per rd_kafka_consume_batch_queue call.
constexpr size_t kBatchMessages = 1000;

// Test hook: SNAPSINK_KAFKA_REFETCH_EVERY=N treats every N-th batch call as
// if a rebalance had been served inside it (its batch dropped, every
// partition fetched again from its next offset), which a test cannot time.
uint64_t RefetchEvery() {
  const char* e = std::getenv("SNAPSINK_KAFKA_REFETCH_EVERY");
  return e != nullptr ? std::strtoull(e, nullptr, 10) : 0;
}

int64_t SteadyMs() {  // only how long to wait for a broker, never what is written
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// librdkafka's log lines, served on the polling thread (log.queue): one note each.
void LogCallback(const rd_kafka_t* rk, int, const char* fac, const char* buf);

// The partitions' Writes' options: o.write, with the split check if asked.
api::WriteOptions WriteOptionsOf(const ConsumerOptions& o) {
  api::WriteOptions w = o.write;
  if (SplitProducers* split = o.split_producers; split != nullptr) {
    w.producer_check = [split](std::string_view source, std::string_view producer, const api::ProducerSeqs& seqs,
                               std::string* out) { return split->Check(source, producer, seqs, out); };
  }
  return w;
}

std::optional<int64_t> ParseOffset(const std::string& text) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

struct Consumer::Impl {
  Impl(api::Sink* sink_in, ConsumerOptions options)
      : sink(sink_in), o(std::move(options)), w(sink_in, o.topic, WriteOptionsOf(o)) {
    if (o.states == nullptr) return;
    w.set_commit_check([this](int32_t p) { return o.states->Check(p, Source(p)); });
    w.set_on_failure([this](int32_t p, const Status& s) {
      if (!s.IsLocked()) return false;
      Lose(p, s);
      return true;
    });
  }

  // --state: a newer owner fenced p. Its in-flight records are dropped (the
  // newer owner reads them), and the other partitions go on.
  void Lose(int32_t p, const Status& why) {
    Note(why.message() + "; giving up " + Source(p) + " (its records since offset " +
         std::to_string(w.Get(p).committed) + " are the new owner's)");
    Partition& part = w.Get(p);
    part.assigned = false;
    part.sink = nullptr;
    part.batch.Clear();
    o.states->Drop(p);
  }

  // The state p's positions and gaps are in: its own with --state, else the root.
  api::Sink* SinkFor(int32_t p) {
    api::Sink* s = w.Get(p).sink;
    return s != nullptr ? s : sink;
  }

  api::Sink* sink = nullptr;
  ConsumerOptions o;
  PartitionWriter w;
  rd_kafka_t* rk = nullptr;
  bool closed = false;
  bool assigned_once = false;
  int64_t created_ms = SteadyMs();
  std::string last_broker_error;  // the newest error librdkafka reported, for "no broker reachable"
  // Offsets committed to Kafka (lag tools only), per partition: sent and not
  // failed. A commit that fails (a rebalance under way) forgets its
  // offsets, so the next round sends them again.
  std::map<int32_t, int64_t> kafka_sent;
  int64_t last_progress_ms = SteadyMs();  // progress_every_ms: when every assigned partition's progress was written
  Status error;  // sticky: set where a Status cannot be returned (the rebalance callback)
  api::WriteResult unreported;  // lines written outside a Round's own flush (a revoke, a seek)
  // --state: partitions the group gave this process whose claim lock another
  // live process holds (stopped or stuck while it claims or records a seal
  // round: it is still the owner). Assigned to librdkafka at the log end
  // (fetched records are ignored), never taken; each Round claims again
  // once next_try_ms has come, backing off, until the claim goes through or
  // the group takes the partition back (revoke). Never a stop: the holder
  // may be a stopped owner that the group has given up on.
  struct Waiting {
    int64_t next_try_ms = 0;
    int64_t backoff_ms = kClaimRetryFirstMs;
  };
  std::map<int32_t, Waiting> waiting;
  using Partition = PartitionWriter::Partition;
  rd_kafka_queue_t* queue = nullptr;  // the consumer queue, which Round takes batches from
  uint64_t rebalances = 0;            // OnRebalance calls so far
  uint64_t batch_calls = 0;
  const uint64_t refetch_every = RefetchEvery();
  std::vector<rd_kafka_message_t*> taken;  // Round's batch

  void Note(const std::string& m) const {
    if (o.on_note) o.on_note(m);  // the library never prints
  }
  std::string Source(int32_t p) const { return w.Source(p); }

  Status QueryWatermarks(int32_t p, int64_t* lo, int64_t* hi) {
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int attempt = 0; attempt < kQueryAttempts; ++attempt) {
      err = rd_kafka_query_watermark_offsets(rk, o.topic.c_str(), p, lo, hi, kQueryTimeoutMs);
      if (!err) return Status::OK();
    }
    return Status::IOError(Source(p) + ": cannot query the watermarks: " + rd_kafka_err2str(err));
  }

  // A checkpoint is never worth stopping for: the state stays on local
  // disk and the topic holds what it lacks. A failed one is a note.
  void NoteCheckpoint(int32_t p, const Status& s) {
    if (!s.ok()) Note("warning: " + s.message() + " (" + Source(p) + " goes on; its previous checkpoint stays)");
  }

  // Splits found by the round's Writes (kWarn): a note each; with --state
  // also recorded in ROOT (the partition's state holds it already), whose
  // status lists it. A failed record is a note: the state keeps its own.
  void NoteSplits() {
    for (const SplitProducers::Found& f : o.split_producers->TakeFound()) {
      Note(f.note);
      if (o.states == nullptr) continue;
      Status s = api::RecordSplitProducer(*o.states->root(), f.producer, f.sources);
      if (!s.ok()) Note("warning: cannot record the split producer in the root: " + s.ToString());
    }
  }

  // Writes every pending batch, then tells Kafka the new offsets (lag tools only).
  Status Flush(RoundResult* r) {
    for (const auto& [p, part] : w.partitions()) {  // the high watermarks of the last fetches
      int64_t lo = 0, hi = 0;
      if (!rd_kafka_get_watermark_offsets(rk, o.topic.c_str(), p, &lo, &hi) && hi >= 0) {
        w.Get(p).hwm = std::max(part.hwm, hi);
      }
    }
    if (o.progress_every_ms > 0 && SteadyMs() - last_progress_ms >= o.progress_every_ms) {
      last_progress_ms = SteadyMs();
      for (const auto& [p, part] : w.partitions()) w.Get(p).refresh = part.assigned && part.committed >= 0;
    }
    std::vector<std::pair<int32_t, int64_t>> flushed;
    Status s = w.Flush(&unreported, &flushed);
    if (o.split_producers != nullptr) NoteSplits();
    if (o.states != nullptr) {
      for (const auto& [p, off] : flushed) NoteCheckpoint(p, o.states->AfterCommit(p, Source(p), off).status());
    }
    if (r) {
      r->lines = unreported;
      unreported = {};
    }
    if (!closed) CommitToKafka();
    return s;
  }

  // Commits to Kafka, asynchronously, each assigned partition's root
  // position that Kafka has not taken yet (OnCommitted forgets a failed one).
  void CommitToKafka() {
    rd_kafka_topic_partition_list_t* offsets = nullptr;
    for (const auto& [p, part] : w.partitions()) {
      if (!part.assigned || part.committed < 0) continue;
      auto it = kafka_sent.find(p);
      if (it != kafka_sent.end() && it->second == part.committed) continue;
      if (offsets == nullptr) offsets = rd_kafka_topic_partition_list_new(8);
      rd_kafka_topic_partition_list_add(offsets, o.topic.c_str(), p)->offset = part.committed;
      kafka_sent[p] = part.committed;
    }
    if (offsets == nullptr) return;
    rd_kafka_commit(rk, offsets, /*async=*/1);  // OnCommitted, served by a later poll
    rd_kafka_topic_partition_list_destroy(offsets);
  }

  void OnCommitted(rd_kafka_resp_err_t err, const rd_kafka_topic_partition_list_t* offsets) {
    for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
      const rd_kafka_topic_partition_t& tp = offsets->elems[i];
      if (!err && !tp.err) continue;
      auto it = kafka_sent.find(tp.partition);
      if (it != kafka_sent.end() && it->second == tp.offset) kafka_sent.erase(it);  // sent again next round
    }
  }

  // next lies below the log start lo: go on past an accepted range, or Gap.
  Status PastLostRange(int32_t p, Partition& part, int64_t lo) {
    SNAPSINK_ASSIGN_OR_RETURN(auto accepted, SinkFor(p)->AcceptedSourceGaps());
    bool moved = true;
    while (moved && part.next < lo) {
      moved = false;
      for (const api::AcceptedSourceGapInfo& a : accepted) {
        if (a.gap.source == Source(p) && a.gap.first <= static_cast<uint64_t>(part.next) &&
            static_cast<uint64_t>(part.next) <= a.gap.last) {
          Note(Source(p) + ": going on at offset " + std::to_string(a.gap.last + 1) + " past the accepted range " +
               std::to_string(a.gap.first) + ".." + std::to_string(a.gap.last));
          part.next = static_cast<int64_t>(a.gap.last) + 1;
          moved = true;
        }
      }
    }
    if (part.next >= lo) return w.FlushOne(p, nullptr);
    const std::string range = std::to_string(part.next) + ".." + std::to_string(lo - 1);
    return Status::Gap("topic " + o.topic + " partition " + std::to_string(p) + " (source " + Source(p) +
                       "): offsets " + range + " are no longer in Kafka (deleted by retention; the log starts at " +
                       std::to_string(lo) + "). To go on without them: snapsink gaps " + SinkFor(p)->path() +
                       " accept --source " + Source(p) + " --range " + range);
  }

  // Where partition p starts: the root's position, or --kafka-start (recorded at once).
  // --state: *claim_locked (if given) says a failure is p's claim lock held
  // by another process (PartitionStates::Take): nothing was taken.
  Status StartOffset(int32_t p, int64_t* offset, bool* claim_locked = nullptr) {
    Partition& part = w.Get(p);
    int64_t lo = 0, hi = 0;
    SNAPSINK_RETURN_IF_ERROR(QueryWatermarks(p, &lo, &hi));
    part.hwm = std::max(part.hwm, hi);
    if (part.start_hwm < 0) part.start_hwm = hi;
    bool from_start = false;  // --state: a remade state has only the topic to rebuild from
    if (o.states != nullptr) {
      SNAPSINK_RETURN_IF_ERROR(o.states->Take(p, Source(p), claim_locked));
      PartitionStates::Owned* owned = o.states->Get(p);
      part.sink = owned->sink.get();
      part.batch.SetOwner(owned->epoch);
      from_start = owned->fresh && owned->epoch > 1;
      for (const std::string& warning : o.states->warnings()) Note(warning);
      std::string how = owned->fresh ? " (new state)" : "";
      if (owned->restored) {
        how = " (restored from the checkpoint of epoch " + std::to_string(owned->restored->epoch) + " at offset " +
              owned->restored->position + ")";
      }
      Note(Source(p) + ": taken at owner epoch " + std::to_string(owned->epoch) + how);
    }
    SNAPSINK_ASSIGN_OR_RETURN(auto pos, SinkFor(p)->Position(Source(p)));
    if (pos) {
      auto off = ParseOffset(*pos);
      if (!off) return Status::Corruption(Source(p) + ": the root's position '" + *pos + "' is not a Kafka offset");
      part.next = part.committed = *off;
      if (part.next < lo) SNAPSINK_RETURN_IF_ERROR(PastLostRange(p, part, lo));
      if (part.next > hi) {
        return Status::Gap("topic " + o.topic + " partition " + std::to_string(p) + ": the root's position " +
                           std::to_string(part.next) + " is beyond the partition's end " + std::to_string(hi) +
                           " (was the topic recreated, or records lost by the brokers?)");
      }
    } else {
      part.committed = -1;  // the first FlushOne records the choice
      part.next = o.start_latest && !from_start ? hi : lo;
      Note(Source(p) + ": new partition, starting at offset " + std::to_string(part.next) +
           (o.start_latest && !from_start ? " (latest)" : " (earliest)"));
      SNAPSINK_RETURN_IF_ERROR(w.FlushOne(p, nullptr));
    }
    *offset = part.next;
    return Status::OK();
  }

  void OnRebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* list) {
    ++rebalances;  // Round: what a batch took before this is not taken
    // NULL once the consumer has left the group (a revoke while closing).
    const char* protocol = rd_kafka_rebalance_protocol(rk);
    const bool cooperative = protocol != nullptr && std::strcmp(protocol, "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      assigned_once = true;
      for (int i = 0; i < list->cnt; ++i) {
        rd_kafka_topic_partition_t* tp = &list->elems[i];
        int64_t off = 0;
        bool claim_locked = false;
        Status s = error.ok() ? StartOffset(tp->partition, &off, &claim_locked) : error;
        if (!s.ok() && claim_locked && error.ok()) {
          StartWaiting(tp->partition, s);
          tp->offset = RD_KAFKA_OFFSET_END;  // fetched and ignored until taken (RetryWaiting)
          w.Get(tp->partition).assigned = false;
          continue;
        }
        if (!s.ok()) {
          if (error.ok()) error = s;
          off = RD_KAFKA_OFFSET_END;  // assigned but never taken: the run stops with error
        }
        tp->offset = off;
        w.Get(tp->partition).assigned = s.ok();  // a failed one's records are never taken
      }
      if (cooperative) {
        if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk, list)) {
          if (error.ok()) error = Status::IOError(std::string("kafka: incremental assign: ") + rd_kafka_error_string(e));
          rd_kafka_error_destroy(e);
        }
      } else if (rd_kafka_resp_err_t e = rd_kafka_assign(rk, list)) {
        if (error.ok()) error = Status::IOError(std::string("kafka: assign: ") + rd_kafka_err2str(e));
      }
      return;
    }
    // Revoked (or lost): what was read is written first, so the next owner,
    // this process included, starts exactly after it.
    Status s = Flush(nullptr);
    if (!s.ok() && error.ok()) error = s;
    for (int i = 0; i < list->cnt; ++i) {
      const int32_t p = list->elems[i].partition;
      Partition& part = w.Get(p);
      part.assigned = false;
      if (waiting.erase(p) > 0) {
        Note(Source(p) + ": taken back by the group before its claim lock was free; no longer waiting for it");
      }
      if (o.states != nullptr) {
        // Closed cleanly: its next owner starts from here (a fenced one was dropped already).
        if (s.ok() && o.states->Get(p) != nullptr) {
          NoteCheckpoint(p, o.states->Checkpoint(p, Source(p)).status());
        }
        part.sink = nullptr;
        part.batch.Clear();  // a fenced flush leaves nothing behind; a good one left nothing to write
        o.states->Drop(p);
      }
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, list)) rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk, nullptr);
    }
  }

  // The partition's next offset is gone from the log (or past its end).
  Status OnOffsetOutOfRange(int32_t p) {
    Partition& part = w.Get(p);
    SNAPSINK_RETURN_IF_ERROR(Flush(nullptr));
    int64_t lo = 0, hi = 0;
    SNAPSINK_RETURN_IF_ERROR(QueryWatermarks(p, &lo, &hi));
    // Either way the partition is fetched again from next (librdkafka stops
    // fetching it after the error): a stale error, or past an accepted loss.
    if (part.next > hi) {
      return Status::Gap("topic " + o.topic + " partition " + std::to_string(p) + ": the root's position " +
                         std::to_string(part.next) + " is beyond the partition's end " + std::to_string(hi));
    }
    if (part.next < lo) SNAPSINK_RETURN_IF_ERROR(PastLostRange(p, part, lo));
    // With auto.offset.reset=error librdkafka has stopped fetching the
    // partition, and a seek of a stopped partition fails: it is assigned
    // again at next.
    return Reassign(p);
  }

  // Starts fetching partition p again at its next offset. Cooperative: p
  // alone is unassigned and assigned. Eager: the whole assignment is given
  // again, each partition at its own next offset (what was polled past it
  // is fetched again and skipped by PartitionWriter::Add); one assigned but
  // not taken here (waiting for its claim lock, or fenced) at the log end.
  Status Reassign(int32_t p) {
    const char* protocol = rd_kafka_rebalance_protocol(rk);
    const bool cooperative = protocol != nullptr && std::strcmp(protocol, "COOPERATIVE") == 0;
    rd_kafka_topic_partition_list_t* list = nullptr;
    if (cooperative) {
      list = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(list, o.topic.c_str(), p);
    } else if (rd_kafka_resp_err_t err = rd_kafka_assignment(rk, &list)) {
      return Status::IOError(Source(p) + ": cannot read the assignment: " + rd_kafka_err2str(err));
    }
    for (int i = 0; i < list->cnt; ++i) {
      rd_kafka_topic_partition_t* tp = &list->elems[i];
      auto it = w.partitions().find(tp->partition);
      if (o.topic == tp->topic && tp->partition != p && (it == w.partitions().end() || !it->second.assigned)) {
        tp->offset = RD_KAFKA_OFFSET_END;  // not taken here (waiting for its claim lock, or given up): ignored
        continue;
      }
      if (o.topic != tp->topic || it == w.partitions().end() || !it->second.assigned) {
        rd_kafka_topic_partition_list_destroy(list);
        return Status::IOError(Source(p) + ": cannot restart its fetch: " + tp->topic + "/" +
                               std::to_string(tp->partition) + " has no position here; run the same command again");
      }
      tp->offset = it->second.next;
    }
    rd_kafka_error_t* e = nullptr;
    if (cooperative) {
      e = rd_kafka_incremental_unassign(rk, list);
      if (e == nullptr) e = rd_kafka_incremental_assign(rk, list);
    } else if (rd_kafka_resp_err_t err = rd_kafka_assign(rk, list)) {
      e = rd_kafka_error_new(err, "%s", rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(list);
    if (e) {
      Status s = Status::IOError(Source(p) + ": cannot restart its fetch: " + rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
      return s;
    }
    return Status::OK();
  }

  // Round's batch from `from` on is dropped untaken (a rebalance was served
  // inside the batch call, so some may be from before it; or the round
  // stopped at an error), and every partition taken here is fetched again
  // from its next offset: nothing librdkafka handed over is skipped.
  Status RefetchAll(size_t from, size_t n) {
    for (size_t i = from; i < n; ++i) rd_kafka_message_destroy(taken[i]);
    const char* protocol = rd_kafka_rebalance_protocol(rk);
    const bool cooperative = protocol != nullptr && std::strcmp(protocol, "COOPERATIVE") == 0;
    for (const auto& [p, part] : w.partitions()) {
      if (!part.assigned) continue;
      SNAPSINK_RETURN_IF_ERROR(Reassign(p));
      if (!cooperative) break;  // eager: Reassign gave the whole assignment again
    }
    return Status::OK();
  }

  // p was given to this process while another process held its claim lock.
  void StartWaiting(int32_t p, const Status& why) {
    waiting[p] = Waiting{SteadyMs() + kClaimRetryFirstMs, kClaimRetryFirstMs};
    Note(why.message() + ": waiting for it (the group gave " + Source(p) +
         " to this process while another process holds its claim; claimed again, backing off, until it is free)");
  }

  // Claims again each waiting partition whose time has come; one taken is
  // fetched from its start offset from now on.
  Status RetryWaiting() {
    for (auto it = waiting.begin(); it != waiting.end();) {
      const int32_t p = it->first;
      if (SteadyMs() < it->second.next_try_ms) {
        ++it;
        continue;
      }
      int64_t off = 0;
      bool claim_locked = false;
      Status s = StartOffset(p, &off, &claim_locked);
      if (!s.ok() && claim_locked) {
        it->second.backoff_ms = std::min(2 * it->second.backoff_ms, kClaimRetryMaxMs);
        it->second.next_try_ms = SteadyMs() + it->second.backoff_ms;
        ++it;
        continue;
      }
      SNAPSINK_RETURN_IF_ERROR(s);
      it = waiting.erase(it);
      w.Get(p).assigned = true;
      SNAPSINK_RETURN_IF_ERROR(Reassign(p));  // fetched from `off`, no longer the log end
    }
    return Status::OK();
  }

  // Takes one polled message or event.
  Status Take(const rd_kafka_message_t* m, size_t* bytes) {
    const int32_t p = m->partition;
    switch (m->err) {
      case RD_KAFKA_RESP_ERR_NO_ERROR: {
        auto it = w.partitions().find(p);
        if (it == w.partitions().end() || !it->second.assigned) return Status::OK();
        *bytes += w.Add(p, m->offset, std::string_view(static_cast<const char*>(m->payload), m->payload ? m->len : 0));
        return Status::OK();
      }
      case RD_KAFKA_RESP_ERR__PARTITION_EOF: {
        auto it = w.partitions().find(p);
        if (it == w.partitions().end() || !it->second.assigned) return Status::OK();
        Partition& part = w.Get(p);
        part.hwm = std::max(part.hwm, m->offset);
        // Past control records (transaction markers) that carry no message.
        if (m->offset > part.next) part.next = m->offset;
        return Status::OK();
      }
      case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
      case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
        if (m->rkt && w.partitions().count(p)) return OnOffsetOutOfRange(p);
        return Status::OK();
      default: {
        char reason[512];
        if (rd_kafka_fatal_error(rk, reason, sizeof(reason))) {
          return Status::IOError(std::string("kafka: fatal error: ") + reason);
        }
        if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
          return Status::NotFound("kafka: topic " + o.topic + ": " + rd_kafka_err2str(m->err));
        }
        last_broker_error = rd_kafka_err2str(m->err);
        if (m->payload != nullptr && m->len > 0) {
          last_broker_error += ": " + std::string(static_cast<const char*>(m->payload), m->len);
        }
        Note(std::string("kafka: ") + rd_kafka_err2str(m->err) + " (retried)");
        return Status::OK();
      }
    }
  }

  // Before the first assignment, past connect_timeout_ms: does any broker
  // answer? A metadata request that fails says none does.
  Status CheckReachable() {
    if (assigned_once || o.connect_timeout_ms <= 0 || SteadyMs() - created_ms < o.connect_timeout_ms) {
      return Status::OK();
    }
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, nullptr, &md, kReachableProbeMs);
    if (!err) {
      rd_kafka_metadata_destroy(md);
      return Status::OK();  // a broker answers: the group is still forming
    }
    const std::string why = last_broker_error.empty() ? rd_kafka_err2str(err) : last_broker_error;
    const int64_t t = o.connect_timeout_ms;
    const std::string waited = t % 1000 == 0 ? std::to_string(t / 1000) + "s" : std::to_string(t) + "ms";
    return Status::IOError("kafka: no broker reachable at " + o.brokers + " (" + why + "; waited " + waited +
                           ", ConsumerOptions::connect_timeout_ms)");
  }
};

namespace {
void RebalanceCallback(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* list, void* opaque) {
  static_cast<Consumer::Impl*>(opaque)->OnRebalance(err, list);
}

void CommitCallback(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  static_cast<Consumer::Impl*>(opaque)->OnCommitted(err, offsets);
}

void LogCallback(const rd_kafka_t* rk, int, const char* fac, const char* buf) {
  const auto* impl = static_cast<const Consumer::Impl*>(rd_kafka_opaque(rk));
  if (impl != nullptr) impl->Note(std::string("kafka: ") + fac + ": " + buf);
}
}  // namespace

Consumer::Consumer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Consumer::~Consumer() { (void)Close(); }

Result<std::unique_ptr<Consumer>> Consumer::Create(api::Sink* sink, ConsumerOptions options) {
  auto impl = std::make_unique<Impl>(sink, std::move(options));
  const ConsumerOptions& o = impl->o;
  if (o.topic.empty() || o.group.empty() || o.brokers.empty()) {
    return Status::InvalidArgument("ConsumerOptions needs brokers, topic and group");
  }
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // librdkafka logs through the notes, on the polling thread, never to stderr itself.
  ConfigPairs all = {{"log.connection.close", "false"}, {"log.queue", "true"}};
  all.insert(all.end(), o.user_config.begin(), o.user_config.end());
  for (auto& kv : FixedConfig(o.brokers, o.group, UniqueClientId())) all.push_back(kv);
  for (const auto& [k, v] : all) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument("ConsumerOptions::user_config " + k + "=" + v + ": " + err);
    }
  }
  rd_kafka_conf_set_opaque(conf, impl.get());
  rd_kafka_conf_set_rebalance_cb(conf, RebalanceCallback);
  rd_kafka_conf_set_log_cb(conf, LogCallback);
  rd_kafka_conf_set_offset_commit_cb(conf, CommitCallback);
  impl->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!impl->rk) {
    rd_kafka_conf_destroy(conf);
    return Status::InvalidArgument(std::string("kafka: ") + err);
  }
  rd_kafka_set_log_queue(impl->rk, nullptr);  // the main queue, which the consumer's poll serves
  rd_kafka_poll_set_consumer(impl->rk);
  impl->queue = rd_kafka_queue_get_consumer(impl->rk);
  impl->taken.resize(kBatchMessages);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, o.topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t e = rd_kafka_subscribe(impl->rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  std::unique_ptr<Consumer> c(new Consumer(std::move(impl)));
  if (e) return Status::IOError(std::string("kafka: subscribe to ") + o.topic + ": " + rd_kafka_err2str(e));
  return c;
}

Status Consumer::Round(RoundResult* result) {
  Impl& m = *impl_;
  if (m.closed) return Status::InvalidArgument("kafka: consumer closed");
  if (!m.error.ok()) return m.error;
  if (Status retried = m.RetryWaiting(); !retried.ok()) {
    m.error = retried;
    return retried;
  }
  size_t records = 0, bytes = 0;
  Status s;
  // The first message waits up to poll_timeout_ms; the rest come a batch
  // at a time, as many as are queued (one call per batch instead of one
  // poll per record). A rebalance served inside a batch call drops that
  // batch and fetches again (RefetchAll).
  rd_kafka_message_t* first = rd_kafka_consumer_poll(m.rk, m.o.poll_timeout_ms);
  if (first != nullptr) {
    if (!first->err) ++records;
    s = m.Take(first, &bytes);
    rd_kafka_message_destroy(first);
  }
  while (first != nullptr && s.ok() && m.error.ok() && records < m.o.max_round_records &&
         bytes < m.o.max_round_bytes) {
    const uint64_t rebalances = m.rebalances;
    const size_t want = std::min(m.taken.size(), m.o.max_round_records - records);
    const ssize_t got = rd_kafka_consume_batch_queue(m.queue, 0, m.taken.data(), want);
    if (got <= 0) break;
    const size_t n = static_cast<size_t>(got);
    const bool forced = m.refetch_every > 0 && ++m.batch_calls % m.refetch_every == 0;
    if (m.rebalances != rebalances || !m.error.ok() || forced) {
      Status refetched = m.RefetchAll(0, n);
      if (m.error.ok()) s = refetched;
      break;
    }
    size_t i = 0;
    for (; i < n && s.ok() && m.error.ok(); ++i) {
      if (!m.taken[i]->err) ++records;
      s = m.Take(m.taken[i], &bytes);
      rd_kafka_message_destroy(m.taken[i]);
    }
    if (i < n) {  // stopped at an error: the rest are not taken
      (void)m.RefetchAll(i, n);
      break;
    }
  }
  RoundResult r;
  r.records = records;
  Status f = m.Flush(&r);
  if (result) *result = r;
  if (!m.error.ok()) return m.error;
  SNAPSINK_RETURN_IF_ERROR(s);
  SNAPSINK_RETURN_IF_ERROR(f);
  return m.CheckReachable();
}

bool Consumer::CaughtUp() const {
  const Impl& m = *impl_;
  if (!m.assigned_once) return false;
  // Between a revoke and the next assignment nothing is assigned: caught up
  // only if every partition ever assigned was.
  // A partition waiting for its claim lock is another live process's.
  bool any_assigned = false;
  for (const auto& [p, part] : m.w.partitions()) any_assigned = any_assigned || part.assigned;
  for (const auto& [p, part] : m.w.partitions()) {
    if (m.waiting.count(p) > 0) continue;
    if ((part.assigned || !any_assigned) && part.committed < part.start_hwm) return false;
  }
  return true;
}

std::vector<int32_t> Consumer::Waiting() const {
  std::vector<int32_t> out;
  for (const auto& [p, w] : impl_->waiting) out.push_back(p);
  return out;
}

std::vector<Consumer::OwnedPartition> Consumer::Owned() const {
  const Impl& m = *impl_;
  std::vector<OwnedPartition> out;
  if (m.o.states == nullptr) return out;
  for (const auto& [p, part] : m.w.partitions()) {
    const PartitionStates::Owned* owned = m.o.states->Get(p);
    if (!part.assigned || part.sink == nullptr || owned == nullptr || part.committed < 0) continue;
    out.push_back(OwnedPartition{p, part.sink, owned->epoch, part.committed, part.hwm});
  }
  return out;
}

Result<int32_t> Consumer::PartitionCount() {
  Impl& m = *impl_;
  if (m.rk == nullptr) return Status::InvalidArgument("kafka: the consumer is closed");
  rd_kafka_topic_t* t = rd_kafka_topic_new(m.rk, m.o.topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  for (int attempt = 0; attempt < kQueryAttempts; ++attempt) {
    err = rd_kafka_metadata(m.rk, 0, t, &md, kQueryTimeoutMs);
    if (!err) break;
  }
  rd_kafka_topic_destroy(t);
  if (err) return Status::IOError("kafka: topic " + m.o.topic + ": cannot read its metadata: " + rd_kafka_err2str(err));
  int32_t n = 0;
  Status s;
  if (md->topic_cnt != 1 || md->topics[0].err) {
    s = Status::IOError("kafka: topic " + m.o.topic + ": no metadata" +
                        (md->topic_cnt == 1 ? std::string(": ") + rd_kafka_err2str(md->topics[0].err) : ""));
  } else {
    n = md->topics[0].partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  SNAPSINK_RETURN_IF_ERROR(s);
  return n;
}

Result<std::vector<int64_t>> Consumer::EndOffsets(int32_t n) {
  Impl& m = *impl_;
  if (m.rk == nullptr) return Status::InvalidArgument("kafka: the consumer is closed");
  std::vector<int64_t> ends(static_cast<size_t>(n), 0);
  for (int32_t p = 0; p < n; ++p) {
    int64_t lo = 0;
    SNAPSINK_RETURN_IF_ERROR(m.QueryWatermarks(p, &lo, &ends[static_cast<size_t>(p)]));
  }
  return ends;
}

Result<std::vector<int64_t>> Consumer::GroupOffsets(int32_t n) {
  Impl& m = *impl_;
  if (m.rk == nullptr) return Status::InvalidArgument("kafka: the consumer is closed");
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(n);
  for (int32_t p = 0; p < n; ++p) rd_kafka_topic_partition_list_add(list, m.o.topic.c_str(), p);
  const rd_kafka_resp_err_t err = rd_kafka_committed(m.rk, list, kQueryTimeoutMs);
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
  for (int i = 0; !err && i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& tp = list->elems[i];
    if (tp.partition >= 0 && tp.partition < n && !tp.err) out[static_cast<size_t>(tp.partition)] = tp.offset;
  }
  rd_kafka_topic_partition_list_destroy(list);
  if (err) return Status::IOError("kafka: topic " + m.o.topic + ": cannot read the group's offsets: " + rd_kafka_err2str(err));
  return out;
}

Status Consumer::Close() {
  Impl& m = *impl_;
  if (m.closed || !m.rk) return Status::OK();
  if (m.queue != nullptr) rd_kafka_queue_destroy(m.queue);
  m.queue = nullptr;
  const rd_kafka_resp_err_t e = rd_kafka_consumer_close(m.rk);  // revokes through the callback, which flushes
  m.closed = true;
  rd_kafka_destroy(m.rk);
  m.rk = nullptr;
  if (!m.error.ok()) return m.error;
  if (e) return Status::IOError(std::string("kafka: leaving the group: ") + rd_kafka_err2str(e));
  return Status::OK();
}

}  // namespace snapsink::kafka
