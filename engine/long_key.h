// Records whose natural key may be longer than LMDB allows (SPEC 7: every
// legal event is storable).
//
// LMDB refuses keys over mdb_env_get_maxkeysize() bytes (511 on every build
// snapsink supports; Store::Open checks it). A source name has no length
// limit, and an aggregate key (window 8 | escaped metric up to 258 | key up
// to 256) can reach 522 bytes. So a record's stored LMDB key is:
//
//   natural key of at most kMaxDirectKey (510) bytes: the natural key itself
//     (the fast path: no hash, no copy; every record of every table but the
//     rarest aggregates and sources);
//   longer natural key ("long form"), exactly kStoredLongKey (511) bytes:
//     natural[0, 503) | big-endian u64 (H(natural) + probe)
//     with the value  payload | natural[503, end) | u32 length of that tail.
//
// A stored key of exactly 511 bytes is long form and nothing else is, so
// a scan tells the two apart by the key's length alone.
//
// Collisions. H is XXH64 (seed 0). Two different natural keys that share the
// first 503 bytes and H land on the same stored key. That is detected, never
// merged: every read of a long-form record compares the natural key's tail
// kept in the value with the one asked for (the 503-byte prefix is equal by
// construction), and on a mismatch moves on to the next slot (probe + 1),
// up to kMaxProbes slots: open addressing. Records of these tables are
// never deleted one by one (only whole windows by prefix, or whole tables),
// so a lookup that meets an empty slot knows the key is absent. A scan that
// decodes a long-form record checks that its slot lies within kMaxProbes of
// H(natural) (Corruption otherwise). Should kMaxProbes keys ever collide on
// one slot chain (probability ~2^-4000 for honest input), the write fails
// with an error naming the key's length rather than overwrite anything.
// Tests force collisions with SetLongKeyHashForTesting.
//
// Order. A scan returns long-form records in (prefix, hash) order, not in
// natural-key order. Natural keys are ordered correctly by LMDB whenever
// they differ within their first 503 bytes; records whose stored keys share
// those 503 bytes are adjacent in a scan (they share a prefix), so a reader
// that needs natural order sorts such a run (ScanWindowAggregates in
// engine/window_records.h does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/store.h"

namespace snapsink {

inline constexpr size_t kMaxDirectKey = 510;
inline constexpr size_t kStoredLongKey = 511;  // must be <= mdb_env_get_maxkeysize()
inline constexpr size_t kLongKeyPrefix = kStoredLongKey - 8;
inline constexpr uint32_t kMaxProbes = 64;

// The value stored for natural key `key` under table t. NotFound if absent.
// *value (the payload, trailer removed) is valid until the next write.
Status GetRecord(Txn* txn, Table t, std::string_view key, std::string_view* value);
// Stores value under natural key `key`, replacing the record of the same key.
Status PutRecord(Txn* txn, Table t, std::string_view key, std::string_view value);

// Decodes a record met by Txn::Scan: *natural is the natural key (a copy of
// stored for the direct form), *payload the value without its trailer.
Status DecodeRecord(std::string_view stored, std::string_view value, std::string* natural, std::string_view* payload);
inline bool IsLongForm(std::string_view stored) { return stored.size() == kStoredLongKey; }

// Replaces H for tests (nullptr restores XXH64). Not thread-safe.
void SetLongKeyHashForTesting(uint64_t (*hash)(std::string_view));

}  // namespace snapsink
