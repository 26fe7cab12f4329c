// engine/ddsketch: quantiles against the exact sorted values, merge and
// retract against the sketch of the resulting multiset, and the byte
// encoding pinned, round-tripped and refused when corrupt.
#include "engine/ddsketch.h"

#include "engine/coding.h"

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
  // version 2 | ppm 10000 | bound 2048 | count 3 | sum 0 | has_range 1 |
  // min -1 | max 1 | zeros 1 | positive: 1 bucket (index 0, count 1) |
  // negative: the same.
  EXPECT_EQ(Bytes(s), std::string("\x02\x90\x4e\x80\x10\x06\x00\x01\x01\x02\x02\x01\x00\x02\x01\x00\x02", 17));
  EXPECT_EQ(Bytes(DDSketch()), std::string("\x02\x90\x4e\x80\x10\x00\x00\x00", 8));
  // A retract of a value never added: a bucket of count -1 (zigzag 1).
  DDSketch r;
  ASSERT_TRUE(r.Retract(1));
  EXPECT_EQ(Bytes(r), std::string("\x02\x90\x4e\x80\x10\x01\x01\x01\x02\x02\x00\x01\x00\x01\x00", 15));
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
  EXPECT_LE(s.positive().size(), 64u);
  EXPECT_EQ(s.positive().front().first, s.FloorOf(true));
  EXPECT_EQ(s.positive().back().first - s.positive().front().first, 63);
  EXPECT_EQ(s.count(), static_cast<int64_t>(v.size()));
  const size_t rank = static_cast<size_t>(std::floor(0.99 * static_cast<double>(v.size() - 1)));
  const double exact = static_cast<double>(v[rank]);
  EXPECT_LE(std::abs(*s.Quantile(0.99) - exact), 0.01 * exact * (1 + 1e-9));
  EXPECT_GT(std::abs(*s.Quantile(0.01) - static_cast<double>(v[static_cast<size_t>(0.01 * (v.size() - 1))])), 1.0);
}

// A retract leaves the sketch of the remaining values, byte for byte, while
// min and max stay among them (a retract cannot narrow them); retracted to
// nothing, no bucket and count 0, min and max kept.
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
  EXPECT_EQ(s.count(), 0);
  EXPECT_EQ(s.sum(), 0);
  EXPECT_EQ(s.zero_count(), 0);
  EXPECT_TRUE(s.positive().empty());
  EXPECT_TRUE(s.negative().empty());
  EXPECT_EQ(s.min(), *lo);
  EXPECT_EQ(s.max(), *hi);
  EXPECT_FALSE(s.Quantile(0.5).has_value());
}

// A retract of a value never added leaves a negative bucket, read as empty;
// the add that comes later cancels it, as if in the other order.
TEST(DDSketchTest, RetractBeforeItsAddCommutes) {
  DDSketch s = SketchOf({5000000, 0});
  ASSERT_TRUE(s.Retract(-5000000));
  ASSERT_EQ(s.negative().size(), 1u);
  EXPECT_EQ(s.negative()[0].second, -1);
  EXPECT_EQ(s.count(), 1);
  EXPECT_NEAR(*s.Quantile(1.0), 5000000, 50000);  // the 0 and the 5: the -1 bucket is empty
  EXPECT_EQ(*s.Quantile(0.0), 0);
  ASSERT_TRUE(s.Add(-5000000));
  DDSketch other = SketchOf({5000000, 0, -5000000});  // the add first, then the retract
  ASSERT_TRUE(other.Retract(-5000000));
  EXPECT_EQ(Bytes(s), Bytes(other));
  EXPECT_TRUE(s.negative().empty());
  DDSketch z;
  ASSERT_TRUE(z.Retract(0));
  EXPECT_EQ(z.zero_count(), -1);
  EXPECT_FALSE(z.Quantile(0.5).has_value());
}

