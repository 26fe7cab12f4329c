// The bloom filter of a snapshot file (docs/FORMAT.md) and the hash of a
// (metric, key) that the filter and the blocks' hash indexes share. Used by
// the writer (BuildFilter) and the reader (FilterMatches); nothing outside
// publish/snapshot_*.cc needs it.
//
// The filter is blocked as RocksDB's cache-local filters: the high 32 bits
// of a key's hash pick one 64-byte line, and all probes of the key fall in
// that line, so a lookup costs one cache miss, not one per probe. Probe j
// tests bit (lo + j * delta) mod 512 of the line, lo the low 32 bits of the
// hash and delta = lo rotated right by 17 (LevelDB's bloom.cc).
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace snapsink::snapshot {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr size_t kFilterLineBytes = 64;
constexpr uint32_t kFilterLineBits = kFilterLineBytes * 8;
constexpr uint8_t kFilterProbes = 6;  // ~ kFilterBitsPerKey * ln 2, as LevelDB's bloom.cc

// The filter's hash of a (metric, key): the key hashed with the metric's hash as seed.
inline uint64_t FilterHash(std::string_view metric, std::string_view key) {
  return XXH64(key.data(), key.size(), XXH64(metric.data(), metric.size(), 0));
}

// FilterHash of rows that arrive sorted by metric: the metric's hash (the
// seed) is computed once per run of rows of one metric, not once per row.
class RowHasher {
 public:
  uint64_t Hash(std::string_view metric, std::string_view key) {
    if (!valid_ || metric != metric_) {
      metric_.assign(metric);
      seed_ = XXH64(metric.data(), metric.size(), 0);
      valid_ = true;
    }
    return XXH64(key.data(), key.size(), seed_);
  }

 private:
  bool valid_ = false;
  std::string metric_;
  uint64_t seed_ = 0;
};

// The line of a key with hash h64 in a filter of `lines` lines.
inline size_t FilterLine(uint64_t h64, size_t lines) {
  return static_cast<size_t>((static_cast<uint64_t>(static_cast<uint32_t>(h64 >> 32)) * lines) >> 32);
}

// The filter of keys with these hashes: kFilterBitsPerKey bits each (at
// least one line), then a byte holding the probe count.
std::string BuildFilter(const std::vector<uint64_t>& hashes);

// False only if the key with hash h64 is certainly not in the filter.
// REQUIRES: a filter the reader has checked (size 64n + 1, probes 1..30).
inline bool FilterMatches(std::string_view filter, uint64_t h64) {
  const size_t lines = (filter.size() - 1) / kFilterLineBytes;
  const uint8_t probes = static_cast<uint8_t>(filter.back());
  const char* line = filter.data() + FilterLine(h64, lines) * kFilterLineBytes;
  uint32_t h = static_cast<uint32_t>(h64);
  const uint32_t delta = (h >> 17) | (h << 15);
  for (uint8_t j = 0; j < probes; j++) {
    const uint32_t pos = h % kFilterLineBits;
    if ((static_cast<uint8_t>(line[pos / 8]) & (1 << (pos % 8))) == 0) return false;
    h += delta;
  }
  return true;
}

// True if the filter matches every one of the n hashes (a checked block's
// rows: the filter must hold them all), with the lines fetched ahead.
bool FilterMatchesAll(std::string_view filter, const uint64_t* hashes, size_t n);

}  // namespace snapsink::snapshot
