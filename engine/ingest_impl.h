// Internal to engine/ingest*.cc: the Ingester's state. One apply path
// (Begin, Apply, Reject, CommitBatch) serves both inputs: lines of a file
// (ingest.cc) and records of memory batches (ingest_batch.cc).
#pragma once

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <xxhash.h>

#include "engine/event_parser.h"
#include "engine/id_dedup.h"
#include "engine/ingest_agg_table.h"
#include "engine/ingest.h"
#include "engine/line_reader.h"
#include "engine/metric_kinds.h"
#include "engine/parse_ahead.h"
#include "engine/producer_retention.h"
#include "engine/sequencer.h"
#include "engine/watermark.h"
#include "engine/window_records_runs.h"

namespace snapsink {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }
};
static_assert(kLinePadding >= kEventPadding, "lines must be parseable where they lie in the block buffer");

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct CachedProducer {
  ProducerState state;
  bool dirty = false;
  ProducerLife life;  // last seen, tombstone
  uint64_t checked_in = 0;  // the memory batch (Impl::batch_serial) whose producer check last saw it
  // Its events with seq in that batch, for the check at its end: the
  // newest epoch among them and the lowest and highest seq of it.
  uint32_t batch_epoch = 0;
  uint64_t batch_first = 0;
  uint64_t batch_last = 0;
};

// One source as the open transaction sees it: its counters, position and
// rejects file. A file run has one; a group of memory batches one per source.
struct SourceCursor {
  std::string name;
  SourceState src;
  SourceIdCounts ids;
  std::string rejects_file;
  std::string file_path;        // absolute path of the file being read ("" for standard input)
  std::string rejects_key;      // its name: the key of Table::kRejectFiles
  uint64_t rejects_length = 0;  // committed length
  std::string rejects_buf;      // this batch's rejects, written at commit
  uint64_t end_offset = 0;      // file path: the offset after the last line applied
  bool dirty = false;           // to be written by the next commit
};

struct Ingester::Impl {
  Env* env;
  Store* store;
  RootConfig config;

  EventParser parser;
  const ParsedLine* preparsed = nullptr;  // the line Apply gets, parsed ahead (else Apply parses)
  Event event;
  std::string reason;
  std::string key_scratch;
  std::string ledger_key_scratch;
  std::string id_key;
  IdIndex ids;

