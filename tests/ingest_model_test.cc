// An adversarial generated stream against an independent model of docs/CONTRACT.md 2/3.
//
// Several producers send through several sources (files appended to and
// resumed, and standard input): redeliveries, replayed ranges, gaps filled
// late, zombies from old epochs, epoch bumps, retractions, bad lines, the same
// event written in different JSON forms. A small model written here (per
// producer: epoch, next, the set of missing seqs; per (window, metric, key):
// count and sum in micros) predicts every inspect output and the published
// aggregates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Howard Hinnant's civil_from_days.
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

// RFC 3339 for utc_ms written in a zone offset_min minutes east of UTC.
std::string Rfc3339(int64_t utc_ms, int offset_min, bool fraction) {
  const int64_t local = utc_ms + int64_t{offset_min} * 60000;
  const int64_t days = FloorDiv(local, 86400000);
  const int64_t rem = local - days * 86400000;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y), m, d,
                static_cast<long long>(rem / 3600000), static_cast<long long>(rem / 60000 % 60),
                static_cast<long long>(rem / 1000 % 60));
  std::string s = buf;
  if (fraction) {
    std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(rem % 1000));
    s += buf;
  }
  if (offset_min == 0) return s + "Z";
  const int a = offset_min < 0 ? -offset_min : offset_min;
  std::snprintf(buf, sizeof buf, "%c%02d:%02d", offset_min < 0 ? '-' : '+', a / 60, a % 60);
  return s + buf;
}

