// Damaged files of a published root, and the reconciliation gate
// (docs/CONTRACT.md 4, 6; STYLE: corruption_test).
//
// A byte flipped in each kind of published file (snapshot data, snapshot
// manifest.json, generation manifest and its parts, CURRENT) must make `verify` exit 10
// and name the file, and `query` must either fail with 10 or print exactly
// what it printed before: never changed numbers.
//
// The gate: a staged snapshot rewritten with valid checksums but numbers
// that differ from the engine's ledger must make `publish` exit 4, name the
// window and both numbers, leave the staged files where they are and leave
// CURRENT alone.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include <boost/filesystem.hpp>

#include "engine/decimal.h"
#include "engine/env.h"
#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "snapshot/checked_json.h"
#include "publish/generation_manifest.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_manifest.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

const char kW0[] = "20261021T100000Z";
const char kW1[] = "20261021T110000Z";
const char kW1Iso[] = "2026-10-21T11:00:00Z";

int64_t BaseMs() {
  int64_t ms = 0;
  ParseRfc3339Ms("2026-10-21T10:00:00Z", &ms);
  return ms;
}

std::string Event(uint64_t seq, int64_t ts_ms, const std::string& metric, const std::string& key,
                  const std::string& value) {
  return EventLine().Seq(seq).Ts(ts_ms).Metric(metric).Key(key).Value(value).Line();
}

// in1: windows 10:00 and 11:00, two metrics, a few keys each.
// in2: more events for 11:00 (so it gets v2 in generation 2).
void WriteInputs(const TempDir& d) {
  const int64_t base = BaseMs();
  std::string text;
  uint64_t seq = 0;
  for (int w = 0; w < 2; ++w) {
    for (int i = 0; i < 30; ++i) {
      text += Event(seq++, base + w * kHour + i * 1000, i % 2 ? "orders" : "clicks", "k" + std::to_string(i % 7),
                    std::to_string(i) + ".5");
    }
  }
  WriteFile(d / "in1.ndjson", text);
  text.clear();
  for (int i = 0; i < 5; ++i) text += Event(seq++, base + kHour + 500 + i, "orders", "new" + std::to_string(i), "2");
  WriteFile(d / "in2.ndjson", text);
}

