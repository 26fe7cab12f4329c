// api::Server: the public handle over http_server.h, serving on a thread of
// its own so that Start returns once the port is bound.
#include "snapsink/utilities/serve.h"

#include <thread>

#include "utilities/serve/http_server.h"
#include "utilities/status_macros.h"

namespace snapsink::api {

struct Server::Impl {
  std::unique_ptr<HttpServer> http;
  std::thread serving;
  Status result;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  HttpServer* http = impl_->http.get();
  impl_->serving = std::thread([this, http] { impl_->result = http->Run(); });
}

Server::~Server() {
  Stop();
  (void)Wait();
}

Result<std::unique_ptr<Server>> Server::Start(const std::string& root, const ServeOptions& options) {
  auto impl = std::make_unique<Impl>();
  SNAPSINK_RETURN_IF_ERROR(HttpServer::Open(root, options, nullptr, &impl->http));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Result<std::unique_ptr<Server>> Server::Start(const ReadOnlySink& sink, const ServeOptions& options) {
  auto impl = std::make_unique<Impl>();
  SNAPSINK_RETURN_IF_ERROR(HttpServer::Open(sink.path(), options, &sink, &impl->http));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->http->port(); }

std::string Server::address() const { return impl_->http->address(); }

void Server::Stop() { impl_->http->Stop(); }

Status Server::Reload() { return impl_->http->Reload(); }

Status Server::Wait() {
  if (impl_->serving.joinable()) impl_->serving.join();
  return impl_->result;
}

}  // namespace snapsink::api