// Shortest exact decimal of micros: 37.5, 3, -0.25, 0.
std::string Decimal(int64_t micros) {
  const bool neg = micros < 0;
  const uint64_t u = neg ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
  std::string s = std::to_string(u / 1000000);
  uint64_t frac = u % 1000000;
  if (frac != 0) {
    std::string f = std::to_string(frac);
    f.insert(0, 6 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    s += "." + f;
  }
  return (neg ? "-" : "") + s;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

struct Event {
  std::string producer;
  uint32_t epoch = 0;
  uint64_t seq = 0;
  int64_t ts_ms = 0;
  std::string metric, key;
  int64_t micros = 1000000;
  bool retract = false;
};

// ---------------------------------------------------------------- the model

struct Model {
  struct Producer {
    uint32_t epoch = 0;
    uint64_t next = 0;
    std::set<uint64_t> missing;
  };
  struct Agg {
    int64_t count = 0, sum = 0, events = 0;
  };
  struct Source {
    uint64_t offset = 0, lines = 0, applied = 0, duplicates = 0, fenced = 0, rejected = 0;
  };
  std::map<std::string, Producer> producers;
  std::map<std::string, int64_t> last_seen;  // greatest ts heard from each producer
  std::map<std::tuple<int64_t, std::string, std::string>, Agg> aggs;
  std::map<int64_t, Agg> windows;
  std::optional<int64_t> max_ts;
  std::map<std::string, Source> sources;

  void Bad(const std::string& source, size_t bytes) {
    Source& s = sources[source];
    s.lines++;
    s.rejected++;
    s.offset += bytes;
  }

  void Line(const std::string& source, const Event& e, size_t bytes) {
    Source& s = sources[source];
    s.lines++;
    s.offset += bytes;
    Producer& p = producers[e.producer];
    auto [seen, fresh] = last_seen.try_emplace(e.producer, e.ts_ms);
    if (!fresh) seen->second = std::max(seen->second, e.ts_ms);
    if (e.epoch < p.epoch) {
      s.fenced++;
      return;
    }
    if (e.epoch > p.epoch) {
      p = Producer();
      p.epoch = e.epoch;
    }
    if (e.seq >= p.next) {
      for (uint64_t q = p.next; q < e.seq; ++q) p.missing.insert(q);
      p.next = e.seq + 1;
    } else if (p.missing.erase(e.seq) == 0) {
      s.duplicates++;
      return;
    }
    s.applied++;
    const int64_t w = FloorDiv(e.ts_ms, kHour) * kHour;
    for (Agg* a : {&aggs[{w, e.metric, e.key}], &windows[w]}) {
      a->count += e.retract ? -1 : 1;
      a->sum += e.retract ? -e.micros : e.micros;
      a->events += 1;
    }
    if (!max_ts || e.ts_ms > *max_ts) max_ts = e.ts_ms;
  }

  // Maximal runs of missing seqs: [from, to].
  static std::vector<std::pair<uint64_t, uint64_t>> Runs(const std::set<uint64_t>& missing) {
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    for (uint64_t q : missing) {
      if (!runs.empty() && runs.back().second + 1 == q) {
        runs.back().second = q;
      } else {
        runs.push_back({q, q});
      }
    }
    return runs;
  }

  std::string Producers() const {
    std::string out;
    for (const auto& [id, p] : producers) {
      out += "{\"producer\":" + Quote(id) + ",\"epoch\":" + std::to_string(p.epoch) +
             ",\"next_seq\":" + std::to_string(p.next) + ",\"open_gaps\":" + std::to_string(Runs(p.missing).size()) + ",\"last_seen\":\"" +
             Rfc3339(last_seen.at(id), 0, last_seen.at(id) % 1000 != 0) + "\",\"retired\":false}\n";
    }
    return out;
  }
  std::string Gaps() const {
    std::string out;
    for (const auto& [id, p] : producers) {
      for (const auto& [from, to] : Runs(p.missing)) {
        out += "{\"producer\":" + Quote(id) + ",\"epoch\":" + std::to_string(p.epoch) +
               ",\"from_seq\":" + std::to_string(from) + ",\"to_seq\":" + std::to_string(to) +
               ",\"missing\":" + std::to_string(to - from + 1) + "}\n";
      }
    }
    return out;
  }
  std::string Sources() const {
    std::string out;
    for (const auto& [name, s] : sources) {
      EXPECT_EQ(s.lines, s.applied + s.duplicates + s.fenced + s.rejected) << name;
      out += "{\"source\":" + Quote(name) + ",\"offset\":" + std::to_string(s.offset) +
             ",\"lines\":" + std::to_string(s.lines) + ",\"applied\":" + std::to_string(s.applied) +
             ",\"duplicates\":" + std::to_string(s.duplicates) + ",\"fenced\":" + std::to_string(s.fenced) +
             ",\"rejected\":" + std::to_string(s.rejected) +
             ",\"ignored\":0,\"duplicates_id\":0,\"rejected_horizon\":0,\"rejected_retired\":0}\n";
    }
    return out;
  }
  // After `run --final`: every window sealed once, as version 1.
  std::string Windows() const {
    std::string out;
    for (const auto& [w, a] : windows) {
      const bool closed = max_ts && *max_ts - kHour >= w + kHour;
      out += "{\"window\":\"" + Rfc3339(w, 0, false) + "\",\"version\":1,\"dirty\":false,\"closed\":" +
             (closed ? "true" : "false") + ",\"events\":" + std::to_string(a.events) +
             ",\"count\":" + std::to_string(a.count) + "}\n";
    }
    return out;
  }
  std::string Query() const {
    std::string out;
    for (const auto& [k, a] : aggs) {
      const auto& [w, metric, key] = k;
      out += "{\"window\":\"" + Rfc3339(w, 0, false) + "\",\"metric\":" + Quote(metric) + ",\"key\":" + Quote(key) +
             ",\"count\":" + std::to_string(a.count) + ",\"sum\":" + Decimal(a.sum) +
             ",\"version\":1,\"generation\":1}\n";
    }
    return out;
  }
};

// ------------------------------------------------------------ the generator

struct GenLine {
  bool bad = false;
  Event event;
  std::string text;  // without '\n'
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    for (const char* name : {"alpha", "beta", "gamma", "delta", "eps/ilon"}) prods_.push_back(Prod{name, 0, 0, {}, {}});
  }

  std::vector<GenLine> Make(size_t n) {
    std::vector<GenLine> out;
    while (out.size() < n) Step(&out);
    out.resize(n);
    return out;
  }

 private:
  struct Prod {
    std::string name;
    uint32_t epoch = 0;
    uint64_t next = 0;
    std::vector<uint64_t> held;           // skipped seqs of this epoch, sent later
    std::vector<std::pair<uint32_t, uint64_t>> old;  // earlier epochs and how far they got
  };

  uint64_t R(uint64_t n) { return rng_() % n; }

  // The payload is a function of (producer, epoch, seq) alone.
  Event Payload(const Prod& p, uint32_t epoch, uint64_t seq) {
    std::mt19937_64 h(std::hash<std::string>{}(p.name) ^ (uint64_t{epoch} << 40) ^ (seq * 0x9E3779B97F4A7C15ull));
    Event e;
    e.producer = p.name;
    e.epoch = epoch;
    e.seq = seq;
    const uint64_t r = h();
    if (r % 40 == 0) {
      e.ts_ms = -static_cast<int64_t>(h() % (2 * kHour)) - 1;  // 1969
    } else {
      e.ts_ms = kBase + static_cast<int64_t>(h() % (7 * kHour));
      if (h() % 3 != 0) e.ts_ms -= e.ts_ms % 1000;  // mostly whole seconds
    }
    static const char* metrics[] = {"orders", "clicks", "we\"ird"};
    static const char* keys[] = {"eu", "us", "", "a-b"};
    e.metric = metrics[h() % 3];
    e.key = keys[h() % 4];
    switch (h() % 4) {
      case 0: e.micros = 1000000; break;
      case 1: e.micros = static_cast<int64_t>(h() % 100) * 250000 - 5000000; break;
      case 2: e.micros = static_cast<int64_t>(h() % 100000000) - 20000000; break;
      default: e.micros = static_cast<int64_t>(h() % 1000) * 1000000; break;
    }
    e.retract = h() % 5 == 0;
    return e;
  }

  // One event as a JSON line, in one of many equivalent forms.
  std::string Format(const Event& e) {
    std::vector<std::string> fields;
    fields.push_back("\"producer\":" + Quote(e.producer));
    if (e.epoch != 0 || R(2)) fields.push_back("\"epoch\":" + std::to_string(e.epoch));
    fields.push_back("\"seq\":" + std::to_string(e.seq));
    const bool whole = e.ts_ms % 1000 == 0;
    switch (R(4)) {
      case 0: fields.push_back("\"ts\":" + std::to_string(e.ts_ms)); break;
      case 1: fields.push_back("\"ts\":\"" + Rfc3339(e.ts_ms, 0, !whole) + "\""); break;
      case 2: fields.push_back("\"ts\":\"" + Rfc3339(e.ts_ms, 120, !whole || R(2)) + "\""); break;
      default: fields.push_back("\"ts\":\"" + Rfc3339(e.ts_ms, -330, !whole) + "\""); break;
    }
    fields.push_back("\"metric\":" + Quote(e.metric));
    if (!e.key.empty() || R(2)) fields.push_back("\"key\":" + Quote(e.key));
    if (e.micros != 1000000 || R(2)) {
      switch (R(3)) {
        case 0: fields.push_back("\"value\":" + Decimal(e.micros)); break;
        case 1: fields.push_back("\"value\":" + std::to_string(e.micros) + "e-6"); break;
        default: {
          std::string d = Decimal(e.micros);
          if (d.find('.') == std::string::npos) d += ".";
          fields.push_back("\"value\":" + d + "000");
        }
      }
    }
    if (e.retract) {
      fields.push_back("\"op\":\"retract\"");
    } else if (R(3) == 0) {
      fields.push_back("\"op\":\"add\"");
    }
    if (R(6) == 0) fields.push_back("\"trace\":{\"hops\":[1,2,{\"x\":null}],\"id\":\"t-" + std::to_string(R(1000)) + "\"}");
    std::shuffle(fields.begin(), fields.end(), rng_);
    std::string s = "{";
    for (size_t i = 0; i < fields.size(); ++i) s += (i ? (R(4) ? "," : " , ") : "") + fields[i];
    return s + "}";
  }

  void Emit(std::vector<GenLine>* out, const Prod& p, uint32_t epoch, uint64_t seq) {
    GenLine l;
    l.event = Payload(p, epoch, seq);
    l.text = Format(l.event);
    out->push_back(std::move(l));
  }

  void Step(std::vector<GenLine>* out) {
    Prod& p = prods_[R(prods_.size())];
    const uint64_t r = R(1000);
    if (r < 80 && p.next > 0) {  // redelivery of an earlier seq (may fill a gap)
      Emit(out, p, p.epoch, R(p.next));
    } else if (r < 110 && p.next > 0) {  // a replayed range
      const uint64_t from = R(p.next);
      const uint64_t to = std::min(p.next, from + 1 + R(8));
      for (uint64_t q = from; q < to; ++q) Emit(out, p, p.epoch, q);
    } else if (r < 170 && p.held.size() < 40) {  // skip ahead: a gap
      const uint64_t k = 1 + R(4);
      for (uint64_t i = 0; i < k; ++i) p.held.push_back(p.next + i);
      p.next += k;
      Emit(out, p, p.epoch, p.next++);
    } else if (r < 270 && !p.held.empty()) {  // fill a held seq, in any order
      const size_t i = R(p.held.size());
      Emit(out, p, p.epoch, p.held[i]);
      p.held.erase(p.held.begin() + static_cast<long>(i));
    } else if (r < 300 && !p.old.empty()) {  // a zombie
      const auto& [epoch, next] = p.old[R(p.old.size())];
      Emit(out, p, epoch, R(next + 3));
    } else if (r < 312) {  // a new incarnation, sometimes not starting at 0
      p.old.push_back({p.epoch, p.next});
      p.epoch += 1 + static_cast<uint32_t>(R(2));
      p.held.clear();
      p.next = 0;
      if (R(3) == 0) {
        p.held = {0, 1};
        p.next = 2;
      }
      Emit(out, p, p.epoch, p.next++);
    } else if (r < 325) {  // a bad line
      static const char* bad[] = {
          "{\"producer\":\"alpha\",\"seq\":1",
          "{\"producer\":\"alpha\",\"ts\":0,\"metric\":\"orders\"}",
          "{\"producer\":\"beta\",\"seq\":-1,\"ts\":0,\"metric\":\"orders\"}",
          "{\"producer\":\"\",\"seq\":1,\"ts\":0,\"metric\":\"orders\"}",
          "{\"producer\":\"beta\",\"seq\":1,\"ts\":0,\"metric\":\"orders\",\"value\":0.1234567}",
          "",
          "not json at all",
          "{\"producer\":\"gamma\",\"seq\":1,\"ts\":\"2026-13-01T00:00:00Z\",\"metric\":\"orders\"}",
      };
      GenLine l;
      l.bad = true;
      l.text = bad[R(std::size(bad))];
      out->push_back(std::move(l));
    } else {  // in order
      Emit(out, p, p.epoch, p.next++);
    }
  }

  std::mt19937_64 rng_;
  std::vector<Prod> prods_;
};

// ----------------------------------------------------------------- the test

std::string Inspect(const std::string& root, const std::string& what) {
  RunResult r = Snapsink({"inspect", root, what, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

class IngestModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(IngestModelTest, MatchesModel) {
  const uint64_t seed = GetParam();
  std::mt19937_64 rng(seed * 7777);
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);

  const std::vector<GenLine> lines = Generator(seed).Make(2500);
  Model model;

  // Sources: three files (appended to and resumed) and standard input.
  const std::vector<std::string> files = {d / "feed-a.ndjson", d / "feed-b.ndjson", d / "feed c.ndjson"};
  const std::string stdin_source = "stdin/feed";
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> written;  // source -> (line index, eol)
  size_t pos = 0;
  int step = 0;
  while (pos < lines.size()) {
    ++step;
    const size_t n = std::min(lines.size() - pos, static_cast<size_t>(40 + rng() % 360));
    const bool last = pos + n == lines.size();
    const size_t which = last ? rng() % 3 : rng() % 4;  // the last step is `run --final` on a file
    const char* every_choices[] = {"1", "2", "7", "50", "100000"};
    const std::string every = n > 200 && rng() % 2 ? "50" : every_choices[rng() % 5];
    const std::string source = which == 3 ? stdin_source : files[which];
    std::string chunk;
    // Standard input has no position (docs/CONTRACT.md 5): each step pipes a new stream,
    // read from its start; the source's offset is what the last read consumed.
    if (which == 3) model.sources[stdin_source].offset = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      const GenLine& l = lines[i];
      const std::string eol = rng() % 10 == 0 ? "\r\n" : "\n";  // now and then CRLF
      chunk += l.text + eol;
      written[source].push_back({i, eol});
      if (l.bad) {
        model.Bad(source, l.text.size() + eol.size());
      } else {
        model.Line(source, l.event, l.text.size() + eol.size());
      }
    }
    pos += n;
    SCOPED_TRACE("step " + std::to_string(step) + " source " + source + " every " + every);
    RunResult r;
    if (which == 3) {
      r = Snapsink({"ingest", root, "-", "--source", stdin_source, "--commit-every", every, "--quiet"}, {}, chunk);
    } else {
      AppendFile(files[which], chunk);
      std::vector<std::string> args = {last ? "run" : "ingest", root, files[which], "--commit-every", every, "--quiet"};
      if (last) args.push_back("--final");
      r = Snapsink(args);
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // The stream is as adversarial as intended.
  {
    Model::Source total;
    for (const auto& [name, s] : model.sources) {
      total.duplicates += s.duplicates;
      total.fenced += s.fenced;
      total.rejected += s.rejected;
    }
    EXPECT_GT(total.duplicates, 100u);
    EXPECT_GT(total.fenced, 20u);
    EXPECT_GT(total.rejected, 5u);
    EXPECT_GE(model.sources.size(), 3u);
    EXPECT_GT(model.Gaps().size(), 0u);
    EXPECT_LT(model.windows.begin()->first, 0) << "no window before 1970";
  }
  EXPECT_EQ(Inspect(root, "sources"), model.Sources());
  EXPECT_EQ(Inspect(root, "producers"), model.Producers());
  EXPECT_EQ(Inspect(root, "gaps"), model.Gaps());
  EXPECT_EQ(Inspect(root, "windows"), model.Windows());
  RunResult q = Snapsink({"query", root, "--format", "json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, model.Query());

  // Replaying every file changes nothing. (Standard input piped again is
  // read again: its lines count again, as duplicates; the redelivery below
  // covers that.)
  const std::string before = StateDump(root);
  for (const std::string& f : files) {
    if (ReadFile(f).empty()) continue;
    ASSERT_EQ(Snapsink({"ingest", root, f, "--quiet"}).exit_code, 0);
  }
  EXPECT_EQ(StateDump(root), before);

  // Everything redelivered through one new path: nothing applies.
  const std::string redelivery = d / "redelivery.ndjson";
  std::string all;
  for (const std::string& source : {files[0], files[1], files[2], stdin_source}) {
    for (const auto& [index, eol] : written[source]) {
      const GenLine& l = lines[index];
      all += l.text + eol;
      if (l.bad) {
        model.Bad(redelivery, l.text.size() + eol.size());
      } else {
        model.Line(redelivery, l.event, l.text.size() + eol.size());
      }
    }
  }
  EXPECT_EQ(model.sources[redelivery].applied, 0u);
  EXPECT_EQ(model.sources[redelivery].lines, lines.size());
  WriteFile(redelivery, all);
  RunResult r = Snapsink({"ingest", root, redelivery, "--commit-every", "333", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), model.Sources());
  EXPECT_EQ(Inspect(root, "producers"), model.Producers());
  EXPECT_EQ(Inspect(root, "gaps"), model.Gaps());
  EXPECT_EQ(Inspect(root, "windows"), model.Windows());
  EXPECT_EQ(Snapsink({"query", root, "--format", "json"}).out, model.Query());
}

INSTANTIATE_TEST_SUITE_P(IngestModel, IngestModelTest, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<uint64_t>& info) { return "seed" + std::to_string(info.param); });

}  // namespace
}  // namespace snapsink::testing
