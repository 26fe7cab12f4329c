// `backfill -` (docs/CONTRACT.md 9): standard input is spooled into the
// backfill's own state first, then read like a file; a crash at any point
// followed by a rerun with the same pipe equals a clean run; a version is
// used up only by a backfill that published.
//
// Regression (BackfillFromStdinPublishes): backfill read standard input to
// its end in the version-check pass, then ingested nothing, published
// nothing, exited 0 and recorded the version as done.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


std::string Events(const std::string& producer, int hours, int per_hour, const std::string& value) {
  std::string out;
  uint64_t seq = 0;
  for (int h = 0; h < hours; ++h) {
    for (int i = 0; i < per_hour; ++i) {
      const int64_t ts = kBase + h * kHour + i * 1000;
      out += EventLine()
                 .Producer(producer)
                 .Seq(seq++)
                 .Ts(ts)
                 .Metric("orders")
                 .Key("k" + std::to_string(i % 7))
                 .Value(value)
                 .Line();
    }
  }
  return out;
}

std::string Query(const std::string& root) {
  RunResult r = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// A root with 4 hourly windows published as v1, and an archive correcting them.
struct Fixture {
  TempDir dir;
  std::string root = dir / "root";
  std::string archive = dir / "archive.ndjson";
  std::string data = Events("p", 4, 30, "2");
  Fixture() {
    WriteFile(dir / "live.ndjson", Events("p", 4, 30, "1"));
    WriteFile(archive, data);
    EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
    RunResult r = Snapsink({"run", root, dir / "live.ndjson", "--final"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
};

TEST(BackfillStdin, BackfillFromStdinPublishes) {
  Fixture by_file, by_pipe;
  RunResult f = Snapsink({"backfill", by_file.root, "--version", "2", by_file.archive, "--source", "-"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  RunResult p = Snapsink({"backfill", by_pipe.root, "--version", "2", "-"}, {}, by_pipe.data);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("published generation 2: 4 window(s) at v2"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("lines 120, applied 120"), std::string::npos) << p.err;
  EXPECT_NE(Query(by_pipe.root).find("\"version\":2"), std::string::npos);
  EXPECT_EQ(Query(by_pipe.root), Query(by_file.root));
  EXPECT_EQ(TreeDiff(TreeContents(by_pipe.root), TreeContents(by_file.root)), "");
  EXPECT_EQ(StateDump(by_pipe.root), StateDump(by_file.root));
  EXPECT_FALSE(boost::filesystem::exists(by_pipe.root + "/state/backfill-v2"));
  // Done now: a rerun does nothing and does not wait for input.
  RunResult again = Snapsink({"backfill", by_pipe.root, "--version", "2", "-"}, {}, "garbage\n");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("already published; nothing to do"), std::string::npos) << again.out;
}

TEST(BackfillStdin, SourceNameNamesTheRejectsFile) {
  Fixture f;
  RunResult r = Snapsink({"backfill", f.root, "--version", "2", "-", "--source", "archive/2026"}, {},
                         f.data + "not json\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rejects = ReadFile(f.root + "/rejects/backfill-v2-archive_2026.ndjson");
  EXPECT_NE(rejects.find("{\"source\":\"archive/2026\",\"line\":121,"), std::string::npos) << rejects;
  RunResult plain = Snapsink({"backfill", f.root, "--version", "3", "-"}, {}, "bad\n" + f.data);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(ReadFile(f.root + "/rejects/backfill-v3--.ndjson").find("{\"source\":\"-\",\"line\":1,"),
            std::string::npos);
}

// A crash at every point a backfill from a pipe reaches (spool, ingest, seal,
// publish), then the same pipe again: equal to a clean run, byte for byte.
TEST(BackfillStdin, EveryCrashPointWithTheSamePipeEqualsACleanRun) {
  Fixture clean;
  const std::vector<std::string> tail = {"--version", "2", "-", "--commit-every", "25"};
  auto args = [&](const std::string& root) {
    std::vector<std::string> a = {"backfill", root};
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  };
  ASSERT_EQ(Snapsink(args(clean.root), {}, clean.data).exit_code, 0);
  const auto want_tree = TreeContents(clean.root);
  const std::string want = StateDump(clean.root);
  for (const char* point : {"backfill.before_spool_done", "backfill.after_spool", "ingest.before_commit",
                            "ingest.after_commit", "seal.mid_data", "seal.before_record", "publish.after_rename",
                            "publish.before_current", "publish.after_current"}) {
    for (const char* hit : {"1", "3"}) {
      SCOPED_TRACE(std::string(point) + " hit " + hit);
      Fixture f;
      RunResult crashed = Snapsink(args(f.root), {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", hit}}, f.data);
      if (crashed.exit_code == 0) {  // the point is reached fewer times than hit
        EXPECT_EQ(TreeDiff(TreeContents(f.root), want_tree), "");
        continue;
      }
      ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
      // Not used up by a backfill that did not publish.
      if (std::string(point).rfind("publish.after_current", 0) != 0) {
        EXPECT_EQ(Query(f.root).find("\"generation\":2"), std::string::npos);
      }
      RunResult rerun = Snapsink(args(f.root), {}, f.data);
      ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
      // Past the commit point the backfill is done; its rerun says so (and
      // installs CURRENT if the rename had not happened).
      const bool committed = std::string(point) == "publish.after_current";
      EXPECT_EQ(rerun.out.find("already published") != std::string::npos, committed) << rerun.out;
      EXPECT_EQ(TreeDiff(TreeContents(f.root), want_tree), "");
      EXPECT_EQ(StateDump(f.root), want);
      EXPECT_EQ(Query(f.root), Query(clean.root));
    }
  }
}

// A rerun whose pipe differs from the spool of the crashed run is refused,
// changing nothing; the same pipe then finishes the work.
TEST(BackfillStdin, DifferentPipeOnRerunIsRefused) {
  Fixture clean, f;
  ASSERT_EQ(Snapsink({"backfill", clean.root, "--version", "2", "-"}, {}, clean.data).exit_code, 0);
  RunResult crashed = Snapsink({"backfill", f.root, "--version", "2", "-", "--commit-every", "10"},
                               {{"SNAPSINK_CRASH_AT", "ingest.after_commit"}, {"SNAPSINK_CRASH_HIT", "2"}}, f.data);
  ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
  const std::string spool = ReadFile(f.root + "/state/backfill-v2/stdin.spool");
  EXPECT_EQ(spool, f.data);
  RunResult other = Snapsink({"backfill", f.root, "--version", "2", "-"}, {}, f.data + f.data);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("is not the input an earlier, unfinished run spooled"), std::string::npos) << other.err;
  EXPECT_EQ(ReadFile(f.root + "/state/backfill-v2/stdin.spool"), spool);
  RunResult same = Snapsink({"backfill", f.root, "--version", "2", "-", "--commit-every", "10"}, {}, f.data);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(TreeDiff(TreeContents(f.root), TreeContents(clean.root)), "");
  EXPECT_EQ(StateDump(f.root), StateDump(clean.root));
}

// docs/CONTRACT.md 9: a version is used up only by a backfill that published.
TEST(BackfillStdin, VersionIsUsedUpOnlyByAPublish) {
  Fixture f;
  // Nothing in range: nothing published, v2 stays free.
  RunResult none = Snapsink({"backfill", f.root, "--version", "2", "-", "--from", "2027-01-01T00:00:00Z"}, {}, f.data);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("nothing published (v2 stays unused)"), std::string::npos) << none.out;
  // Empty standard input: the same.
  RunResult empty = Snapsink({"backfill", f.root, "--version", "2", "-"}, {}, "");
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("nothing published (v2 stays unused)"), std::string::npos) << empty.out;
  // Refused by the version rule: the spool goes with it.
  RunResult low = Snapsink({"backfill", f.root, "--version", "1", "-"}, {}, f.data);
  EXPECT_EQ(low.exit_code, 1);
  EXPECT_FALSE(boost::filesystem::exists(f.root + "/state/backfill-v1"));
  RunResult real = Snapsink({"backfill", f.root, "--version", "2", "-"}, {}, f.data);
  ASSERT_EQ(real.exit_code, 0) << real.err;
  EXPECT_NE(real.out.find("published generation 2: 4 window(s) at v2"), std::string::npos) << real.out;
}

}  // namespace
}  // namespace snapsink::testing
