#include "snapshot/snapshot_format.h"

namespace snapsink::snapshot {

using coding::PutFixed32;

void AppendHashIndex(const uint64_t* hashes, uint32_t rows, uint32_t slots, std::string* out) {
  const size_t at = out->size();
  out->resize(at + kHashSlotBytes * size_t{slots}, static_cast<char>(kHashEmpty));
  char* t = out->data() + at;
  for (uint32_t r = 0; r < rows && slots > 0; r++) {
    uint32_t b = HashBucket(hashes[r], slots);
    while (static_cast<uint8_t>(t[kHashSlotBytes * b]) != kHashEmpty) b = b + 1 == slots ? 0 : b + 1;
    t[kHashSlotBytes * b] = static_cast<char>(r / kBlockRestartInterval);
    t[kHashSlotBytes * b + 1] = static_cast<char>(HashFingerprint(hashes[r]));
  }
  PutFixed32(out, slots);
}

bool SplitBlock(std::string_view plain, uint32_t rows, uint32_t version, BlockParts* out) {
  if (plain.size() < 4) return false;
  const uint32_t num = DecodeFixed32(plain.data() + plain.size() - 4);
  if (num != (rows + kBlockRestartInterval - 1) / kBlockRestartInterval) return false;
  uint64_t trailer = 4 * uint64_t{num} + 4;
  uint32_t slots = 0;
  if (version >= 3) {
    if (plain.size() < 8) return false;
    slots = DecodeFixed32(plain.data() + plain.size() - 8);
    // A writer may leave the index out (SnapshotWriterOptions::block_hash_index).
    if (slots != 0 && slots != HashSlots(rows, num)) return false;
    trailer += kHashSlotBytes * uint64_t{slots} + 4;
  }
  if (trailer > plain.size()) return false;
  out->rows = plain.substr(0, plain.size() - trailer);
  out->restarts = plain.data() + out->rows.size();
  out->num = num;
  out->slots = out->restarts + 4 * uint64_t{num};
  out->num_slots = slots;
  return true;
}

bool GetIndexEntry(const char** p, const char* end, IndexEntryView* e) {
  const char* q = *p;
  if (end - q < 28) return false;
  e->offset = coding::DecodeFixed64(q);
  e->csize = DecodeFixed32(q + 8);
  e->usize = DecodeFixed32(q + 12);
  e->rows = DecodeFixed32(q + 16);
  e->xxh64 = coding::DecodeFixed64(q + 20);
  q += 28;
  for (std::string_view* s : {&e->first_metric, &e->first_key}) {
    if (end - q < 4) return false;
    const uint32_t n = DecodeFixed32(q);
    q += 4;
    if (n > kSnapshotMaxFieldBytes || n > static_cast<uint64_t>(end - q)) return false;
    *s = std::string_view(q, n);
    q += n;
  }
  *p = q;
  return true;
}

namespace {

void PutVarint64(std::string* dst, uint64_t v) {
  char b[10];
  dst->append(b, coding::EncodeVarint64(b, v) - b);
}

}  // namespace

std::string EncodeStats(const std::vector<MetricStats>& stats) {
  std::string out;
  coding::PutFixed64(&out, stats.size());
  for (const MetricStats& m : stats) {
    PutVarint64(&out, m.metric.size());
    out.append(m.metric);
    PutVarint64(&out, m.rows);
    PutVarint64(&out, coding::ZigZag(m.events));
    PutVarint64(&out, coding::ZigZag(m.count));
    PutVarint64(&out, coding::ZigZag(m.sum_micros));
  }
  return out;
}

}  // namespace snapsink::snapshot
