// The S3 client (engine/s3/) against a real S3 server: Ceph's RADOS Gateway
// started by tests/rgw.sh (skipped, naming why, where it is missing).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "engine/s3/s3_client.h"
#include "engine/s3/s3_uri.h"
#include "tests/rgw_server.h"

namespace snapsink {
namespace {

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SNAPSINK_REQUIRE_RGW(config_);
    client_ = std::make_unique<S3Client>(config_);
    bucket_ = testing::FreshBucketName();
    ASSERT_TRUE(client_->CreateBucket(bucket_).ok());
  }
  std::string Put(const std::string& key, const std::string& data) {
    S3PutOutcome outcome;
    std::string etag;
    EXPECT_TRUE(client_->PutCreateOnly(bucket_, key, data, &outcome, &etag).ok());
    EXPECT_EQ(outcome, S3PutOutcome::kStored) << key;
    return etag;
  }
  S3Config config_;
  std::unique_ptr<S3Client> client_;
  std::string bucket_;
};

TEST(S3Uri, QueryIsSortedAndFullyEncodedAndPathsParse) {
  EXPECT_EQ(CanonicalQuery({{"prefix", "a b/c"}, {"list-type", "2"}, {"delimiter", "/"}}),
            "delimiter=%2F&list-type=2&prefix=a%20b%2Fc");
  EXPECT_EQ(UriEncode("dir/x~y.z_-+", true), "dir/x~y.z_-%2B");
  std::string bucket, key;
  ASSERT_TRUE(ParseBucketPath("s3://b/p/q", &bucket, &key).ok());
  EXPECT_EQ(bucket, "b");
  EXPECT_EQ(key, "p/q");
  EXPECT_FALSE(ParseBucketPath("s3:///p", &bucket, &key).ok());
  EXPECT_FALSE(ParseBucketPath("/local/root", &bucket, &key).ok());
}

