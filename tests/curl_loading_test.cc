// libcurl is loaded when a bucket root is first used, not when the process
// starts (engine/s3/curl_library.h): a command on a local root never loads
// it or the libraries it pulls in; a command on a bucket root does; and a
// libcurl.so.4 that is not libcurl is one line naming what to install.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

using testing::RunResult;
using testing::Snapsink;

std::string Events() { return std::string(testing::SourceDirPath()) + "/sample/events.ndjson"; }

// The dynamic loader names every library it loads on stderr.
const std::map<std::string, std::string> kLoaderLog = {{"LD_DEBUG", "files"}};

bool LoadedLibcurl(const RunResult& r) { return r.err.find("file=libcurl.so.4") != std::string::npos; }

// What the command itself said, without the loader's lines (for a failure's message).
std::string Said(const RunResult& r) {
  std::string out;
  size_t start = 0;
  while (start < r.err.size()) {
    size_t end = r.err.find('\n', start);
    if (end == std::string::npos) end = r.err.size();
    const std::string line = r.err.substr(start, end - start);
    if (line.find(":\t") == std::string::npos) out += line + "\n";
    start = end + 1;
  }
  return "exit " + std::to_string(r.exit_code) + ", stdout: " + r.out.substr(0, 500) + ", stderr: " + out;
}

// A bucket root whose endpoint refuses connections (a port bound, then
// closed): the command gets as far as its first request.
std::map<std::string, std::string> RefusedBucketEnv() {
  return {{"AWS_ENDPOINT_URL", "http://127.0.0.1:" + std::to_string(testing::FreePort())},
          {"AWS_REGION", "us-east-1"},
          {"AWS_ACCESS_KEY_ID", "snapsink-test"},
          {"AWS_SECRET_ACCESS_KEY", "snapsink-test-secret"},
          {"SNAPSINK_S3_RETRY_SECONDS", "1"}};
}

TEST(CurlLoading, CommandsOnALocalRootNeverLoadLibcurl) {
  testing::TempDir d;
  const std::string root = d / "root";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"init", root}, std::vector<std::string>{"run", root, Events(), "--final"},
        std::vector<std::string>{"status", root}, std::vector<std::string>{"query", root},
        std::vector<std::string>{"verify", root}}) {
    RunResult r = Snapsink(args, kLoaderLog);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << Said(r);
    // The loader's log is there (so the check below can see a load)...
    ASSERT_NE(r.err.find("file=liblmdb.so"), std::string::npos) << args[0] << ": " << Said(r);
    // ...and names no libcurl.
    EXPECT_FALSE(LoadedLibcurl(r)) << args[0] << ": " << Said(r);
  }
}

TEST(CurlLoading, ACommandOnABucketRootLoadsLibcurl) {
  std::map<std::string, std::string> env = RefusedBucketEnv();
  env.insert(kLoaderLog.begin(), kLoaderLog.end());
  RunResult r = Snapsink({"status", "s3://snapsink-loading/root"}, env);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(LoadedLibcurl(r));
  EXPECT_NE(r.err.find("is the S3 endpoint (AWS_ENDPOINT_URL) up and reachable?"), std::string::npos) << r.err;
}

TEST(CurlLoading, ALibcurlWithoutItsFunctionsIsOneLineNamingWhatToInstall) {
  const std::string fake_dir = std::filesystem::path(SNAPSINK_BINARY).parent_path() / "fake_curl";
  ASSERT_TRUE(std::filesystem::exists(fake_dir + "/libcurl.so.4")) << fake_dir;
  testing::TempDir state;
  std::map<std::string, std::string> env = RefusedBucketEnv();
  env["LD_LIBRARY_PATH"] = fake_dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", "s3://snapsink-loading/root"},
        std::vector<std::string>{"run", "s3://snapsink-loading/root", Events(), "--final", "--state", state.path()}}) {
    RunResult r = Snapsink(args, env);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_NE(r.err.find("libcurl.so.4 loaded has no symbol curl_global_init"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("install libcurl4"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // The local root's commands do not care.
  testing::TempDir d;
  EXPECT_EQ(Snapsink({"init", d / "root"}, {{"LD_LIBRARY_PATH", fake_dir}}).exit_code, 0);
}

}  // namespace
}  // namespace snapsink
