#include "engine/hyperloglog.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "engine/coding.h"

namespace snapsink {

namespace {

size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 128) {
    v >>= 7;
    ++n;
  }
  return n;
}

Status BadDistinct(const std::string& what) { return Status::Corruption("distinct sketch: " + what); }

constexpr size_t kHeaderBytes = 3;  // version, precision, form

}  // namespace

HyperLogLog::HyperLogLog(int precision) : precision_(precision) {}

uint64_t HyperLogLog::Hash(std::string_view item) { return XXH3_64bits_withSeed(item.data(), item.size(), kHashSeed); }

uint8_t HyperLogLog::Register(uint32_t index) const {
  if (!is_sparse()) return dense_[index];
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), Entry(index, 0));
  return it != sparse_.end() && (*it >> 6) == index ? static_cast<uint8_t>(*it & 63) : 0;
}

size_t HyperLogLog::CountSparseBytes() const {
  size_t bytes = 0;
  uint32_t prev = 0;
  for (uint32_t e : sparse_) {
    bytes += VarintLength((e >> 6) - prev) + 1;
    prev = e >> 6;
  }
  return bytes;
}

size_t HyperLogLog::SparseEncodedSize() const {
  if (is_sparse()) return kHeaderBytes + VarintLength(sparse_.size()) + sparse_bytes_;
  size_t n = 0, bytes = 0;
  uint32_t prev = 0;
  for (uint32_t i = 0; i < dense_.size(); ++i) {
    if (dense_[i] == 0) continue;
    bytes += VarintLength(i - prev) + 1;
    prev = i;
    ++n;
  }
  return kHeaderBytes + VarintLength(n) + bytes;
}

size_t HyperLogLog::DenseEncodedSize() const { return kHeaderBytes + register_count() / 4 * 3; }

void HyperLogLog::HoldDense() {
  if (!is_sparse()) return;
  dense_.assign(register_count(), 0);
  for (uint32_t e : sparse_) dense_[e >> 6] = static_cast<uint8_t>(e & 63);
  sparse_.clear();
  sparse_.shrink_to_fit();
  sparse_bytes_ = 0;
}

void HyperLogLog::ToDenseIfLarger() {
  if (is_sparse() && SparseEncodedSize() > DenseEncodedSize()) HoldDense();
}

bool HyperLogLog::operator==(const HyperLogLog& other) const {
  if (precision_ != other.precision_) return false;
  if (is_sparse() && other.is_sparse()) return sparse_ == other.sparse_;
  if (!is_sparse() && !other.is_sparse()) return dense_ == other.dense_;
  for (uint32_t i = 0; i < register_count(); ++i) {
    if (Register(i) != other.Register(i)) return false;
  }
  return true;
}

void HyperLogLog::AddHash(uint64_t hash) {
  const uint32_t index = static_cast<uint32_t>(hash >> (64 - precision_));
  const uint64_t w = hash << precision_;
  const uint8_t rank = w == 0 ? static_cast<uint8_t>(65 - precision_) : static_cast<uint8_t>(__builtin_clzll(w) + 1);
  if (!is_sparse()) {
    if (rank > dense_[index]) dense_[index] = rank;
    return;
  }
  auto it = std::lower_bound(sparse_.begin(), sparse_.end(), Entry(index, 0));
  if (it != sparse_.end() && (*it >> 6) == index) {
    if (rank > (*it & 63)) *it = Entry(index, rank);
    return;
  }
  // The new entry's delta and rank, and the next entry's delta now from it.
  const uint32_t prev = it == sparse_.begin() ? 0 : *(it - 1) >> 6;
  sparse_bytes_ += VarintLength(index - prev) + 1;
  if (it != sparse_.end()) {
    sparse_bytes_ += VarintLength((*it >> 6) - index);
    sparse_bytes_ -= VarintLength((*it >> 6) - prev);
  }
  sparse_.insert(it, Entry(index, rank));
  ToDenseIfLarger();
}

Status HyperLogLog::Merge(const HyperLogLog& other) {
  if (other.precision_ != precision_) {
    return Status::InvalidArgument("distinct sketches of different precision do not merge");
  }
  // Many entries together: the union is held as registers (see Forms).
  if (is_sparse() && other.is_sparse() && sparse_.size() + other.sparse_.size() <= register_count() / 16) {
    std::vector<uint32_t> out;
    out.reserve(sparse_.size() + other.sparse_.size());
    auto a = sparse_.cbegin();
    auto b = other.sparse_.cbegin();
    while (a != sparse_.cend() || b != other.sparse_.cend()) {
      if (b == other.sparse_.cend() || (a != sparse_.cend() && (*a >> 6) < (*b >> 6))) {
        out.push_back(*a++);
      } else if (a == sparse_.cend() || (*b >> 6) < (*a >> 6)) {
        out.push_back(*b++);
      } else {
        out.push_back(std::max(*a++, *b++));  // the same index: the higher rank
      }
    }
    sparse_ = std::move(out);
    sparse_bytes_ = CountSparseBytes();
    ToDenseIfLarger();
    return Status::OK();
  }
  HoldDense();
  if (other.is_sparse()) {
    for (uint32_t e : other.sparse_) dense_[e >> 6] = std::max(dense_[e >> 6], static_cast<uint8_t>(e & 63));
  } else {
    for (size_t i = 0; i < dense_.size(); ++i) dense_[i] = std::max(dense_[i], other.dense_[i]);
  }
  return Status::OK();
}

double HyperLogLog::LinearCountingLimit() const { return 3.0 * register_count(); }

