// The layout of a snapshot file shared by its writer and reader (LevelDB's
// table/format.h): the footer's constants, the row encoding, the restart
// points and the per-block hash index, the stats section. The bytes are
// described in docs/FORMAT.md; change nothing here without it.
#pragma once

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/coding.h"
#include "engine/hyperloglog.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_filter.h"

namespace snapsink::snapshot {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr char kMagic[8] = {'S', 'N', 'A', 'P', 'S', 'N', 'K', '1'};
// 3: blocks end in a hash index (kHashSlotBytes per slot) after their
// restart points. Files of version 2 (no hash index) are still read.
constexpr uint32_t kFileFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 2;
// 4: version 3 whose every row ends in an extension (docs/FORMAT.md): a
// varint tag, 0 (none) or 1 (a range: zigzag varints min, max). Written only
// with SnapshotWriterOptions::extended_rows.
constexpr uint32_t kExtendedRowsVersion = 4;
// 5: version 4 whose row extension may also be 2 (a range and a quantile
// sketch: zigzag varints min, max, then a varint length and the sketch,
// engine/ddsketch.h's encoding). Written only with
// SnapshotWriterOptions::sketch_rows; a file of version 4 holds no tag 2.
constexpr uint32_t kSketchRowsVersion = 5;
// 6: version 5 whose row extension may also be 3 (a range and a
// distinct-count sketch: zigzag varints min, max, then a varint length and
// the sketch, engine/hyperloglog.h's encoding). Written only with
// SnapshotWriterOptions::distinct_rows; a file of version 5 holds no tag 3.
constexpr uint32_t kDistinctRowsVersion = 6;
constexpr uint32_t kNewestFormatVersion = kDistinctRowsVersion;
constexpr uint64_t kRowExtNone = 0;
constexpr uint64_t kRowExtRange = 1;
constexpr uint64_t kRowExtSketch = 2;
constexpr uint64_t kRowExtDistinct = 3;
constexpr uint8_t kDistinctSketchFirstByte = HyperLogLog::kEncodingVersion;
// The longest sketch a row holds: a DDSketch of the default bound (2048
// buckets a store; max_buckets is not settable) at its longest encoding,
// or a dense HyperLogLog of the greatest precision (18: 3 * 2^18 / 4 bytes
// of registers and 3 of header), whichever is longer.
constexpr uint64_t kMaxRowSketchBytes = std::max<uint64_t>(64 + 2 * (3 + 2048 * (5 + 10)), 3 + 3 * (1 << 18) / 4);
constexpr size_t kFooterSize = 64;
constexpr size_t kIndexHeaderSize = 6 * 8;  // filter and stats: offset, size, xxh64 each
constexpr size_t kIndexEntryFixed = 8 + 4 + 4 + 4 + 8 + 4 + 4;  // without the two strings
constexpr uint64_t kMinFileBytes = kFooterSize + (kIndexHeaderSize + 8) + (kFilterLineBytes + 1) + 8;  // 193
// Per-block hash index (docs/FORMAT.md): a slot is {restart, fingerprint};
// restart kHashEmpty marks a free slot, so a block with more restart points
// than kHashMaxRestarts has no hash index (it is searched by restart points).
constexpr size_t kHashSlotBytes = 2;
constexpr uint8_t kHashEmpty = 0xFF;
constexpr uint32_t kHashMaxRestarts = 255;
constexpr uint64_t kHashMaxSlots = kHashMaxRestarts * kBlockRestartInterval * 4 / 3 + 1;
// A block is cut once its rows reach at most kSnapshotBlockBytes, so it never
// holds more than that plus one maximal row, plus its restart points (a row
// is at least 5 bytes) and its hash index.
constexpr uint64_t kMaxBlockBytes = kSnapshotBlockBytes + 2 * kSnapshotMaxFieldBytes + 96 + kMaxRowSketchBytes +
                                    4 * (kSnapshotBlockBytes / 5 / kBlockRestartInterval + 2) + 4 +
                                    kHashSlotBytes * kHashMaxSlots + 4;

// The row decoding below runs once per row of every block read (and per
// probed row of a lookup): these two take their common case inline, the
// one-byte varint (lengths and small numbers) and a little-endian u32,
// and leave the rest to coding::.
inline bool GetVarint64(const char** p, const char* end, uint64_t* v) {
  if (*p < end && (static_cast<uint8_t>(**p) & 0x80) == 0) {
    *v = static_cast<uint8_t>(**p);
    ++*p;
    return true;
  }
  return coding::GetVarint64(p, end, v);
}

inline uint32_t DecodeFixed32(const char* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    return coding::DecodeFixed32(p);
  }
}

