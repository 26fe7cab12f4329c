// serve: the read-only HTTP server over a root (include/snapsink/serve.h).
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>

#include "snapsink/serve.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  // Blocked here, before any other thread starts, so every thread inherits
  // the mask and only the waiting thread takes the signal.
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

void StopSignals::OnSignal(std::function<void()> fn) {
  thread_ = std::thread([this, fn = std::move(fn)] {
    int sig = 0;
    sigwait(&set_, &sig);
    if (!done_) fn();
  });
}

StopSignals::~StopSignals() { Finish(); }

void StopSignals::Finish() {
  if (thread_.joinable()) {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
  }
}

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

void UseToolWindowSyntax(api::ServeOptions* o) {
  o->parse_window = [](const std::string& text, int64_t window_ms, int64_t* start) {
    return ParseWindowArg("window", text, window_ms, start);
  };
  o->parse_window_param = [](const std::string& name, const std::string& text, int64_t window_ms, int64_t* start) {
    return ParseWindowArg(name, text, window_ms, start);
  };
}

Status CmdServe(const ServeArgs& a) {
  api::ServeOptions o = a.options;
  UseToolWindowSyntax(&o);
  auto duration = [](const char* option, const std::string& text, int* ms) {
    int64_t v = 0;
    if (!api::ParseDuration(text, &v) || v <= 0 || v > INT32_MAX) {
      return Status::InvalidArgument(std::string(option) + " " + text + ": expected a duration such as 5s or 500ms");
    }
    *ms = static_cast<int>(v);
    return Status::OK();
  };
  SNAPSINK_RETURN_IF_ERROR(duration("--read-timeout", a.read_timeout, &o.read_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--write-timeout", a.write_timeout, &o.write_timeout_ms));
  SNAPSINK_RETURN_IF_ERROR(duration("--keep-alive-timeout", a.keep_alive_timeout, &o.keep_alive_timeout_ms));
  o.access_log = a.quiet ? "" : a.access_log.empty() ? "-" : a.access_log;
  StopSignals signals;  // before the server's threads start
  HangupSignals hangups;
  SNAPSINK_ASSIGN_OR_RETURN(std::unique_ptr<api::Server> server, api::Server::Start(a.root, o));
  const bool tls = !o.tls_cert_file.empty();
  std::printf("serving %s on %s://%s\n", a.root.c_str(), tls ? "https" : "http", server->address().c_str());
  std::fflush(stdout);
  signals.OnSignal([&server] { server->Stop(); });
  hangups.OnSignal([&server] {
    Status r = server->Reload();
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

}  // namespace snapsink
