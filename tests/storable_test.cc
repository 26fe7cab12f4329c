// Every legal event is storable (docs/CONTRACT.md 7) and the directories
// the engine writes into come back when deleted, through the binary;
// the long-key collision story of engine/long_key.h, in the library.
//
// Regression: a metric of 128 escaped NULs with a 256-byte key failed with
// "lmdb put: MDB_BAD_VALSIZE" (the aggregate key was 522 bytes, over LMDB's
// 511), and a source name over ~248 bytes failed on the rejects file name,
// over 511 even without bad lines.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <boost/filesystem.hpp>
#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/long_key.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "engine/window_records.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


// JSON string text whose unescaped bytes are `n` copies of what `unit` escapes.
std::string Rep(const std::string& unit, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += unit;
  return s;
}

// The bytes a JSON escape stands for (for the model).
std::string Unescaped(const std::string& json_text) {
  simdjson::dom::parser p;
  std::string doc = "\"" + json_text + "\"";
  std::string_view v = p.parse(doc).get_string().value();
  return std::string(v);
}

using Cell = std::tuple<std::string, std::string, std::string>;  // window, metric, key
struct Totals {
  int64_t count = 0, sum = 0;
  bool operator==(const Totals&) const = default;
};

// Builds an input and the model of what it must publish.
struct Input {
  std::string text;
  std::map<Cell, Totals> model;
  std::map<std::string, uint64_t> next_seq;
  void Add(const std::string& producer_json, const std::string& metric_json, const std::string& key_json, int hour,
           int value) {
    const std::string producer = Unescaped(producer_json);
    uint64_t& seq = next_seq[producer];
    const int64_t ts = kBase + hour * kHour + static_cast<int64_t>(seq);
    // EventLine writes these JSON texts as given (escapes and all).
    text += EventLine().Producer(producer_json).Seq(seq++).Ts(ts).Metric(metric_json).Key(key_json).Value(value).Line();
    Totals& t = model[{std::to_string(hour), Unescaped(metric_json), Unescaped(key_json)}];
    t.count += 1;
    t.sum += value;
  }
};

// Rows of `query --format json`, keyed as the model is; also checks they come
// sorted by (window, metric, key) as bytes.
std::map<Cell, Totals> QueryRows(const std::string& root) {
  RunResult r = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<Cell, Totals> rows;
  simdjson::dom::parser p;
  std::vector<Cell> order;
  size_t start = 0;
  while (start < r.out.size()) {
    const size_t end = r.out.find('\n', start);
    const std::string line = r.out.substr(start, end - start);
    start = end + 1;
    simdjson::dom::element e = p.parse(line).value();
    std::string window(e["window"].get_string().value());
    // Windows as hours after kBase (10:00Z), as the model has them.
    EXPECT_EQ(window.substr(0, 11), "2026-10-21T") << window;
    Cell c{std::to_string(std::stoi(window.substr(11, 2)) - 10), std::string(e["metric"].get_string().value()),
           std::string(e["key"].get_string().value())};
    EXPECT_TRUE(order.empty() || order.back() < c) << "rows out of order at " << line;
    order.push_back(c);
    Totals t;
    t.count = e["count"].get_int64().value();
    t.sum = e["sum"].get_int64().value();
    EXPECT_TRUE(rows.emplace(c, t).second) << "row twice: " << line;
  }
  return rows;
}