  StringMap<CachedProducer> producers;  // for the whole run: we hold the writer lock
  // producers' entries in key order, for the commit: cleared wherever the
  // map gains or loses an entry, rebuilt by the commit after that.
  std::vector<StringMap<CachedProducer>::value_type*> producer_order;
  // A two-way set-associative front of `producers`, by the id's hash: a
  // hit is one of a set's two slots and one key compare, where the node map
  // divides by its bucket count, hashes the id again and walks a chain
  // (measured on a seq event's one producer lookup, 1000 producers
  // interleaved; with one way, a fifth of 1000 producers shared their slot
  // with another and missed whenever the other had sent last). Map nodes do
  // not move, so a slot's pointers stay valid until its producer is erased
  // (ForgetProducers). An id of up to kHeadBytes is compared against the
  // slot's own copy, in the slot's one cache line (prefetched ahead), not
  // against the node's key, a heap string elsewhere.
  struct alignas(64) ProducerSlot {
    static constexpr size_t kHeadBytes = 32;
    uint64_t hash = 0;
    std::string_view id;  // the map node's key
    CachedProducer* p = nullptr;
    char head[kHeadBytes] = {};  // id's first bytes
    ProducerSlot() = default;
    ProducerSlot(uint64_t h, std::string_view key, CachedProducer* producer) : hash(h), id(key), p(producer) {
      std::memcpy(head, key.data(), std::min(key.size(), kHeadBytes));
    }
    bool Holds(uint64_t h, std::string_view want) const {
      if (p == nullptr || hash != h || id.size() != want.size()) return false;
      return want.size() <= kHeadBytes ? std::memcmp(head, want.data(), want.size()) == 0 : id == want;
    }
  };
  static_assert(sizeof(ProducerSlot) == 64, "a front slot is one cache line");
  // 8192 sets of two (1 MiB, of which a cache holds only the sets in use):
  // 1000 producers leave few sets with three or more, which miss.
  static constexpr size_t kProducerSlots = 16384;
  std::vector<ProducerSlot> producer_front = std::vector<ProducerSlot>(kProducerSlots);
  void ForgetProducers() { std::fill(producer_front.begin(), producer_front.end(), ProducerSlot{}); }
  // The first of the two slots of h's set (the set is 128 bytes, aligned).
  ProducerSlot* FrontSet(uint64_t h) { return &producer_front[h & (kProducerSlots - 2)]; }
  const ProducerSlot* FrontSet(uint64_t h) const { return &producer_front[h & (kProducerSlots - 2)]; }
  // Prefetches for the lines ahead of the one being applied (a file's
  // lines are parsed a chunk ahead): the front set of a line further
  // ahead, then, once that set is in the cache, the producer it names and
  // its id. With many producers interleaved each lookup is otherwise a
  // cache miss on the set and another on the producer; no result changes.
  void PrefetchFrontSlot(const ParsedLine* p) const {
    if (p != nullptr && p->ok && p->event.has_seq) {
      const ProducerSlot* set = FrontSet(p->producer_hash);
      __builtin_prefetch(set);
      __builtin_prefetch(set + 1);
    }
  }
  void PrefetchProducer(const ParsedLine* p) const {
    if (p == nullptr || !p->ok || !p->event.has_seq) return;
    const ProducerSlot* set = FrontSet(p->producer_hash);
    const ProducerSlot& slot = set[0].hash == p->producer_hash ? set[0] : set[1];
    if (slot.p == nullptr || slot.hash != p->producer_hash) return;
    __builtin_prefetch(slot.p);
    if (slot.id.size() > ProducerSlot::kHeadBytes) __builtin_prefetch(slot.id.data());
  }
  BatchAggTable aggs;  // this batch's touched aggregates
  // The runs of the windows this batch looked keys up in, as the open
  // transaction sees them (engine/window_records_runs.h); dropped at commit.
  std::unordered_map<int64_t, WindowRuns> window_runs;
  std::vector<std::pair<std::string_view, Aggregate>> run_scratch;  // Commit's
  struct SumBound {
    uint64_t bound = 0;  // engine/window_records_runs.h
    bool known = false;
    bool dirty = false;
  };
  std::unordered_map<int64_t, SumBound> bounds;  // windows this batch applied values to
  // The entry Bound() last returned (nodes do not move): most events fall
  // in the window of the event before.
  int64_t last_bound_window = 0;
  SumBound* last_bound = nullptr;
  void ClearBounds() {
    bounds.clear();
    last_bound = nullptr;
  }
  std::vector<std::pair<std::string_view, uint32_t>> sorted_aggs;  // Commit's scratch: keys and indices of aggs
  struct CachedTotals {
    Aggregate agg;
  };
  StringMap<CachedTotals> ledger;       // this batch's touched (window, metric) totals
  std::unordered_set<int64_t> windows;  // windows this batch applied events to
  int64_t last_window_marked = 0;       // the window Apply last inserted into `windows`

  // The first failure of LMDB or the file system sticks: after it the
  // in-memory caches no longer match what is committed.
  Status sticky;

  std::unique_ptr<Txn> txn;
  StringMap<SourceCursor> cursors;  // sources loaded in this Ingester's life
  SourceCursor* cur = nullptr;      // the source whose lines Apply takes
  uint64_t batch_lines = 0;
  LineReader* reader = nullptr;  // of the source being read: Commit hashes the bytes before the position

  // A memory batch's record: rejects and errors name it and the line within
  // it (from 1) instead of a file line and offset.
  bool in_memory = false;
  std::string_view at_label;
  uint64_t at_line = 0;
  // The memory batch being applied: its producer check (WriteRequest::
  // producer_check; null: none) and a number no earlier batch had.
  const std::function<Status(std::string_view, std::string_view, uint32_t, uint64_t, uint64_t, std::string*)>* producer_check = nullptr;
  std::string_view batch_source;
  uint64_t batch_serial = 0;
  // The producers of the batch's events with seq, each once, checked when
  // its last line is applied (before the commit).
  std::vector<std::pair<std::string, CachedProducer*>> batch_producers;
  void NoteForCheck(CachedProducer* p, std::string_view producer);
  Status CheckProducers();
  uint64_t last_txn_id = 0;  // of this Ingester's last commit (memory path: are the caches current?)

  int64_t first_window = INT64_MIN;
  int64_t last_window = INT64_MAX;

  // The watermark's state (engine/watermark.h): wm.confirmed is the time
  // the watermark, the cutoffs and retention are measured from.
  WatermarkState wm;
  std::optional<int64_t> retained_from;  // meta::kRetainedFrom, loaded with wm
  bool wm_loaded = false;
  // The declared metric kinds (engine/metric_kinds.h), read by each Begin:
  // an aggregate entry looks its metric up once per batch (CachedAgg::kind),
  // and not at all while no metric is declared.
  MetricKinds kinds;
  bool wm_dirty = false;

  Status Begin(const std::string& source_name, const std::string& rejects_path);
  Status LoadCursor(const std::string& source_name, const std::string& rejects_path);
  Status Commit();
  Status CommitBatch();
  // The memory path's batches' commit checks (WriteRequest::commit_check),
  // run by CommitBatch right before the commit; `commit_check_failed` says
  // the commit failed there (its Status is the check's own, unprefixed).
  std::function<Status()> commit_checks;
  bool commit_check_failed = false;
  Status WriteCursor(SourceCursor* c);
  Status TrimRejects(SourceCursor* c);
  Status AdoptRejectsLength(SourceCursor* c, uint64_t size);
  // Drops every cache (producers, aggregates, sources, watermark, ids):
  // the next transaction reads them again from LMDB.
  void Reset();
  Status Apply(const char* data, size_t size, size_t capacity, uint64_t end_offset, bool overlong,
               bool stop_on_error);
  Status Reject(const char* data, size_t size, bool overlong, const std::string& why);
  std::string ParseLine(const char* data, size_t size, size_t capacity, bool overlong);
  Status GapStop(const SeqDecision& d) const;
  Status TakeSeq(bool by_id, CachedProducer* producer);
  // The event being applied is its producer's next seq of its epoch, with
  // no more gaps open than a record holds: Decide says kApply, and
  // AcceptWithSpill only moves next_seq (no gap opened, filled or spilled).
  bool InOrder(const ProducerState& state) const {
    return event.epoch == state.epoch && event.seq == state.next_seq && state.gaps.size() <= kMaxOpenGaps;
  }
  // The kind of the event's metric into cached->kind (looked up once per
  // entry), and the entry's batch sketch made for a quantiles or distinct one.
  void TakeKind(CachedAgg* cached);
  // The run's entry for a producer; h is ProducerHash(id).
  Result<CachedProducer*> Producer(std::string_view id, uint64_t h);
  // Producer() when neither slot of the id's front set holds it: the map,
  // else LMDB; the entry then takes *victim.
  [[gnu::noinline]] Result<CachedProducer*> ProducerMiss(std::string_view id, uint64_t h, ProducerSlot* victim);
  Result<SeqDecision> DecideById(std::string* why);
  Status CheckRetired(CachedProducer* p, std::string* why);
  // Where the line being applied is: "SOURCE:LINE" of a file, "AT:LINE" of a record.
  std::string Where() const {
    return in_memory ? std::string(at_label) + ":" + std::to_string(at_line)
                     : cur->name + ":" + std::to_string(cur->src.line_no + 1);
  }
  // A storage error met while applying the next line names it.
  Status AtLine(const Status& s) const {
    if (s.ok()) return s;  // on every event's path: build no name for success
    return s.Prefixed(in_memory ? Where() + ": " : cur->name + ":" + std::to_string(cur->src.lines + 1) + ": ");
  }
  // The batch's entry for aggregate key `key` of window: on its first touch
  // in the batch, the live value (base record plus the window's runs).
  Result<CachedAgg*> CachedAggregate(int64_t window, std::string_view key);
  // Reads the live value of `cached` (key of window) once in the batch.
  Status MakeLive(int64_t window, std::string_view key, CachedAgg* cached);
  Result<SumBound*> Bound(int64_t window);
  template <typename V>
  Result<V*> Cached(StringMap<V>* map, Table table, const std::string& key);

  // Memory batches (ingest_batch.cc): applies `group` in one transaction;
  // on a stop (Gap, BadInput) *failed is the batch's index and nothing is committed.
  Status ApplyGroup(const std::vector<WriteRequest*>& group, size_t* failed);
  Status ApplyRequest(WriteRequest* r);
};

}  // namespace snapsink
