#include "tests/serve_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <thread>

namespace snapsink::testing {

Server& Server::operator=(Server&& o) noexcept {
  if (this != &o) {
    this->~Server();
    proc = o.proc;
    port = o.port;
    o.proc = Spawned();
  }
  return *this;
}

Server::~Server() {
  if (proc.pid > 0 && proc.Running()) {
    ::kill(proc.pid, SIGKILL);
    proc.Wait();
  }
}

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

Server StartServe(const std::string& root, const std::vector<std::string>& extra) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    Server s;
    s.port = FreePort();
    std::vector<std::string> args = {"serve", root, "--listen", "127.0.0.1:" + std::to_string(s.port)};
    args.insert(args.end(), extra.begin(), extra.end());
    s.proc = SpawnSnapsink(args);
    for (int i = 0; i < 600 && s.proc.Running(); ++i) {
      httplib::Client c("127.0.0.1", s.port);  // a new connection each try, closed at once
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
  return EventLine()
      .Seq(static_cast<uint64_t>(seq))
      .Ts(base + window * 3600000LL + seq)
      .Metric(metric)
      .Key(key)
      .Value(int64_t{value})
      .Line();
}

void ServeFixture::SetUp() {
  root_ = dir_ / "root";
  input_ = dir_ / "events.ndjson";
  ASSERT_EQ(Snapsink({"init", root_}).exit_code, 0);
}

void ServeFixture::PublishRound(int i) {
  std::string s;
  s += Event(3 * i, i % 3, "orders", "k" + std::to_string(i % 4), i);
  s += Event(3 * i + 1, 0, "total", "", 1);
  s += Event(3 * i + 2, 1, "orders", "eu", 2);
  AppendFile(input_, s);
  RunResult r = Snapsink({"run", root_, input_, "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void ServeFixture::Stop(Server& s) {
  ::kill(s.proc.pid, SIGTERM);
  EXPECT_EQ(s.proc.Wait(), 0);
}

}  // namespace snapsink::testing
