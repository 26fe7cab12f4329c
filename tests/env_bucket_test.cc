// The bucket Env (engine/env_bucket.h) against a real S3 server: Ceph's
// RADOS Gateway started by tests/rgw.sh (skipped, naming why, where it is
// missing). Create-only objects, the compare-and-swap of CURRENT, lost
// answers, bad configuration, and the crash points of both PUT kinds.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "engine/env_bucket.h"
#include "tests/rgw_server.h"

namespace snapsink {
namespace {

class BucketEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SNAPSINK_REQUIRE_RGW(config_);
    env_ = std::make_unique<BucketEnv>(config_);
    bucket_ = testing::FreshBucketName();
    ASSERT_TRUE(env_->client()->CreateBucket(bucket_).ok());
    root_ = "s3://" + bucket_ + "/roots/a";
  }
  Status Write(Env* env, const std::string& path, const std::string& data) {
    std::unique_ptr<WritableFile> f;
    SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(path, &f));
    SNAPSINK_RETURN_IF_ERROR(f->Append(data));
    SNAPSINK_RETURN_IF_ERROR(f->Sync());
    return f->Close();
  }
  std::string Read(const std::string& path) {
    std::string data;
    EXPECT_TRUE(env_->ReadFileToString(path, &data).ok()) << path;
    return data;
  }
  S3Config config_;
  std::unique_ptr<BucketEnv> env_;
  std::string bucket_;
  std::string root_;
};

TEST_F(BucketEnvTest, ObjectsAreCreateOnlyAndTheSameBytesAgainAreSuccess) {
  const std::string path = root_ + "/snapshots/w1.sst";
  ASSERT_TRUE(Write(env_.get(), path, "the bytes").ok());
  ASSERT_TRUE(Write(env_.get(), path, "the bytes").ok());  // a retry after a lost answer
  const Status other = Write(env_.get(), path, "other bytes!");
  ASSERT_TRUE(other.IsLocked()) << other.ToString();
  EXPECT_NE(other.message().find(path + ": already exists with other bytes"), std::string::npos) << other.ToString();
  EXPECT_EQ(Read(path), "the bytes");
}

