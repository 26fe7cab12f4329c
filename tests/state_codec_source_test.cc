// The source record (engine/state_codec): its position identity round-trips,
// and a format-1 record (no identity) still decodes, with no position, so
// its file is read again from its start rather than trusted.
#include <gtest/gtest.h>

#include "engine/state_codec.h"
#include "tests/test_util.h"

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
  ASSERT_STATUS_OK(codec::Decode(codec::Encode(s), &back));
  EXPECT_EQ(back, s);
}

TEST(SourceStateCodecTest, FormatOneRecordDecodesWithoutAPosition) {
  std::string v;
  for (uint64_t x : {500, 6, 5, 1, 0, 0, 0}) codec::PutU64(&v, x);
  SourceState s;
  s.flags = 0xff;
  ASSERT_STATUS_OK(codec::Decode(v, &s));
  EXPECT_EQ(s.offset, 500u);
  EXPECT_EQ(s.lines, 6u);
  EXPECT_EQ(s.applied, 5u);
  EXPECT_EQ(s.duplicates, 1u);
  EXPECT_EQ(s.flags, 0u);
  EXPECT_FALSE(codec::Decode(v.substr(0, 55), &s).ok());
}

// Format 3 (the write path): the opaque position, progress and newest event
// time ride after the format 2 fields; a record without them is still
// format 2 byte for byte, so a file source's record does not change.
TEST(SourceStateCodecTest, FormatThreeRoundTripsPositionProgressAndNewestTime) {
  SourceState s;
  s.lines = 3;
  s.applied = 3;
  EXPECT_EQ(codec::Encode(s).size(), 11u * 8 + 1);
  s.position = std::string("kafka\0offset 1042", 17);
  s.progress = SourceState::Progress{1042, 2000};
  s.newest_ts_ms = -5;
  const std::string v = codec::Encode(s);
  EXPECT_EQ(v.size(), 11u * 8 + 1 + 3 * 8 + 4 + 17);
  SourceState back;
  ASSERT_STATUS_OK(codec::Decode(v, &back));
  EXPECT_EQ(back, s);
  EXPECT_EQ(*back.position, s.position);

  // Each part alone; an empty position is a position (not "never set").
  for (int part = 0; part < 3; ++part) {
    SourceState one;
    if (part == 0) one.position = "";
    if (part == 1) one.progress = SourceState::Progress{0, 0};
    if (part == 2) one.newest_ts_ms = 0;
    ASSERT_STATUS_OK(codec::Decode(codec::Encode(one), &back));
    EXPECT_EQ(back, one) << part;
  }
  // Short or long by a byte: malformed, never misread.
  EXPECT_FALSE(codec::Decode(v.substr(0, v.size() - 1), &back).ok());
  EXPECT_FALSE(codec::Decode(v + "x", &back).ok());
}

TEST(SourceStateCodecTest, FormatTwoRecordDecodesWithoutWritePathFields) {
  std::string v;
  for (uint64_t x : {500, 6, 5, 1, 0, 0, 0, 7, 8, 9, 6}) codec::PutU64(&v, x);
  v.push_back(static_cast<char>(SourceState::kHasPosition));
  SourceState s;
  s.position = "stale";
  ASSERT_STATUS_OK(codec::Decode(v, &s));
  EXPECT_EQ(s.offset, 500u);
  EXPECT_EQ(s.flags, SourceState::kHasPosition);
  EXPECT_FALSE(s.position);
  EXPECT_FALSE(s.progress);
  EXPECT_FALSE(s.newest_ts_ms);
  // A format 2 record that claims an extension it does not have.
  v.back() = static_cast<char>(SourceState::kHasPosition | 4);
  EXPECT_FALSE(codec::Decode(v, &s).ok());
}

}  // namespace
}  // namespace snapsink