// A root with generation 1 (10:00 v1, 11:00 v1) and generation 2 (11:00 v2).
std::string PublishedRoot(const TempDir& d) {
  WriteInputs(d);
  const std::string root = d / "root";
  EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
  for (const char* in : {"in1.ndjson", "in2.ndjson"}) {
    RunResult r = Snapsink({"run", root, d / in, "--final"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  return root;
}

void FlipByte(const std::string& path, size_t offset) {
  std::string bytes = ReadFile(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x01);
  WriteFile(path, bytes);
}

// Offsets to damage in a file of `size` bytes: the first and last ones, the
// footer area, and every stride-th byte in between.
std::vector<size_t> Offsets(size_t size, size_t stride) {
  std::set<size_t> s = {0, 1, size / 2, size - 1};
  if (size > 64) s.insert({size - 64, size - 56, size - 8, size - 65});
  for (size_t o = 0; o < size; o += stride) s.insert(o);
  return {s.begin(), s.end()};
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = PublishedRoot(dir_);
    RunResult q = Snapsink({"query", root_, "--format", "json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    ASSERT_NE(q.out.find("\"generation\":2"), std::string::npos) << q.out;
    query_ = q.out;
    RunResult v = Snapsink({"verify", root_});
    ASSERT_EQ(v.exit_code, 0) << v.out << v.err;
  }

  // verify must exit 10 and name `rel` (a path inside the root) on a
  // CORRUPT line; query must fail with 10 or print what it printed before
  // (or, when current_ok, print exactly that).
  void ExpectDetected(const std::string& rel, const std::string& what, bool current_ok = false) {
    SCOPED_TRACE(what);
    RunResult v = Snapsink({"verify", root_});
    EXPECT_EQ(v.exit_code, 10) << v.out << v.err;
    bool named = false;
    size_t at = 0;
    for (size_t e; (e = v.out.find('\n', at)) != std::string::npos; at = e + 1) {
      const std::string line = v.out.substr(at, e - at);
      if (line.rfind("CORRUPT ", 0) == 0 && line.find(rel) != std::string::npos) named = true;
    }
    EXPECT_TRUE(named) << "verify does not name " << rel << ":\n" << v.out;
    RunResult q = Snapsink({"query", root_, "--format", "json"});
    if (current_ok) {
      EXPECT_EQ(q.exit_code, 0) << q.err;
      EXPECT_EQ(q.out, query_);
    } else if (q.exit_code == 0) {
      EXPECT_EQ(q.out, query_) << "query printed changed numbers";
    } else {
      EXPECT_EQ(q.exit_code, 10) << q.err;
      EXPECT_EQ(q.out, "") << "query printed rows and failed";
    }
  }

  void SweepFile(const std::string& rel, size_t stride, bool current_ok = false) {
    const std::string path = root_ + "/" + rel;
    const std::string original = ReadFile(path);
    ASSERT_FALSE(original.empty()) << path;
    for (size_t offset : Offsets(original.size(), stride)) {
      ASSERT_NO_FATAL_FAILURE(FlipByte(path, offset));
      ExpectDetected(rel, rel + ": byte " + std::to_string(offset) + " of " + std::to_string(original.size()) + " flipped",
                     current_ok);
      WriteFile(path, original);
      if (HasFailure()) return;
    }
  }

  TempDir dir_;
  std::string root_;
  std::string query_;
};

TEST_F(CorruptionTest, SnapshotDataOfCurrentGeneration) {
  SweepFile(std::string("snapshots/") + kW1 + "/v2/data", 11);
}

TEST_F(CorruptionTest, SnapshotDataOnlyAnOlderGenerationUses) {
  // verify checks every kept generation; the current one reads on unharmed.
  SweepFile(std::string("snapshots/") + kW1 + "/v1/data", 29, /*current_ok=*/true);
}

TEST_F(CorruptionTest, SnapshotManifest) {
  SweepFile(std::string("snapshots/") + kW0 + "/v1/manifest.json", 17);
}

TEST_F(CorruptionTest, GenerationManifestOfCurrent) { SweepFile("manifests/2", 13); }

TEST_F(CorruptionTest, GenerationManifestOfOlderGeneration) { SweepFile("manifests/1", 23, /*current_ok=*/true); }

// manifests/parts/<xxh64> of generation g's only part of `level` (both
// windows share one leaf of 32 hours, so one part of each level); by
// default the top manifest's.
std::string PartOf(const std::string& root, uint64_t g, uint32_t level = kPartDepth - 1) {
  const std::string path = root + "/manifests/" + std::to_string(g);
  GenerationManifest top;
  EXPECT_STATUS_OK(GenerationManifest::Decode(ReadFile(path), path, &top));
  EXPECT_EQ(top.parts.size(), 1u);
  if (top.parts.empty()) return "";
  GenerationPartRef ref = top.parts[0];
  for (uint32_t l = top.depth - 1; l > level; --l) {
    const std::string ipath = root + "/manifests/parts/" + Hex64(ref.xxh64);
    GenerationIndexPart index;
    EXPECT_STATUS_OK(GenerationIndexPart::Decode(ReadFile(ipath), ipath, &index));
    EXPECT_EQ(index.parts.size(), 1u);
    ref = index.parts[0];
  }
  return "manifests/parts/" + Hex64(ref.xxh64);
}

TEST_F(CorruptionTest, GenerationPartOfCurrent) { SweepFile(PartOf(root_, 2), 7); }

TEST_F(CorruptionTest, GenerationLeafAndLevel1PartOfCurrent) {
  SweepFile(PartOf(root_, 2, 0), 5);
  SweepFile(PartOf(root_, 2, 1), 9);
}

TEST_F(CorruptionTest, GenerationPartOnlyAnOlderGenerationUses) {
  ASSERT_NE(PartOf(root_, 1), PartOf(root_, 2));  // window 1's version differs
  SweepFile(PartOf(root_, 1), 11, /*current_ok=*/true);
}

TEST_F(CorruptionTest, MissingPartOfCurrent) {
  const std::string rel = PartOf(root_, 2, 0);
  const std::string original = ReadFile(root_ + "/" + rel);
  ASSERT_EQ(std::remove((root_ + "/" + rel).c_str()), 0);
  ExpectDetected(rel, rel + " removed");
  WriteFile(root_ + "/" + rel, original);
}

TEST_F(CorruptionTest, TruncatedAndMissingFiles) {
  const std::string data = root_ + "/snapshots/" + kW1 + "/v2/data";
  const std::string original = ReadFile(data);
  WriteFile(data, original.substr(0, original.size() / 2));
  ExpectDetected(std::string("snapshots/") + kW1 + "/v2/data", "data cut in half");
  WriteFile(data, original);

  const std::string manifest = root_ + "/snapshots/" + kW1 + "/v2/manifest.json";
  const std::string m = ReadFile(manifest);
  boost::filesystem::remove(manifest);
  ExpectDetected(std::string("snapshots/") + kW1 + "/v2/manifest.json", "manifest.json removed");
  WriteFile(manifest, m);

  boost::filesystem::remove(data);
  ExpectDetected(std::string("snapshots/") + kW1 + "/v2/data", "data removed");
  WriteFile(data, original);
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
}

TEST_F(CorruptionTest, CurrentWithGarbage) {
  const std::string good = ReadFile(root_ + "/CURRENT");
  const std::string hash = good.substr(good.find(' ') + 1, 16);
  for (const std::string& garbage :
       {std::string("garbage\n"), std::string(""), std::string("2x\n"), std::string("\xff\n"), std::string("-2\n"),
        std::string("2\n2\n"), std::string("2\n"), std::string("2 " + hash), std::string("2  " + hash + "\n"),
        std::string("02 " + hash + "\n"), std::string("2 " + hash.substr(1) + "\n")}) {
    WriteFile(root_ + "/CURRENT", garbage);
    ExpectDetected("CURRENT", "CURRENT = " + ::testing::PrintToString(garbage));
    RunResult q = Snapsink({"query", root_, "--format", "json"});
    EXPECT_EQ(q.exit_code, 10) << "CURRENT = " << ::testing::PrintToString(garbage) << ": " << q.out << q.err;
  }
  WriteFile(root_ + "/CURRENT", good);
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
}

// CURRENT names a generation whose manifest does not exist: that is not
// "nothing published yet", it is damage.
TEST_F(CorruptionTest, CurrentNamesMissingGeneration) {
  WriteFile(root_ + "/CURRENT", "7 0123456789abcdef\n");
  ExpectDetected("CURRENT", "CURRENT = 7");
  RunResult q = Snapsink({"query", root_, "--format", "json"});
  EXPECT_EQ(q.exit_code, 10) << q.out << q.err;
}

// Regression (docs/CONTRACT.md 10): CURRENT was a bare number, so a manifest swapped or
// rewritten after CURRENT named it was read as that generation. CURRENT now
// holds the XXH64 of the manifest; a reader and verify refuse a mismatch.
TEST_F(CorruptionTest, CurrentWithWrongChecksumRefused) {
  const std::string good = ReadFile(root_ + "/CURRENT");
  ASSERT_EQ(good.substr(0, 2), "2 ");
  // The checksum of generation 1's manifest under generation 2's number.
  const std::string m1 = ReadFile(root_ + "/manifests/1");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(XXH64(m1.data(), m1.size(), 0)));
  for (const std::string& bad : {std::string("2 0000000000000000\n"), "2 " + std::string(hex) + "\n"}) {
    WriteFile(root_ + "/CURRENT", bad);
    ExpectDetected("CURRENT", "CURRENT = " + bad);
    RunResult q = Snapsink({"query", root_, "--format", "json"});
    EXPECT_EQ(q.exit_code, 10) << q.out << q.err;
    EXPECT_NE(q.err.find("CURRENT"), std::string::npos) << q.err;
  }
  WriteFile(root_ + "/CURRENT", good);
  // The manifest rewritten under an unchanged CURRENT: refused the same way.
  const std::string m2 = ReadFile(root_ + "/manifests/2");
  WriteFile(root_ + "/manifests/2", m1);
  RunResult q = Snapsink({"query", root_, "--format", "json"});
  EXPECT_EQ(q.exit_code, 10) << q.out << q.err;
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 10);
  WriteFile(root_ + "/manifests/2", m2);
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
  EXPECT_EQ(Snapsink({"query", root_, "--format", "json"}).out, query_);
}

