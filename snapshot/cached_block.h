// A block as the BlockCache keeps it for point lookups (SnapshotReader::Get):
// its checked, decompressed bytes, then a table that names every row by its
// offset in the block, so that a hit reads one slot of the table and then its
// row, decoded once: no restart point, no scan of a restart interval. The
// table lives only in memory; it is built from the rows when the block is
// read and checked, and is no part of the file (docs/FORMAT.md).
//
// Layout of the cached bytes: the block's usize bytes, zero bytes up to a
// multiple of 4, then RowTableSlots(rows) u32 slots in native byte order.
// A slot is 0 (free) or fingerprint << 24 | (offset of the row + 1); rows are
// placed in row order by linear probing from HashBucket of their FilterHash,
// over as many slots as the file's hash index has (4/3 per row, plus one, so
// a probe always ends at a free slot), with the same fingerprint byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "snapshot/snapshot_format.h"

namespace snapsink::snapshot {

constexpr uint32_t kRowOffsetBits = 24;
constexpr uint32_t kRowOffsetMask = (uint32_t{1} << kRowOffsetBits) - 1;
// Every row starts inside a block, and a block is at most kMaxBlockBytes.
static_assert(kMaxBlockBytes < kRowOffsetMask, "a row's offset + 1 must fit a slot");

inline size_t RowTableOffset(size_t usize) { return (usize + 3) & ~size_t{3}; }
inline uint32_t RowTableSlots(uint32_t rows) { return ProbeSlots(rows); }

// The cached form of a checked block `plain` whose first rows_bytes bytes
// hold `rows` rows, row r with FilterHash hashes[r].
// `extended`: the file's rows end in an extension (version 4).
std::string MakeCachedBlock(std::string_view plain, size_t rows_bytes, const uint64_t* hashes, uint32_t rows,
                            bool extended = false);

inline uint32_t RowTableSlot(const char* table, uint32_t b) {
  uint32_t v;
  std::memcpy(&v, table + 4 * size_t{b}, sizeof v);
  return v;
}

// The row (metric, key), whose FilterHash is h, in the cached block `block`
// (MakeCachedBlock of a block of usize bytes and `rows` rows): true and *out
// pointing into the block if it is there. Probes until a free slot; a slot
// with the key's fingerprint costs one comparison of a row's key.
inline bool FindCachedRow(const char* block, size_t usize, uint32_t rows, uint64_t h, std::string_view metric,
                          std::string_view key, RowView* out, bool extended = false) {
  const char* const table = block + RowTableOffset(usize);
  const uint32_t slots = RowTableSlots(rows);
  const uint32_t fp = uint32_t{HashFingerprint(h)} << kRowOffsetBits;
  const char* const end = block + usize;
  for (uint32_t b = HashBucket(h, slots);; b = b + 1 == slots ? 0 : b + 1) {
    const uint32_t v = RowTableSlot(table, b);
    if (v == 0) return false;
    if ((v & ~kRowOffsetMask) != fp) continue;
    const char* p = block + (v & kRowOffsetMask) - 1;
    // A checked block's row decodes; compare its key before its numbers.
    RowView r;
    const char* q = p;
    GetRowKey(&q, end, &r, extended);
    if (r.key != key || r.metric != metric) continue;
    GetRow(&p, end, out, extended);
    return true;
  }
}

}  // namespace snapsink::snapshot
