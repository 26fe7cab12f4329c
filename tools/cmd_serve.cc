// serve: the read-only HTTP server over a root (include/snapsink/serve.h).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
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
  StopSignals signals;  // before the server's threads start
  SNAPSINK_ASSIGN_OR_RETURN(std::unique_ptr<api::Server> server, api::Server::Start(a.root, o));
  std::printf("serving %s on http://%s\n", a.root.c_str(), server->address().c_str());
  std::fflush(stdout);
  signals.OnSignal([&server] { server->Stop(); });
  Status s = server->Wait();
  signals.Finish();  // its thread may still be in Stop: join it before the server goes
  return s;
}

}  // namespace snapsink
