#include "engine/ingest.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <xxhash.h>

#include "engine/crash_point.h"
#include "engine/decimal.h"
#include "engine/event_parser.h"
#include "engine/filenames.h"
#include "engine/id_dedup.h"
#include "engine/gap_acceptance.h"
#include "engine/json_escape.h"
#include "engine/line_reader.h"
#include "engine/producer_retention.h"
#include "engine/long_key.h"
#include "engine/parse_ahead.h"
#include "engine/sequencer.h"
#include "engine/timeutil.h"
#include "engine/window_records.h"

namespace snapsink {
namespace {

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
};

constexpr char kBeyondHorizon[] = "beyond the dedup horizon";

std::string GapText(const Gap& g) {
  return g.lo + 1 == g.hi ? std::to_string(g.lo) : std::to_string(g.lo) + ".." + std::to_string(g.hi - 1);
}

}  // namespace

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
  SourceIdCounts src_ids;

  StringMap<CachedProducer> producers;  // for the whole run: we hold the writer lock
  struct CachedAgg {
    Aggregate agg;
    Aggregate* totals = nullptr;  // its (window, metric) entry of `ledger`: one lookup per event
  };
  StringMap<CachedAgg> aggs;            // this batch's touched aggregates
  std::vector<const StringMap<CachedAgg>::value_type*> sorted_aggs;  // Commit's scratch
  struct CachedTotals {
    Aggregate agg;
  };
  StringMap<CachedTotals> ledger;       // this batch's touched (window, metric) totals
  std::unordered_set<int64_t> windows;  // windows this batch applied events to

  // The first failure of LMDB or the file system sticks: after it the
  // in-memory caches no longer match what is committed.
  Status sticky;

  std::unique_ptr<Txn> txn;
  std::string source;
  bool source_loaded = false;
  SourceState src;
  uint64_t batch_lines = 0;
  uint64_t batch_end_offset = 0;
  LineReader* reader = nullptr;  // of the source being read: Commit hashes the bytes before the position

  std::string rejects_file;
  std::string rejects_key;      // its name: the key of Table::kRejectFiles
  std::string file_path;        // absolute path of the file being read ("" for standard input)
  uint64_t rejects_length = 0;  // committed length
  std::string rejects_buf;      // this batch's rejects, written at commit

  int64_t first_window = INT64_MIN;
  int64_t last_window = INT64_MAX;

  std::optional<int64_t> max_ts;
  bool max_ts_loaded = false;
  bool max_ts_dirty = false;

  Status Begin(const std::string& source_name, const std::string& rejects_path);
  Status Commit();
  Status CommitBatch();
  Status AdoptRejectsLength(uint64_t size);
  Status Apply(const char* data, size_t size, size_t capacity, uint64_t end_offset, bool overlong,
               bool stop_on_error);
  Status Reject(const char* data, size_t size, bool overlong, const std::string& why);
  Result<CachedProducer*> Producer(std::string_view id);
  Result<SeqDecision> DecideById(std::string* why);
  void CheckRetired(CachedProducer* p, std::string* why);
  // A storage error met while applying the next line names it.
  Status AtLine(const Status& s) const { return s.Prefixed(source + ":" + std::to_string(src.lines + 1) + ": "); }
  template <typename V>
  Result<V*> Cached(StringMap<V>* map, Table table, const std::string& key);
};

Status Ingester::Impl::Begin(const std::string& source_name, const std::string& rejects_path) {
  txn.reset();  // never two write transactions in one thread: LMDB would wait on itself
  SNAPSINK_RETURN_IF_ERROR(store->BeginWrite(&txn));
  batch_lines = 0;
  if (!max_ts_loaded) {
    SNAPSINK_ASSIGN_OR_RETURN(auto ts, Root::GetMetaU64(txn.get(), meta::kMaxEventTs));
    if (ts) max_ts = static_cast<int64_t>(*ts);
    max_ts_loaded = true;
  }
  if (source_loaded && source_name == source) return Status::OK();
  source = source_name;
  src = SourceState();
  std::string_view v;
  Status s = GetRecord(txn.get(), Table::kSources, source, &v);
  if (s.ok()) {
    SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &src));
  } else if (!s.IsNotFound()) {
    return s;
  }
  SNAPSINK_RETURN_IF_ERROR(ReadSourceIdCounts(txn.get(), source, &src_ids));
  batch_end_offset = src.offset;
  rejects_file = rejects_path;
  rejects_key = rejects_path.substr(rejects_path.find_last_of('/') + 1);
  rejects_length = 0;
  s = txn->Get(Table::kRejectFiles, rejects_key, &v);
  if (s.ok() && v.size() == 8) {
    rejects_length = codec::GetU64(v.data());
  } else if (!s.IsNotFound()) {
    return s.ok() ? Status::Corruption("malformed rejects record in state") : s;
  }
  source_loaded = true;
  return Status::OK();
}

