#include "tests/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace snapsink::testing {

namespace {

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int ConnectTo(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The value of header `name` (lower case) in a request's header block, or "".
std::string HeaderValue(const std::string& head, const std::string& name) {
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t at = lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  size_t start = at + 3 + name.size();
  const size_t end = head.find("\r\n", start);
  while (start < end && head[start] == ' ') ++start;
  return head.substr(start, end - start);
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

FaultProxy::FaultProxy(const std::string& upstream) {
  // upstream: http://HOST:PORT
  const size_t scheme = upstream.find("://");
  const std::string hostport = upstream.substr(scheme == std::string::npos ? 0 : scheme + 3);
  const size_t colon = hostport.rfind(':');
  host_ = hostport.substr(0, colon);
  upstream_port_ = colon == std::string::npos ? 80 : std::atoi(hostport.c_str() + colon + 1);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return;
  }
  listen_fd_ = fd;
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void FaultProxy::LoseAnswerOnce(const std::string& suffix, Fault fault) {
  std::lock_guard<std::mutex> l(mu_);
  armed_suffix_ = suffix;
  armed_fault_ = fault;
  armed_ = true;
}

void FaultProxy::DelayAnswers(const std::string& suffix, int ms) {
  std::lock_guard<std::mutex> l(mu_);
  delay_suffix_ = suffix;
  delay_ms_ = ms;
}

void FaultProxy::AnswerEvery(const std::string& method, const std::string& suffix, int status) {
  std::lock_guard<std::mutex> l(mu_);
  every_method_ = method;
  every_suffix_ = suffix;
  every_status_ = status;
}

int FaultProxy::Puts(const std::string& suffix) {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(std::count_if(puts_.begin(), puts_.end(), [&](const std::string& p) {
    return EndsWith(p, suffix);
  }));
}

bool FaultProxy::Observe(const std::string& method, const std::string& path, Fault* fault) {
  std::lock_guard<std::mutex> l(mu_);
  const std::string bare = path.substr(0, path.find('?'));
  if (every_status_ != 0 && method == every_method_ && EndsWith(bare, every_suffix_)) {
    *fault = Fault::kAnswerStatus;
    ++lost_;
    return true;
  }
  if (method != "PUT") return false;
  puts_.push_back(bare);
  if (delay_ms_ > 0 && EndsWith(bare, delay_suffix_)) {
    *fault = Fault::kDelay;
    return true;
  }
  if (!armed_ || !EndsWith(bare, armed_suffix_)) return false;
  armed_ = false;
  *fault = armed_fault_;
  lost_path_ = bare;
  return true;
}

std::string FaultProxy::lost_path() {
  std::lock_guard<std::mutex> l(mu_);
  return lost_path_;
}

void FaultProxy::AcceptLoop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int client = ::accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    std::lock_guard<std::mutex> l(mu_);
    fds_.push_back(client);
    workers_.emplace_back([this, client] { Serve(client); });
  }
}

void FaultProxy::Serve(int client) {
  const int up = ConnectTo(host_, upstream_port_);
  if (up < 0) {
    ::close(client);
    return;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    fds_.push_back(up);
  }
  std::string pending;     // client bytes not yet parsed (a request's head)
  uint64_t body_left = 0;  // bytes of the current request's body still to come
  bool losing = false;     // the answer now coming is to be lost
  Fault fault = Fault::kCloseConnection;
  std::string answer;  // server bytes held back while losing
  char buf[65536];
  pollfd fds[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
  while (!stopping_) {
    if (::poll(fds, 2, 100) <= 0) continue;
    if (fds[0].revents != 0) {
      const ssize_t n = ::recv(client, buf, sizeof(buf), 0);
      if (n <= 0 || !WriteAll(up, buf, static_cast<size_t>(n))) break;
      pending.append(buf, static_cast<size_t>(n));
      for (;;) {
        if (body_left > 0) {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(body_left, pending.size()));
          pending.erase(0, take);
          body_left -= take;
          if (body_left > 0) break;
          continue;
        }
        const size_t end = pending.find("\r\n\r\n");
        if (end == std::string::npos) break;
        const std::string head = pending.substr(0, end + 2);
        pending.erase(0, end + 4);
        const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
        if (Observe(head.substr(0, sp1), head.substr(sp1 + 1, sp2 - sp1 - 1), &fault)) losing = true;
        body_left = std::strtoull(HeaderValue(head, "content-length").c_str(), nullptr, 10);
      }
    }
    if (fds[1].revents != 0) {
      const ssize_t n = ::recv(up, buf, sizeof(buf), 0);
      if (n <= 0) break;
      if (!losing) {
        if (!WriteAll(client, buf, static_cast<size_t>(n))) break;
        continue;
      }
      answer.append(buf, static_cast<size_t>(n));
      // "100 Continue" goes through; the final answer's head is where the
      // server has acted: it is lost.
      bool lose_now = false;
      for (size_t end; (end = answer.find("\r\n\r\n")) != std::string::npos;) {
        if (answer.rfind("HTTP/1.1 100", 0) == 0) {
          if (!WriteAll(client, answer.data(), end + 4)) break;
          answer.erase(0, end + 4);
          continue;
        }
        lose_now = true;
        break;
      }
      if (!lose_now) continue;
      if (fault == Fault::kDelay) {  // held, then forwarded: the connection goes on
        int ms = 0;
        {
          std::lock_guard<std::mutex> l(mu_);
          ms = delay_ms_;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        if (!WriteAll(client, answer.data(), answer.size())) break;
        answer.clear();
        losing = false;
        continue;
      }
      if (fault == Fault::kAnswer500) {
        static const char k500[] =
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        (void)WriteAll(client, k500, sizeof(k500) - 1);
      }
      if (fault == Fault::kAnswerStatus) {
        int status = 0;
        {
          std::lock_guard<std::mutex> l(mu_);
          status = every_status_;
        }
        const std::string head = "HTTP/1.1 " + std::to_string(status) +
                                 " Fault\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        (void)WriteAll(client, head.data(), head.size());
        break;  // counted when the request was seen
      }
      ++lost_;
      break;
    }
  }
  ::shutdown(client, SHUT_RDWR);
  ::shutdown(up, SHUT_RDWR);
  std::lock_guard<std::mutex> l(mu_);
  fds_.erase(std::remove(fds_.begin(), fds_.end(), client), fds_.end());
  fds_.erase(std::remove(fds_.begin(), fds_.end(), up), fds_.end());
  ::close(client);
  ::close(up);
}

}  // namespace snapsink::testing