// The writer encodes five varints per row; most are one byte (lengths,
// small numbers), taken inline here.
inline char* EncodeVarint64(char* p, uint64_t v) {
  if (v < 0x80) {
    *p = static_cast<char>(v);
    return p + 1;
  }
  return coding::EncodeVarint64(p, v);
}

inline bool GetLengthPrefixed(const char** p, const char* end, std::string_view* out) {
  uint64_t n;
  if (!GetVarint64(p, end, &n) || n > kSnapshotMaxFieldBytes ||
      n > static_cast<uint64_t>(end - *p)) {
    return false;
  }
  *out = std::string_view(*p, n);
  *p += n;
  return true;
}

// The metric and key of the row at *p, skipping its numbers: what a search
// compares. `extended`: the file's rows end in an extension (version 4).
// REQUIRES: a row of a checked block.
inline void GetRowKey(const char** p, const char* end, RowView* r, bool extended = false) {
  GetLengthPrefixed(p, end, &r->metric);
  GetLengthPrefixed(p, end, &r->key);
  auto skip = [&] {
    while (*p < end && (static_cast<uint8_t>(**p) & 0x80) != 0) ++*p;
    ++*p;
  };
  for (int i = 0; i < 3; i++) skip();
  if (extended && *p < end) {
    const uint8_t tag = static_cast<uint8_t>(**p);
    skip();
    if (tag == kRowExtRange || tag == kRowExtSketch || tag == kRowExtDistinct) {
      skip();
      skip();
    }
    if (tag == kRowExtSketch || tag == kRowExtDistinct) {
      uint64_t n = 0;
      GetVarint64(p, end, &n);
      *p += n;
    }
  }
}

// A decoded row pointing into a block buffer; `extended` as for GetRowKey.
inline bool GetRow(const char** p, const char* end, RowView* r, bool extended = false) {
  uint64_t c, e, s;
  if (!GetLengthPrefixed(p, end, &r->metric) || !GetLengthPrefixed(p, end, &r->key) ||
      !GetVarint64(p, end, &c) || !GetVarint64(p, end, &e) || !GetVarint64(p, end, &s)) {
    return false;
  }
  r->count = coding::UnZigZag(c);
  r->events = coding::UnZigZag(e);
  r->sum_micros = coding::UnZigZag(s);
  r->has_range = false;
  r->sketch = std::string_view();
  if (extended) {
    uint64_t tag, lo, hi;
    if (!GetVarint64(p, end, &tag)) return false;
    if (tag == kRowExtRange || tag == kRowExtSketch || tag == kRowExtDistinct) {
      if (!GetVarint64(p, end, &lo) || !GetVarint64(p, end, &hi)) return false;
      r->has_range = true;
      r->min_micros = coding::UnZigZag(lo);
      r->max_micros = coding::UnZigZag(hi);
      if (r->min_micros > r->max_micros) return false;
    } else if (tag != kRowExtNone) {
      return false;
    }
    if (tag == kRowExtSketch || tag == kRowExtDistinct) {
      // Its bytes are checked where a block is (SnapshotReader::DecodeBlock);
      // here only that its first byte is of the tag's sketch
      // (engine/kind_sketch.h: 1 a HyperLogLog's, else a DDSketch's).
      uint64_t n = 0;
      if (!GetVarint64(p, end, &n) || n == 0 || n > static_cast<uint64_t>(end - *p)) return false;
      if ((static_cast<uint8_t>(**p) == kDistinctSketchFirstByte) != (tag == kRowExtDistinct)) return false;
      r->sketch = std::string_view(*p, n);
      *p += n;
    }
  }
  return true;
}

