#include "utilities/serve/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <chrono>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include <httplib.h>
#include <openssl/err.h>

#include "snapsink/options.h"
#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "snapsink/views.h"
#include "utilities/serve/connections.h"
#include "utilities/serve/http_request.h"
#include "utilities/serve/serve_auth.h"
#include "utilities/serve/status_page.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/table.h"
#include "utilities/status_macros.h"

namespace snapsink {

using api::ServeOptions;

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  // "PORT": loopback; ":PORT": every interface; else HOST:PORT or [V6]:PORT.
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    *host = "127.0.0.1";
  } else if (colon == 0) {
    *host = "0.0.0.0";
  } else {
    *host = listen.substr(0, colon);
  }
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  const std::string p = colon == std::string::npos ? listen : listen.substr(colon + 1);
  int v = -1;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || v < 0 || v > 65535) {
    return Status::InvalidArgument("ServeOptions::listen " + listen + ": expected HOST:PORT, :PORT (every interface) or PORT "
                                   "(loopback), PORT 0..65535");
  }
  *port = v;
  return Status::OK();
}

namespace {

// Only SO_REUSEADDR: httplib's default also sets SO_REUSEPORT, which lets a
// second server bind a port another one listens on and share its requests.
void ListenSocketOptions(int sock) {
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Why host:port cannot be bound, found by binding it once more ourselves
// (httplib does not keep errno).
std::string BindFailure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || res == nullptr) {
    return "not an address of this host";
  }
  std::string why = "cannot bind";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    ListenSocketOptions(fd);
    const int rc = ::bind(fd, ai->ai_addr, ai->ai_addrlen);
    const int err = errno;
    ::close(fd);
    if (rc == 0) continue;
    if (err == EADDRINUSE) {
      why = "address already in use (port " + service + ": another server listens on it)";
      break;
    }
    if (err == EADDRNOTAVAIL) {
      why = "not an address of this host";
    } else {
      why = std::strerror(err);
    }
  }
  ::freeaddrinfo(res);
  return why;
}

}  // namespace

namespace {

// One pinned generation: a pool of Readers on it. The first Reader holds the
// pin; every Reader of the pool is closed (and the pin released) when the
// last shared_ptr to the generation goes, i.e. when its last request ends.
class PinnedGeneration {
 public:
  PinnedGeneration(std::string root, std::unique_ptr<api::Reader> first)
      : root_(std::move(root)), generation_(first->generation()) {
    free_.push_back(std::move(first));
  }
  uint64_t generation() const { return generation_; }

  Status Borrow(std::unique_ptr<api::Reader>* out) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!free_.empty()) {
        *out = std::move(free_.back());
        free_.pop_back();
        return Status::OK();
      }
    }
    // Pinned by the Readers of the pool: opening another one cannot miss it.
    Result<std::unique_ptr<api::Reader>> r = api::Reader::Open(root_, generation_);
    if (!r.ok()) return r.status();
    *out = std::move(*r);
    return Status::OK();
  }
  void Return(std::unique_ptr<api::Reader> r) {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(std::move(r));
  }
  // Closes the free Readers but the first: after a burst of requests the
  // pool holds what one needs, not one Reader per request of the burst.
  void KeepOne() {
    std::vector<std::unique_ptr<api::Reader>> surplus;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t i = 1; i < free_.size(); ++i) surplus.push_back(std::move(free_[i]));
      free_.resize(std::min<size_t>(free_.size(), 1));
    }
  }

  // Health: set by the watcher once it has read every block of the generation.
  std::atomic<int> health{0};  // 0 unknown, 1 verified, -1 damaged
  std::mutex health_mu;
  std::string health_error;

 private:
  const std::string root_;
  const uint64_t generation_;
  std::mutex mu_;
  std::vector<std::unique_ptr<api::Reader>> free_;
};

// A Reader borrowed for one request, returned to its generation's pool.
struct Lease {
  std::shared_ptr<PinnedGeneration> gen;  // null: reader is a one-off (an older generation)
  std::unique_ptr<api::Reader> reader;
  ~Lease() {
    if (gen && reader) gen->Return(std::move(reader));
  }
};

// An answer's rows, a query's (api::QueryRow) or a roll-up's
// (api::RollupRow), one at a time (QueryEach, RollupEach): what they hold.
bool HasRange(const api::QueryRow& r) { return r.row.min_micros.has_value(); }
bool HasRange(const api::RollupRow& r) { return r.min_micros.has_value(); }
bool HasDistinct(const api::QueryRow& r) { return r.row.distinct.has_value(); }
bool HasDistinct(const api::RollupRow& r) { return r.distinct.has_value(); }
size_t NameBytes(const api::QueryRow& r) { return r.row.metric.size() + r.row.key.size(); }
size_t NameBytes(const api::RollupRow& r) { return r.metric.size() + r.key.size(); }
template <typename R>
Status EachRow(api::Reader* reader, const api::QuerySpec& spec, const std::function<bool(const R&)>& fn) {
  if constexpr (std::is_same_v<R, api::RollupRow>) {
    return reader->RollupEach(spec, fn);
  } else {
    return reader->QueryEach(spec, fn);
  }
}

// Reads every row of every window: every checksum of the generation.
Status VerifyGeneration(api::Reader* r) {
  for (const api::WindowVersion& e : r->windows()) {
    SNAPSINK_RETURN_IF_ERROR(r->Scan(e.window_start_ms, std::nullopt, [](const api::Row&) {}));
  }
  return Status::OK();
}

// {"error":"..."} and a newline: one JSON record, escaped as every JSON the
// project writes.
std::string JsonError(const std::string& message) {
  api::Record r;
  r.Str("error", message);
  return api::FormatRecords({r}, {"error"}, api::OutputFormat::kJson);
}

// The columns of a query's answer (of a roll-up's with rollup), with no rows
// (a quantile column per quantile asked); minmax: with the min and max
// columns a minmax metric's row brings; distinct: with the distinct column
// a distinct metric's row brings.
std::vector<std::string> QueryColumns(bool rollup, const std::vector<double>& quantiles = {}, bool minmax = false,
                                      bool distinct = false) {
  if (rollup) {
    std::vector<api::RollupRow> one(minmax || distinct ? 1 : 0);
    if (minmax || distinct) one[0].min_micros = one[0].max_micros = 0;  // a distinct metric's row has a range too
    if (distinct) one[0].distinct = 0;
    return api::ToTable(one, 0, quantiles).columns;
  }
  std::vector<api::QueryRow> one(minmax || distinct ? 1 : 0);
  if (minmax || distinct) one[0].row.min_micros = one[0].row.max_micros = 0;
  if (distinct) one[0].row.distinct = 0;
  return api::ToTable(one, 0, quantiles).columns;
}

