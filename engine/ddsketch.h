// A quantile sketch with a relative-error guarantee over exact decimal values
// (int64 micros, engine/decimal.h): DDSketch, after
//   Charles Masson, Jee E. Rim, Homin K. Lee. "DDSketch: A Fast and Fully-
//   Mergeable Quantile Sketch with Relative-Error Guarantees". PVLDB 12(12),
//   2019 (VLDB 2019).
//
// Beside the buckets the sketch keeps the exact count, sum, least and
// greatest value.
//
// Index mapping. For a relative accuracy a (stored in parts per million,
// accuracy_ppm; 1% = 10000 by default), gamma = (1 + a) / (1 - a) and the
// multiplier M = 1 / ln(gamma), with ln(gamma) = 2 atanh(a) summed as the
// first 40 terms of 2 (a + a^3/3 + a^5/5 + ...) in IEEE double, in that order,
// so every machine gets the same M without a libm logarithm. A magnitude
// x >= 1 micro (as a double, rounded to nearest) with x = m * 2^e,
// m in [0.5, 1) (frexp), has the piecewise-linear log
//   L(x) = (e - 1) + (2m - 1)        (exact log2 at powers of two)
// and the index i = floor(L(x) * M). Within an octave dL/d(ln x) lies in
// [1, 2), so a bucket [L^-1(i/M), L^-1((i+1)/M)) spans a ratio of at most
// gamma, and its representative 2 lo hi / (lo + hi) is within a of every
// value in it (the "linearly interpolated" mapping of the paper's successors:
// only frexp, ldexp, floor and basic arithmetic, all exact or correctly
// rounded, so the same value lands in the same bucket everywhere).
//
// Zero goes to zero_count; a negative value v to the negative store at the
// index of -v; a positive one to the positive store.
//
// Counts are signed: a retract takes one value back, count, sum and its
// bucket's count going down by one, whatever the bucket holds (the sender
// is trusted to retract what it added, as for a sum). A bucket whose count
// comes to exactly 0 is dropped, so the sketch is the sum of +1 and -1 per
// value applied: adds and retracts in any order or grouping give the same
// sketch, byte for byte. Were a value retracted that was never added, its
// bucket may hold a negative count; Quantile reads such a bucket as empty.
//
// min and max are the least and greatest value applied, added or retracted
// (has_range once one was); a retract never narrows them. Both are maxima
// over the values applied, so they too are the same in any grouping.
//
// Collapse. Each store holds indexes in [floor, top]: top is the index of
// the greatest magnitude of the store's sign applied (of max for the
// positive store, of -min for the negative one), floor = max(0, top -
// max_buckets + 1); so at most max_buckets buckets (2048 by default, which at
// 1% covers magnitudes over a factor 2.2e12). After every add, retract and
// merge, the counts of every index at or below floor are summed into floor
// (and dropped if that sum is 0): the lowest magnitudes (the values nearest
// zero, on either side) lose their accuracy first, the high quantiles never.
// floor depends only on min and max, which only grow apart, and folding
// below one floor then below a higher one is folding below the higher one:
// the collapse is a linear map that commutes with adding counts, so merge is
// associative and commutative, and sketches of parts merged equal the
// sketch of the whole, retracts included.
//
// The byte encoding is the one place a sketch is written (Encode) and read
// back (Decode); it is canonical: a sketch has exactly one encoding, Decode
// accepts no other, and Decode then Encode gives the same bytes.
//   u8      version (2)
//   varint  accuracy_ppm (kMinAccuracyPpm..kMaxAccuracyPpm)
//   varint  max_buckets (kMinMaxBuckets..kMaxMaxBuckets)
//   zigzag  count (adds minus retracts)
//   zigzag  sum (int64 micros)
//   u8      has_range (0 or 1); when 0 (no value ever applied) count and sum
//           are 0 and nothing follows
//   zigzag  min, zigzag max (min <= max)
//   zigzag  zero_count (0 unless min <= 0 <= max)
//   store   positive, then store negative, each:
//     varint  n (buckets, <= max_buckets)
//     n times: varint index delta (the first from 0, then from the previous
//              index; after the first, >= 1, so indexes strictly increase),
//              zigzag count (not 0)
// Each index of a store lies in [floor, top] above (a store of a sign no
// value had holds none); zero_count plus every bucket count equals count
// (as int64, wrapping); nothing follows. (varint: LEB128, zigzag: varint of
// ZigZag(v), engine/coding.h.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/status.h"