// `query --generation G` reads G as the current one when CURRENT names it:
// CURRENT's checksum of it must hold there too (it was served).
TEST_F(CorruptionTest, QueryOfTheGenerationCurrentNamesChecksItsChecksum) {
  const std::string good = ReadFile(root_ + "/CURRENT");
  WriteFile(root_ + "/CURRENT", "2 0000000000000000\n");
  RunResult q = Snapsink({"query", root_, "--generation", "2", "--format", "json"});
  EXPECT_EQ(q.exit_code, 10) << q.out << q.err;
  EXPECT_EQ(q.out, "");
  EXPECT_NE(q.err.find("CURRENT: names generation 2 with checksum 0000000000000000"), std::string::npos) << q.err;
  // Another generation than the one CURRENT names is read as before.
  EXPECT_EQ(Snapsink({"query", root_, "--generation", "1", "--format", "json"}).exit_code, 0);
  WriteFile(root_ + "/CURRENT", good);
  EXPECT_EQ(Snapsink({"query", root_, "--generation", "2", "--format", "json"}).out, query_);
}

std::string Hex(uint64_t v) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

// Makes generation 3 current: a version 2 (inline) top manifest naming
// `windows` (window dir name, version, the manifest.json it names), with
// CURRENT's checksum right. Every checksum holds: only what the names mean
// is wrong.
void PublishByHand(const std::string& root, const std::vector<std::tuple<std::string, uint64_t, std::string>>& windows) {
  std::string body = "{\"format\":\"snapsink.generation\",\"format_version\":2,\"generation\":3,\"parent\":2,"
                     "\"rollback_of\":0,\"windows\":[";
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto& [dir, version, manifest] = windows[i];
    int64_t ms = 0;
    ASSERT_TRUE(filenames::ParseWindowDirName(dir, &ms)) << dir;
    const std::string text = ReadFile(manifest);
    body += (i ? "," : "") + std::string("{\"window_ms\":") + std::to_string(ms) +
            ",\"version\":" + std::to_string(version) + ",\"manifest_xxh64\":\"" +
            Hex(XXH64(text.data(), text.size(), 0)) + "\"}";
  }
  const std::string doc = SealJson(body + "]}");
  WriteFile(root + "/manifests/3", doc);
  WriteFile(root + "/CURRENT", "3 " + Hex(XXH64(doc.data(), doc.size(), 0)) + "\n");
}

