#include "engine/state_codec.h"

#include <bit>
#include <cstring>

#include "engine/coding.h"
#include "engine/kind_sketch.h"

namespace snapsink::codec {

void AppendWindowKey(std::string* dst, int64_t window_ms) {
  uint64_t u = static_cast<uint64_t>(window_ms) ^ (uint64_t{1} << 63);
  char bytes[8];  // one append, not eight push_backs: every event's aggregate key starts here
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((u >> (56 - 8 * i)) & 0xff);
  dst->append(bytes, sizeof(bytes));
}

std::string WindowKey(int64_t window_ms) {
  std::string key;
  AppendWindowKey(&key, window_ms);
  return key;
}

int64_t DecodeWindowKey(std::string_view src) {
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>(src[i]);
  return static_cast<int64_t>(u ^ (uint64_t{1} << 63));
}

void AppendEscapedMetric(std::string* dst, std::string_view metric) {
  if (std::memchr(metric.data(), '\0', metric.size()) == nullptr) {  // the common case
    dst->append(metric);
    dst->append(2, '\0');
    return;
  }
  for (char c : metric) {
    dst->push_back(c);
    if (c == '\0') dst->push_back('\xff');
  }
  dst->push_back('\0');
  dst->push_back('\0');
}

bool SplitEscapedMetric(std::string_view src, std::string* metric, std::string_view* rest) {
  metric->clear();
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] != '\0') {
      metric->push_back(src[i]);
      continue;
    }
    if (i + 1 >= src.size()) return false;
    if (src[i + 1] == '\0') {
      *rest = src.substr(i + 2);
      return true;
    }
    if (src[i + 1] != '\xff') return false;
    metric->push_back('\0');
    ++i;
  }
  return false;
}

namespace {
// The window key, the escaped metric and `key` written into *dst in one
// pass (every event's aggregate key is built here): sized once, copied with
// memcpy. A metric holding a zero byte takes the escaping path.
void WindowMetricKeyInto(std::string* dst, int64_t window_ms, std::string_view metric, std::string_view key) {
  if (std::memchr(metric.data(), '\0', metric.size()) != nullptr) {
    dst->clear();
    AppendWindowKey(dst, window_ms);
    AppendEscapedMetric(dst, metric);
    dst->append(key);
    return;
  }
  dst->resize(kPlainAggKeyExtra + metric.size() + key.size());
  PlainAggKeyTo(dst->data(), window_ms, metric, key);
}
}  // namespace

void PlainAggKeyTo(char* out, int64_t window_ms, std::string_view metric, std::string_view key) {
  uint64_t u = static_cast<uint64_t>(window_ms) ^ (uint64_t{1} << 63);
  // Big-endian, as AppendWindowKey writes it: one store, not eight (every
  // event's aggregate key starts here).
  if constexpr (std::endian::native == std::endian::little) u = __builtin_bswap64(u);
  std::memcpy(out, &u, 8);
  out += 8;
  if (!metric.empty()) std::memcpy(out, metric.data(), metric.size());
  out += metric.size();
  out[0] = '\0';
  out[1] = '\0';
  out += 2;
  if (!key.empty()) std::memcpy(out, key.data(), key.size());
}

void AggKeyInto(std::string* dst, int64_t window_ms, std::string_view metric, std::string_view key) {
  WindowMetricKeyInto(dst, window_ms, metric, key);
}

void LedgerKeyInto(std::string* dst, int64_t window_ms, std::string_view metric) {
  WindowMetricKeyInto(dst, window_ms, metric, std::string_view());
}

std::string SealKey(int64_t window_ms, uint64_t version) {
  std::string k;
  AppendWindowKey(&k, window_ms);
  for (int shift = 56; shift >= 0; shift -= 8) k.push_back(static_cast<char>((version >> shift) & 0xff));
  return k;
}

