// snapsink serve through the binary: every answer equals `query --generation
// G` for the generation its header names while another process publishes;
// hot switch; 304, 400, 404, 500 on damage; the old pin released; SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "engine/env.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// A port that was free a moment ago (bind 0, read it back, close).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// `snapsink serve ROOT` on a free loopback port; waits (up to ~60 s, by
// count) until it answers. Retries with another port if the one picked was
// taken meanwhile.
struct Server {
  Spawned proc;
  int port = 0;
};
Server StartServe(const std::string& root, std::vector<std::string> extra = {}) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    Server s;
    s.port = FreePort();
    std::vector<std::string> args = {"serve", root, "--listen", "127.0.0.1:" + std::to_string(s.port)};
    args.insert(args.end(), extra.begin(), extra.end());
    s.proc = SpawnSnapsink(args);
    httplib::Client c("127.0.0.1", s.port);
    for (int i = 0; i < 600 && s.proc.Running(); ++i) {
      if (auto r = c.Get("/healthz"); r) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (s.proc.Running()) {
      ::kill(s.proc.pid, SIGKILL);
      s.proc.Wait();
    }
  }
  ADD_FAILURE() << "serve did not start";
  return {};
}

std::string Event(int seq, int window, const std::string& metric, const std::string& key, int value) {
  const int64_t base = 1792576800000LL;  // 2026-10-21T10:00:00Z
  return "{\"producer\":\"p\",\"seq\":" + std::to_string(seq) + ",\"ts\":" +
         std::to_string(base + window * 3600000LL + seq) + ",\"metric\":\"" + metric + "\",\"key\":\"" + key +
         "\",\"value\":" + std::to_string(value) + "}\n";
}

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    input_ = dir_ / "events.ndjson";
    ASSERT_EQ(Snapsink({"init", root_}).exit_code, 0);
  }
  // Appends events for round i and publishes them with `run --final`.
  void PublishRound(int i) {
    std::string s;
    s += Event(3 * i, i % 3, "orders", "k" + std::to_string(i % 4), i);
    s += Event(3 * i + 1, 0, "total", "", 1);
    s += Event(3 * i + 2, 1, "orders", "eu", 2);
    AppendFile(input_, s);
    RunResult r = Snapsink({"run", root_, input_, "--final", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void Stop(Server& s) {
    ::kill(s.proc.pid, SIGTERM);
    EXPECT_EQ(s.proc.Wait(), 0);
  }

  TempDir dir_;
  std::string root_, input_;
};

struct Answer {
  std::string target;  // path and query
  std::string generation;
  std::string body;
};

// The CLI arguments of a /v1/query target.
std::vector<std::string> QueryArgs(const std::string& root, const std::string& params, const std::string& g) {
  std::vector<std::string> args = {"query", root, "--generation", g};
  size_t pos = 0;
  while (pos < params.size()) {
    size_t amp = params.find('&', pos);
    if (amp == std::string::npos) amp = params.size();
    const std::string kv = params.substr(pos, amp - pos);
    const size_t eq = kv.find('=');
    args.push_back("--" + kv.substr(0, eq));
    args.push_back(kv.substr(eq + 1));
    pos = amp + 1;
  }
  return args;
}

TEST_F(ServeTest, EveryAnswerEqualsQueryAtTheGenerationItNames) {
  constexpr int kRounds = 30;
  constexpr int kClients = 4;
  PublishRound(0);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);

  const std::vector<std::string> params = {
      "format=json", "format=csv", "metric=orders&format=json", "window=2026-10-21T11:00:00Z&metric=orders&key=eu&format=json",
      "window=20261021T100000Z&format=csv", "metric=total&key=&format=json"};
  std::atomic<bool> publishing_done{false};
  std::mutex mu;
  std::vector<Answer> answers;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", server.port);
      uint64_t last = 0;
      // Bounded by count; stops early once the publisher is done.
      for (int i = 0; i < 5000 && !publishing_done; ++i) {
        const std::string& p = params[(i + t) % params.size()];
        auto r = c.Get("/v1/query?" + p);
        ASSERT_TRUE(r) << httplib::to_string(r.error());
        ASSERT_EQ(r->status, 200) << r->body;
        const std::string g = r->get_header_value("Snapsink-Generation");
        ASSERT_FALSE(g.empty());
        EXPECT_EQ(r->get_header_value("ETag"), "\"" + g + "\"");
        EXPECT_EQ(r->get_header_value("Content-Type"),
                  p.find("format=csv") != std::string::npos ? "text/csv" : "application/x-ndjson");
        const uint64_t gen = std::stoull(g);
        EXPECT_GE(gen, last) << "generations went backwards";
        last = gen;
        std::lock_guard<std::mutex> l(mu);
        answers.push_back({p, g, r->body});
      }
    });
  }
  for (int i = 1; i <= kRounds; ++i) PublishRound(i);
  publishing_done = true;
  for (auto& c : clients) c.join();

  // Hot switch: the last generation is served (within a bounded wait).
  httplib::Client c("127.0.0.1", server.port);
  std::string served;
  for (int i = 0; i < 600; ++i) {
    auto r = c.Get("/v1/query?format=json");
    ASSERT_TRUE(r);
    served = r->get_header_value("Snapsink-Generation");
    if (served == std::to_string(kRounds + 1)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(served, std::to_string(kRounds + 1));
  Stop(server);

  // Every answer equals the CLI's for the generation it names.
  ASSERT_FALSE(answers.empty());
  std::map<std::pair<std::string, std::string>, std::string> expected;
  std::set<std::string> generations_seen;
  for (const Answer& a : answers) {
    generations_seen.insert(a.generation);
    auto key = std::make_pair(a.target, a.generation);
    auto it = expected.find(key);
    if (it == expected.end()) {
      RunResult q = Snapsink(QueryArgs(root_, a.target, a.generation));
      ASSERT_EQ(q.exit_code, 0) << q.err;
      it = expected.emplace(key, q.out).first;
    }
    ASSERT_EQ(a.body, it->second) << a.target << " at generation " << a.generation;
  }
  std::printf("%zu answers over %zu generations checked\n", answers.size(), generations_seen.size());
}

TEST_F(ServeTest, NotModifiedBadRequestsNotFoundAndShutdown) {
  PublishRound(0);
  PublishRound(1);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);

  auto r = c.Get("/v1/query?metric=orders");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("ETag"), "\"2\"");
  EXPECT_EQ(r->body, Snapsink({"query", root_, "--metric", "orders", "--format", "json"}).out);

  r = c.Get("/v1/query?metric=orders", {{"If-None-Match", "\"2\""}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  EXPECT_TRUE(r->body.empty());
  r = c.Get("/v1/query?metric=orders", {{"If-None-Match", "\"1\""}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);

  r = c.Get("/v1/query?metrc=orders");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->body, "{\"error\":\"unknown parameter: metrc\"}\n");
  r = c.Get("/v1/query?window=yesterday");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("window"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("yesterday"), std::string::npos) << r->body;
  // The tool's window syntax: any instant inside a window names it.
  r = c.Get("/v1/query?window=2026-10-21T11:30:00Z&format=csv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, Snapsink({"query", root_, "--window", "2026-10-21T11:30:00Z", "--format", "csv"}).out);
  r = c.Get("/v1/query?format=table");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = c.Get("/v1/query?generation=two");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);

  r = c.Get("/v1/query?generation=99");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find("generation 99"), std::string::npos) << r->body;
  r = c.Get("/v1/query?generation=1&format=csv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Snapsink-Generation"), "1");
  EXPECT_EQ(r->body, Snapsink({"query", root_, "--generation", "1", "--format", "csv"}).out);
  r = c.Get("/v2/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  r = c.Get("/v1/generations");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, Snapsink({"inspect", root_, "generations", "--json"}).out);
  r = c.Get("/v1/windows");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, Snapsink({"inspect", root_, "windows", "--json"}).out);
  r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.Get("/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, Snapsink({"status", root_, "--json"}).out);

  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const std::string root_metrics = Snapsink({"metrics", root_}).out;
  ASSERT_FALSE(root_metrics.empty());
  EXPECT_EQ(r->body.substr(0, root_metrics.size()), root_metrics);
  EXPECT_NE(r->body.find("snapsink_http_requests_total{path=\"/v1/query\",code=\"304\"} 1"), std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("snapsink_http_requests_total{path=\"/v1/query\",code=\"400\"} 4"), std::string::npos);
  EXPECT_NE(r->body.find("snapsink_served_generation 2"), std::string::npos);
  EXPECT_NE(r->body.find("snapsink_http_request_duration_seconds_bucket{le=\"+Inf\"}"), std::string::npos);

  ::kill(server.proc.pid, SIGTERM);
  EXPECT_EQ(server.proc.Wait(), 0);
}

