// Exactly once for events without seq (engine/id_dedup.h), through the
// binary: a generated stream of id events with redeliveries inside and beyond
// the id horizon and watermark jumps, against a model written here; crashes
// at each ingest crash point; --id-from-content; seq and id together.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int64_t kHorizon = 2 * kHour;  // init --id-horizon 2h; lateness: one window (1h)

std::string Q(const std::string& s) { return "\"" + s + "\""; }

std::string Inspect(const std::string& root, const std::string& what) {
  RunResult r = Snapsink({"inspect", root, what, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// "2026-10-21T10:00:00Z" for whole seconds (all times in these tests are).
std::string Iso(int64_t ms) {
  const int64_t s = ms / 1000;
  const int64_t days = s / 86400, rem = s % 86400;
  // civil_from_days (Howard Hinnant), for days >= 0
  int64_t z = days + 719468;
  const int64_t era = z / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", static_cast<long long>(y),
                static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  return buf;
}

struct IdEvent {
  std::string producer;  // "" = none: scoped by source
  std::string id;
  int64_t ts = 0;
  std::string key;
  int64_t value = 1;
};

std::string Line(const IdEvent& e) {
  std::string s = "{";
  if (!e.producer.empty()) s += "\"producer\":" + Q(e.producer) + ",";
  return s + "\"id\":" + Q(e.id) + ",\"ts\":" + std::to_string(e.ts) + ",\"metric\":\"m\",\"key\":" + Q(e.key) +
         ",\"value\":" + std::to_string(e.value) + "}";
}

// ---------------------------------------------------------------- the model

struct IdModel {
  struct Source {
    uint64_t offset = 0, lines = 0, applied = 0, duplicates = 0, rejected = 0, horizon = 0;
  };
  std::map<std::string, int64_t> ids;  // scope + id -> first-delivery ts
  std::optional<int64_t> max_ts;
  std::map<std::pair<int64_t, std::string>, std::pair<int64_t, int64_t>> aggs;  // (window, key) -> count, sum
  std::map<std::string, Source> sources;

  int64_t Cutoff() const { return max_ts ? *max_ts - kHour - kHorizon : INT64_MIN; }

  void Add(const std::string& source, const IdEvent& e, size_t bytes) {
    Source& s = sources[source];
    s.lines++;
    s.offset += bytes;
    const int64_t cutoff = Cutoff();
    if (e.ts < cutoff) {
      s.rejected++;
      s.horizon++;
      return;
    }
    const std::string scope = (e.producer.empty() ? "s:" + source : "p:" + e.producer) + '\0' + e.id;
    auto it = ids.find(scope);
    if (it != ids.end() && it->second >= cutoff) {
      s.duplicates++;
      return;
    }
    ids[scope] = e.ts;
    s.applied++;
    auto& a = aggs[{e.ts / kHour * kHour, e.key}];
    a.first += 1;
    a.second += e.value;
    Observe(e.producer, e.ts);
  }

  // The watermark's confirmation rule (engine/watermark.h; reach: the
  // lateness, 1h): a jump further than the reach waits for a second producer.
  std::string lone;
  bool many = false;
  std::optional<int64_t> held;
  std::string held_by;
  bool others = false;  // another producer sent since the hold
  void Observe(const std::string& p, int64_t ts) {
    if (!max_ts) {
      max_ts = ts;
      lone = p;
      return;
    }
    if (p != lone) many = true;
    if (held && p != held_by) others = true;
    if (ts <= *max_ts) return;
    if (!many || ts - *max_ts <= kHour) {
      max_ts = ts;
    } else if (held && held_by == p && !others) {
      if (ts - *held < kHour) return;  // its own clock not yet a reach past the hold
      max_ts = ts;
      held.reset();
      return;
    } else if (!held || held_by == p) {
      if (!held) others = false;
      held = std::max(held.value_or(ts), ts);
      held_by = p;
      return;
    } else if (ts < *held) {
      max_ts = ts;
    } else {
      max_ts = held;
      held = ts;
      held_by = p;
      others = false;
    }
    if (held && *held - *max_ts <= kHour) {
      max_ts = std::max(*max_ts, *held);
      held.reset();
    }
  }

  std::string Sources() const {
    std::string out;
    for (const auto& [name, s] : sources) {
      out += "{\"source\":" + Q(name) + ",\"offset\":" + std::to_string(s.offset) +
             ",\"lines\":" + std::to_string(s.lines) + ",\"applied\":" + std::to_string(s.applied) +
             ",\"duplicates\":" + std::to_string(s.duplicates) + ",\"fenced\":0,\"rejected\":" +
             std::to_string(s.rejected) + ",\"ignored\":0,\"duplicates_id\":" + std::to_string(s.duplicates) +
             ",\"rejected_horizon\":" + std::to_string(s.horizon) + ",\"rejected_retired\":0}\n";
    }
    return out;
  }
  // inspect ids, up to its table_bytes.
  std::string Ids() const {
    uint64_t held = 0;
    std::optional<int64_t> oldest;
    for (const auto& [k, ts] : ids) {
      if (ts < Cutoff()) continue;
      ++held;
      oldest = oldest ? std::min(*oldest, ts) : ts;
    }
    return "{\"ids\":" + std::to_string(held) + ",\"oldest\":" + (oldest ? Q(Iso(*oldest)) : "null") +
           ",\"horizon\":\"2h\",\"cutoff\":" + (max_ts ? Q(Iso(Cutoff())) : "null") + ",\"table_bytes\":";
  }
  std::string Query() const {
    std::string out;
    for (const auto& [k, a] : aggs) {
      out += "{\"window\":\"" + Iso(k.first) + "\",\"metric\":\"m\",\"key\":" + Q(k.second) +
             ",\"count\":" + std::to_string(a.first) + ",\"sum\":" + std::to_string(a.second) +
             ",\"version\":1,\"generation\":1}\n";
    }
    return out;
  }
};

std::string IdsPrefix(const std::string& inspect_ids) { return inspect_ids.substr(0, inspect_ids.find("\"table_bytes\":") + 14); }

// ------------------------------------------------------------ the generator

struct Sent {
  std::string source;
  IdEvent event;
};

// Sends ids with a clock that mostly creeps forward and now and then jumps
// (moving the watermark past earlier ids); redelivers earlier events, on the
// same source or another, recent ones (duplicates) and old ones (beyond the
// horizon); sends new events late.
std::vector<Sent> Generate(uint64_t seed, size_t n, const std::vector<std::string>& sources) {
  std::mt19937_64 rng(seed);
  auto R = [&](uint64_t k) { return rng() % k; };
  std::vector<Sent> out;
  int64_t clock = kBase;
  uint64_t next_id = 0;
  const char* producers[] = {"", "", "p1", "p2"};
  const char* keys[] = {"eu", "us", ""};
  while (out.size() < n) {
    const uint64_t r = R(100);
    if (r < 25 && !out.empty()) {  // redelivery of a recent event
      Sent s = out[out.size() - 1 - R(std::min<size_t>(out.size(), 30))];
      if (R(4) == 0) s.source = sources[R(sources.size())];
      out.push_back(s);
    } else if (r < 32 && !out.empty()) {  // redelivery of any earlier event
      out.push_back(out[R(out.size())]);
    } else if (r < 35) {  // the watermark jumps
      clock += kHour + static_cast<int64_t>(R(3)) * kHour;
    } else {
      IdEvent e;
      e.producer = producers[R(4)];
      e.id = R(10) == 0 ? "x" + std::to_string(R(5)) : "id-" + std::to_string(next_id++);  // a few reused ids
      clock += static_cast<int64_t>(R(60)) * 1000;
      e.ts = clock - (R(8) == 0 ? static_cast<int64_t>(R(5)) * kHour : 0);  // sometimes late, maybe too late
      e.ts -= e.ts % 1000;
      e.key = keys[R(3)];
      e.value = static_cast<int64_t>(R(10));
      out.push_back({sources[R(sources.size())], e});
    }
  }
  return out;
}

class IdDedupModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(IdDedupModelTest, MatchesModel) {
  const uint64_t seed = GetParam();
  std::mt19937_64 rng(seed * 31);
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root, "--id-horizon", "2h"}).exit_code, 0);
  const std::vector<std::string> files = {d / "a.ndjson", d / "b.ndjson"};
  const std::vector<Sent> sent = Generate(seed, 1500, files);
  IdModel model;
  size_t pos = 0;
  while (pos < sent.size()) {
    const size_t n = std::min(sent.size() - pos, static_cast<size_t>(50 + rng() % 300));
    // Each step appends to a, then b, and ingests them in that order: the
    // model takes the lines in the order ingest does (the watermark depends on it).
    std::map<std::string, std::vector<IdEvent>> chunks;
    for (size_t i = pos; i < pos + n; ++i) chunks[sent[i].source].push_back(sent[i].event);
    pos += n;
    const char* every[] = {"1", "3", "40", "100000"};
    for (const auto& [file, events] : chunks) {
      std::string chunk;
      for (const IdEvent& e : events) {
        const std::string text = Line(e) + "\n";
        chunk += text;
        model.Add(file, e, text.size());
      }
      AppendFile(file, chunk);
      RunResult r = Snapsink({"ingest", root, file, "--commit-every", every[rng() % 4], "--quiet"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  uint64_t dups = 0, horizon = 0;
  for (const auto& [name, s] : model.sources) {
    dups += s.duplicates;
    horizon += s.horizon;
  }
  EXPECT_GT(dups, 50u);
  EXPECT_GT(horizon, 10u);
  EXPECT_EQ(Inspect(root, "sources"), model.Sources());
  EXPECT_EQ(IdsPrefix(Inspect(root, "ids")), model.Ids());
  ASSERT_EQ(Snapsink({"run", root, files[0], "--final", "--quiet"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"query", root, "--format", "json"}).out, model.Query());

  // Every line again through one new path: events with a producer are
  // duplicates or beyond the horizon; those scoped by source are new there.
  const std::string again = d / "again.ndjson";
  std::string all;
  for (const Sent& x : sent) {
    all += Line(x.event) + "\n";
    model.Add(again, x.event, Line(x.event).size() + 1);
  }
  WriteFile(again, all);
  ASSERT_EQ(Snapsink({"ingest", root, again, "--commit-every", "77", "--quiet"}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), model.Sources());
  EXPECT_EQ(IdsPrefix(Inspect(root, "ids")), model.Ids());
}

INSTANTIATE_TEST_SUITE_P(IdDedupModel, IdDedupModelTest, ::testing::Values(1, 2, 3));

// A small stream with every id outcome, content ids among them.
std::string CrashInput() {
  std::string s;
  for (int i = 0; i < 40; ++i) {
    IdEvent e{i % 3 == 0 ? "" : "p", "id-" + std::to_string(i % 25), kBase + int64_t{i} * 2 * 60 * 1000, "k", i};
    s += Line(e) + "\n";
    if (i % 5 == 0) {
      s += "{\"ts\":" + std::to_string(kBase) + ",\"metric\":\"c\",\"value\":" + std::to_string(i % 4) + "}\n";
    }
  }
  s += Line(IdEvent{"p", "late", kBase - 3 * kHour, "k", 1}) + "\n";  // beyond the horizon
  return s;
}

std::vector<std::string> IngestArgs(const std::string& root, const std::string& in) {
  return {"ingest", root, in, "--commit-every", "4", "--id-from-content", "--quiet"};
}

// A crash at each ingest crash point, at hits 1..3; the rerun leaves the root
// byte for byte as a clean run does.
TEST(IdDedupCrashTest, RerunEqualsCleanRun) {
  TempDir d;
  const std::string in = d / "in.ndjson";
  WriteFile(in, CrashInput());
  const std::string clean = d / "clean";
  ASSERT_EQ(Snapsink({"init", clean, "--id-horizon", "2h"}).exit_code, 0);
  ASSERT_EQ(Snapsink(IngestArgs(clean, in)).exit_code, 0);
  ASSERT_EQ(Snapsink({"run", clean, in, "--final", "--quiet"}).exit_code, 0);
  const std::string clean_sources = Inspect(clean, "sources");
  EXPECT_NE(clean_sources.find("\"rejected_horizon\":1"), std::string::npos) << clean_sources;
  EXPECT_EQ(clean_sources.find("\"duplicates_id\":0"), std::string::npos) << clean_sources;
  for (const char* point : {"ingest.before_commit", "ingest.after_commit"}) {
    for (int hit = 1; hit <= 3; ++hit) {
      SCOPED_TRACE(std::string(point) + " hit " + std::to_string(hit));
      const std::string root = d / ("crash-" + std::string(point) + "-" + std::to_string(hit));
      ASSERT_EQ(Snapsink({"init", root, "--id-horizon", "2h"}).exit_code, 0);
      RunResult c = Snapsink(IngestArgs(root, in), {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", std::to_string(hit)}});
      ASSERT_EQ(c.exit_code, 99) << c.err;
      ASSERT_EQ(Snapsink(IngestArgs(root, in)).exit_code, 0);
      ASSERT_EQ(Snapsink({"run", root, in, "--final", "--quiet"}).exit_code, 0);
      EXPECT_EQ(TreeDiff(TreeContents(root), TreeContents(clean)), "");
      EXPECT_EQ(StateDump(root), StateDump(clean));
      EXPECT_EQ(IdsPrefix(Inspect(root, "ids")), IdsPrefix(Inspect(clean, "ids")));
    }
  }
}

// --id-from-content: the same event in another spelling counts once; any
// field that differs makes another event.
TEST(IdFromContentTest, IdenticalEventsCountOnce) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const std::string t = std::to_string(kBase);
  WriteFile(in, "{\"ts\":" + t + ",\"metric\":\"m\",\"value\":1.5}\n"
                "{\"value\":1.50,\"metric\":\"m\",\"ts\":\"2026-10-21T12:00:00+02:00\"}\n"   // the same: duplicate
                "{\"ts\":" + t + ",\"metric\":\"m\",\"value\":2}\n"                                // another value
                "{\"producer\":\"p\",\"ts\":" + t + ",\"metric\":\"m\",\"value\":1.5}\n"          // another producer
                "{\"producer\":\"p\",\"ts\":" + t + ",\"metric\":\"m\",\"value\":1.5,\"op\":\"add\"}\n"  // duplicate
                "{\"ts\":" + t + ",\"metric\":\"m\",\"value\":1.5,\"op\":\"retract\"}\n"        // another op
                "{\"ts\":" + t + ",\"metric\":\"m\",\"key\":\"k\",\"value\":1.5}\n"              // another key
                "{\"ts\":" + std::to_string(kBase + 1) + ",\"metric\":\"m\",\"value\":1.5}\n");     // another time
  RunResult r = Snapsink({"ingest", root, in, "--id-from-content", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sources = Inspect(root, "sources");
  EXPECT_NE(sources.find("\"lines\":8,\"applied\":6,\"duplicates\":2,\"fenced\":0,\"rejected\":0"), std::string::npos)
      << sources;
  EXPECT_NE(sources.find("\"duplicates_id\":2"), std::string::npos) << sources;

  // Without the flag such lines lack what the seq path needs.
  const std::string other = d / "other";
  ASSERT_EQ(Snapsink({"init", other}).exit_code, 0);
  ASSERT_EQ(Snapsink({"ingest", other, in, "--quiet"}).exit_code, 0);
  EXPECT_NE(Inspect(other, "sources").find("\"applied\":0,\"duplicates\":0,\"fenced\":0,\"rejected\":8"), std::string::npos);
}

// An event with both seq and id follows the seq rule; its id is not looked
// at (not even its type). Without seq, the id must be a string of 1..128 bytes.
TEST(IdDedupTest, SeqRulesWhenBothAndIdIsChecked) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const std::string t = std::to_string(kBase);
  WriteFile(in, "{\"producer\":\"p\",\"seq\":0,\"id\":\"a\",\"ts\":" + t + ",\"metric\":\"m\"}\n"
                "{\"producer\":\"p\",\"seq\":1,\"id\":\"a\",\"ts\":" + t + ",\"metric\":\"m\"}\n"  // same id, next seq: applied
                "{\"producer\":\"p\",\"seq\":1,\"id\":\"b\",\"ts\":" + t + ",\"metric\":\"m\"}\n"  // seq repeat: duplicate
                "{\"id\":7,\"producer\":\"p\",\"seq\":2,\"ts\":" + t + ",\"metric\":\"m\"}\n"        // id ignored
                "{\"id\":7,\"ts\":" + t + ",\"metric\":\"m\"}\n"                                     // rejected
                "{\"id\":\"\",\"ts\":" + t + ",\"metric\":\"m\"}\n"                                  // rejected
                "{\"id\":\"" + std::string(129, 'x') + "\",\"ts\":" + t + ",\"metric\":\"m\"}\n"     // rejected
                "{\"id\":\"" + std::string(128, 'x') + "\",\"ts\":" + t + ",\"metric\":\"m\"}\n"     // applied
                "{\"id\":\"a\",\"ts\":" + t + ",\"metric\":\"m\"}\n");                              // applied: own scope
  RunResult r = Snapsink({"ingest", root, in, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sources = Inspect(root, "sources");
  EXPECT_NE(sources.find("\"lines\":9,\"applied\":5,\"duplicates\":1,\"fenced\":0,\"rejected\":3"), std::string::npos)
      << sources;
  EXPECT_NE(sources.find("\"duplicates_id\":0"), std::string::npos) << sources;
}

// An event older than the watermark minus the horizon cannot be checked: it
// is rejected with its own reason, never applied (a second time).
TEST(IdDedupTest, BeyondHorizonIsRejected) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root, "--id-horizon", "1h", "--lateness", "0s"}).exit_code, 0);
  WriteFile(in, Line(IdEvent{"p", "a", kBase, "", 1}) + "\n" +
                    Line(IdEvent{"p", "z", kBase + 3 * kHour, "", 1}) + "\n" +
                    Line(IdEvent{"p", "a", kBase, "", 1}) + "\n" +                  // beyond: rejected
                    Line(IdEvent{"p", "b", kBase + 2 * kHour, "", 1}) + "\n" +      // exactly at the cutoff: applied
                    Line(IdEvent{"p", "b", kBase + 2 * kHour, "", 1}) + "\n");      // duplicate
  ASSERT_EQ(Snapsink({"ingest", root, in, "--commit-every", "1", "--quiet"}).exit_code, 0);
  const std::string sources = Inspect(root, "sources");
  EXPECT_NE(sources.find("\"applied\":3,\"duplicates\":1,\"fenced\":0,\"rejected\":1"), std::string::npos) << sources;
  EXPECT_NE(sources.find("\"rejected_horizon\":1"), std::string::npos) << sources;
  std::string rejects;
  for (const auto& [name, data] : TreeContents(root)) {
    if (name.rfind("rejects/", 0) == 0) rejects += data;
  }
  EXPECT_NE(rejects.find("\"line\":3,"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("\"reason\":\"beyond the dedup horizon\""), std::string::npos) << rejects;
  // "a" expired at the commit that moved the watermark: two ids held.
  EXPECT_EQ(IdsPrefix(Inspect(root, "ids")),
            "{\"ids\":2,\"oldest\":\"" + Iso(kBase + 2 * kHour) + "\",\"horizon\":\"1h\",\"cutoff\":\"" +
                Iso(kBase + 2 * kHour) + "\",\"table_bytes\":");
}

}  // namespace
}  // namespace snapsink::testing