// Sets the AWS_* variables for one test and puts back what was there.
class AwsVariables {
 public:
  explicit AwsVariables(const std::map<std::string, std::string>& vars) {
    for (const char* name : {"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
                             "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}) {
      const char* old = std::getenv(name);
      if (old != nullptr) saved_[name] = old;
      unsetenv(name);
      if (vars.count(name)) setenv(name, vars.at(name).c_str(), 1);
    }
  }
  ~AwsVariables() {
    for (const char* name : {"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
                             "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}) {
      unsetenv(name);
      if (saved_.count(name)) setenv(name, saved_.at(name).c_str(), 1);
    }
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST(S3ConfigTest, FromEnvironmentReadsTheAwsVariablesAndNamesWhatIsMissing) {
  S3Config c;
  {
    AwsVariables vars({{"AWS_ENDPOINT_URL", "http://127.0.0.1:7480/"}, {"AWS_DEFAULT_REGION", "eu-west-3"},
                       {"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t-value"},
                       {"AWS_SESSION_TOKEN", "tok-value"}});
    ASSERT_TRUE(S3Config::FromEnvironment(&c).ok());
    EXPECT_EQ(c.endpoint, "http://127.0.0.1:7480");
    EXPECT_EQ(c.region, "eu-west-3");
    EXPECT_EQ(c.access_key_id, "AKID");
    EXPECT_EQ(c.secret_access_key, "s3cr3t-value");
    EXPECT_EQ(c.session_token, "tok-value");
    EXPECT_EQ(c.Scrub("a s3cr3t-value b tok-value"), "a *** b ***");
  }
  {
    AwsVariables vars({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t-value"}});
    const Status st = S3Config::FromEnvironment(&c);
    EXPECT_TRUE(st.IsInvalidArgument());
    EXPECT_NE(st.message().find("AWS_ENDPOINT_URL is not set"), std::string::npos) << st.ToString();
  }
  {
    AwsVariables vars({{"AWS_ENDPOINT_URL", "127.0.0.1:7480"}, {"AWS_ACCESS_KEY_ID", "AKID"},
                       {"AWS_SECRET_ACCESS_KEY", "s3cr3t-value"}});
    const Status st = S3Config::FromEnvironment(&c);
    EXPECT_NE(st.message().find("must start with http:// or https://"), std::string::npos) << st.ToString();
  }
  {
    AwsVariables vars({{"AWS_ENDPOINT_URL", "http://h"}, {"AWS_ACCESS_KEY_ID", "AKID"}});
    const Status st = S3Config::FromEnvironment(&c);
    EXPECT_NE(st.message().find("AWS_SECRET_ACCESS_KEY is not set"), std::string::npos) << st.ToString();
  }
  {
    AwsVariables vars({{"AWS_ENDPOINT_URL", "http://h"}, {"AWS_ACCESS_KEY_ID", "AKID"},
                       {"AWS_SECRET_ACCESS_KEY", "s3cr3t-value"}});
    ASSERT_TRUE(S3Config::FromEnvironment(&c).ok());
    EXPECT_EQ(c.region, "us-east-1");
  }
}

TEST_F(S3ClientTest, RangedGetReturnsTheExactBytes) {
  std::string data;
  for (int i = 0; i < 70000; ++i) data += static_cast<char>(i * 7 % 251);
  Put("dir/blob", data);
  std::string got;
  ASSERT_TRUE(client_->GetRange(bucket_, "dir/blob", 12345, 4321, &got).ok());
  EXPECT_EQ(got, data.substr(12345, 4321));
  ASSERT_TRUE(client_->GetRange(bucket_, "dir/blob", data.size() - 1, 1, &got).ok());
  EXPECT_EQ(got, data.substr(data.size() - 1));
  const Status past = client_->GetRange(bucket_, "dir/blob", data.size() - 10, 20, &got);
  EXPECT_TRUE(past.IsCorruption()) << past.ToString();
  uint64_t size = 0;
  ASSERT_TRUE(client_->Head(bucket_, "dir/blob", &size, nullptr).ok());
  EXPECT_EQ(size, data.size());
  std::string whole;
  ASSERT_TRUE(client_->Get(bucket_, "dir/blob", &whole, nullptr).ok());
  EXPECT_EQ(whole, data);
}

TEST_F(S3ClientTest, CreateOnlyPutHasExactlyOneWinnerAmongTwentyWriters) {
  for (int round = 0; round < 3; ++round) {
    const std::string key = "claim-" + std::to_string(round);
    std::atomic<int> stored{0}, refused{0}, other{0};
    std::vector<std::thread> writers;
    for (int i = 0; i < 20; ++i) {
      writers.emplace_back([&, i] {
        S3PutOutcome outcome;
        const Status st = client_->PutCreateOnly(bucket_, key, "writer " + std::to_string(i), &outcome, nullptr);
        if (st.ok() && outcome == S3PutOutcome::kStored) {
          ++stored;
        } else if (st.ok() && outcome == S3PutOutcome::kPreconditionFailed) {
          ++refused;
        } else {
          ++other;
        }
      });
    }
    for (auto& t : writers) t.join();
    EXPECT_EQ(stored.load(), 1) << "round " << round;
    EXPECT_EQ(stored + refused + other, 20);
  }
}

TEST_F(S3ClientTest, IfMatchSwapsOnlyTheVersionItWasReadWithQuotedOrNot) {
  const std::string v1 = Put("CURRENT", "1");
  S3PutOutcome outcome;
  std::string v2;
  ASSERT_TRUE(client_->PutIfMatch(bucket_, "CURRENT", "2", "\"" + v1 + "\"", &outcome, &v2).ok());
  EXPECT_EQ(outcome, S3PutOutcome::kStored);
  std::string v3;
  ASSERT_TRUE(client_->PutIfMatch(bucket_, "CURRENT", "3", v1, &outcome, &v3).ok());
  EXPECT_EQ(outcome, S3PutOutcome::kPreconditionFailed);
  ASSERT_TRUE(client_->PutIfMatch(bucket_, "missing", "3", v1, &outcome, &v3).ok());
  EXPECT_EQ(outcome, S3PutOutcome::kPreconditionFailed);
  std::string body;
  ASSERT_TRUE(client_->Get(bucket_, "CURRENT", &body, nullptr).ok());
  EXPECT_EQ(body, "2");
}

TEST_F(S3ClientTest, ConditionalGetAnswersNotModifiedForTheSameEtag) {
  const std::string v1 = Put("CURRENT", "gen 1");
  bool modified = true;
  std::string body, etag;
  ASSERT_TRUE(client_->GetIfNoneMatch(bucket_, "CURRENT", v1, &modified, &body, &etag).ok());
  EXPECT_FALSE(modified);
  S3PutOutcome outcome;
  std::string v2;
  ASSERT_TRUE(client_->PutIfMatch(bucket_, "CURRENT", "gen 2", v1, &outcome, &v2).ok());
  ASSERT_TRUE(client_->GetIfNoneMatch(bucket_, "CURRENT", v1, &modified, &body, &etag).ok());
  EXPECT_TRUE(modified);
  EXPECT_EQ(body, "gen 2");
  EXPECT_EQ(etag, v2);
}

TEST_F(S3ClientTest, ListPagesThroughContinuationTokensAndRollsUpDirectories) {
  for (const char* k : {"r/a", "r/b", "r/c", "r/d", "r/e", "r/sub/x", "r/sub/y", "other"}) Put(k, k);
  std::vector<S3ObjectInfo> objects;
  std::vector<std::string> dirs;
  ASSERT_TRUE(client_->List(bucket_, "r/", "/", &objects, &dirs, 2).ok());
  std::vector<std::string> keys;
  for (const auto& o : objects) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"r/a", "r/b", "r/c", "r/d", "r/e"}));
  EXPECT_EQ(dirs, std::vector<std::string>{"r/sub/"});
  EXPECT_EQ(objects[0].size, 3u);
  ASSERT_TRUE(client_->List(bucket_, "r/", "", &objects, nullptr, 3).ok());
  EXPECT_EQ(objects.size(), 7u);
  ASSERT_TRUE(client_->Delete(bucket_, "r/a").ok());
  ASSERT_TRUE(client_->Delete(bucket_, "r/a").ok());  // missing is fine
  ASSERT_TRUE(client_->List(bucket_, "r/", "", &objects, nullptr).ok());
  EXPECT_EQ(objects.size(), 6u);
}

TEST_F(S3ClientTest, WrongCredentialsAreAClearErrorWithoutTheSecret) {
  S3Config bad = config_;
  bad.secret_access_key = "not-the-secret-4f1c9e";
  S3Client client(bad);
  std::string body;
  const Status get = client.Get(bucket_, "anything", &body, nullptr);
  ASSERT_TRUE(get.IsInvalidArgument()) << get.ToString();
  EXPECT_NE(get.message().find("credentials were refused"), std::string::npos) << get.ToString();
  EXPECT_NE(get.message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << get.ToString();
  S3PutOutcome outcome;
  const Status put = client.PutCreateOnly(bucket_, "x", "y", &outcome, nullptr);
  ASSERT_TRUE(put.IsInvalidArgument()) << put.ToString();
  for (const Status& st : {get, put}) {
    EXPECT_EQ(st.message().find(bad.secret_access_key), std::string::npos) << st.ToString();
    EXPECT_EQ(st.message().find(config_.secret_access_key), std::string::npos) << st.ToString();
  }
  // Scrub is the last line of defence: any text that came back holding the secret loses it.
  EXPECT_EQ(bad.Scrub("echo not-the-secret-4f1c9e twice not-the-secret-4f1c9e"), "echo *** twice ***");
}

TEST_F(S3ClientTest, MissingBucketIsNamedAndMissingObjectIsNotFound) {
  std::string body;
  const Status bucket = client_->Get("snapsink-no-such-bucket", "CURRENT", &body, nullptr);
  ASSERT_TRUE(bucket.IsInvalidArgument()) << bucket.ToString();
  EXPECT_NE(bucket.message().find("s3://snapsink-no-such-bucket: no such bucket"), std::string::npos)
      << bucket.ToString();
  const Status head = client_->Head("snapsink-no-such-bucket", "CURRENT", nullptr, nullptr);
  EXPECT_TRUE(head.IsInvalidArgument()) << head.ToString();
  const Status object = client_->Get(bucket_, "nothing/here", &body, nullptr);
  ASSERT_TRUE(object.IsNotFound()) << object.ToString();
  EXPECT_NE(object.message().find("s3://" + bucket_ + "/nothing/here"), std::string::npos) << object.ToString();
}

TEST_F(S3ClientTest, DroppedAnswerOfAPutIsAnUnknownOutcomeNotARetry) {
  std::atomic<int> drops{0};
  S3Config faulty = config_;
  faulty.drop_answer = [&](std::string_view method, std::string_view) { return method == "PUT" && drops++ == 0; };
  S3Client client(faulty);
  S3PutOutcome outcome;
  ASSERT_TRUE(client.PutCreateOnly(bucket_, "k", "v", &outcome, nullptr).ok());
  EXPECT_EQ(outcome, S3PutOutcome::kUnknown);
  EXPECT_EQ(drops.load(), 1);  // not sent again by the client: the caller re-reads
  std::string body;
  ASSERT_TRUE(client.Get(bucket_, "k", &body, nullptr).ok());
  EXPECT_EQ(body, "v");  // the server had stored it
}

TEST_F(S3ClientTest, LostAnswersOfReadsAreRetriedWithinTheBound) {
  Put("k", "value");
  std::atomic<int> gets{0};
  S3Config flaky = config_;
  flaky.max_attempts = 3;
  flaky.retry_base_ms = 1;
  flaky.drop_answer = [&](std::string_view method, std::string_view) { return method == "GET" && gets++ < 2; };
  S3Client client(flaky);
  std::string body;
  ASSERT_TRUE(client.Get(bucket_, "k", &body, nullptr).ok());  // the third attempt is answered
  EXPECT_EQ(body, "value");
  EXPECT_EQ(gets.load(), 3);
  S3Config dead = flaky;
  dead.drop_answer = [](std::string_view, std::string_view) { return true; };
  S3Client never(dead);
  const Status st = never.Get(bucket_, "k", &body, nullptr);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find("after 3 attempts"), std::string::npos) << st.ToString();
}

TEST_F(S3ClientTest, UnreachableEndpointStopsAfterBoundedRetries) {
  S3Config gone = config_;
  gone.endpoint = "http://127.0.0.1:1";  // nothing listens there
  gone.max_attempts = 3;
  gone.retry_base_ms = 1;
  S3Client client(gone);
  std::string body;
  const Status st = client.Get(bucket_, "k", &body, nullptr);
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find("after 3 attempts"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("AWS_ENDPOINT_URL"), std::string::npos) << st.ToString();
}

// The retry time bounds a request however many attempts are allowed: an
// endpoint that refuses for longer ends it with the attempts and the time.
TEST_F(S3ClientTest, RetriesEndWithinTheRetryTime) {
  S3Config gone = config_;
  gone.endpoint = "http://127.0.0.1:1";  // nothing listens there
  gone.max_attempts = 1000;
  gone.retry_for_ms = 1500;
  S3Client client(gone);
  std::string body;
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = client.Get(bucket_, "k", &body, nullptr);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_LT(took, 3.0);
  EXPECT_GE(took, 0.5);  // backed off, not given up at once
  EXPECT_NE(st.message().find(" s): is the S3 endpoint"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace snapsink
