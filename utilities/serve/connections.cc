#include "utilities/serve/connections.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <list>
#include <thread>
#include <utility>
#include <vector>

namespace snapsink {

bool TcpBytesReceived(int fd, uint64_t* out);  // tcp_bytes.cc

namespace {
thread_local int t_accepted = -1;  // the socket accept() returned last on this thread
}  // namespace

}  // namespace snapsink

// httplib's listening thread calls accept() and hands the socket to
// TaskQueue::enqueue right after, on the same thread: the socket the pool
// is handed is the one noted here.
extern "C" int accept(int fd, sockaddr* __restrict addr, socklen_t* __restrict len) {
  const int c = ::accept4(fd, addr, len, 0);
  snapsink::t_accepted = c;
  return c;
}

namespace snapsink {

bool ConnectionTrackingWorks() {
  using AcceptFn = int (*)(int, sockaddr*, socklen_t*);
  const AcceptFn mine = &::accept;
  return ::dlsym(RTLD_DEFAULT, "accept") == reinterpret_cast<void*>(mine);
}

namespace {

using Clock = std::chrono::steady_clock;

enum class Phase { kHead, kWork };

struct Conn {
  int fd = -1;  // a dup of httplib's socket: never reused while the pool holds it
  Phase phase = Phase::kHead;
  Clock::time_point deadline;  // of kHead
  uint64_t head_start_bytes = 0;  // bytes received when the connection began waiting for a head
  bool started = false;           // kHead: a byte of the head has come (the deadline runs)
  bool cut = false;
  // Cut with an answer: the read side is shut a second later (else more
  // bytes from the client would make the kernel reset the connection, and
  // the answer be lost before the client reads it).
  bool read_open = false;
  Clock::time_point shut_read_at;
};

struct Lingering {
  int fd;
  Clock::time_point until;
};

constexpr auto kTick = std::chrono::milliseconds(50);

std::string CannedAnswer(int status, const char* reason, const std::string& message) {
  const std::string body = "{\"error\":\"" + message + "\"}\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

void Peer(int fd, std::string* addr, int* port) {
  sockaddr_storage ss{};
  socklen_t l = sizeof(ss);
  *port = 0;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &l) != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    auto* p = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &p->sin_addr, text, sizeof(text));
    *port = ntohs(p->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* p = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &p->sin6_addr, text, sizeof(text));
    *port = ntohs(p->sin6_port);
  }
  *addr = text;
}

}  // namespace

struct ConnectionPool::State {
  ConnectionLimits limits;
  std::mutex mu;
  std::condition_variable cv;  // in_service went down, or stopping
  std::list<Conn> conns;
  std::vector<Lingering> lingering;  // refused connections: drained, then closed
  int in_service = 0;
  bool stopping = false;
  std::thread watchdog;

