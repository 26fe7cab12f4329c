// engine/ddsketch: quantiles against the exact sorted values, merge and
// retract against the sketch of the resulting multiset, and the byte
// encoding pinned, round-tripped and refused when corrupt.
#include "engine/ddsketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace snapsink {
namespace {

std::string Bytes(const DDSketch& s) {
  std::string out;
  s.Encode(&out);
  return out;
}

DDSketch SketchOf(const std::vector<int64_t>& values, uint32_t max_buckets = DDSketch::kDefaultMaxBuckets,
                  uint32_t ppm = DDSketch::kDefaultAccuracyPpm) {
  DDSketch s(ppm, max_buckets);
  for (int64_t v : values) EXPECT_TRUE(s.Add(v));
  return s;
}

// Every quantile asked is within the relative accuracy of the exact value at
// the same rank; count, sum, min and max are exact.
void ExpectWithinAccuracy(std::vector<int64_t> values, uint32_t ppm,
                          uint32_t max_buckets = DDSketch::kDefaultMaxBuckets) {
  const DDSketch s = SketchOf(values, max_buckets, ppm);
  std::sort(values.begin(), values.end());
  const int64_t n = static_cast<int64_t>(values.size());
  int64_t sum = 0;
  for (int64_t v : values) sum += v;
  EXPECT_EQ(s.count(), n);
  EXPECT_EQ(s.sum(), sum);
  EXPECT_EQ(s.min(), values.front());
  EXPECT_EQ(s.max(), values.back());
  const double a = ppm / 1e6;
  for (double q : {0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0}) {
    const double exact = static_cast<double>(values[static_cast<size_t>(std::floor(q * static_cast<double>(n - 1)))]);
    const std::optional<double> got = s.Quantile(q);
    ASSERT_TRUE(got.has_value());
    // A rounding ulp beyond the bound at a bucket's edge is the double's, not the sketch's.
    EXPECT_LE(std::abs(*got - exact), a * std::abs(exact) * (1 + 1e-9)) << "q=" << q << " exact=" << exact;
  }
}

constexpr int kMillion = 1000000;

TEST(DDSketchTest, UniformMillionWithinOnePercent) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> d(1, 1000000000);  // 0.000001 .. 1000
  std::vector<int64_t> v(kMillion);
  for (auto& x : v) x = d(rng);
  ExpectWithinAccuracy(v, DDSketch::kDefaultAccuracyPpm);
}

TEST(DDSketchTest, LogNormalMillionWithinOnePercent) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> d(std::log(1e6), 2.0);  // median 1.0, tails over 1e-3..1e3
  std::vector<int64_t> v(kMillion);
  for (auto& x : v) x = std::max<int64_t>(1, std::llround(d(rng)));
  ExpectWithinAccuracy(v, DDSketch::kDefaultAccuracyPpm);
}

TEST(DDSketchTest, NegativesAndZerosMillionWithinOnePercent) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> ln(std::log(5e5), 1.5);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<int64_t> v(kMillion);
  for (auto& x : v) {
    const int k = pick(rng);
    const int64_t m = std::max<int64_t>(1, std::llround(ln(rng)));
    x = k < 2 ? 0 : k < 6 ? -m : m;  // 20% zeros, 40% negative, 40% positive
  }
  ExpectWithinAccuracy(v, DDSketch::kDefaultAccuracyPpm);
}

TEST(DDSketchTest, SettableAccuracyHolds) {
  std::mt19937_64 rng(4);
  std::lognormal_distribution<double> d(std::log(1e6), 3.0);
  std::vector<int64_t> v(100000);
  for (auto& x : v) x = std::max<int64_t>(1, std::llround(d(rng)));
  ExpectWithinAccuracy(v, 1000, DDSketch::kMaxMaxBuckets);  // 0.1%: 500 buckets an octave
  ExpectWithinAccuracy(v, 50000);                          // 5%
}

// The bucket of a value is pinned: ln(101/99) = 0.0200006..., so at 1% the
// multiplier is 49.9983...; 1 micro is index 0, 1.0 (2^19 * 1.9073...) index
// floor((19 + 0.9073...) * 49.9983...) = 995, 2^62 index floor(62 * M) = 3099,
// and 2^64 (past every int64) 3199.
TEST(DDSketchTest, IndexMappingIsPinned) {
  const DDSketch s;
  EXPECT_EQ(s.IndexOf(1), 0);
  EXPECT_EQ(s.IndexOf(2), 49);
  EXPECT_EQ(s.IndexOf(1000000), 995);
  EXPECT_EQ(s.IndexOf(uint64_t{1} << 62), 3099);
  EXPECT_EQ(s.IndexLimit(), 3200);
  // Each bucket's representative lies in the bucket (from 2^20 up, where a
  // bucket is wider than a micro).
  for (int32_t i = s.IndexOf(uint64_t{1} << 20); i < s.IndexOf(uint64_t{1} << 62); ++i) {
    EXPECT_EQ(s.IndexOf(static_cast<uint64_t>(std::llround(s.BucketValue(i)))), i);
  }
}