// Adds and retracts split into parts at random, each part's sketch merged in
// a random order: the same bytes as applying them one by one, collapse
// included (bound 8).
TEST(DDSketchTest, SignedMergeIsGroupingFree) {
  std::mt19937_64 rng(9);
  std::lognormal_distribution<double> d(std::log(1e6), 4.0);
  for (int trial = 0; trial < 40; ++trial) {
    const uint32_t bound = trial % 2 ? 8 : DDSketch::kDefaultMaxBuckets;
    std::vector<std::pair<int64_t, bool>> ops;  // value, retract
    for (int i = 0; i < 2000; ++i) {
      const int64_t m = std::max<int64_t>(1, std::llround(d(rng)));
      const int64_t v = rng() % 5 == 0 ? 0 : rng() % 3 == 0 ? -m : m;
      ops.emplace_back(v, false);
      if (rng() % 3 == 0) ops.emplace_back(v, true);
    }
    DDSketch one(DDSketch::kDefaultAccuracyPpm, bound);
    for (const auto& [v, r] : ops) ASSERT_TRUE(r ? one.Retract(v) : one.Add(v));
    std::shuffle(ops.begin(), ops.end(), rng);
    std::vector<DDSketch> parts(5, DDSketch(DDSketch::kDefaultAccuracyPpm, bound));
    for (const auto& [v, r] : ops) {
      DDSketch& p = parts[rng() % parts.size()];
      ASSERT_TRUE(r ? p.Retract(v) : p.Add(v));
    }
    std::shuffle(parts.begin(), parts.end(), rng);
    DDSketch merged(DDSketch::kDefaultAccuracyPpm, bound);
    for (const DDSketch& p : parts) ASSERT_TRUE(merged.Merge(p).ok());
    EXPECT_EQ(Bytes(merged), Bytes(one)) << trial;
    EXPECT_LE(merged.positive().size(), bound);
    DDSketch back;
    ASSERT_TRUE(DDSketch::Decode(Bytes(merged), &back).ok()) << trial;
    EXPECT_EQ(back, merged);
  }
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
  bad[0] = 1;  // version
  EXPECT_TRUE(DecodeBytes(bad).IsCorruption());
  // Hand-built encodings, each breaking one rule.
  const std::string head("\x02\x90\x4e\x80\x10", 5);
  EXPECT_TRUE(DecodeBytes(std::string("\x02\x00\x80\x10\x00\x00\x00", 7)).IsCorruption());  // accuracy 0
  EXPECT_TRUE(DecodeBytes(std::string("\x02\x90\x4e\x01\x00\x00\x00", 7)).IsCorruption());  // bound 1
  EXPECT_TRUE(DecodeBytes(head + std::string("\x00\x00\x00", 3)).ok());                      // empty
  EXPECT_TRUE(DecodeBytes(head + std::string("\x02\x00\x00", 3)).IsCorruption());  // count without a value
  EXPECT_TRUE(DecodeBytes(head + std::string("\x00\x00\x02", 3)).IsCorruption());  // range mark 2
  const std::string one("\x02\x02\x01\x02\x02\x00", 6);  // count 1, sum 1, range, min 1, max 1, no zeros
  const std::string two("\x04\x04\x01\x02\x04\x00", 6);  // count 2, sum 4, range, min 1, max 2, no zeros
  const std::string pos1("\x01\x00\x02", 3);             // index 0 holds 1
  const std::string neg0("\x00", 1);                     // no buckets
  EXPECT_TRUE(DecodeBytes(head + one + pos1 + neg0).ok());
  EXPECT_TRUE(DecodeBytes(head + one + pos1 + neg0 + "x").IsCorruption());
  EXPECT_TRUE(DecodeBytes(head + std::string("\x02\x02\x01\x04\x02\x00", 6) + pos1 + neg0).IsCorruption());  // min>max
  EXPECT_TRUE(DecodeBytes(head + std::string("\x82\x00\x02\x01\x02\x02\x00", 7) + pos1 + neg0)
                  .IsCorruption());  // count 1 written in two bytes
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x01\x00\x00", 3) + neg0).IsCorruption());  // empty bucket
  EXPECT_TRUE(DecodeBytes(head + std::string("\x02\x02\x01\x02\x02\x02", 6) + pos1 + neg0)
                  .IsCorruption());  // zeros outside min..max
  EXPECT_TRUE(DecodeBytes(head + std::string("\x00\x00\x01\x02\x02\x00", 6) + std::string("\x02\x00\x01\x00\x02", 5) +
                          neg0)
                  .IsCorruption());  // indexes not increasing
  EXPECT_TRUE(DecodeBytes(head + two + pos1 + neg0).IsCorruption());  // 1 of 2 in buckets
  EXPECT_TRUE(DecodeBytes(head + one + std::string("\x01\x01\x02", 3) + neg0)
                  .IsCorruption());  // index 1, above max's index 0
  EXPECT_TRUE(DecodeBytes(head + one + neg0 + pos1).IsCorruption());  // a negative bucket, no negative value
  EXPECT_TRUE(DecodeBytes(head + std::string("\x00\x00\x01\x02\x02\x00", 6) + std::string("\x01\x00\x01", 3) + neg0)
                  .IsCorruption());  // a bucket of -1 beside count 0
  EXPECT_TRUE(DecodeBytes(head + std::string("\x01\x01\x01\x02\x02\x00", 6) + std::string("\x01\x00\x01", 3) + neg0)
                  .ok());  // count -1, sum -1: the retract of a 1 never added
  {
    // At bound 8 a store topped by index t holds t-7..t: the 1 is folded
    // into t-7; written at its own index 0 instead, refused.
    DDSketch c(DDSketch::kDefaultAccuracyPpm, 8);
    ASSERT_TRUE(c.Add(1));
    ASSERT_TRUE(c.Add(7400000));
    const int32_t top = c.positive().back().first;
    ASSERT_EQ(c.positive().front().first, top - 7);
    EXPECT_EQ(c.FloorOf(true), top - 7);
    auto encode = [&](int32_t low) {
      std::string b("\x02\x90\x4e\x08\x04", 5);  // bound 8, count 2
      coding::PutVarint64(&b, coding::ZigZag(7400001));
      b.push_back(1);
      coding::PutVarint64(&b, coding::ZigZag(1));
      coding::PutVarint64(&b, coding::ZigZag(7400000));
      b += std::string("\x00\x02", 2);  // no zeros, 2 positive buckets
      coding::PutVarint64(&b, static_cast<uint64_t>(low));
      b.push_back(2);
      coding::PutVarint64(&b, static_cast<uint64_t>(top - low));
      b += std::string("\x02\x00", 2);
      return b;
    };
    EXPECT_EQ(encode(top - 7), Bytes(c));
    EXPECT_TRUE(DecodeBytes(encode(top - 7)).ok());
    EXPECT_TRUE(DecodeBytes(encode(0)).IsCorruption());
  }
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
