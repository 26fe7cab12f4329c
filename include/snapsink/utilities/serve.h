// snapsink utility: serving a root's published generations over HTTP, and
// the status page. Built in utilities/serve/ on the public API only (as a
// user's program would be) and shipped in the same library.
//
//   snapsink::api::ServeOptions o;
//   o.listen = "127.0.0.1:0";                       // any free loopback port
//   auto server = snapsink::api::Server::Start("/data/root", o);
//   ... (*server)->port() ...
//   (*server)->Stop();                              // e.g. from a signal thread
//   snapsink::Status s = (*server)->Wait();
//
// A read-only HTTP/1.1 server over public Readers (reader.h):
//   GET /v1/query?window=&metric=&key=&generation=&format=json|csv
//       (window, from, to, metric, key, the prefixes and rollup read by
//       ParseQuery, utilities/query_text.h: one window syntax)
//       the rows of Reader::Query (Reader::Rollup with rollup=) as NDJSON
//       or CSV (utilities/table.h), with `Snapsink-Generation: G` and `ETag: "G"`; If-None-Match
//       "G" gives 304. Every answer comes from one pinned generation.
//   GET /v1/windows, /v1/generations   ReadOnlySink::Windows(), Generations() as NDJSON
//   GET /v1/status                      ReadOnlySink::StatusJson()
//   GET /metrics                        ReadOnlySink::MetricsText() plus the server's own
//   GET /healthz                        200 while the served generation verifies
//   GET /?generation=G                  the status page (HTML; ReadOnlySink::StatusPage)
//
// Hot switch: a watcher (inotify on the root, and a poll every poll_ms) pins
// the generation CURRENT names when it changes and reads it whole once, for
// /healthz; new requests use it from then on, requests in flight finish on
// theirs, and an old generation's pin goes with its last request, so gc can
// collect it. A query's answer up to 1 MiB is made whole, then sent; a
// longer one is sent in chunks (Transfer-Encoding: chunked) as it is made,
// a batch of rows at a time (never a window whole), and keeps its
// generation pinned until it is written (at most write_timeout_ms between
// two reads of its client); it takes one of `threads` only while it makes
// text, not while it writes. Starting a server fixes glibc's mmap and trim
// thresholds (mallopt) for the process, and after a burst of large answers
// it calls malloc_trim: the RSS returns near its idle size (docs/SERVE.md).
//
// Errors: unknown parameter or bad window/generation/format -> 400, unknown
// generation -> 404, damaged data -> 500 naming the file (other windows
// are still served), nothing published -> queries return no rows and
// /healthz 503. Every error body is {"error":"..."}.
//
// Limits (each a field below): connections beyond max_connections are
// answered 503 {"error":"too many connections"} by the accepting thread
// and closed;
// a request line longer than 8 KiB gets 414, a header line longer than
// 8 KiB 400, a body beyond max_request_bytes 413; a GET (or HEAD) that
// declares a body 400 at once, closed (no endpoint reads one). A client that does not
// take an answer for write_timeout_ms is disconnected; one that sends
// nothing for read_timeout_ms mid-request is answered 400 and disconnected
// after keep_alive_timeout_ms more (httplib waits that long for a next
// request); an idle keep-alive connection is closed after
// keep_alive_timeout_ms. Known limit: the accepting thread reads the
// request of a connection beyond max_connections before answering 503, so
// a slow client there delays accepting by up to read_timeout_ms.
//
// Beyond loopback: TLS, bearer tokens, an access log and Reload (the fields
// below, and docs/SERVE.md).
//
// No endpoint writes to the root.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "snapsink/sink.h"
#include "snapsink/reader.h"
#include "snapsink/status.h"

