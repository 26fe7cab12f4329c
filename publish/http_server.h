// HttpServer: a read-only HTTP/1.1 server over the published generations of
// a root (cpp-httplib). Endpoints:
//
//   GET /v1/query?window=&metric=&key=&generation=&format=json|csv
//       the bytes `snapsink query ... --format json|csv` prints for the same
//       arguments (application/x-ndjson or text/csv), with headers
//       `Snapsink-Generation: G` and `ETag: "G"`; If-None-Match "G" gives 304.
//   GET /v1/windows        inspect windows, as NDJSON
//   GET /v1/generations    inspect generations, as NDJSON
//   GET /v1/status         status_text(), when set
//   GET /metrics           root_metrics() (when set) plus the server's own
//                          Prometheus metrics
//   GET /healthz           200 while the current generation verifies
//
// Every answer comes from one pinned generation. The server pins the
// current generation (a pool of Readers on it, kept by a shared_ptr); a
// watcher thread (inotify on the root directory, plus a poll every poll_ms)
// pins the new one when CURRENT changes, and new requests use it from then
// on. A request in flight keeps the generation it started with; the old
// pins are released when its last request ends, so gc can collect it.
//
// Bad requests: an unknown parameter, a window or generation that does not
// parse, an unknown format: 400 with {"error":"..."} naming it; a generation
// that does not exist: 404; damaged data: 500 naming the file, and the
// server goes on serving. Beyond max_connections connections in service, a
// new one gets 503. Request lines, headers and bodies are bounded; a slow
// client is cut off by the read and write timeouts.
//
// Thread-safe: Stop may be called from any thread. No endpoint writes to the
// root.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/env.h"
#include "engine/status.h"

namespace snapsink {

class Root;

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see HttpServer::port)
  int threads = 8;  // worker threads, each serving one connection at a time
  int max_connections = 64;
  int read_timeout_ms = 5000;
  int write_timeout_ms = 5000;
  int keep_alive_timeout_ms = 5000;
  size_t max_request_bytes = 64 * 1024;
  int poll_ms = 500;  // the watcher re-reads CURRENT at least this often
  // Optional: Prometheus text of the root's own metrics, prepended to /metrics.
  std::function<Status(Root*, std::string*)> root_metrics;
  // Optional: the body of /v1/status (404 when unset).
  std::function<Status(Root*, std::string*)> status_text;
  // Optional: how the window parameter is read (the tool's window syntax);
  // unset: a window start (ParseWindowName). InvalidArgument names it.
  std::function<Status(const std::string& text, int64_t window_ms, int64_t* start)> parse_window;
  // Optional: the open Root that /v1/windows, /v1/status and /metrics read
  // LMDB state through (a process that is also the writer must not open its
  // environment twice). When null the server opens the root read-only once.
  // Those three endpoints take turns on it.
  Root* root = nullptr;
};

class HttpServer {
 public:
  // Binds host:port and pins the current generation (none yet is fine:
  // queries then answer 503 until one is published). Does not serve yet.
  static Status Open(Env* env, const std::string& root, ServeOptions options, std::unique_ptr<HttpServer>* out);
  ~HttpServer();

  // The bound port (the chosen one when options.port was 0).
  int port() const;
  // Serves until Stop; then finishes the requests in flight and returns.
  Status Run();
  // Stops accepting; Run returns once requests in flight are answered.
  void Stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink
