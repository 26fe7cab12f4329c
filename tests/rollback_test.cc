// Rollback as a new generation and a rewind, and generation numbers that are
// never reused (docs/CONTRACT.md 10; publish/rollback.h, publish/publisher.h), mostly
// through the binary.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "engine/env.h"
#include "engine/root.h"
#include "publish/rollback.h"
#include "tests/fault_env.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


std::string Event(const std::string& producer, uint64_t seq, int64_t ts, const std::string& value,
                  const std::string& key = "eu") {
  return EventLine().Producer(producer).Seq(seq).Ts(ts).Metric("orders").Key(key).Value(value).Line();
}

std::string Query(const std::string& root) {
  RunResult r = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// The query line of the one row (orders, eu) of `window` ("10:00"), as
// `query --format json` prints it.
std::string EuRow(const std::string& window, int count, const std::string& sum, uint64_t version, uint64_t generation) {
  return "\"window\":\"2026-10-21T" + window + ":00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":" +
         std::to_string(count) + ",\"sum\":" + sum + ",\"version\":" + std::to_string(version) +
         ",\"generation\":" + std::to_string(generation) + "}";
}

void ExpectVerifies(const std::string& root) {
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

std::string CurrentGeneration(const std::string& root) {
  const std::string c = ReadFile(root + "/CURRENT");
  return c.substr(0, c.find(' '));
}

// Every file of the root, LMDB's data file included, for "changes nothing".
std::map<std::string, std::string> WholeRoot(const std::string& root) {
  auto t = TreeContents(root);
  t["state/data.mdb"] = ReadFile(root + "/state/data.mdb");
  return t;
}

void RunFinal(const std::string& root, const std::string& file, const std::string& text, const std::string& expect_out) {
  WriteFile(file, text);
  RunResult r = Snapsink({"run", root, file, "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(expect_out), std::string::npos) << r.out;
}

// Generation 1: 10:00 (1 event, 1.5). Generation 2: 11:00 (1 event, 10).
struct TwoGenerations {
  TempDir dir;
  std::string root = dir / "root";
  TwoGenerations() {
    EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
    RunFinal(root, dir / "a.ndjson", Event("p", 0, kBase + 1000, "1.5"), "published generation 1");
    RunFinal(root, dir / "b.ndjson", Event("p", 1, kBase + kHour + 1000, "10"), "published generation 2");
  }
};

// Regression: publish 10:00 (gen 1), 11:00 (gen 2), rollback to 1,
// a new event for 12:00 and `run --final` published 10:00+12:00 only while
// 11:00 stayed counted in state ("nothing to seal"), and gc deleted its
// snapshot. Now the rollback is generation 3 = generation 1, 11:00 leaves the
// live view (and is reported so) and is empty in state; the next publish
// builds on 3; a later event for 11:00 seals as v2 holding only itself.
TEST(Rollback, RollbackThenPublishKeepsRolledBackWindows) {
  TwoGenerations f;
  const std::string gen1 = Query(f.root);
  RunResult r = Snapsink({"rollback", f.root, "--generation", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("window 2026-10-21T11:00:00Z: v1 -> unpublished; events 1 -> 0, count 1 -> 0, sum 10 -> 0 "
                       "(leaves the live view)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("10:00:00Z"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("published generation 3: a copy of generation 1"), std::string::npos) << r.out;
  EXPECT_EQ(CurrentGeneration(f.root), "3");
  RunResult q1 = Snapsink({"query", f.root, "--generation", "1", "--format", "json"});
  std::string want = q1.out;
  want.replace(want.find("\"generation\":1}"), 15, "\"generation\":3}");
  EXPECT_EQ(Query(f.root), want);

  RunFinal(f.root, f.dir / "c.ndjson", Event("p", 2, kBase + 2 * kHour, "5"), "published generation 4");
  const std::string q = Query(f.root);
  EXPECT_NE(q.find(EuRow("10:00", 1, "1.5", 1, 4)), std::string::npos) << q;
  EXPECT_NE(q.find("2026-10-21T12:00:00Z"), std::string::npos) << q;
  EXPECT_EQ(q.find("2026-10-21T11:00:00Z"), std::string::npos) << q;
  ExpectVerifies(f.root);

  // A late event for 11:00: on top of nothing, as v2 (v1 is never reused).
  RunFinal(f.root, f.dir / "d.ndjson", Event("p", 3, kBase + kHour + 5, "7"), "published generation 5");
  EXPECT_NE(Query(f.root).find(EuRow("11:00", 1, "7", 2, 5)), std::string::npos);
  ASSERT_EQ(Snapsink({"gc", f.root, "--keep-generations", "1"}).exit_code, 0);
  ExpectVerifies(f.root);
}

// --dry-run prints the same report and changes no byte of the root.
TEST(Rollback, RollbackDryRunChangesNothing) {
  TwoGenerations f;
  // Pending work too: an unsealed event and a staged seal.
  WriteFile(f.dir / "c.ndjson", Event("p", 2, kBase + 2 * kHour, "5") + Event("p", 3, kBase + 3 * kHour, "6"));
  ASSERT_EQ(Snapsink({"ingest", f.root, f.dir / "c.ndjson"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"seal", f.root, "--window", "2026-10-21T12:00:00Z"}).exit_code, 0);
  const auto before = WholeRoot(f.root);
  RunResult dry = Snapsink({"rollback", f.root, "--generation", "1", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("dry run: nothing changed"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("window 2026-10-21T12:00:00Z: unpublished -> unpublished; events 1 -> 0"), std::string::npos)
      << dry.out;
  EXPECT_EQ(TreeDiff(WholeRoot(f.root), before), "");
  RunResult real = Snapsink({"rollback", f.root, "--generation", "1"});
  ASSERT_EQ(real.exit_code, 0) << real.err;
  EXPECT_EQ(real.out.substr(0, real.out.find("published generation")), dry.out.substr(0, dry.out.find("dry run")));
  EXPECT_NE(TreeDiff(WholeRoot(f.root), before), "");
  EXPECT_EQ(Snapsink({"verify", f.root}).exit_code, 0);
}

// A root with 10:00 and 11:00 at v1 (live value 1 each), then backfill v5 of
// 10:00 and 11:00 from an archive with value 2.
struct Backfilled {
  TempDir dir;
  std::string root = dir / "root";
  std::string gen1;
  Backfilled() {
    EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
    RunFinal(root, dir / "live.ndjson", Event("p", 0, kBase + 1, "1") + Event("p", 1, kBase + kHour + 1, "1"),
        "published generation 1");
    gen1 = Query(root);
    WriteFile(dir / "archive.ndjson", Event("p", 0, kBase + 1, "2") + Event("p", 1, kBase + kHour + 1, "2"));
    RunResult r = Snapsink({"backfill", root, "--version", "5", dir / "archive.ndjson"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("published generation 2"), std::string::npos) << r.out;
  }
};

// Regression: after rolling back past a backfill, a window touched
// later was built on the backfilled numbers while untouched ones showed the
// pre-backfill ones. Now every window returns to its generation-1 numbers,
// and a later live event lands on those, as v6 (above the backfill's v5).
TEST(Rollback, RollbackPastBackfillRestoresPreBackfillNumbers) {
  Backfilled f;
  RunResult r = Snapsink({"rollback", f.root, "--generation", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("window 2026-10-21T10:00:00Z: v5 -> v1; events 1 -> 1, count 1 -> 1, sum 2 -> 1"),
            std::string::npos)
      << r.out;
  std::string want = f.gen1;
  for (size_t at; (at = want.find("\"generation\":1}")) != std::string::npos;) want.replace(at, 15, "\"generation\":3}");
  EXPECT_EQ(Query(f.root), want);
  RunFinal(f.root, f.dir / "late.ndjson", Event("q", 0, kBase + 2, "10"), "published generation 4");
  const std::string q = Query(f.root);
  EXPECT_NE(q.find(EuRow("10:00", 2, "11", 6, 4)), std::string::npos) << q;
  EXPECT_NE(q.find(EuRow("11:00", 1, "1", 1, 4)), std::string::npos) << q;
  ExpectVerifies(f.root);
}

// A backfill after a rollback: the version rule still counts the versions
// used before the rollback, and the backfill then publishes on top of it.
TEST(Rollback, RollbackThenBackfill) {
  Backfilled f;
  ASSERT_EQ(Snapsink({"rollback", f.root, "--generation", "1"}).exit_code, 0);
  RunResult r = Snapsink({"backfill", f.root, "--version", "5", f.dir / "archive.ndjson"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // v5 was used up by the published backfill
  EXPECT_NE(r.out.find("already published"), std::string::npos) << r.out;
  WriteFile(f.dir / "archive2.ndjson", Event("p", 0, kBase + 1, "3"));
  r = Snapsink({"backfill", f.root, "--version", "3", f.dir / "archive2.ndjson"});
  EXPECT_EQ(r.exit_code, 1) << r.out;  // 10:00 has had v5: versions are never reused
  EXPECT_NE(r.err.find("already at v5"), std::string::npos) << r.err;
  r = Snapsink({"backfill", f.root, "--version", "7", f.dir / "archive2.ndjson"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("published generation 4"), std::string::npos) << r.out;
  const std::string q = Query(f.root);
  EXPECT_NE(q.find(EuRow("10:00", 1, "3", 7, 4)), std::string::npos) << q;
  EXPECT_NE(q.find(EuRow("11:00", 1, "1", 1, 4)), std::string::npos) << q;
  ExpectVerifies(f.root);
}

// Every rollback crash point: crash, rerun, and the root equals a clean
// rollback's byte for byte, engine state included. Before the commit,
// readers still see generation 2.
TEST(Rollback, EveryRollbackCrashPointThenRerunEqualsCleanRun) {
  TwoGenerations clean;
  ASSERT_EQ(Snapsink({"rollback", clean.root, "--generation", "1"}).exit_code, 0);
  const auto want_tree = TreeContents(clean.root);
  const std::string want = StateDump(clean.root);
  for (const char* point : {"rollback.before_current", "rollback.after_commit", "rollback.after_current"}) {
    SCOPED_TRACE(point);
    TwoGenerations f;
    const std::string before = Query(f.root);
    RunResult crashed = Snapsink({"rollback", f.root, "--generation", "1"}, {{"SNAPSINK_CRASH_AT", point}});
    ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
    if (std::string(point) != "rollback.after_current") {
      EXPECT_EQ(Query(f.root), before);
    }
    RunResult rerun = Snapsink({"rollback", f.root, "--generation", "1"});
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    EXPECT_EQ(TreeDiff(TreeContents(f.root), want_tree), "");
    EXPECT_EQ(StateDump(f.root), want);
    ExpectVerifies(f.root);
  }
}

// Regression: a rollback on a full disk exited 1 after changing
// state; verify then exited 10 and the next run built on the "failed"
// rollback. Every file operation of a rollback fails in turn (an IOError from
// the fault Env, as ENOSPC writing CURRENT.tmp would): before the commit the
// root reads as it did and state is unchanged; after it, the rollback is
// done. Either way a rerun leaves the root as a clean rollback does.
TEST(Rollback, FailedRollbackChangesNothing) {
  TwoGenerations base;
  // Copies of base's root share its sources' paths, so their StateDumps compare.
  auto copy = [&](const std::string& root) {
    boost::filesystem::create_directory(root);
    for (const char* sub : {"state", "snapshots", "manifests", "staging", "rejects"}) {
      if (boost::filesystem::exists(base.root + "/" + sub)) {
        boost::filesystem::copy(base.root + "/" + sub, root + "/" + sub, boost::filesystem::copy_options::recursive);
      }
    }
    boost::filesystem::copy_file(base.root + "/CURRENT", root + "/CURRENT");
  };
  TempDir clean_dir;
  const std::string clean = clean_dir / "root";
  copy(clean);
  const std::string before_state = StateDump(clean);
  const std::string before_query = Query(clean);
  ASSERT_EQ(Snapsink({"rollback", clean, "--generation", "1"}).exit_code, 0);
  const auto want_tree = TreeContents(clean);
  const std::string want_state = StateDump(clean);
  bool finished = false;
  int before_commit = 0, after_commit = 0;
  for (uint64_t k = 1; k < 100 && !finished; ++k) {
    SCOPED_TRACE("fail at op " + std::to_string(k));
    TempDir d;
    const std::string root = d / "root";
    copy(root);
    Status s;
    {
      std::unique_ptr<Root> r;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kWriter, &r));
      FaultInjectionEnv env;
      env.FailAtOp(k);
      RollbackResult result;
      s = Rollback(&env, root, r->store(), 1, /*dry_run=*/false, &result);
      finished = !env.failed();
      if (finished) {
        ASSERT_STATUS_OK(s);
      }
    }
    if (!s.ok()) {
      // Before the commit nothing changed that a reader or a later command
      // sees; after it the rollback is done (CURRENT installed by the next writer).
      const std::string state = StateDump(root);
      if (state == before_state) {
        ++before_commit;
        EXPECT_EQ(Query(root), before_query);
        EXPECT_EQ(ReadFile(root + "/CURRENT"), ReadFile(base.root + "/CURRENT"));
      } else {
        // Only the rename of CURRENT.tmp failed: readers see generation 2
        // until the next writer installs 3.
        ++after_commit;
        auto engine = [](const std::string& dump) { return dump.substr(0, dump.find("## query")); };
        EXPECT_EQ(engine(state), engine(want_state));
      }
      ExpectVerifies(root);
    }
    RunResult rerun = Snapsink({"rollback", root, "--generation", "1"});
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    EXPECT_EQ(TreeDiff(TreeContents(root), want_tree), "");
    EXPECT_EQ(StateDump(root), want_state);
  }
  EXPECT_TRUE(finished);
  EXPECT_GT(before_commit, 5);
  EXPECT_GT(after_commit, 0);
}

// Regression: `SNAPSINK_CRASH_AT=publish.after_current publish`,
// then a run with new input printed "published generation 1" again and
// rewrote manifests/1 with other windows. A generation's manifest is never
// rewritten: after a crash after the commit the next publish is 2; after a
// crash before it, manifests/1 keeps its bytes, the next publish with other
// content takes 2, and 1 can never be rolled back to.
TEST(Generations, GenerationNumberNeverReusedAfterCrashAfterCurrent) {
  for (const char* point : {"publish.after_current", "publish.after_commit", "publish.before_current"}) {
    SCOPED_TRACE(point);
    TempDir d;
    const std::string root = d / "root";
    ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
    WriteFile(d / "a.ndjson", Event("p", 0, kBase + 1, "1"));
    ASSERT_EQ(Snapsink({"ingest", root, d / "a.ndjson"}).exit_code, 0);
    ASSERT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
    ASSERT_EQ(Snapsink({"publish", root}, {{"SNAPSINK_CRASH_AT", point}}).exit_code, 99);
    const std::string m1 = ReadFile(root + "/manifests/1");
    WriteFile(d / "b.ndjson", Event("p", 1, kBase + kHour + 1, "2"));
    RunResult r = Snapsink({"run", root, d / "b.ndjson", "--final"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("published generation 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("published generation 2"), std::string::npos) << r.out;
    EXPECT_EQ(ReadFile(root + "/manifests/1"), m1);
    EXPECT_EQ(CurrentGeneration(root), "2");
    const std::string q = Query(root);
    EXPECT_NE(q.find("2026-10-21T10:00:00Z"), std::string::npos) << q;
    EXPECT_NE(q.find("2026-10-21T11:00:00Z"), std::string::npos) << q;
    ExpectVerifies(root);
    RunResult rb = Snapsink({"rollback", root, "--generation", "1"});
    if (std::string(point) == "publish.before_current") {
      EXPECT_NE(rb.exit_code, 0) << rb.out;  // 1 was never published
      EXPECT_NE(rb.err.find("never published"), std::string::npos) << rb.err;
    } else {
      EXPECT_EQ(rb.exit_code, 0) << rb.err;
      EXPECT_NE(rb.out.find("published generation 3"), std::string::npos) << rb.out;
    }
    EXPECT_EQ(ReadFile(root + "/manifests/1"), m1);
  }
}

// Regression: `backfill --version 4294967295` made the next live
// seal of its window v0 (a 32-bit version wrapped), a stuck window. Versions
// are 64-bit: the next live seal is v4294967296.
TEST(Generations, BackfillVersionAboveU32) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunFinal(root, d / "live.ndjson", Event("p", 0, kBase + 1, "1"), "published generation 1");
  WriteFile(d / "archive.ndjson", Event("p", 0, kBase + 1, "2"));
  RunResult r = Snapsink({"backfill", root, "--version", "4294967295", d / "archive.ndjson"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("at v4294967295"), std::string::npos) << r.out;
  RunFinal(root, d / "late.ndjson", Event("q", 0, kBase + 2, "3"), "sealed 2026-10-21T10:00:00Z v4294967296");
  EXPECT_NE(Query(root).find("\"count\":2,\"sum\":5,\"version\":4294967296,\"generation\":3}"), std::string::npos);
  ExpectVerifies(root);
  EXPECT_TRUE(boost::filesystem::exists(root + "/snapshots/20261021T100000Z/v4294967296"));
}

// The CLI refuses versions and generations it cannot represent, with one
// line naming the option, and changes nothing.
TEST(Generations, CliRefusesVersionsAndGenerationsItCannotRepresent) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  WriteFile(d / "a.ndjson", Event("p", 0, kBase + 1, "1"));
  for (const char* bad : {"18446744073709551616", "-1", "0", "1e3", "", "99999999999999999999999"}) {
    SCOPED_TRACE(bad);
    RunResult r = Snapsink({"backfill", root, "--version", bad, d / "a.ndjson"});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("--version"), std::string::npos) << r.err;
    r = Snapsink({"rollback", root, "--generation", bad});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("--generation"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(boost::filesystem::exists(root + "/manifests/1"));
  RunResult r = Snapsink({"backfill", root, "--version", "18446744073709551615", d / "a.ndjson"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace snapsink::testing