void IngestAndPublish(const std::string& root, const std::string& file, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"run", root, file, "--final", "--commit-every", "3"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = Snapsink(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

TEST(Storable, IssueCase128NulMetricWith256ByteKey) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  Input in;
  for (int i = 0; i < 4; ++i) in.Add("p", Rep("\\u0000", 128), Rep("k", 256), 0, i + 1);
  WriteFile(dir / "in.ndjson", in.text);
  IngestAndPublish(root, dir / "in.ndjson");
  EXPECT_EQ(QueryRows(root), in.model);
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

// Producer, metric and key at their byte limits, every byte escaped: NULs,
// two-byte characters (\u00ff), quotes; and keys that share long prefixes,
// some stored whole and some in long form, which must come out sorted.
TEST(Storable, FieldsAtTheirLimitsEveryByteEscaped) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  Input in;
  const std::vector<std::array<std::string, 3>> cases = {
      {Rep("\\u0000", 128), Rep("\\u0000", 128), Rep("\\u0000", 256)},
      {Rep("\\u00ff", 64), Rep("\\u00ff", 64), Rep("\\u00ff", 128)},
      {Rep("\\\"", 128), Rep("\\\"", 128), Rep("\\\"", 256)},
      {Rep("\\u0000", 128), Rep("\\u0000", 128), ""},
      {"p", Rep("\\u0000", 128), Rep("\\\\", 256)},
  };
  for (int round = 0; round < 3; ++round) {
    for (const auto& c : cases) in.Add(c[0], c[1], c[2], round % 2, round * 10 + 1);
  }
  // Metric of 128 NULs (258 bytes escaped): keys up to 244 bytes are stored
  // whole, longer ones in long form keeping their first 237 bytes.
  std::mt19937 rng(7);
  const std::string prefix = Rep("\\u0000", 236) + "x";
  std::vector<std::string> keys;
  for (int len : {237, 240, 244, 245, 250, 256}) {
    for (int i = 0; i < 4; ++i) {
      std::string tail;
      for (int j = 237; j < len; ++j) tail.push_back(static_cast<char>('a' + rng() % 3));
      keys.push_back(prefix + tail);
    }
  }
  for (int round = 0; round < 2; ++round) {
    for (const std::string& k : keys) in.Add("q", Rep("\\u0000", 128), k, 0, round + 2);
  }
  WriteFile(dir / "in.ndjson", in.text);
  IngestAndPublish(root, dir / "in.ndjson");
  EXPECT_EQ(QueryRows(root), in.model);

  // More events for the same cells in a second run: found again, added to, not stored twice.
  Input more;
  more.next_seq = in.next_seq;
  for (const auto& c : cases) more.Add(c[0], c[1], c[2], 0, 100);
  for (const std::string& k : keys) more.Add("q", Rep("\\u0000", 128), k, 0, 1000);
  WriteFile(dir / "more.ndjson", more.text);
  IngestAndPublish(root, dir / "more.ndjson");
  std::map<Cell, Totals> want = in.model;
  for (const auto& [cell, t] : more.model) {
    want[cell].count += t.count;
    want[cell].sum += t.sum;
  }
  EXPECT_EQ(QueryRows(root), want);
  // A redelivery under another source name adds nothing: the long producers are found again.
  IngestAndPublish(root, dir / "more.ndjson", {"--source", "again"});
  EXPECT_EQ(QueryRows(root), want);
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

TEST(Storable, TwoLongKeysSharingALongPrefixStayDistinct) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  Input in;
  const std::string stem = Rep("k", 255);
  in.Add("p", Rep("\\u0000", 128), stem + "a", 0, 1);
  in.Add("p", Rep("\\u0000", 128), stem + "b", 0, 2);
  in.Add("p", Rep("\\u0000", 128), stem + "a", 0, 4);
  WriteFile(dir / "in.ndjson", in.text);
  IngestAndPublish(root, dir / "in.ndjson");
  const auto rows = QueryRows(root);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows, in.model);
}

// Query prints a key of NULs escaped in every format, one row per line.
TEST(Storable, QueryFormatsEscapeNulKeys) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  Input in;
  in.Add("p", Rep("\\u0000", 128), Rep("\\u0000", 255) + "\\n", 0, 3);
  in.Add("p", "m", "plain", 0, 3);
  WriteFile(dir / "in.ndjson", in.text);
  IngestAndPublish(root, dir / "in.ndjson");
  RunResult json = Snapsink({"query", root, "--format", "json"});
  EXPECT_NE(json.out.find("\"metric\":\"" + Rep("\\u0000", 128) + "\",\"key\":\"" + Rep("\\u0000", 255) + "\\u000a\""),
            std::string::npos);
  RunResult table = Snapsink({"query", root, "--format", "table"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 3) << table.out;
  EXPECT_EQ(table.out.find('\0'), std::string::npos);
  EXPECT_NE(table.out.find(Rep("\\x00", 128) + "  " + Rep("\\x00", 255) + "\\n "), std::string::npos) << table.out;
  RunResult csv = Snapsink({"query", root, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  // RFC 4180: the bytes as they are, quoted.
  EXPECT_NE(csv.out.find(",\"" + std::string(128, '\0') + "\",\"" + std::string(255, '\0') + "\n\","),
            std::string::npos);
}

// Source names of 300 and 600 bytes (two that share their first 550), and a
// 600-byte path as the default name: ingest, rejects, resume, publish.
TEST(Storable, LongSourceNamesWithRejects) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  std::string deep = dir.path();
  for (int i = 0; i < 3; ++i) {
    deep += "/" + std::string(200, static_cast<char>('a' + i));
    boost::filesystem::create_directories(deep);
  }
  const std::string deep_file = deep + "/in.ndjson";
  ASSERT_GT(deep_file.size(), 600u);
  const std::vector<std::string> names = {std::string(300, 's'), std::string(550, '/') + std::string(50, 'x'),
                                          std::string(550, '/') + std::string(50, 'y'), ""};
  std::map<Cell, Totals> want;
  std::set<std::string> rejects_files;
  for (size_t n = 0; n < names.size(); ++n) {
    Input in;
    in.Add("p" + std::to_string(n), "m", "k", 0, 1);
    in.text += "not json " + std::to_string(n) + "\n";
    in.Add("p" + std::to_string(n), "m", "k", 0, 2);
    const std::string file = names[n].empty() ? deep_file : dir / ("in" + std::to_string(n) + ".ndjson");
    WriteFile(file, in.text);
    std::vector<std::string> args = {"ingest", root, file};
    if (!names[n].empty()) args.insert(args.end(), {"--source", names[n]});
    RunResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string source = names[n].empty() ? deep_file : names[n];
    const std::string rejects = filenames::RejectsFile(root, source);
    const std::string base = rejects.substr(rejects.rfind('/') + 1);
    EXPECT_LE(base.size(), 255u);
    rejects_files.insert(base);
    const std::string text = ReadFile(rejects);
    EXPECT_NE(text.find("\"line\":2"), std::string::npos) << text;
    EXPECT_NE(text.find("\"raw\":\"not json " + std::to_string(n) + "\""), std::string::npos) << text;
    // Resumes from its committed offset: nothing read twice.
    RunResult again = Snapsink(args);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(ReadFile(rejects), text);
    for (const auto& [cell, t] : in.model) {
      want[cell].count += t.count;
      want[cell].sum += t.sum;
    }
  }
  EXPECT_EQ(rejects_files.size(), names.size());
  for (const std::string& f : rejects_files) EXPECT_EQ(f.find(std::string(201, 's')), std::string::npos) << f;
  RunResult sources = Snapsink({"inspect", root, "sources", "--json"});
  ASSERT_EQ(sources.exit_code, 0) << sources.err;
  for (size_t n = 0; n + 1 < names.size(); ++n) {
    EXPECT_NE(sources.out.find("{\"source\":\"" + names[n] + "\",\"offset\""), std::string::npos) << names[n].size();
  }
  EXPECT_NE(sources.out.find("\"source\":\"" + deep_file + "\""), std::string::npos);
  EXPECT_EQ(std::count(sources.out.begin(), sources.out.end(), '\n'), 4);
  EXPECT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"publish", root}).exit_code, 0);
  // Producers p0..p3, each applied twice into (0, m, k).
  EXPECT_EQ(QueryRows(root), want);

  // A backfill's rejects file is cut the same way.
  const std::string archive = dir / "archive.ndjson";
  WriteFile(archive, EventLine().Producer("b").Seq(0).Ts(kBase + 5 * kHour).Metric("m").Key("k").Value(1).Line() + "bad\n");
  RunResult bf = Snapsink({"backfill", root, "--version", "1", archive, "--source", names[1]});
  ASSERT_EQ(bf.exit_code, 0) << bf.err;
  const std::string bf_rejects = filenames::BackfillRejectsFile(root, 1, names[1]);
  EXPECT_LE(bf_rejects.substr(bf_rejects.rfind('/') + 1).size(), 255u);
  EXPECT_NE(ReadFile(bf_rejects).find("\"raw\":\"bad\""), std::string::npos);
}

TEST(Storable, RejectsFileNameIsCutAndHashSuffixed) {
  const std::string a = std::string(250, 'a'), b = std::string(249, 'a') + "b";
  const std::string fa = filenames::RejectsFileName(a), fb = filenames::RejectsFileName(b);
  EXPECT_NE(fa, fb);
  EXPECT_EQ(fa.size(), 200u + 1 + 16 + 7);
  EXPECT_EQ(fa.substr(0, 201), std::string(200, 'a') + "-");
  EXPECT_EQ(filenames::RejectsFileName("feed/a b"), "feed_a_b.ndjson");  // short names unchanged
  EXPECT_EQ(filenames::RejectsFileName(std::string(217, 'z')), std::string(217, 'z') + ".ndjson");
  EXPECT_LE(filenames::BackfillRejectsFile("/r", 4294967295u, std::string(1000, '/')).size(), 7u + 255u);
}