thread_local std::chrono::steady_clock::time_point t_request_start;
thread_local std::string t_token_name;  // the access token's name for the access log, empty: none
thread_local bool t_routed = false;     // the pre-routing handler ran (t_request_start is this request's)
thread_local size_t t_streamed_bytes = 0;  // bytes of a chunked answer written (the access log's size)

// A query's answer up to this long is held and sent whole (Content-Length);
// a longer one is sent in chunks of about kChunkBytes, made as it goes.
constexpr size_t kHoldBytes = 1 << 20;
constexpr size_t kChunkBytes = 64 << 10;
// Query rows are made text this many at a time (or fewer, about
// kChunkBytes of names): what an answer holds of its rows, however many
// rows a window has.
constexpr size_t kBatchRows = 512;

// A GET whose head says a body follows (httplib would not read it: refused).
bool ExpectsBody(const httplib::Request& req) {
  return req.get_header_value("Content-Length") != "" ? req.get_header_value("Content-Length") != "0"
                                                      : req.has_header("Transfer-Encoding");
}

// The bytes of a request's head as sent: request line, headers, blank line.
size_t HeadBytes(const httplib::Request& req) {
  size_t n = req.method.size() + 1 + req.target.size() + 1 + req.version.size() + 2 + 2;
  for (const auto& [k, v] : req.headers) n += k.size() + 2 + v.size() + 2;
  return n;
}

// The body length a request's head declares (Content-Length; 0 without one).
uint64_t DeclaredLength(const httplib::Request& req) {
  const std::string v = req.get_header_value("Content-Length");
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc::result_out_of_range) return UINT64_MAX;
  return ec == std::errc() ? n : 0;
}

// Holds a work slot and marks the connection working while an answer is made.
class Working {
 public:
  explicit Working(WorkSlots& slots) : slots_(slots) {
    ConnectionWorking();
    slots_.Acquire();
  }
  ~Working() { slots_.Release(); }

 private:
  WorkSlots& slots_;
};

constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

constexpr double kLatencyBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

// Opens a Reader of root at generation (0: the current one); top_only: one
// that reads the manifest parts of the windows it is asked for, not all
// (api::Reader::OpenTop; a query's one-off reader of an older generation).
Status OpenReader(const std::string& root, uint64_t generation, std::unique_ptr<api::Reader>* out,
                  bool top_only = false) {
  Result<std::unique_ptr<api::Reader>> r =
      top_only ? api::Reader::OpenTop(root, generation) : api::Reader::Open(root, generation);
  if (!r.ok()) return r.status();
  *out = std::move(*r);
  return Status::OK();
}

}  // namespace

struct HttpServer::Impl {
  Impl(std::unique_ptr<httplib::Server> server, int threads)
      : http_owner(std::move(server)), http(*http_owner), work(threads) {}
  std::string root;
  ServeOptions options;
  std::unique_ptr<httplib::Server> http_owner;  // an httplib::SSLServer with TLS
  httplib::Server& http;
  WorkSlots work;  // options.threads answers made at once
  std::string host;
  int port = 0;
  int listen_fd = -1;  // httplib's listening socket

  std::mutex current_mu;
  std::shared_ptr<PinnedGeneration> current;  // null until something is published
  // CURRENT missing while the state records a published generation: the
  // error GetStatus gives then ("" when it is not).
  std::string missing_current;

  int inotify_fd = -1;
  int stop_fd = -1;  // eventfd: wakes the watcher to stop
  std::thread watcher;
  std::atomic<bool> stopping{false};
  std::atomic<int> run_state{0};  // 0 not run, 1 Run called, 2 listen returned

  std::mutex metrics_mu;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (path, code) -> count
  uint64_t latency_counts[std::size(kLatencyBuckets) + 1] = {};
  double latency_sum = 0;
  uint64_t latency_count = 0;

  const api::ReadOnlySink* state = nullptr;  // live state: the caller's handle, or own_root
  std::unique_ptr<api::ReadOnlySink> own_root;
  std::mutex state_mu;             // one reader of LMDB state at a time

  // Issue 28: tokens, TLS credentials and the access log, replaced whole by Reload.
  std::mutex auth_mu;
  std::shared_ptr<const TokenSet> tokens;       // null: no token needed
  std::shared_ptr<const TlsCredentials> tls;    // null: plain HTTP
  std::mutex log_mu;
  std::FILE* log = nullptr;                     // null: no access log
  bool log_owned = false;

  ~Impl() {
    if (inotify_fd >= 0) ::close(inotify_fd);
    if (stop_fd >= 0) ::close(stop_fd);
    if (log_owned) std::fclose(log);
  }

  std::shared_ptr<const TokenSet> Tokens() {
    std::lock_guard<std::mutex> l(auth_mu);
    return tokens;
  }
  std::shared_ptr<const TlsCredentials> Tls() {
    std::lock_guard<std::mutex> l(auth_mu);
    return tls;
  }

  // Every handshake takes the certificate and key of the latest (re)load:
  // the shared SSL_CTX is never modified while connections use it.
  static int CertCallback(SSL* ssl, void* arg) {
    std::shared_ptr<const TlsCredentials> c = static_cast<Impl*>(arg)->Tls();
    return c && c->Apply(ssl) ? 1 : 0;
  }

