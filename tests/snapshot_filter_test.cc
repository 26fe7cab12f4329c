// Tests of snapshot/snapshot_filter.h: the key hash that the filter and the
// blocks' hash indexes share is xxhash's XXH64, computed in place.
#include "snapshot/snapshot_filter.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>

namespace snapsink::snapshot {
namespace {

// KeyHash is on disk (the filter's bits, the hash index's slots): it must
// be the library's XXH64 for every length, through each tail of the
// algorithm (32-byte stripes, 8-, 4- and 1-byte steps), whatever the seed
// and the alignment of the bytes.
TEST(SnapshotFilterTest, KeyHashIsXXH64) {
  std::string bytes;
  for (int i = 0; i < 320; i++) bytes.push_back(static_cast<char>(i * 131 + 7));
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, XXH64("latency", 7, 0), ~uint64_t{0}}) {
    for (size_t offset : {size_t{0}, size_t{3}}) {
      for (size_t n = 0; n + offset <= 300; n++) {
        const char* p = bytes.data() + offset;
        ASSERT_EQ(KeyHash(p, n, seed), XXH64(p, n, seed)) << "length " << n << " seed " << seed;
      }
    }
  }
  EXPECT_EQ(FilterHash("latency", "customer-0123456789abcdef"),
            XXH64("customer-0123456789abcdef", 25, XXH64("latency", 7, 0)));
  RowHasher hasher;
  EXPECT_EQ(hasher.Hash("m", "k1"), FilterHash("m", "k1"));
  EXPECT_EQ(hasher.Hash("m", "k2"), FilterHash("m", "k2"));
  EXPECT_EQ(hasher.Hash("n", "k2"), FilterHash("n", "k2"));
}

}  // namespace
}  // namespace snapsink::snapshot
