#include "snapshot/snapshot_filter.h"

#include <algorithm>

#include "snapshot/snapshot_file.h"

namespace snapsink {

namespace snapshot {

namespace {

// Every key's line is random, so a filter bigger than the caches costs a
// miss per key; the loops below that touch a line per key ask for the line
// kFilterPrefetch keys ahead, so the misses overlap instead of adding up.
constexpr size_t kFilterPrefetch = 8;

}  // namespace

std::string BuildFilter(const std::vector<uint64_t>& hashes) {
  const size_t bits = std::max<size_t>(kFilterLineBits, hashes.size() * kFilterBitsPerKey);
  const size_t lines = (bits + kFilterLineBits - 1) / kFilterLineBits;
  std::string f(lines * kFilterLineBytes, '\0');
  for (size_t i = 0; i < hashes.size(); i++) {
    if (i + kFilterPrefetch < hashes.size()) {
      __builtin_prefetch(f.data() + FilterLine(hashes[i + kFilterPrefetch], lines) * kFilterLineBytes, 1);
    }
    const uint64_t h64 = hashes[i];
    char* line = f.data() + FilterLine(h64, lines) * kFilterLineBytes;
    uint32_t h = static_cast<uint32_t>(h64);
    const uint32_t delta = (h >> 17) | (h << 15);
    for (uint8_t j = 0; j < kFilterProbes; j++) {
      const uint32_t pos = h % kFilterLineBits;
      line[pos / 8] = static_cast<char>(line[pos / 8] | (1 << (pos % 8)));
      h += delta;
    }
  }
  f.push_back(static_cast<char>(kFilterProbes));
  return f;
}

bool FilterMatchesAll(std::string_view filter, const uint64_t* hashes, size_t n) {
  const size_t lines = (filter.size() - 1) / kFilterLineBytes;
  bool all = true;
  for (size_t i = 0; i < n; i++) {
    if (i + kFilterPrefetch < n) __builtin_prefetch(filter.data() + FilterLine(hashes[i + kFilterPrefetch], lines) * kFilterLineBytes);
    all &= FilterMatches(filter, hashes[i]);
  }
  return all;
}

}  // namespace snapshot

uint64_t SnapshotKeyHash(std::string_view metric, std::string_view key) { return snapshot::FilterHash(metric, key); }

}  // namespace snapsink
