// snapsink serve's fairness, through the binary: 200 keep-alive clients
// that keep asking (a point query each, again 20 ms after each answer) hold
// no thread a newcomer needs: a new connection's /healthz and point query
// are answered within 100 ms (the median of 20 newcomers; the server used
// to keep a thread per keep-alive connection out of a pool of --threads,
// and newcomers waited seconds for one).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

using Clock = std::chrono::steady_clock;

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));  // EINPROGRESS: the first send waits for it
  return fd;
}

// A keep-alive client: sends its request, reads the answer (Content-Length),
// sends again after a pause; reconnects when the server ends the connection
// (after 100 requests).
struct KeepAlive {
  int fd = -1;
  std::string in;
  bool waiting = false;  // a request is out
  Clock::time_point next;
  int answered = 0, reconnects = 0;
};

// The bytes of one whole answer at the front of in (0: not complete yet).
size_t AnswerLength(const std::string& in) {
  const size_t head = in.find("\r\n\r\n");
  if (head == std::string::npos) return 0;
  const size_t cl = in.find("Content-Length: ");
  if (cl == std::string::npos || cl > head) return head + 4;
  return head + 4 + std::stoul(in.substr(cl + 16));
}

class ServeFairnessTest : public ServeFixture {};

TEST_F(ServeFairnessTest, NewcomersAreAnsweredWithin100msUnder200KeepAliveClients) {
  PublishRound(0);
  PublishRound(1);
  Server server = StartServe(root_, {"--quiet"});
  ASSERT_GT(server.port, 0);
  constexpr int kClients = 200, kNewcomers = 20;
  const std::string point = "/v1/query?window=2026-10-21T11:00:00Z&metric=orders&key=eu&format=csv";
  const std::string request = "GET " + point + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::vector<KeepAlive> clients(kClients);
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread driver([&] {
    for (KeepAlive& c : clients) c.fd = Connect(server.port);
    std::vector<pollfd> fds(kClients);
    while (!done) {
      const auto now = Clock::now();
      for (int i = 0; i < kClients; ++i) {
        KeepAlive& c = clients[i];
        if (!c.waiting && now >= c.next) {
          if (::send(c.fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
            c.waiting = true;
          } else if (errno != EAGAIN && errno != EINPROGRESS && errno != ENOTCONN) {
            ++failures;
          }
        }
        fds[i] = {c.fd, static_cast<short>(POLLIN), 0};
      }
      if (::poll(fds.data(), fds.size(), 5) <= 0) continue;
      for (int i = 0; i < kClients; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        KeepAlive& c = clients[i];
        char buf[16384];
        const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
        if (n > 0) c.in.append(buf, static_cast<size_t>(n));
        bool last = false;  // the server's last answer on this connection
        for (size_t len; (len = AnswerLength(c.in)) != 0 && c.in.size() >= len;) {
          if (c.in.compare(0, 12, "HTTP/1.1 200") != 0) ++failures;
          last = c.in.substr(0, len).find("Connection: close") != std::string::npos;
          c.in.erase(0, len);
          c.waiting = false;
          ++c.answered;
          c.next = Clock::now() + std::chrono::milliseconds(20);
        }
        if (last || n == 0 || (n < 0 && errno != EAGAIN)) {  // closed by the server (its 100th answer): again
          ::close(c.fd);
          c.fd = Connect(server.port);
          c.in.clear();
          c.waiting = false;
          ++c.reconnects;
        }
      }
    }
    for (KeepAlive& c : clients) ::close(c.fd);
  });
  // Every client connected and answered once: 200 keep-alive connections.
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < until &&
         std::any_of(clients.begin(), clients.end(), [](const KeepAlive& c) { return c.answered == 0; })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<double> waits;
  int newcomer_failures = 0;
  for (int i = 0; i < kNewcomers; ++i) {
    const auto t0 = Clock::now();
    httplib::Client c("127.0.0.1", server.port);
    c.set_connection_timeout(2, 0);  // bounds the test when newcomers are starved
    c.set_read_timeout(2, 0);
    auto h = c.Get("/healthz");
    auto q = c.Get(point);
    waits.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!h || h->status != 200 || !q || q->status != 200 || q->body.find("eu") == std::string::npos) {
      ++newcomer_failures;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  done = true;
  driver.join();
  int answered = 0, connected = 0;
  for (const KeepAlive& c : clients) {
    answered += c.answered;
    connected += c.answered > 0;
  }
  std::sort(waits.begin(), waits.end());
  const double median = waits[waits.size() / 2], worst = waits.back();
  std::printf("%d keep-alive clients, %d answers to them; newcomers (connect, /healthz, point query): median %.1f ms, "
              "worst %.1f ms\n",
              connected, answered, median, worst);
  EXPECT_EQ(connected, kClients) << "not every keep-alive client was answered";
  EXPECT_EQ(failures.load(), 0) << "keep-alive answers other than 200";
  EXPECT_EQ(newcomer_failures, 0);
  EXPECT_LT(median, 100.0) << "ms: a newcomer's median wait";
  EXPECT_LT(worst, 2000.0) << "ms: a newcomer's worst wait";
  Stop(server);
}

// A client that asks for a long answer (sent in chunks) and reads none of
// it keeps no one else waiting: the streamed answer holds a work slot only
// while it makes a window's text, not while it waits on the client, so
// with --threads 1 another client's point query is answered at once (it
// used to wait for the slow client's --write-timeout, here 60 s).
TEST_F(ServeFairnessTest, AClientNotReadingAStreamedAnswerKeepsNoOneWaiting) {
  constexpr int kWindows = 20, kKeys = 2000;
  const std::string pad(200, 'x');
  std::string events;
  for (int w = 0; w < kWindows; ++w) {
    for (int k = 0; k < kKeys; ++k) events += Event(w * kKeys + k, w, "orders", pad + std::to_string(k), 1);
  }
  AppendFile(input_, events);
  RunResult run = Snapsink({"run", root_, input_, "--final", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Server server = StartServe(root_, {"--threads", "1", "--write-timeout", "60s", "--quiet"});
  ASSERT_GT(server.port, 0);
  // About 12 MB of answer, far beyond what the socket buffers hold for a
  // reader that takes nothing.
  const int slow = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int small = 4096;
  ::setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server.port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(slow, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string request = "GET /v1/query?key-prefix=x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(slow, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  // Its answer has begun (the rows are counted first) and fills the socket.
  pollfd p{slow, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1) << "no answer began";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto t0 = Clock::now();
  httplib::Client c("127.0.0.1", server.port);
  c.set_read_timeout(10, 0);
  auto r = c.Get("/v1/query?window=2026-10-21T10:00:00Z&metric=orders&key=" + pad + "7&format=csv");
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  ASSERT_TRUE(r) << "the point query waited past 10 s behind a client that reads nothing";
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(ms, 2000.0) << "ms for a point query beside a client that reads nothing";
  std::printf("point query beside a client not reading its streamed answer: %.1f ms\n", ms);
  ::close(slow);
  Stop(server);
}

}  // namespace
}  // namespace snapsink::testing
