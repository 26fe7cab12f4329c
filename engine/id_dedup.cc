#include "engine/id_dedup.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include <xxhash.h>

#include "engine/state_codec.h"

namespace snapsink {
namespace {

std::string Key16(const XXH128_hash_t& h) {
  std::string k(kIdKeySize, '\0');
  std::memcpy(k.data(), &h.high64, 8);
  std::memcpy(k.data() + 8, &h.low64, 8);
  return k;
}

void PutLengthPrefixed(std::string* dst, std::string_view s) {
  codec::PutU32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s);
}

// kIdExpiry key: time in window-key order, then the id key.
std::string ExpiryKey(int64_t ts, std::string_view key) {
  std::string k;
  codec::AppendWindowKey(&k, ts);
  k.append(key);
  return k;
}

constexpr int kBloomHashes = 8;
constexpr uint64_t kBloomBitsPerKey = 12;  // with 8 hashes: about 0.3% false positives at capacity
constexpr uint64_t kMinBloomCapacity = uint64_t{1} << 16;

}  // namespace

std::string IdKey(const Event& ev, std::string_view source, IdSource kind, std::string_view id) {
  thread_local std::string buf;
  buf.clear();
  buf.push_back(static_cast<char>(kind));
  // A producer and a source of the same name are different scopes.
  buf.push_back(ev.producer.empty() ? 's' : 'p');
  PutLengthPrefixed(&buf, ev.producer.empty() ? source : ev.producer);
  buf.append(id);
  return Key16(XXH3_128bits(buf.data(), buf.size()));
}

std::string ContentId(const Event& ev) {
  thread_local std::string buf;
  buf.clear();
  PutLengthPrefixed(&buf, ev.producer);
  codec::PutU64(&buf, static_cast<uint64_t>(ev.ts_ms));
  PutLengthPrefixed(&buf, ev.metric);
  PutLengthPrefixed(&buf, ev.key);
  codec::PutU64(&buf, static_cast<uint64_t>(ev.value_micros));
  buf.push_back(ev.retract ? 'r' : 'a');
  return Key16(XXH3_128bits(buf.data(), buf.size()));
}

int64_t IdCutoff(std::optional<int64_t> max_event_ts, int64_t lateness_ms, int64_t horizon_ms) {
  if (!max_event_ts) return INT64_MIN;
  // Event times lie within years 0..9999 (about +-2^48 ms); durations may be anything.
  const __int128 c = static_cast<__int128>(*max_event_ts) - lateness_ms - horizon_ms;
  return c < INT64_MIN ? INT64_MIN : static_cast<int64_t>(c);
}

std::string SourceIdsKey(std::string_view source) {
  if (source.size() <= 256) return std::string(source);
  return "\xff" + Key16(XXH3_128bits(source.data(), source.size()));
}

std::string Encode(const SourceIdCounts& c) {
  std::string s;
  codec::PutU64(&s, c.duplicates_id);
  codec::PutU64(&s, c.rejected_horizon);
  codec::PutU64(&s, c.rejected_retired);
  return s;
}

Status Decode(std::string_view src, SourceIdCounts* c) {
  if (src.size() != 24) return Status::Corruption("malformed source id-counts record in state");
  c->duplicates_id = codec::GetU64(src.data());
  c->rejected_horizon = codec::GetU64(src.data() + 8);
  c->rejected_retired = codec::GetU64(src.data() + 16);
  return Status::OK();
}

Status ReadSourceIdCounts(Txn* txn, std::string_view source, SourceIdCounts* c) {
  *c = SourceIdCounts();
  std::string_view v;
  Status s = txn->Get(Table::kSourceIds, SourceIdsKey(source), &v);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  return Decode(v, c);
}

BloomFilter::BloomFilter(uint64_t capacity) : capacity_(capacity) {
  const uint64_t words = (capacity * kBloomBitsPerKey + 63) / 64;
  bits_.assign(words == 0 ? 1 : words, 0);
}

// The key is already a uniform hash: its halves drive double hashing.
void BloomFilter::Add(std::string_view key16) {
  uint64_t h1, h2;
  std::memcpy(&h1, key16.data(), 8);
  std::memcpy(&h2, key16.data() + 8, 8);
  const uint64_t nbits = bits_.size() * 64;
  for (int i = 0; i < kBloomHashes; ++i) {
    const uint64_t b = (h1 + i * h2) % nbits;
    bits_[b / 64] |= uint64_t{1} << (b % 64);
  }
  ++added_;
}

bool BloomFilter::MayContain(std::string_view key16) const {
  uint64_t h1, h2;
  std::memcpy(&h1, key16.data(), 8);
  std::memcpy(&h2, key16.data() + 8, 8);
  const uint64_t nbits = bits_.size() * 64;
  for (int i = 0; i < kBloomHashes; ++i) {
    const uint64_t b = (h1 + i * h2) % nbits;
    if ((bits_[b / 64] & (uint64_t{1} << (b % 64))) == 0) return false;
  }
  return true;
}

Status IdIndex::Build(Txn* txn, uint64_t min_capacity) {
  uint64_t held = 0, bytes = 0;
  SNAPSINK_RETURN_IF_ERROR(txn->Stat(Table::kIds, &held, &bytes));
  uint64_t capacity = std::max({kMinBloomCapacity, 2 * held, min_capacity});
  filter_ = BloomFilter(capacity);
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kIds, "", [&](std::string_view k, std::string_view) {
    filter_.Add(k);
    return true;
  }));
  built_ = true;
  return Status::OK();
}

Result<bool> IdIndex::Seen(Txn* txn, std::string_view key, int64_t cutoff) {
  if (!built_) SNAPSINK_RETURN_IF_ERROR(Build(txn, 0));
  expired_.reset();
  if (!filter_.MayContain(key)) return false;
  ++btree_lookups_;
  std::string_view v;
  Status s = txn->Get(Table::kIds, key, &v);
  if (s.IsNotFound()) return false;
  SNAPSINK_RETURN_IF_ERROR(s);
  if (v.size() != 8) return Status::Corruption("malformed id record in state");
  const int64_t ts = static_cast<int64_t>(codec::GetU64(v.data()));
  if (ts >= cutoff) return true;
  expired_ = ts;
  return false;
}

Status IdIndex::Insert(Txn* txn, std::string_view key, int64_t ts) {
  if (expired_) {
    // Held but expired (not yet deleted): it starts again from ts.
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kIdExpiry, ExpiryKey(*expired_, key)));
    expired_.reset();
  }
  std::string value;
  codec::PutU64(&value, static_cast<uint64_t>(ts));
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kIds, key, value));
  SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kIdExpiry, ExpiryKey(ts, key), ""));
  if (filter_.added() >= filter_.capacity()) {
    // Full: rebuild bigger from the table (expired ids are gone from it by now).
    return Build(txn, 2 * filter_.capacity());
  }
  filter_.Add(key);
  return Status::OK();
}

Status IdIndex::Expire(Txn* txn, int64_t cutoff) {
  if (cutoff == INT64_MIN) return Status::OK();
  std::string end;
  codec::AppendWindowKey(&end, cutoff);
  std::vector<std::string> expired;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kIdExpiry, "", [&](std::string_view k, std::string_view) {
    if (k.size() != 8 + kIdKeySize || k.substr(0, 8) >= end) return false;
    expired.emplace_back(k);
    return true;
  }));
  for (const std::string& k : expired) {
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kIdExpiry, k));
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kIds, std::string_view(k).substr(8)));
  }
  return Status::OK();
}

}  // namespace snapsink
