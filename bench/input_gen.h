// Deterministic benchmark input: NDJSON event streams (docs/CONTRACT.md 1) from a seed.
//
// The same spec and seed give the same bytes on every machine: the generator
// uses its own PRNG (splitmix64) and its own number and date formatting,
// never std:: distributions or the C locale.
//
// EventStream models P producers sending at-least-once:
//   - each producer sends seq 0, 1, 2, ... under epoch 1;
//   - a fraction of lines are redeliveries: exact copies of a recent line
//     (any producer), i.e. duplicates the engine must drop;
//   - now and then a producer skips 1-3 seqs (a gap); most skipped seqs are
//     delivered later, out of order (they fill the gap), the rest stay open
//     (at most kMaxOpenPerProducer per producer, far below docs/CONTRACT.md 2's 1024);
//   - event times move through `hours` hours from start_ms with a little
//     jitter (a few lines carry integer milliseconds instead of RFC 3339);
//   - `metrics` metrics x `keys` keys per metric, values with up to 6
//     decimals, ~2% retracts.
// Lines are ~120-160 bytes. Write() may be called again to continue the
// same stream (more seqs for the same producers) into another file.
#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <vector>

namespace snapsink::bench {

// splitmix64: tiny, fast, and identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Uniform(uint64_t n) { return Next() % n; }  // n > 0; the bias is irrelevant here
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_;
};

// A bijection on uint64 (splitmix's finaliser): distinct inputs, distinct outputs.
uint64_t Mix64(uint64_t x);

struct StreamSpec {
  uint64_t seed = 301;
  int producers = 64;
  double duplicate_rate = 0.05;  // fraction of lines that redeliver an earlier line
  double gap_rate = 0.001;       // per fresh event: chance its producer skips 1-3 seqs first
  double gap_fill_rate = 0.8;    // fraction of skipped seqs delivered later
  int hours = 24;                // event times span this many hours from start_ms
  int metrics = 4;
  int keys = 64;                 // keys per metric
  int64_t start_ms = 1792540800000;  // 2026-10-21T00:00:00Z
};

struct StreamStats {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  uint64_t fresh = 0;       // first delivery of a seq, in order (gap fills not included)
  uint64_t duplicates = 0;  // redeliveries
  uint64_t gap_fills = 0;   // late first deliveries of skipped seqs
  uint64_t skipped = 0;     // seqs skipped (gaps opened); skipped - gap_fills stay open or pending
  void Add(const StreamStats& o);
};

class EventStream {
 public:
  explicit EventStream(const StreamSpec& spec);

  // Writes `lines` more lines of the stream to path (created or truncated),
  // times spread over the spec's hours. Dies on I/O errors.
  StreamStats Write(const std::string& path, uint64_t lines);

  // Distinct events (applied lines) the engine should count so far: every
  // first delivery, fresh or gap fill.
  uint64_t expected_applied() const { return applied_; }

 private:
  static constexpr size_t kRecent = 4096;           // redeliveries copy one of these lines
  static constexpr uint64_t kMaxOpenPerProducer = 64;

  struct Producer {
    std::string name;
    uint64_t next_seq = 0;
    uint64_t open = 0;  // skipped seqs that will never be filled
  };
  struct Fill {
    uint64_t due;  // line number (over the whole stream) at which it is sent
    uint32_t producer;
    uint64_t seq;
    bool operator>(const Fill& o) const { return due > o.due; }
  };

  void FormatEvent(std::string* out, uint32_t producer, uint64_t seq, int64_t ts_ms);

  StreamSpec spec_;
  Rng rng_;
  std::vector<Producer> producers_;
  std::vector<std::string> metric_names_, key_names_;
  std::priority_queue<Fill, std::vector<Fill>, std::greater<Fill>> fills_;
  std::vector<std::string> recent_;  // ring of the last kRecent lines
  uint64_t line_no_ = 0;             // lines written over all Write() calls
  uint64_t applied_ = 0;
};

// The publish input: one window (starting at window_ms, 1 h wide) with
// `rows` distinct (metric, key) pairs, one event each, from one producer, so
// that its snapshot has exactly `rows` rows. Keys are in random order.
StreamStats WriteWideWindow(const std::string& path, uint64_t rows, int64_t window_ms);

// One more event for row (seq % rows) of that window, as producer seq `seq`
// (>= rows): makes the window dirty again so it can be sealed once more.
std::string WideWindowExtraLine(uint64_t seq, uint64_t rows, int64_t window_ms);

// The (metric, key) of row i of WriteWideWindow, for lookups.
std::string WideMetric(uint64_t i);
std::string WideKey(uint64_t i);

// "2026-10-21T10:15:03.123Z" (milliseconds omitted when 0) appended to out.
void AppendRfc3339(std::string* out, int64_t ms);

}  // namespace snapsink::bench
