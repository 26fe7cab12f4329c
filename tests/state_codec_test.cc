// engine/state_codec: every record round-trips, keys sort as documented, and
// a damaged value is Corruption, never a wrong record.
#include "engine/state_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

using Version = decltype(WindowState{}.last_version);

// legacy_size: the length of an older layout the decoder also reads (0: none).
template <typename T>
void ExpectRoundTrip(const T& v, size_t legacy_size = 0) {
  const std::string e = codec::Encode(v);
  T got;
  ASSERT_STATUS_OK(codec::Decode(e, &got));
  EXPECT_EQ(got, v);
  // Every strict prefix is refused.
  for (size_t n = 0; n < e.size(); ++n) {
    if (n == legacy_size && n != 0) continue;
    T cut;
    EXPECT_TRUE(codec::Decode(std::string_view(e.data(), n), &cut).IsCorruption()) << "prefix " << n;
  }
}

TEST(StateCodecTest, RecordsRoundTrip) {
  ExpectRoundTrip(ProducerState{7, 100, {Gap{3, 5}, Gap{10, 11}}});
  ExpectRoundTrip(ProducerState{});
  SourceState source;
  source.offset = 4096;
  source.lines = 10;
  source.applied = 5;
  source.duplicates = 2;
  source.fenced = source.rejected = source.ignored = 1;
  source.dev = 3;
  source.ino = 77;
  source.tail_hash = 0xfeed;
  source.flags = SourceState::kHasPosition;
  ExpectRoundTrip(source, /*legacy_size=*/7 * 8);
  ExpectRoundTrip(Aggregate{-3, -1500000, 9});
  ExpectRoundTrip(WindowState{3, true});
  SealRecord seal;
  seal.state = SealState::kPublished;
  seal.rows = 42;
  seal.ledger = {LedgerEntry{"orders", Aggregate{2, 3000000, 2}}, LedgerEntry{"visits", Aggregate{1, 1, 1}}};
  ExpectRoundTrip(seal);
}

TEST(StateCodecTest, TrailingBytesAreCorruption) {
  std::string e = codec::Encode(Aggregate{1, 2, 3});
  e.push_back('x');
  Aggregate a;
  EXPECT_TRUE(codec::Decode(e, &a).IsCorruption());
}

TEST(StateCodecTest, FixedFieldsAreLittleEndian) {
  // Aggregate: count, sum_micros, events as 8-byte little-endian fields.
  const std::string e = codec::Encode(Aggregate{1, 2, 3});
  ASSERT_EQ(e.size(), 24u);
  EXPECT_EQ(e.substr(0, 8), std::string("\x01\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(e.substr(16, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
}

TEST(StateCodecTest, WindowKeysSortInTimeOrderAcrossZero) {
  std::string neg, zero, pos;
  codec::AppendWindowKey(&neg, -3600000);
  codec::AppendWindowKey(&zero, 0);
  codec::AppendWindowKey(&pos, 3600000);
  EXPECT_LT(neg, zero);
  EXPECT_LT(zero, pos);
  EXPECT_EQ(codec::DecodeWindowKey(neg), -3600000);
  EXPECT_EQ(codec::DecodeWindowKey(pos), 3600000);
}

// An aggregate key starts with its window's key as AppendWindowKey writes
// it (the plain path and the escaped metric's path alike), the window
// after it bytes apart from the window before it.
TEST(StateCodecTest, AggKeyStartsWithTheWindowKey) {
  for (const int64_t w : {INT64_MIN, int64_t{-3600000}, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{1792576800000},
                          int64_t{0x0102030405060708}, INT64_MAX}) {
    std::string window, plain, escaped;
    codec::AppendWindowKey(&window, w);
    codec::AggKeyInto(&plain, w, "m", "k");
    codec::AggKeyInto(&escaped, w, std::string_view("m\0", 2), "k");
    EXPECT_EQ(plain.substr(0, 8), window) << w;
    EXPECT_EQ(escaped.substr(0, 8), window) << w;
    EXPECT_EQ(codec::DecodeWindowKey(plain), w);
    EXPECT_EQ(plain.substr(8), std::string("m\0\0k", 4));
  }
}

TEST(StateCodecTest, EscapedMetricSortsAsBytesAndSplitsBack) {
  // "a" < "a\0" < "ab" as byte strings; the keys must keep that order even
  // though the metric is followed by a key.
  std::string k1, k2, k3;
  codec::AggKeyInto(&k1, 0, "a", "zzz");
  codec::AggKeyInto(&k2, 0, std::string_view("a\0", 2), "");
  codec::AggKeyInto(&k3, 0, "ab", "");
  EXPECT_LT(k1, k2);
  EXPECT_LT(k2, k3);
  std::string metric;
  std::string_view rest;
  ASSERT_TRUE(codec::SplitEscapedMetric(std::string_view(k2).substr(8), &metric, &rest));
  EXPECT_EQ(metric, std::string("a\0", 2));
  EXPECT_EQ(rest, "");
  ASSERT_TRUE(codec::SplitEscapedMetric(std::string_view(k1).substr(8), &metric, &rest));
  EXPECT_EQ(metric, "a");
  EXPECT_EQ(rest, "zzz");
}

TEST(StateCodecTest, SealKeysSortByWindowThenVersion) {
  const std::string a = codec::SealKey(0, Version{2});
  const std::string b = codec::SealKey(0, Version{10});
  const std::string c = codec::SealKey(3600000, Version{1});
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  int64_t w = 0;
  Version v = 0;
  codec::DecodeSealKey(b, &w, &v);
  EXPECT_EQ(w, 0);
  EXPECT_EQ(v, Version{10});
}

}  // namespace
}  // namespace snapsink::testing
