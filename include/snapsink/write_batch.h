// snapsink public API: the write path for programs that feed a root from
// memory (LevelDB's WriteBatch is the model).
//
//   api::WriteBatch batch("orders-api");            // the source's name
//   batch.Add(R"({"producer":"p1","seq":0,"ts":1761041703000,"metric":"orders"})");
//   batch.SetPosition("request-1042");              // where the source is now
//   api::WriteResult r;
//   Status s = sink->Write(batch, &r);              // all or nothing
//   ...after a restart:
//   auto pos = sink->Position("orders-api");        // "request-1042"
//
// A batch's events and the source's new position commit in one LMDB
// transaction, or neither does: a program that stores its input position
// here (a Kafka offset, a file offset, a request id) and resumes from
// Position() after a crash applies every event exactly once.
//
// Every rule of the file path holds: per-producer dedup and fencing, gaps,
// id dedup, rejects (recorded with the batch's `at` label instead of a file
// line), and the accounting identity per source
//   lines = applied + duplicates + fenced + rejected + ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snapsink/options.h"  // LineCounts
#include "snapsink/status.h"

namespace snapsink::api {

class WriteBatch {
 public:
  // source: the name the batch's lines are accounted to (docs/CONTRACT.md 5's source),
  // 1 byte or more.
  // Errors: none here (no method of a WriteBatch fails); Sink::Write
  //   returns InvalidArgument for an empty source, Locked for a SetOwner
  //   epoch that does not hold, and the commit check's own Status (sink.h).
  explicit WriteBatch(std::string source);

  // Adds one record: one NDJSON line or several separated by '\n' (a Kafka
  // record from a producer that batches). `at` names the record for rejects
  // and errors (e.g. "kafka:orders/3@1042"); empty: "SOURCE@N" with N the
  // record's index in the batch. A rejected line is recorded with `at` and
  // its line number within the record (from 1).
  void Add(std::string_view record, std::string_view at = {});

  // The source's position after this batch, opaque to the engine; committed
  // with the batch's effects. Unset: the committed position is unchanged.
  void SetPosition(std::string position);

  // Optional progress figures for GetStatus, Sources and MetricsText: how
  // far the source has been read (e.g. the next Kafka offset) and how far it
  // reaches (e.g. the partition's high watermark); lag = end - read.
  void SetProgress(uint64_t read, uint64_t end);

  // For a source that processes take turns at (a Kafka partition shared by
  // a consumer group, docs/SCALE-OUT.md): the batch commits only if the source's owner
  // epoch, stored with it, equals `epoch`; with take, only if it is below
  // `epoch`, and the batch then raises it to `epoch`. Otherwise nothing of
  // the batch is applied and Write returns Status Locked naming both epochs.
  void SetOwner(uint64_t epoch, bool take = false);

  // A check run inside the batch's commit: with its effects applied in the
  // open transaction, right before the transaction commits (after the crash
  // point ingest.before_commit). When it fails, nothing of this batch
  // commits and Write returns its Status; with Locked, the other batches
  // committing in the same group still commit. For a fence kept outside the
  // root: the Kafka source asks ROOT's owner claims here whether a newer
  // owner took the partition (docs/SCALE-OUT.md), so that a process stopped
  // in the middle of a batch and resumed after losing it cannot commit it.
  // Unset: none.
  void SetCommitCheck(std::function<Status()> check);

  void Clear();  // keeps the source name, the owner and the commit check
  size_t records() const { return slots_.size(); }
  const std::string& source() const { return source_; }

  // The batch's records, in the order added, as views into the batch (valid
  // until the next Add or Clear). The records' bytes lie back to back in one
  // buffer: `readable` bytes can be read from data.data() (at least
  // data.size() + 64), so a record is parsed where it lies.
  struct Record {
    std::string_view data;
    std::string_view at;
    size_t readable = 0;
  };
  std::vector<Record> record_list() const;
  const std::optional<std::string>& position() const { return position_; }
  struct Progress {
    uint64_t read = 0, end = 0;
  };
  const std::optional<Progress>& progress() const { return progress_; }
  const std::optional<uint64_t>& owner_epoch() const { return owner_epoch_; }
  bool take_owner() const { return take_owner_; }
  const std::function<Status()>& commit_check() const { return commit_check_; }

 private:
  std::string source_;
  // Every record's bytes back to back (no allocation per record), and
  // every `at` label likewise; a slot locates one record in each.
  struct Slot {
    size_t data_at, data_size, label_at, label_size;
  };
  std::string data_, labels_;
  std::vector<Slot> slots_;
  std::optional<std::string> position_;
  std::optional<Progress> progress_;
  std::optional<uint64_t> owner_epoch_;
  bool take_owner_ = false;
  std::function<Status()> commit_check_;
};

// One producer's events with seq in one batch, as WriteOptions::
// producer_check sees them: the newest epoch among them and the lowest and
// highest seq of that epoch (events of an older epoch in the same batch are
// left out).
struct ProducerSeqs {
  uint32_t epoch = 0;
  uint64_t first = 0;
  uint64_t last = 0;
};

struct WriteOptions {
  // A bad line fails the whole batch (Status BadInput naming `at` and the
  // line) and nothing of it is applied; otherwise it goes to the source's
  // rejects file and is counted as rejected.
  bool stop_on_error = false;
  // Events without seq or id are deduplicated by a hash of their content.
  bool id_from_content = false;
  // Called (set: non-empty) inside the batch's Write, before anything of
  // it commits, once for each producer the batch has events with seq of,
  // after its last line: (the batch's source, the producer, the epoch and
  // seq range of its events in the batch). Keeps a producer to one source
  // of a group (a Kafka consumer: one partition at a time,
  // utilities/kafka/split_producers.h). A failure leaves the batch out
  // whole, as a gap under GapPolicy::kStop does, and Write returns it. OK
  // with *split set: the batch goes on, and the root records, in the same
  // transaction, that the producer is split (`split` names the sources,
  // e.g. "kafka:T/0, kafka:T/3"); ReadOnlySink::GetStatus lists it. May be
  // called from another thread than the Write's caller (group commit),
  // and again for a batch whose group is redone.
  std::function<Status(std::string_view source, std::string_view producer, const ProducerSeqs& seqs,
                       std::string* split)>
      producer_check;
};

// What one batch did (the source's lines of this batch only).
struct WriteResult : LineCounts {};

}  // namespace snapsink::api
