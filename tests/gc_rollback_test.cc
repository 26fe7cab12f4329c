// gc and rollback (docs/CONTRACT.md 6; publish/maintenance.h).
//
// Four publishes make generations 1..4:
//   1: 10:00 v1, 11:00 v1
//   2: 10:00 v2, 11:00 v1          (a late event for 10:00)
//   3: 10:00 v2, 11:00 v2          (a late event for 11:00)
//   4: 10:00 v2, 11:00 v2, 12:00 v1
// `gc --keep-generations 2` then keeps 3 and 4 and removes 10:00 v1 and
// 11:00 v1, which only 1 and 2 use. A Reader holding generation 1 open, in
// this process or another, keeps it and its snapshots until it closes.
// `rollback --generation 2` publishes generation 5, a copy of 2, and the next
// publish (6) builds on 5 (docs/CONTRACT.md 10).
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "engine/decimal.h"
#include "engine/env.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/maintenance.h"
#include "publish/generation_reader.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


int64_t BaseMs() {
  int64_t ms = 0;
  ParseRfc3339Ms("2026-10-21T10:00:00Z", &ms);
  return ms;
}

std::string Event(uint64_t seq, int64_t ts_ms, const std::string& key, const std::string& value) {
  return EventLine().Seq(seq).Ts(ts_ms).Metric("orders").Key(key).Value(value).Line();
}

bool Exists(const std::string& path) { return boost::filesystem::exists(path); }

