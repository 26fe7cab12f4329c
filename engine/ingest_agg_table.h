// Internal to engine/ingest*.cc: the aggregates one ingest batch touched.
//
// A batch that creates many new keys (a wide window) inserts one
// entry per line, and each commit sorts them all. A node-based hash map
// with a std::string per key paid a heap allocation per key, a pointer
// chase per probe, and freed every node at commit. Here the keys lie back
// to back in one arena, the entries in one vector, and an open-addressing
// table (linear probing, power-of-two size) holds each entry's index and
// the top bits of its hash, so a probe compares keys only on a likely hit.
// Clearing keeps the memory for the next batch.
#pragma once

#include <cstdint>
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <xxhash.h>

#include "engine/ddsketch.h"
#include "engine/hyperloglog.h"
#include "engine/state_codec.h"

namespace snapsink {

struct CachedAgg {
  Aggregate agg;                // the live value, once `live` (read only when the sum bound does not rule out overflow)
  bool live = false;
  Aggregate delta;              // what this batch added: its entry of the window's new run
  Aggregate* totals = nullptr;  // its (window, metric) entry of the batch's ledger totals: one lookup per event
  int8_t kind = -1;             // its metric's MetricKind once looked up (engine/metric_kinds.h); -1: not yet
  // A quantiles metric's: what this batch applied, as a sketch (encoded
  // into delta.sketch when the batch commits).
  std::unique_ptr<DDSketch> sketch;
  // A distinct metric's: the items this batch applied (encoded into
  // delta.sketch when the batch commits).
  std::unique_ptr<HyperLogLog> items;
};

class BatchAggTable {
 public:
  // The entry of key, inserted (zero) on its first touch. The pointer stays
  // valid until the next FindOrInsert or Clear.
  CachedAgg* FindOrInsert(std::string_view key) {
    if (4 * (entries_.size() + 1) > 3 * slots_.size()) Grow();
    const uint64_t h = XXH3_64bits(key.data(), key.size());
    const uint32_t tag = static_cast<uint32_t>(h >> 32) | 1;  // never 0: 0 marks an empty slot
    const size_t mask = slots_.size() - 1;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
      Slot& slot = slots_[s];
      if (slot.tag == 0) {
        slot.tag = tag;
        slot.index = static_cast<uint32_t>(entries_.size());
        entries_.push_back(Entry{arena_.size(), key.size(), h, {}});
        arena_.append(key);
        return &entries_.back().value;
      }
      if (slot.tag == tag && this->key(slot.index) == key) return &entries_[slot.index].value;
    }
  }
  size_t size() const { return entries_.size(); }
  // Entries in insertion order, 0 <= i < size().
  std::string_view key(size_t i) const { return std::string_view(arena_.data() + entries_[i].key_offset, entries_[i].key_size); }
  const CachedAgg& value(size_t i) const { return entries_[i].value; }
  void Clear() {
    entries_.clear();
    arena_.clear();
    std::fill(slots_.begin(), slots_.end(), Slot{});
  }

 private:
  struct Slot {
    uint32_t tag = 0;  // the hash's top 32 bits, low bit set; 0: empty
    uint32_t index = 0;
  };
  struct Entry {
    size_t key_offset;
    size_t key_size;
    uint64_t hash;
    CachedAgg value;
  };
  void Grow() {
    std::vector<Slot> bigger(slots_.empty() ? 1024 : 2 * slots_.size());
    const size_t mask = bigger.size() - 1;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const uint64_t h = entries_[i].hash;
      size_t s = h & mask;
      while (bigger[s].tag != 0) s = (s + 1) & mask;
      bigger[s] = Slot{static_cast<uint32_t>(h >> 32) | 1, static_cast<uint32_t>(i)};
    }
    slots_.swap(bigger);
  }

  std::string arena_;  // the keys, back to back
  std::vector<Entry> entries_;
  std::vector<Slot> slots_;
};

}  // namespace snapsink
