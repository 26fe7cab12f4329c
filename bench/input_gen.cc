#include "bench/input_gen.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "bench/bench_util.h"

namespace snapsink::bench {

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void StreamStats::Add(const StreamStats& o) {
  lines += o.lines;
  bytes += o.bytes;
  fresh += o.fresh;
  duplicates += o.duplicates;
  gap_fills += o.gap_fills;
  skipped += o.skipped;
}

namespace {

void AppendUint(std::string* out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendPadded(std::string* out, uint64_t v, int width) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  for (int n = static_cast<int>(r.ptr - buf); n < width; ++n) out->push_back('0');
  out->append(buf, r.ptr);
}

// Days since 1970-01-01 -> civil date (Howard Hinnant's civil_from_days).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

// Appends the micros value as a JSON number with up to 6 decimals ("12.5", "3").
void AppendMicros(std::string* out, int64_t micros) {
  if (micros < 0) {
    out->push_back('-');
    micros = -micros;
  }
  AppendUint(out, static_cast<uint64_t>(micros / 1000000));
  int64_t frac = micros % 1000000;
  if (frac == 0) return;
  int digits = 6;
  while (frac % 10 == 0) {
    frac /= 10;
    --digits;
  }
  out->push_back('.');
  AppendPadded(out, static_cast<uint64_t>(frac), digits);
}

class LineFile {
 public:
  explicit LineFile(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (f_ == nullptr) Die("cannot create " + path);
    buf_.reserve(kFlushAt + 4096);
  }
  // Synced, so that writing back a freshly generated input (hundreds of MB)
  // does not throttle the writes of the benchmark that runs next.
  ~LineFile() {
    Flush();
    if (std::fflush(f_) != 0 || ::fdatasync(::fileno(f_)) != 0 || std::fclose(f_) != 0) Die("close " + path_);
  }
  std::string* buf() { return &buf_; }
  void MaybeFlush() {
    if (buf_.size() >= kFlushAt) Flush();
  }

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  void Flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) Die("write " + path_);
    buf_.clear();
  }
  std::string path_;
  std::FILE* f_;
  std::string buf_;
};

constexpr const char* kRegions[] = {"eu-west", "eu-central", "us-east", "us-west", "ap-south", "ap-northeast"};
constexpr const char* kServices[] = {"checkout", "payments", "catalog", "search", "shipping", "accounts"};
constexpr const char* kMetrics[] = {"orders.count",   "orders.revenue", "latency.sum_ms",  "errors.count",
                                    "cart.additions", "refunds.amount", "sessions.count", "signups.count"};

}  // namespace