// The bucket of every value is on disk, so it must not depend on the build:
// the indexes of about 60,000 values from 1 micro to 1.8e19 at five
// accuracies, hashed (FNV-1a), pinned. The same hashes came out of builds at
// -O0, -O2 and -O3 -march=x86-64-v3 -ffp-contract=fast.
TEST(DDSketchTest, IndexMappingIsTheSameEverywhere) {
  const std::pair<uint32_t, uint64_t> pinned[] = {{100, 5515577883516631311ull},
                                                  {1000, 5850971179991943851ull},
                                                  {10000, 8051488484128296235ull},
                                                  {50000, 12690351350458789312ull},
                                                  {500000, 16471202972561765997ull}};
  for (const auto& [ppm, want] : pinned) {
    const DDSketch s(ppm);
    uint64_t h = 1469598103934665603ull;
    for (double x = 1; x < 1.8e19; x = x * 1.0007 + 1) {
      h = (h ^ static_cast<uint32_t>(s.IndexOf(static_cast<uint64_t>(x)))) * 1099511628211ull;
    }
    EXPECT_EQ(h, want) << ppm;
  }
}

TEST(DDSketchTest, EncodingIsPinned) {
  DDSketch s;
  ASSERT_TRUE(s.Add(1));
  ASSERT_TRUE(s.Add(0));
  ASSERT_TRUE(s.Add(-1));
  // version 1 | ppm 10000 | bound 2048 | count 3 | sum 0 | min -1 | max 1 |
  // zeros 1 | positive: not collapsed, 1 bucket (index 0, count 1) |
  // negative: the same.
  EXPECT_EQ(Bytes(s), std::string("\x01\x90\x4e\x80\x10\x03\x00\x01\x02\x01\x00\x01\x00\x01\x00\x01\x00\x01", 18));
  EXPECT_EQ(Bytes(DDSketch()), std::string("\x01\x90\x4e\x80\x10\x00\x00\x00\x00\x00\x00\x00", 12));
}

TEST(DDSketchTest, EncodeDecodeRoundTrip) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> big(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  std::uniform_int_distribution<int64_t> small(-1000, 1000);
  for (int trial = 0; trial < 50; ++trial) {
    DDSketch s(DDSketch::kDefaultAccuracyPpm, trial % 2 ? 16 : DDSketch::kDefaultMaxBuckets);
    const int n = trial * 37;
    for (int i = 0; i < n; ++i) {
      const int64_t v = (i % 3 == 0) ? big(rng) / 4096 : small(rng);
      ASSERT_TRUE(s.Add(v));
    }
    const std::string bytes = Bytes(s);
    DDSketch back;
    ASSERT_TRUE(DDSketch::Decode(bytes, &back).ok()) << trial;
    EXPECT_EQ(back, s);
    EXPECT_EQ(Bytes(back), bytes);
  }
}

TEST(DDSketchTest, ExtremeValuesFit) {
  DDSketch s;
  ASSERT_TRUE(s.Add(std::numeric_limits<int64_t>::max()));
  ASSERT_TRUE(s.Add(std::numeric_limits<int64_t>::min()));
  EXPECT_FALSE(s.Add(std::numeric_limits<int64_t>::min()));  // the sum would leave int64
  EXPECT_EQ(s.count(), 2);
  DDSketch back;
  ASSERT_TRUE(DDSketch::Decode(Bytes(s), &back).ok());
  EXPECT_EQ(back, s);
}