uint64_t HyperLogLog::Estimate() const {
  const uint32_t m = register_count();
  uint32_t counts[66] = {};  // registers at each rank
  if (is_sparse()) {
    counts[0] = m - static_cast<uint32_t>(sparse_.size());
    for (uint32_t e : sparse_) ++counts[e & 63];
  } else {
    for (uint8_t r : dense_) ++counts[r];
  }
  const double md = m;
  if (counts[0] > 0) {
    const double lc = md * std::log(md / counts[0]);
    if (lc <= LinearCountingLimit()) return static_cast<uint64_t>(std::llround(lc));
  }
  double sum = 0;  // by rank, in this order
  for (int k = 0; k <= 65 - precision_; ++k) sum += std::ldexp(counts[k], -k);
  const double alpha = precision_ == 4   ? 0.673
                       : precision_ == 5 ? 0.697
                       : precision_ == 6 ? 0.709
                                         : 0.7213 / (1 + 1.079 / md);
  return static_cast<uint64_t>(std::llround(alpha * md * md / sum));
}

void HyperLogLog::Encode(std::string* dst) const {
  dst->push_back(static_cast<char>(kEncodingVersion));
  dst->push_back(static_cast<char>(precision_));
  const bool sparse = EncodesSparse();
  dst->push_back(sparse ? 0 : 1);
  if (sparse && is_sparse()) {
    coding::PutVarint64(dst, sparse_.size());
    uint32_t prev = 0;
    for (uint32_t e : sparse_) {
      coding::PutVarint64(dst, (e >> 6) - prev);
      dst->push_back(static_cast<char>(e & 63));
      prev = e >> 6;
    }
    return;
  }
  if (sparse) {  // the sparse form of registers held as m bytes
    const auto nonzero = static_cast<uint64_t>(dense_.size() - std::count(dense_.begin(), dense_.end(), 0));
    coding::PutVarint64(dst, nonzero);
    uint32_t prev = 0;
    for (uint32_t i = 0; i < dense_.size(); ++i) {
      if (dense_[i] == 0) continue;
      coding::PutVarint64(dst, i - prev);
      dst->push_back(static_cast<char>(dense_[i]));
      prev = i;
    }
    return;
  }
  for (size_t i = 0; i < dense_.size(); i += 4) {
    const uint32_t v = dense_[i] | dense_[i + 1] << 6 | dense_[i + 2] << 12 | dense_[i + 3] << 18;
    dst->push_back(static_cast<char>(v & 0xff));
    dst->push_back(static_cast<char>((v >> 8) & 0xff));
    dst->push_back(static_cast<char>(v >> 16));
  }
}

Status HyperLogLog::Decode(std::string_view bytes, HyperLogLog* out) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  if (end - p < static_cast<ptrdiff_t>(kHeaderBytes)) return BadDistinct("truncated header");
  if (static_cast<uint8_t>(p[0]) != kEncodingVersion) {
    return BadDistinct("unknown encoding version " + std::to_string(static_cast<uint8_t>(p[0])));
  }
  const int precision = static_cast<uint8_t>(p[1]);
  if (!ValidPrecision(precision)) return BadDistinct("precision " + std::to_string(precision) + " out of range");
  const uint8_t form = static_cast<uint8_t>(p[2]);
  if (form > 1) return BadDistinct("form neither 0 (sparse) nor 1 (dense)");
  p += kHeaderBytes;
  *out = HyperLogLog(precision);
  const uint32_t m = out->register_count();
  const uint8_t max_rank = static_cast<uint8_t>(65 - precision);
  if (form == 0) {
    uint64_t n = 0;
    if (!coding::GetShortestVarint64(&p, end, &n)) return BadDistinct("truncated register count");
    if (n > m) return BadDistinct("more registers than the precision has");
    uint64_t index = 0;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t delta = 0;
      if (!coding::GetShortestVarint64(&p, end, &delta) || p == end) return BadDistinct("truncated register");
      if (i > 0 && delta == 0) return BadDistinct("register indexes not increasing");
      if (delta >= m || index + delta >= m) return BadDistinct("register index out of range");
      index += delta;
      const uint8_t rank = static_cast<uint8_t>(*p++);
      if (rank == 0 || rank > max_rank) return BadDistinct("register rank out of range");
      out->sparse_.push_back(Entry(static_cast<uint32_t>(index), rank));
      out->sparse_bytes_ += VarintLength(delta) + 1;
    }
    if (out->SparseEncodedSize() > out->DenseEncodedSize()) return BadDistinct("sparse form past the dense threshold");
  } else {
    if (static_cast<size_t>(end - p) < m / 4 * 3) return BadDistinct("truncated registers");
    out->dense_.resize(m);
    for (uint32_t i = 0; i < m; i += 4, p += 3) {
      const uint32_t v =
          static_cast<uint8_t>(p[0]) | static_cast<uint8_t>(p[1]) << 8 | static_cast<uint8_t>(p[2]) << 16;
      for (uint32_t j = 0; j < 4; ++j) {
        const uint8_t r = static_cast<uint8_t>((v >> (6 * j)) & 63);
        if (r > max_rank) return BadDistinct("register rank out of range");
        out->dense_[i + j] = r;
      }
    }
    if (out->SparseEncodedSize() <= out->DenseEncodedSize()) return BadDistinct("dense form below the dense threshold");
  }
  if (p != end) return BadDistinct("bytes after the sketch");
  return Status::OK();
}

}  // namespace snapsink
