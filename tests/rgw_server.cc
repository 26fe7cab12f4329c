#include "tests/rgw_server.h"

#include <unistd.h>

#include <atomic>
#include <boost/filesystem.hpp>
#include <cstdlib>
#include <fstream>
#include <map>

#include "engine/s3/s3_client.h"
#include "tests/test_util.h"

namespace snapsink::testing {

namespace {

// "export NAME=VALUE" lines of the env file tests/rgw.sh writes.
std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> vars;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) != 0) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    vars[line.substr(7, eq - 7)] = line.substr(eq + 1);
  }
  return vars;
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "/usr/bin" : path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    if (access((dirs.substr(start, end - start) + "/" + program).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool RgwConfig(S3Config* out, std::string* why_not) {
  S3Config c;
  std::string source;
  if (std::getenv("AWS_ENDPOINT_URL") != nullptr) {
    const Status st = S3Config::FromEnvironment(&c);
    if (!st.ok()) {
      *why_not = "the S3 server of the environment is unusable: " + st.ToString();
      return false;
    }
    source = "AWS_ENDPOINT_URL";
  } else {
    const std::string dir = boost::filesystem::path(SNAPSINK_BINARY).parent_path().string() + "/rgw";
    const auto vars = ReadEnvFile(dir + "/env");
    if (vars.empty()) {
      *why_not = OnPath("radosgw")
                     ? "no S3 server started: ctest starts one (fixture rgw), or run tests/rgw.sh start " + dir
                     : "radosgw is not installed (./install-deps.sh installs radosgw ceph-mon ceph-osd ceph-common): "
                       "the bucket tests need a local S3 server";
      return false;
    }
    c.endpoint = vars.count("AWS_ENDPOINT_URL") ? vars.at("AWS_ENDPOINT_URL") : "";
    c.region = vars.count("AWS_REGION") ? vars.at("AWS_REGION") : "us-east-1";
    c.access_key_id = vars.count("AWS_ACCESS_KEY_ID") ? vars.at("AWS_ACCESS_KEY_ID") : "";
    c.secret_access_key = vars.count("AWS_SECRET_ACCESS_KEY") ? vars.at("AWS_SECRET_ACCESS_KEY") : "";
    source = dir + "/env";
  }
  c.max_attempts = 2;
  S3Client probe(c);
  std::vector<S3ObjectInfo> none;
  const Status st = probe.List("snapsink-probe-" + std::to_string(getpid()), "", "", &none, nullptr, 1);
  // Only an unreachable server is a reason to skip; any answer (a missing
  // bucket, or a refused signature, which then fails the tests) is a server.
  if (st.IsIOError()) {
    *why_not = "the S3 server of " + source + " does not answer (" + st.ToString() +
               "): start it with tests/rgw.sh start DIR";
    return false;
  }
  c.max_attempts = S3Config().max_attempts;
  *out = std::move(c);
  return true;
}

std::string RgwDir() {
  if (std::getenv("AWS_ENDPOINT_URL") != nullptr) return "";
  const std::string dir = boost::filesystem::path(SNAPSINK_BINARY).parent_path().string() + "/rgw";
  return access((dir + "/rgw.pid").c_str(), R_OK) == 0 ? dir : "";
}

bool RgwGateway(const std::string& command) {
  const std::string dir = RgwDir();
  if (dir.empty()) return false;
  const std::string cmd = std::string(SourceDirPath()) + "/tests/rgw.sh " + command + " " + dir + " >/dev/null";
  return std::system(cmd.c_str()) == 0;
}

std::string FreshBucketName() {
  static std::atomic<int> n{0};
  return "snapsink-test-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

}  // namespace snapsink::testing
