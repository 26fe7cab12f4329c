// serve ROOT [--listen HOST:PORT] ...: the read-only HTTP server over a root (include/snapsink/utilities/serve.h).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/serve.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/stop_signals.h"
#include "tools/write_results.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// SIGHUP as an event, as StopSignals: construct before starting threads;
// OnSignal runs fn on a thread of its own at every SIGHUP until Finish.
class HangupSignals {
 public:
  HangupSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  ~HangupSignals() { Finish(); }
  void OnSignal(std::function<void()> fn) {
    thread_ = std::thread([this, fn = std::move(fn)] {
      for (;;) {
        int sig = 0;
        sigwait(&set_, &sig);
        if (done_) return;
        fn();
      }
    });
  }
  void Finish() {
    if (thread_.joinable()) {
      done_ = true;
      pthread_kill(thread_.native_handle(), SIGHUP);
      thread_.join();
    }
  }

 private:
  sigset_t set_;
  std::thread thread_;
  std::atomic<bool> done_{false};
};

}  // namespace

Status ServeFlagNames(const Status& s) {
  return NameFlags(s, {{"ServeOptions::listen", "--listen"},
                       {"ServeOptions::threads", "--threads"},
                       {"ServeOptions::max_connections", "--max-connections"},
                       {"ServeOptions::header_timeout_ms", "--header-timeout (ms)"},
                       {"ServeOptions::body_timeout_ms", "--body-timeout (ms)"},
                       {"ServeOptions::read_timeout_ms", "--read-timeout (ms)"},
                       {"ServeOptions::write_timeout_ms", "--write-timeout (ms)"},
                       {"ServeOptions::keep_alive_timeout_ms", "--keep-alive-timeout (ms)"},
                       {"ServeOptions::max_request_bytes", "--max-request-bytes"},
                       {"ServeOptions::max_header_bytes", "--max-header-bytes"},
                       {"ServeOptions::max_answer_bytes", "--max-answer-bytes"},
                       {"ServeOptions::max_rows", "--max-rows"},
                       {"ServeOptions::tls_cert_file", "--tls-cert"},
                       {"ServeOptions::tls_key_file", "--tls-key"},
                       {"ServeOptions::tls_ciphers", "--tls-ciphers"},
                       {"ServeOptions::token_file", "--token-file"},
                       {"ServeOptions::access_log", "--access-log"},
                       {"ServeOptions::insecure", "--insecure"}});
}

void PrintServeNote(const std::string& note) {
  PrintNote("snapsink serve: " + ServeFlagNames(Status::InvalidArgument(note)).message());
}

namespace {

Status CmdServe(const ServeArgs& a) {
  api::ServeOptions o = a.options;
  o.on_note = PrintServeNote;
  auto duration = [](const char* option, const std::string& text, int* ms) {
    int64_t v = 0;
    if (!api::ParseDuration(text, &v) || v <= 0 || v > INT32_MAX) {
      return Status::InvalidArgument(std::string(option) + " " + text + ": expected a duration such as 5s or 500ms");
    }
    *ms = static_cast<int>(v);
    return Status::OK();
  };
  SNAPSINK_RETURN_IF_ERROR(duration("--header-timeout", a.header_timeout, &o.header_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--body-timeout", a.body_timeout, &o.body_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--read-timeout", a.read_timeout, &o.read_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--write-timeout", a.write_timeout, &o.write_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--keep-alive-timeout", a.keep_alive_timeout, &o.keep_alive_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--poll", a.poll, &o.poll_ms));
  o.access_log = a.quiet ? "" : a.access_log.empty() ? "-" : a.access_log;
  StopSignals signals;  // before the server's threads start
  HangupSignals hangups;
  auto started = api::Server::Start(a.root, o);
  if (!started.ok()) return ServeFlagNames(started.status());
  std::unique_ptr<api::Server> server = std::move(*started);
  const bool tls = !o.tls_cert_file.empty();
  std::printf("serving %s on %s://%s\n", a.root.c_str(), tls ? "https" : "http", server->address().c_str());
  std::fflush(stdout);
  signals.OnSignal([&server] { server->Stop(); });
  hangups.OnSignal([&server] {
    Status r = ServeFlagNames(server->Reload());
    if (r.ok()) {
      std::fprintf(stderr, "snapsink serve: SIGHUP: reloaded the token file, certificate and key\n");
    } else {
      std::fprintf(stderr, "snapsink serve: SIGHUP: reload failed, the old ones stay in use: %s\n", r.message().c_str());
    }
  });
  Status s = server->Wait();
  hangups.Finish();
  signals.Finish();  // its thread may still be in Stop: join it before the server goes
  return s;
}

}  // namespace

Command RegisterServe(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* c = app.add_subcommand("serve", "Serve the published generations over HTTP (read-only)");
  AddRoot(c, &a->root);
  AddBucketCache(c);
  c->add_option("--poll", a->poll,
                "How often CURRENT is read again (default 500ms); in a bucket by a conditional GET, which costs "
                "nothing when it has not changed");
  c->add_option("--listen", a->options.listen,
                "HOST:PORT to listen on (default 127.0.0.1:8080); :PORT listens on every interface (0.0.0.0), "
                "PORT alone on loopback (127.0.0.1); port 0: any free");
  AddServeLimits(c, a.get());
  c->add_option("--tls-cert", a->options.tls_cert_file,
                "PEM certificate (chain) file: serve HTTPS (TLS 1.2+); re-read on SIGHUP");
  c->add_option("--tls-key", a->options.tls_key_file, "PEM private key file of --tls-cert; re-read on SIGHUP");
  c->add_option("--tls-ciphers", a->options.tls_ciphers,
                "TLS 1.2 cipher suites, an OpenSSL cipher string (default: ECDHE with AES-GCM or ChaCha20-Poly1305); "
                "TLS 1.3 keeps OpenSSL's default suites");
  c->add_option("--token-file", a->options.token_file,
                "Access tokens, one a line (name:token); every request but /healthz needs "
                "'Authorization: Bearer TOKEN'; mode 600; re-read on SIGHUP");
  c->add_flag("--insecure", a->options.insecure,
              "Allow a non-loopback --listen without --tls-cert/--tls-key and --token-file (warns)");
  c->add_option("--access-log", a->access_log,
                "Append the access log (one line a request) to this file instead of stderr; reopened on SIGHUP");
  c->add_flag("--quiet", a->quiet, "No access log");
  c->footer(Footer("Endpoints: /v1/query /v1/windows /v1/generations /v1/status /metrics /healthz. "
                   "Beyond loopback: --tls-cert, --tls-key and --token-file, or --insecure. SIGHUP re-reads them. " +
                       ExitStatusLine({{Exit::kOk, "after SIGTERM/SIGINT"}, Exit::kFailure}),
                   "snapsink serve /data/orders --listen 127.0.0.1:8080"));
  return {c, [a] { return CmdServe(*a); }};
}

}  // namespace snapsink
