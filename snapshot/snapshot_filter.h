// The bloom filter of a snapshot file (docs/FORMAT.md) and the hash of a
// (metric, key) that the filter and the blocks' hash indexes share. Used by
// the writer (BuildFilter) and the reader (FilterMatches); nothing outside
// snapshot/snapshot_*.cc needs it.
//
// The filter is blocked as RocksDB's cache-local filters: the high 32 bits
// of a key's hash pick one 64-byte line, and all probes of the key fall in
// that line, so a lookup costs one cache miss, not one per probe. Probe j
// tests bit (lo + j * delta) mod 512 of the line, lo the low 32 bits of the
// hash and delta = lo rotated right by 17 (LevelDB's bloom.cc).
#pragma once

#include <xxhash.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace snapsink::snapshot {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr size_t kFilterLineBytes = 64;
constexpr uint32_t kFilterLineBits = kFilterLineBytes * 8;
constexpr uint8_t kFilterProbes = 6;  // ~ kFilterBitsPerKey * ln 2, as LevelDB's bloom.cc

// XXH64 (xxhash's spec, the same value as the library's XXH64) of a key,
// compiled in place: the writer, the verify pass and every lookup hash a
// short key per row, and the call into the shared library costs about as
// much again as the hash (a 25-byte key: ~33 ns through libxxhash, ~19 ns
// here, on this machine). Tested against the library for every length
// from 0 to 300 (snapshot_filter_test.cc). xxHash's own inline mode
// (XXH_INLINE_ALL) would be the library's code, but it cannot share a unit
// with the plain <xxhash.h> that the writer and reader include for their
// streaming XXH64_state_t (the two modes declare the state type twice).
inline uint64_t KeyHash(const char* p, size_t n, uint64_t seed) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL, kP3 = 0x165667B19E3779F9ULL,
                     kP4 = 0x85EBCA77C2B2AE63ULL, kP5 = 0x27D4EB2F165667C5ULL;
  auto read64 = [](const char* q) {
    uint64_t v;
    std::memcpy(&v, q, 8);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    return v;
  };
  auto mix = [](uint64_t acc, uint64_t input) { return std::rotl(acc + input * kP2, 31) * kP1; };
  const char* const end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    for (; end - p >= 32; p += 32) {
      v1 = mix(v1, read64(p));
      v2 = mix(v2, read64(p + 8));
      v3 = mix(v3, read64(p + 16));
      v4 = mix(v4, read64(p + 24));
    }
    h = std::rotl(v1, 1) + std::rotl(v2, 7) + std::rotl(v3, 12) + std::rotl(v4, 18);
    for (uint64_t v : {v1, v2, v3, v4}) h = (h ^ mix(0, v)) * kP1 + kP4;
  } else {
    h = seed + kP5;
  }
  h += n;
  for (; end - p >= 8; p += 8) h = std::rotl(h ^ mix(0, read64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
    h = std::rotl(h ^ (uint64_t{v} * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; p++) h = std::rotl(h ^ (uint64_t{static_cast<uint8_t>(*p)} * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

// The filter's hash of a (metric, key): the key hashed with the metric's hash as seed.
inline uint64_t FilterHash(std::string_view metric, std::string_view key) {
  return KeyHash(key.data(), key.size(), XXH64(metric.data(), metric.size(), 0));
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
    return KeyHash(key.data(), key.size(), seed_);
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
