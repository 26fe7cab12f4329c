// A distinct-count sketch of item strings: HyperLogLog++, after
//   Stefan Heule, Marc Nunkesser, Alexander Hall. "HyperLogLog in Practice:
//   Algorithmic Engineering of a State of The Art Cardinality Estimation
//   Algorithm". EDBT 2013.
// with a 64-bit hash, a sparse form while small and linear counting for
// small cardinalities, as there. What differs: the sparse form keeps the
// registers' own precision p (the paper's sparse form indexes at a finer
// p' = 25), so it is only a shorter listing of the same registers and the
// form never changes an estimate; and the empirical bias correction is not
// embedded (see Estimate()).
//
// Hash. An item (any bytes) is hashed with XXH3_64bits_withSeed(item,
// kHashSeed), kHashSeed = 0 (so the same value as XXH3_64bits). With
// precision p (kMinPrecision..kMaxPrecision, 14 by default) there are
// m = 2^p registers; the item's register index is the hash's top p bits and
// its rank is 1 + the number of leading zeros of the remaining 64 - p bits
// (65 - p when they are all zero). A register holds the greatest rank seen
// at its index, 0 when none.
//
// Forms. The registers are the state; the form is a function of them, not
// of history. Sparse: the non-zero registers as sorted (index, rank)
// pairs, so a sketch of a few items is a few bytes. Dense: all m registers.
// The sketch is dense exactly when its sparse encoding would be longer than
// its dense encoding (the sparse size only grows as registers fill, so a
// sketch turns dense once and stays so). Merge takes the register-wise
// max, so the registers, the form and the bytes depend only on the set of
// items added, not on their order, repeats or the merge tree.
//
// In memory, a sketch holds its registers as the sorted sparse list or as
// m bytes. Add and Decode hold them as the form says; Merge also holds a
// union of two sparse lists of more than m/16 entries together as m bytes,
// though its form may still be sparse: merging many small sketches into
// one (a roll-up of a day of windows) then costs each merge its own
// entries, where a sorted list would be rewritten whole at every merge.
// Encode writes the form the registers call for, whatever is held, so the
// bytes and the estimate are the same either way.
//
// The byte encoding is the one place a sketch is written (Encode) and read
// back (Decode); it is canonical: a sketch has exactly one encoding, Decode
// accepts no other, and Decode then Encode gives the same bytes.
//   u8      version (1)
//   u8      precision p (kMinPrecision..kMaxPrecision)
//   u8      form: 0 sparse, 1 dense
//   sparse: varint n (non-zero registers, <= m), then n times: varint index
//           delta (the first from 0, then from the previous index; after
//           the first, >= 1, so indexes strictly increase; each index < m),
//           u8 rank (1..65 - p)
//   dense:  3m/4 bytes: register i in bits 6i..6i+5 of the byte string,
//           least significant bit first (byte 6i/8, ...), each 0..65 - p
// Sparse exactly when that encoding is no longer than the dense one;
// nothing follows. (varint: LEB128 in its shortest form, engine/coding.h.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace snapsink {

class HyperLogLog {
 public:
  static constexpr int kDefaultPrecision = 14;
  static constexpr int kMinPrecision = 4;
  static constexpr int kMaxPrecision = 18;
  static constexpr uint64_t kHashSeed = 0;
  static constexpr uint8_t kEncodingVersion = 1;

  // REQUIRES: ValidPrecision(precision) (the caller checks user input first).
  explicit HyperLogLog(int precision = kDefaultPrecision);

  static bool ValidPrecision(int precision) { return precision >= kMinPrecision && precision <= kMaxPrecision; }
  // The hash of an item, as Add takes it.
  static uint64_t Hash(std::string_view item);

  void Add(std::string_view item) { AddHash(Hash(item)); }
  // Adds an item by its Hash (the same effect as Add of that item).
  void AddHash(uint64_t hash);
  // Takes the register-wise max with other. InvalidArgument (and the sketch
  // unchanged) when the precisions differ.
  Status Merge(const HyperLogLog& other);

  // The estimated number of distinct items, rounded to the nearest integer.
  // Linear counting m ln(m / V) (V: registers at zero) while V > 0 and that
  // estimate is at most LinearCountingLimit(); above it, the raw estimate
  // alpha_m m^2 / sum(2^-register). The paper's empirical bias correction
  // of the raw estimate up to 5m is not embedded; the crossover is placed
  // where the raw estimate's bias has fallen below linear counting's error
  // instead (tests/hyperloglog_test.cc measures both there). No large-range
  // correction: with 64-bit hashes it is not needed.
  uint64_t Estimate() const;
  // 3m, for every precision: linear counting is used up to it.
  double LinearCountingLimit() const;

  int precision() const { return precision_; }
  uint32_t register_count() const { return uint32_t{1} << precision_; }
  // Whether the registers are held as the sorted sparse list (else as m
  // bytes); the form is then sparse too.
  bool is_sparse() const { return dense_.empty(); }
  // Whether the encoding takes the sparse form (see Forms above).
  bool EncodesSparse() const { return is_sparse() || SparseEncodedSize() <= DenseEncodedSize(); }
  // The register at index (< register_count()), whatever the form.
  uint8_t Register(uint32_t index) const;

  // Appends the canonical encoding to dst.
  void Encode(std::string* dst) const;
  // Reads exactly `bytes` (nothing may follow) into *out. Corruption naming
  // the first thing that does not hold; *out is then unspecified.
  static Status Decode(std::string_view bytes, HyperLogLog* out);

  // The same precision and registers (however each holds them).
  bool operator==(const HyperLogLog& other) const;

 private:
  // A sparse entry: index << 6 | rank (rank <= 61), so entries sort by index.
  static uint32_t Entry(uint32_t index, uint8_t rank) { return index << 6 | rank; }
  // The encoded size of the sparse form of these registers, whatever the form.
  size_t SparseEncodedSize() const;
  // Sum over sparse_ of the bytes of its index delta and rank.
  size_t CountSparseBytes() const;
  size_t DenseEncodedSize() const;
  void ToDenseIfLarger();
  // Holds the registers as m bytes.
  void HoldDense();

  int precision_;
  std::vector<uint32_t> sparse_;  // while dense_ is empty
  std::vector<uint8_t> dense_;    // m registers once dense
  size_t sparse_bytes_ = 0;       // CountSparseBytes(), kept as entries go in
};

}  // namespace snapsink