namespace snapsink {

class DDSketch {
 public:
  // A store's non-empty buckets, (index, count) by index: a sorted vector, so
  // an add to an existing bucket is a binary search and a sketch of a few
  // values is a few bytes.
  using Buckets = std::vector<std::pair<int32_t, int64_t>>;

  static constexpr uint32_t kDefaultAccuracyPpm = 10000;  // 1%
  static constexpr uint32_t kMinAccuracyPpm = 100;        // 0.01%
  static constexpr uint32_t kMaxAccuracyPpm = 500000;     // 50%
  static constexpr uint32_t kDefaultMaxBuckets = 2048;
  static constexpr uint32_t kMinMaxBuckets = 8;
  static constexpr uint32_t kMaxMaxBuckets = 65536;
  static constexpr uint8_t kEncodingVersion = 2;

  // REQUIRES: accuracy_ppm and max_buckets within their ranges above (see
  // ValidParameters; the caller checks user input first).
  explicit DDSketch(uint32_t accuracy_ppm = kDefaultAccuracyPpm, uint32_t max_buckets = kDefaultMaxBuckets);

  // Whether accuracy_ppm and max_buckets are within their ranges.
  static bool ValidParameters(uint32_t accuracy_ppm, uint32_t max_buckets);

  // Adds v. False (and the sketch unchanged) when the sum would leave int64.
  [[nodiscard]] bool Add(int64_t v);
  // Takes one v back: its bucket's count goes down by one (see the header
  // comment). False (and the sketch unchanged) when the sum would leave int64.
  [[nodiscard]] bool Retract(int64_t v);
  // Adds every value and retract of other (count and sum wrap). InvalidArgument
  // when the parameters differ; the sketch is then unchanged.
  Status Merge(const DDSketch& other);

  // The value at rank floor(q * (n - 1)) of the sorted values (0-based; n
  // the sum of the positive bucket counts, a bucket of a non-positive count
  // being empty), within the relative accuracy of it (unless its bucket was
  // collapsed), clamped to [min, max]. nullopt when n is 0; q is clamped to
  // [0, 1].
  std::optional<double> Quantile(double q) const;

  uint32_t accuracy_ppm() const { return accuracy_ppm_; }
  uint32_t max_buckets() const { return max_buckets_; }
  double relative_accuracy() const { return accuracy_ppm_ / 1e6; }
  int64_t count() const { return count_; }
  int64_t sum() const { return sum_; }
  // Whether a value was ever applied (added or retracted): min and max hold.
  bool has_range() const { return has_range_; }
  // The least and greatest value applied; meaningful when has_range().
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  int64_t zero_count() const { return zero_count_; }
  // Non-empty buckets, by index.
  const Buckets& positive() const { return positive_; }
  const Buckets& negative() const { return negative_; }
  // The lowest index a store may hold: buckets below it are folded into it
  // (INT32_MAX when the store can hold none: no value of its sign applied).
  int32_t FloorOf(bool positive) const;

  // The bucket index of magnitude x (>= 1), and the representative value of
  // a bucket: exposed for tests and for docs/FORMAT.md's worked example.
  int32_t IndexOf(uint64_t magnitude) const;
  double BucketValue(int32_t index) const;
  // Indexes are below this: the index of 2^64.
  int32_t IndexLimit() const;

  // Appends the canonical encoding to dst.
  void Encode(std::string* dst) const;
  // Reads exactly `bytes` (nothing may follow) into *out. Corruption naming
  // the first thing that does not hold; *out is then unspecified.
  static Status Decode(std::string_view bytes, DDSketch* out);

  bool operator==(const DDSketch&) const = default;

 private:
  bool Apply(int64_t v, int64_t one);
  void Widen(int64_t v);
  void Collapse();

  uint32_t accuracy_ppm_;
  uint32_t max_buckets_;
  double multiplier_;  // M = 1 / ln(gamma)
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  bool has_range_ = false;
  int64_t zero_count_ = 0;
  Buckets positive_;
  Buckets negative_;
};

}  // namespace snapsink
