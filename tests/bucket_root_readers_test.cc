// Readers of a root in an S3 bucket on other machines, through the snapsink
// binary, against the local RGW (tests/rgw.sh; skipped, naming why, where it
// is missing): query's local cache of objects (fewer GETs, bounded, never
// trusting an entry a crashed reader left), serve switching to a new
// generation by a conditional GET of CURRENT, gc's --min-age, and the
// endpoint and keys given by flags with the secret never shown.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/s3/s3_client.h"
#include "tests/bucket_root_fixture.h"
#include "tests/rgw_server.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

using testing::RunResult;
using testing::Snapsink;

std::string Events() { return std::string(testing::SourceDirPath()) + "/sample/events.ndjson"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Lines of a request log (SNAPSINK_S3_REQUEST_LOG) that start with method.
size_t Requests(const std::string& log, const std::string& method) {
  std::istringstream in(ReadAll(log));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.rfind(method + " ", 0) == 0;
  return n;
}

// GETs answered with a body (200, 206), not 304, of objects but CURRENT
// (which a new process reads whole once).
size_t BodyGets(const std::string& log) {
  std::istringstream in(ReadAll(log));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    const bool body = line.size() > 4 && (line.compare(line.size() - 4, 4, " 200") == 0 ||
                                          line.compare(line.size() - 4, 4, " 206") == 0);
    n += line.rfind("GET ", 0) == 0 && body && line.find("/CURRENT ") == std::string::npos;
  }
  return n;
}

size_t Containing(const std::string& log, const std::string& what) {
  std::istringstream in(ReadAll(log));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}

// Lines of a request log holding `what` and ending with `end` (the answer's
// status, after the attempt's milliseconds).
size_t Ending(const std::string& log, const std::string& what, const std::string& end) {
  std::istringstream in(ReadAll(log));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    n += line.find(what) != std::string::npos && line.size() >= end.size() &&
         line.compare(line.size() - end.size(), end.size(), end) == 0;
  }
  return n;
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.file_size();
  return n;
}

class BucketRootReaders : public testing::BucketRootTest {
 protected:
  std::vector<std::string> Keys(const std::string& prefix) {
    std::vector<S3ObjectInfo> objects;
    EXPECT_TRUE(client_->List(bucket_, prefix + "/", "", &objects, nullptr).ok());
    std::vector<std::string> keys;
    for (const auto& o : objects) keys.push_back(o.key.substr(prefix.size() + 1));
    return keys;
  }
  bool Has(const std::string& prefix, const std::string& key) {
    for (const std::string& k : Keys(prefix)) {
      if (k == key) return true;
    }
    return false;
  }
  std::string LocalQuery(const std::vector<std::string>& files) {
    testing::TempDir dir;
    const std::string root = dir.path() + "/root";
    EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
    for (const std::string& f : files) EXPECT_EQ(Snapsink({"run", root, f, "--final"}).exit_code, 0);
    RunResult q = Snapsink({"query", root});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    return q.out;
  }
  // A bucket root at prefix holding the sample events, published.
  void Publish(const std::string& prefix, const std::string& state) {
    ASSERT_EQ(Run({"init", Root(prefix)}).exit_code, 0);
    RunResult r = Run({"run", Root(prefix), Events(), "--final", "--state", state});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
};

// A second query with the same --cache-dir asks the bucket for CURRENT only
// (a conditional GET) and reads no block; a cache smaller than the data
// stays within its size and still answers right.
TEST_F(BucketRootReaders, ASecondQueryIsServedFromTheCacheWithFarFewerGets) {
  testing::TempDir dir;
  Publish("orders", dir.path() + "/state");
  const std::string root = Root("orders"), cache = dir.path() + "/cache", log1 = dir.path() + "/log1",
                    log2 = dir.path() + "/log2";
  const std::string want = LocalQuery({Events()});
  RunResult q1 = Run({"query", root, "--cache-dir", cache}, {{"SNAPSINK_S3_REQUEST_LOG", log1}});
  ASSERT_EQ(q1.exit_code, 0) << q1.err;
  EXPECT_EQ(q1.out, want);
  RunResult q2 = Run({"query", root, "--cache-dir", cache}, {{"SNAPSINK_S3_REQUEST_LOG", log2}});
  ASSERT_EQ(q2.exit_code, 0) << q2.err;
  EXPECT_EQ(q2.out, want);
  const size_t first = Requests(log1, "GET") + Requests(log1, "HEAD");
  const size_t second = Requests(log2, "GET") + Requests(log2, "HEAD");
  std::printf("requests: cold cache %zu (%zu GETs with a body, %zu ranged), warm cache %zu (%zu, %zu)\n", first,
              BodyGets(log1), Containing(log1, "bytes="), second, BodyGets(log2), Containing(log2, "bytes="));
  EXPECT_GT(Containing(log1, "bytes="), 0u);
  EXPECT_EQ(Containing(log2, "bytes="), 0u) << ReadAll(log2);  // every block from the cache
  EXPECT_EQ(BodyGets(log2), 0u) << ReadAll(log2);  // objects read whole: confirmed by a 304
  EXPECT_LE(second * 2, first) << ReadAll(log2);
  EXPECT_EQ(ReadAll(log1).find(config_.secret_access_key), std::string::npos);

  // A cache of 1 KiB, smaller than what a query reads (about 4 KiB): right
  // answers, the cache within its size.
  const std::string small = dir.path() + "/small", log3 = dir.path() + "/log3";
  for (int i = 0; i < 2; ++i) {
    RunResult q = Run({"query", root, "--cache-dir", small, "--cache-size", "1K"}, {{"SNAPSINK_S3_REQUEST_LOG", log3}});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(q.out, want);
    EXPECT_LE(DirBytes(small), 1024u);
  }
  EXPECT_GT(Containing(log3, "bytes="), Containing(log1, "bytes="));  // evicted blocks read again

  RunResult bad = Run({"query", root, "--cache-size", "lots"});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("--cache-size lots: expected a size such as 512M or 1G"), std::string::npos) << bad.err;
}