Result<CachedProducer*> Ingester::Impl::Producer(std::string_view id) {
  auto it = producers.find(id);
  if (it != producers.end()) return &it->second;
  CachedProducer p;
  std::string_view v;
  Status s = txn->Get(Table::kProducers, id, &v);
  if (s.ok()) {
    SNAPSINK_RETURN_IF_ERROR(AtLine(codec::Decode(v, &p.state)));
  } else if (!s.IsNotFound()) {
    return AtLine(s);
  }
  SNAPSINK_RETURN_IF_ERROR(LoadProducerLife(txn.get(), id, &p.life));
  return &producers.emplace(std::string(id), std::move(p)).first->second;
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

// An event without seq: a duplicate if its id was seen within the horizon.
// Sets *why for an event too old to check.
Result<SeqDecision> Ingester::Impl::DecideById(std::string* why) {
  SeqDecision d;
  const int64_t cutoff = IdCutoff(max_ts, config.lateness_ms, config.id_horizon_ms);
  if (event.ts_ms < cutoff) {
    *why = kBeyondHorizon;
    return d;
  }
  if (event.id.empty()) {
    id_key = IdKey(event, source, IdSource::kContent, ContentId(event));
  } else {
    id_key = IdKey(event, source, IdSource::kGiven, event.id);
  }
  SNAPSINK_ASSIGN_OR_RETURN(bool seen, ids.Seen(txn.get(), id_key, cutoff));
  if (seen) d.outcome = SeqOutcome::kDuplicate;
  return d;
}

// Retires p if it has been idle past the retention, then refuses an event
// at or below a retired producer's epoch.
void Ingester::Impl::CheckRetired(CachedProducer* p, std::string* why) {
  if (RetireIfIdle(&p->life, p->state, RetentionCutoff(max_ts, config.lateness_ms, config.producer_retention_ms))) {
    p->state = ProducerState();
    p->dirty = true;
  }
  if (p->life.retired && event.epoch <= p->life.retired->epoch) *why = kRetiredReason;
}

Status Ingester::Impl::Reject(const char* data, size_t size, bool overlong, const std::string& why) {
  const uint64_t line_no = src.line_no + 1;
  const uint64_t offset = batch_end_offset;
  rejects_buf.append("{\"source\":");
  rejects_buf.append(JsonQuote(source));
  rejects_buf.append(",\"line\":" + std::to_string(line_no) + ",\"offset\":" + std::to_string(offset) +
                     ",\"reason\":");
  rejects_buf.append(JsonQuote(why));
  rejects_buf.append(",\"raw\":");
  if (!overlong && size > 0 && data[size - 1] == '\r') --size;  // the CR of a CRLF terminator
  rejects_buf.append(JsonQuote(std::string_view(data, size)));
  if (overlong) rejects_buf.append(",\"truncated\":true");
  rejects_buf.append("}\n");
  ++src.rejected;
  return Status::OK();
}

Status Ingester::Impl::Apply(const char* data, size_t size, size_t capacity, uint64_t end_offset,
                             bool overlong, bool stop_on_error) {
  std::string why;
  if (overlong) {
    why = "line longer than 1 MiB";
  } else if (preparsed != nullptr) {
    if (preparsed->ok) {
      event = preparsed->event;
    } else {
      why = preparsed->reason;
    }
  } else if (!parser.Parse(data, size, capacity, &event, &reason)) {
    why = reason;
  }
  const bool stop_on_gap = config.on_gap == OnGap::kStop;
  CachedProducer* producer = nullptr;
  Aggregate* agg = nullptr;
  Aggregate* totals = nullptr;
  SeqDecision d;
  int64_t window = 0;
  bool in_range = true;
  int64_t delta = 0;
  const bool by_id = why.empty() && !event.has_seq;
  if (by_id) {
    SNAPSINK_ASSIGN_OR_RETURN(d, DecideById(&why));
  } else if (why.empty()) {
    SNAPSINK_ASSIGN_OR_RETURN(producer, Producer(event.producer));
    CheckRetired(producer, &why);
    if (why.empty()) {
      d = Decide(producer->state, event.epoch, event.seq, stop_on_gap);
      if (d.outcome == SeqOutcome::kGapStop) {
        // An operator accepted this gap (`snapsink gaps accept`): go on as under --on-gap accept.
        SNAPSINK_ASSIGN_OR_RETURN(bool accepted, GapAccepted(txn.get(), event.producer, event.epoch, d.missing));
        if (accepted) d = Decide(producer->state, event.epoch, event.seq, /*stop_on_gap=*/false);
      }
    }
  }
  if (why.empty()) {
    if (d.outcome == SeqOutcome::kGapStop || d.outcome == SeqOutcome::kGapLimit) {
      return Status::Gap(source + ":" + std::to_string(src.line_no + 1) + ": producer " + std::string(event.producer) +
                         " epoch " + std::to_string(event.epoch) + ": seq " + GapText(d.missing) + " missing" +
                         (d.outcome == SeqOutcome::kGapLimit ? " (more than 1024 open gaps)" : ""));
    }
    window = WindowStart(event.ts_ms, config.window_ms);
    in_range = window >= first_window && window <= last_window;
    if (window < kMinTimestampMs) {
      // A window size that does not divide the time since 0000-01-01 would
      // start this event's window before year 0000, which no name can hold.
      why = "field ts: its window would start before 0000-01-01T00:00:00Z";
    } else if (event.retract && event.value_micros == INT64_MIN) {
      // Its negation is one past INT64_MAX micros.
      why = "field value: the retract of -9223372036854.775808 would overflow";
    } else if (d.outcome == SeqOutcome::kApply && in_range) {
      delta = event.retract ? -event.value_micros : event.value_micros;
      codec::AggKeyInto(&key_scratch, window, event.metric, event.key);
      SNAPSINK_ASSIGN_OR_RETURN(CachedAgg * cached, Cached(&aggs, Table::kAggs, key_scratch));
      if (cached->totals == nullptr) {
        codec::LedgerKeyInto(&ledger_key_scratch, window, event.metric);
        SNAPSINK_ASSIGN_OR_RETURN(CachedTotals * t, Cached(&ledger, Table::kLedger, ledger_key_scratch));
        cached->totals = &t->agg;
      }
      agg = &cached->agg;
      totals = cached->totals;
      int64_t unused;
      if (!AddMicros(agg->sum_micros, delta, &unused) || !AddMicros(totals->sum_micros, delta, &unused)) {
        why = "field value: sum would overflow";
      }
    }
  }
  if (!why.empty()) {
    if (stop_on_error) return Status::BadInput(source + ":" + std::to_string(src.line_no + 1) + ": " + why);
    SNAPSINK_RETURN_IF_ERROR(Reject(data, size, overlong, why));
    if (why == kBeyondHorizon) ++src_ids.rejected_horizon;
    if (why == kRetiredReason) ++src_ids.rejected_retired;
  } else if (d.outcome == SeqOutcome::kDuplicate) {
    ++src.duplicates;
    if (by_id) ++src_ids.duplicates_id;
    if (!by_id) HeardAt(&producer->life, event.ts_ms);
  } else if (d.outcome == SeqOutcome::kFenced) {
    ++src.fenced;
    HeardAt(&producer->life, event.ts_ms);
  } else {
    if (by_id) {
      SNAPSINK_RETURN_IF_ERROR(ids.Insert(txn.get(), id_key, event.ts_ms));
    } else {
      Accept(&producer->state, event.epoch, event.seq);
      producer->dirty = true;
      HeardAt(&producer->life, event.ts_ms);
      if (producer->life.retired) {  // back at a higher epoch: afresh
        producer->life.retired.reset();
        producer->life.tombstone_dirty = true;
      }
    }
    if (!in_range) {
      ++src.ignored;
    } else {
      const int64_t step = event.retract ? -1 : 1;
      for (Aggregate* a : {agg, totals}) {
        a->count += step;
        a->sum_micros += delta;
        a->events += 1;
      }
      windows.insert(window);
      if (!max_ts || event.ts_ms > *max_ts) {
        max_ts = event.ts_ms;
        max_ts_dirty = true;
      }
      ++src.applied;
    }
  }
  ++src.lines;
  ++src.line_no;
  ++batch_lines;
  batch_end_offset = end_offset;
  return Status::OK();
}

Status Ingester::Impl::Commit() {
  // A storage error names the source and the batch's last line.
  Status s = CommitBatch();
  if (s.ok()) return s;
  return s.Prefixed(source + ":" + std::to_string(src.lines) + ": (committing the batch that ends here) ");
}

Status Ingester::Impl::CommitBatch() {
  std::string value;
  for (auto& [id, p] : producers) {
    SNAPSINK_RETURN_IF_ERROR(CommitProducerLife(txn.get(), id, &p.life));
    if (!p.dirty) continue;
    if (p.life.retired) {
      SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducers, id));
    } else {
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kProducers, id, codec::Encode(p.state)));
    }
    p.dirty = false;
  }
  // The watermark moved: drop expired ids and retire idle producers.
  SNAPSINK_RETURN_IF_ERROR(IdIndex::Expire(txn.get(), IdCutoff(max_ts, config.lateness_ms, config.id_horizon_ms)));
  std::vector<std::string> retired;
  SNAPSINK_RETURN_IF_ERROR(RetireIdleProducers(
      txn.get(), RetentionCutoff(max_ts, config.lateness_ms, config.producer_retention_ms), &retired));
  // events == 0: only looked at for an event that was then rejected (sum
  // overflow) or ignored; it must not leave an empty row behind.
  // In key order: a batch of new keys spread over a large table then walks
  // the B-tree once, left to right, instead of at random (issue 13).
  sorted_aggs.clear();
  for (const auto& entry : aggs) {
    if (entry.second.agg.events != 0) sorted_aggs.push_back(&entry);
  }
  std::sort(sorted_aggs.begin(), sorted_aggs.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : sorted_aggs) {
    codec::EncodeInto(&value, entry->second.agg);
    SNAPSINK_RETURN_IF_ERROR(PutRecord(txn.get(), Table::kAggs, entry->first, value));
  }
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
  if (max_ts_dirty) {
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn.get(), meta::kMaxEventTs, static_cast<uint64_t>(*max_ts)));
  }
  if (!rejects_buf.empty()) {
    // The rejects are durable before the offset that skips their lines is.
    std::unique_ptr<WritableFile> f;
    if (const size_t slash = rejects_file.find_last_of('/'); slash != std::string::npos) {
      SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, rejects_file.substr(0, slash)));  // deleted by hand: made again
    }
    SNAPSINK_RETURN_IF_ERROR(env->NewAppendableFile(rejects_file, &f));
    SNAPSINK_RETURN_IF_ERROR(f->Append(rejects_buf));
    SNAPSINK_RETURN_IF_ERROR(f->Sync());
    SNAPSINK_RETURN_IF_ERROR(f->Close());
    // ... and so is the file's name, the first time it holds committed lines.
    if (rejects_length == 0) {
      const size_t slash = rejects_file.find_last_of('/');
      SNAPSINK_RETURN_IF_ERROR(env->SyncDir(slash == std::string::npos ? "." : rejects_file.substr(0, slash)));
    }
    rejects_length += rejects_buf.size();
    std::string len;
    codec::PutU64(&len, rejects_length);
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRejectFiles, rejects_key, len));
  }
  src.offset = batch_end_offset;
  if (reader != nullptr && reader->positionable()) SNAPSINK_RETURN_IF_ERROR(reader->TailHash(src.offset, &src.tail_hash));
  SNAPSINK_RETURN_IF_ERROR(PutRecord(txn.get(), Table::kSources, source, codec::Encode(src)));
  if (!file_path.empty()) SNAPSINK_RETURN_IF_ERROR(PutRecord(txn.get(), Table::kMeta, SourcePathKey(source), file_path));
  if (src_ids != SourceIdCounts()) {
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSourceIds, SourceIdsKey(source), Encode(src_ids)));
  }
  MaybeCrash("ingest.before_commit");
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  txn.reset();
  for (const std::string& id : retired) producers.erase(id);  // reloaded as retired on next touch
  MaybeCrash("ingest.after_commit");
  aggs.clear();
  ledger.clear();
  windows.clear();
  rejects_buf.clear();
  max_ts_dirty = false;
  batch_lines = 0;
  return Status::OK();
}

