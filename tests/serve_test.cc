// snapsink serve through the binary: every answer equals `query --generation
// G` for the generation its header names while another process publishes;
// hot switch; each endpoint against the CLI, and 400/404 (a table of cases);
// 304; 500 on damage; the old pin released; SIGTERM. Limits and timeouts:
// serve_limits_test.cc.
#include <signal.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "engine/env.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

class ServeTest : public ServeFixture {};

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

// One request to a server over a root with generations 1 and 2, and what it
// must answer: `status`, and a body equal to the CLI's output for `cli`
// (ROOT replaced by the root), or exactly `body`, or holding each of
// `contains`.
struct AnswerCase {
  std::string name;
  std::string target;
  int status = 200;
  std::vector<std::string> cli;
  std::string body;
  std::vector<std::string> contains;
  std::string generation;  // the Snapsink-Generation header, when set
};

// Test names and failure messages show the case's name and target.
void PrintTo(const AnswerCase& c, std::ostream* os) { *os << c.name << " " << c.target; }

AnswerCase Cli(std::string name, std::string target, std::vector<std::string> cli, std::string generation = "") {
  AnswerCase c;
  c.name = std::move(name);
  c.target = std::move(target);
  c.cli = std::move(cli);
  c.generation = std::move(generation);
  return c;
}
AnswerCase Exact(std::string name, std::string target, int status, std::string body) {
  AnswerCase c;
  c.name = std::move(name);
  c.target = std::move(target);
  c.status = status;
  c.body = std::move(body);
  return c;
}
AnswerCase Contains(std::string name, std::string target, int status, std::vector<std::string> parts) {
  AnswerCase c;
  c.name = std::move(name);
  c.target = std::move(target);
  c.status = status;
  c.contains = std::move(parts);
  return c;
}

class ServeAnswerTest : public ::testing::TestWithParam<AnswerCase> {
 protected:
  // One root and one server for the whole suite: read-only requests.
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    root_ = new std::string(*dir_ / "root");
    const std::string input = *dir_ / "events.ndjson";
    ASSERT_EQ(Snapsink({"init", *root_}).exit_code, 0);
    for (int i = 0; i < 2; ++i) {
      AppendFile(input, Event(3 * i, i % 3, "orders", "k" + std::to_string(i % 4), i) + Event(3 * i + 1, 0, "total", "", 1) +
                            Event(3 * i + 2, 1, "orders", "eu", 2));
      ASSERT_EQ(Snapsink({"run", *root_, input, "--final", "--quiet"}).exit_code, 0);
    }
    server_ = new Server(StartServe(*root_));
  }
  static void TearDownTestSuite() {
    if (server_->port > 0) {
      ::kill(server_->proc.pid, SIGTERM);
      EXPECT_EQ(server_->proc.Wait(), 0);
    }
    delete server_;
    delete root_;
    delete dir_;
  }
  static TempDir* dir_;
  static std::string* root_;
  static Server* server_;
};
TempDir* ServeAnswerTest::dir_ = nullptr;
std::string* ServeAnswerTest::root_ = nullptr;
Server* ServeAnswerTest::server_ = nullptr;