// A snapshot manifest whose window or version is not the one its leaf names
// it for (11:00 v2's files under 10:00 v9): refused, not served as 10:00.
TEST_F(CorruptionTest, SnapshotManifestOfAnotherWindowIsRefused) {
  const std::string from = root_ + "/snapshots/" + kW1 + "/v2";
  const std::string to = root_ + "/snapshots/" + kW0 + "/v9";
  boost::filesystem::create_directories(to);
  for (const char* f : {"manifest.json", "data"}) boost::filesystem::copy_file(from + "/" + f, to + "/" + f);
  PublishByHand(root_, {{kW0, 9, to + "/manifest.json"}});
  RunResult q = Snapsink({"query", root_, "--format", "json"});
  EXPECT_EQ(q.exit_code, 10) << q.out << q.err;
  EXPECT_EQ(q.out, "");
  EXPECT_NE(q.err.find("names window " + std::string(kW1Iso) + " v2, but generation 3 names it for"),
            std::string::npos)
      << q.err;
}

// A manifest's files[] naming a file that is not there: query and verify
// refuse it (both passed it: neither looked at any file but data).
TEST_F(CorruptionTest, SnapshotManifestNamingAMissingFileIsRefused) {
  const std::string dir = root_ + "/snapshots/" + kW0 + "/v1";
  const std::string text = ReadFile(dir + "/manifest.json");
  std::string body = text.substr(0, text.rfind(",\"checksum\""));
  const size_t files_end = body.rfind(']');
  body.insert(files_end, ",{\"name\":\"extra\",\"bytes\":1,\"xxh64\":\"0000000000000000\"}");
  WriteFile(dir + "/manifest.json", SealJson(body + "}"));
  PublishByHand(root_, {{kW0, 1, dir + "/manifest.json"}, {kW1, 2, root_ + "/snapshots/" + kW1 + "/v2/manifest.json"}});
  RunResult q = Snapsink({"query", root_, "--format", "json"});
  EXPECT_EQ(q.exit_code, 10) << q.out << q.err;
  EXPECT_NE(q.err.find(dir + "/extra: missing"), std::string::npos) << q.err;
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 10);
  EXPECT_NE(v.out.find(dir + "/extra: missing, but " + dir + "/manifest.json names it"), std::string::npos) << v.out;
}

