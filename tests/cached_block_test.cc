// Tests of snapshot/cached_block.h: the table a cached block carries names
// every row, and a lookup goes on probing past slots of other rows, ends at
// a free slot, and wraps around the table's end.
#include "snapshot/cached_block.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/coding.h"

namespace snapsink::snapshot {
namespace {

// The rows region of a block (docs/FORMAT.md: length-prefixed metric and
// key, then zigzag varints count, events, sum_micros), and each row's hash.
struct Block {
  std::vector<Row> rows;
  std::vector<uint64_t> hashes;
  std::string bytes;
};

void Append(Block* b, const Row& r, uint64_t hash) {
  char buf[10];
  for (const std::string* s : {&r.metric, &r.key}) {
    b->bytes.append(buf, EncodeVarint64(buf, s->size()) - buf);
    b->bytes.append(*s);
  }
  for (int64_t v : {r.count, r.events, r.sum_micros}) {
    b->bytes.append(buf, EncodeVarint64(buf, coding::ZigZag(v)) - buf);
  }
  b->rows.push_back(r);
  b->hashes.push_back(hash);
}

// The cached form, with `trailer` bytes after the rows (restart points and
// an index in a real block) so that the table starts at a padded offset.
std::string Cache(const Block& b, size_t trailer) {
  std::string plain = b.bytes + std::string(trailer, '\x7f');
  return MakeCachedBlock(plain, b.bytes.size(), b.hashes.data(), static_cast<uint32_t>(b.rows.size()));
}

bool Find(const std::string& cached, const Block& b, size_t trailer, uint64_t h, const std::string& metric,
          const std::string& key, Row* out) {
  RowView v;
  if (!FindCachedRow(cached.data(), b.bytes.size() + trailer, static_cast<uint32_t>(b.rows.size()), h, metric, key,
                     &v)) {
    return false;
  }
  ToRow(v, out);
  return true;
}

TEST(CachedBlock, EveryRowIsFoundByItsHashAndAbsentKeysAreNot) {
  Block b;
  for (int i = 0; i < 500; i++) {
    const Row r{i < 250 ? "m1" : "m2", "key" + std::to_string(i * 3), i - 7, int64_t{i} * 1000003 - 5, i % 5};
    Append(&b, r, FilterHash(r.metric, r.key));
  }
  for (size_t trailer : {size_t{0}, size_t{1}, size_t{2}, size_t{3}}) {
    SCOPED_TRACE(trailer);
    const std::string cached = Cache(b, trailer);
    ASSERT_EQ(cached.size(), RowTableOffset(b.bytes.size() + trailer) + 4 * size_t{RowTableSlots(500)});
    Row got;
    for (const Row& r : b.rows) {
      ASSERT_TRUE(Find(cached, b, trailer, FilterHash(r.metric, r.key), r.metric, r.key, &got)) << r.key;
      EXPECT_EQ(got, r);
      const std::string absent = r.key + "1";  // "key<3i>1" is no row's key
      EXPECT_FALSE(Find(cached, b, trailer, FilterHash(r.metric, absent), r.metric, absent, &got)) << absent;
      EXPECT_FALSE(Find(cached, b, trailer, FilterHash("m3", r.key), "m3", r.key, &got)) << r.key;
    }
  }
}

// Every row given one hash: one chain of slots with one fingerprint, which
// wraps past the table's end when the hash's bucket is the last slot. Each
// row is found by comparing keys along the chain; a key with the same hash
// that no row has ends at the free slot after the chain.
TEST(CachedBlock, OneChainOfEqualFingerprintsWrapsAndEndsAtAFreeSlot) {
  constexpr uint32_t kRows = 30;
  const uint32_t slots = RowTableSlots(kRows);
  const uint64_t last = 0xffffffff0000005a;  // fingerprint 0x5a; the bucket from the high 32 bits
  ASSERT_EQ(HashBucket(last, slots), slots - 1);
  ASSERT_EQ(HashBucket(0x5a, slots), 0u);
  for (uint64_t h : {uint64_t{0x5a}, last}) {
    SCOPED_TRACE(h);
    Block b;
    for (uint32_t i = 0; i < kRows; i++) Append(&b, {"m", "k" + std::to_string(100 + i), i, -int64_t{i}, 1}, h);
    const std::string cached = Cache(b, 6);
    Row got;
    for (const Row& r : b.rows) {
      ASSERT_TRUE(Find(cached, b, 6, h, r.metric, r.key, &got)) << r.key;
      EXPECT_EQ(got, r);
    }
    EXPECT_FALSE(Find(cached, b, 6, h, "m", "k999", &got));
    EXPECT_FALSE(Find(cached, b, 6, h, "n", "k100", &got));  // the key of a row, another metric
  }
}

// A row past the first 64 KiB and past 1 MiB of its block (a block holds one
// maximal row beyond its target size): its offset is kept whole in the slot.
TEST(CachedBlock, RowsFarIntoABigBlock) {
  Block b;
  const Row big{"m", std::string(kSnapshotMaxFieldBytes, 'a'), 1, 2, 3};
  const Row after{"m", "b", 4, 5, 6};
  Append(&b, big, FilterHash(big.metric, big.key));
  Append(&b, after, FilterHash(after.metric, after.key));
  const std::string cached = Cache(b, 0);
  Row got;
  ASSERT_TRUE(Find(cached, b, 0, FilterHash(after.metric, after.key), after.metric, after.key, &got));
  EXPECT_EQ(got, after);
  ASSERT_TRUE(Find(cached, b, 0, FilterHash(big.metric, big.key), big.metric, big.key, &got));
  EXPECT_EQ(got, big);
}

}  // namespace
}  // namespace snapsink::snapshot