TEST_P(ServeAnswerTest, AnswersAsTheCliDoes) {
  const AnswerCase& c = GetParam();
  ASSERT_GT(server_->port, 0);
  httplib::Client client("127.0.0.1", server_->port);
  auto r = client.Get(c.target);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, c.status) << r->body;
  if (!c.cli.empty()) {
    std::vector<std::string> args = c.cli;
    for (std::string& a : args) {
      if (a == "ROOT") a = *root_;
    }
    RunResult want = Snapsink(args);
    ASSERT_EQ(want.exit_code, 0) << want.err;
    EXPECT_EQ(r->body, want.out);
  }
  if (!c.body.empty()) {
    EXPECT_EQ(r->body, c.body);
  }
  for (const std::string& part : c.contains) {
    EXPECT_NE(r->body.find(part), std::string::npos) << r->body;
  }
  if (!c.generation.empty()) {
    EXPECT_EQ(r->get_header_value("Snapsink-Generation"), c.generation);
  }
  if (r->status != 200) {
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Serve, ServeAnswerTest,
    ::testing::Values(
        Cli("QueryMetric", "/v1/query?metric=orders", {"query", "ROOT", "--metric", "orders", "--format", "json"}, "2"),
        // The tool's window syntax: any instant inside a window names it.
        Cli("QueryInstantInsideWindowCsv", "/v1/query?window=2026-10-21T11:30:00Z&format=csv",
            {"query", "ROOT", "--window", "2026-10-21T11:30:00Z", "--format", "csv"}),
        Cli("QueryOlderGeneration", "/v1/query?generation=1&format=csv",
            {"query", "ROOT", "--generation", "1", "--format", "csv"}, "1"),
        Cli("Generations", "/v1/generations", {"inspect", "ROOT", "generations", "--json"}),
        Cli("Windows", "/v1/windows", {"inspect", "ROOT", "windows", "--json"}),
        Cli("Status", "/v1/status", {"status", "ROOT", "--json"}),
        Exact("Healthz", "/healthz", 200, "{\"generation\":2,\"ok\":true}\n"),
        Exact("UnknownParameter", "/v1/query?metrc=orders", 400, "{\"error\":\"unknown parameter: metrc\"}\n"),
        Contains("BadWindow", "/v1/query?window=yesterday", 400, {"window", "yesterday"}),
        Contains("BadFormat", "/v1/query?format=table", 400, {"format", "table"}),
        Contains("BadGeneration", "/v1/query?generation=two", 400, {"generation", "two"}),
        Contains("UnknownGeneration", "/v1/query?generation=99", 404, {"generation 99"}),
        Exact("UnknownEndpoint", "/v2/nothing", 404, "{\"error\":\"no such endpoint: /v2/nothing\"}\n"),
        // As `query --generation 0` (cli_operator_test): generations start at 1.
        Exact("GenerationZero", "/v1/query?generation=0", 400,
              "{\"error\":\"generation: must be at least 1, got 0\"}\n"),
        Exact("GenerationNotANumber", "/v1/query?generation=two", 400,
              "{\"error\":\"generation: expected a whole number of at least 1, got 'two'\"}\n"),
        Exact("RepeatedParameter", "/v1/query?metric=orders&metric=visits", 400,
              "{\"error\":\"metric: given more than once (one value per parameter)\"}\n"),
        // An unescaped '+' of an offset decodes to a space: read as '+'.
        Cli("WindowOffsetPlusUnescaped", "/v1/query?window=2026-10-21T13:30:00+02:00&format=csv",
            {"query", "ROOT", "--window", "2026-10-21T13:30:00+02:00", "--format", "csv"}),
        Cli("WindowOffsetPlusEscaped", "/v1/query?window=2026-10-21T13:30:00%2B02:00&format=csv",
            {"query", "ROOT", "--window", "2026-10-21T13:30:00+02:00", "--format", "csv"})),
    [](const ::testing::TestParamInfo<AnswerCase>& info) { return info.param.name; });

