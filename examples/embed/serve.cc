// embed_serve ROOT: serves a root (the one `embed` made) over HTTP on a free
// loopback port with the serving utility (<snapsink/utilities/serve.h>),
// prints the address, the generation it serves and the size of its status
// page, then stops. Exits non-zero on any error.
#include <cstdio>
#include <string>

#include <snapsink/reader.h>
#include <snapsink/sink.h>
#include <snapsink/utilities/serve.h>

namespace api = snapsink::api;

static int Fail(const snapsink::Status& s) {
  std::fprintf(stderr, "embed_serve: %s\n", s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: embed_serve ROOT\n");
    return 2;
  }
  const std::string root = argv[1];
  // One handle per root per process: the server reads live state through it.
  auto sink = api::Sink::OpenReadOnly(root);
  if (!sink.ok()) return Fail(sink.status());
  api::ServeOptions options;
  options.listen = "127.0.0.1:0";  // any free loopback port
  auto server = api::Server::Start(**sink, options);
  if (!server.ok()) return Fail(server.status());
  auto current = api::Reader::CurrentGeneration(root);
  if (!current.ok()) return Fail(current.status());
  auto page = api::StatusPage(**sink);
  if (!page.ok()) return Fail(page.status());
  std::printf("served on %s: generation %llu, status page %zu bytes\n", (*server)->address().c_str(),
              static_cast<unsigned long long>(*current), page->size());
  (*server)->Stop();
  if (snapsink::Status s = (*server)->Wait(); !s.ok()) return Fail(s);
  return 0;
}