  Status OpenLog() {
    if (options.access_log.empty()) return Status::OK();
    std::FILE* f = stderr;
    if (options.access_log != "-") {
      // Created 0600: it names peers and tokens (by name) and what they asked.
      const int fd = ::open(options.access_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      f = fd < 0 ? nullptr : ::fdopen(fd, "a");
      if (f == nullptr) {
        const int err = errno;
        if (fd >= 0) ::close(fd);
        return Status::IOError("ServeOptions::access_log " + options.access_log + ": " + std::strerror(err));
      }
    }
    std::lock_guard<std::mutex> l(log_mu);
    if (log_owned) std::fclose(log);
    log = f;
    log_owned = f != stderr;
    return Status::OK();
  }

  // Loads what the options name; on an error keeps what was there.
  Status LoadAuth() {
    std::string errors;
    if (!options.token_file.empty()) {
      std::shared_ptr<const TokenSet> t;
      Status s = TokenSet::Load(options.token_file, &t);
      if (s.ok()) {
        std::lock_guard<std::mutex> l(auth_mu);
        tokens = std::move(t);
      } else {
        errors += s.message();
      }
    }
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      auto c = std::make_shared<TlsCredentials>();
      Status s = TlsCredentials::Load(options.tls_cert_file, options.tls_key_file, c.get());
      if (s.ok()) {
        std::lock_guard<std::mutex> l(auth_mu);
        tls = std::move(c);
      } else {
        errors += (errors.empty() ? "" : "; ") + s.message();
      }
    }
    return errors.empty() ? Status::OK() : Status::InvalidArgument(errors);
  }