inline void ToRow(const RowView& v, Row* row) {
  row->metric.assign(v.metric);
  row->key.assign(v.key);
  row->count = v.count;
  row->sum_micros = v.sum_micros;
  row->events = v.events;
  row->min_micros = v.has_range ? std::optional<int64_t>(v.min_micros) : std::nullopt;
  row->max_micros = v.has_range ? std::optional<int64_t>(v.max_micros) : std::nullopt;
  row->sketch.assign(v.sketch);
}

// (metric, key) ordering: metric first, both as byte strings.
inline int CompareKeys(std::string_view m1, std::string_view k1, std::string_view m2, std::string_view k2) {
  int c = m1.compare(m2);
  return c != 0 ? c : k1.compare(k2);
}

inline uint64_t Hash(std::string_view s) { return XXH64(s.data(), s.size(), 0); }

// Slots for `rows` rows placed by linear probing: 4/3 slot per row, plus
// one, so at least one stays free and a probe always ends. The file's hash
// index and the cached block's row table (cached_block.h) both use it.
inline uint32_t ProbeSlots(uint32_t rows) { return rows + rows / 3 + 1; }

// The slots of a block's hash index of `rows` rows and `num` restart
// points: ProbeSlots(rows), or 0 when the restart numbers do not fit a byte.
inline uint32_t HashSlots(uint32_t rows, uint32_t num) { return num > kHashMaxRestarts ? 0 : ProbeSlots(rows); }

// Where a key's probe sequence starts, and the byte stored to tell it from
// the other keys of the chain; from the filter's hash of the key.
inline uint32_t HashBucket(uint64_t h, uint32_t slots) {
  return static_cast<uint32_t>(((h >> 32) * slots) >> 32);
}
inline uint8_t HashFingerprint(uint64_t h) { return static_cast<uint8_t>(h); }

// Appends the hash index of a block whose row r has hash hashes[r]:
// `slots` slots, filled by linear probing in row order, then u32 slots.
void AppendHashIndex(const uint64_t* hashes, uint32_t rows, uint32_t slots, std::string* out);

// The rows of a decompressed block, its restart points and (version >= 3)
// its hash index, split apart. False if the trailer is malformed or does
// not fit `rows`.
struct BlockParts {
  std::string_view rows;
  const char* restarts = nullptr;  // num fixed32 offsets
  uint32_t num = 0;
  const char* slots = nullptr;  // hash index: kHashSlotBytes * num_slots bytes
  uint32_t num_slots = 0;       // 0: no hash index
};
bool SplitBlock(std::string_view plain, uint32_t rows, uint32_t version, BlockParts* out);

// One entry of the index (docs/FORMAT.md), the same in every version of
// the data file: u64 offset, u32 csize, usize and rows, u64 xxh64, then the
// block's first metric and key, each a u32 length (at most
// kSnapshotMaxFieldBytes) and its bytes. Read by SnapshotReader and by the
// reader of version 1 files (publish/old_formats.cc).
struct IndexEntryView {
  uint64_t offset = 0;
  uint32_t csize = 0, usize = 0, rows = 0;
  uint64_t xxh64 = 0;
  std::string_view first_metric, first_key;  // into the index bytes
};
// Decodes the entry at *p and moves *p past it; false if it is truncated.
bool GetIndexEntry(const char** p, const char* end, IndexEntryView* e);

// The stats section: a fixed64 count, then per metric its length-prefixed
// name and varints rows, zigzag events, count, sum_micros.
std::string EncodeStats(const std::vector<MetricStats>& stats);

}  // namespace snapsink::snapshot