TEST_F(ServeTest, DamagedWindowIs500NamingTheFileOthersStillServed) {
  PublishRound(0);  // windows 10:00 and 11:00, v1 each
  const std::string data = root_ + "/snapshots/20261021T110000Z/v1/data";
  std::string bytes = ReadFile(data);
  ASSERT_GT(bytes.size(), 40u);
  bytes[bytes.size() / 2] ^= 0x40;
  WriteFile(data, bytes);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  auto r = c.Get("/v1/query?window=2026-10-21T11:00:00Z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("20261021T110000Z/v1/data"), std::string::npos) << r->body;
  r = c.Get("/v1/query?window=2026-10-21T10:00:00Z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->body, Snapsink({"query", root_, "--window", "2026-10-21T10:00:00Z", "--format", "json"}).out);
  // Not healthy while the current generation does not verify (bounded wait
  // for the watcher's first read of it).
  for (int i = 0; i < 600; ++i) {
    r = c.Get("/healthz");
    ASSERT_TRUE(r);
    if (r->body.find("not verified yet") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("20261021T110000Z/v1/data"), std::string::npos) << r->body;
  Stop(server);
}

// The old generation's pin goes once the server has switched: gc collects it.
TEST_F(ServeTest, SwitchReleasesTheOldPinForGc) {
  PublishRound(0);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  ASSERT_EQ(Snapsink({"gc", root_, "--keep-generations", "1"}).exit_code, 0);
  EXPECT_TRUE(Env::Default()->FileExists(root_ + "/manifests/1")) << "gc removed a pinned generation";
  PublishRound(1);
  PublishRound(2);
  httplib::Client c("127.0.0.1", server.port);
  std::string served;
  for (int i = 0; i < 600 && served != "3"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto r = c.Get("/v1/query");
    ASSERT_TRUE(r);
    served = r->get_header_value("Snapsink-Generation");
  }
  ASSERT_EQ(served, "3");
  ASSERT_EQ(Snapsink({"gc", root_, "--keep-generations", "1"}).exit_code, 0);
  EXPECT_FALSE(Env::Default()->FileExists(root_ + "/manifests/1")) << "the server still pins generation 1";
  EXPECT_TRUE(Env::Default()->FileExists(root_ + "/manifests/3"));
  Stop(server);
}

}  // namespace
}  // namespace snapsink::testing
