// A fresh bucket on the local RGW for each test of a root in a bucket
// (tests/rgw.sh; the test is skipped, naming why, where it is missing), the
// AWS variables that name it, and the snapsink binary run with them.
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/s3/s3_client.h"
#include "tests/rgw_server.h"
#include "tests/test_util.h"

namespace snapsink::testing {

class BucketRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SNAPSINK_REQUIRE_RGW(config_);
    client_ = std::make_unique<S3Client>(config_);
    bucket_ = FreshBucketName();
    ASSERT_TRUE(client_->CreateBucket(bucket_).ok());
    env_ = {{"AWS_ENDPOINT_URL", config_.endpoint},
            {"AWS_REGION", config_.region},
            {"AWS_ACCESS_KEY_ID", config_.access_key_id},
            {"AWS_SECRET_ACCESS_KEY", config_.secret_access_key}};
  }
  // The binary with env_ (and extra over it); the secret must never show.
  RunResult Run(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra = {}) {
    std::map<std::string, std::string> env = env_;
    for (const auto& [k, v] : extra) env[k] = v;
    RunResult r = Snapsink(args, env);
    EXPECT_EQ((r.out + r.err).find(config_.secret_access_key), std::string::npos) << "the secret was printed";
    return r;
  }
  std::string Root(const std::string& prefix) const { return "s3://" + bucket_ + "/" + prefix; }
  // Every object under prefix/ (key past it -> bytes).
  std::map<std::string, std::string> Objects(const std::string& prefix) {
    std::vector<S3ObjectInfo> objects;
    EXPECT_TRUE(client_->List(bucket_, prefix + "/", "", &objects, nullptr).ok());
    std::map<std::string, std::string> out;
    for (const auto& o : objects) {
      EXPECT_TRUE(client_->Get(bucket_, o.key, &out[o.key.substr(prefix.size() + 1)], nullptr).ok());
    }
    return out;
  }
  // The published objects: all but the writer epochs (they name a pid and a
  // directory) and the file writer's state checkpoints (their chains differ
  // between a writer that kept its DIR and one that restored).
  std::map<std::string, std::string> Published(const std::string& prefix) {
    auto all = Objects(prefix);
    for (auto it = all.begin(); it != all.end();) {
      const bool writers = it->first.rfind("writers/", 0) == 0, state = it->first.rfind("checkpoints/", 0) == 0;
      it = writers || state ? all.erase(it) : std::next(it);
    }
    return all;
  }

  S3Config config_;
  std::unique_ptr<S3Client> client_;
  std::string bucket_;
  std::map<std::string, std::string> env_;
};

}  // namespace snapsink::testing
