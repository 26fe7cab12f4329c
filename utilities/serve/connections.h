// The connections of `snapsink serve`: a thread each, deadlines on what a
// client must send, and a bound on their number.
//
// cpp-httplib reads a request on the thread that serves its connection, and
// its read timeout measures silence between bytes: a client sending a byte a
// second holds a thread forever. So:
//  - every connection in service has a thread of its own (ConnectionPool, an
//    httplib::TaskQueue), up to max_connections; beyond, the connection is
//    answered 503 and closed without reading it, on no thread of its own. A
//    slow client then holds one sleeping thread and one connection slot, not
//    the server: the work of answering (a query, the page) is bounded apart,
//    by WorkSlots;
//  - a watchdog thread answers 408 (plain HTTP) and closes a connection
//    whose request head is not complete header_timeout after its first
//    byte: a deadline, not an idle timeout (an idle connection, before its
//    first byte, is httplib's: closed after the keep-alive timeout). No
//    body is ever read: a request that declares one is refused once its
//    head is read;
//  - a connection that sends far more than max_head_bytes (twice, plus 16
//    KiB for TLS) before its head is complete is answered 431 (plain HTTP)
//    and closed while the bytes arrive (TCP_INFO's byte count, every 50 ms),
//    before any handler or token check; the exact limit is the server's,
//    on the head once read.
//
// The pool learns each connection's socket from accept(), which httplib
// calls on its listening thread just before it hands the connection over:
// this file defines accept() for the process (a pass-through to accept4)
// that notes the socket; ConnectionTrackingWorks says whether that is the
// accept() httplib calls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include <httplib.h>

namespace snapsink {

// True when the accept() httplib calls is this file's (the process exports
// it): without it no connection could be given a deadline.
bool ConnectionTrackingWorks();

struct ConnectionLimits {
  int max_connections = 512;
  int header_timeout_ms = 10000;
  size_t max_head_bytes = 64 * 1024;
  bool tls = false;  // no plaintext 503/408/431 is written to a TLS connection: it is closed
  // Called for each connection refused or cut (503, 408, 431) with its
  // peer, status and why: the access log and metrics.
  std::function<void(const std::string& peer_addr, int peer_port, int status)> on_refused;
};

// What the request on the calling thread's connection is doing (called from
// httplib's handlers, on the connection's thread; no-ops elsewhere).
// The head is read: no deadline until the answer is written (the handlers
// refuse a declared body at once, unread).
void ConnectionHeadRead();
// A handler works on the answer: no deadline (the write timeout applies).
void ConnectionWorking();
// The answer is written: the next head must be complete within
// header_timeout; close: the connection ends here instead (an answer that
// did not read the request's body, or refused it).
void ConnectionAnswered(bool close = false);
// The connection was cut (408, 431: reported through on_refused) or
// answered for the last time: what httplib answers after is not logged.
bool ConnectionCut();

class ConnectionPool final : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(ConnectionLimits limits);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> fn) override;
  // Waits for every connection's thread to end; connections waiting for a
  // head are closed at once.
  void shutdown() override;

  struct State;

 private:
  State* state_;  // shared with the watchdog and connection threads; freed by shutdown
};

// At most n answers worked on at once; the others wait their turn.
class WorkSlots {
 public:
  explicit WorkSlots(int n) : free_(n) {}
  void Acquire() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return free_ > 0; });
    --free_;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++free_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

}  // namespace snapsink
