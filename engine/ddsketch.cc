#include "engine/ddsketch.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/coding.h"

namespace snapsink {

namespace {

// M = 1 / ln(gamma), ln(gamma) = 2 atanh(a) = 2 (a + a^3/3 + a^5/5 + ...):
// 40 terms, summed in this order (a <= 0.5, so the 40th is below 2^-78).
double Multiplier(uint32_t accuracy_ppm) {
  const double a = accuracy_ppm / 1e6;
  const double a2 = a * a;
  double power = a;
  double sum = 0;
  for (int k = 0; k < 40; ++k) {
    const double term = power / (2 * k + 1);
    sum += term;
    power *= a2;
  }
  const double ln_gamma = 2 * sum;
  return 1 / ln_gamma;
}

// L^-1: the magnitude whose piecewise-linear log2 is l (>= 0).
double InverseLog(double l) {
  const double f = std::floor(l);
  const double s = l - f;
  return std::ldexp(1 + s, static_cast<int>(f));
}

uint64_t Magnitude(int64_t v) { return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

DDSketch::Buckets::iterator Find(DDSketch::Buckets* store, int32_t index) {
  return std::lower_bound(store->begin(), store->end(), index,
                          [](const std::pair<int32_t, int64_t>& b, int32_t i) { return b.first < i; });
}

void AddTo(DDSketch::Buckets* store, int32_t index, int64_t c) {
  if (!store->empty() && store->back().first < index) {
    store->emplace_back(index, c);
    return;
  }
  auto it = Find(store, index);
  if (it != store->end() && it->first == index) {
    it->second += c;
  } else {
    store->emplace(it, index, c);
  }
}

// Bucket counts summed by index: one pass over both.
void MergeInto(DDSketch::Buckets* to, const DDSketch::Buckets& from) {
  if (from.empty()) return;
  DDSketch::Buckets out;
  out.reserve(to->size() + from.size());
  auto a = to->cbegin();
  auto b = from.cbegin();
  while (a != to->cend() || b != from.cend()) {
    if (b == from.cend() || (a != to->cend() && a->first < b->first)) {
      out.push_back(*a++);
    } else if (a == to->cend() || b->first < a->first) {
      out.push_back(*b++);
    } else {
      out.emplace_back(a->first, a->second + b->second);
      ++a;
      ++b;
    }
  }
  *to = std::move(out);
}

bool TakeOne(DDSketch::Buckets* store, bool collapsed, int32_t index) {
  auto it = Find(store, index);
  if (it == store->end() || it->first != index) {
    // Below the lowest bucket of a collapsed store: where the collapse folded it.
    if (!collapsed || store->empty() || index > store->front().first) return false;
    it = store->begin();
  }
  if (--it->second == 0) store->erase(it);
  return true;
}

// A varint in its shortest form only (one encoding per sketch).
bool GetVarint(const char** p, const char* end, uint64_t* v) {
  const char* start = *p;
  if (!coding::GetVarint64(p, end, v)) return false;
  char buf[coding::kMaxVarint64Bytes];
  return coding::EncodeVarint64(buf, *v) - buf == *p - start;
}

Status Bad(const std::string& what) { return Status::Corruption("quantile sketch: " + what); }

}  // namespace

DDSketch::DDSketch(uint32_t accuracy_ppm, uint32_t max_buckets)
    : accuracy_ppm_(accuracy_ppm), max_buckets_(max_buckets), multiplier_(Multiplier(accuracy_ppm)) {}

bool DDSketch::ValidParameters(uint32_t accuracy_ppm, uint32_t max_buckets) {
  return accuracy_ppm >= kMinAccuracyPpm && accuracy_ppm <= kMaxAccuracyPpm && max_buckets >= kMinMaxBuckets &&
         max_buckets <= kMaxMaxBuckets;
}

int32_t DDSketch::IndexOf(uint64_t magnitude) const {
  int e = 0;
  const double m = std::frexp(static_cast<double>(magnitude), &e);
  const double l = (e - 1) + (2 * m - 1);
  return static_cast<int32_t>(std::floor(l * multiplier_));
}

int32_t DDSketch::IndexLimit() const { return IndexOf(std::numeric_limits<uint64_t>::max()) + 1; }

double DDSketch::BucketValue(int32_t index) const {
  const double lo = InverseLog(index / multiplier_);
  const double hi = InverseLog((index + 1) / multiplier_);
  return 2 * lo * hi / (lo + hi);
}

void DDSketch::CollapseIfNeeded(Buckets* store, bool* collapsed) const {
  if (store->size() <= max_buckets_) return;
  *collapsed = true;
  const size_t keep = store->size() - max_buckets_;  // the max_buckets-th highest
  int64_t folded = 0;
  for (size_t i = 0; i < keep; ++i) folded += (*store)[i].second;
  (*store)[keep].second += folded;
  store->erase(store->begin(), store->begin() + static_cast<ptrdiff_t>(keep));
}

bool DDSketch::Add(int64_t v) {
  int64_t sum = 0;
  if (__builtin_add_overflow(sum_, v, &sum) || count_ == std::numeric_limits<int64_t>::max()) return false;
  sum_ = sum;
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }
  ++count_;
  if (v == 0) {
    ++zero_count_;
  } else {
    Buckets* store = v > 0 ? &positive_ : &negative_;
    AddTo(store, IndexOf(Magnitude(v)), 1);
    CollapseIfNeeded(store, v > 0 ? &positive_collapsed_ : &negative_collapsed_);
  }
  return true;
}

bool DDSketch::Retract(int64_t v) {
  int64_t sum = 0;
  if (count_ == 0 || __builtin_sub_overflow(sum_, v, &sum)) return false;
  if (v == 0) {
    if (zero_count_ == 0) return false;
    --zero_count_;
  } else if (!TakeOne(v > 0 ? &positive_ : &negative_, v > 0 ? positive_collapsed_ : negative_collapsed_,
                      IndexOf(Magnitude(v)))) {
    return false;
  }
  sum_ = sum;
  if (--count_ == 0) {
    min_ = max_ = 0;
    positive_collapsed_ = negative_collapsed_ = false;
  }
  return true;
}

Status DDSketch::Merge(const DDSketch& other) {
  if (other.accuracy_ppm_ != accuracy_ppm_ || other.max_buckets_ != max_buckets_) {
    return Status::InvalidArgument("quantile sketches of different accuracy or bucket bound do not merge");
  }
  int64_t sum = 0, count = 0;
  if (__builtin_add_overflow(sum_, other.sum_, &sum) || __builtin_add_overflow(count_, other.count_, &count)) {
    return Status::InvalidArgument("quantile sketch: sum or count out of range");
  }
  if (other.count_ == 0) return Status::OK();
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    if (other.min_ < min_) min_ = other.min_;
    if (other.max_ > max_) max_ = other.max_;
  }
  sum_ = sum;
  count_ = count;
  zero_count_ += other.zero_count_;
  MergeInto(&positive_, other.positive_);
  MergeInto(&negative_, other.negative_);
  positive_collapsed_ = positive_collapsed_ || other.positive_collapsed_;
  negative_collapsed_ = negative_collapsed_ || other.negative_collapsed_;
  CollapseIfNeeded(&positive_, &positive_collapsed_);
  CollapseIfNeeded(&negative_, &negative_collapsed_);
  return Status::OK();
}

std::optional<double> DDSketch::Quantile(double q) const {
  if (count_ == 0) return std::nullopt;
  if (!(q > 0)) q = 0;  // NaN too
  if (q > 1) q = 1;
  const uint64_t rank = static_cast<uint64_t>(std::floor(q * static_cast<double>(count_ - 1)));
  uint64_t seen = 0;
  std::optional<double> found;
  for (auto it = negative_.rbegin(); it != negative_.rend() && !found; ++it) {
    seen += static_cast<uint64_t>(it->second);
    if (seen > rank) found = -BucketValue(it->first);
  }
  if (!found) {
    seen += static_cast<uint64_t>(zero_count_);
    if (seen > rank) found = 0.0;
  }
  for (auto it = positive_.begin(); it != positive_.end() && !found; ++it) {
    seen += static_cast<uint64_t>(it->second);
    if (seen > rank) found = BucketValue(it->first);
  }
  double v = found ? *found : static_cast<double>(max_);
  if (v < static_cast<double>(min_)) v = static_cast<double>(min_);
  if (v > static_cast<double>(max_)) v = static_cast<double>(max_);
  return v;
}

void DDSketch::Encode(std::string* dst) const {
  dst->push_back(static_cast<char>(kEncodingVersion));
  coding::PutVarint64(dst, accuracy_ppm_);
  coding::PutVarint64(dst, max_buckets_);
  coding::PutVarint64(dst, static_cast<uint64_t>(count_));
  coding::PutVarint64(dst, coding::ZigZag(sum_));
  if (count_ > 0) {
    coding::PutVarint64(dst, coding::ZigZag(min_));
    coding::PutVarint64(dst, coding::ZigZag(max_));
  }
  coding::PutVarint64(dst, static_cast<uint64_t>(zero_count_));
  for (const auto& [store, collapsed] :
       {std::pair{&positive_, positive_collapsed_}, {&negative_, negative_collapsed_}}) {
    dst->push_back(collapsed ? 1 : 0);
    coding::PutVarint64(dst, store->size());
    int32_t prev = 0;
    for (const auto& [i, c] : *store) {
      coding::PutVarint64(dst, static_cast<uint64_t>(i - prev));
      coding::PutVarint64(dst, static_cast<uint64_t>(c));
      prev = i;
    }
  }
}