TEST_F(BucketEnvTest, TwentyConcurrentWritersOfOneObjectHaveExactlyOneWinner) {
  const std::string path = root_ + "/owners/claim-1";
  std::atomic<int> won{-1}, wins{0}, named{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < 20; ++i) {
    writers.emplace_back([&, i] {
      const Status st = Write(env_.get(), path, "writer " + std::to_string(i));
      if (st.ok()) {
        ++wins;
        won = i;
      } else if (st.IsLocked() && st.message().find(path) != std::string::npos) {
        ++named;
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(named.load(), 19);
  EXPECT_EQ(Read(path), "writer " + std::to_string(won.load()));
}

TEST_F(BucketEnvTest, TwoRacingSwappersOfCurrentPublishEachGenerationOnceAndTheLoserIsNamed) {
  const std::string current = root_ + "/CURRENT";
  std::string v;
  ASSERT_TRUE(env_->ReplaceFileIfVersion(current, "gen 0", "", &v).ok());
  std::vector<std::string> winners;
  for (int gen = 1; gen <= 8; ++gen) {
    std::barrier both(2);
    Status result[2];
    std::vector<std::thread> swappers;
    for (int t = 0; t < 2; ++t) {
      swappers.emplace_back([&, t] {
        std::string data, version, new_version;
        result[t] = env_->ReadFileVersioned(current, &data, &version);
        both.arrive_and_wait();  // both read the same version, then both swap
        if (result[t].ok()) {
          result[t] = env_->ReplaceFileIfVersion(current, "gen " + std::to_string(gen) + " by " + std::to_string(t),
                                                 version, &new_version);
        }
      });
    }
    for (auto& s : swappers) s.join();
    ASSERT_NE(result[0].ok(), result[1].ok()) << "gen " << gen << ": " << result[0].ToString() << " / "
                                              << result[1].ToString();
    const int winner = result[0].ok() ? 0 : 1;
    const Status& lost = result[1 - winner];
    EXPECT_TRUE(lost.IsLocked()) << lost.ToString();
    EXPECT_NE(lost.message().find(current + ": replaced by another writer"), std::string::npos) << lost.ToString();
    EXPECT_EQ(Read(current), "gen " + std::to_string(gen) + " by " + std::to_string(winner));
    winners.push_back(std::to_string(winner));
  }
  // A swap from a stale version loses too, and nothing is overwritten.
  std::string ignored;
  const Status stale = env_->ReplaceFileIfVersion(current, "gen 99", v, &ignored);
  EXPECT_TRUE(stale.IsLocked()) << stale.ToString();
  EXPECT_EQ(Read(current).substr(0, 6), "gen 8 ");
  const Status again = env_->ReplaceFileIfVersion(current, "gen 0 again", "", &ignored);
  EXPECT_TRUE(again.IsLocked()) << again.ToString();
}

TEST_F(BucketEnvTest, ADroppedAnswerOfASuccessfulPutIsResolvedByRereading) {
  std::atomic<int> puts{0};
  S3Config faulty = config_;
  faulty.drop_answer = [&](std::string_view method, std::string_view) { return method == "PUT" && puts++ % 2 == 0; };
  BucketEnv env(faulty);
  const std::string object = root_ + "/manifests/1";
  ASSERT_TRUE(Write(&env, object, "manifest 1").ok());
  EXPECT_EQ(puts.load(), 1);  // stored; the lost answer was settled by a GET, not a second PUT
  EXPECT_EQ(Read(object), "manifest 1");

  const std::string current = root_ + "/CURRENT";
  std::string v1, v2;
  ASSERT_TRUE(env.ReplaceFileIfVersion(current, "gen 1", "", &v1).ok());  // answer dropped
  ASSERT_TRUE(env.ReplaceFileIfVersion(current, "gen 2", v1, &v2).ok());  // answered
  ASSERT_TRUE(env.ReplaceFileIfVersion(current, "gen 3", v2, &v1).ok());  // answer dropped
  EXPECT_EQ(puts.load(), 4);
  std::string data, version;
  ASSERT_TRUE(env.ReadFileVersioned(current, &data, &version).ok());
  EXPECT_EQ(data, "gen 3");
  EXPECT_EQ(version, v1);  // the version the re-read found is the one to swap from next
}

TEST_F(BucketEnvTest, FilesReadByRangeListedRemovedAndWhatABucketCannotDo) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data += static_cast<char>('a' + i % 26);
  ASSERT_TRUE(Write(env_.get(), root_ + "/snapshots/s1", data).ok());
  ASSERT_TRUE(Write(env_.get(), root_ + "/snapshots/s2", "2").ok());
  ASSERT_TRUE(Write(env_.get(), root_ + "/manifests/1", "m").ok());
  ASSERT_TRUE(Write(env_.get(), root_ + "/CURRENT", "c").ok());
  std::unique_ptr<RandomAccessFile> f;
  ASSERT_TRUE(env_->NewRandomAccessFile(root_ + "/snapshots/s1", &f).ok());
  EXPECT_EQ(f->Size(), data.size());
  std::string got;
  ASSERT_TRUE(f->Read(54321, 777, &got).ok());
  EXPECT_EQ(got, data.substr(54321, 777));
  EXPECT_TRUE(f->Read(data.size() - 5, 10, &got).IsCorruption());
  uint64_t size = 0;
  ASSERT_TRUE(env_->GetFileSize(root_ + "/snapshots/s2", &size).ok());
  EXPECT_EQ(size, 1u);

  std::vector<std::string> names;
  ASSERT_TRUE(env_->GetChildren(root_, &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"CURRENT", "manifests", "snapshots"}));
  ASSERT_TRUE(env_->GetChildren(root_ + "/snapshots/", &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"s1", "s2"}));
  EXPECT_TRUE(env_->FileExists(root_ + "/snapshots"));  // a directory: something under it
  EXPECT_TRUE(env_->FileExists(root_ + "/CURRENT"));
  EXPECT_FALSE(env_->FileExists(root_ + "/rejects"));
  EXPECT_TRUE(env_->CreateDirs(root_ + "/rejects").ok());  // implicit: nothing to do

  ASSERT_TRUE(env_->RemoveFile(root_ + "/snapshots/s2").ok());
  ASSERT_TRUE(env_->RemoveFile(root_ + "/snapshots/s2").ok());
  ASSERT_TRUE(env_->RemoveTree(root_ + "/snapshots").ok());
  EXPECT_FALSE(env_->FileExists(root_ + "/snapshots"));
  ASSERT_TRUE(env_->GetChildren(root_, &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"CURRENT", "manifests"}));

  const Status rename = env_->RenameFile(root_ + "/CURRENT.tmp", root_ + "/CURRENT");
  EXPECT_NE(rename.message().find("cannot be renamed in a bucket"), std::string::npos) << rename.ToString();
  std::unique_ptr<FileLock> lock;
  const Status locked = env_->LockFile(root_ + "/LOCK", &lock);
  EXPECT_NE(locked.message().find("cannot be locked in a bucket"), std::string::npos) << locked.ToString();
  std::unique_ptr<WritableFile> append;
  EXPECT_FALSE(env_->NewAppendableFile(root_ + "/x", &append).ok());
  EXPECT_TRUE(env_->NewWritableFile("/local/path", &append).IsInvalidArgument());
}

