// engine/checkpoint_text: the trailer is on disk in both kinds of checkpoint,
// so it is pinned byte for byte; a header's number is the whole field or
// nothing.
#include "engine/checkpoint_text.h"

#include <gtest/gtest.h>
#include <xxhash.h>

namespace snapsink {
namespace {

TEST(CheckpointTextTest, TrailerIsXxh64InSixteenLowercaseHexDigits) {
  EXPECT_EQ(ChecksumTrailer(0), "xxh64 0000000000000000\n");
  EXPECT_EQ(ChecksumTrailer(0xABCDEF0123456789ull), "xxh64 abcdef0123456789\n");
  EXPECT_EQ(ChecksumTrailer(~uint64_t{0}).size(), kChecksumTrailerSize);
  const std::string bytes = "snapsink checkpoint 1\n";
  EXPECT_EQ(ChecksumTrailer(XXH64(bytes.data(), bytes.size(), 0)).size(), kChecksumTrailerSize);
}

TEST(CheckpointTextTest, ParsesOnlyAWholeUnsignedNumber) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseU64("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(ParseU64("18446744073709551615", &v));
  EXPECT_EQ(v, ~uint64_t{0});
  EXPECT_TRUE(ParseU64("00000000000000000042", &v));  // a checkpoint's file name
  EXPECT_EQ(v, 42u);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1\n", "12a", "18446744073709551616", "0x10"}) {
    EXPECT_FALSE(ParseU64(bad, &v)) << "'" << bad << "'";
  }
}

TEST(CheckpointTextTest, ParsesAHexDigest) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseU64("abcdef0123456789", &v, 16));
  EXPECT_EQ(v, 0xabcdef0123456789ull);
  EXPECT_FALSE(ParseU64("abcdef0123456789", &v));  // decimal by default
  EXPECT_FALSE(ParseU64("1ffffffffffffffff", &v, 16));
}

}  // namespace
}  // namespace snapsink
