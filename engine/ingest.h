// Ingester: applies the events of one source exactly once (SPEC 2, 3, 7).
//
// A file is read from its committed position on when it is still the file
// the position was taken in, else from its start (SourceState says how it is
// recognised); standard input and other pipes from their start, always:
// sequence numbers drop what was applied before. A last line without '\n'
// is taken when it parses as a whole event; if it does not, it is left
// unread (the position stays before it) unless the input cannot grow
// (a pipe at its end, or `input_final`), where it is treated as any line. Its lines are taken in
// batches of commit_every lines; each batch runs in one LMDB write
// transaction that holds its effects (aggregates, ledger, dirty windows), the
// producer states, the source's counters and its byte offset, so a crash at
// any point replays at most the uncommitted batch and counts nothing twice.
// Rejected lines are appended to the source's rejects file and synced before
// the commit; the file's committed length is in the same transaction, and a
// rerun first cuts the file back to it.
//
// Events without seq are deduplicated by id within the id horizon
// (engine/id_dedup.h); idle producers are retired (engine/producer_retention.h).
// Their tables change in the same transaction as the batch's effects.
//
// Hot path: the producers of the run and the aggregates of the batch live in
// hash maps; LMDB is read on the first touch of a key in a batch and written
// at commit, in key order. No allocation per event once the keys are known.
// With `parse_ahead` (the default), lines of a file are parsed chunks ahead on another
// thread (engine/parse_ahead.h); everything else runs on the caller's
// thread.
//
// The first failure of the store or the file system sticks: every later
// call returns it. A stop (Gap, BadInput) does not.
//
// An Ingester works on any Store (live state or a backfill's); the caller
// holds whatever lock the store needs. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/env.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "snapsink/options.h"

namespace snapsink {

struct IngestOptions {
  std::string path;            // a file, or "-" for standard input
  std::string source;          // the source's name; defaults to path
  uint64_t commit_every = api::kDefaultCommitEvery;
  bool stop_on_error = false;  // --on-error stop
  bool id_from_content = false;  // --id-from-content: events without seq or id get a content id
  std::string rejects_file;    // path of the rejects file (engine/filenames.h builds it)
  bool input_final = false;    // the file will not grow (run --final, an archive)
  // Parse the next lines on other threads while a batch applies and commits
  // (engine/parse_ahead.h); the same results either way. Files only: a pipe
  // is read line by line, so its lines are never held back. On by default:
  // with one persistent parse thread it measured 1.25-1.41x of parsing on
  // the ingest thread on this project's loaded 2-core machine (README,
  // Performance; the thread-per-chunk design before it: 0.92-1.16x); the
  // bench measures both.
  bool parse_ahead = true;
  // Notes for the user ("file was replaced", a half-written line left unread);
  // dropped when unset: the library never prints.
  std::function<void(const std::string&)> on_note;
  // Called after each commit with the source's state so far (for progress).
  std::function<void(const SourceState&, int64_t input_size)> on_commit;
};

// One batch of records from memory (api::WriteBatch, sink/write_queue.cc):
// applied whole or not at all, with the source's new position.
struct WriteRequest {
  struct Record {
    const char* data;     // one or more NDJSON lines, '\n'-separated; a last '\n' ends the last line
    size_t size;
    size_t capacity;      // bytes readable from data (>= size + kEventPadding: parsed in place)
    std::string_view at;  // names the record in rejects and errors
  };
  std::string_view source;
  std::string rejects_file;  // engine/filenames.h builds it
  std::vector<Record> records;
  const std::string* position = nullptr;  // unset: unchanged
  std::optional<SourceState::Progress> progress;
  bool stop_on_error = false;
  bool id_from_content = false;
  // Unset: no owner check. Else the source's owner epoch must equal it
  // (take: be below it, and becomes it), or the batch fails with Locked.
  std::optional<uint64_t> owner_epoch;
  bool take_owner = false;
  // Run with the group applied, right before its commit (after the crash
  // point ingest.before_commit); a failure leaves this batch out, as a
  // failed owner epoch does. Null or empty: none.
  const std::function<Status()>* commit_check = nullptr;
  // api::WriteOptions::producer_check, its api::ProducerSeqs given as
  // (epoch, first, last) (sink/write_queue.cc adapts it): empty for none.
  std::function<Status(std::string_view, std::string_view, uint32_t, uint64_t, uint64_t, std::string*)> producer_check;
  // Outcome: OK, or the stop (Gap, BadInput naming `at` and the line) that
  // left this batch out; the source's state before and after it.
  Status status;
  SourceState before, after;
};

class Ingester {
 public:
  Ingester(Env* env, Store* store, const RootConfig& config);
  ~Ingester();

  // Only events whose window start lies in [first, last] take effect; the
  // others still advance their producer's sequence and count as ignored.
  // For backfill; live ingest takes every window.
  void SetWindowRange(int64_t first, int64_t last);

  // Ingests one source to its end. On success *after holds the source's
  // committed state. Gap / BadInput (under stop) return after committing
  // everything before the offending line.
  // *before (if given) gets the committed state before this run, so the
  // caller can tell what this run did.
  Status Run(const IngestOptions& options, SourceState* after, SourceState* before = nullptr);

  // Applies the memory batches of `group` in order in ONE LMDB write
  // transaction (group commit), each all or nothing: a batch that stops
  // (bad input under stop_on_error, a gap under --on-gap stop) gets its
  // status and is left out whole, and the others commit as if it had never
  // been offered. Returns a failure of the store or file system (sticky,
  // every batch's status too); OK when the commit (of the batches that did
  // not stop) went through. The Ingester keeps its caches between calls
  // while it is the root's only writer, and reloads them when another
  // transaction committed in between (a file ingest, a seal, a rollback).
  Status Write(const std::vector<WriteRequest*>& group);

 private:
  Status RunSource(const IngestOptions& options, SourceState* after, SourceState* before);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink
