#include "engine/ingest.h"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>


#include "engine/crash_point.h"
#include "engine/decimal.h"
#include "engine/event_parser.h"
#include "engine/filenames.h"
#include "engine/id_dedup.h"
#include "engine/ingest_impl.h"
#include "engine/ingest_key_sort.h"
#include "engine/gap_acceptance.h"
#include "engine/gap_spill.h"
#include "engine/json_escape.h"
#include "engine/line_reader.h"
#include "engine/producer_retention.h"
#include "engine/long_key.h"
#include "engine/parse_ahead.h"
#include "engine/sequencer.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "engine/window_records.h"
#include "engine/window_retention.h"

namespace snapsink {
namespace {

// How far ahead of the line being applied its producer's front slot, and
// then the producer itself, are prefetched (Impl::PrefetchFrontSlot).
constexpr size_t kFrontSlotLookahead = 8;
constexpr size_t kProducerLookahead = 4;
constexpr char kBeyondHorizon[] = "beyond the dedup horizon";
constexpr char kBeyondRetention[] = "beyond retention";
constexpr char kBeyondMaxAhead[] = "beyond max-ahead";
constexpr char kRetractMinMax[] = "op retract: metric is minmax, whose min and max cannot take a value back";
constexpr char kRetractDistinct[] =
    "op retract: metric is distinct, whose distinct-count sketch cannot take an item back";

std::string GapText(const Gap& g) {
  return g.lo + 1 == g.hi ? std::to_string(g.lo) : std::to_string(g.lo) + ".." + std::to_string(g.hi - 1);
}

}  // namespace

Status Ingester::Impl::Begin(const std::string& source_name, const std::string& rejects_path) {
  txn.reset();  // never two write transactions in one thread: LMDB would wait on itself
  window_runs.clear();  // views into the last transaction's pages
  ClearBounds();
  SNAPSINK_RETURN_IF_ERROR(store->BeginWrite(&txn));
  batch_lines = 0;
  if (!wm_loaded) {
    SNAPSINK_RETURN_IF_ERROR(LoadWatermark(txn.get(), &wm));
    SNAPSINK_ASSIGN_OR_RETURN(retained_from, RetainedFrom(txn.get()));
    wm_loaded = true;
  }
  SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(txn.get(), &kinds));
  return source_name.empty() ? Status::OK() : LoadCursor(source_name, rejects_path);
}

// Makes source_name the current source (read from LMDB on its first touch)
// and marks it to be written by the next commit.
Status Ingester::Impl::LoadCursor(const std::string& source_name, const std::string& rejects_path) {
  if (auto it = cursors.find(source_name); it != cursors.end()) {
    cur = &it->second;
    cur->dirty = true;
    return Status::OK();
  }
  SourceCursor c;
  c.name = source_name;
  std::string_view v;
  Status s = GetRecord(txn.get(), Table::kSources, source_name, &v);
  if (s.ok()) {
    SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &c.src));
  } else if (!s.IsNotFound()) {
    return s;
  }
  SNAPSINK_RETURN_IF_ERROR(ReadSourceIdCounts(txn.get(), source_name, &c.ids));
  c.end_offset = c.src.offset;
  c.rejects_file = rejects_path;
  c.rejects_key = rejects_path.substr(rejects_path.find_last_of('/') + 1);
  s = txn->Get(Table::kRejectFiles, c.rejects_key, &v);
  if (s.ok() && v.size() == 8) {
    c.rejects_length = codec::GetU64(v.data());
  } else if (!s.IsNotFound()) {
    return s.ok() ? Status::Corruption("malformed rejects record in state") : s;
  }
  c.dirty = true;
  cur = &cursors.emplace(source_name, std::move(c)).first->second;
  return Status::OK();
}

void Ingester::Impl::Reset() {
  txn.reset();
  window_runs.clear();
  ClearBounds();
  producers.clear();
  producer_order.clear();
  ForgetProducers();
  aggs.Clear();
  ledger.clear();
  windows.clear();
  cursors.clear();
  cur = nullptr;
  ids = IdIndex();
  wm = WatermarkState();
  retained_from.reset();
  wm_loaded = false;
  wm_dirty = false;
  batch_lines = 0;
}

Result<CachedProducer*> Ingester::Impl::Producer(std::string_view id, uint64_t h) {
  ProducerSlot* set = FrontSet(h);
  if (set[0].Holds(h, id)) return set[0].p;
  if (set[1].Holds(h, id)) return set[1].p;
  // A miss fills an empty way, else the way this id's hash names (two ids
  // of one set that both send often then keep their own ways).
  return ProducerMiss(id, h, set[0].p == nullptr ? &set[0] : set[1].p == nullptr ? &set[1] : &set[(h >> 32) & 1]);
}

// Out of line: the front's hit path stays small (no frame for a Status).
Result<CachedProducer*> Ingester::Impl::ProducerMiss(std::string_view id, uint64_t h, ProducerSlot* victim) {
  ProducerSlot& slot = *victim;
  auto it = producers.find(id);
  if (it != producers.end()) {
    slot = ProducerSlot{h, it->first, &it->second};
    return &it->second;
  }
  CachedProducer p;
  std::optional<ProducerSeen> seen;
  std::string_view v;
  Status s = txn->Get(Table::kProducers, id, &v);
  if (s.ok()) {
    SNAPSINK_RETURN_IF_ERROR(AtLine(codec::DecodeProducer(v, &p.state, &seen)));
  } else if (!s.IsNotFound()) {
    return AtLine(s);
  }
  SNAPSINK_RETURN_IF_ERROR(LoadProducerLife(txn.get(), id, seen, &p.life));
  const auto added = producers.emplace(std::string(id), std::move(p)).first;
  producer_order.clear();
  slot = ProducerSlot{h, added->first, &added->second};
  return &added->second;
}

// The batch's entry for key, read from LMDB on its first touch in the batch.
template <typename V>
Result<V*> Ingester::Impl::Cached(StringMap<V>* map, Table table, const std::string& key) {
  auto it = map->find(key);
  if (it != map->end()) return &it->second;
  V entry;
  std::string_view v;
  Status s = GetRecord(txn.get(), table, key, &v);
  if (s.ok()) {
    SNAPSINK_RETURN_IF_ERROR(AtLine(codec::Decode(v, &entry.agg)));
  } else if (!s.IsNotFound()) {
    return AtLine(s);
  }
  return &map->emplace(key, entry).first->second;
}

// The batch's entry for an aggregate key; its live value is not read here
// (see MakeLive).
Result<CachedAgg*> Ingester::Impl::CachedAggregate(int64_t, std::string_view key) {
  return aggs.FindOrInsert(key);
}

Status Ingester::Impl::MakeLive(int64_t window, std::string_view key, CachedAgg* cached) {
  if (cached->live) return Status::OK();
  auto [runs, first] = window_runs.try_emplace(window);
  if (first) SNAPSINK_RETURN_IF_ERROR(AtLine(LoadWindowRuns(txn.get(), window, &runs->second)));
  Aggregate live;
  bool found = false;
  SNAPSINK_RETURN_IF_ERROR(AtLine(GetLiveAggregate(txn.get(), key, runs->second, &live, &found)));
  live.count = WrappingAdd(live.count, cached->delta.count);
  live.sum_micros = WrappingAdd(live.sum_micros, cached->delta.sum_micros);
  live.events = WrappingAdd(live.events, cached->delta.events);
  MergeRange(&live, cached->delta);
  cached->agg = live;
  cached->live = true;
  return Status::OK();
}

Result<Ingester::Impl::SumBound*> Ingester::Impl::Bound(int64_t window) {
  if (last_bound != nullptr && last_bound_window == window) return last_bound;
  auto [it, first] = bounds.try_emplace(window);
  if (first) SNAPSINK_RETURN_IF_ERROR(AtLine(ReadSumBound(txn.get(), window, &it->second.bound, &it->second.known)));
  last_bound_window = window;
  last_bound = &it->second;
  return last_bound;
}

// An event without seq: a duplicate if its id was seen within the horizon.
// Sets *why for an event too old to check.
Result<SeqDecision> Ingester::Impl::DecideById(std::string* why) {
  SeqDecision d;
  const int64_t cutoff = IdCutoff(wm.confirmed, config.lateness_ms, config.id_horizon_ms);
  if (event.ts_ms < cutoff) {
    *why = kBeyondHorizon;
    return d;
  }
  if (event.id.empty()) {
    id_key = IdKey(event, cur->name, IdSource::kContent, ContentId(event));
  } else {
    id_key = IdKey(event, cur->name, IdSource::kGiven, event.id);
  }
  SNAPSINK_ASSIGN_OR_RETURN(bool seen, ids.Seen(txn.get(), id_key, cutoff));
  if (seen) d.outcome = SeqOutcome::kDuplicate;
  return d;
}

// Retires p if it has been idle past the retention, then refuses an event
// at or below a retired producer's epoch.
Status Ingester::Impl::CheckRetired(CachedProducer* p, std::string* why) {
  if (RetireIfIdle(&p->life, p->state, RetentionCutoff(wm.confirmed, config.lateness_ms, config.producer_retention_ms))) {
    // Its spilled gaps go with its record (in this batch's transaction).
    if (p->state.spilled > 0) SNAPSINK_RETURN_IF_ERROR(AtLine(DropSpilledGaps(txn.get(), event.producer)));
    p->state = ProducerState();
    p->dirty = true;
  }
  if (p->life.retired && event.epoch <= p->life.retired->epoch) *why = kRetiredReason;
  return Status::OK();
}

// A file's line is recorded by its line number and offset; a memory
// record's by its `at` label and the line within it (from 1).
Status Ingester::Impl::Reject(const char* data, size_t size, bool overlong, const std::string& why) {
  std::string& buf = cur->rejects_buf;
  buf.append("{\"source\":");
  buf.append(JsonQuote(cur->name));
  if (in_memory) {
    buf.append(",\"at\":");
    buf.append(JsonQuote(at_label));
    buf.append(",\"line\":" + std::to_string(at_line) + ",\"reason\":");
  } else {
    buf.append(",\"line\":" + std::to_string(cur->src.line_no + 1) + ",\"offset\":" + std::to_string(cur->end_offset) +
               ",\"reason\":");
  }
  buf.append(JsonQuote(why));
  buf.append(",\"raw\":");
  if (!overlong && size > 0 && data[size - 1] == '\r') --size;  // the CR of a CRLF terminator
  buf.append(JsonQuote(std::string_view(data, size)));
  if (overlong) buf.append(",\"truncated\":true");
  buf.append("}\n");
  ++cur->src.rejected;
  return Status::OK();
}

// The event of a line into `event` (parsed here, or ahead by the parse
// thread); "" when it is one, else why the line is bad.
std::string Ingester::Impl::ParseLine(const char* data, size_t size, size_t capacity, bool overlong) {
  if (overlong) return "line longer than 1 MiB";
  if (preparsed != nullptr) {
    if (!preparsed->ok) return preparsed->reason;
    event = preparsed->event;
    return std::string();
  }
  return parser.Parse(data, size, capacity, &event, &reason) ? std::string() : reason;
}

// The Gap that stops the run at the event being applied (d: kGapStop or kGapLimit).
Status Ingester::Impl::GapStop(const SeqDecision& d) const {
  std::string what = Where() + ": producer " + std::string(event.producer) + " epoch " + std::to_string(event.epoch) +
                     ": seq " + GapText(d.missing) + " missing";
  if (d.outcome == SeqOutcome::kGapLimit) {
    what += " (more than " + std::to_string(kMaxOpenGaps + kMaxSpilledGaps) +
            " open gaps, the most kept per producer: resend its missing events, or restart the producer at a "
            "higher epoch, which closes them)";
  } else {
    what += " (GapPolicy::kStop: resend the missing events, or accept the gap with Sink::AcceptGaps for producer " +
            std::string(event.producer) + " and run again)";
  }
  return Status::Gap(what);
}

// The event being applied takes its place: its id held, or its seq in its
// producer's state (a retired producer back at a higher epoch starts afresh).
Status Ingester::Impl::TakeSeq(bool by_id, CachedProducer* producer) {
  if (by_id) return ids.Insert(txn.get(), id_key, event.ts_ms);
  if (InOrder(producer->state)) {
    producer->state.next_seq = event.seq + 1;  // all AcceptWithSpill does with it
  } else {
    SNAPSINK_RETURN_IF_ERROR(AtLine(AcceptWithSpill(txn.get(), event.producer, &producer->state, event.epoch, event.seq)));
  }
  producer->dirty = true;
  HeardAt(&producer->life, event.ts_ms);
  if (producer->life.retired) {
    producer->life.retired.reset();
    producer->life.tombstone_dirty = true;
  }
  return Status::OK();
}

void Ingester::Impl::TakeKind(CachedAgg* cached) {
  if (cached->kind < 0) {
    cached->kind = static_cast<int8_t>(kinds.empty() ? MetricKind::kSum : KindOf(kinds, event.metric));
  }
  if (cached->kind == static_cast<int8_t>(MetricKind::kQuantiles) && cached->sketch == nullptr) {
    cached->sketch = std::make_unique<DDSketch>(SpecOf(kinds, event.metric).parameter);
  }
  if (cached->kind == static_cast<int8_t>(MetricKind::kDistinct) && cached->items == nullptr) {
    cached->items = std::make_unique<HyperLogLog>(static_cast<int>(SpecOf(kinds, event.metric).parameter));
  }
}

Status Ingester::Impl::Apply(const char* data, size_t size, size_t capacity, uint64_t end_offset,
                             bool overlong, bool stop_on_error) {
  std::string why = ParseLine(data, size, capacity, overlong);
  const bool stop_on_gap = config.on_gap == OnGap::kStop;
  CachedProducer* producer = nullptr;
  Aggregate* agg = nullptr;
  Aggregate* agg_delta = nullptr;
  Aggregate* totals = nullptr;
  SumBound* bound = nullptr;
  uint64_t magnitude_added = 0;
  SeqDecision d;
  int64_t window = 0;
  bool in_range = true;
  int64_t delta = 0;
  bool minmax = false;
  CachedAgg* quantiles = nullptr;  // the entry of a quantiles metric's event
  CachedAgg* distinct = nullptr;   // the entry of a distinct metric's event
  const bool by_id = why.empty() && !event.has_seq;
  if (by_id) {
    SNAPSINK_ASSIGN_OR_RETURN(d, DecideById(&why));
  } else if (why.empty()) {
    const uint64_t h = preparsed != nullptr ? preparsed->producer_hash : ProducerHash(event.producer);
    SNAPSINK_ASSIGN_OR_RETURN(producer, Producer(event.producer, h));
    if (producer_check != nullptr) NoteForCheck(producer, event.producer);
    SNAPSINK_RETURN_IF_ERROR(CheckRetired(producer, &why));
    if (why.empty() && !InOrder(producer->state)) {  // in order: Decide's kApply, without the call
      SNAPSINK_ASSIGN_OR_RETURN(d, DecideWithSpill(txn.get(), event.producer, producer->state, event.epoch,
                                                   event.seq, stop_on_gap));
      if (d.outcome == SeqOutcome::kGapStop) {
        // An operator accepted this gap (`snapsink gaps accept`): go on as under --on-gap accept.
        SNAPSINK_ASSIGN_OR_RETURN(bool accepted, GapAccepted(txn.get(), event.producer, event.epoch, d.missing));
        if (accepted) {
          SNAPSINK_ASSIGN_OR_RETURN(d, DecideWithSpill(txn.get(), event.producer, producer->state, event.epoch,
                                                       event.seq, /*stop_on_gap=*/false));
        }
      }
    }
  }
  if (why.empty()) {
    if (d.outcome == SeqOutcome::kGapStop || d.outcome == SeqOutcome::kGapLimit) return GapStop(d);
    window = WindowStart(event.ts_ms, config.window_ms);
    in_range = window >= first_window && window <= last_window;
    if (window < kMinTimestampMs) {
      // A window size that does not divide the time since 0000-01-01 would
      // start this event's window before year 0000, which no name can hold.
      why = "field ts: its window would start before 0000-01-01T00:00:00Z";
    } else if (d.outcome == SeqOutcome::kApply && in_range && EventTooFarAhead(event.ts_ms, wm.confirmed, config.max_ahead_ms)) {
      why = kBeyondMaxAhead;  // one clock gone wrong moves no watermark (engine/watermark.h)
    } else if (auto oldest = config.retain_ms <= 0 ? retained_from  // OldestKeptWindow's answer without --retain
                                                   : OldestKeptWindow(config, wm.confirmed, retained_from);
               d.outcome == SeqOutcome::kApply && in_range && oldest && window < *oldest) {
      why = kBeyondRetention;  // its window left the generations and the state (engine/window_retention.h)
    } else if (event.retract && event.value_micros == INT64_MIN) {
      // Its negation is one past INT64_MAX micros.
      why = "field value: the retract of -9223372036854.775808 would overflow";
    } else if (d.outcome == SeqOutcome::kApply && in_range) {
      delta = event.retract ? -event.value_micros : event.value_micros;
      std::string_view agg_key;  // built by the parse thread, for the window computed here
      if (preparsed != nullptr && !preparsed->agg_key.empty()) {
        agg_key = preparsed->agg_key;
      } else {
        codec::AggKeyInto(&key_scratch, window, event.metric, event.key);
        agg_key = key_scratch;
      }
      SNAPSINK_ASSIGN_OR_RETURN(CachedAgg * cached, CachedAggregate(window, agg_key));
      TakeKind(cached);
      minmax = cached->kind == static_cast<int8_t>(MetricKind::kMinMax);
      if (cached->kind == static_cast<int8_t>(MetricKind::kQuantiles)) quantiles = cached;
      if (cached->kind == static_cast<int8_t>(MetricKind::kDistinct)) distinct = cached;
      if (cached->totals == nullptr) {
        codec::LedgerKeyInto(&ledger_key_scratch, window, event.metric);
        SNAPSINK_ASSIGN_OR_RETURN(CachedTotals * t, Cached(&ledger, Table::kLedger, ledger_key_scratch));
        cached->totals = &t->agg;
      }
      agg = &cached->agg;
      agg_delta = &cached->delta;
      totals = cached->totals;
      SNAPSINK_ASSIGN_OR_RETURN(bound, Bound(window));
      // |delta| within the window's bound's headroom: no key can overflow.
      const uint64_t magnitude = delta < 0 ? 0 - static_cast<uint64_t>(delta) : static_cast<uint64_t>(delta);
      magnitude_added = magnitude;
      const uint64_t max = static_cast<uint64_t>(INT64_MAX);
      const bool key_checked = !bound->known || bound->bound > max || magnitude > max - bound->bound;
      if (key_checked) SNAPSINK_RETURN_IF_ERROR(MakeLive(window, agg_key, cached));
      int64_t unused;
      if (minmax && event.retract) {
        why = kRetractMinMax;
      } else if (distinct != nullptr && event.retract) {
        why = kRetractDistinct;
      } else if (distinct != nullptr && event.item != ItemField::kOk) {
        why = ItemReason(event);
      } else if ((key_checked && !AddMicros(agg->sum_micros, delta, &unused)) ||
                 !AddMicros(totals->sum_micros, delta, &unused) ||
                 (quantiles != nullptr && !AddMicros(quantiles->sketch->sum(), delta, &unused))) {
        why = "field value: sum would overflow";
      }
    }
  }
  if (!why.empty()) {
    if (stop_on_error) return Status::BadInput(Where() + ": " + why);
    SNAPSINK_RETURN_IF_ERROR(Reject(data, size, overlong, why));
    if (why == kBeyondHorizon) ++cur->ids.rejected_horizon;
    if (why == kRetiredReason) ++cur->ids.rejected_retired;
  } else if (d.outcome == SeqOutcome::kDuplicate) {
    ++cur->src.duplicates;
    if (by_id) ++cur->ids.duplicates_id;
    if (!by_id) HeardAt(&producer->life, event.ts_ms);
  } else if (d.outcome == SeqOutcome::kFenced) {
    ++cur->src.fenced;
    HeardAt(&producer->life, event.ts_ms);
  } else {
    SNAPSINK_RETURN_IF_ERROR(TakeSeq(by_id, producer));
    if (!in_range) {
      ++cur->src.ignored;
    } else {
      const int64_t step = event.retract ? -1 : 1;
      for (Aggregate* a : {agg, agg_delta, totals}) {
        a->count += step;
        a->sum_micros += delta;
        a->events += 1;
      }
      if (minmax || quantiles != nullptr || distinct != nullptr) {
        AddToRange(agg, event.value_micros);
        AddToRange(agg_delta, event.value_micros);
      }
      if (distinct != nullptr) distinct->items->AddHash(event.item_hash);
      // Its sum was checked above: it cannot overflow.
      if (quantiles != nullptr &&
          !(event.retract ? quantiles->sketch->Retract(event.value_micros) : quantiles->sketch->Add(event.value_micros))) {
        return Status::Corruption(Where() + ": a quantile sketch's sum left int64 where its aggregate's did not");
      }
      if (windows.empty() || window != last_window_marked) {  // in the set since it last emptied
        windows.insert(window);
        last_window_marked = window;
      }
      bound->bound = magnitude_added > UINT64_MAX - bound->bound ? UINT64_MAX : bound->bound + magnitude_added;
      bound->dirty = true;
      if (ObserveEvent(&wm, event.producer, event.ts_ms, WatermarkReach(config))) wm_dirty = true;
      if (!cur->src.newest_ts_ms || event.ts_ms > *cur->src.newest_ts_ms) cur->src.newest_ts_ms = event.ts_ms;
      ++cur->src.applied;
    }
  }
  ++cur->src.lines;
  ++cur->src.line_no;
  ++batch_lines;
  cur->end_offset = end_offset;
  return Status::OK();
}

Status Ingester::Impl::Commit() {
  // A storage error names the source and the batch's last line.
  commit_check_failed = false;
  Status s = CommitBatch();
  if (s.ok() || commit_check_failed) return s;
  return s.Prefixed((in_memory ? Where() : cur->name + ":" + std::to_string(cur->src.lines)) +
                    ": (committing the batch that ends here) ");
}

Status Ingester::Impl::CommitBatch() {
  std::string value;
  // One record per producer that sent (its state and last-seen time); its
  // idle key only when the last-seen time left the key's bucket.
  const int64_t idle_bucket_ms = IdleBucketMs(config.producer_retention_ms);
  // In key order: each record's put then searches little more than the
  // leaf page of the one before (Txn::PutInOrder).
  if (producer_order.size() != producers.size()) {
    producer_order.clear();
    for (auto& entry : producers) producer_order.push_back(&entry);
    std::sort(producer_order.begin(), producer_order.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  for (auto* entry : producer_order) {
    CachedProducer& p = entry->second;
    SNAPSINK_RETURN_IF_ERROR(CommitProducer(txn.get(), entry->first, p.state, p.dirty, &p.life, idle_bucket_ms, &value));
    p.dirty = false;
  }
  // The watermark moved: drop expired ids and retire idle producers.
  SNAPSINK_RETURN_IF_ERROR(IdIndex::Expire(txn.get(), IdCutoff(wm.confirmed, config.lateness_ms, config.id_horizon_ms)));
  std::vector<std::string> retired;
  SNAPSINK_RETURN_IF_ERROR(RetireIdleProducers(
      txn.get(), RetentionCutoff(wm.confirmed, config.lateness_ms, config.producer_retention_ms), &retired));
  // events == 0: only looked at for an event that was then rejected (sum
  // overflow) or ignored; it must not leave an empty entry behind.
  // One run of deltas per window (engine/window_records_runs.h): keys in
  // order, and a window's keys are adjacent (its 8-byte prefix leads).
  sorted_aggs.clear();
  for (size_t i = 0; i < aggs.size(); ++i) {
    if (aggs.value(i).delta.events != 0) sorted_aggs.emplace_back(aggs.key(i), static_cast<uint32_t>(i));
  }
  SortByKey(&sorted_aggs);
  for (size_t i = 0; i < sorted_aggs.size();) {
    const std::string_view window_key = sorted_aggs[i].first.substr(0, 8);
    run_scratch.clear();
    for (; i < sorted_aggs.size() && sorted_aggs[i].first.substr(0, 8) == window_key; ++i) {
      const CachedAgg& v = aggs.value(sorted_aggs[i].second);
      run_scratch.emplace_back(sorted_aggs[i].first.substr(8), v.delta);
      if (v.sketch != nullptr) v.sketch->Encode(&run_scratch.back().second.sketch);
      if (v.items != nullptr) v.items->Encode(&run_scratch.back().second.sketch);
    }
    // A window whose sum bound holds had no key read this batch, and has
    // none read until an event passes the bound: its large runs are left
    // to the seal.
    const int64_t w = codec::DecodeWindowKey(window_key);
    const auto b = bounds.find(w);
    const bool unread = b != bounds.end() && b->second.known && b->second.bound <= static_cast<uint64_t>(INT64_MAX);
    SNAPSINK_RETURN_IF_ERROR(AppendWindowRun(txn.get(), w, run_scratch, unread ? RunMerges::kSmall : RunMerges::kAll));
  }
  window_runs.clear();  // views into runs the appends may have replaced
  for (const auto& [w, b] : bounds) {
    if (b.known && b.dirty) SNAPSINK_RETURN_IF_ERROR(WriteSumBound(txn.get(), w, b.bound));
  }
  ClearBounds();
  for (const auto& [key, t] : ledger) {
    if (t.agg.events == 0) continue;
    codec::EncodeInto(&value, t.agg);
    SNAPSINK_RETURN_IF_ERROR(PutRecord(txn.get(), Table::kLedger, key, value));
  }
  for (int64_t w : windows) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    if (ws.dirty) continue;
    ws.dirty = true;
    SNAPSINK_RETURN_IF_ERROR(WriteWindowState(txn.get(), w, ws));
  }
  if (wm_dirty) SNAPSINK_RETURN_IF_ERROR(StoreWatermark(txn.get(), wm));
  if (!in_memory) {
    cur->src.offset = cur->end_offset;
    if (reader != nullptr && reader->positionable()) {
      // From the file, not the reader's buffer: a ParseAhead's thread may be reading on.
      SNAPSINK_RETURN_IF_ERROR(reader->TailHashAt(cur->src.offset, &cur->src.tail_hash));
    }
  }
  for (auto& entry : cursors) {
    if (entry.second.dirty) SNAPSINK_RETURN_IF_ERROR(WriteCursor(&entry.second));
  }
  // The absolute path of the file being read, so that status finds it from
  // any working directory (the source keeps the name the user gave).
  if (!in_memory && cur != nullptr && !cur->file_path.empty()) {
    SNAPSINK_RETURN_IF_ERROR(PutRecord(txn.get(), Table::kMeta, SourcePathKey(cur->name), cur->file_path));
  }
  MaybeCrash("ingest.before_commit");
  if (commit_checks) {
    if (Status c = commit_checks(); !c.ok()) {
      commit_check_failed = true;
      txn.reset();  // nothing of the group commits; Write redoes it without the failed batch
      return c;
    }
  }
  last_txn_id = txn->id();
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  txn.reset();
  if (!retired.empty()) ForgetProducers();
  for (const std::string& id : retired) producers.erase(id);  // reloaded as retired on next touch
  if (!retired.empty()) producer_order.clear();
  MaybeCrash("ingest.after_commit");
  aggs.Clear();
  ledger.clear();
  windows.clear();
  for (auto& entry : cursors) {
    entry.second.rejects_buf.clear();
    entry.second.dirty = false;
  }
  wm_dirty = false;
  batch_lines = 0;
  return Status::OK();
}

// A source's record, its id counts and its rejects: the rejects are durable
// before the position that skips their lines is.
Status Ingester::Impl::WriteCursor(SourceCursor* c) {
  if (!c->rejects_buf.empty()) {
    std::unique_ptr<WritableFile> f;
    const size_t slash = c->rejects_file.find_last_of('/');
    if (slash != std::string::npos) {
      SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, c->rejects_file.substr(0, slash)));  // deleted by hand: made again
    }
    SNAPSINK_RETURN_IF_ERROR(env->NewAppendableFile(c->rejects_file, &f));
    SNAPSINK_RETURN_IF_ERROR(f->Append(c->rejects_buf));
    SNAPSINK_RETURN_IF_ERROR(f->Sync());
    SNAPSINK_RETURN_IF_ERROR(f->Close());
    // ... and so is the file's name, the first time it holds committed lines.
    if (c->rejects_length == 0) {
      SNAPSINK_RETURN_IF_ERROR(env->SyncDir(slash == std::string::npos ? "." : c->rejects_file.substr(0, slash)));
    }
    c->rejects_length += c->rejects_buf.size();
    std::string len;
    codec::PutU64(&len, c->rejects_length);
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRejectFiles, c->rejects_key, len));
  }
  SNAPSINK_RETURN_IF_ERROR(PutRecord(txn.get(), Table::kSources, c->name, codec::Encode(c->src)));
  if (c->ids != SourceIdCounts()) {
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSourceIds, SourceIdsKey(c->name), Encode(c->ids)));
  }
  return Status::OK();
}

// Lines of a batch that never committed may have left rejects behind: cut
// them off. A rejects file deleted or cut by hand: what is there now is its
// committed length, recorded before any batch appends to it, so that a
// crashed batch's rejects are cut back to it and not kept twice.
Status Ingester::Impl::TrimRejects(SourceCursor* c) {
  uint64_t size = 0;
  Status fs = env->GetFileSize(c->rejects_file, &size);
  if (fs.ok() && size > c->rejects_length) return env->TruncateFile(c->rejects_file, c->rejects_length);
  if ((fs.ok() || fs.IsNotFound()) && size < c->rejects_length) return AdoptRejectsLength(c, fs.ok() ? size : 0);
  return Status::OK();
}

Status Ingester::Impl::AdoptRejectsLength(SourceCursor* c, uint64_t size) {
  std::string len;
  codec::PutU64(&len, size);
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRejectFiles, c->rejects_key, len));
  last_txn_id = txn->id();
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  txn.reset();
  c->rejects_length = size;
  return store->BeginWrite(&txn);
}

Ingester::Ingester(Env* env, Store* store, const RootConfig& config) : impl_(new Impl) {
  impl_->env = env;
  impl_->store = store;
  impl_->config = config;
}

Ingester::~Ingester() = default;

void Ingester::SetWindowRange(int64_t first, int64_t last) {
  impl_->first_window = first;
  impl_->last_window = last;
}

namespace {
// Records a failure other than a stop for bad input or a gap as sticky.
Status Stick(Status* sticky, Status s) {
  if (!s.ok() && !s.IsGap() && !s.IsBadInput()) *sticky = s;
  return s;
}

// A file that a second pass can read from its committed position again.
bool Rereadable(const std::string& path) {
  struct stat st;
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
}  // namespace

Status Ingester::Run(const IngestOptions& options, SourceState* after, SourceState* before) {
  SNAPSINK_RETURN_IF_ERROR(impl_->sticky);
  Status s = RunSource(options, after, before);
  // The LMDB map filled during a batch (engine/store.h): nothing of that
  // batch is committed. Grow the map and go on from the last commit, as a
  // rerun would (a fresh Impl holds nothing but what is committed). Not for
  // a pipe: its uncommitted lines are gone; the error stands and the map
  // is grown by the next write transaction.
  for (int i = 0; !s.ok() && impl_->store->map_full() && Rereadable(options.path) && i < 32; ++i) {
    std::unique_ptr<Impl> fresh(new Impl);
    fresh->env = impl_->env;
    fresh->store = impl_->store;
    fresh->config = impl_->config;
    fresh->first_window = impl_->first_window;
    fresh->last_window = impl_->last_window;
    impl_ = std::move(fresh);  // aborts the failed batch's transaction
    if (Status g = impl_->store->GrowAfterMapFull(); !g.ok()) return Stick(&impl_->sticky, s.Prefixed(g.message() + ": "));
    s = RunSource(options, after, nullptr);
  }
  impl_->reader = nullptr;
  impl_->preparsed = nullptr;  // pointed into the run's ParseAhead
  return Stick(&impl_->sticky, s);
}

// Commit point: each batch's LMDB commit (effects, producers, the source's
// offset and its rejects file's length together). The batch's rejected
// lines and the rejects file's name are durable before it; what a failed or
// crashed batch appended past the committed length is cut off on the rerun.
Status Ingester::RunSource(const IngestOptions& options, SourceState* after, SourceState* before) {
  Impl& m = *impl_;
  const std::string source = options.source.empty() ? options.path : options.source;
  const uint64_t every = options.commit_every == 0 ? 1 : options.commit_every;
  m.in_memory = false;
  SNAPSINK_RETURN_IF_ERROR(m.Begin(source, options.rejects_file));
  m.parser.SetContentIds(options.id_from_content);
  if (before != nullptr) *before = m.cur->src;
  auto note = [&](const std::string& text) {
    if (options.on_note) options.on_note(text);  // the library never prints
  };

  SNAPSINK_RETURN_IF_ERROR(m.TrimRejects(m.cur));

  m.cur->file_path.clear();
  if (options.path != "-") {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(options.path, ec);
    if (!ec) m.cur->file_path = abs.lexically_normal().string();
  }
  std::unique_ptr<LineReader> reader;
  SNAPSINK_RETURN_IF_ERROR(LineReader::Open(options.path, &reader));
  m.reader = reader.get();
  const SourceState committed = m.cur->src;
  SourceState& src = m.cur->src;
  bool resumed = false;
  SNAPSINK_RETURN_IF_ERROR(reader->Resume(src, &resumed));
  if (!resumed) {
    // A new file at the path, or standard input: from the start. Counters
    // go on; the lines read again count again (duplicates, mostly).
    if (reader->positionable() && src.offset > 0) {
      note(source + ": file was replaced since offset " + std::to_string(src.offset) + "; reading it from the start");
    }
    src.line_no = 0;
    src.flags = 0;
  }
  if (reader->positionable()) {
    src.flags |= SourceState::kHasPosition;
    src.dev = reader->dev();
    src.ino = reader->ino();
  } else {
    src.dev = src.ino = src.tail_hash = 0;
  }
  if ((src.flags & SourceState::kPartialTail) != 0 && reader->SkipBlankTail() != LineReader::Tail::kPending) {
    src.flags &= static_cast<uint8_t>(~SourceState::kPartialTail);
  }
  m.cur->end_offset = reader->position();
  const bool can_grow = reader->positionable() && !options.input_final;

  ParseAhead ahead(reader.get(), options.id_from_content, m.config.window_ms);
  m.preparsed = nullptr;
  Line line;
  // Not on a pipe: reading ahead there would hold lines back until chunks fill.
  const bool parse_ahead = options.parse_ahead && reader->positionable();
  auto next_line = [&]() {
    if (!parse_ahead) return reader->Next(&line);
    m.preparsed = ahead.Next();
    if (m.preparsed == nullptr) return false;
    line = m.preparsed->line;
    m.PrefetchFrontSlot(ahead.Ahead(kFrontSlotLookahead));
    m.PrefetchProducer(ahead.Ahead(kProducerLookahead));
    return true;
  };
  while (next_line()) {
    m.cur->end_offset = line.offset;  // after a skipped BOM or blank tail too
    if (!line.terminated && can_grow &&
        (line.overlong || !(m.preparsed != nullptr ? m.preparsed->ok
                                                   : m.parser.Parse(line.data, line.size, line.capacity, &m.event,
                                                                    nullptr)))) {
      note(source + ":" + std::to_string(src.line_no + 1) +
           ": last line has no newline and is not a whole event yet; left unread until it is finished");
      break;
    }
    const uint64_t rejected = src.rejected;
    Status s = m.Apply(line.data, line.size, line.capacity, line.end_offset, line.overlong, options.stop_on_error);
    if (!s.ok()) {
      if (!s.IsGap() && !s.IsBadInput()) return s;
      // Everything before the offending line is committed; it is not.
      if (m.batch_lines > 0) SNAPSINK_RETURN_IF_ERROR(m.Commit());
      m.txn.reset();
      *after = m.cur->src;
      return s;
    }
    if (!line.terminated && reader->positionable() && src.rejected == rejected) {
      src.flags |= SourceState::kPartialTail;  // a writer may still add its '\n'
    }
    if (m.batch_lines >= every) {
      SNAPSINK_RETURN_IF_ERROR(m.Commit());
      if (options.on_commit) options.on_commit(m.cur->src, reader->size());
      SNAPSINK_RETURN_IF_ERROR(m.Begin(source, options.rejects_file));
    }
  }
  ahead.Stop();  // the reader is this thread's again
  SNAPSINK_RETURN_IF_ERROR(reader->status());
  SourceState pending = src;
  pending.offset = m.cur->end_offset;
  if (m.batch_lines > 0 || pending != committed) {  // a moved position commits even without lines
    SNAPSINK_RETURN_IF_ERROR(m.Commit());
    if (options.on_commit) options.on_commit(m.cur->src, reader->size());
  }
  m.txn.reset();
  *after = m.cur->src;
  return Status::OK();
}

}  // namespace snapsink
