// snapsink_bench --serve: point queries over HTTP on loopback (GET /v1/query
// with window, metric and key) from N concurrent clients, beside the same
// lookups through an in-process Reader, on one published window.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"
#include "publish/seal.h"
#include "snapsink/utilities/serve.h"

namespace snapsink::bench {
namespace {

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "serve bench: %s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int ServeBenchMain(int argc, char** argv) {
  uint64_t rows = 100000, requests = 20000;
  std::vector<int> clients = {1, 4, 16};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--rows=", 0) == 0) rows = std::strtoull(a.c_str() + 7, nullptr, 10);
    if (a.rfind("--requests=", 0) == 0) requests = std::strtoull(a.c_str() + 11, nullptr, 10);
    if (a == "--quick") rows = 2000, requests = 500;
  }
#ifndef NDEBUG
  std::printf("WARNING: assertions are on; this is not an optimised build\n");
#endif
  char tmpl[] = "/tmp/snapsink-serve-bench-XXXXXX";
  const std::string work = ::mkdtemp(tmpl);
  const std::string root_path = work + "/root";
  Env* env = Env::Default();
  Check(Root::Init(env, root_path, RootConfig{}), "init");
  const int64_t window = 1792576800000LL;  // 2026-10-21T10:00:00Z
  {
    const std::string input = work + "/events.ndjson";
    std::string data;
    for (uint64_t i = 0; i < rows; ++i) {
      data += "{\"producer\":\"p\",\"seq\":" + std::to_string(i) + ",\"ts\":" + std::to_string(window + 1000) +
              ",\"metric\":\"m\",\"key\":\"k" + std::to_string(i) + "\",\"value\":1.5}\n";
    }
    FILE* f = std::fopen(input.c_str(), "w");
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
    std::unique_ptr<Root> root;
    Check(Root::Open(env, root_path, Root::Access::kWriter, &root), "open");
    Ingester ingester(env, root->store(), root->config());
    IngestOptions o;
    o.path = input;
    o.source = "bench";
    o.rejects_file = filenames::RejectsFile(root_path, "bench");
    o.input_final = true;
    SourceState st;
    Check(ingester.Run(o, &st), "ingest");
    std::vector<int64_t> windows;
    Check(DirtyWindows(root->store(), root->config(), true, &windows), "dirty");
    std::vector<SealedWindow> sealed;
    Check(SealWindows({env, root_path, root->store(), root->config().window_ms}, windows, &sealed), "seal");
    PublishResult r;
    Check(PublishStaged(env, root_path, root->store(), root->config(), &r), "publish");
  }
  std::mt19937_64 rng(42);
  std::vector<std::string> keys(requests);
  for (auto& k : keys) k = "k" + std::to_string(rng() % rows);

  // In-process Reader: the same point lookups, one thread.
  {
    std::unique_ptr<Reader> reader;
    Check(Reader::Open(env, root_path, 0, &reader), "reader");
    Row row;
    for (const auto& k : keys) Check(reader->Get(window, "m", k, &row), "warm");
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& k : keys) Check(reader->Get(window, "m", k, &row), "get");
    const double s = Seconds(t0, std::chrono::steady_clock::now());
    std::printf("in-process Reader point lookups: %.0f lookups/s (%llu rows, 1 thread)\n",
                static_cast<double>(keys.size()) / s, static_cast<unsigned long long>(rows));
  }

  api::ServeOptions so;
  so.listen = "127.0.0.1:0";
  so.threads = 16;
  auto started = api::Server::Start(root_path, so);
  Check(started.status(), "serve");
  std::unique_ptr<api::Server> server = std::move(*started);
  const int port = server->port();
  const std::string w = FormatIso(window);
  for (int n : clients) {
    std::vector<std::vector<double>> lat(n);
    std::atomic<uint64_t> failures{0};
    const uint64_t per = requests / n;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int c = 0; c < n; ++c) {
      ts.emplace_back([&, c] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_keep_alive(true);
        cli.set_tcp_nodelay(true);
        lat[c].reserve(per);
        for (uint64_t i = 0; i < per; ++i) {
          const std::string& k = keys[(c * per + i) % keys.size()];
          const auto a = std::chrono::steady_clock::now();
          auto r = cli.Get("/v1/query?window=" + w + "&metric=m&key=" + k);
          lat[c].push_back(Seconds(a, std::chrono::steady_clock::now()));
          if (!r || r->status != 200) ++failures;
        }
      });
    }
    for (auto& t : ts) t.join();
    const double s = Seconds(t0, std::chrono::steady_clock::now());
    std::vector<double> all;
    for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());
    const double p50 = all[all.size() / 2], p99 = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    std::printf("HTTP point queries, %2d clients: %.0f requests/s, p50 %.3f ms, p99 %.3f ms, %llu failed\n", n,
                static_cast<double>(all.size()) / s, p50 * 1e3, p99 * 1e3,
                static_cast<unsigned long long>(failures.load()));
  }
  server->Stop();
  Check(server->Wait(), "serve");
  std::string rm = "rm -rf " + work;
  if (std::system(rm.c_str()) != 0) return 1;
  return 0;
}

}  // namespace snapsink::bench