Status DDSketch::Decode(std::string_view bytes, DDSketch* out) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (p == end) return Bad("empty");
  if (static_cast<uint8_t>(*p) != kEncodingVersion) {
    return Bad("unknown encoding version " + std::to_string(static_cast<uint8_t>(*p)));
  }
  ++p;
  uint64_t ppm = 0, max_buckets = 0, count = 0, sum = 0, min = 0, max = 0, zeros = 0;
  if (!GetVarint(&p, end, &ppm) || !GetVarint(&p, end, &max_buckets)) return Bad("truncated header");
  if (ppm > kMaxAccuracyPpm || max_buckets > kMaxMaxBuckets ||
      !ValidParameters(static_cast<uint32_t>(ppm), static_cast<uint32_t>(max_buckets))) {
    return Bad("accuracy or bucket bound out of range");
  }
  *out = DDSketch(static_cast<uint32_t>(ppm), static_cast<uint32_t>(max_buckets));
  if (!GetVarint(&p, end, &count) || !GetVarint(&p, end, &sum)) return Bad("truncated count");
  if (count > kInt64Max) return Bad("count out of range");
  if (count > 0) {
    if (!GetVarint(&p, end, &min) || !GetVarint(&p, end, &max)) return Bad("truncated min/max");
    if (coding::UnZigZag(min) > coding::UnZigZag(max)) return Bad("min above max");
  }
  if (!GetVarint(&p, end, &zeros)) return Bad("truncated zero count");
  if (zeros > count) return Bad("zero count above count");
  out->count_ = static_cast<int64_t>(count);
  out->sum_ = coding::UnZigZag(sum);
  out->min_ = coding::UnZigZag(min);
  out->max_ = coding::UnZigZag(max);
  out->zero_count_ = static_cast<int64_t>(zeros);
  uint64_t total = zeros;
  const uint64_t limit = static_cast<uint64_t>(out->IndexLimit());
  for (const auto& [store, collapsed] :
       {std::pair{&out->positive_, &out->positive_collapsed_}, {&out->negative_, &out->negative_collapsed_}}) {
    if (p == end) return Bad("truncated store");
    if (static_cast<uint8_t>(*p) > 1) return Bad("collapsed mark neither 0 nor 1");
    *collapsed = *p++ == 1;
    if (*collapsed && count == 0) return Bad("an empty sketch marked collapsed");
    uint64_t n = 0;
    if (!GetVarint(&p, end, &n)) return Bad("truncated bucket count");
    if (n > max_buckets) return Bad("more buckets than the bound");
    uint64_t index = 0;
    for (uint64_t b = 0; b < n; ++b) {
      uint64_t delta = 0, c = 0;
      if (!GetVarint(&p, end, &delta) || !GetVarint(&p, end, &c)) return Bad("truncated bucket");
      if (b > 0 && delta == 0) return Bad("bucket indexes not increasing");
      if (delta >= limit || index + delta >= limit) return Bad("bucket index out of range");
      index += delta;
      if (c == 0) return Bad("empty bucket");
      if (c > count - total) return Bad("bucket counts above count");
      total += c;
      store->emplace_back(static_cast<int32_t>(index), static_cast<int64_t>(c));
    }
  }
  if (total != count) return Bad("bucket counts below count");
  if (p != end) return Bad("bytes after the sketch");
  return Status::OK();
}

}  // namespace snapsink