// Sketches of random parts merged in any grouping and order equal each other
// and the sketch of all values, byte for byte, with and without collapsing.
TEST(DDSketchTest, MergeIsAssociativeAndCommutative) {
  std::mt19937_64 rng(6);
  std::lognormal_distribution<double> d(std::log(1e6), 4.0);
  std::uniform_int_distribution<int> part(0, 2), sign(0, 4);
  for (int trial = 0; trial < 40; ++trial) {
    const uint32_t bound = trial % 2 ? 8 : DDSketch::kDefaultMaxBuckets;
    std::vector<int64_t> all, parts[3];
    for (int i = 0; i < 3000; ++i) {
      const int k = sign(rng);
      const int64_t m = std::max<int64_t>(1, std::llround(d(rng)));
      const int64_t v = k == 0 ? 0 : k < 3 ? -m : m;
      all.push_back(v);
      parts[part(rng)].push_back(v);
    }
    const DDSketch a = SketchOf(parts[0], bound), b = SketchOf(parts[1], bound), c = SketchOf(parts[2], bound);
    DDSketch ab_c = a;
    ASSERT_TRUE(ab_c.Merge(b).ok());
    ASSERT_TRUE(ab_c.Merge(c).ok());
    DDSketch bc = b;
    ASSERT_TRUE(bc.Merge(c).ok());
    DDSketch a_bc = a;
    ASSERT_TRUE(a_bc.Merge(bc).ok());
    DDSketch ca_b = c;
    ASSERT_TRUE(ca_b.Merge(a).ok());
    ASSERT_TRUE(ca_b.Merge(b).ok());
    std::shuffle(all.begin(), all.end(), rng);
    const std::string whole = Bytes(SketchOf(all, bound));
    DDSketch back;  // the buckets still hold every value
    ASSERT_TRUE(DDSketch::Decode(whole, &back).ok()) << trial;
    EXPECT_EQ(back.count(), 3000);
    EXPECT_EQ(Bytes(ab_c), whole) << trial;
    EXPECT_EQ(Bytes(a_bc), whole) << trial;
    EXPECT_EQ(Bytes(ca_b), whole) << trial;
    if (bound == 8) {
      EXPECT_LE(ab_c.positive().size(), 8u);
    }
  }
  EXPECT_FALSE(DDSketch(10000).Merge(DDSketch(20000)).ok());
  EXPECT_FALSE(DDSketch(10000, 64).Merge(DDSketch(10000, 65)).ok());
}

// Collapse folds the lowest magnitudes: the count stays exact and the high
// quantiles keep their accuracy.
TEST(DDSketchTest, CollapseKeepsHighQuantiles) {
  std::vector<int64_t> v;
  for (int64_t x = 1; x < 1000000000000; x = x * 11 / 10 + 1) v.push_back(x);
  const DDSketch s = SketchOf(v, 64);
  EXPECT_EQ(s.positive().size(), 64u);
  EXPECT_EQ(s.count(), static_cast<int64_t>(v.size()));
  const size_t rank = static_cast<size_t>(std::floor(0.99 * static_cast<double>(v.size() - 1)));
  const double exact = static_cast<double>(v[rank]);
  EXPECT_LE(std::abs(*s.Quantile(0.99) - exact), 0.01 * exact * (1 + 1e-9));
  EXPECT_GT(std::abs(*s.Quantile(0.01) - static_cast<double>(v[static_cast<size_t>(0.01 * (v.size() - 1))])), 1.0);
}

// Without a collapse, a retract leaves the sketch of the remaining values,
// byte for byte (min and max kept in the remaining values: a retract cannot
// narrow them); retracted to nothing, the empty sketch.
TEST(DDSketchTest, RetractRemovesExactly) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> d(-5000000, 5000000);
  std::vector<int64_t> v(20000);
  for (auto& x : v) x = d(rng) / 7 * 7;  // repeats, and zeros
  DDSketch s = SketchOf(v);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::vector<int64_t> kept;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % 3 == 0 && v[i] != *lo && v[i] != *hi) {
      ASSERT_TRUE(s.Retract(v[i]));
    } else {
      kept.push_back(v[i]);
    }
  }
  EXPECT_EQ(Bytes(s), Bytes(SketchOf(kept)));
  for (int64_t x : kept) ASSERT_TRUE(s.Retract(x));
  EXPECT_EQ(Bytes(s), Bytes(DDSketch()));
}

TEST(DDSketchTest, RetractOfAnAbsentValueIsRefused) {
  DDSketch s = SketchOf({5000000, 0});
  const std::string before = Bytes(s);
  EXPECT_FALSE(s.Retract(-5000000));  // no negative values at all
  EXPECT_FALSE(s.Retract(9000000));   // above every bucket
  EXPECT_FALSE(s.Retract(1000000));   // below every bucket of a store never collapsed
  ASSERT_TRUE(s.Retract(0));
  EXPECT_FALSE(s.Retract(0));  // the one zero is gone
  EXPECT_FALSE(DDSketch().Retract(1));
  ASSERT_TRUE(s.Add(0));
  EXPECT_EQ(Bytes(s), before);
}