  void AccessLog(const httplib::Request& req, const httplib::Response& res) {
    if (options.access_log.empty()) return;
    // A request httplib refused itself (414, 400) has no start time: 0.
    const auto micros = !t_routed ? 0
                                  : std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now() - t_request_start)
                                        .count();
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    const std::shared_ptr<const TokenSet> set = Tokens();
    const std::string line = AccessLogLine(now_us - micros, req.remote_addr, req.remote_port, t_token_name,
                                           req.method, RedactTarget(req.target, set.get()), res.status,
                                           res.body.empty() ? t_streamed_bytes : res.body.size(), micros);
    std::lock_guard<std::mutex> l(log_mu);
    if (log == nullptr) return;
    std::fwrite(line.data(), 1, line.size(), log);
    std::fflush(log);
  }

  // A connection refused (503) or cut (408, 431) before a request was read:
  // counted under path "other", logged with method and target "-".
  void Refused(const std::string& addr, int peer_port, int status) {
    {
      std::lock_guard<std::mutex> l(metrics_mu);
      ++requests[{"other", status}];
    }
    if (options.access_log.empty()) return;
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    const std::string line = AccessLogLine(now_us, addr, peer_port, "", "-", "-", status, 0, 0);
    std::lock_guard<std::mutex> l(log_mu);
    if (log == nullptr) return;
    std::fwrite(line.data(), 1, line.size(), log);
    std::fflush(log);
  }

  std::shared_ptr<PinnedGeneration> Current() {
    std::lock_guard<std::mutex> l(current_mu);
    return current;
  }
  std::string MissingCurrent() {
    std::lock_guard<std::mutex> l(current_mu);
    return missing_current;
  }

  // Pins what CURRENT names if it is not the pinned generation; then reads
  // all of it once to know whether it verifies.
  void Refresh() {
    Result<uint64_t> current_generation = api::Reader::CurrentGeneration(root);
    if (current_generation.ok() && *current_generation == 0) {
      // Nothing published, unless the state records a generation: then
      // GetStatus fails naming it and the fix. Asked only when manifests/
      // holds a file, as a root that never published has none.
      Status missing = [this] {
        std::error_code ec;
        if (std::filesystem::is_empty(root + "/manifests", ec) || ec) return Status::OK();
        std::lock_guard<std::mutex> l(state_mu);
        return state->GetStatus().status();
      }();
      std::lock_guard<std::mutex> l(current_mu);
      missing_current = missing.ok() ? "" : missing.message();
      return;
    }
    if (!current_generation.ok()) return;
    {
      std::lock_guard<std::mutex> l(current_mu);
      missing_current.clear();
    }
    const uint64_t g = *current_generation;
    std::shared_ptr<PinnedGeneration> cur = Current();
    if (cur && cur->generation() == g) return;
    std::unique_ptr<api::Reader> r;
    Status s = OpenReader(root, 0, &r);
    if (!s.ok()) {
      if (options.on_note) options.on_note(s.message());
      return;
    }
    auto pinned = std::make_shared<PinnedGeneration>(root, std::move(r));
    {
      std::lock_guard<std::mutex> l(current_mu);
      current = pinned;
    }
    cur.reset();  // the old pin goes with its last request
    Lease lease{pinned, nullptr};
    s = pinned->Borrow(&lease.reader);
    if (s.ok()) s = VerifyGeneration(lease.reader.get());
    std::lock_guard<std::mutex> l(pinned->health_mu);
    pinned->health_error = s.message();
    pinned->health = s.ok() ? 1 : -1;
  }

  void Watch() {
    while (!stopping) {
      pollfd fds[2] = {{stop_fd, POLLIN, 0}, {inotify_fd, POLLIN, 0}};
      const int n = ::poll(fds, inotify_fd >= 0 ? 2 : 1, options.poll_ms);
      if (n > 0 && (fds[0].revents & POLLIN)) break;
      if (n > 0 && inotify_fd >= 0 && (fds[1].revents & POLLIN)) {
        char buf[4096];
        while (::read(inotify_fd, buf, sizeof(buf)) > 0) {
        }
      }
      Refresh();  // CurrentGeneration also closes cached files a gc removed
    }
  }

  static const char* PathLabel(const std::string& path) {
    static const char* const kPaths[] = {"/", "/v1/query", "/v1/windows", "/v1/generations", "/v1/status", "/metrics",
                                         "/healthz"};
    for (const char* p : kPaths) {
      if (path == p) return p;
    }
    return "other";
  }

  void Count(const httplib::Request& req, const httplib::Response& res) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_request_start).count();
    std::lock_guard<std::mutex> l(metrics_mu);
    ++requests[{PathLabel(req.path), res.status}];
    size_t b = 0;
    while (b < std::size(kLatencyBuckets) && seconds > kLatencyBuckets[b]) ++b;
    ++latency_counts[b];
    latency_sum += seconds;
    ++latency_count;
  }

  std::string OwnMetrics() {
    std::string out;
    out += "# HELP snapsink_http_requests_total HTTP requests answered, by path and status code.\n";
    out += "# TYPE snapsink_http_requests_total counter\n";
    std::lock_guard<std::mutex> l(metrics_mu);
    for (const auto& [k, n] : requests) {
      out += "snapsink_http_requests_total{path=\"" + k.first + "\",code=\"" + std::to_string(k.second) + "\"} " +
             std::to_string(n) + "\n";
    }
    out += "# HELP snapsink_http_request_duration_seconds Time to answer a request.\n";
    out += "# TYPE snapsink_http_request_duration_seconds histogram\n";
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= std::size(kLatencyBuckets); ++i) {
      cumulative += latency_counts[i];
      char le[32];
      if (i < std::size(kLatencyBuckets)) {
        std::snprintf(le, sizeof(le), "%g", kLatencyBuckets[i]);
      } else {
        std::snprintf(le, sizeof(le), "+Inf");
      }
      out += std::string("snapsink_http_request_duration_seconds_bucket{le=\"") + le + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    char sum[64];
    std::snprintf(sum, sizeof(sum), "%.9f", latency_sum);
    out += std::string("snapsink_http_request_duration_seconds_sum ") + sum + "\n";
    out += "snapsink_http_request_duration_seconds_count " + std::to_string(latency_count) + "\n";
    std::shared_ptr<PinnedGeneration> cur;
    {
      std::lock_guard<std::mutex> cl(current_mu);
      cur = current;
    }
    out += "# HELP snapsink_served_generation The generation new requests are answered from (0: none).\n";
    out += "# TYPE snapsink_served_generation gauge\n";
    out += "snapsink_served_generation " + std::to_string(cur ? cur->generation() : 0) + "\n";
    return out;
  }

  static void Error(httplib::Response& res, int code, const std::string& message) {
    res.status = code;
    res.set_content(JsonError(message), "application/json");
  }
  static void ErrorFor(httplib::Response& res, const Status& s) {
    Error(res, s.IsNotFound() ? 404 : s.IsCorruption() ? 500 : s.IsInvalidArgument() ? 400 : 500, s.message());
  }

  // working: the work slot, held while the answer is made; an answer made
  // whole and sent in chunks keeps it until it is written (after this
  // returns).
  void Query(const httplib::Request& req, httplib::Response& res, std::shared_ptr<Working> working) {
    QueryParams params;
    std::string error;
    if (!ParseQueryParams(req.params, &params, &error)) return Error(res, 400, error);
    api::QuerySpec spec;
    if (Status s = api::ParseQuery(params.text, state->settings().window_size_ms, &spec); !s.ok()) {
      return Error(res, 400, s.message());
    }
    const uint64_t generation = params.generation;
    const api::OutputFormat format = params.csv ? api::OutputFormat::kCsv : api::OutputFormat::kJson;
    const char* type = format == api::OutputFormat::kJson ? "application/x-ndjson" : "text/csv";

    Lease lease;
    std::shared_ptr<PinnedGeneration> cur = Current();
    if (generation == 0) {
      if (const std::string m = MissingCurrent(); !m.empty()) return Error(res, 503, m);
    }
    if (generation == 0 || (cur && cur->generation() == generation)) {
      if (!cur) {
        // As `snapsink query` on a root with nothing published: no rows.
        res.set_header("Snapsink-Generation", "0");
        res.set_content(api::FormatRecords({}, QueryColumns(spec.rollup_ms.has_value(), spec.quantiles), format), type);
        return;
      }
      lease.gen = cur;
      Status s = cur->Borrow(&lease.reader);
      if (!s.ok()) return ErrorFor(res, s);
    } else {
      // One window: the top manifest and that window's parts only. Else the
      // answer is made a window at a time, from the list of every window.
      Status s = OpenReader(root, generation, &lease.reader, /*top_only=*/spec.window.has_value());
      if (!s.ok()) return ErrorFor(res, s);
    }
    const std::string g = std::to_string(lease.reader->generation());
    const std::string etag = "\"" + g + "\"";
    res.set_header("Snapsink-Generation", g);
    res.set_header("ETag", etag);
    if (req.has_header("If-None-Match")) {
      const std::string inm = req.get_header_value("If-None-Match");
      if (inm == etag || inm == "*") {
        res.status = 304;
        return;
      }
    }
    Answer answer;
    answer.columns = QueryColumns(spec.rollup_ms.has_value(), spec.quantiles);
    answer.header = api::FormatRecords({}, answer.columns, format);  // CSV's header line; "" for NDJSON
    answer.format = format;
    answer.generation = lease.reader->generation();
    answer.quantiles = spec.quantiles;
    bool too_large = false;
    Status s = MakeAnswer(lease.reader.get(), spec, &answer, &too_large);
    if (too_large) return Error(res, 413, s.message());
    if (!s.ok()) return ErrorFor(res, s);
    if (!answer.stream && answer.held.size() <= kHoldBytes) {
      res.set_content(std::move(answer.held), type);
      return;
    }
    // Sent in chunks (Transfer-Encoding: chunked), the rows made again as
    // they are sent (the limits were checked on the whole answer above).
    // The lambda holds the reader until the answer is written or the
    // client gone; a work slot only while it makes text (a client that
    // reads slowly keeps none from the others).
    auto stream = std::make_shared<Stream>();
    stream->lease.gen = std::move(lease.gen);
    stream->lease.reader = std::move(lease.reader);
    if (!answer.stream) stream->working = std::move(working);
    stream->answer = std::move(answer);
    stream->spec = spec;
    stream->large = std::make_shared<LargeAnswer>(*this);
    res.set_chunked_content_provider(type, [this, stream](size_t, httplib::DataSink& sink) {
      const bool ok = SendAnswer(*stream, sink);
      if (ok) sink.done();
      return ok;
    });
  }

  // Answers larger than kHoldBytes in flight; when the last one ends the
  // pool of readers keeps one (the burst opened one per request) and the
  // allocator hands its free memory back to the system (malloc_trim), so
  // the RSS returns near its idle size after a burst of them.
  std::mutex large_mu;
  int large_answers = 0;
  struct LargeAnswer {
    explicit LargeAnswer(Impl& i) : impl(i) {
      std::lock_guard<std::mutex> l(impl.large_mu);
      ++impl.large_answers;
    }
    ~LargeAnswer() {
      std::unique_lock<std::mutex> l(impl.large_mu);
      if (--impl.large_answers == 0) {
        l.unlock();
        if (std::shared_ptr<PinnedGeneration> cur = impl.Current()) cur->KeepOne();
        ::malloc_trim(0);
      }
    }
    Impl& impl;
  };
  // A query's answer: the text held (the whole answer), or, when stream,
  // none: the rows are made again as they are sent.
  struct Answer {
    std::vector<std::string> columns;
    std::string header;
    api::OutputFormat format = api::OutputFormat::kJson;
    uint64_t generation = 0;
    std::vector<double> quantiles;  // QuerySpec::quantiles: a column each
    std::string held;
    bool stream = false;
  };
  struct Stream {
    std::shared_ptr<LargeAnswer> large;  // first: released last, once the rest is freed
    Lease lease;
    std::shared_ptr<Working> working;
    Answer answer;
    api::QuerySpec spec;
  };

  // Query or roll-up rows (R) made text kBatchRows at a time (fewer when
  // their names are long): all an answer holds of its rows, whatever a
  // window's size. The text is ToTable's and FormatRecords', as `snapsink
  // query` prints it.
  template <typename R>
  class RowText {
   public:
    explicit RowText(const Answer& a) : a_(a) { batch_.reserve(kBatchRows); }
    // Adds a row; true when the batch is full (Flush it).
    bool Add(const R& r) {
      batch_.push_back(r);
      names_ += NameBytes(r);
      return batch_.size() >= kBatchRows || names_ >= kChunkBytes;
    }
    // Appends the batch's text (without the CSV header) to out; empties it.
    void Flush(std::string* out) {
      if (batch_.empty()) return;
      const std::string text = api::FormatRecords(api::ToTable(batch_, a_.generation, a_.quantiles).records, a_.columns, a_.format);
      out->append(text, a_.header.size());
      batch_.clear();
      names_ = 0;
    }

   private:
    const Answer& a_;
    std::vector<R> batch_;
    size_t names_ = 0;
  };

  // Writes the answer in pieces of kChunkBytes: its held text, or the rows
  // of st.spec made again (a batch at a time, under a work slot that is
  // given up while a piece is written): memory per answer is a batch of
  // rows and a piece (and a roll-up's range of sums, api::Reader::
  // RollupEach), whatever the windows' sizes. False when the client is gone
  // (or stops reading for the write timeout), the rows cannot be read or
  // the text passes options.max_answer_bytes: the connection is closed
  // without the chunked answer's last chunk, so the client sees an
  // incomplete answer, not a short one.
  bool SendAnswer(Stream& st, httplib::DataSink& sink) {
    return st.spec.rollup_ms ? SendRows<api::RollupRow>(st, sink) : SendRows<api::QueryRow>(st, sink);
  }
  template <typename R>
  bool SendRows(Stream& st, httplib::DataSink& sink) {
    // Writes whole slices of kChunkBytes (all of it: last), keeps the rest.
    const auto put = [&](std::string& text, bool last) {
      size_t at = 0;
      for (; at < text.size() && (last || text.size() - at >= kChunkBytes); at += kChunkBytes) {
        const size_t n = std::min(kChunkBytes, text.size() - at);
        if (!sink.write(text.data() + at, n)) return false;
        t_streamed_bytes += n;
      }
      text.erase(0, std::min(at, text.size()));
      return true;
    };
    if (!st.answer.stream) return put(st.answer.held, true);
    const auto note = [&](const std::string& why) {
      if (options.on_note) options.on_note("answer cut short: " + why);  // the library never prints
    };
    std::string piece = st.answer.header;
    size_t sent = piece.size();
    bool gone = false, over = false;
    RowText<R> text(st.answer);
    // Formats the batch into piece; past kChunkBytes writes it, without the
    // work slot. False to stop: over the limit, or the client is gone.
    const auto flush = [&](bool last) {
      const size_t before = piece.size();
      text.Flush(&piece);
      sent += piece.size() - before;
      if (sent > options.max_answer_bytes) {
        over = true;
        return false;
      }
      if (!last && piece.size() < kChunkBytes) return true;
      work.Release();
      gone = !put(piece, last);
      work.Acquire();
      return !gone;
    };
    work.Acquire();
    Status s = EachRow<R>(st.lease.reader.get(), st.spec, [&](const R& r) { return !text.Add(r) || flush(false); });
    const bool ok = s.ok() && !gone && !over && flush(true);
    work.Release();
    if (!s.ok()) note(s.message());
    if (over) {
      note("larger than " + std::to_string(options.max_answer_bytes) + " bytes (ServeOptions::max_answer_bytes)");
    }
    return ok;
  }

  // The answer to spec, checked against options.max_rows and
  // options.max_answer_bytes (beyond either, *too_large and an error naming
  // the limit and how to narrow the query). Up to kHoldBytes of its text
  // is held (a->held); past that the text is dropped, the other rows are
  // only counted (a->stream: the rows are made again as they are sent, and
  // their bytes measured then: SendAnswer). A roll-up the same, its rows
  // one at a time from RollupEach. The CSV columns are the whole answer's:
  // with min and max (distinct) when a row has them, as `snapsink query`
  // prints.
  Status MakeAnswer(api::Reader* reader, const api::QuerySpec& spec, Answer* a, bool* too_large) {
    return spec.rollup_ms ? MakeRows<api::RollupRow>(reader, spec, a, too_large)
                          : MakeRows<api::QueryRow>(reader, spec, a, too_large);
  }
  template <typename R>
  Status MakeRows(api::Reader* reader, const api::QuerySpec& spec, Answer* a, bool* too_large) {
    const auto over = [&] {
      *too_large = true;
      a->held.clear();
      a->held.shrink_to_fit();
      return Status::InvalidArgument("answer larger than " + std::to_string(options.max_answer_bytes) +
                                       " bytes (--max-answer-bytes): narrow the query with window=, from= and to=, "
                                       "metric= or key= (or a prefix), or raise the limit");
    };
    const auto too_many = [&] {
      *too_large = true;
      a->held.clear();
      a->held.shrink_to_fit();
      return Status::InvalidArgument("answer has more than " + std::to_string(options.max_rows) +
                                     " rows (--max-rows): narrow the query with window=, from= and to=, "
                                     "metric= or key= (or a prefix), or raise the limit");
    };
    a->held = a->header;
    a->stream = false;
    size_t rows = 0;
    bool minmax = false, distinct = false, too_many_rows = false, too_many_bytes = false;
    RowText<R> text(*a);
    const auto hold = [&] {
      text.Flush(&a->held);
      if (a->held.size() > options.max_answer_bytes) {
        too_many_bytes = true;
        return false;
      }
      if (a->held.size() > kHoldBytes) {
        a->stream = true;
        a->held = std::string();  // a new string: the held MiB is freed, not kept as capacity
      }
      return true;
    };
    SNAPSINK_RETURN_IF_ERROR(EachRow<R>(reader, spec, [&](const R& r) {
      minmax = minmax || HasRange(r);
      distinct = distinct || HasDistinct(r);
      if (++rows > options.max_rows) {
        too_many_rows = true;
        return false;
      }
      if (a->stream) return true;  // past the hold: only counted
      return !text.Add(r) || hold();
    }));
    if (too_many_rows) return too_many();
    if (too_many_bytes || (!a->stream && !hold())) return over();
    const bool rollup = spec.rollup_ms.has_value();
    if ((minmax || distinct) && a->format == api::OutputFormat::kCsv &&
        a->columns != QueryColumns(rollup, spec.quantiles, minmax, distinct)) {
      // A minmax (or distinct) metric's row: every row has the min and max
      // (distinct) columns.
      a->columns = QueryColumns(rollup, spec.quantiles, minmax, distinct);
      a->header = api::FormatRecords({}, a->columns, a->format);
      if (!a->stream) return MakeAnswer(reader, spec, a, too_large);  // held: made again with them
    }
    return Status::OK();
  }

  void Windows(httplib::Response& res) {
    std::lock_guard<std::mutex> l(state_mu);
    Result<std::vector<api::WindowInfo>> windows = state->Windows();
    if (!windows.ok()) return ErrorFor(res, windows.status());
    res.set_content(api::FormatTable(api::ToTable(*windows), api::OutputFormat::kJson), "application/x-ndjson");
  }

  void Generations(httplib::Response& res) {
    Result<std::vector<api::GenerationInfo>> generations = state->Generations();
    if (!generations.ok()) return ErrorFor(res, generations.status());
    res.set_content(api::FormatTable(api::ToTable(*generations), api::OutputFormat::kJson), "application/x-ndjson");
  }

  void Healthz(httplib::Response& res) {
    std::shared_ptr<PinnedGeneration> cur = Current();
    if (const std::string m = MissingCurrent(); !m.empty()) return Error(res, 503, m);
    if (!cur) return Error(res, 503, "nothing is published in " + root + " yet");
    const int h = cur->health;
    if (h == 0) return Error(res, 503, "generation " + std::to_string(cur->generation()) + " not verified yet");
    if (h < 0) {
      std::lock_guard<std::mutex> l(cur->health_mu);
      return Error(res, 503, cur->health_error);
    }
    res.set_content("{\"generation\":" + std::to_string(cur->generation()) + ",\"ok\":true}\n", "application/json");
  }

  // What `snapsink status --json` prints.
  void StatusJson(httplib::Response& res) {
    Result<std::string> json = [this] {
      std::lock_guard<std::mutex> l(state_mu);
      return state->StatusJson();
    }();
    if (!json.ok()) return ErrorFor(res, json.status());
    res.set_content(*json, "application/json");
  }

  // The status page (status_page_html.h) at the served generation, or
  // at ?generation=G.
  void Page(const httplib::Request& req, httplib::Response& res) {
    uint64_t generation = 0;
    for (const auto& [k, v] : req.params) {
      if (k != "generation") return Error(res, 400, "unknown parameter: " + k + " (only generation)");
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), generation);
      if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
        return Error(res, 400, "generation: " + v + ": not a generation number");
      }
    }
    Lease lease;
    std::optional<PageHealth> health;
    std::shared_ptr<PinnedGeneration> cur = Current();
    if (generation == 0 || (cur && cur->generation() == generation)) {
      if (cur) {
        lease.gen = cur;
        Status s = cur->Borrow(&lease.reader);
        if (!s.ok()) return ErrorFor(res, s);
        const int h = cur->health;
        PageHealth ph;
        ph.ok = h > 0;
        if (h == 0) {
          ph.text = "generation " + std::to_string(cur->generation()) + " not verified yet";
        } else if (h > 0) {
          ph.text = "generation " + std::to_string(cur->generation()) + " verified";
        } else {
          std::lock_guard<std::mutex> l(cur->health_mu);
          ph.text = cur->health_error;
        }
        if (const std::string m = MissingCurrent(); !m.empty()) ph = PageHealth{false, m};
        health = ph;
      } else {
        const std::string m = MissingCurrent();
        health = PageHealth{false, m.empty() ? "nothing is published in " + root + " yet" : m};
      }
    } else {
      Status s = OpenReader(root, generation, &lease.reader);
      if (!s.ok()) return ErrorFor(res, s);
    }
    std::string html;
    {
      std::lock_guard<std::mutex> l(state_mu);
      Status s = RenderStatusPage(*state, lease.reader.get(), generation != 0 && !(cur && cur->generation() == generation),
                                  health, &html);
      if (!s.ok()) return ErrorFor(res, s);
    }
    if (lease.reader) res.set_header("Snapsink-Generation", std::to_string(lease.reader->generation()));
    res.set_header("Cache-Control", "no-store");
    res.set_content(html, "text/html; charset=utf-8");
  }

  // `snapsink metrics`, then the server's own.
  void Metrics(httplib::Response& res) {
    Result<std::string> text = [this] {
      std::lock_guard<std::mutex> l(state_mu);
      return state->MetricsText();
    }();
    if (!text.ok()) return ErrorFor(res, text.status());
    res.set_content(*text + OwnMetrics(), "text/plain; version=0.0.4");
  }

  void Routes() {
    http.new_task_queue = [this] {
      ConnectionLimits limits;
      limits.max_connections = options.max_connections;
      limits.header_timeout_ms = options.header_timeout_ms;
      limits.max_head_bytes = options.max_header_bytes;
      limits.tls = !options.tls_cert_file.empty();
      limits.on_refused = [this](const std::string& addr, int peer_port, int status) { Refused(addr, peer_port, status); };
      return new ConnectionPool(std::move(limits));
    };
    // Without it a response written in two pieces waits for the delayed ACK (~40 ms).
    http.set_tcp_nodelay(true);
    http.set_socket_options([this](int sock) {
      ListenSocketOptions(sock);
      listen_fd = sock;  // the last one tried is the one bound
    });
    // A connection serves at most 100 requests (nginx's keepalive_requests),
    // then is closed; it never holds more than its own thread.
    http.set_keep_alive_max_count(100);
    http.set_read_timeout(std::chrono::milliseconds(options.read_timeout_ms));
    http.set_write_timeout(std::chrono::milliseconds(options.write_timeout_ms));
    http.set_keep_alive_timeout(std::max(1, options.keep_alive_timeout_ms / 1000));
    http.set_payload_max_length(options.max_request_bytes);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_request_start = std::chrono::steady_clock::now();
      t_token_name.clear();
      t_routed = true;
      ConnectionHeadRead();
      // Refusals that need no token, checked first and answered at once,
      // without reading a body; the connection is then closed (logger).
      if (const size_t head = HeadBytes(req); head > options.max_header_bytes) {
        Error(res, 431, "request head of " + std::to_string(head) + " bytes, larger than " +
                            std::to_string(options.max_header_bytes) + " (--max-header-bytes)");
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (const uint64_t length = DeclaredLength(req); length > options.max_request_bytes) {
        Error(res, 413, "request body larger than " + std::to_string(options.max_request_bytes) +
                            " bytes (--max-request-bytes)");
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.method != "GET" && req.method != "HEAD") {
        res.set_header("Connection", "close");
        if (PathLabel(req.path) == std::string("other")) {
          Error(res, 404, "no such endpoint: " + req.path);
        } else {
          res.set_header("Allow", "GET, HEAD");
          Error(res, 405, "method " + req.method + " not allowed on " + req.path + ": use GET");
        }
        return httplib::Server::HandlerResponse::Handled;
      }
      if (ExpectsBody(req)) {
        // httplib reads no body of a GET: its bytes would be read as the
        // next request on the connection (a request hidden in another's
        // body). No endpoint takes one, so it is refused at once.
        res.set_header("Connection", "close");
        Error(res, 400, "a " + req.method + " request has no body here (it declares one): send none");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (std::shared_ptr<const TokenSet> set = Tokens(); set && req.path != EndpointPath(Endpoint::kHealthz)) {
        // Bearer for API clients; basic auth (any user, the token as
        // password) for a browser, which cannot send a Bearer header.
        std::string token;
        const std::string authorization = req.get_header_value("Authorization");
        const bool has = BearerToken(authorization, &token) || BasicPassword(authorization, &token);
        const std::string* name = has ? set->Match(token) : nullptr;
        if (name == nullptr) {
          // The page asks a browser for the token as a password.
          res.set_header("WWW-Authenticate", req.path == "/" ? "Basic realm=\"snapsink\", charset=\"UTF-8\"" : "Bearer");
          Error(res, 401, has ? "access token not accepted" : "an access token is needed: Authorization: Bearer TOKEN");
          return httplib::Server::HandlerResponse::Handled;
        }
        t_token_name = *name;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      if (ConnectionCut()) return;  // httplib's 400 for a head the watchdog ended: already logged
      Count(req, res);
      AccessLog(req, res);
      t_token_name.clear();
      t_routed = false;
      t_streamed_bytes = 0;
      // The answer is written (the logger runs after).
      ConnectionAnswered(res.get_header_value("Connection") == "close");
    });
    // httplib answers limits itself (413, 414, 400 for an oversized or
    // malformed header): say which limit, with the option that sets it.
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty() || res.status < 400) return;
      std::string what;
      switch (res.status) {
        case 404: what = "no such endpoint: " + req.path; break;
        case 413:
          what = "request body larger than " + std::to_string(options.max_request_bytes) + " bytes (--max-request-bytes)";
          break;
        case 414: what = "request line longer than " + std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes"; break;
        case 400:
          what = "malformed request, or a header line longer than " + std::to_string(CPPHTTPLIB_HEADER_MAX_LENGTH) +
                 " bytes";
          break;
        default: what = "HTTP " + std::to_string(res.status);
      }
      res.set_content(JsonError(what), "application/json");
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      Error(res, 500, what);
    });
    http.Get(EndpointPath(Endpoint::kQuery), [this](const httplib::Request& req, httplib::Response& res) {
      Query(req, res, std::make_shared<Working>(work));
    });
    http.Get(EndpointPath(Endpoint::kWindows), [this](const httplib::Request&, httplib::Response& res) { Windows(res); });
    http.Get(EndpointPath(Endpoint::kGenerations), [this](const httplib::Request&, httplib::Response& res) { Generations(res); });
    http.Get(EndpointPath(Endpoint::kStatus), [this](const httplib::Request&, httplib::Response& res) { StatusJson(res); });
    http.Get(EndpointPath(Endpoint::kMetrics), [this](const httplib::Request&, httplib::Response& res) { Metrics(res); });
    http.Get(EndpointPath(Endpoint::kHealthz), [this](const httplib::Request&, httplib::Response& res) { Healthz(res); });
    http.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
      Working w(work);
      Page(req, res);
    });
  }
};