// Item 7: the directories the engine writes into are made again when deleted;
// a crash in the batch that makes the rejects file again keeps each reject once.
TEST(Storable, DeletedDirectoriesAreRecreated) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  Input in;
  in.Add("p", "m", "k", 0, 1);
  in.text += "bad line\n";
  WriteFile(dir / "a.ndjson", in.text);
  ASSERT_EQ(Snapsink({"ingest", root, dir / "a.ndjson"}).exit_code, 0);
  for (const char* d : {"rejects", "staging", "snapshots", "manifests"}) boost::filesystem::remove_all(root + "/" + d);
  Input more;
  more.next_seq = in.next_seq;
  more.Add("p", "m", "k", 1, 2);
  more.text += "another bad line\n";
  AppendFile(dir / "a.ndjson", more.text);
  RunResult crashed = Snapsink({"run", root, dir / "a.ndjson", "--final"}, {{"SNAPSINK_CRASH_AT", "ingest.before_commit"}});
  ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
  RunResult r = Snapsink({"run", root, dir / "a.ndjson", "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rejects = ReadFile(filenames::RejectsFile(root, dir / "a.ndjson"));
  EXPECT_EQ(rejects.substr(0, 2), "{\"") << rejects;
  EXPECT_EQ(std::count(rejects.begin(), rejects.end(), '\n'), 1) << rejects;
  EXPECT_EQ(rejects.find("{\"source\""), rejects.rfind("{\"source\"")) << rejects;  // one reject, whole
  EXPECT_NE(rejects.find("another bad line"), std::string::npos) << rejects;
  std::map<Cell, Totals> want = in.model;
  for (const auto& [c, t] : more.model) want[c] = t;
  EXPECT_EQ(QueryRows(root), want);
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

// ---- engine/long_key.h in the library: collisions are detected, not merged.

uint64_t ConstantHash(std::string_view) { return 42; }

struct HashHook {
  explicit HashHook(uint64_t (*h)(std::string_view)) { SetLongKeyHashForTesting(h); }
  ~HashHook() { SetLongKeyHashForTesting(nullptr); }
};

std::string AggKey(const std::string& metric, const std::string& key) {
  std::string k;
  codec::AggKeyInto(&k, kBase, metric, key);
  return k;
}

TEST(LongKey, ForcedHashCollisionIsDetectedNotMerged) {
  TempDir dir;
  std::unique_ptr<Store> store;
  ASSERT_STATUS_OK(Store::Open(dir.path(), true, &store));
  HashHook hook(&ConstantHash);
  const std::string metric(128, '\0');
  // Same 237-byte key prefix, same (forced) hash: one slot chain.
  const std::string k1 = std::string(250, 'k') + "zzzzzz", k2 = std::string(250, 'k') + "aaaaaa",
                    k3 = std::string(250, 'k') + "mmmmmm";
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  ASSERT_GT(AggKey(metric, k1).size(), kMaxDirectKey);
  ASSERT_STATUS_OK(PutRecord(txn.get(), Table::kAggs, AggKey(metric, k1), codec::Encode(Aggregate{1, 10, 1})));
  ASSERT_STATUS_OK(PutRecord(txn.get(), Table::kAggs, AggKey(metric, k2), codec::Encode(Aggregate{2, 20, 2})));
  ASSERT_STATUS_OK(PutRecord(txn.get(), Table::kAggs, AggKey(metric, k1), codec::Encode(Aggregate{3, 30, 3})));
  std::string_view v;
  Aggregate a;
  ASSERT_STATUS_OK(GetRecord(txn.get(), Table::kAggs, AggKey(metric, k1), &v));
  ASSERT_STATUS_OK(codec::Decode(v, &a));
  EXPECT_EQ(a, (Aggregate{3, 30, 3}));
  ASSERT_STATUS_OK(GetRecord(txn.get(), Table::kAggs, AggKey(metric, k2), &v));
  ASSERT_STATUS_OK(codec::Decode(v, &a));
  EXPECT_EQ(a, (Aggregate{2, 20, 2}));
  EXPECT_TRUE(GetRecord(txn.get(), Table::kAggs, AggKey(metric, k3), &v).IsNotFound());
  // Scanned: both, in key order although stored in hash-slot order (k1 first).
  std::vector<std::string> seen;
  ASSERT_STATUS_OK(ScanWindowAggregates(txn.get(), kBase, [&](const std::string& m, std::string_view key, const Aggregate&) {
                EXPECT_EQ(m, metric);
                seen.emplace_back(key);
                return Status::OK();
              }));
  EXPECT_EQ(seen, (std::vector<std::string>{k2, k1}));
  // A full chain is an error, never an overwrite.
  Status s;
  int stored = 2;
  for (int i = 0; i < 100 && s.ok(); ++i) {
    s = PutRecord(txn.get(), Table::kAggs, AggKey(metric, std::string(250, 'k') + std::to_string(1000 + i)),
                  codec::Encode(Aggregate{1, 1, 1}));
    if (s.ok()) ++stored;
  }
  EXPECT_EQ(stored, static_cast<int>(kMaxProbes));
  EXPECT_NE(s.message().find("hash chain full"), std::string::npos) << s.message();
  ASSERT_STATUS_OK(GetRecord(txn.get(), Table::kAggs, AggKey(metric, k2), &v));
  ASSERT_STATUS_OK(codec::Decode(v, &a));
  EXPECT_EQ(a, (Aggregate{2, 20, 2}));
  ASSERT_STATUS_OK(txn->Commit());
}

// A long-form record whose slot is not near its key's hash is reported, not trusted.
TEST(LongKey, RecordInTheWrongSlotIsCorruption) {
  TempDir dir;
  std::unique_ptr<Store> store;
  ASSERT_STATUS_OK(Store::Open(dir.path(), true, &store));
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  {
    HashHook hook(&ConstantHash);
    ASSERT_STATUS_OK(PutRecord(txn.get(), Table::kSources, std::string(600, 's'), "x"));
  }
  Status st;
  ASSERT_STATUS_OK(txn->Scan(Table::kSources, "", [&](std::string_view k, std::string_view v) {
                std::string natural;
                std::string_view payload;
                st = DecodeRecord(k, v, &natural, &payload);
                return true;
              }));
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
}

// A storage error while ingesting names the source and the line.
// Ingest keeps aggregates in runs (engine/window_records_runs.h), whose
// keys have no length limit and no hash chain: 70 long keys that share
// their 503-byte prefix and one hash (more than a long-form chain holds)
// are all stored, each its own row.
TEST(LongKey, CollidingLongAggregateKeysAreAllStored) {
  TempDir dir;
  std::unique_ptr<Root> root;
  ASSERT_STATUS_OK(Root::Init(Env::Default(), dir / "root", RootConfig()));
  ASSERT_STATUS_OK(Root::Open(Env::Default(), dir / "root", Root::Access::kWriter, &root));
  Input in;
  for (int i = 0; i < 70; ++i) in.Add("p", Rep("\\u0000", 128), Rep("k", 250) + std::to_string(100000 + i), 0, 1);
  WriteFile(dir / "in.ndjson", in.text);
  HashHook hook(&ConstantHash);
  Ingester ingester(Env::Default(), root->store(), root->config());
  IngestOptions o;
  o.path = dir / "in.ndjson";
  o.source = "feed";
  o.commit_every = 1;
  o.rejects_file = filenames::RejectsFile(root->path(), o.source);
  SourceState after;
  ASSERT_STATUS_OK(ingester.Run(o, &after));
  EXPECT_EQ(after.applied, 70u);
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(root->store()->BeginRead(&txn));
  std::vector<std::string> keys;
  ASSERT_STATUS_OK(ScanWindowAggregates(txn.get(), kBase, [&](const std::string&, std::string_view key, const Aggregate& a) {
    keys.emplace_back(key);
    EXPECT_EQ(a.events, 1);
    return Status::OK();
  }));
  ASSERT_EQ(keys.size(), 70u);
  for (int i = 0; i < 70; ++i) EXPECT_EQ(keys[i], Rep("k", 250) + std::to_string(100000 + i));
}

}  // namespace
}  // namespace snapsink::testing