// A root removed and made again at the same prefix from other events: its
// objects have the old names and other bytes; a query through the cache of
// the old root answers the new rows, and an object replaced by as many other
// bytes is read anew (entries are named by the object's ETag).
TEST_F(BucketRootReaders, ARootMadeAgainAtTheSamePrefixIsNotAnsweredFromTheOldCache) {
  testing::TempDir dir;
  Publish("orders", dir.path() + "/state");
  const std::string root = Root("orders"), cache = dir.path() + "/cache";
  ASSERT_EQ(Run({"query", root, "--cache-dir", cache}).out, LocalQuery({Events()}));
  for (const std::string& k : Keys("orders")) ASSERT_TRUE(client_->Delete(bucket_, "orders/" + k).ok());
  std::ifstream in(Events());
  std::ofstream part(dir.path() + "/part.ndjson");
  std::string line;
  for (int n = 0; std::getline(in, line); ++n) {
    if (n % 2 == 0) part << line << "\n";
  }
  part.close();
  ASSERT_EQ(Run({"init", root}).exit_code, 0);
  RunResult r = Run({"run", root, dir.path() + "/part.ndjson", "--final", "--state", dir.path() + "/state2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string want = LocalQuery({dir.path() + "/part.ndjson"});
  ASSERT_NE(want, LocalQuery({Events()}));
  RunResult q = Run({"query", root, "--cache-dir", cache});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, want);

  // A snapshot's data replaced under its name by as many other bytes (what
  // no writer does): the cache, warm with its blocks, does not hide it; the
  // reader reads the object the bucket holds now and finds the damage.
  std::string data_key;
  for (const std::string& k : Keys("orders")) {
    if (k.size() > 5 && k.compare(k.size() - 5, 5, "/data") == 0) data_key = "orders/" + k;
  }
  ASSERT_FALSE(data_key.empty());
  std::string bytes;
  ASSERT_TRUE(client_->Get(bucket_, data_key, &bytes, nullptr).ok());
  for (size_t i = 0; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x21);
  ASSERT_TRUE(client_->Delete(bucket_, data_key).ok());
  S3PutOutcome outcome;
  ASSERT_TRUE(client_->PutCreateOnly(bucket_, data_key, bytes, &outcome, nullptr).ok());
  RunResult damaged = Run({"query", root, "--cache-dir", cache});
  EXPECT_EQ(damaged.exit_code, 10) << damaged.out << damaged.err;
}

// A reader killed while writing a cache entry leaves a temporary file, never
// an entry; an entry damaged afterwards (a byte flipped, a file cut short)
// fails its check and is read from the bucket again: the answers stay right.
TEST_F(BucketRootReaders, ACacheACrashedReaderLeftIsNeverTrustedHalfWritten) {
  testing::TempDir dir;
  Publish("orders", dir.path() + "/state");
  const std::string root = Root("orders"), cache = dir.path() + "/cache";
  const std::string want = LocalQuery({Events()});
  RunResult crashed = Run({"query", root, "--cache-dir", cache},
                          {{"SNAPSINK_CRASH_AT", "cache.before_rename"}, {"SNAPSINK_CRASH_HIT", "3"}});
  ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
  size_t tmp = 0, entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache)) {
    (e.path().filename().string().find(".tmp.") != std::string::npos ? tmp : entries) += 1;
  }
  EXPECT_EQ(tmp, 1u);
  EXPECT_EQ(entries, 2u);
  RunResult q = Run({"query", root, "--cache-dir", cache});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, want);
  for (const auto& e : std::filesystem::directory_iterator(cache)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left by a dead reader: removed";
  }
  // Damage every entry: flip its last byte, and cut every third in half.
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache)) {
    std::string bytes = ReadAll(e.path().string());
    ASSERT_FALSE(bytes.empty());
    if (n++ % 3 == 0) {
      bytes.resize(bytes.size() / 2);
    } else {
      bytes.back() = static_cast<char>(bytes.back() ^ 0x5a);
    }
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << bytes;
  }
  const std::string log = dir.path() + "/log";
  RunResult again = Run({"query", root, "--cache-dir", cache}, {{"SNAPSINK_S3_REQUEST_LOG", log}});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, want);
  EXPECT_GT(Containing(log, "bytes="), 0u) << "damaged blocks are read from the bucket again";
  RunResult warm = Run({"query", root, "--cache-dir", cache});
  EXPECT_EQ(warm.out, want);
}