// The rejects file was deleted or cut by hand: what is there now is its
// committed length, recorded before any batch appends to it, so that a
// crashed batch's rejects are cut back to it and not kept twice.
Status Ingester::Impl::AdoptRejectsLength(uint64_t size) {
  std::string len;
  codec::PutU64(&len, size);
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRejectFiles, rejects_key, len));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  txn.reset();
  rejects_length = size;
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
  if (!s.ok() && s.code() != Status::Code::kGap && s.code() != Status::Code::kBadInput) *sticky = s;
  return s;
}
}  // namespace

Status Ingester::Run(const IngestOptions& options, SourceState* after, SourceState* before) {
  SNAPSINK_RETURN_IF_ERROR(impl_->sticky);
  Status s = RunSource(options, after, before);
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
  SNAPSINK_RETURN_IF_ERROR(m.Begin(source, options.rejects_file));
  m.parser.SetContentIds(options.id_from_content);
  if (before != nullptr) *before = m.src;
  auto note = [&](const std::string& text) {
    if (options.on_note) {
      options.on_note(text);
    } else {
      std::fprintf(stderr, "%s\n", text.c_str());
    }
  };

  // Lines of a batch that never committed may have left rejects behind.
  uint64_t size = 0;
  Status fs = m.env->GetFileSize(m.rejects_file, &size);
  if (fs.ok() && size > m.rejects_length) {
    SNAPSINK_RETURN_IF_ERROR(m.env->TruncateFile(m.rejects_file, m.rejects_length));
  } else if ((fs.ok() || fs.IsNotFound()) && size < m.rejects_length) {
    SNAPSINK_RETURN_IF_ERROR(m.AdoptRejectsLength(fs.ok() ? size : 0));
  }

  m.file_path.clear();
  if (options.path != "-") {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(options.path, ec);
    if (!ec) m.file_path = abs.lexically_normal().string();
  }
  std::unique_ptr<LineReader> reader;
  SNAPSINK_RETURN_IF_ERROR(LineReader::Open(options.path, &reader));
  m.reader = reader.get();
  const SourceState committed = m.src;
  SourceState& src = m.src;
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
  m.batch_end_offset = reader->position();
  const bool can_grow = reader->positionable() && !options.input_final;

  ParseAhead ahead(reader.get(), options.id_from_content);
  m.preparsed = nullptr;
  Line line;
  // Not on a pipe: reading ahead there would hold lines back until chunks fill.
  const bool parse_ahead = options.parse_ahead && reader->positionable();
  auto next_line = [&]() {
    if (!parse_ahead) return reader->Next(&line);
    m.preparsed = ahead.Next();
    if (m.preparsed != nullptr) line = m.preparsed->line;
    return m.preparsed != nullptr;
  };
  while (next_line()) {
    m.batch_end_offset = line.offset;  // after a skipped BOM or blank tail too
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
      if (s.code() != Status::Code::kGap && s.code() != Status::Code::kBadInput) return s;
      // Everything before the offending line is committed; it is not.
      if (m.batch_lines > 0) SNAPSINK_RETURN_IF_ERROR(m.Commit());
      m.txn.reset();
      *after = m.src;
      return s;
    }
    if (!line.terminated && reader->positionable() && src.rejected == rejected) {
      src.flags |= SourceState::kPartialTail;  // a writer may still add its '\n'
    }
    if (m.batch_lines >= every) {
      SNAPSINK_RETURN_IF_ERROR(m.Commit());
      if (options.on_commit) options.on_commit(m.src, reader->size());
      SNAPSINK_RETURN_IF_ERROR(m.Begin(source, options.rejects_file));
    }
  }
  SNAPSINK_RETURN_IF_ERROR(reader->status());
  SourceState pending = src;
  pending.offset = m.batch_end_offset;
  if (m.batch_lines > 0 || pending != committed) {  // a moved position commits even without lines
    SNAPSINK_RETURN_IF_ERROR(m.Commit());
    if (options.on_commit) options.on_commit(m.src, reader->size());
  }
  m.txn.reset();
  *after = m.src;
  return Status::OK();
}

}  // namespace snapsink