TEST_F(ServeTest, NotModifiedMetricsAndShutdown) {
  PublishRound(0);
  PublishRound(1);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);

  auto r = c.Get("/v1/query?metric=orders");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("ETag"), "\"2\"");
  r = c.Get("/v1/query?metric=orders", {{"If-None-Match", "\"2\""}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  EXPECT_TRUE(r->body.empty());
  r = c.Get("/v1/query?metric=orders", {{"If-None-Match", "\"1\""}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  for (const char* bad : {"/v1/query?metrc=orders", "/v1/query?format=table", "/v1/query?generation=two"}) {
    r = c.Get(bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
  }

  // The server counts a request after its answer is written (httplib's
  // logger), so on a busy machine the last 400 may not be counted yet when
  // the client has its answer: ask again until it is (bounded by count).
  const std::string counted_304 = "snapsink_http_requests_total{path=\"/v1/query\",code=\"304\"} 1";
  const std::string counted_400 = "snapsink_http_requests_total{path=\"/v1/query\",code=\"400\"} 3";
  for (int i = 0; i < 600; ++i) {
    r = c.Get("/metrics");
    ASSERT_TRUE(r);
    if (r->body.find(counted_304) != std::string::npos && r->body.find(counted_400) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(r->status, 200);
  const std::string root_metrics = Snapsink({"metrics", root_}).out;
  ASSERT_FALSE(root_metrics.empty());
  EXPECT_EQ(r->body.substr(0, root_metrics.size()), root_metrics);
  EXPECT_NE(r->body.find(counted_304), std::string::npos) << r->body;
  EXPECT_NE(r->body.find(counted_400), std::string::npos) << r->body;
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

// Files of deleted snapshots the server still holds open, from /proc.
int DeletedFilesOpen(int pid) {
  int n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& fd : std::filesystem::directory_iterator(dir)) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    n += !ec && target.find("/snapshots/") != std::string::npos && target.ends_with(" (deleted)");
  }
  return n;
}

// gc frees the disk of the generations the server has moved past: it keeps
// no removed snapshot file open (they stayed in its cache of open files).
TEST_F(ServeTest, GcFreesTheDiskOfFilesTheServerRead) {
  PublishRound(0);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  ASSERT_TRUE(c.Get("/v1/query"));  // opens the files of generation 1
  PublishRound(1);
  std::string served;
  for (int i = 0; i < 600 && served != "2"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto r = c.Get("/v1/query");
    ASSERT_TRUE(r);
    served = r->get_header_value("Snapsink-Generation");
  }
  ASSERT_EQ(served, "2");
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  ASSERT_FALSE(Env::Default()->FileExists(root_ + "/manifests/1"));
  int open = -1;
  for (int i = 0; i < 100 && open != 0; ++i) {  // the watcher looks at least every second
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    open = DeletedFilesOpen(server.proc.pid);
  }
  EXPECT_EQ(open, 0) << "removed snapshot files still open in the server";
  Stop(server);
}

TEST_F(ServeTest, OtherMethodsAre405WithAllowGetHead) {
  PublishRound(0);
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client client("127.0.0.1", server.port);
  auto r = client.Post("/v1/query", "", "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  EXPECT_EQ(r->body, "{\"error\":\"method POST not allowed on /v1/query: use GET\"}\n");
  r = client.Delete("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  r = client.Post("/v2/nothing", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << "an unknown path stays 404";
  Stop(server);
}

// A second server on a port one already listens on must not share it
// (httplib's default SO_REUSEPORT would let it): exit 1 naming the port.
TEST_F(ServeTest, SecondServeOnABoundPortExits1NamingThePort) {
  PublishRound(0);
  Server first = StartServe(root_);
  ASSERT_GT(first.port, 0);
  const std::string port = std::to_string(first.port);
  for (const std::string& listen : {"127.0.0.1:" + port, port, ":" + port}) {
    // Every interface needs TLS and tokens, or --insecure, before it binds.
    std::vector<std::string> args = {"serve", root_, "--listen", listen};
    if (listen[0] == ':') args.push_back("--insecure");
    RunResult r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 1) << listen << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, "snapsink: --listen " + listen + ": address already in use (port " + port +
                         ": another server listens on it)\n");
  }
  // run --follow --serve binds through the same code.
  RunResult r = Snapsink({"run", root_, input_, "--follow", "--quiet", "--serve", "127.0.0.1:" + port});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("address already in use (port " + port + ":"), std::string::npos) << r.err;
  // The first one still answers every request.
  httplib::Client c("127.0.0.1", first.port);
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  Stop(first);
}

// --listen PORT is loopback, --listen :PORT every interface.
TEST_F(ServeTest, ListenPortAloneAndColonPort) {
  PublishRound(0);
  for (const std::string prefix : {"", ":"}) {
    Server s;
    for (int attempt = 0; attempt < 5 && s.port == 0; ++attempt) {
      const int port = FreePort();
      std::vector<std::string> args = {"serve", root_, "--listen", prefix + std::to_string(port)};
      if (!prefix.empty()) args.push_back("--insecure");  // every interface: refused without TLS and tokens
      Spawned p = SpawnSnapsink(args);
      for (int i = 0; i < 600 && p.Running(); ++i) {
        httplib::Client c("127.0.0.1", port);
        if (auto r = c.Get("/healthz"); r) {
          s.proc = p;
          s.port = port;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (s.port == 0 && p.Running()) {
        ::kill(p.pid, SIGKILL);
        p.Wait();
      }
    }
    ASSERT_GT(s.port, 0) << "serve --listen " << prefix << "PORT did not start";
    Stop(s);
  }
  RunResult bad = Snapsink({"serve", root_, "--listen", "http"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--listen http: expected HOST:PORT, :PORT (every interface) or PORT (loopback)"),
            std::string::npos)
      << bad.err;
  RunResult help = Snapsink({"serve", "--help"});
  EXPECT_NE(help.out.find(":PORT listens on every interface (0.0.0.0), PORT alone on loopback"), std::string::npos)
      << help.out;
}

}  // namespace
}  // namespace snapsink::testing
