#include "tests/kafka_events.h"

#include <cstdio>

namespace snapsink::kafkatest {
namespace {

struct Rng {
  uint64_t s;
  uint64_t Next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }
};

constexpr int64_t kBaseMs = 1792577700000;  // 2026-10-21T10:15:00Z
const char* const kKeys[] = {"eu", "us", "apac"};

std::string Event(int p, int seq, int64_t ts, const char* metric, const char* key, uint64_t cents,
                  const char* op) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                R"({"producer":"p%d","seq":%d,"ts":%lld,"metric":"%s","key":"%s","value":%llu.%02llu%s})", p,
                seq, static_cast<long long>(ts), metric, key, static_cast<unsigned long long>(cents / 100),
                static_cast<unsigned long long>(cents % 100), op);
  return buf;
}

}  // namespace

EventStream GenerateEvents(int partitions, int events, uint64_t seed, int first_seq) {
  EventStream out;
  out.records.resize(partitions);
  out.lines.resize(partitions);
  for (int p = 0; p < partitions; ++p) {
    Rng rng{seed * 1000003 + static_cast<uint64_t>(p)};
    std::vector<std::string> lines;
    std::string prev;  // the previous add, for a retract
    const char* prev_metric = "orders";
    const char* prev_key = "eu";
    uint64_t prev_cents = 0;
    for (int i = 0; i < events; ++i) {
      const int seq = first_seq + i;
      const int64_t ts = kBaseMs + static_cast<int64_t>(seq) * 37000 + p * 1000;
      std::string line;
      if (seq % 97 == 51) {  // retract the previous add, same metric, key and value
        line = Event(p, seq, ts, prev_metric, prev_key, prev_cents, R"(,"op":"retract")");
      } else {
        prev_metric = seq % 3 == 0 ? "clicks" : "orders";
        prev_key = kKeys[rng.Below(3)];
        prev_cents = rng.Below(100000);
        line = Event(p, seq, ts, prev_metric, prev_key, prev_cents, "");
      }
      lines.push_back(line);
      if (seq % 53 == 21 && lines.size() >= 2) std::swap(lines[lines.size() - 1], lines[lines.size() - 2]);
      if (rng.Below(10) == 0 && lines.size() > 1) lines.push_back(lines[lines.size() - 1 - rng.Below(std::min<size_t>(lines.size() - 1, 20))]);
      if (p % 4 == 1 && (i == 30 || i == 31 + p)) {
        lines.push_back(i == 30 ? R"({"producer":"p1","seq":)" : "not json at all");
      }
    }
    out.lines[p] = lines.size();
    for (size_t i = 0; i < lines.size();) {
      const size_t n = std::min<size_t>(1 + rng.Below(3), lines.size() - i);
      std::string rec;
      for (size_t j = 0; j < n; ++j) {
        if (j) rec += '\n';
        rec += lines[i + j];
      }
      out.records[p].push_back(std::move(rec));
      i += n;
    }
  }
  return out;
}

std::string AsFile(const EventStream& stream) {
  std::string out;
  for (const auto& part : stream.records) {
    for (const std::string& r : part) out += r + "\n";
  }
  return out;
}

}  // namespace snapsink::kafkatest
