// HttpServer: the inside of api::Server (snapsink/utilities/serve.h, which
// documents endpoints, errors and limits), over cpp-httplib and the public
// API: Readers of pinned generations, a ReadOnlySink's views. Endpoints:
//
//   GET /v1/query?window=&metric=&key=&generation=&format=json|csv
//       the bytes `snapsink query ... --format json|csv` prints for the same
//       arguments (application/x-ndjson or text/csv; past 1 MiB sent in
//       chunks as it is made), with headers
//       `Snapsink-Generation: G` and `ETag: "G"`; If-None-Match "G" gives 304.
//   GET /v1/windows        inspect windows, as NDJSON
//   GET /v1/generations    inspect generations, as NDJSON
//   GET /v1/status         ReadOnlySink::StatusJson (`status --json`)
//   GET /metrics           the root's metrics (`snapsink metrics`) plus the
//                          server's own
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

#include <memory>
#include <string>

#include "snapsink/sink.h"
#include "snapsink/status.h"
#include "snapsink/utilities/serve.h"

namespace snapsink {

// The parsed "HOST:PORT" / "[V6]:PORT" / ":PORT" (0.0.0.0) / "PORT" (127.0.0.1)
// of ServeOptions::listen.
Status ParseListen(const std::string& listen, std::string* host, int* port);

class HttpServer {
 public:
  // Binds options.listen and pins the current generation (none yet is fine:
  // queries then answer no rows until one is published). Does not serve yet.
  // state: the open handle that /v1/windows, /v1/status, /metrics and the
  // status page read live state through (a process that is also the writer
  // must not open its environment twice); those endpoints take turns on it.
  // Null: the server opens the root read-only itself.
  static Status Open(const std::string& root, const api::ServeOptions& options, const api::ReadOnlySink* state,
                     std::unique_ptr<HttpServer>* out);
  ~HttpServer();

  // The bound port (the chosen one when the listen port was 0).
  int port() const;
  // HOST:PORT as bound ("[V6]:PORT" for an IPv6 host).
  std::string address() const;
  // Serves until Stop; then finishes the requests in flight and returns.
  Status Run();
  // Re-reads token file and TLS files, reopens the access log (api::Server::Reload).
  Status Reload();
  // Stops accepting; Run returns once requests in flight are answered.
  void Stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink
