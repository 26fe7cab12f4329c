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
    if (it->second == 0) store->erase(it);
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
      // Signed counts: a sum of 0 is no bucket.
      if (a->second + b->second != 0) out.emplace_back(a->first, a->second + b->second);
      ++a;
      ++b;
    }
  }
  *to = std::move(out);
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

int32_t DDSketch::FloorOf(bool positive) const {
  if (!has_range_ || (positive ? max_ <= 0 : min_ >= 0)) return std::numeric_limits<int32_t>::max();
  const int32_t top = IndexOf(Magnitude(positive ? max_ : min_));
  const int64_t floor = int64_t{top} - max_buckets_ + 1;
  return floor < 0 ? 0 : static_cast<int32_t>(floor);
}

void DDSketch::Collapse() {
  for (const bool positive : {true, false}) {
    Buckets* store = positive ? &positive_ : &negative_;
    if (store->empty() || store->front().first >= FloorOf(positive)) continue;
    const int32_t floor = FloorOf(positive);
    int64_t folded = 0;
    size_t n = 0;
    while (n < store->size() && (*store)[n].first <= floor) folded += (*store)[n++].second;
    store->erase(store->begin(), store->begin() + static_cast<ptrdiff_t>(n));
    if (folded != 0) store->emplace(store->begin(), floor, folded);
  }
}

void DDSketch::Widen(int64_t v) {
  if (!has_range_) {
    has_range_ = true;
    min_ = max_ = v;
    return;
  }
  if (v < min_) min_ = v;
  if (v > max_) max_ = v;
}

bool DDSketch::Apply(int64_t v, int64_t one) {
  int64_t sum = 0;
  if (one > 0 ? __builtin_add_overflow(sum_, v, &sum) : __builtin_sub_overflow(sum_, v, &sum)) return false;
  sum_ = sum;
  count_ = static_cast<int64_t>(static_cast<uint64_t>(count_) + static_cast<uint64_t>(one));
  Widen(v);
  if (v == 0) {
    zero_count_ += one;
  } else {
    AddTo(v > 0 ? &positive_ : &negative_, IndexOf(Magnitude(v)), one);
    Collapse();
  }
  return true;
}

bool DDSketch::Add(int64_t v) { return Apply(v, 1); }

bool DDSketch::Retract(int64_t v) { return Apply(v, -1); }

Status DDSketch::Merge(const DDSketch& other) {
  if (other.accuracy_ppm_ != accuracy_ppm_ || other.max_buckets_ != max_buckets_) {
    return Status::InvalidArgument("quantile sketches of different accuracy or bucket bound do not merge");
  }
  if (!other.has_range_) return Status::OK();
  // count and sum wrap, as an aggregate's do (engine/state_codec.h).
  sum_ = static_cast<int64_t>(static_cast<uint64_t>(sum_) + static_cast<uint64_t>(other.sum_));
  count_ = static_cast<int64_t>(static_cast<uint64_t>(count_) + static_cast<uint64_t>(other.count_));
  Widen(other.min_);
  Widen(other.max_);
  zero_count_ += other.zero_count_;
  MergeInto(&positive_, other.positive_);
  MergeInto(&negative_, other.negative_);
  Collapse();
  return Status::OK();
}