void DecodeSealKey(std::string_view key, int64_t* window_ms, uint64_t* version) {
  *window_ms = DecodeWindowKey(key);
  uint64_t v = 0;
  for (int i = 8; i < 16; ++i) v = (v << 8) | static_cast<uint8_t>(key[i]);
  *version = v;
}

namespace {

// A cursor over an encoded value that remembers whether it ran short.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  uint64_t U64() { return Take(8) ? GetU64(s_.data() + pos_ - 8) : 0; }
  size_t remaining() const { return ok_ ? s_.size() - pos_ : 0; }
  uint32_t U32() { return Take(4) ? GetU32(s_.data() + pos_ - 4) : 0; }
  uint8_t U8() { return Take(1) ? static_cast<uint8_t>(s_[pos_ - 1]) : 0; }
  std::string Bytes(size_t n) { return Take(n) ? std::string(s_.substr(pos_ - n, n)) : std::string(); }
  Status Finish(const char* what) const {
    if (!ok_ || pos_ != s_.size()) return Status::Corruption(std::string("malformed ") + what + " record in state");
    return Status::OK();
  }

 private:
  bool Take(size_t n) {
    if (!ok_ || s_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    pos_ += n;
    return true;
  }
  std::string_view s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void PutAggregate(std::string* dst, const Aggregate& v) {
  PutU64(dst, static_cast<uint64_t>(v.count));
  PutU64(dst, static_cast<uint64_t>(v.sum_micros));
  PutU64(dst, static_cast<uint64_t>(v.events));
}

// An aggregate record: the three fields above, then (a minmax metric's,
// told apart by its size: 40 bytes, not 24) its min and max, then (a
// quantiles metric's: more than 40 bytes) its sketch to the end.
void PutAggregateRecord(std::string* dst, const Aggregate& v) {
  PutAggregate(dst, v);
  if (!v.has_range) return;
  PutU64(dst, static_cast<uint64_t>(v.min_micros));
  PutU64(dst, static_cast<uint64_t>(v.max_micros));
  dst->append(v.sketch);
}

Aggregate GetAggregate(Reader* r) {
  Aggregate a;
  a.count = static_cast<int64_t>(r->U64());
  a.sum_micros = static_cast<int64_t>(r->U64());
  a.events = static_cast<int64_t>(r->U64());
  return a;
}

}  // namespace

// A producer record: epoch, next seq, the gaps, then either nothing or the
// u64 spilled count (formats 3, 4: told apart by size, 16 bytes per gap), or
// (format 5) a flags byte, the spilled count if kProducerExtSpilled, and the
// last-seen time and idle key time if kProducerExtSeen. The flags byte makes
// the tail's size 1 more than a multiple of 8, so the three never collide.
constexpr uint8_t kProducerExtSpilled = 1;
constexpr uint8_t kProducerExtSeen = 2;

void EncodeProducerInto(std::string* dst, const ProducerState& v, const std::optional<ProducerSeen>& seen) {
  // Sized once and written in place: a commit writes one per producer that sent.
  const size_t spilled = v.spilled != 0 ? 8 : 0;
  dst->resize(16 + 16 * v.gaps.size() + (seen ? 1 + spilled + 16 : spilled));
  char* out = dst->data();
  coding::EncodeFixed32(out, v.epoch);
  coding::EncodeFixed64(out + 4, v.next_seq);
  coding::EncodeFixed32(out + 12, static_cast<uint32_t>(v.gaps.size()));
  out += 16;
  for (const Gap& g : v.gaps) {
    coding::EncodeFixed64(out, g.lo);
    coding::EncodeFixed64(out + 8, g.hi);
    out += 16;
  }
  if (!seen) {
    if (v.spilled != 0) coding::EncodeFixed64(out, v.spilled);  // absent when 0: records as before spilling existed
    return;
  }
  *out++ = static_cast<char>(kProducerExtSeen | (v.spilled != 0 ? kProducerExtSpilled : 0));
  if (v.spilled != 0) {
    coding::EncodeFixed64(out, v.spilled);
    out += 8;
  }
  coding::EncodeFixed64(out, static_cast<uint64_t>(seen->last_seen));
  coding::EncodeFixed64(out + 8, static_cast<uint64_t>(seen->idle_at));
}

std::string EncodeProducer(const ProducerState& v, const std::optional<ProducerSeen>& seen) {
  std::string s;
  EncodeProducerInto(&s, v, seen);
  return s;
}

std::string Encode(const ProducerState& v) { return EncodeProducer(v, std::nullopt); }

Status DecodeProducer(std::string_view src, ProducerState* v, std::optional<ProducerSeen>* seen) {
  Reader r(src);
  v->epoch = r.U32();
  v->next_seq = r.U64();
  uint32_t n = r.U32();
  if (n > (src.size() / 16)) return Status::Corruption("malformed producer record in state");
  v->gaps.resize(n);
  for (Gap& g : v->gaps) {
    g.lo = r.U64();
    g.hi = r.U64();
  }
  if (seen != nullptr) seen->reset();
  v->spilled = 0;
  if (r.remaining() == 8) {
    v->spilled = r.U64();
  } else if (r.remaining() != 0) {
    const uint8_t flags = r.U8();
    if ((flags & ~(kProducerExtSpilled | kProducerExtSeen)) != 0) {
      return Status::Corruption("malformed producer record in state");
    }
    if (flags & kProducerExtSpilled) v->spilled = r.U64();
    if (flags & kProducerExtSeen) {
      ProducerSeen ps;
      ps.last_seen = static_cast<int64_t>(r.U64());
      ps.idle_at = static_cast<int64_t>(r.U64());
      if (seen != nullptr) *seen = ps;
    }
  }
  return r.Finish("producer");
}

Status Decode(std::string_view src, ProducerState* v) { return DecodeProducer(src, v, nullptr); }

// Presence bits of the format 3 extension, kept in the flags byte beside
// SourceState's own flags (do not change these values).
constexpr uint8_t kExtPosition = 4;
constexpr uint8_t kExtProgress = 8;
constexpr uint8_t kExtNewestTs = 16;
constexpr uint8_t kExtOwner = 32;  // format 4: the owner epoch follows the position
constexpr size_t kSourceV1Size = 7 * 8;
constexpr size_t kSourceV2Size = 11 * 8 + 1;

std::string Encode(const SourceState& v) {
  std::string s;
  for (uint64_t x : {v.offset, v.lines, v.applied, v.duplicates, v.fenced, v.rejected, v.ignored, v.dev, v.ino,
                     v.tail_hash, v.line_no}) {
    PutU64(&s, x);
  }
  uint8_t ext = 0;
  if (v.position) ext |= kExtPosition;
  if (v.progress) ext |= kExtProgress;
  if (v.newest_ts_ms) ext |= kExtNewestTs;
  if (v.owner_epoch) ext |= kExtOwner;
  s.push_back(static_cast<char>((v.flags & 3) | ext));
  if (ext == 0) return s;  // format 2, byte for byte
  // Format 3: progress read, end, newest event time, position length, position.
  PutU64(&s, v.progress ? v.progress->read : 0);
  PutU64(&s, v.progress ? v.progress->end : 0);
  PutU64(&s, static_cast<uint64_t>(v.newest_ts_ms.value_or(0)));
  PutU32(&s, static_cast<uint32_t>(v.position ? v.position->size() : 0));
  if (v.position) s.append(*v.position);
  if (v.owner_epoch) PutU64(&s, *v.owner_epoch);
  return s;
}

Status Decode(std::string_view src, SourceState* v) {
  *v = SourceState();
  if (src.size() == kSourceV1Size) {  // format 1: no position identity; the file is read again from its start
    Reader r(src);
    for (uint64_t* x : {&v->offset, &v->lines, &v->applied, &v->duplicates, &v->fenced, &v->rejected, &v->ignored}) {
      *x = r.U64();
    }
    return r.Finish("source");
  }
  Reader r(src);
  for (uint64_t* x : {&v->offset, &v->lines, &v->applied, &v->duplicates, &v->fenced, &v->rejected, &v->ignored,
                      &v->dev, &v->ino, &v->tail_hash, &v->line_no}) {
    *x = r.U64();
  }
  const uint8_t flags = r.U8();
  v->flags = flags & 3;
  const uint8_t ext = flags & (kExtPosition | kExtProgress | kExtNewestTs | kExtOwner);
  if ((flags & ~(3 | kExtPosition | kExtProgress | kExtNewestTs | kExtOwner)) != 0 || (ext == 0) != (src.size() == kSourceV2Size)) {
    return Status::Corruption("malformed source record in state");
  }
  if (ext != 0) {
    SourceState::Progress p;
    p.read = r.U64();
    p.end = r.U64();
    const int64_t newest = static_cast<int64_t>(r.U64());
    const uint32_t n = r.U32();
    std::string position = r.Bytes(n);
    if (ext & kExtProgress) v->progress = p;
    if (ext & kExtNewestTs) v->newest_ts_ms = newest;
    if (ext & kExtPosition) v->position = std::move(position);
    if (ext & kExtOwner) v->owner_epoch = r.U64();
  }
  return r.Finish("source");
}

void EncodeInto(std::string* dst, const Aggregate& v) {
  dst->clear();
  PutAggregateRecord(dst, v);
}

std::string Encode(const Aggregate& v) {
  std::string s;
  PutAggregateRecord(&s, v);
  return s;
}

Status Decode(std::string_view src, Aggregate* v) {
  Reader r(src);
  *v = GetAggregate(&r);
  if (r.remaining() >= 16) {
    v->has_range = true;
    v->min_micros = static_cast<int64_t>(r.U64());
    v->max_micros = static_cast<int64_t>(r.U64());
    if (r.remaining() > 0) {
      v->sketch = r.Bytes(r.remaining());
      if (!CheckSketch(v->sketch).ok()) return Status::Corruption("malformed sketch of an aggregate record in state");
    }
  }
  return r.Finish("aggregate");
}

std::string Encode(const WindowState& v) {
  std::string s;
  PutU64(&s, v.last_version);
  s.push_back(v.dirty ? 1 : 0);
  return s;
}

Status Decode(std::string_view src, WindowState* v) {
  Reader r(src);
  v->last_version = r.U64();
  v->dirty = r.U8() != 0;
  return r.Finish("window");
}

std::string Encode(const SealRecord& v) {
  std::string s;
  s.push_back(static_cast<char>(v.state));
  PutU64(&s, v.rows);
  PutU32(&s, static_cast<uint32_t>(v.ledger.size()));
  for (const LedgerEntry& e : v.ledger) {
    PutU32(&s, static_cast<uint32_t>(e.metric.size()));
    s.append(e.metric);
    PutAggregate(&s, e.totals);
  }
  return s;
}

Status Decode(std::string_view src, SealRecord* v) {
  Reader r(src);
  uint8_t state = r.U8();
  if (state < 1 || state > 3) return Status::Corruption("malformed seal record in state");
  v->state = static_cast<SealState>(state);
  v->rows = r.U64();
  uint32_t n = r.U32();
  if (n > src.size()) return Status::Corruption("malformed seal record in state");
  v->ledger.resize(n);
  for (LedgerEntry& e : v->ledger) {
    e.metric = r.Bytes(r.U32());
    e.totals = GetAggregate(&r);
  }
  return r.Finish("seal");
}

}  // namespace snapsink::codec

namespace snapsink {

void MergeSketch(Aggregate* to, const Aggregate& a) {
  if (to->sketch == kBadSketch) return;
  std::string merged = to->sketch;
  if (!MergeSketches(&merged, a.sketch).ok()) merged.assign(1, kBadSketch[0]);
  to->sketch.swap(merged);
}

}  // namespace snapsink