// serve on a bucket root notices each new CURRENT by a conditional GET every
// --poll (a 304 while nothing changed) and switches whole: a writer
// publishes three more generations while a client queries all along; every
// answer is exactly the rows of the generation it names, and each new one is
// served within a few polls.
TEST_F(BucketRootReaders, ServeSwitchesToEachNewGenerationWithinAFewPollsAndNeverAMix) {
  testing::TempDir dir;
  const std::string root = Root("orders"), state = dir.path() + "/state", input = dir.path() + "/in.ndjson",
                    log = dir.path() + "/log";
  ASSERT_EQ(Run({"init", root}).exit_code, 0);
  std::map<uint64_t, std::string> want;  // generation -> `query --format json` of it
  std::chrono::steady_clock::time_point published;  // when the last publish's run ended
  auto publish = [&](int i) {
    std::string lines = testing::Event(3 * i, i % 3, "orders", "k" + std::to_string(i % 4), i) +
                        testing::Event(3 * i + 1, 0, "total", "", 1) + testing::Event(3 * i + 2, 1, "orders", "eu", 2);
    std::ofstream(input, std::ios::app) << lines;
    RunResult r = Run({"run", root, input, "--final", "--quiet", "--state", state});
    published = std::chrono::steady_clock::now();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    RunResult q = Run({"query", root, "--format", "json", "--generation", std::to_string(i + 1)});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    want[static_cast<uint64_t>(i + 1)] = q.out;
  };
  publish(0);
  // StartServe passes this process's environment on: the variables for the server, then as they were.
  std::map<std::string, std::string> env = env_;
  env["SNAPSINK_S3_REQUEST_LOG"] = log;
  std::map<std::string, std::optional<std::string>> before;
  for (const auto& [k, v] : env) {
    const char* old = std::getenv(k.c_str());
    before[k] = old == nullptr ? std::nullopt : std::optional<std::string>(old);
    ::setenv(k.c_str(), v.c_str(), 1);
  }
  testing::Server server = testing::StartServe(root, {"--poll", "100ms", "--cache-dir", dir.path() + "/cache"});
  for (const auto& [k, v] : before) v ? ::setenv(k.c_str(), v->c_str(), 1) : ::unsetenv(k.c_str());
  ASSERT_NE(server.port, 0);

  std::atomic<bool> done{false};
  std::mutex mu;
  std::vector<std::pair<uint64_t, std::string>> seen;  // (Snapsink-Generation, body)
  std::atomic<uint64_t> newest{0};
  std::thread client([&] {
    httplib::Client c("127.0.0.1", server.port);
    while (!done) {
      auto r = c.Get("/v1/query");
      if (!r || r->status != 200) continue;
      const uint64_t g = std::stoull(r->get_header_value("Snapsink-Generation"));
      newest = std::max<uint64_t>(newest, g);
      std::lock_guard<std::mutex> l(mu);
      seen.emplace_back(g, r->body);
    }
  });
  std::vector<double> switch_ms;
  for (int i = 1; i <= 3; ++i) {
    publish(i);
    const auto start = published;
    while (newest < static_cast<uint64_t>(i + 1) && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    switch_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    EXPECT_EQ(newest, static_cast<uint64_t>(i + 1)) << "generation " << i + 1 << " not served";
  }
  done = true;
  client.join();
  for (double ms : switch_ms) {
    std::printf("switched after %.0f ms\n", ms);
    EXPECT_LT(ms, 5000) << "more than a few polls of 100 ms";
  }
  ASSERT_FALSE(seen.empty());
  std::map<uint64_t, size_t> per_generation;
  for (const auto& [g, body] : seen) {
    ++per_generation[g];
    ASSERT_EQ(want.count(g), 1u) << g;
    EXPECT_EQ(body, want[g]) << "generation " << g << ": a mixed or half answer";
  }
  EXPECT_EQ(per_generation.count(4), 1u);
  // CURRENT was read by conditional GETs, answered 304 while it did not change.
  EXPECT_GT(Ending(log, "/CURRENT if-none-match ", " 304"), 3u) << ReadAll(log);
  EXPECT_EQ(ReadAll(log).find(config_.secret_access_key), std::string::npos);
  // Whether a prefix holds anything is one listing request, not one per object under it.
  EXPECT_LE(Containing(log, "list-type=2"), 12u) << ReadAll(log);
}

// The value of the one sample of family name in a Prometheus text, or -1.
double Sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// serve's /metrics shows its reader cache (--cache-dir): hits and misses
// move as queries read through it, the bytes held are the entry files in
// the directory, the capacity is --cache-size, and a cache smaller than what
// a query reads evicts and stays within it. A local root has no cache
// families.
TEST_F(BucketRootReaders, ServeMetricsShowTheCacheHitsMissesBytesAndEvictions) {
  testing::TempDir dir;
  const std::string root = Root("orders");
  Publish("orders", dir.path() + "/state");
  const std::string want = Run({"query", root, "--format", "json"}).out;
  auto serve = [&](const std::vector<std::string>& extra) {
    std::map<std::string, std::optional<std::string>> before;
    for (const auto& [k, v] : env_) {
      const char* old = std::getenv(k.c_str());
      before[k] = old == nullptr ? std::nullopt : std::optional<std::string>(old);
      ::setenv(k.c_str(), v.c_str(), 1);
    }
    testing::Server server = testing::StartServe(root, extra);
    for (const auto& [k, v] : before) v ? ::setenv(k.c_str(), v->c_str(), 1) : ::unsetenv(k.c_str());
    return server;
  };
  auto get = [](const testing::Server& server, const std::string& path) {
    httplib::Client c("127.0.0.1", server.port);
    auto r = c.Get(path);
    EXPECT_TRUE(r && r->status == 200) << path;
    return r ? r->body : std::string();
  };
  {
    const std::string cache = dir.path() + "/cache";
    testing::Server server = serve({"--cache-dir", cache, "--cache-size", "64M"});
    ASSERT_NE(server.port, 0);
    EXPECT_EQ(get(server, "/v1/query"), want);
    const std::string m1 = get(server, "/metrics");
    EXPECT_EQ(get(server, "/v1/query"), want);
    const std::string m2 = get(server, "/metrics");
    EXPECT_GT(Sample(m1, "snapsink_cache_misses_total"), 0) << m1;
    EXPECT_GT(Sample(m2, "snapsink_cache_hits_total"), Sample(m1, "snapsink_cache_hits_total")) << m1 << m2;
    EXPECT_EQ(Sample(m2, "snapsink_cache_misses_total"), Sample(m1, "snapsink_cache_misses_total")) << m1 << m2;
    EXPECT_EQ(Sample(m2, "snapsink_cache_bytes"), static_cast<double>(DirBytes(cache))) << m2;
    EXPECT_GT(Sample(m2, "snapsink_cache_bytes"), 0) << m2;
    EXPECT_EQ(Sample(m2, "snapsink_cache_capacity_bytes"), 64.0 * 1024 * 1024) << m2;
    EXPECT_EQ(Sample(m2, "snapsink_cache_evictions_total"), 0) << m2;
    EXPECT_NE(m2.find("# TYPE snapsink_cache_hits_total counter"), std::string::npos) << m2;
    EXPECT_NE(m2.find("# TYPE snapsink_cache_bytes gauge"), std::string::npos) << m2;
  }
  {
    const std::string small = dir.path() + "/small";
    testing::Server server = serve({"--cache-dir", small, "--cache-size", "1K"});
    ASSERT_NE(server.port, 0);
    EXPECT_EQ(get(server, "/v1/query"), want);
    const std::string m = get(server, "/metrics");
    EXPECT_GT(Sample(m, "snapsink_cache_evictions_total"), 0) << m;
    EXPECT_LE(Sample(m, "snapsink_cache_bytes"), 1024) << m;
    EXPECT_EQ(Sample(m, "snapsink_cache_bytes"), static_cast<double>(DirBytes(small))) << m;
  }
  RunResult local = Run({"metrics", root});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(local.out.find("snapsink_cache_"), std::string::npos) << "metrics reads through no cache";
}

// gc on a bucket root keeps, by default, every generation replaced and every
// object written less than an hour ago (readers on other machines, uploads
// in flight); --min-age 0 removes them. Only the published rows' keepers
// stay either way, and the rows do not change.
TEST_F(BucketRootReaders, GcKeepsWhatIsYoungerThanMinAgeAndMinAgeZeroRemovesIt) {
  testing::TempDir dir;
  const std::string root = Root("orders"), state = dir.path() + "/state";
  std::ifstream in(Events());
  std::ofstream first(dir.path() + "/first.ndjson"), second(dir.path() + "/second.ndjson");
  std::string line;
  for (int n = 0; std::getline(in, line); ++n) (n % 3 == 0 ? second : first) << line << "\n";
  first.close();
  second.close();
  ASSERT_EQ(Run({"init", root}).exit_code, 0);
  ASSERT_EQ(Run({"run", root, dir.path() + "/first.ndjson", "--final", "--state", state}).exit_code, 0);
  ASSERT_EQ(Run({"run", root, dir.path() + "/second.ndjson", "--final", "--state", state}).exit_code, 0);
  // An upload in flight: a snapshot no generation names (yet).
  std::string orphan;
  for (const std::string& k : Keys("orders")) {
    std::smatch m;
    if (std::regex_match(k, m, std::regex("snapshots/([^/]+)/v[0-9]+/(.*)"))) {
      orphan = "snapshots/" + m[1].str() + "/v999/" + m[2].str();
      break;
    }
  }
  ASSERT_FALSE(orphan.empty());
  S3PutOutcome outcome;
  ASSERT_TRUE(client_->PutCreateOnly(bucket_, "orders/" + orphan, "in flight", &outcome, nullptr).ok());
  const std::string rows = Run({"query", root}).out;

  RunResult kept = Run({"gc", root, "--keep-generations", "1", "--state", state});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_NE(kept.out.find("kept generation 1: replaced less than --min-age ago"), std::string::npos) << kept.out;
  EXPECT_EQ(kept.out.find("removed"), std::string::npos) << kept.out;
  EXPECT_TRUE(Has("orders", "manifests/1"));
  EXPECT_TRUE(Has("orders", orphan));

  RunResult hour = Run({"gc", root, "--keep-generations", "1", "--min-age", "1h", "--state", state});
  ASSERT_EQ(hour.exit_code, 0) << hour.err;
  EXPECT_TRUE(Has("orders", "manifests/1"));

  RunResult now = Run({"gc", root, "--keep-generations", "1", "--min-age", "0", "--state", state});
  ASSERT_EQ(now.exit_code, 0) << now.err;
  EXPECT_NE(now.out.find("removed generation 1"), std::string::npos) << now.out;
  EXPECT_NE(now.out.find(" v999"), std::string::npos) << now.out;
  EXPECT_FALSE(Has("orders", "manifests/1"));
  EXPECT_FALSE(Has("orders", orphan));
  EXPECT_TRUE(Has("orders", "manifests/2"));
  EXPECT_EQ(Run({"query", root}).out, rows);
  RunResult v = Run({"verify", root, "--state", state});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  RunResult local = Run({"gc", dir.path() + "/nowhere", "--min-age", "0"});
  EXPECT_EQ(local.exit_code, 1);
  EXPECT_NE(local.err.find("--min-age: goes with a root in a bucket"), std::string::npos) << local.err;
  RunResult bad = Run({"gc", root, "--min-age", "soon", "--state", state});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--min-age soon: expected a duration"), std::string::npos) << bad.err;
}

// --endpoint, --region, --access-key-id and --secret-access-key-file stand in
// for the AWS_* variables; a secret never shows: not in an error (refused
// keys, an unreachable endpoint), not in serve's output, not in the request
// log.
TEST_F(BucketRootReaders, FlagsStandInForTheVariablesAndTheSecretNeverShows) {
  testing::TempDir dir;
  const std::string root = Root("orders"), key_file = dir.path() + "/secret", wrong_file = dir.path() + "/wrong",
                    log = dir.path() + "/log";
  std::ofstream(key_file) << config_.secret_access_key << "\n";
  const std::string wrong = "wrong-secret-1f2e3d4c5b6a";
  std::ofstream(wrong_file) << wrong << "\n";
  const std::map<std::string, std::string> no_vars = {{"AWS_ENDPOINT_URL", ""},
                                                      {"AWS_REGION", ""},
                                                      {"AWS_ACCESS_KEY_ID", ""},
                                                      {"AWS_SECRET_ACCESS_KEY", ""},
                                                      {"SNAPSINK_S3_REQUEST_LOG", log}};
  const std::vector<std::string> flags = {"--endpoint", config_.endpoint, "--region", config_.region,
                                          "--access-key-id", config_.access_key_id, "--secret-access-key-file",
                                          key_file};
  auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  RunResult init = Run(with({"init", root}, flags), no_vars);
  ASSERT_EQ(init.exit_code, 0) << init.err;
  RunResult run = Run(with({"run", root, Events(), "--final", "--state", dir.path() + "/state"}, flags), no_vars);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  RunResult q = Run(with({"query", root, "--cache-dir", dir.path() + "/cache"}, flags), no_vars);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, LocalQuery({Events()}));
  // The flags win over the variables.
  RunResult over = Run(with({"status", root}, flags), {{"AWS_ENDPOINT_URL", "http://127.0.0.1:1"}});
  EXPECT_EQ(over.exit_code, 0) << over.err;

  // Keys refused: named, the wrong secret not shown (nor the right one: Run checks).
  for (const auto& args : {with({"query", root}, {"--secret-access-key-file", wrong_file}),
                           with({"status", root}, {"--secret-access-key-file", wrong_file}),
                           with({"serve", root, "--listen", "127.0.0.1:0"}, {"--secret-access-key-file", wrong_file})}) {
    RunResult r = Run(args, {{"SNAPSINK_S3_REQUEST_LOG", log}});
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.out << r.err;
    EXPECT_EQ((r.out + r.err).find(wrong), std::string::npos) << r.out << r.err;
    EXPECT_NE(r.err.find("the credentials were refused"), std::string::npos) << r.err;
  }
  // An endpoint that does not answer, a secret given by the variable: not in
  // the error (retried for 2 s, not the minute a user's run waits).
  RunResult down = Run({"query", root, "--endpoint", "http://127.0.0.1:1"},
                       {{"AWS_SECRET_ACCESS_KEY", wrong}, {"SNAPSINK_S3_RETRY_SECONDS", "2"}});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_EQ(down.err.find(wrong), std::string::npos) << down.err;
  EXPECT_NE(down.err.find("http://127.0.0.1:1"), std::string::npos) << down.err;
  const std::string logged = ReadAll(log);
  EXPECT_GT(Requests(log, "GET"), 0u);
  EXPECT_EQ(logged.find(wrong), std::string::npos);
  EXPECT_EQ(logged.find(config_.secret_access_key), std::string::npos);

  // Bad flags: one line naming what to fix.
  RunResult missing = Run({"query", root, "--secret-access-key-file", dir.path() + "/none"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--secret-access-key-file " + dir.path() + "/none: cannot be read"), std::string::npos)
      << missing.err;
  RunResult local = Run({"query", dir.path() + "/local", "--endpoint", config_.endpoint});
  EXPECT_EQ(local.exit_code, 1);
  EXPECT_NE(local.err.find("--endpoint: goes with a root in a bucket (s3://BUCKET/PREFIX)"), std::string::npos)
      << local.err;
}

}  // namespace
}  // namespace snapsink