std::optional<double> DDSketch::Quantile(double q) const {
  // A bucket of a non-positive count (a retract of a value never added) is empty.
  auto held = [](int64_t c) { return c > 0 ? static_cast<uint64_t>(c) : uint64_t{0}; };
  uint64_t total = held(zero_count_);
  for (const auto& [i, c] : positive_) total += held(c);
  for (const auto& [i, c] : negative_) total += held(c);
  if (total == 0) return std::nullopt;
  if (!(q > 0)) q = 0;  // NaN too
  if (q > 1) q = 1;
  const uint64_t rank = static_cast<uint64_t>(std::floor(q * static_cast<double>(total - 1)));
  uint64_t seen = 0;
  std::optional<double> found;
  for (auto it = negative_.rbegin(); it != negative_.rend() && !found; ++it) {
    seen += held(it->second);
    if (seen > rank) found = -BucketValue(it->first);
  }
  if (!found) {
    seen += held(zero_count_);
    if (seen > rank) found = 0.0;
  }
  for (auto it = positive_.begin(); it != positive_.end() && !found; ++it) {
    seen += held(it->second);
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
  coding::PutVarint64(dst, coding::ZigZag(count_));
  coding::PutVarint64(dst, coding::ZigZag(sum_));
  dst->push_back(has_range_ ? 1 : 0);
  if (!has_range_) return;
  coding::PutVarint64(dst, coding::ZigZag(min_));
  coding::PutVarint64(dst, coding::ZigZag(max_));
  coding::PutVarint64(dst, coding::ZigZag(zero_count_));
  for (const Buckets* store : {&positive_, &negative_}) {
    coding::PutVarint64(dst, store->size());
    int32_t prev = 0;
    for (const auto& [i, c] : *store) {
      coding::PutVarint64(dst, static_cast<uint64_t>(i - prev));
      coding::PutVarint64(dst, coding::ZigZag(c));
      prev = i;
    }
  }
}

Status DDSketch::Decode(std::string_view bytes, DDSketch* out) {
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  if (p == end) return Bad("empty");
  if (static_cast<uint8_t>(*p) != kEncodingVersion) {
    return Bad("unknown encoding version " + std::to_string(static_cast<uint8_t>(*p)));
  }
  ++p;
  uint64_t ppm = 0, max_buckets = 0, count = 0, sum = 0, min = 0, max = 0, zeros = 0;
  if (!coding::GetShortestVarint64(&p, end, &ppm) ||
      !coding::GetShortestVarint64(&p, end, &max_buckets)) {
    return Bad("truncated header");
  }
  if (ppm > kMaxAccuracyPpm || max_buckets > kMaxMaxBuckets ||
      !ValidParameters(static_cast<uint32_t>(ppm), static_cast<uint32_t>(max_buckets))) {
    return Bad("accuracy or bucket bound out of range");
  }
  *out = DDSketch(static_cast<uint32_t>(ppm), static_cast<uint32_t>(max_buckets));
  if (!coding::GetShortestVarint64(&p, end, &count) ||
      !coding::GetShortestVarint64(&p, end, &sum)) {
    return Bad("truncated count");
  }
  out->count_ = coding::UnZigZag(count);
  out->sum_ = coding::UnZigZag(sum);
  if (p == end) return Bad("truncated range mark");
  if (static_cast<uint8_t>(*p) > 1) return Bad("range mark neither 0 nor 1");
  out->has_range_ = *p++ == 1;
  if (!out->has_range_) {
    if (count != 0 || sum != 0) return Bad("count or sum without a value applied");
    if (p != end) return Bad("bytes after the sketch");
    return Status::OK();
  }
  if (!coding::GetShortestVarint64(&p, end, &min) ||
      !coding::GetShortestVarint64(&p, end, &max)) {
    return Bad("truncated min/max");
  }
  out->min_ = coding::UnZigZag(min);
  out->max_ = coding::UnZigZag(max);
  if (out->min_ > out->max_) return Bad("min above max");
  if (!coding::GetShortestVarint64(&p, end, &zeros)) return Bad("truncated zero count");
  out->zero_count_ = coding::UnZigZag(zeros);
  if (out->zero_count_ != 0 && (out->min_ > 0 || out->max_ < 0)) return Bad("zero count outside min..max");
  uint64_t total = static_cast<uint64_t>(out->zero_count_);  // wrapping, as count does
  for (const bool positive : {true, false}) {
    Buckets* store = positive ? &out->positive_ : &out->negative_;
    const int32_t floor = out->FloorOf(positive);
    const int32_t top = floor == std::numeric_limits<int32_t>::max()
                            ? -1
                            : out->IndexOf(Magnitude(positive ? out->max_ : out->min_));
    uint64_t n = 0;
    if (!coding::GetShortestVarint64(&p, end, &n)) return Bad("truncated bucket count");
    if (n > max_buckets) return Bad("more buckets than the bound");
    uint64_t index = 0;
    for (uint64_t b = 0; b < n; ++b) {
      uint64_t delta = 0, c = 0;
      if (!coding::GetShortestVarint64(&p, end, &delta) ||
          !coding::GetShortestVarint64(&p, end, &c)) {
        return Bad("truncated bucket");
      }
      if (b > 0 && delta == 0) return Bad("bucket indexes not increasing");
      if (delta > static_cast<uint64_t>(std::max(top, 0)) || index + delta > static_cast<uint64_t>(std::max(top, 0))) {
        return Bad("bucket index above the one of the greatest magnitude");
      }
      index += delta;
      if (top < 0 || static_cast<int64_t>(index) < floor) return Bad("bucket index outside the collapse bound");
      if (c == 0) return Bad("empty bucket");
      total += c == 0 ? 0 : static_cast<uint64_t>(coding::UnZigZag(c));
      store->emplace_back(static_cast<int32_t>(index), coding::UnZigZag(c));
    }
  }
  if (static_cast<int64_t>(total) != out->count_) return Bad("bucket counts do not sum to count");
  if (p != end) return Bad("bytes after the sketch");
  return Status::OK();
}

}  // namespace snapsink
