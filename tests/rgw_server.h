// The local S3 server of the bucket tests (tests/rgw.sh: Ceph's RADOS
// Gateway). ctest starts it once before them (the `rgw` fixture:
// Rgw.Start, Rgw.Stop in CMakeLists.txt) in BUILD/rgw; a test binary run by
// hand finds it there too, or takes AWS_ENDPOINT_URL and the keys from its
// environment.
#pragma once

#include <string>

#include "engine/s3/s3_config.h"

namespace snapsink::testing {

// The server's config when one answers; otherwise false and why (the
// packages are missing, or it was not started), for GTEST_SKIP.
bool RgwConfig(S3Config* out, std::string* why_not);

// The directory of the server tests/rgw.sh started for this build (BUILD/rgw),
// when it runs there and the test environment does not name another
// (AWS_ENDPOINT_URL); "" otherwise.
std::string RgwDir();

// tests/rgw.sh stop-gateway or start-gateway on RgwDir(): kills its radosgw
// (the objects stay), or starts it again on the same port and waits until
// it answers. False when the script failed.
bool RgwGateway(const std::string& command);

// A bucket name no other test uses ("snapsink-test-<pid>-<n>").
std::string FreshBucketName();

}  // namespace snapsink::testing

// Skips the test, naming why, when no RGW answers; else sets `config`.
#define SNAPSINK_REQUIRE_RGW(config)                             \
  do {                                                           \
    std::string why_no_rgw_;                                     \
    if (!::snapsink::testing::RgwConfig(&(config), &why_no_rgw_)) \
      GTEST_SKIP() << why_no_rgw_;                               \
  } while (0)