Status HttpServer::Open(const std::string& root, const ServeOptions& options, const api::ReadOnlySink* state,
                        std::unique_ptr<HttpServer>* out) {
  std::string host;
  int port = 0;
  SNAPSINK_RETURN_IF_ERROR(ParseListen(options.listen, &host, &port));
  auto positive = [](const char* name, int64_t v) {
    return v > 0 ? Status::OK() : Status::InvalidArgument(std::string(name) + " " + std::to_string(v) + ": must be at least 1");
  };
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::threads", options.threads));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::max_connections", options.max_connections));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::header_timeout_ms", options.header_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::body_timeout_ms", options.body_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::read_timeout_ms", options.read_timeout_ms));
  if (!ConnectionTrackingWorks()) {
    return Status::IOError("serve: this process's accept() is not the server's own (utilities/serve/connections.h): "
                            "connections could not be given deadlines");
  }
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::write_timeout_ms", options.write_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::keep_alive_timeout_ms", options.keep_alive_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::max_request_bytes", static_cast<int64_t>(options.max_request_bytes)));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::max_header_bytes", static_cast<int64_t>(options.max_header_bytes)));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::max_answer_bytes", static_cast<int64_t>(options.max_answer_bytes)));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::max_rows", static_cast<int64_t>(options.max_rows)));
  SNAPSINK_RETURN_IF_ERROR(positive("ServeOptions::poll_ms", options.poll_ms));
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  const bool loopback = IsLoopbackHost(host);
  if (!loopback && !(tls && !options.token_file.empty()) && !options.insecure) {
    return Status::InvalidArgument("ServeOptions::listen " + options.listen +
                                   ": not a loopback address; serving beyond this host needs "
                                   "ServeOptions::tls_cert_file, ServeOptions::tls_key_file and ServeOptions::token_file "
                                   "(or ServeOptions::insecure to serve without them)");
  }
  if (!options.tls_ciphers.empty()) {
    if (!tls) {
      return Status::InvalidArgument(
          "ServeOptions::tls_ciphers goes with ServeOptions::tls_cert_file and ServeOptions::tls_key_file");
    }
    std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> probe(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
    if (!probe || SSL_CTX_set_cipher_list(probe.get(), options.tls_ciphers.c_str()) != 1) {
      ERR_clear_error();
      return Status::InvalidArgument("ServeOptions::tls_ciphers " + options.tls_ciphers +
                                     ": OpenSSL knows no TLS 1.2 cipher suite in it (`openssl ciphers -v LIST` "
                                     "lists what it matches)");
    }
  }
  std::unique_ptr<httplib::Server> server;
  std::shared_ptr<const TlsCredentials> creds;
  if (tls) {
    auto c = std::make_shared<TlsCredentials>();
    SNAPSINK_RETURN_IF_ERROR(TlsCredentials::Load(options.tls_cert_file, options.tls_key_file, c.get()));
    creds = c;
    const std::string ciphers = options.tls_ciphers.empty() ? kTls12Ciphers : options.tls_ciphers;
    auto ssl = std::make_unique<httplib::SSLServer>([c, ciphers](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      // TLS 1.2: Mozilla's "intermediate" suites less DHE: ECDHE key
      // exchange (forward secrecy) and AEAD ciphers only; no static RSA, no
      // CBC (unless ServeOptions::tls_ciphers says otherwise). TLS 1.3's
      // suites are all AEAD (OpenSSL's default set).
      if (SSL_CTX_set_cipher_list(&ctx, ciphers.c_str()) != 1) return false;
      SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
      STACK_OF(X509)* chain = nullptr;
      SSL_CTX_get0_chain_certs(c->ctx.get(), &chain);
      return SSL_CTX_use_certificate(&ctx, SSL_CTX_get0_certificate(c->ctx.get())) == 1 &&
             SSL_CTX_use_PrivateKey(&ctx, SSL_CTX_get0_privatekey(c->ctx.get())) == 1 &&
             SSL_CTX_set1_chain(&ctx, chain) == 1;
    });
    if (!ssl->is_valid()) return Status::IOError("TLS: cannot set up the server's SSL context");
    server = std::move(ssl);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  // glibc raises its mmap threshold (to 2x the largest block freed, up to
  // 32 MiB) and with it the free space an arena may keep at its top; a
  // thread's arena's top is never handed back by malloc_trim (only the main
  // arena's is). Fixed thresholds keep them at 128 KiB: an answer's large
  // buffers are mapped and unmapped, and an arena's top is cut when freed.
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  auto impl = std::make_unique<Impl>(std::move(server), options.threads);
  impl->tls = creds;
  if (tls) SSL_CTX_set_cert_cb(static_cast<httplib::SSLServer&>(impl->http).ssl_context(), &Impl::CertCallback, impl.get());
  impl->root = root;
  impl->host = host;
  impl->options = options;
  impl->state = state;
  if (state == nullptr) {
    SNAPSINK_ASSIGN_OR_RETURN(impl->own_root, api::Sink::OpenReadOnly(root));
    impl->state = impl->own_root.get();
  }
  if (!options.token_file.empty()) SNAPSINK_RETURN_IF_ERROR(TokenSet::Load(options.token_file, &impl->tokens));
  SNAPSINK_RETURN_IF_ERROR(impl->OpenLog());
  impl->Routes();
  impl->port = port == 0 ? impl->http.bind_to_any_port(host) : (impl->http.bind_to_port(host, port) ? port : -1);
  if (impl->port <= 0) {
    return Status::IOError("ServeOptions::listen " + options.listen + ": " + BindFailure(host, port));
  }
  // httplib listens with a backlog of 5: a burst of connections overflows
  // it, and each SYN dropped costs its client a second. listen() again
  // sets a longer one.
  if (impl->listen_fd >= 0) ::listen(impl->listen_fd, SOMAXCONN);
  impl->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->stop_fd < 0) return Status::IOError("eventfd: " + std::string(std::strerror(errno)));
  impl->inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  // Without inotify the poll alone notices a new CURRENT.
  if (impl->inotify_fd >= 0 &&
      ::inotify_add_watch(impl->inotify_fd, root.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE) < 0) {
    ::close(impl->inotify_fd);
    impl->inotify_fd = -1;
  }
  if (!loopback && !(tls && impl->tokens)) {
    if (options.on_note) {
      options.on_note("warning: ServeOptions::insecure: serving on " + options.listen + " beyond this host" +
                      (tls ? "" : " without TLS (plain HTTP)") +
                      (impl->tokens ? "" : (tls ? " without access tokens" : " and without access tokens")));
    }
  }
  impl->Refresh();
  out->reset(new HttpServer(std::move(impl)));
  return Status::OK();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  Stop();
  if (impl_->watcher.joinable()) impl_->watcher.join();
}

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::address() const {
  const std::string& h = impl_->host;
  return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + std::to_string(impl_->port);
}

Status HttpServer::Run() {
  impl_->watcher = std::thread([this] { impl_->Watch(); });
  impl_->run_state = 1;
  const bool ok = impl_->stopping ? true : impl_->http.listen_after_bind();
  impl_->run_state = 2;
  Stop();
  impl_->watcher.join();
  if (!ok && !impl_->stopping) return Status::IOError("serve: the listening socket failed");
  return Status::OK();
}

Status HttpServer::Reload() {
  Status s = impl_->LoadAuth();
  Status l = impl_->log_owned ? impl_->OpenLog() : Status::OK();
  return s.ok() ? l : s;
}

void HttpServer::Stop() {
  if (impl_->stopping.exchange(true)) return;
  const uint64_t one = 1;
  if (::write(impl_->stop_fd, &one, sizeof(one)) < 0) {
  }
  // httplib's stop() does nothing before listen has started: wait for it.
  while (impl_->run_state == 1 && !impl_->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
}

}  // namespace snapsink
