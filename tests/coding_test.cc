// engine/coding: the byte layouts are on disk, so they are pinned here byte
// for byte, not only round-tripped.
#include "engine/coding.h"

#include <gtest/gtest.h>

#include <limits>

namespace snapsink::coding {
namespace {

TEST(CodingTest, Fixed32IsLittleEndian) {
  std::string s;
  PutFixed32(&s, 0x04030201u);
  EXPECT_EQ(s, std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(DecodeFixed32(s.data()), 0x04030201u);
}

TEST(CodingTest, Fixed64IsLittleEndian) {
  std::string s;
  PutFixed64(&s, 0x0807060504030201ull);
  EXPECT_EQ(s, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(DecodeFixed64(s.data()), 0x0807060504030201ull);
  char buf[8];
  EncodeFixed64(buf, 0x0807060504030201ull);
  EXPECT_EQ(std::string(buf, 8), s);
}

TEST(CodingTest, FixedRoundTripsExtremes) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0x80}, std::numeric_limits<uint64_t>::max()}) {
    std::string s;
    PutFixed64(&s, v);
    EXPECT_EQ(DecodeFixed64(s.data()), v);
    s.clear();
    PutFixed32(&s, static_cast<uint32_t>(v));
    EXPECT_EQ(DecodeFixed32(s.data()), static_cast<uint32_t>(v));
  }
}

TEST(CodingTest, BigEndianSortsAsIntegers) {
  std::string a, b;
  PutBigEndian(&a, 0x00ff, 4);
  PutBigEndian(&b, 0x0100, 4);
  EXPECT_EQ(a, std::string("\x00\x00\x00\xff", 4));
  EXPECT_LT(a, b);
  EXPECT_EQ(DecodeBigEndian(b.data(), 4), 0x0100u);
}

TEST(CodingTest, VarintLayoutAndRoundTrip) {
  std::string s;
  PutVarint64(&s, 300);
  EXPECT_EQ(s, std::string("\xac\x02", 2));
  for (uint64_t v : {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()}) {
    std::string e;
    PutVarint64(&e, v);
    const char* p = e.data();
    uint64_t got = 0;
    ASSERT_TRUE(GetVarint64(&p, e.data() + e.size(), &got)) << v;
    EXPECT_EQ(got, v);
    EXPECT_EQ(p, e.data() + e.size());
  }
  EXPECT_EQ(s.size(), 2u);
}

TEST(CodingTest, VarintRejectsTruncationAndOverflow) {
  const std::string truncated("\xff\xff", 2);
  const char* p = truncated.data();
  uint64_t v;
  EXPECT_FALSE(GetVarint64(&p, truncated.data() + truncated.size(), &v));
  const std::string eleven(10, '\xff');
  p = eleven.data();
  EXPECT_FALSE(GetVarint64(&p, eleven.data() + eleven.size(), &v));
}

TEST(CodingTest, ZigZag) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{42}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
}

}  // namespace
}  // namespace snapsink::coding
