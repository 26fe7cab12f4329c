// engine/filenames' file kinds and engine/root_files: what gc removes and
// what verify warns about.
#include "engine/root_files.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

using filenames::ClassifyRootPath;
using filenames::FileKind;

TEST(RootFilesTest, ClassifiesEveryPathSnapsinkWrites) {
  EXPECT_EQ(ClassifyRootPath("LOCK"), FileKind::kLock);
  EXPECT_EQ(ClassifyRootPath("CURRENT"), FileKind::kCurrent);
  EXPECT_EQ(ClassifyRootPath("state"), FileKind::kState);
  EXPECT_EQ(ClassifyRootPath("state/data.mdb"), FileKind::kState);
  EXPECT_EQ(ClassifyRootPath("state/backfill-v3/LOCK"), FileKind::kState);
  EXPECT_EQ(ClassifyRootPath("checkpoints/00000000000000000007"), FileKind::kState);
  EXPECT_EQ(ClassifyRootPath("state.checkpoint"), FileKind::kState);
  EXPECT_EQ(ClassifyRootPath("state.checkpoint/data.mdb"), FileKind::kState);
  EXPECT_EQ(ClassifyRootPath("staging/20261021T100000Z/v2/data"), FileKind::kStaging);
  EXPECT_EQ(ClassifyRootPath("snapshots/20261021T100000Z/v1/manifest.json"), FileKind::kSnapshots);
  EXPECT_EQ(ClassifyRootPath("manifests/12"), FileKind::kManifests);
  EXPECT_EQ(ClassifyRootPath("rejects/a.ndjson"), FileKind::kRejects);
  EXPECT_EQ(ClassifyRootPath("CURRENT.tmp"), FileKind::kTemp);
  EXPECT_EQ(ClassifyRootPath("manifests/12.tmp"), FileKind::kTemp);
  EXPECT_EQ(ClassifyRootPath("owners"), FileKind::kOwners);
  EXPECT_EQ(ClassifyRootPath("owners/kafka_orders_3"), FileKind::kOwners);
  EXPECT_EQ(ClassifyRootPath("owners/kafka_orders_3/00000000000000000007"), FileKind::kOwners);
  EXPECT_EQ(ClassifyRootPath("owners/kafka_orders_3/LOCK"), FileKind::kOwners);
  EXPECT_EQ(ClassifyRootPath("partitions/kafka_orders_3/checkpoints/e00000000000000000002-o00000000000000000300"),
            FileKind::kPartitions);
  EXPECT_EQ(ClassifyRootPath("partitions/kafka_orders_3/checkpoints/e00000000000000000002-o00000000000000000300.tmp"),
            FileKind::kTemp);
  EXPECT_EQ(ClassifyRootPath("partitions/kafka_orders_3/checkpoints/e2-o300"), FileKind::kUnknown);
  EXPECT_EQ(ClassifyRootPath("partitions/kafka_orders_3/other"), FileKind::kUnknown);
  EXPECT_EQ(ClassifyRootPath("owners/kafka_orders_3/00000000000000000007.tmp"), FileKind::kTemp);
  EXPECT_EQ(filenames::OwnerClaimFile("r", "kafka:orders/3", 7), "r/owners/kafka_orders_3/00000000000000000007");
}

TEST(RootFilesTest, AnythingElseIsUnknown) {
  for (const char* p : {"notes.txt", "state/other", "snapshots/yesterday", "snapshots/20261021T100000Z/v0",
                        "snapshots/20261021T100000Z/v1/extra", "manifests/007", "rejects/a.txt", "LOCK/x",
                        "owners/kafka_orders_3/7", "owners/kafka_orders_3/00000000000000000000", "owners/a/b/c"}) {
    EXPECT_EQ(ClassifyRootPath(p), FileKind::kUnknown) << p;
  }
}

TEST(RootFilesTest, GcRemovesStrayTempFilesVerifyWarnsAboutUnknownOnes) {
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const std::string in = d / "in.ndjson";
  WriteFile(in, EventLine().Ts("2026-10-21T10:00:00Z").Metric("orders").Value("2").Line());
  ASSERT_EQ(Snapsink({"run", root, in, "--final"}).exit_code, 0);
  // What a crash between temp file and rename leaves, and a stranger's file.
  WriteFile(root + "/CURRENT.tmp", "9\n");
  WriteFile(root + "/manifests/9.tmp", "{");
  WriteFile(root + "/notes.txt", "mine");

  std::vector<std::string> unknown;
  ASSERT_STATUS_OK(UnknownRootFiles(Env::Default(), root, &unknown));
  EXPECT_EQ(unknown, std::vector<std::string>{"notes.txt"});

  RunResult gc = Snapsink({"gc", root});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(boost::filesystem::exists(root + "/CURRENT.tmp"));
  EXPECT_FALSE(boost::filesystem::exists(root + "/manifests/9.tmp"));
  EXPECT_TRUE(boost::filesystem::exists(root + "/notes.txt"));
  RunResult verify = Snapsink({"verify", root});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

}  // namespace
}  // namespace snapsink::testing
