// End-to-end: init, run on a small input, query.
#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

TEST(CliSmoke, RunThenQuery) {
  TempDir d;
  const std::string root = d / "root";
  const std::string in = d / "in.ndjson";
  const std::string repeated = EventLine().Seq(1).Ts("2026-10-21T10:20:00Z").Metric("orders").Key("eu").Value("25").Line();
  WriteFile(in, EventLine().Seq(0).Ts("2026-10-21T10:15:03Z").Metric("orders").Key("eu").Value("12.5").Line() +
                    repeated + repeated);
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunResult r = Snapsink({"run", root, in, "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult q = Snapsink({"query", root, "--format", "json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out,
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":2,\"sum\":37.5,"
            "\"version\":1,\"generation\":1}\n");
  RunResult csv = Snapsink({"query", root, "--format", "csv"});
  EXPECT_EQ(csv.out, "window,metric,key,count,sum,version,generation\n2026-10-21T10:00:00Z,orders,eu,2,37.5,1,1\n");
  RunResult table = Snapsink({"query", root});
  EXPECT_EQ(table.out,
            "window                metric  key  count  sum   version  generation\n"
            "2026-10-21T10:00:00Z  orders  eu   2      37.5  1        1\n");
  // Point lookup and a miss.
  EXPECT_EQ(Snapsink({"query", root, "--metric", "orders", "--key", "eu", "--format", "csv"}).out, csv.out);
  EXPECT_EQ(Snapsink({"query", root, "--metric", "orders", "--key", "us", "--format", "json"}).out, "");
}

}  // namespace
}  // namespace snapsink::testing