// In a collapsed store a value below the lowest bucket comes out of it, where
// the collapse folded it; every value added can be retracted, back to the
// empty sketch.
TEST(DDSketchTest, RetractFromACollapsedStore) {
  std::vector<int64_t> v;
  for (int64_t x = 1; x < 1000000000000; x = x * 11 / 10 + 1) v.push_back(x);
  DDSketch s = SketchOf(v, 8);
  EXPECT_TRUE(s.positive_collapsed());
  EXPECT_FALSE(s.negative_collapsed());
  for (int64_t x : v) ASSERT_TRUE(s.Retract(x)) << x;
  EXPECT_EQ(Bytes(s), Bytes(DDSketch(DDSketch::kDefaultAccuracyPpm, 8)));
}

Status DecodeBytes(const std::string& bytes) {
  DDSketch s;
  return DDSketch::Decode(bytes, &s);
}

TEST(DDSketchTest, CorruptBytesRefused) {
  DDSketch s;
  for (int64_t v : {-3000000, -1, 0, 0, 7, 1000000, 2000000}) ASSERT_TRUE(s.Add(v));
  const std::string good = Bytes(s);
  ASSERT_TRUE(DecodeBytes(good).ok());
  for (size_t n = 0; n < good.size(); ++n) EXPECT_TRUE(DecodeBytes(good.substr(0, n)).IsCorruption()) << n;
  EXPECT_TRUE(DecodeBytes(good + '\0').IsCorruption());
  std::string bad = good;
  bad[0] = 2;  // version
  EXPECT_TRUE(DecodeBytes(bad).IsCorruption());
  // Hand-built encodings, each breaking one rule.
  const std::string head("\x01\x90\x4e\x80\x10", 5);
  EXPECT_TRUE(DecodeBytes(std::string("\x01\x00\x80\x10\x00\x00\x00\x00\x00", 9)).IsCorruption());  // accuracy 0
  EXPECT_TRUE(DecodeBytes(std::string("\x01\x90\x4e\x01\x00\x00\x00\x00\x00", 9)).IsCorruption());  // bound 1
  const std::string one("\x01\x02\x02\x02\x00", 5);  // count 1, sum 1, min 1, max 1, no zeros
  const std::string two("\x02\x04\x02\x02\x00", 5);  // count 2, sum 2, min 1, max 1, no zeros
  const std::string pos1("\x00\x01\x00\x01", 4);     // not collapsed, index 0 holds 1
  const std::string neg0("\x00\x00", 2);             // not collapsed, no buckets
  EXPECT_TRUE(DecodeBytes(head + one + pos1 + neg0).ok());
  EXPECT_TRUE(DecodeBytes(head + one + pos1 + neg0 + "x").IsCorruption());
  EXPECT_TRUE(DecodeBytes(head + std::string("\x01\x02\x04\x02\x00", 5) + pos1 + neg0).IsCorruption());  // min > max
  EXPECT_TRUE(DecodeBytes(head + std::string("\x81\x00\x02\x02\x02\x00", 6) + pos1 + neg0)
                  .IsCorruption());  // count 1 written in two bytes
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x00\x01\x00\x00", 4) + neg0).IsCorruption());  // empty bucket
  EXPECT_TRUE(DecodeBytes(head + two + std::string("\x00\x02\x00\x01\x01\x01", 6) + neg0).ok());
  EXPECT_TRUE(DecodeBytes(head + two + std::string("\x00\x02\x00\x01\x00\x01", 6) + neg0)
                  .IsCorruption());  // indexes not increasing
  EXPECT_TRUE(DecodeBytes(head + two + pos1 + neg0).IsCorruption());  // 1 of 2 in buckets
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x00\x01\x80\x19\x01", 5) + neg0)
                  .IsCorruption());  // index 3200, past the limit
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x00\x01\xff\x18\x01", 5) + neg0).ok());  // index 3199
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x01\x01\x00\x01", 4) + neg0).ok());  // collapsed
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x02\x01\x00\x01", 4) + neg0).IsCorruption());
  EXPECT_TRUE(DecodeBytes(head + std::string("\x00\x00\x00\x01\x00", 5) + neg0).IsCorruption());  // empty, collapsed
  // Any byte changed: refused, or read as a sketch whose encoding is exactly
  // those bytes (there is one encoding per sketch).
  std::mt19937_64 rng(8);
  for (int i = 0; i < 20000; ++i) {
    std::string m = good;
    m[rng() % m.size()] = static_cast<char>(rng());
    DDSketch back;
    if (DDSketch::Decode(m, &back).ok()) {
      EXPECT_EQ(Bytes(back), m);
    }
  }
}

}  // namespace
}  // namespace snapsink