void AppendRfc3339(std::string* out, int64_t ms) {
  int64_t days = ms / 86400000;
  int64_t rem = ms % 86400000;
  if (rem < 0) {
    rem += 86400000;
    --days;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  const uint64_t secs = static_cast<uint64_t>(rem / 1000), milli = static_cast<uint64_t>(rem % 1000);
  AppendPadded(out, static_cast<uint64_t>(y), 4);
  out->push_back('-');
  AppendPadded(out, m, 2);
  out->push_back('-');
  AppendPadded(out, d, 2);
  out->push_back('T');
  AppendPadded(out, secs / 3600, 2);
  out->push_back(':');
  AppendPadded(out, secs / 60 % 60, 2);
  out->push_back(':');
  AppendPadded(out, secs % 60, 2);
  if (milli != 0) {
    out->push_back('.');
    AppendPadded(out, milli, 3);
  }
  out->push_back('Z');
}

EventStream::EventStream(const StreamSpec& spec) : spec_(spec), rng_(spec.seed) {
  for (int p = 0; p < spec.producers; ++p) {
    Producer pr;
    pr.name = std::string(kServices[p % 6]) + "-" + kRegions[(p / 6) % 6] + "-";
    AppendPadded(&pr.name, static_cast<uint64_t>(p), 4);
    producers_.push_back(std::move(pr));
  }
  for (int m = 0; m < spec.metrics; ++m) {
    std::string name = kMetrics[m % 8];
    if (m >= 8) AppendUint(&(name += "."), static_cast<uint64_t>(m / 8));
    metric_names_.push_back(std::move(name));
  }
  for (int k = 0; k < spec.keys; ++k) {
    std::string name = std::string(kRegions[k % 6]) + "-";
    AppendPadded(&name, static_cast<uint64_t>(k), 3);
    key_names_.push_back(std::move(name));
  }
  recent_.resize(kRecent);
}

void EventStream::FormatEvent(std::string* out, uint32_t producer, uint64_t seq, int64_t ts_ms) {
  out->append("{\"producer\":\"");
  out->append(producers_[producer].name);
  out->append("\",\"epoch\":1,\"seq\":");
  AppendUint(out, seq);
  out->append(",\"ts\":");
  if (rng_.Uniform(4) == 0) {
    AppendUint(out, static_cast<uint64_t>(ts_ms));
  } else {
    out->push_back('"');
    AppendRfc3339(out, ts_ms);
    out->push_back('"');
  }
  out->append(",\"metric\":\"");
  out->append(metric_names_[rng_.Uniform(metric_names_.size())]);
  out->append("\",\"key\":\"");
  // Skewed: low-numbered keys are hotter (the minimum of two uniform picks).
  out->append(key_names_[std::min(rng_.Uniform(key_names_.size()), rng_.Uniform(key_names_.size()))]);
  out->append("\",\"value\":");
  int64_t micros = static_cast<int64_t>(rng_.Uniform(1000)) * 1000000;
  if (rng_.Uniform(5) != 0) micros += static_cast<int64_t>(rng_.Uniform(1000000));
  AppendMicros(out, micros);
  if (rng_.Uniform(50) == 0) out->append(",\"op\":\"retract\"");
  out->append("}\n");
}

StreamStats EventStream::Write(const std::string& path, uint64_t lines) {
  StreamStats st;
  LineFile file(path);
  std::string* buf = file.buf();
  const int64_t span = int64_t{spec_.hours} * 3600000;
  for (uint64_t i = 0; i < lines; ++i, ++line_no_) {
    const size_t before = buf->size();
    // Event time: moves steadily through the span, a little late at times.
    int64_t ts = spec_.start_ms + static_cast<int64_t>(static_cast<double>(i) / static_cast<double>(lines) *
                                                       static_cast<double>(span));
    ts -= static_cast<int64_t>(rng_.Uniform(120000));
    if (ts < spec_.start_ms) ts = spec_.start_ms;

    if (!fills_.empty() && fills_.top().due <= line_no_) {
      // A late first delivery of a skipped seq: fills its gap.
      const Fill f = fills_.top();
      fills_.pop();
      FormatEvent(buf, f.producer, f.seq, ts);
      ++st.gap_fills;
      ++applied_;
    } else if (line_no_ > 0 && rng_.Unit() < spec_.duplicate_rate) {
      // A redelivery: an exact copy of a recent line.
      const uint64_t back = 1 + rng_.Uniform(std::min<uint64_t>(line_no_, kRecent));
      buf->append(recent_[(line_no_ - back) % kRecent]);
      ++st.duplicates;
    } else {
      const uint32_t p = static_cast<uint32_t>(rng_.Uniform(producers_.size()));
      Producer& pr = producers_[p];
      if (rng_.Unit() < spec_.gap_rate) {
        const uint64_t skip = 1 + rng_.Uniform(3);
        for (uint64_t s = 0; s < skip; ++s) {
          const uint64_t seq = pr.next_seq++;
          ++st.skipped;
          if (rng_.Unit() < spec_.gap_fill_rate || pr.open >= kMaxOpenPerProducer) {
            fills_.push(Fill{line_no_ + 100 + rng_.Uniform(20000), p, seq});
          } else {
            ++pr.open;
          }
        }
      }
      FormatEvent(buf, p, pr.next_seq++, ts);
      ++st.fresh;
      ++applied_;
    }
    recent_[line_no_ % kRecent].assign(*buf, before, std::string::npos);
    st.bytes += buf->size() - before;
    ++st.lines;
    file.MaybeFlush();
  }
  return st;
}

std::string WideMetric(uint64_t i) { return kMetrics[i % 4]; }

std::string WideKey(uint64_t i) {
  // Mix64 is a bijection, so distinct i give distinct keys, in random order.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key = "customer-";
  const uint64_t h = Mix64(i);
  for (int s = 60; s >= 0; s -= 4) key.push_back(kHex[(h >> s) & 15]);
  return key;
}

StreamStats WriteWideWindow(const std::string& path, uint64_t rows, int64_t window_ms) {
  StreamStats st;
  LineFile file(path);
  std::string* buf = file.buf();
  Rng rng(rows);
  for (uint64_t i = 0; i < rows; ++i) {
    const size_t before = buf->size();
    buf->append("{\"producer\":\"bulk-loader\",\"seq\":");
    AppendUint(buf, i);
    buf->append(",\"ts\":");
    AppendUint(buf, static_cast<uint64_t>(window_ms) + rng.Uniform(3600000));
    buf->append(",\"metric\":\"");
    buf->append(WideMetric(i));
    buf->append("\",\"key\":\"");
    buf->append(WideKey(i));
    buf->append("\",\"value\":");
    AppendMicros(buf, static_cast<int64_t>(rng.Uniform(100000000000)));
    buf->append("}\n");
    st.bytes += buf->size() - before;
    ++st.lines;
    ++st.fresh;
    file.MaybeFlush();
  }
  return st;
}

std::string WideWindowExtraLine(uint64_t seq, uint64_t rows, int64_t window_ms) {
  std::string line = "{\"producer\":\"bulk-loader\",\"seq\":";
  AppendUint(&line, seq);
  line += ",\"ts\":";
  AppendUint(&line, static_cast<uint64_t>(window_ms));
  line += ",\"metric\":\"" + WideMetric(seq % rows) + "\",\"key\":\"" + WideKey(seq % rows) + "\",\"value\":1}\n";
  return line;
}

}  // namespace snapsink::bench