// CURRENT switched to another generation that exists, with its right
// checksum: readers, which only read files, follow it; verify compares it
// with the generation state records as current.
TEST_F(CorruptionTest, CurrentNamesAnotherExistingGeneration) {
  const std::string good = ReadFile(root_ + "/CURRENT");
  const std::string m1 = ReadFile(root_ + "/manifests/1");
  char line[64];
  std::snprintf(line, sizeof(line), "1 %016llx\n", static_cast<unsigned long long>(XXH64(m1.data(), m1.size(), 0)));
  WriteFile(root_ + "/CURRENT", line);
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 10);
  EXPECT_NE(v.out.find("CURRENT: names generation 1, but state records generation 2 as current"), std::string::npos)
      << v.out;
  WriteFile(root_ + "/CURRENT", good);
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
}

// Regression (docs/CONTRACT.md 4): a staged snapshot whose checksum fails is a failed
// reconciliation, exit 4 naming the window; it used to exit 10 as if
// published data were corrupt. Nothing moves.
TEST(ReconcileGate, StagedSnapshotChecksumFailureExits4) {
  TempDir d;
  WriteInputs(d);
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  ASSERT_EQ(Snapsink({"run", root, d / "in1.ndjson", "--final"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"ingest", root, d / "in2.ndjson"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
  const std::string staged = root + "/staging/" + kW1 + "/v2";
  const std::string current = ReadFile(root + "/CURRENT");
  for (const char* file : {"data", "manifest.json"}) {
    SCOPED_TRACE(file);
    const std::string original = ReadFile(staged + "/" + file);
    FlipByte(staged + "/" + file, original.size() / 2);
    RunResult p = Snapsink({"publish", root});
    EXPECT_EQ(p.exit_code, 4) << p.out << p.err;
    EXPECT_NE(p.err.find(std::string("window ") + kW1Iso), std::string::npos) << p.err;
    EXPECT_EQ(ReadFile(root + "/CURRENT"), current);
    EXPECT_FALSE(boost::filesystem::exists(root + "/manifests/2"));
    WriteFile(staged + "/" + file, original);
  }
  RunResult p = Snapsink({"publish", root});
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

// --- The reconciliation gate ---

enum class Tamper { kCount, kSum, kEvents, kExtraRow };
void PrintTo(Tamper t, std::ostream* os) {
  *os << (t == Tamper::kCount ? "count" : t == Tamper::kSum ? "sum" : t == Tamper::kEvents ? "events" : "extra row");
}

// Every row of the data file at path, in order.
void ReadRows(Env* env, const std::string& path, std::vector<Row>* rows) {
  std::unique_ptr<SnapshotReader> reader;
  ASSERT_STATUS_OK(SnapshotReader::Open(env, path, &reader));
  ASSERT_STATUS_OK(reader->Scan(nullptr, [&](const Row& row) { rows->push_back(row); }));
}

// A root at `root` (inputs beside it in d) with in1 published and in2
// sealed: window W1's v2 staged at root/staging/W1/v2, not yet published.
void StageSecondVersion(const TempDir& d, const std::string& root) {
  WriteInputs(d);
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", root, d / "in1.ndjson", "--final"}, {"ingest", root, d / "in2.ndjson"}, {"seal", root, "--all"}}) {
    RunResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  }
}

class ReconcileGateTest : public ::testing::TestWithParam<Tamper> {};

TEST_P(ReconcileGateTest, PublishRefusesStagedNumbersThatDifferFromTheLedger) {
  const Tamper tamper = GetParam();
  TempDir d;
  const std::string root = d / "root";
  ASSERT_NO_FATAL_FAILURE(StageSecondVersion(d, root));
  const std::string staged = root + "/staging/" + kW1 + "/v2";
  ASSERT_TRUE(boost::filesystem::exists(staged + "/data")) << staged;

  // Rewrite the staged snapshot: one row changed, checksums all valid.
  Env* env = Env::Default();
  std::vector<Row> rows;
  ASSERT_NO_FATAL_FAILURE(ReadRows(env, staged + "/data", &rows));
  SnapshotManifest m;
  ASSERT_STATUS_OK(SnapshotManifest::Decode(ReadFile(staged + "/manifest.json"), "manifest.json", &m));
  Row& victim = rows.back();  // an "orders" row
  MetricStats victim_stats;  // the victim's metric as the rows (and the ledger) hold it
  for (const Row& row : rows) {
    if (row.metric != victim.metric) continue;
    victim_stats.rows += 1, victim_stats.events += row.events, victim_stats.count += row.count;
    victim_stats.sum_micros += row.sum_micros;
  }
  MetricStats* stat = &victim_stats;
  std::string what, in_files, in_ledger;
  switch (tamper) {
    case Tamper::kCount:
      what = "count", in_ledger = std::to_string(stat->count), in_files = std::to_string(stat->count + 1);
      victim.count += 1, stat->count += 1, m.count += 1;
      break;
    case Tamper::kSum:
      what = "sum", in_ledger = FormatMicros(stat->sum_micros), in_files = FormatMicros(stat->sum_micros + 1000000);
      victim.sum_micros += 1000000, stat->sum_micros += 1000000, m.sum_micros += 1000000;
      break;
    case Tamper::kEvents:
      what = "events", in_ledger = std::to_string(stat->events), in_files = std::to_string(stat->events + 1);
      victim.events += 1, stat->events += 1, m.events += 1;
      break;
    case Tamper::kExtraRow: {
      Row extra = victim;
      extra.key += "~";  // sorts after every other key of the metric
      extra.count = 0, extra.sum_micros = 0, extra.events = 0;  // the totals stay as they are
      what = "rows", in_ledger = std::to_string(m.rows), in_files = std::to_string(m.rows + 1);
      rows.push_back(extra);
      stat->rows += 1, m.rows += 1;
      break;
    }
  }
  SnapshotFileInfo info;
  {
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env, staged + "/data", &w));
    for (const Row& row : rows) ASSERT_STATUS_OK(w->Add(row));
    ASSERT_STATUS_OK(w->Finish(&info));
  }
  ASSERT_EQ(m.files.size(), 1u);
  m.files[0].bytes = info.bytes;
  m.files[0].xxh64 = info.xxh64;
  WriteFile(staged + "/manifest.json", m.Encode());
  const auto staged_files = TreeContents(staged);
  const std::string current = ReadFile(root + "/CURRENT");
  const std::string query = Snapsink({"query", root, "--format", "json"}).out;
  ASSERT_EQ(current.substr(0, 2), "1 ");

  for (int attempt = 0; attempt < 2; ++attempt) {  // refused every time, nothing moves
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    RunResult p = Snapsink({"publish", root});
    EXPECT_EQ(p.exit_code, 4) << p.out << p.err;
    EXPECT_NE(p.err.find(kW1Iso), std::string::npos) << p.err;
    EXPECT_NE(p.err.find(what), std::string::npos) << p.err;
    EXPECT_NE(p.err.find(in_files + " in the staged files"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find(in_ledger + " in the ledger"), std::string::npos) << p.err;
    EXPECT_EQ(TreeContents(staged), staged_files);
    EXPECT_EQ(ReadFile(root + "/CURRENT"), current);
    EXPECT_FALSE(boost::filesystem::exists(root + "/manifests/2"));
    EXPECT_FALSE(boost::filesystem::exists(root + "/snapshots/" + kW1 + "/v2"));
    EXPECT_EQ(Snapsink({"query", root, "--format", "json"}).out, query);
  }
}

// Little-endian fixed64 at p.
uint64_t Fixed64At(const std::string& s, size_t p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s[p + i])) << (8 * i);
  return v;
}

