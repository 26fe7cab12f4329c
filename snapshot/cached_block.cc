#include "snapshot/cached_block.h"

namespace snapsink::snapshot {

std::string MakeCachedBlock(std::string_view plain, size_t rows_bytes, const uint64_t* hashes, uint32_t rows,
                            bool extended) {
  const uint32_t slots = RowTableSlots(rows);
  const size_t at = RowTableOffset(plain.size());
  std::string out(at + 4 * size_t{slots}, '\0');
  std::memcpy(out.data(), plain.data(), plain.size());
  char* const table = out.data() + at;
  const char* const begin = plain.data();
  const char* const end = begin + rows_bytes;
  const char* p = begin;
  RowView v;
  for (uint32_t r = 0; r < rows; r++) {
    const uint32_t entry = uint32_t{HashFingerprint(hashes[r])} << kRowOffsetBits |
                           static_cast<uint32_t>(p - begin + 1);
    uint32_t b = HashBucket(hashes[r], slots);
    while (RowTableSlot(table, b) != 0) b = b + 1 == slots ? 0 : b + 1;
    std::memcpy(table + 4 * size_t{b}, &entry, sizeof entry);
    GetRowKey(&p, end, &v, extended);  // to the next row
  }
  return out;
}

}  // namespace snapsink::snapshot