TEST_F(BucketEnvTest, AMissingBucketAndWrongCredentialsAreClearErrorsWithoutTheSecret) {
  const std::string missing = "s3://snapsink-no-such-bucket/root/CURRENT";
  const Status put = Write(env_.get(), missing, "x");
  ASSERT_TRUE(put.IsInvalidArgument()) << put.ToString();
  EXPECT_NE(put.message().find("s3://snapsink-no-such-bucket: no such bucket"), std::string::npos) << put.ToString();
  std::unique_ptr<RandomAccessFile> f;
  const Status open = env_->NewRandomAccessFile(missing, &f);
  EXPECT_TRUE(open.IsInvalidArgument()) << open.ToString();

  S3Config bad = config_;
  bad.secret_access_key = "wrong-secret-9a7b";
  BucketEnv env(bad);
  std::string data, version;
  const Status read = env.ReadFileVersioned(root_ + "/CURRENT", &data, &version);
  const Status write = Write(&env, root_ + "/snapshots/x", "x");
  const Status swap = env.ReplaceFileIfVersion(root_ + "/CURRENT", "x", "", &version);
  for (const Status& st : {read, write, swap}) {
    ASSERT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find("the credentials were refused"), std::string::npos) << st.ToString();
    EXPECT_EQ(st.message().find(bad.secret_access_key), std::string::npos) << st.ToString();
    EXPECT_EQ(st.message().find(config_.secret_access_key), std::string::npos) << st.ToString();
  }
}

// The same two calls on a local disk: no version, and the replace is
// WriteFileAtomic (the root's LOCK is what excludes a second writer there).
TEST(EnvVersions, OnALocalDiskTheReplaceIsAnAtomicWriteAndTheVersionIsEmpty) {
  char tmpl[] = "/tmp/snapsink_env_versions_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/CURRENT";
  Env* env = Env::Default();
  std::string version = "x", data;
  EXPECT_TRUE(env->ReadFileVersioned(path, &data, &version).IsNotFound());
  ASSERT_TRUE(env->ReplaceFileIfVersion(path, "gen 1", "", &version).ok());
  EXPECT_EQ(version, "");
  ASSERT_TRUE(env->ReplaceFileIfVersion(path, "gen 2", "", &version).ok());
  ASSERT_TRUE(env->ReadFileVersioned(path, &data, &version).ok());
  EXPECT_EQ(data, "gen 2");
  EXPECT_EQ(version, "");
  EXPECT_FALSE(env->FileExists(path + ".tmp"));
  ASSERT_TRUE(env->RemoveTree(tmpl).ok());
}