  // A plain-HTTP answer on a connection that is then closed; none on TLS.
  void Tell(int fd, int status, const char* reason, const std::string& message) {
    if (limits.tls) return;
    const std::string a = CannedAnswer(status, reason, message);
    (void)::send(fd, a.data(), a.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  void Report(int fd, int status) {
    if (!limits.on_refused) return;
    std::string addr;
    int port = 0;
    Peer(fd, &addr, &port);
    limits.on_refused(addr, port, status);
  }

  // Under mu.
  // grace: the client may go on sending for a second more (a slow one);
  // else the read side is shut at once too (a flood).
  void Cut(Conn& c, int status, const char* reason, const std::string& message, bool grace) {
    c.cut = true;
    Tell(c.fd, status, reason, message);
    // The answer, then FIN; once the read side is shut the connection's
    // thread sees the end and closes its socket. Without grace the close
    // is a reset: a flooding client that does not read would otherwise
    // wait on a full window until the kernel gives up on the socket.
    if (grace) {
      ::shutdown(c.fd, SHUT_WR);
    } else {
      const linger abort{1, 0};
      ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
      ::shutdown(c.fd, SHUT_RD);
    }
    c.read_open = grace;
    c.shut_read_at = Clock::now() + std::chrono::seconds(1);
  }

  void Watch() {
    std::unique_lock<std::mutex> l(mu);
    while (!stopping) {
      cv.wait_for(l, kTick);
      const auto now = Clock::now();
      std::vector<std::pair<int, int>> reports;  // (fd, status), reported after the scan
      for (Conn& c : conns) {
        if (c.cut && c.read_open && now >= c.shut_read_at) {
          ::shutdown(c.fd, SHUT_RD);
          c.read_open = false;
        }
        if (c.cut || c.phase == Phase::kWork) continue;  // else reading a head
        uint64_t bytes = 0;
        const bool counted = TcpBytesReceived(c.fd, &bytes);
        if (!c.started) {
          // Idle (a new or keep-alive connection with nothing sent yet):
          // httplib closes it after the keep-alive timeout. The head's
          // deadline runs from its first byte.
          if (!counted || bytes == c.head_start_bytes) continue;
          c.started = true;
          c.deadline = now + std::chrono::milliseconds(limits.header_timeout_ms);
        }
        // The exact limit is checked on the head once read (a 431 from the
        // server); this one stops a flood while it arrives, with room for
        // TLS's handshake and record overhead.
        if (counted && bytes - c.head_start_bytes > 2 * limits.max_head_bytes + 16 * 1024) {
          Cut(c, 431, "Request Header Fields Too Large",
              "request head larger than " + std::to_string(limits.max_head_bytes) + " bytes (--max-header-bytes)",
              /*grace=*/false);
          reports.emplace_back(c.fd, 431);
        } else if (now >= c.deadline) {
          Cut(c, 408, "Request Timeout",
              "request head not complete within " + std::to_string(limits.header_timeout_ms) +
                  " ms of its first byte (--header-timeout)",
              /*grace=*/true);
          reports.emplace_back(c.fd, 408);
        }
      }
      for (size_t i = 0; i < lingering.size();) {
        char buf[4096];
        ssize_t n;
        while ((n = ::recv(lingering[i].fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
        }
        const bool ended = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        if (ended || now >= lingering[i].until) {
          ::close(lingering[i].fd);
          lingering[i] = lingering.back();
          lingering.pop_back();
        } else {
          ++i;
        }
      }
      for (auto [fd, status] : reports) Report(fd, status);
    }
  }
};

namespace {
thread_local ConnectionPool::State* t_state = nullptr;
thread_local Conn* t_conn = nullptr;

void SetPhase(Phase p, Clock::duration within) {
  if (t_state == nullptr || t_conn == nullptr) return;
  std::lock_guard<std::mutex> l(t_state->mu);
  t_conn->phase = p;
  t_conn->deadline = Clock::now() + within;
  if (p == Phase::kHead && t_state->stopping && !t_conn->cut) {
    t_conn->cut = true;
    ::shutdown(t_conn->fd, SHUT_RDWR);
  } else if (p == Phase::kHead) {
    uint64_t b = 0;
    if (TcpBytesReceived(t_conn->fd, &b)) t_conn->head_start_bytes = b;
    t_conn->started = false;
  }
}
}  // namespace

void ConnectionHeadRead() { SetPhase(Phase::kWork, {}); }

void ConnectionWorking() { SetPhase(Phase::kWork, {}); }

bool ConnectionCut() {
  if (t_state == nullptr || t_conn == nullptr) return false;
  std::lock_guard<std::mutex> l(t_state->mu);
  return t_conn->cut;
}

void ConnectionAnswered(bool close) {
  if (t_state == nullptr) return;
  if (close) {
    // The answer is written: FIN after it. Then what the client still sends
    // (a body not read) is drained for up to a second, so that closing does
    // not reset the connection before the client has read the answer; then
    // httplib's next read ends.
    const int fd = t_conn->fd;
    {
      std::lock_guard<std::mutex> l(t_state->mu);
      t_conn->cut = true;
    }
    ::shutdown(fd, SHUT_WR);
    const auto until = Clock::now() + std::chrono::seconds(1);
    char buf[16384];
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      if (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0) break;
    }
    ::shutdown(fd, SHUT_RD);
    return;
  }
  SetPhase(Phase::kHead, std::chrono::milliseconds(t_state->limits.header_timeout_ms));
}

ConnectionPool::ConnectionPool(ConnectionLimits limits) : state_(new State) {
  state_->limits = std::move(limits);
  state_->watchdog = std::thread([s = state_] { s->Watch(); });
}

ConnectionPool::~ConnectionPool() {
  shutdown();
  delete state_;
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  State* s = state_;
  const int sock = t_accepted;
  t_accepted = -1;
  const int fd = sock < 0 ? -1 : ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
  std::unique_lock<std::mutex> l(s->mu);
  if (fd < 0 || s->in_service >= s->limits.max_connections || s->stopping) {
    l.unlock();
    if (fd < 0) {
      fn();  // untracked (no socket seen, or no fd left to dup): served without deadlines
      return;
    }
    // Refused without reading it, on no thread: 503, then closed once the
    // client has closed (or a second has passed), so that the answer is
    // not lost to a reset.
    s->Tell(fd, 503, "Service Unavailable", "too many connections");
    s->Report(fd, 503);
    ::shutdown(fd, SHUT_WR);
    ::close(sock);  // httplib's socket: fn, never run, would have closed it
    l.lock();
    if (s->lingering.size() < 1024) {
      s->lingering.push_back({fd, Clock::now() + std::chrono::seconds(1)});
    } else {
      ::close(fd);
    }
    return;
  }
  ++s->in_service;
  s->conns.push_back(Conn{});
  Conn* c = &s->conns.back();
  c->fd = fd;
  c->deadline = Clock::now() + std::chrono::milliseconds(s->limits.header_timeout_ms);
  auto it = std::prev(s->conns.end());
  l.unlock();
  std::thread([s, c, it, fn = std::move(fn)] {
    t_state = s;
    t_conn = c;
    fn();
    t_state = nullptr;
    t_conn = nullptr;
    std::lock_guard<std::mutex> g(s->mu);
    ::close(c->fd);
    s->conns.erase(it);
    --s->in_service;
    s->cv.notify_all();
  }).detach();
}

void ConnectionPool::shutdown() {
  State* s = state_;
  std::unique_lock<std::mutex> l(s->mu);
  if (!s->watchdog.joinable()) return;
  s->stopping = true;
  // Connections waiting for a head (idle keep-alive ones too) end now;
  // requests in service are answered first.
  for (Conn& c : s->conns) {
    if (c.phase != Phase::kWork && !c.cut) {
      c.cut = true;
      ::shutdown(c.fd, SHUT_RDWR);
    }
  }
  s->cv.notify_all();
  s->cv.wait(l, [s] { return s->in_service == 0; });
  std::thread w = std::move(s->watchdog);
  l.unlock();
  w.join();
  for (const Lingering& g : s->lingering) ::close(g.fd);
  s->lingering.clear();
}

}  // namespace snapsink
