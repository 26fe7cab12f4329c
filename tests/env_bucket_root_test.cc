// The Env of a root in a bucket (engine/env_bucket_root.h) with many
// publishers (run --kafka --state): CURRENT moves only from the generation a
// publish was built on, and LOCK claims no writer epoch. Against the local
// RGW (tests/rgw.sh; skipped, naming why, where it is missing).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/env_bucket_root.h"
#include "tests/rgw_server.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

TEST(BucketRootEnvTest, SharedPublishingSwapsCurrentOnlyFromTheGenerationItWasBuiltOn) {
  S3Config config;
  SNAPSINK_REQUIRE_RGW(config);
  const std::string bucket = testing::FreshBucketName();
  BucketEnv other(config);  // another process's view of the bucket
  ASSERT_TRUE(other.client()->CreateBucket(bucket).ok());
  testing::TempDir dir;
  const std::string root = "s3://" + bucket + "/orders";
  BucketRootEnv env(root, dir.path(), config);
  env.SharePublishing();

  // LOCK is this disk's only: no writer epoch in the bucket.
  std::unique_ptr<FileLock> lock;
  ASSERT_TRUE(env.LockFile(root + "/LOCK", &lock).ok());
  std::vector<std::string> writers;
  ASSERT_TRUE(other.GetChildren(root + "/writers", &writers).ok());
  EXPECT_TRUE(writers.empty());

  env.ExpectCurrent("");  // built on nothing published
  ASSERT_TRUE(env.SwapCurrent("1 00000000000000aa\n").ok());
  env.ExpectCurrent("1 00000000000000aa\n");
  // Another process publishes generation 2 over 1 meanwhile.
  std::string data, version, new_version;
  ASSERT_TRUE(other.ReadFileVersioned(root + "/CURRENT", &data, &version).ok());
  ASSERT_TRUE(other.ReplaceFileIfVersion(root + "/CURRENT", "2 00000000000000bb\n", version, &new_version).ok());
  // Generation 3, built on 1, would drop what 2 published: refused, though 3 > 2.
  Status s = env.SwapCurrent("3 00000000000000cc\n");
  EXPECT_TRUE(s.IsLocked()) << s.ToString();
  EXPECT_NE(s.message().find("this publish was built on \"1 00000000000000aa\"; another process published first"),
            std::string::npos)
      << s.ToString();
  ASSERT_TRUE(other.ReadFileToString(root + "/CURRENT", &data).ok());
  EXPECT_EQ(data, "2 00000000000000bb\n");
  // Built again on 2: swapped; the same line again is done.
  env.ExpectCurrent("2 00000000000000bb\n");
  EXPECT_TRUE(env.SwapCurrent("3 00000000000000dd\n").ok());
  EXPECT_TRUE(env.SwapCurrent("3 00000000000000dd\n").ok());
  ASSERT_TRUE(other.ReadFileToString(root + "/CURRENT", &data).ok());
  EXPECT_EQ(data, "3 00000000000000dd\n");
}

}  // namespace
}  // namespace snapsink
