// serve: the read-only HTTP server over a root (publish/http_server.h).
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "engine/root.h"
#include "publish/http_server.h"
#include "publish/metrics.h"
#include "publish/root_status.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

namespace snapsink {

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return Status::InvalidArgument("--listen " + listen + ": not HOST:PORT");
  *host = listen.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  const std::string p = listen.substr(colon + 1);
  char* end = nullptr;
  const long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) return Status::InvalidArgument("--listen " + listen + ": bad port");
  *port = static_cast<int>(v);
  return Status::OK();
}

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

void AddToolViews(ServeOptions* o) {
  o->status_text = [](Root* root, std::string* out) {
    RootStatus s;
    SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(root, &s));
    *out = RootStatusJson(root->path(), s);
    return Status::OK();
  };
  o->root_metrics = [](Root* root, std::string* out) {
    RootStatus s;
    SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(root, &s));
    prometheus::Registry registry;
    AddRootMetrics(s, &registry);
    *out = SerializeMetrics(registry);
    return Status::OK();
  };
  o->parse_window = [](const std::string& text, int64_t window_ms, int64_t* start) {
    return ParseWindowArg("window", text, window_ms, start);
  };
}

Status CmdServe(const ServeArgs& a) {
  ServeOptions o;
  AddToolViews(&o);
  SNAPSINK_RETURN_IF_ERROR(ParseListen(a.listen, &o.host, &o.port));
  o.threads = a.threads;
  StopSignals signals;
  std::unique_ptr<HttpServer> server;
  SNAPSINK_RETURN_IF_ERROR(HttpServer::Open(Env::Default(), a.root, o, &server));
  std::printf("serving %s on http://%s:%d\n", a.root.c_str(), o.host.c_str(), server->port());
  std::fflush(stdout);
  signals.OnSignal([&server] { server->Stop(); });
  Status s = server->Run();
  signals.Finish();  // its thread may still be in Stop: join it before the server goes
  return s;
}

}  // namespace snapsink