// The per-metric stats live in the data file's stats section (docs/FORMAT.md
// 1), which only reconciliation (publish) and verify read. Staged stats that
// disagree with the rows, with every checksum valid, make publish exit 4;
// a flipped byte in a published stats section makes verify exit 10, while
// query, which never reads the section, prints what it printed before.
TEST(StatsSectionTest, StagedStatsThatDisagreeWithTheRowsAreRefusedAndDamagedPublishedStatsAreFound) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_NO_FATAL_FAILURE(StageSecondVersion(d, root));
  const std::string staged = root + "/staging/" + kW1 + "/v2";
  const std::string original_data = ReadFile(staged + "/data");
  const std::string original_manifest = ReadFile(staged + "/manifest.json");

  // Same rows, stats of "orders" off by one count, all checksums valid.
  Env* env = Env::Default();
  std::vector<Row> rows;
  ASSERT_NO_FATAL_FAILURE(ReadRows(env, staged + "/data", &rows));
  SnapshotFileInfo info;
  {
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env, staged + "/data", &w));
    for (const Row& row : rows) ASSERT_STATUS_OK(w->Add(row));
    std::vector<MetricStats> stats = w->stats();
    ASSERT_EQ(stats.back().metric, "orders");
    stats.back().count += 1;
    w->OverrideStatsForTesting(stats);
    ASSERT_STATUS_OK(w->Finish(&info));
  }
  SnapshotManifest m;
  ASSERT_STATUS_OK(SnapshotManifest::Decode(original_manifest, "manifest.json", &m));
  m.files[0].bytes = info.bytes;
  m.files[0].xxh64 = info.xxh64;
  WriteFile(staged + "/manifest.json", m.Encode());
  RunResult p = Snapsink({"publish", root});
  EXPECT_EQ(p.exit_code, 4) << p.out << p.err;
  EXPECT_NE(p.err.find("metric orders: the stats section says"), std::string::npos) << p.err;
  EXPECT_FALSE(boost::filesystem::exists(root + "/snapshots/" + kW1 + "/v2"));

  // The good files back: publish, then damage the published stats section.
  WriteFile(staged + "/data", original_data);
  WriteFile(staged + "/manifest.json", original_manifest);
  p = Snapsink({"publish", root});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string query = Snapsink({"query", root, "--format", "json"}).out;
  const std::string data = root + "/snapshots/" + kW1 + "/v2/data";
  const std::string bytes = ReadFile(data);
  const uint64_t index_offset = Fixed64At(bytes, bytes.size() - 64 + 16);
  const uint64_t stats_offset = Fixed64At(bytes, index_offset + 24), stats_size = Fixed64At(bytes, index_offset + 32);
  ASSERT_GT(stats_size, 8u);
  ASSERT_LE(stats_offset + stats_size, index_offset);
  for (uint64_t at : {stats_offset, stats_offset + 8, stats_offset + stats_size - 1}) {
    SCOPED_TRACE("stats byte " + std::to_string(at - stats_offset));
    FlipByte(data, at);
    RunResult v = Snapsink({"verify", root});
    EXPECT_EQ(v.exit_code, 10) << v.out << v.err;
    EXPECT_NE(v.out.find(std::string("snapshots/") + kW1 + "/v2/data"), std::string::npos) << v.out;
    RunResult q = Snapsink({"query", root, "--format", "json"});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(q.out, query);
    WriteFile(data, bytes);
  }
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Corruption, ReconcileGateTest,
                         ::testing::Values(Tamper::kCount, Tamper::kSum, Tamper::kEvents, Tamper::kExtraRow),
                         [](const ::testing::TestParamInfo<Tamper>& info) {
                           switch (info.param) {
                             case Tamper::kCount: return std::string("Count");
                             case Tamper::kSum: return std::string("Sum");
                             case Tamper::kEvents: return std::string("Events");
                             case Tamper::kExtraRow: return std::string("ExtraRow");
                           }
                           return std::string();
                         });

}  // namespace
}  // namespace snapsink::testing
