#include "bench/id_state_bench.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>

#include "engine/filenames.h"
#include "engine/id_dedup.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "sink/root_views.h"

namespace snapsink::bench {
namespace {

constexpr int64_t kT0 = 1792576800000;  // 2026-10-21T10:00:00Z
constexpr uint64_t kChunk = 1000000;

void Check(const Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "id-state bench: %s: %s\n", what, s.message().c_str());
  std::exit(1);
}

}  // namespace

void RunIdState(const std::string& dir, uint64_t events, uint64_t per_hour, uint64_t commit_every) {
  const std::string root_path = dir + "/ids-root";
  RootConfig config;
  config.id_horizon_ms = 3600 * 1000;
  Check(Root::Init(Env::Default(), root_path, config), "init");
  std::unique_ptr<Root> root;
  Check(Root::Open(Env::Default(), root_path, Root::Access::kWriter, &root), "open");
  Ingester ingester(root->env(), root->store(), root->config());
  std::printf("ids: %" PRIu64 " id-only events, %" PRIu64 " per hour of event time, horizon 1h, lateness 1h\n", events,
              per_hour);
  std::printf("%12s %12s %14s %12s %10s\n", "events", "ids_held", "id_table_bytes", "bytes/id", "events/s");
  const double ms_per_event = 3600.0 * 1000 / static_cast<double>(per_hour);
  uint64_t sent = 0;
  for (uint64_t chunk = 0; sent < events; ++chunk) {
    // One source per million lines, written and then removed: the input never
    // takes more than one chunk of disk.
    const std::string path = dir + "/ids-" + std::to_string(chunk) + ".ndjson";
    {
      std::ofstream out(path);
      char line[160];
      for (uint64_t i = 0; i < kChunk && sent < events; ++i, ++sent) {
        const int64_t ts = kT0 + static_cast<int64_t>(static_cast<double>(sent) * ms_per_event);
        const int n = std::snprintf(line, sizeof line,
                                    "{\"producer\":\"app-%" PRIu64 "\",\"id\":\"evt-%" PRIu64
                                    "\",\"ts\":%lld,\"metric\":\"clicks\",\"key\":\"k%" PRIu64 "\"}\n",
                                    sent % 50, sent, static_cast<long long>(ts), sent % 100);
        out.write(line, n);
        if (sent % 20 == 7) out.write(line, n);  // a redelivery now and then
      }
    }
    IngestOptions opt;
    opt.path = path;
    opt.source = path;
    opt.commit_every = commit_every;
    opt.rejects_file = filenames::RejectsFile(root_path, path);
    SourceState st;
    const auto start = std::chrono::steady_clock::now();
    Check(ingester.Run(opt, &st), "ingest");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::remove(path.c_str());
    std::unique_ptr<Txn> txn;
    Check(root->store()->BeginRead(&txn), "read");
    auto max_ts = Root::GetMetaU64(txn.get(), meta::kMaxEventTs);
    Check(max_ts.status(), "meta");
    api::IdsInfo ids;
    std::optional<int64_t> mt;
    if (*max_ts) mt = static_cast<int64_t>(**max_ts);
    Check(ReadIdsInfo(txn.get(), mt, root->config(), &ids), "stats");
    std::printf("%12" PRIu64 " %12" PRIu64 " %14" PRIu64 " %12.1f %10.0f\n", sent, ids.held, ids.table_bytes,
                ids.held ? static_cast<double>(ids.table_bytes) / static_cast<double>(ids.held) : 0.0,
                static_cast<double>(st.lines) / secs);
    std::fflush(stdout);
  }
}

}  // namespace snapsink::bench
