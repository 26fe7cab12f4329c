// The source record (engine/state_codec): its position identity round-trips,
// and a format-1 record (no identity) still decodes, with no position, so
// its file is read again from its start rather than trusted.
#include <gtest/gtest.h>

#include "engine/state_codec.h"

namespace snapsink {
namespace {

TEST(SourceStateCodecTest, RoundTripsTheIdentity) {
  SourceState s;
  s.offset = 1234;
  s.lines = 10;
  s.applied = 7;
  s.duplicates = 1;
  s.fenced = 1;
  s.rejected = 1;
  s.dev = 66306;
  s.ino = 998877;
  s.tail_hash = 0x9f0c2a61d4e3b8a7ULL;
  s.line_no = 9;
  s.flags = SourceState::kHasPosition | SourceState::kPartialTail;
  SourceState back;
  ASSERT_TRUE(codec::Decode(codec::Encode(s), &back).ok());
  EXPECT_EQ(back, s);
}

TEST(SourceStateCodecTest, FormatOneRecordDecodesWithoutAPosition) {
  std::string v;
  for (uint64_t x : {500, 6, 5, 1, 0, 0, 0}) codec::PutU64(&v, x);
  SourceState s;
  s.flags = 0xff;
  ASSERT_TRUE(codec::Decode(v, &s).ok());
  EXPECT_EQ(s.offset, 500u);
  EXPECT_EQ(s.lines, 6u);
  EXPECT_EQ(s.applied, 5u);
  EXPECT_EQ(s.duplicates, 1u);
  EXPECT_EQ(s.flags, 0u);
  EXPECT_FALSE(codec::Decode(v.substr(0, 55), &s).ok());
}

}  // namespace
}  // namespace snapsink
