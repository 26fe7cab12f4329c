// snapsink serve's limits, through the binary: the connection limit (the
// N+1th connection gets 503 and is closed, a freed slot serves again), the
// read and write timeouts (a half-sent request, a client that stops reading:
// dropped, the slot freed, the generation collectable by gc), request size
// limits (414, 400, 413), /healthz re-verifying on every switch of CURRENT.
// Waits are bounded by count (polls), never asserted against the clock.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/env.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// A raw client socket, for what httplib::Client will not do: send half a
// request, or never read the answer.
class RawClient {
 public:
  // rcvbuf > 0: a small receive buffer (set before connect, so the window
  // stays small), for a client that does not read.
  explicit RawClient(int port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    // A safety bound on every recv, far beyond any timeout under test.
    timeval tv{120, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Reads n bytes (fewer if the connection ends first).
  std::string Read(size_t n) {
    std::string out(n, '\0');
    const ssize_t got = ::recv(fd_, out.data(), n, MSG_WAITALL);
    out.resize(got > 0 ? static_cast<size_t>(got) : 0);
    return out;
  }
  // Reads until the server closes the connection; the bytes read. closed is
  // false if the safety bound ran out first (the server kept it open).
  std::string ReadToClose(bool* closed) {
    std::string out;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      *closed = n == 0 || errno == ECONNRESET;
      return out;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// GET target on a new connection until it answers 200 (and, when
// want_generation is set, from that generation); at most 300 tries, 50 ms
// apart. The last answer's status (-1: no answer).
int PollUntilServed(int port, const std::string& target, const std::string& want_generation = "") {
  int status = -1;
  for (int i = 0; i < 300; ++i) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(2, 0);  // a bound per try, for when the server never answers
    if (auto r = c.Get(target)) {
      status = r->status;
      if (status == 200 && (want_generation.empty() || r->get_header_value("Snapsink-Generation") == want_generation)) {
        return 200;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return status;
}

class ServeLimitsTest : public ServeFixture {};

TEST_F(ServeLimitsTest, ConnectionBeyondTheLimitGets503AndAFreedSlotServesAgain) {
  constexpr int kLimit = 3;
  PublishRound(0);
  // Long timeouts: the held connections stay in service for the whole test.
  Server server = StartServe(root_, {"--threads", std::to_string(kLimit), "--max-connections", std::to_string(kLimit),
                                     "--keep-alive-timeout", "600s", "--read-timeout", "600s"});
  ASSERT_GT(server.port, 0);
  // StartServe's probe connection is closed; its slot may still be in use
  // for a moment: wait until kLimit keep-alive clients each got an answer.
  std::vector<std::unique_ptr<httplib::Client>> held;
  for (int i = 0; i < kLimit; ++i) {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server.port);
    c->set_keep_alive(true);
    int status = -1;
    for (int attempt = 0; attempt < 600 && status != 200; ++attempt) {
      if (auto r = c->Get("/healthz")) status = r->status;
      if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(status, 200) << "connection " << i + 1 << " of " << kLimit << " was not served";
    held.push_back(std::move(c));
  }
  // The held connections are still served (keep-alive, same sockets).
  for (auto& c : held) {
    auto r = c->Get("/v1/query?format=csv");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  // One more: 503, the server's error, and the server closes the connection
  // although the client asked to keep it (it is answered without being read).
  {
    RawClient extra(server.port);
    ASSERT_TRUE(extra.connected());
    ASSERT_TRUE(extra.Send("GET /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n"));
    bool closed = false;
    const std::string got = extra.ReadToClose(&closed);
    EXPECT_TRUE(closed) << "the server kept the connection beyond the limit open";
    EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
    EXPECT_NE(got.find("\r\n\r\n{\"error\":\"too many connections\"}\n"), std::string::npos) << got;
  }
  // A freed slot serves a new connection again.
  held.back()->stop();
  held.pop_back();
  EXPECT_EQ(PollUntilServed(server.port, "/v1/query"), 200);
  auto r = held.front()->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("snapsink_http_requests_total{path=\"other\",code=\"503\"}"), std::string::npos)
      << r->body;
  held.clear();
  Stop(server);
}

// httplib answers a request whose headers stop coming 400 after the read
// timeout, then waits up to the keep-alive timeout for a next request before
// it closes: the client is dropped after the two.
TEST_F(ServeLimitsTest, HalfSentRequestIsDroppedAfterTheReadTimeout) {
  PublishRound(0);
  Server server = StartServe(root_, {"--threads", "1", "--max-connections", "1", "--read-timeout", "1s",
                                     "--keep-alive-timeout", "1s"});
  ASSERT_GT(server.port, 0);
  ASSERT_EQ(PollUntilServed(server.port, "/healthz"), 200);  // the probe's slot is free
  // The poll's own connection may hold the one slot a moment after it
  // closed (503 unread): try again then.
  bool closed = false;
  std::string got;
  for (int attempt = 0; attempt < 100; ++attempt) {
    RawClient slow(server.port);
    ASSERT_TRUE(slow.connected());
    ASSERT_TRUE(slow.Send("GET /v1/query?format=json HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // no blank line
    got = slow.ReadToClose(&closed);
    if (got.rfind("HTTP/1.1 503 ", 0) != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(closed) << "the server kept a half-sent request open; got:\n" << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_EQ(got.find("Snapsink-Generation"), std::string::npos) << "a half-sent request was answered:\n" << got;
  // Its one slot is free again.
  EXPECT_EQ(PollUntilServed(server.port, "/v1/query"), 200);
  Stop(server);
}

// A client that asks for a large answer and stops reading it is cut off by
// the write timeout: its slot is freed and, once CURRENT has moved on, gc
// removes the generation it asked for.
TEST_F(ServeLimitsTest, ClientThatStopsReadingIsDroppedAndItsGenerationCollected) {
  // ~13 MB of answer: far beyond what the kernel buffers on a socket whose
  // reader takes nothing (send buffer at most 4 MB by default).
  std::string events;
  const std::string pad(240, 'x');
  for (int i = 0; i < 40000; ++i) events += Event(i, 0, "orders", pad + std::to_string(i), 1);
  AppendFile(input_, events);
  RunResult run = Snapsink({"run", root_, input_, "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Server server = StartServe(root_, {"--threads", "1", "--max-connections", "2", "--write-timeout", "1s",
                                     "--keep-alive-timeout", "600s", "--read-timeout", "600s"});
  ASSERT_GT(server.port, 0);
  ASSERT_EQ(PollUntilServed(server.port, "/healthz"), 200);

  // The probe's and the poll's connections are closed, but each holds its
  // slot until its thread sees the close: under load both may still be
  // counted, and the slow client is answered 503. Try again then (the
  // status line, 12 bytes, is all it reads).
  std::unique_ptr<RawClient> slow;
  std::string start;
  for (int attempt = 0; attempt < 100; ++attempt) {
    slow = std::make_unique<RawClient>(server.port, /*rcvbuf=*/4096);
    ASSERT_TRUE(slow->connected());
    ASSERT_TRUE(slow->Send("GET /v1/query?generation=1&format=json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    start = slow->Read(12);
    if (start != "HTTP/1.1 503") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(start, "HTTP/1.1 200");
  // Generation 2 replaces 1.
  AppendFile(input_, Event(40000, 1, "orders", "eu", 1));
  run = Snapsink({"run", root_, input_, "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(PollUntilServed(server.port, "/v1/query?window=2026-10-21T11:00:00Z", "2"), 200);
  // Each connection has a thread of its own, and a streamed answer holds a
  // work slot only while it makes a window's text, so the polls above did
  // not wait for the slow client: give its write timeout (1 s) time to pass.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(Env::Default()->FileExists(root_ + "/manifests/1")) << "generation 1 still pinned\n" << gc.out;
  bool closed = false;
  const std::string got = start + slow->ReadToClose(&closed);
  EXPECT_TRUE(closed);
  // The answer (about 13 MB) is sent in chunks as it is made: cut off, it
  // lacks the last chunk.
  ASSERT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got.substr(0, 300);
  EXPECT_LT(got.size(), 10u << 20) << "the whole answer was delivered: nothing was cut off";
  EXPECT_FALSE(got.size() >= 5 && got.compare(got.size() - 5, 5, "0\r\n\r\n") == 0) << "the answer's last chunk came";
  Stop(server);
}

TEST_F(ServeLimitsTest, OversizedRequestsGet414400And413NamingTheLimit) {
  PublishRound(0);
  Server server = StartServe(root_, {"--max-request-bytes", "1000"});
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);

  auto r = c.Get("/v1/query?key=" + std::string(9000, 'k'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 414);
  EXPECT_EQ(r->body, "{\"error\":\"request line longer than 8192 bytes\"}\n");

  r = c.Get("/v1/query", {{"X-Padding", std::string(9000, 'p')}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("header line longer than 8192 bytes"), std::string::npos) << r->body;

  r = c.Post("/v1/query", std::string(2000, 'b'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body, "{\"error\":\"request body larger than 1000 bytes (--max-request-bytes)\"}\n");

  // Just under each limit is an ordinary request.
  r = c.Get("/v1/query?key=" + std::string(7000, 'k'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  Stop(server);
}

// An answer is capped in rows: a query answering more than --max-rows rows
// is 413 naming the limit and how to narrow the query; one of exactly that
// many rows is answered, with the bytes of `snapsink query`.
TEST_F(ServeLimitsTest, AnswerOverMaxRowsIs413NamingTheLimit) {
  std::string events;
  for (int i = 0; i < 300; ++i) events += Event(i, i % 3, "orders", "key-" + std::to_string(i), 1);
  AppendFile(input_, events);
  RunResult run = Snapsink({"run", root_, input_, "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Server server = StartServe(root_, {"--max-rows", "100", "--quiet"});
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  for (const char* target : {"/v1/query?format=csv",
                             "/v1/query?format=json&from=2026-10-21T10:00:00Z&to=2026-10-21T11:00:00Z",
                             "/v1/query?rollup=1d"}) {
    auto r = c.Get(target);
    ASSERT_TRUE(r) << target;
    EXPECT_EQ(r->status, 413) << target;
    EXPECT_NE(r->body.find("answer has more than 100 rows (--max-rows): narrow the query with window="),
              std::string::npos)
        << target << ": " << r->body;
  }
  auto r = c.Get("/v1/query?format=csv&window=2026-10-21T11:00:00Z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  RunResult q = Snapsink({"query", root_, "--window", "2026-10-21T11:00:00Z", "--format", "csv"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(r->body, q.out);
  EXPECT_EQ(std::count(r->body.begin(), r->body.end(), '\n'), 101) << "a header and 100 rows";
  Stop(server);
  Server tighter = StartServe(root_, {"--max-rows", "99", "--quiet"});
  ASSERT_GT(tighter.port, 0);
  httplib::Client t("127.0.0.1", tighter.port);
  r = t.Get("/v1/query?format=csv&window=2026-10-21T11:00:00Z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("answer has more than 99 rows (--max-rows)"), std::string::npos) << r->body;
  Stop(tighter);
}

// /healthz reads every generation CURRENT switches to, not only the first:
// a damaged new generation is reported (naming the file) while its other
// windows are still served, and a good one after it is healthy again.
TEST_F(ServeLimitsTest, HealthzReverifiesEachGenerationCurrentSwitchesTo) {
  PublishRound(0);  // generation 1: windows 10:00 and 11:00, v1 each
  Server server = StartServe(root_);
  ASSERT_GT(server.port, 0);
  httplib::Client c("127.0.0.1", server.port);
  std::string body;
  auto healthz = [&] {
    for (int i = 0; i < 600; ++i) {
      auto r = c.Get("/healthz");
      if (!r) return -1;
      body = r->body;
      if (body.find("not verified yet") == std::string::npos) return r->status;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -2;
  };
  ASSERT_EQ(healthz(), 200);
  EXPECT_EQ(body, "{\"generation\":1,\"ok\":true}\n");

  // Publish generation 2 and damage it while the server is stopped, so that
  // it cannot read the generation before the damage.
  ASSERT_EQ(::kill(server.proc.pid, SIGSTOP), 0);
  PublishRound(1);  // windows 10:00 and 11:00 at v2
  const std::string data = root_ + "/snapshots/20261021T110000Z/v2/data";
  std::string bytes = ReadFile(data);
  ASSERT_GT(bytes.size(), 40u);
  bytes[bytes.size() / 2] ^= 0x40;
  WriteFile(data, bytes);
  ASSERT_EQ(::kill(server.proc.pid, SIGCONT), 0);

  int status = 0;
  for (int i = 0; i < 600; ++i) {  // until the server has switched to 2
    status = healthz();
    if (body.find("\"generation\":1,") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("20261021T110000Z/v2/data"), std::string::npos) << body;
  auto r = c.Get("/v1/query?window=2026-10-21T11:00:00Z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("20261021T110000Z/v2/data"), std::string::npos) << r->body;
  r = c.Get("/v1/query?window=2026-10-21T10:00:00Z");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Snapsink-Generation"), "2");
  EXPECT_EQ(r->body, Snapsink({"query", root_, "--window", "2026-10-21T10:00:00Z", "--format", "json"}).out);

  // Generation 3 (generation 1's windows again) verifies: healthy.
  RunResult rb = Snapsink({"rollback", root_, "--generation", "1"});
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  for (int i = 0; i < 600; ++i) {
    status = healthz();
    if (body.find("\"generation\":3,") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "{\"generation\":3,\"ok\":true}\n");
  Stop(server);
}

}  // namespace
}  // namespace snapsink::testing