namespace snapsink::api {

struct ServeOptions {
  // "HOST:PORT", "[V6]:PORT", ":PORT" (every interface, 0.0.0.0) or "PORT"
  // (loopback); port 0 picks a free one (Server::port).
  // Loopback by default: serving beyond this host is an explicit choice.
  std::string listen = "127.0.0.1:8080";
  int threads = 8;                 // answers (queries, the status page) worked on at once
  // Connections in service, a thread each; beyond, a new one is answered 503
  // and closed without being read.
  int max_connections = 512;
  // A deadline, not an idle timeout: a request head must be complete within
  // header_timeout_ms of its first byte; else 408 and closed.
  int header_timeout_ms = 10000;
  // Accepted (it must be positive) and without effect: no endpoint reads a
  // request body, and one a request declares is refused once its head is
  // read (405 for a method other than GET or HEAD, 400 for a GET, 413 if
  // over max_request_bytes), unread.
  int body_timeout_ms = 10000;
  int read_timeout_ms = 5000;      // longest wait for the next bytes of a request
  int write_timeout_ms = 5000;     // longest wait for a client to take answer bytes
  int keep_alive_timeout_ms = 5000;  // idle keep-alive connections closed after this (whole seconds, >= 1 s)
  size_t max_request_bytes = 64 * 1024;  // request body limit (413 at once for a larger Content-Length)
  // Request head limit (request line, headers): 431 and closed beyond it,
  // checked as bytes arrive, before the token is.
  size_t max_header_bytes = 64 * 1024;
  // A query's answer of more bytes than this is refused (413 naming the
  // limit and how to narrow the query) when it is held (up to 1 MiB); an
  // answer sent in chunks is cut once past it (no last chunk: the client
  // sees an incomplete answer). Memory per query is a batch of rows and
  // about 1 MiB whatever this is (a roll-up: and about 1 MiB of sums,
  // Reader::RollupEach).
  size_t max_answer_bytes = 32 * 1024 * 1024;
  // A query's answer of more rows than this is refused (413 naming the
  // limit and how to narrow the query), always before its first byte is
  // sent: the rows of an answer sent in chunks are counted first.
  size_t max_rows = 1000000;
  int poll_ms = 500;               // the watcher re-reads CURRENT at least this often

  // Serving beyond this host. A listen address other than loopback
  // (127.0.0.0/8, ::1, localhost) needs TLS and a token file both, unless
  // insecure (then a warning through on_note at Start); InvalidArgument otherwise.
  // TLS: PEM certificate (chain) and key files, both or neither; TLS 1.2 at
  // least. A certificate or key that does not load or match: InvalidArgument
  // naming the file.
  std::string tls_cert_file, tls_key_file;
  // TLS 1.2's cipher suites, an OpenSSL cipher string ("" : ECDHE with AEAD
  // ciphers only); TLS 1.3 keeps OpenSSL's default suites. Needs the TLS
  // files; a string OpenSSL matches no suite in: InvalidArgument.
  std::string tls_ciphers;
  // Bearer tokens: one a line, optionally "name:token"; blank lines and
  // '#' comments ignored; refused when group/other may access it (mode &
  // 077). Then every request but /healthz needs "Authorization: Bearer
  // TOKEN", else 401 with "WWW-Authenticate: Bearer".
  std::string token_file;
  bool insecure = false;
  // One line per request: "" none, "-" stderr, else a file appended to.
  // "TIME PEER TOKEN-NAME METHOD TARGET STATUS BYTES MICROSECONDS", TIME UTC
  // RFC 3339, TOKEN-NAME "-" without one; never the token.
  std::string access_log;
  // Notes of the server: the insecure warning at Start, a generation that
  // did not open while refreshing (the server keeps serving the one it has).
  // Unset: dropped; the library never prints.
  std::function<void(const std::string& note)> on_note;
};

// The status page (the server's GET /): one self-contained
// HTML page (no script, no external request) of sink's root at `generation`
// (0: the current one; NotFound if gone), pinned by a Reader while it is
// made: windows, generations and what each changed, gaps, sources, the
// partitions processes share, health (every block of the generation read
// back) and disk use.
Result<std::string> StatusPage(const ReadOnlySink& sink, uint64_t generation = 0);

class Server {
 public:
  // Opens the root read-only, binds options.listen, pins the current
  // generation (none yet is fine) and serves on threads of its own.
  // InvalidArgument for a bad listen address or limit (the message names the
  // field: "ServeOptions::threads 0: must be at least 1"), IOError when the
  // address cannot be bound, NotFound when root is not a snapsink root.
  static Result<std::unique_ptr<Server>> Start(const std::string& root, const ServeOptions& options);
  // The same, reading live state (/v1/windows, /v1/status, /metrics) through
  // an open handle, e.g. the writer's Sink in a process that also runs
  // (LMDB allows one environment per root per process). sink must outlive
  // the Server; the server's reads of it take turns among themselves only.
  static Result<std::unique_ptr<Server>> Start(const ReadOnlySink& sink, const ServeOptions& options);
  // Stop, then Wait.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port (the chosen one when the listen port was 0).
  int port() const;
  // HOST:PORT as bound, e.g. "127.0.0.1:8080".
  std::string address() const;
  // Stops accepting. Callable from any thread, more than once; returns at once.
  void Stop();
  // Re-reads the token file and the certificate and key, and reopens the
  // access log file (a program calls it on SIGHUP, say). A failed reload
  // keeps the old ones and returns why. Callable from any thread; requests
  // in flight and open connections go on.
  Status Reload();
  // Blocks until the server has stopped and the requests in flight are
  // answered; IOError if the listening socket failed.
  Status Wait();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snapsink::api
