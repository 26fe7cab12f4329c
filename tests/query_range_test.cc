// query --from/--to, --metric-prefix/--key-prefix and --rollup give exactly
// the rows a full scan filtered by hand gives:
// random (seeded) ranges, prefixes and roll-ups over a root of 2,000
// one-minute windows against a reference computed here from a full
// `query --format json` with exact integer micros; the edges of ranges and
// prefixes; a range opens only its windows' files; HTTP gives the CLI's bytes.
#include <gtest/gtest.h>
#include <httplib.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "engine/decimal.h"
#include "engine/env.h"
#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "publish/generation_reader.h"
#include "sink/root_views.h"
#include "snapsink/reader.h"
#include "snapsink/utilities/table.h"
#include "snapsink/views.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


// Keys sorted apart by the prefixes below; two hold bytes above 0x7F.
const std::vector<std::string> kKeys = {"k/eu", "k/us", "k/store-9/a", "k/store-9/b", "k/store-90",
                                        "k/\xc3\xa9t\xc3\xa9", "k/\xe6\x97\xa5"};
const std::vector<std::string> kMetrics = {"orders", "orders.eu", "refunds"};
const std::vector<std::string> kKeyPrefixes = {"", "k/", "k/store-9/", "k/store-9", "k/\xc3", "k/e", "zz", "k/us"};
const std::vector<std::string> kMetricPrefixes = {"", "orders", "orders.", "r", "x"};


// A root of `windows` one-minute windows from kBase, each with rows of some
// (metric, key) pairs and values with micros, some negative; one run --final.
void MakeRoot(const std::string& root, const std::string& input, int windows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string lines;
  uint64_t seq = 0;
  for (int w = 0; w < windows; w++) {
    for (const std::string& m : kMetrics) {
      for (const std::string& k : kKeys) {
        if (rng() % 3 == 0) continue;
        const int events = 1 + static_cast<int>(rng() % 2);
        for (int e = 0; e < events; e++) {
          const int64_t micros = static_cast<int64_t>(rng() % 20000001) - 5000000;
          const std::string value = (micros < 0 ? "-" : "") + std::to_string(std::llabs(micros) / 1000000) + "." +
                                    fmt::format("{:06d}", std::llabs(micros) % 1000000);
          lines += EventLine().Seq(seq++).Ts(kBase + w * kMinute + e).Metric(m).Key(k).Value(value).Line();
        }
      }
    }
  }
  WriteFile(input, lines);
  RunResult r = Snapsink({"init", root, "--window", "1m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"run", root, input, "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// The string value of "name":"..." in a JSON line (no escapes in our data).
std::string Field(const std::string& line, const std::string& name, bool quoted) {
  const std::string tag = "\"" + name + "\":" + (quoted ? "\"" : "");
  size_t p = line.find(tag);
  EXPECT_NE(p, std::string::npos) << name << " in " << line;
  p += tag.size();
  const size_t e = line.find_first_of(quoted ? "\"" : ",}", p);
  return line.substr(p, e - p);
}

// Exact micros of a decimal text ("-12.5" -> -12500000).
int64_t Micros(const std::string& text) {
  size_t i = 0;
  const bool neg = !text.empty() && text[0] == '-';
  if (neg) i = 1;
  int64_t whole = 0, frac = 0;
  int digits = 0;
  for (; i < text.size() && text[i] != '.'; i++) whole = whole * 10 + (text[i] - '0');
  if (i < text.size()) {
    for (i++; i < text.size(); i++, digits++) frac = frac * 10 + (text[i] - '0');
  }
  for (; digits < 6; digits++) frac *= 10;
  const int64_t v = whole * 1000000 + frac;
  return neg ? -v : v;
}

struct RefRow {
  int64_t window;
  std::string metric, key;
  int64_t count, sum;
};

// Every row of the root's current generation, from `query --format json`.
std::vector<RefRow> FullQuery(const std::string& root) {
  RunResult r = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<RefRow> rows;
  size_t pos = 0;
  while (pos < r.out.size()) {
    const size_t nl = r.out.find('\n', pos);
    const std::string line = r.out.substr(pos, nl - pos);
    pos = nl + 1;
    int64_t w = 0;
    EXPECT_TRUE(ParseWindowName(Field(line, "window", true), &w)) << line;
    rows.push_back({w, Field(line, "metric", true), Field(line, "key", true),
                    std::stoll(Field(line, "count", false)), Micros(Field(line, "sum", false))});
  }
  return rows;
}

struct Case {
  std::optional<int64_t> from, to;
  std::string metric, metric_prefix, key_prefix;
  std::optional<std::string> key;
  std::optional<int64_t> rollup;  // 0 = all
};

bool Selected(const Case& c, const RefRow& r) {
  if (c.from && r.window < *c.from) return false;
  if (c.to && r.window > *c.to) return false;
  if (!c.metric.empty() && r.metric != c.metric) return false;
  if (c.key && r.key != *c.key) return false;
  return r.metric.starts_with(c.metric_prefix) && r.key.starts_with(c.key_prefix);
}

// The reference answer of c, as the text api::FormatTable prints.
std::string Reference(const std::vector<RefRow>& all, const Case& c) {
  if (!c.rollup) {
    std::vector<api::QueryRow> rows;
    for (const RefRow& r : all) {
      if (Selected(c, r)) rows.push_back({r.window, 1, api::Row{r.metric, r.key, r.count, r.sum, 0}});
    }
    return api::FormatTable(api::ToTable(rows, 1), api::OutputFormat::kJson);
  }
  auto bucket_of = [&](int64_t w) { return *c.rollup == 0 ? 0 : api::WindowStart(w, *c.rollup); };
  std::map<int64_t, std::set<int64_t>> windows;  // bucket -> windows selected by the range
  std::map<std::tuple<int64_t, std::string, std::string>, std::pair<int64_t, int64_t>> sums;
  for (const RefRow& r : all) {
    if ((c.from && r.window < *c.from) || (c.to && r.window > *c.to)) continue;
    windows[bucket_of(r.window)].insert(r.window);
    if (!Selected(c, r)) continue;
    auto& s = sums[{bucket_of(r.window), r.metric, r.key}];
    s.first = WrappingAdd(s.first, r.count);
    s.second = WrappingAdd(s.second, r.sum);
  }
  std::vector<api::RollupRow> rows;
  for (const auto& [k, s] : sums) {
    api::RollupRow r;
    if (*c.rollup != 0) r.bucket_ms = std::get<0>(k);
    r.metric = std::get<1>(k);
    r.key = std::get<2>(k);
    r.count = s.first;
    r.sum_micros = s.second;
    r.windows = windows[std::get<0>(k)].size();
    rows.push_back(r);
  }
  return api::FormatTable(api::ToTable(rows, 1), api::OutputFormat::kJson);
}

std::string Answer(api::Reader* reader, const Case& c) {
  api::QuerySpec q;
  q.from = c.from;
  q.to = c.to;
  q.metric = c.metric;
  q.key = c.key;
  q.metric_prefix = c.metric_prefix;
  q.key_prefix = c.key_prefix;
  q.rollup_ms = c.rollup;
  if (c.rollup) {
    std::vector<api::RollupRow> rows;
    EXPECT_STATUS_OK(reader->Rollup(q, &rows));
    return api::FormatTable(api::ToTable(rows, reader->generation()), api::OutputFormat::kJson);
  }
  std::vector<api::QueryRow> rows;
  EXPECT_STATUS_OK(reader->Query(q, &rows));
  return api::FormatTable(api::ToTable(rows, reader->generation()), api::OutputFormat::kJson);
}

std::vector<std::string> CliArgs(const std::string& root, const Case& c) {
  std::vector<std::string> a = {"query", root, "--format", "json"};
  if (c.from) a.insert(a.end(), {"--from", FormatIso(*c.from + 30000)});  // inside the window
  if (c.to) a.insert(a.end(), {"--to", std::to_string(*c.to + kMinute - 1)});
  if (!c.metric.empty()) a.insert(a.end(), {"--metric", c.metric});
  if (c.key) a.insert(a.end(), {"--key", *c.key});
  if (!c.metric_prefix.empty()) a.insert(a.end(), {"--metric-prefix", c.metric_prefix});
  if (!c.key_prefix.empty()) a.insert(a.end(), {"--key-prefix", c.key_prefix});
  if (c.rollup) a.insert(a.end(), {"--rollup", *c.rollup == 0 ? "all" : FormatDuration(*c.rollup)});
  return a;
}

TEST(QueryRange, RandomRangesPrefixesAndRollupsMatchTheReference) {
  FastDir dir;
  const std::string root = dir / "root";
  constexpr int kWindows = 2000;
  MakeRoot(root, dir / "in.ndjson", kWindows, 22);
  const std::vector<RefRow> all = FullQuery(root);
  ASSERT_GT(all.size(), size_t{kWindows});
  auto reader = api::Reader::Open(root);
  ASSERT_STATUS_OK(reader);
  std::mt19937 rng(2022);
  const int64_t rollups[] = {0, kMinute, 5 * kMinute, 60 * kMinute, 24 * 60 * kMinute};
  for (int i = 0; i < 60; i++) {
    Case c;
    const int64_t a = kBase + static_cast<int64_t>(rng() % (kWindows + 20)) * kMinute - 10 * kMinute;
    const int64_t b = a + static_cast<int64_t>(rng() % 300) * kMinute;
    if (rng() % 4 != 0) c.from = a;
    if (rng() % 4 != 0) c.to = b;
    c.metric_prefix = kMetricPrefixes[rng() % kMetricPrefixes.size()];
    c.key_prefix = kKeyPrefixes[rng() % kKeyPrefixes.size()];
    if (rng() % 6 == 0) c.metric = kMetrics[rng() % kMetrics.size()];
    if (rng() % 6 == 0) c.key = kKeys[rng() % kKeys.size()];
    if (rng() % 2 == 0) c.rollup = rollups[rng() % std::size(rollups)];
    const std::string want = Reference(all, c);
    ASSERT_EQ(Answer(reader->get(), c), want) << "case " << i;
    if (i % 10 == 0) {  // the command line prints the same bytes
      RunResult r = Snapsink(CliArgs(root, c));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.out, want) << "case " << i;
    }
  }
}

TEST(QueryRange, EdgesOfRangesAndPrefixes) {
  FastDir dir;
  const std::string root = dir / "root";
  MakeRoot(root, dir / "in.ndjson", 120, 7);
  const std::vector<RefRow> all = FullQuery(root);
  auto cli = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"query", root, "--format", "json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return Snapsink(a);
  };
  // Start and end inside a window name those windows.
  Case c;
  c.from = kBase + 3 * kMinute;
  c.to = kBase + 5 * kMinute;
  RunResult r = cli({"--from", "2026-10-21T10:03:59.999Z", "--to", "2026-10-21T10:05:00.001Z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Reference(all, c));
  EXPECT_NE(r.out, "");
  // One window: from = to.
  r = cli({"--from", "2026-10-21T10:07:10Z", "--to", "2026-10-21T10:07:50Z", "--rollup", "all"});
  c.from = c.to = kBase + 7 * kMinute;
  c.rollup = 0;
  EXPECT_EQ(r.out, Reference(all, c));
  // A range that holds no window: no rows, said on stderr, exit 0.
  r = cli({"--from", "2020-01-01T00:00:00Z", "--to", "2020-01-02T00:00:00Z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no rows in generation 1 match --from 2020-01-01T00:00:00Z --to 2020-01-02T00:00:00Z"),
            std::string::npos) << r.err;
  r = cli({"--from", "2030-01-01T00:00:00Z", "--rollup", "1h"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // Reversed: a usage error naming both.
  r = cli({"--from", "2026-10-21T10:09:00Z", "--to", "2026-10-21T10:08:59Z"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--from '2026-10-21T10:09:00Z' (window 2026-10-21T10:09:00Z) is after --to "
                       "'2026-10-21T10:08:59Z' (window 2026-10-21T10:08:00Z)"),
            std::string::npos) << r.err;
  // Within one window, from after to names the same window: not reversed.
  r = cli({"--from", "2026-10-21T10:09:59Z", "--to", "2026-10-21T10:09:01Z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A roll-up that is not a multiple of the window size.
  r = cli({"--rollup", "90s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--rollup '90s': expected all or a multiple of the window size 1m"), std::string::npos)
      << r.err;
  // Prefixes: empty = no filter; one that matches everything; bytes above 0x7F.
  const std::string everything = cli({}).out;
  EXPECT_EQ(cli({"--key-prefix", ""}).out, everything);
  EXPECT_EQ(cli({"--key-prefix", "k/", "--metric-prefix", ""}).out, everything);
  Case high;
  high.key_prefix = "k/\xc3";
  r = cli({"--key-prefix", "k/\xc3"});
  EXPECT_EQ(r.out, Reference(all, high));
  EXPECT_NE(r.out.find("k/\xc3\xa9t\xc3\xa9"), std::string::npos);
  EXPECT_EQ(r.out.find("k/\xe6"), std::string::npos);
  high.key_prefix = "k/\xe6\x97";
  high.metric = "refunds";
  EXPECT_EQ(cli({"--key-prefix", "k/\xe6\x97", "--metric", "refunds"}).out, Reference(all, high));
  // Existing arguments print what they did.
  Case point;
  point.metric = "orders";
  point.key = "k/us";
  point.from = point.to = kBase + 2 * kMinute;
  EXPECT_EQ(cli({"--window", "2026-10-21T10:02:00Z", "--metric", "orders", "--key", "k/us"}).out,
            Reference(all, point));
}

// Counts the snapshot files (data files and snapshot manifests) opened.
class CountingEnv : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(Env::Default()) {}
  Status NewRandomAccessFile(const std::string& p, std::unique_ptr<RandomAccessFile>* o) override {
    Note(p);
    return EnvWrapper::NewRandomAccessFile(p, o);
  }
  Status ReadFileToString(const std::string& p, std::string* o) override {
    Note(p);
    return EnvWrapper::ReadFileToString(p, o);
  }
  std::set<std::string> snapshot_files;

 private:
  void Note(const std::string& p) {
    if (p.find("/snapshots/") != std::string::npos) snapshot_files.insert(p);
  }
};

TEST(QueryRange, ARangeOpensOnlyItsWindowsFiles) {
  FastDir dir;
  const std::string root = dir / "root";
  std::string lines;
  for (int i = 0; i < 5000; i++) {
    lines += EventLine().Seq(i).Ts(kBase + i * kMinute).Metric("m").Key("k").Value(i + 1).Line();
  }
  WriteFile(dir / "in.ndjson", lines);
  ASSERT_EQ(Snapsink({"init", root, "--window", "1m"}).exit_code, 0);
  RunResult r = Snapsink({"run", root, dir / "in.ndjson", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CountingEnv env;
  std::unique_ptr<Reader> reader;
  ASSERT_STATUS_OK(Reader::Open(&env, root, 0, &reader));
  ASSERT_EQ(reader->windows().size(), 5000u);
  QuerySpec q;
  q.from = kBase + 2000 * kMinute;
  q.to = kBase + 2019 * kMinute;
  std::vector<api::RollupRow> rows;
  q.rollup_ms = 0;
  ASSERT_STATUS_OK(RollupRows(reader.get(), q, &rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].windows, 20u);
  EXPECT_EQ(rows[0].sum_micros, int64_t{(2001 + 2020) * 10} * 1000000);  // 2001 + ... + 2020
  // A manifest and a data file per window of the range, none of any other.
  EXPECT_LE(env.snapshot_files.size(), 40u);
  for (const std::string& p : env.snapshot_files) {
    bool in_range = false;
    for (int i = 2000; i < 2020; i++) {
      if (p.starts_with(filenames::SnapshotWindowDir(root, kBase + i * kMinute) + "/")) in_range = true;
    }
    EXPECT_TRUE(in_range) << p;
  }
  std::set<std::string> dirs;
  for (const std::string& p : env.snapshot_files) dirs.insert(p.substr(0, p.rfind('/', p.rfind('/') - 1)));
  EXPECT_EQ(dirs.size(), 20u);
}

std::string Encode(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_') {
      out += static_cast<char>(ch);
    } else {
      out += fmt::format("%{:02X}", ch);
    }
  }
  return out;
}

TEST(QueryRange, HttpGivesTheCliBytesAndItsUsageErrors) {
  FastDir dir;
  const std::string root = dir / "root";
  MakeRoot(root, dir / "in.ndjson", 180, 3);
  Server server = StartServe(root);
  ASSERT_NE(server.port, 0);
  httplib::Client http("127.0.0.1", server.port);
  struct Q {
    std::vector<std::pair<std::string, std::string>> params;
  };
  const std::vector<Q> cases = {
      {{{"from", "2026-10-21T10:30:00Z"}, {"to", "2026-10-21T11:10:30Z"}}},
      {{{"from", "2026-10-21T10:00:00Z"}, {"to", "2026-10-21T12:59:00Z"}, {"metric", "orders"}, {"key", "k/eu"},
        {"rollup", "1h"}}},
      {{{"key-prefix", "k/store-9/"}, {"rollup", "all"}}},
      {{{"key-prefix", "k/\xc3"}, {"metric-prefix", "orders"}, {"from", "1792577400000"}, {"format", "csv"}}},
      {{{"rollup", "1d"}, {"format", "csv"}}},
      {{{"from", "2020-01-01T00:00:00Z"}, {"to", "2020-01-01T00:00:00Z"}, {"rollup", "all"}, {"format", "csv"}}},
  };
  for (const Q& q : cases) {
    std::string target = "/v1/query?";
    std::vector<std::string> args = {"query", root};
    bool format = false;
    for (const auto& [k, v] : q.params) {
      target += k + "=" + Encode(v) + "&";
      args.push_back("--" + k);
      args.push_back(v);
      format |= k == "format";
    }
    if (!format) args.insert(args.end(), {"--format", "json"});
    auto res = http.Get(target);
    ASSERT_TRUE(res) << target;
    EXPECT_EQ(res->status, 200) << target << " " << res->body;
    RunResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(res->body, r.out) << target;
  }
  // Bad values: 400 with the command line's wording (the parameter's name for the option's).
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"from=yesterday", "from 'yesterday': expected "},
      {"to=2026-13-01", "to '2026-13-01': expected "},
      {"from=2026-10-21T11:00:00Z&to=2026-10-21T10:00:00Z",
       "from '2026-10-21T11:00:00Z' (window 2026-10-21T11:00:00Z) is after to '2026-10-21T10:00:00Z' (window "
       "2026-10-21T10:00:00Z)"},
      {"rollup=90s", "rollup '90s': expected all or a multiple of the window size 1m"},
      {"rollup=", "rollup '': expected all"},
  };
  for (const auto& [params, want] : bad) {
    auto res = http.Get("/v1/query?" + params);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << params;
    EXPECT_NE(res->body.find(want), std::string::npos) << params << ": " << res->body;
  }
  RunResult r = Snapsink({"query", root, "--from", "yesterday"});
  EXPECT_NE(r.err.find("--from 'yesterday': expected "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace snapsink::testing