// Each crash point of both PUT kinds: the step (a create-only object, then
// CURRENT swapped from the version it was read at) dies there, is run again,
// and leaves the same objects as a clean run.
class BucketEnvCrash : public ::testing::TestWithParam<const char*> {};

Status CrashStep(Env* env, const std::string& root, const std::string& version) {
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(root + "/manifests/1", &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append("manifest of generation 1"));
  SNAPSINK_RETURN_IF_ERROR(f->Close());
  std::string new_version;
  return env->ReplaceFileIfVersion(root + "/CURRENT", "generation 1", version, &new_version);
}

std::map<std::string, std::string> Objects(S3Client* client, const std::string& bucket, const std::string& prefix) {
  std::vector<S3ObjectInfo> objects;
  EXPECT_TRUE(client->List(bucket, prefix, "", &objects, nullptr).ok());
  std::map<std::string, std::string> out;
  for (const auto& o : objects) EXPECT_TRUE(client->Get(bucket, o.key, &out[o.key.substr(prefix.size())], nullptr).ok());
  return out;
}

TEST_P(BucketEnvCrash, KilledAtAPutThenRunAgainEqualsACleanRun) {
  S3Config config;
  SNAPSINK_REQUIRE_RGW(config);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts afresh: its crash point is read anew
  // The child process reruns this body: it must use the parent's bucket.
  const char* shared = std::getenv("SNAPSINK_TEST_CRASH_BUCKET");
  const std::string bucket = shared != nullptr ? shared : testing::FreshBucketName();
  setenv("SNAPSINK_TEST_CRASH_BUCKET", bucket.c_str(), 1);
  S3Client client(config);
  ASSERT_TRUE(client.CreateBucket(bucket).ok());
  std::string v0;
  for (const char* root : {"crashed", "clean"}) {
    S3PutOutcome outcome;
    ASSERT_TRUE(client.PutCreateOnly(bucket, std::string(root) + "/CURRENT", "generation 0", &outcome, nullptr).ok());
    std::string body;
    ASSERT_TRUE(client.Get(bucket, std::string(root) + "/CURRENT", &body, &v0).ok());
  }
  const std::string point = GetParam();
  EXPECT_EXIT(
      {
        setenv("SNAPSINK_CRASH_AT", point.c_str(), 1);
        BucketEnv env(config);
        (void)CrashStep(&env, "s3://" + bucket + "/crashed", v0);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(99), "");
  unsetenv("SNAPSINK_TEST_CRASH_BUCKET");
  // Where it died: before or after the PUT of its kind.
  const auto after_crash = Objects(&client, bucket, "crashed/");
  const bool manifest_there = after_crash.count("manifests/1") == 1;
  EXPECT_EQ(manifest_there, point != "bucket.before_create_put") << point;
  EXPECT_EQ(after_crash.at("CURRENT"), point == "bucket.after_swap_put" ? "generation 1" : "generation 0") << point;

  BucketEnv env(config);
  ASSERT_TRUE(CrashStep(&env, "s3://" + bucket + "/crashed", v0).ok());
  ASSERT_TRUE(CrashStep(&env, "s3://" + bucket + "/clean", v0).ok());
  EXPECT_EQ(Objects(&client, bucket, "crashed/"), Objects(&client, bucket, "clean/"));
  EXPECT_EQ(Objects(&client, bucket, "clean/").at("CURRENT"), "generation 1");
}

INSTANTIATE_TEST_SUITE_P(Points, BucketEnvCrash,
                         ::testing::Values("bucket.before_create_put", "bucket.after_create_put",
                                           "bucket.before_swap_put", "bucket.after_swap_put"));

}  // namespace
}  // namespace snapsink