std::vector<std::string> Manifests(const std::string& root) {
  std::vector<std::string> out;
  for (boost::filesystem::directory_iterator it(root + "/manifests"), end; it != end; ++it) {
    if (!boost::filesystem::is_regular_file(it->path())) continue;  // parts/
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class GcRollbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    ASSERT_EQ(Snapsink({"init", root_}).exit_code, 0);
    const int64_t base = BaseMs();
    const std::vector<std::string> inputs = {
        Event(0, base + 1000, "eu", "1.5") + Event(1, base + 2000, "us", "2") + Event(2, base + kHour, "eu", "10"),
        Event(3, base + 3000, "eu", "0.25"),
        Event(4, base + kHour + 5, "apac", "7"),
        Event(5, base + 2 * kHour, "eu", "100"),
    };
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string in = dir_ / ("in" + std::to_string(i + 1) + ".ndjson");
      WriteFile(in, inputs[i]);
      RunResult r = Snapsink({"run", root_, in, "--final"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_NE(r.out.find("published generation " + std::to_string(i + 1)), std::string::npos) << r.out;
    }
    for (int g = 1; g <= 4; ++g) {
      RunResult q = Snapsink({"query", root_, "--generation", std::to_string(g), "--format", "json"});
      ASSERT_EQ(q.exit_code, 0) << q.err;
      query_[g] = q.out;
    }
    ASSERT_EQ(Manifests(root_), (std::vector<std::string>{"1", "2", "3", "4"}));
  }

  std::string Snap(const char* window, int version) const {
    return root_ + "/snapshots/" + window + "/v" + std::to_string(version);
  }

  // The generation number CURRENT names ("<G> <xxh64>\n").
  std::string CurrentGeneration() const {
    const std::string c = ReadFile(root_ + "/CURRENT");
    return c.substr(0, c.find(' '));
  }

  std::string Query() const {
    RunResult q = Snapsink({"query", root_, "--format", "json"});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    return q.out;
  }

  // Every row of generation g as `query --format json` prints it, read through reader.
  static std::string ReadAll(Reader* reader) {
    std::string out;
    for (const GenerationEntry& e : reader->windows()) {
      Status s = reader->Scan(e.window_ms, nullptr, [&](const Row& r) {
        out += "{\"window\":\"" + FormatIso(e.window_ms) + "\",\"metric\":\"" + r.metric + "\",\"key\":\"" + r.key +
               "\",\"count\":" + std::to_string(r.count) + ",\"sum\":" + FormatMicros(r.sum_micros) +
               ",\"version\":" + std::to_string(e.version) + ",\"generation\":" + std::to_string(reader->generation()) +
               "}\n";
      });
      EXPECT_STATUS_OK(s);
    }
    return out;
  }

  TempDir dir_;
  std::string root_;
  std::map<int, std::string> query_;
};

TEST_F(GcRollbackTest, GcKeepsNewestGenerationsAndWhatTheyUse) {
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "2"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed generation 1"), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("removed generation 2"), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("removed snapshot 2026-10-21T10:00:00Z v1"), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find("removed snapshot 2026-10-21T11:00:00Z v1"), std::string::npos) << gc.out;
  EXPECT_EQ(Manifests(root_), (std::vector<std::string>{"3", "4"}));
  EXPECT_FALSE(Exists(Snap("20261021T100000Z", 1)));
  EXPECT_FALSE(Exists(Snap("20261021T110000Z", 1)));
  EXPECT_TRUE(Exists(Snap("20261021T100000Z", 2)));
  EXPECT_TRUE(Exists(Snap("20261021T110000Z", 2)));
  EXPECT_TRUE(Exists(Snap("20261021T120000Z", 1)));
  EXPECT_EQ(CurrentGeneration(), "4");

  EXPECT_EQ(Query(), query_[4]);
  RunResult q3 = Snapsink({"query", root_, "--generation", "3", "--format", "json"});
  EXPECT_EQ(q3.exit_code, 0) << q3.err;
  EXPECT_EQ(q3.out, query_[3]);
  RunResult q1 = Snapsink({"query", root_, "--generation", "1", "--format", "json"});
  EXPECT_NE(q1.exit_code, 0) << q1.out;
  EXPECT_EQ(q1.out, "");
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  // Again: nothing left to remove.
  gc = Snapsink({"gc", root_, "--keep-generations", "2"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.out.find("removed"), std::string::npos) << gc.out;
}

// A rollback's generation names the snapshots of the generation it copied:
// gc keeps them even once that generation itself is collected.
TEST_F(GcRollbackTest, GcKeepsTheSnapshotsARollbackGenerationNames) {
  RunResult r = Snapsink({"rollback", root_, "--generation", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(CurrentGeneration(), "5");
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(Manifests(root_), (std::vector<std::string>{"5"}));
  EXPECT_TRUE(Exists(Snap("20261021T100000Z", 1)));
  EXPECT_TRUE(Exists(Snap("20261021T110000Z", 1)));
  EXPECT_FALSE(Exists(Snap("20261021T100000Z", 2)));
  EXPECT_FALSE(Exists(Snap("20261021T120000Z", 1)));
  std::string want = query_[1];
  for (size_t at; (at = want.find("\"generation\":1}")) != std::string::npos;) want.replace(at, 15, "\"generation\":5}");
  EXPECT_EQ(Query(), want);
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

TEST_F(GcRollbackTest, PinnedReaderKeepsItsGenerationUntilClosed) {
  std::unique_ptr<Reader> reader;
  ASSERT_STATUS_OK(Reader::Open(Env::Default(), root_, 1, &reader));
  ASSERT_EQ(reader->generation(), 1u);

  // In this process: the OFD locks of the reader and of gc conflict here too.
  {
    std::unique_ptr<Root> root;
    ASSERT_STATUS_OK(Root::Open(Env::Default(), root_, Root::Access::kWriter, &root));
    GcResult result;
    Status s = CollectGarbage(Env::Default(), root_, root->store(), 2, &result);
    ASSERT_STATUS_OK(s);
    EXPECT_EQ(result.pinned, std::vector<uint64_t>{1});
    EXPECT_EQ(result.removed_generations, std::vector<uint64_t>{2});
    EXPECT_TRUE(result.removed_snapshots.empty()) << ::testing::PrintToString(result.removed_snapshots);
  }
  EXPECT_EQ(Manifests(root_), (std::vector<std::string>{"1", "3", "4"}));
  EXPECT_TRUE(Exists(Snap("20261021T100000Z", 1)));
  EXPECT_TRUE(Exists(Snap("20261021T110000Z", 1)));

  // From another process.
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "2"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("kept generation 1: pinned by a reader"), std::string::npos) << gc.out;
  EXPECT_EQ(Manifests(root_), (std::vector<std::string>{"1", "3", "4"}));
  EXPECT_TRUE(Exists(Snap("20261021T100000Z", 1)));
  EXPECT_TRUE(Exists(Snap("20261021T110000Z", 1)));

  // The pinned reader still reads all of generation 1, as it was.
  EXPECT_EQ(ReadAll(reader.get()), query_[1]);
  RunResult q1 = Snapsink({"query", root_, "--generation", "1", "--format", "json"});
  EXPECT_EQ(q1.exit_code, 0) << q1.err;
  EXPECT_EQ(q1.out, query_[1]);

  reader.reset();
  gc = Snapsink({"gc", root_, "--keep-generations", "2"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed generation 1"), std::string::npos) << gc.out;
  EXPECT_EQ(Manifests(root_), (std::vector<std::string>{"3", "4"}));
  EXPECT_FALSE(Exists(Snap("20261021T100000Z", 1)));
  EXPECT_FALSE(Exists(Snap("20261021T110000Z", 1)));
  EXPECT_EQ(Query(), query_[4]);
}

TEST_F(GcRollbackTest, RollbackThenPublishBuildsOnTheRolledBackGeneration) {
  RunResult r = Snapsink({"rollback", root_, "--generation", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("published generation 5: a copy of generation 2"), std::string::npos) << r.out;
  EXPECT_EQ(CurrentGeneration(), "5");
  auto renumber = [](std::string q, const std::string& from, const std::string& to) {
    const std::string f = "\"generation\":" + from + "}", t = "\"generation\":" + to + "}";
    for (size_t at; (at = q.find(f)) != std::string::npos;) q.replace(at, f.size(), t);
    return q;
  };
  EXPECT_EQ(Query(), renumber(query_[2], "2", "5"));
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);

  // A new window: generation 6 = generation 5 (= 2) + 13:00 v1.
  const std::string in = dir_ / "in5.ndjson";
  WriteFile(in, Event(6, BaseMs() + 3 * kHour, "eu", "4.75") + Event(7, BaseMs() + 3 * kHour + 1, "eu", "1"));
  r = Snapsink({"run", root_, in, "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("published generation 6"), std::string::npos) << r.out;
  EXPECT_EQ(CurrentGeneration(), "6");

  std::string want = renumber(query_[2], "2", "6");
  want += "{\"window\":\"2026-10-21T13:00:00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":2,\"sum\":5.75,"
          "\"version\":1,\"generation\":6}\n";
  EXPECT_EQ(Query(), want);

  RunResult gens = Snapsink({"inspect", root_, "generations", "--json"});
  ASSERT_EQ(gens.exit_code, 0) << gens.err;
  EXPECT_NE(gens.out.find("{\"generation\":5,\"parent\":4,\"windows\":2,\"rollback_of\":2,\"current\":false}"),
            std::string::npos)
      << gens.out;
  EXPECT_NE(gens.out.find("{\"generation\":6,\"parent\":5,\"windows\":3,\"rollback_of\":0,\"current\":true}"),
            std::string::npos)
      << gens.out;
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
}

TEST_F(GcRollbackTest, RollbackToACollectedGenerationFails) {
  ASSERT_EQ(Snapsink({"gc", root_, "--keep-generations", "2"}).exit_code, 0);
  RunResult r = Snapsink({"rollback", root_, "--generation", "1"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(CurrentGeneration(), "4");
  EXPECT_EQ(Query(), query_[4]);
}

// Regression: a publish that crashed before its switch leaves
// manifests/<last + 1>, never published. Rolling back to it used to succeed;
// the rerun of the publish then wrote that generation again with itself as
// parent, CURRENT named a manifest that fails its own checks, and every
// reader got Corruption. Rollback now refuses a generation beyond the last
// published one.
TEST_F(GcRollbackTest, RollbackToAnUnpublishedGenerationIsRefused) {
  const std::string in = dir_ / "in5.ndjson";
  WriteFile(in, Event(6, BaseMs() + 3 * kHour, "eu", "1"));
  RunResult r = Snapsink({"run", root_, in, "--final"}, {{"SNAPSINK_CRASH_AT", "publish.before_current"}});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  ASSERT_TRUE(Exists(root_ + "/manifests/5"));
  r = Snapsink({"rollback", root_, "--generation", "5"});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("never published"), std::string::npos) << r.err;
  EXPECT_EQ(CurrentGeneration(), "4");
  r = Snapsink({"rollback", root_, "--generation", "0"});
  EXPECT_NE(r.exit_code, 0) << r.out;

  r = Snapsink({"run", root_, in, "--final"});  // the rerun finishes generation 5
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CurrentGeneration(), "5");
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  r = Snapsink({"rollback", root_, "--generation", "5"});  // 5 is current: nothing to do
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nothing to do"), std::string::npos) << r.out;
}

// gc between a crashed publish and its rerun keeps the snapshots that
// already left staging (no generation names them yet, a staged seal does).
TEST_F(GcRollbackTest, GcBetweenCrashedPublishAndRerunKeepsMovedSnapshots) {
  const std::string in = dir_ / "in5.ndjson";
  WriteFile(in, Event(6, BaseMs() + 3 * kHour, "eu", "1") + Event(7, BaseMs() + 5, "us", "3"));
  RunResult r = Snapsink({"run", root_, in, "--final"}, {{"SNAPSINK_CRASH_AT", "publish.after_rename"},
                                                         {"SNAPSINK_CRASH_HIT", "2"}});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  ASSERT_TRUE(Exists(Snap("20261021T100000Z", 3)));  // moved, in no generation yet
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_TRUE(Exists(Snap("20261021T100000Z", 3)));
  EXPECT_TRUE(Exists(Snap("20261021T130000Z", 1)));
  r = Snapsink({"run", root_, in, "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("published generation 5"), std::string::npos) << r.out;
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const std::string q = Query();
  EXPECT_NE(q.find("\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"us\",\"count\":2,\"sum\":5,"
                   "\"version\":3,\"generation\":5}"),
            std::string::npos)
      << q;
  EXPECT_NE(q.find("\"window\":\"2026-10-21T13:00:00Z\""), std::string::npos) << q;
}

}  // namespace
}  // namespace snapsink::testing

namespace snapsink::testing {
namespace {

TEST_F(GcRollbackTest, UnpublishedManifestOfACrashedPublishIsKeptAndNotCounted) {
  const std::string in = dir_ / "in5.ndjson";
  WriteFile(in, Event(6, BaseMs() + 3 * kHour, "eu", "1"));
  RunResult crashed = Snapsink({"run", root_, in, "--final"}, {{"SNAPSINK_CRASH_AT", "publish.before_current"}});
  ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
  ASSERT_EQ(Manifests(root_), (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "2"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  // 3 and 4 are the two newest published generations; 5 was never published.
  EXPECT_EQ(Manifests(root_), (std::vector<std::string>{"3", "4", "5"}));
  ASSERT_EQ(Snapsink({"publish", root_}).exit_code, 0);
  RunResult q = Snapsink({"query", root_, "--generation", "5", "--format", "json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
}

}  // namespace
}  // namespace snapsink::testing
