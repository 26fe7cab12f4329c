// StateDump (tests/test_util.h) reads a root in the test's own process: the
// crash sweeps compare every rerun with a clean run through it. It must say
// what the commands a user runs say, byte for byte, or a sweep would compare
// something other than what a user sees.
#include <gtest/gtest.h>

#include <string>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// The dump as the commands print it: `inspect producers|gaps|sources|windows
// --json` and `query --format json`, each under "## what rc=0".
std::string DumpByCommands(const std::string& root) {
  std::string dump;
  for (const char* what : {"producers", "gaps", "sources", "windows"}) {
    RunResult r = Snapsink({"inspect", root, what, "--json"});
    EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
    dump += std::string("## ") + what + " rc=0\n" + r.out;
  }
  RunResult q = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  dump += "## query rc=0\n" + q.out;
  return WithParentAsDir(root, dump);
}

// A root with two producers, an open gap, two sources, a retraction, a
// quantiles metric, three windows of which two are sealed and published.
TEST(StateDump, SaysWhatInspectAndQueryPrint) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root, "--metric", "latency:quantiles:0.01"}).exit_code, 0);
  const std::string a = dir / "a.ndjson", b = dir / "b.ndjson";
  auto p = [](uint64_t seq, const char* ts) { return EventLine().Seq(seq).Ts(ts).Metric("orders"); };
  auto q = [&p](uint64_t seq, const char* ts) { return p(seq, ts).Producer("q").Epoch(3); };
  WriteFile(a, p(0, "2026-10-21T10:00:00Z").Key("eu").Value("2.5").Line() +
                   p(1, "2026-10-21T10:01:00Z").Metric("latency").Value("12").Line() +
                   p(2, "2026-10-21T10:02:00Z").Key("eu").Value("2.5").Retract().Line() +
                   p(5, "2026-10-21T10:07:00Z").Key("us").Value("1").Line());
  WriteFile(b, q(0, "2026-10-21T10:03:00Z").Value("7").Line() + q(1, "2026-10-21T12:00:00Z").Value("1").Line());
  ASSERT_EQ(Snapsink({"ingest", root, a}).exit_code, 0);
  ASSERT_EQ(Snapsink({"ingest", root, b}).exit_code, 0);
  // Nothing published yet: the query part is empty, as the command's is.
  EXPECT_EQ(StateDump(root), DumpByCommands(root));
  ASSERT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"publish", root}).exit_code, 0);
  const std::string dump = StateDump(root);
  EXPECT_EQ(dump, DumpByCommands(root));
  // It holds what the sweeps compare: the gap, both sources, the rows.
  EXPECT_NE(dump.find("\"open_gaps\":1"), std::string::npos) << dump;
  EXPECT_NE(dump.find("$DIR/b.ndjson"), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"metric\":\"latency\""), std::string::npos) << dump;
  EXPECT_EQ(dump.find(dir.path()), std::string::npos) << dump;
}

// A path that is not a root: every part says it cannot be read, as each
// command failed.
TEST(StateDump, NotARootIsAFailureInEveryPart) {
  TempDir dir;
  const std::string dump = StateDump(dir / "none");
  for (const char* what : {"producers", "gaps", "sources", "windows", "query"}) {
    const std::string head = std::string("## ") + what + " rc=";
    const size_t at = dump.find(head);
    ASSERT_NE(at, std::string::npos) << dump;
    EXPECT_NE(dump.compare(at + head.size(), 2, "0\n"), 0) << what << " read as if it were a root:\n" << dump;
  }
}

}  // namespace
}  // namespace snapsink::testing
