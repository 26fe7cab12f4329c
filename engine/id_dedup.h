// Exactly once for events without a sequence number: dedup by event id
// within an id horizon of event time (README "The id horizon bet").
//
// An event with `id` and no `seq` is known by its id key: the 128-bit XXH3 of
// its scope (the producer if it has one, else the source name, each tagged so
// a producer never shares ids with a source of the same name) and its id.
// With ingest --id-from-content the id is itself the 128-bit XXH3 of the
// event's canonical fields (ContentId). Hashing keeps every key 16 bytes, far
// under LMDB's 511-byte key limit, whatever the lengths of producer, source
// and id. The collision bet: two different (scope, id) pairs share a key with
// probability about n^2 / 2^129 for n ids held, below 10^-18 for 10^10 ids;
// a collision would drop one event as a duplicate.
//
// The horizon: the cutoff is the watermark (greatest applied event time minus
// the lateness) minus the id horizon set at init. An id is held, in
// Table::kIds with the event time of its first delivery, while that time is
// at or after the cutoff; an event whose time is before the cutoff cannot be
// checked and is rejected ("beyond the dedup horizon"), never applied twice.
// As the watermark moves, expired ids are range-deleted through
// Table::kIdExpiry (event time | key, in time order) in the same transaction
// as the batch's effects, so the ids held are about event rate x (horizon +
// lateness). The cutoff only grows, so whether an expired id is still in the
// table (deleted at the next commit) never changes an outcome: a lookup
// treats an id held with a time before the cutoff as absent.
//
// A Bloom filter over the held keys, built from the table when an IdIndex is
// first used and grown (rebuilt from the table) as it fills, answers the
// common new-id case without a B-tree lookup.
//
// Not thread-safe; one IdIndex per Ingester.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event.h"
#include "engine/status.h"
#include "engine/store.h"

namespace snapsink {

inline constexpr size_t kIdKeySize = 16;

// Where an event's id comes from; part of the key.
enum class IdSource : uint8_t { kGiven = 1, kContent = 2 };  // hashed into keys; do not change

// The id key of an event without seq: scope is event.producer, or the source
// name when the event has none. For IdSource::kContent, id is ContentId(ev).
std::string IdKey(const Event& ev, std::string_view source, IdSource kind, std::string_view id);

// 16 bytes: the 128-bit XXH3 of (producer, ts, metric, key, value, op) in a
// fixed binary form, so two spellings of the same event (RFC 3339 or ms,
// "1.50" or 1.5) get the same id.
std::string ContentId(const Event& ev);

// The earliest event time still deduplicated by id; INT64_MIN before any
// event was applied. Saturates rather than overflowing.
int64_t IdCutoff(std::optional<int64_t> max_event_ts, int64_t lateness_ms, int64_t horizon_ms);

// Per source, beside SourceState (Table::kSourceIds): the parts of its
// `duplicates` and `rejected` counts that this file and producer retention add.
struct SourceIdCounts {
  uint64_t duplicates_id = 0;     // of duplicates: an id seen within the horizon
  uint64_t rejected_horizon = 0;  // of rejected: "beyond the dedup horizon"
  uint64_t rejected_retired = 0;  // of rejected: "producer retired; bump its epoch"
  bool operator==(const SourceIdCounts&) const = default;
};
// The key of a source in Table::kSourceIds: the name itself up to 256 bytes,
// else 0xFF and the name's 128-bit XXH3 (any name fits LMDB's key limit).
std::string SourceIdsKey(std::string_view source);
std::string Encode(const SourceIdCounts& c);
Status Decode(std::string_view src, SourceIdCounts* c);
Status ReadSourceIdCounts(Txn* txn, std::string_view source, SourceIdCounts* c);  // absent: zeros

class BloomFilter {
 public:
  explicit BloomFilter(uint64_t capacity = 0);
  void Add(std::string_view key16);
  bool MayContain(std::string_view key16) const;
  uint64_t added() const { return added_; }
  uint64_t capacity() const { return capacity_; }

 private:
  uint64_t capacity_ = 0;
  uint64_t added_ = 0;
  std::vector<uint64_t> bits_;
};

class IdIndex {
 public:
  // True when key is held with a first-delivery time >= cutoff. Builds the
  // filter from txn on first use.
  Result<bool> Seen(Txn* txn, std::string_view key, int64_t cutoff);
  // Records key as delivered at ts (replacing an expired entry, if any).
  // REQUIRES: the last call was Seen(txn, key, ...) and it returned false.
  Status Insert(Txn* txn, std::string_view key, int64_t ts);
  // Deletes every id held with a time before cutoff.
  static Status Expire(Txn* txn, int64_t cutoff);

  // Filter statistics, for tests and the bench: lookups that reached LMDB.
  uint64_t btree_lookups() const { return btree_lookups_; }

 private:
  Status Build(Txn* txn, uint64_t min_capacity);
  bool built_ = false;
  BloomFilter filter_;
  std::optional<int64_t> expired_;  // what the last Seen found held but expired
  uint64_t btree_lookups_ = 0;
};

}  // namespace snapsink
