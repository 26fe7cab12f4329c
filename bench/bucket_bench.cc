// snapsink_bench --bucket: a root in an S3 bucket against a local S3 server
// (tests/rgw.sh start DIR; eval "$(tests/rgw.sh env DIR)"), each figure
// beside its baseline in the same run, wall clock with CPU time beside it:
//
//   publish  `snapsink seal --all` + `snapsink publish` of one window of
//            --rows rows (1,000,000) into the bucket root, vs one curl
//            process uploading the same objects' bytes (goal <= 2x); the
//            same into a local root beside them, and the publish step
//            alone (the upload) vs the same curl.
//   query    a point query (`snapsink query --metric M --key K`, a process
//            each) on the bucket root from a cold process, and from a warm
//            cache when the build has one (`query --cache-dir`), vs the same
//            on the local root (warm goal <= 2x).
//   window   one new window published into a bucket root whose generation
//            names --windows windows (100,000) vs one naming 100: the bytes
//            PUT by its seal and publish (every body sent, CURRENT's
//            included), counted from the request log
//            (SNAPSINK_S3_REQUEST_LOG), the new objects of the bucket's
//            listing beside them (goal <= 2x).
//
// Each ratio is printed on one line, "bucket_...: ...". --quick is a smoke
// run (small sizes). Not part of the CI bench smoke test: it needs the S3
// server.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/child_process.h"
#include "bench/input_gen.h"
#include "engine/env_bucket_root.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "engine/root_bucket.h"
#include "engine/s3/s3_client.h"
#include "engine/filenames.h"
#include "engine/state_checkpoint.h"
#include "engine/state_codec.h"
#include "engine/window_records.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"
#include "publish/publisher.h"
#include "publish/seal.h"

namespace snapsink::bench {

namespace {

constexpr int64_t kHourMs = 3600000;
constexpr int64_t kWindow = 1792576800000;  // 2026-10-21T10:00:00Z
constexpr int64_t kMinuteMs = 60000;

void Progress(const std::string& what) { std::fprintf(stderr, "... %s\n", what.c_str()); }

// key -> (size, etag) of every object under prefix.
std::map<std::string, std::pair<uint64_t, std::string>> Listing(S3Client* c, const std::string& bucket,
                                                                const std::string& prefix) {
  std::vector<S3ObjectInfo> objects;
  CheckOk(c->List(bucket, prefix + "/", "", &objects, nullptr), "list " + prefix);
  std::map<std::string, std::pair<uint64_t, std::string>> out;
  for (const S3ObjectInfo& o : objects) out[o.key] = {o.size, o.etag};
  return out;
}

// The keys new or changed from before to after, and their bytes.
std::vector<std::string> Changed(const std::map<std::string, std::pair<uint64_t, std::string>>& before,
                                 const std::map<std::string, std::pair<uint64_t, std::string>>& after,
                                 uint64_t* bytes) {
  std::vector<std::string> keys;
  *bytes = 0;
  for (const auto& [key, v] : after) {
    auto it = before.find(key);
    if (it != before.end() && it->second == v) continue;
    keys.push_back(key);
    *bytes += v.first;
  }
  return keys;
}

struct Flags {
  uint64_t rows = 1000000;
  uint64_t windows = 100000;
  int queries = 10;
  int reps = 3;
  std::string snapsink;
};

void PrintRatio(const char* name, double a, double b, double a_cpu, double b_cpu, const std::string& what) {
  std::printf("%s: %.2fx wall (%.3f s vs %.3f s), %.2fx cpu (%.3f s vs %.3f s): %s\n", name, a / b, a, b,
              a_cpu / b_cpu, a_cpu, b_cpu, what.c_str());
}

// publish: seal + publish of one wide window, bucket vs curl (and local).
void BenchPublish(const Flags& f, S3Client* client, const std::string& bucket, const ScratchDir& work,
                  std::map<std::string, std::string>* query_roots) {
  const std::string file = work / "wide.ndjson";
  const std::string local = work / "local-root", state = work / "bucket-state";
  const std::string root = "s3://" + bucket + "/wide";
  Progress("publish: generating " + std::to_string(f.rows) + " rows, ingesting into a local and a bucket root");
  WriteWideWindow(file, f.rows, kWindow);
  RunChild({f.snapsink, "init", local}, work / "log");
  RunChild({f.snapsink, "init", root}, work / "log");
  RunChild({f.snapsink, "ingest", local, file}, work / "log");
  RunChild({f.snapsink, "ingest", root, file, "--state", state}, work / "log");
  const S3Config& cfg = client->config();
  const std::string curl_config = work / "curl.conf";
  {
    std::ofstream c(curl_config);
    c << "user = \"" << cfg.access_key_id << ":" << cfg.secret_access_key << "\"\n";
  }
  chmod(curl_config.c_str(), 0600);
  std::vector<double> bw, bc, cw, cc, lw, lc, pw, pc, ratio, ratio_cpu, local_ratio, step_ratio, step_ratio_cpu;
  std::vector<double> zw, zc, zratio, zratio_cpu;
  uint64_t rows_csv = 0;
  uint64_t objects = 0, bytes = 0;
  uint64_t extra_seq = f.rows;
  for (int rep = 0; rep < f.reps; ++rep) {
    Progress("publish (rep " + std::to_string(rep + 1) + "/" + std::to_string(f.reps) + ")");
    if (rep > 0) {  // one more event makes the window dirty: the next seal rewrites all its rows
      const std::string extra = work / ("extra-" + std::to_string(rep) + ".ndjson");  // a source of its own
      std::ofstream(extra) << WideWindowExtraLine(extra_seq++, f.rows, kWindow);
      RunChild({f.snapsink, "ingest", local, extra}, work / "log");
      RunChild({f.snapsink, "ingest", root, extra, "--state", state}, work / "log");
    }
    Cost l1 = RunChild({f.snapsink, "seal", local, "--all"}, work / "log");
    Cost l2 = RunChild({f.snapsink, "publish", local}, work / "log");
    const auto before = Listing(client, bucket, "wide");
    Cost b1 = RunChild({f.snapsink, "seal", root, "--all", "--state", state}, work / "log");
    Cost b2 = RunChild({f.snapsink, "publish", root, "--state", state}, work / "log");
    const auto after = Listing(client, bucket, "wide");
    const std::vector<std::string> keys = Changed(before, after, &bytes);
    objects = keys.size();
    for (const std::string& k : keys) {
      if (k.find("/checkpoints/") == std::string::npos) continue;
      std::printf("bucket publish rep %d: the state checkpoint %s (%s), the publish step %.3f s wall, %.3f s cpu\n",
                  rep + 1, k.substr(k.rfind('/') + 1).c_str(),
                  HumanBytes(static_cast<double>(after.at(k).first)).c_str(), b2.wall, b2.cpu);
    }
    // The same bytes, uploaded by one curl process.
    std::vector<std::string> argv = {"curl", "-sS", "--fail", "-K", curl_config, "--aws-sigv4",
                                     "aws:amz:" + cfg.region + ":s3", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"};
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string body;
      CheckOk(client->Get(bucket, keys[i], &body, nullptr), "get " + keys[i]);
      const std::string path = work / ("obj" + std::to_string(i));
      std::ofstream(path, std::ios::binary) << body;
      argv.insert(argv.end(), {"-T", path, cfg.endpoint + "/" + bucket + "/curl-" + std::to_string(rep) + "/" +
                                               keys[i].substr(keys[i].find('/') + 1)});
    }
    Cost c = RunChild(argv, work / "log");
    for (size_t i = 0; i < keys.size(); ++i) RemoveTree(work / ("obj" + std::to_string(i)));
    // The fair baseline: the same rows as text (query --format csv of the
    // local root, not timed), compressed by `zstd -3` and then uploaded by
    // one curl: what building and storing a compressed copy costs anyway.
    const std::string csv = work / "rows.csv";
    RunChild({f.snapsink, "query", local, "--format", "csv"}, csv);
    rows_csv = FileSize(csv);
    const std::string put = "curl -sS --fail -K " + curl_config + " --aws-sigv4 aws:amz:" + cfg.region +
                            ":s3 -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -T " + csv + ".zst " + cfg.endpoint + "/" + bucket +
                            "/zstd-" + std::to_string(rep) + "/rows.csv.zst";
    // (a file between them: the gateway answers 411 to a PUT of unknown length)
    Cost z = RunChild({"sh", "-c", "zstd -3 -q -f " + csv + " && " + put}, work / "log");
    RemoveTree(csv);
    RemoveTree(csv + ".zst");
    zw.push_back(z.wall);
    zc.push_back(z.cpu);
    zratio.push_back((b1.wall + b2.wall) / z.wall);
    zratio_cpu.push_back((b1.cpu + b2.cpu) / z.cpu);
    bw.push_back(b1.wall + b2.wall);
    bc.push_back(b1.cpu + b2.cpu);
    cw.push_back(c.wall);
    cc.push_back(c.cpu);
    lw.push_back(l1.wall + l2.wall);
    lc.push_back(l1.cpu + l2.cpu);
    pw.push_back(b2.wall);
    pc.push_back(b2.cpu);
    step_ratio.push_back(b2.wall / c.wall);
    step_ratio_cpu.push_back(b2.cpu / c.cpu);
    ratio.push_back(bw.back() / cw.back());
    ratio_cpu.push_back(bc.back() / cc.back());
    local_ratio.push_back(bw.back() / lw.back());
  }
  std::printf("bucket publish: %" PRIu64 " rows, %" PRIu64 " objects, %s PUT\n", f.rows, objects,
              HumanBytes(static_cast<double>(bytes)).c_str());
  std::printf("bucket_publish_ratio_vs_curl: %.2fx wall (%.3f s vs %.3f s), %.2fx cpu (%.3f s vs %.3f s): "
              "seal + publish into the bucket vs one curl uploading the same bytes (goal <= 2x)\n",
              Median(ratio), Median(bw), Median(cw), Median(ratio_cpu), Median(bc), Median(cc));
  std::printf("bucket_publish_step_ratio_vs_curl: %.2fx wall (%.3f s vs %.3f s), %.2fx cpu (%.3f s vs %.3f s): "
              "the publish step alone (the upload; seal builds the snapshot on the local disk) vs the same curl\n",
              Median(step_ratio), Median(pw), Median(cw), Median(step_ratio_cpu), Median(pc), Median(cc));
  std::printf("bucket_publish_ratio_vs_zstd_curl: %.2fx wall (%.3f s vs %.3f s), %.2fx cpu (%.3f s vs %.3f s): "
              "seal + publish into the bucket vs `zstd -3` then one curl of the same rows as csv (%s)\n",
              Median(zratio), Median(bw), Median(zw), Median(zratio_cpu), Median(bc), Median(zc),
              HumanBytes(static_cast<double>(rows_csv)).c_str());
  std::printf("bucket_publish_ratio_vs_local: %.2fx wall (%.3f s vs %.3f s), cpu %.3f s vs %.3f s: "
              "seal + publish into the bucket vs into a local root\n",
              Median(local_ratio), Median(bw), Median(lw), Median(bc), Median(lc));
  RemoveTree(file);
  (*query_roots)["local"] = local;
  (*query_roots)["bucket"] = root;
}

// query: a point query, a process each, cold (and warm) on the bucket vs local.
void BenchQuery(const Flags& f, const ScratchDir& work, const std::map<std::string, std::string>& roots) {
  const std::string help = work / "help";
  RunChild({f.snapsink, "query", "--help"}, help);
  std::ifstream in(help);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool has_cache = text.find("--cache-dir") != std::string::npos;
  std::vector<double> local_w, local_c, cold_w, cold_c, warm_w, warm_c;
  const std::string cache = work / "cache";
  for (int q = 0; q < f.queries; ++q) {
    const uint64_t i = (static_cast<uint64_t>(q) * 7919 + 17) % f.rows;
    const std::vector<std::string> sel = {"--metric", WideMetric(i), "--key", WideKey(i)};
    auto with = [&](const std::string& root, std::vector<std::string> extra) {
      std::vector<std::string> argv = {f.snapsink, "query", root};
      argv.insert(argv.end(), sel.begin(), sel.end());
      argv.insert(argv.end(), extra.begin(), extra.end());
      return argv;
    };
    Cost l = RunChild(with(roots.at("local"), {}), work / "q");
    local_w.push_back(l.wall);
    local_c.push_back(l.cpu);
    RemoveTree(cache);
    Cost c = RunChild(with(roots.at("bucket"), has_cache ? std::vector<std::string>{"--cache-dir", cache}
                                                         : std::vector<std::string>{}),
                      work / "q");
    cold_w.push_back(c.wall);
    cold_c.push_back(c.cpu);
    if (has_cache) {  // the same query again, its blocks in the cache
      Cost w = RunChild(with(roots.at("bucket"), {"--cache-dir", cache}), work / "q");
      warm_w.push_back(w.wall);
      warm_c.push_back(w.cpu);
    }
  }
  PrintRatio("bucket_query_cold_ratio_vs_local", Median(cold_w), Median(local_w), Median(cold_c), Median(local_c),
             "a point query (a process each) from a cold cache vs a local root");
  if (has_cache) {
    PrintRatio("bucket_query_warm_ratio_vs_local", Median(warm_w), Median(local_w), Median(warm_c), Median(local_c),
               "the same query from a warm cache (--cache-dir) vs a local root (goal <= 2x)");
  } else {
    std::printf("bucket_query_warm_ratio_vs_local: not measured: this build's query has no --cache-dir (no "
                "reader cache yet)\n");
  }
}

// The bytes of the PUT bodies (sent=N) and the PUTs logged in the request
// log (SNAPSINK_S3_REQUEST_LOG) past its first `from` bytes; *state: those
// of the writer's state checkpoint (checkpoints/<generation>).
uint64_t LoggedPutBytes(const std::string& log, uint64_t from, uint64_t* puts, uint64_t* state) {
  std::ifstream in(log);
  in.seekg(static_cast<std::streamoff>(from));
  uint64_t bytes = 0;
  *puts = 0, *state = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(" sent=");
    if (line.rfind("PUT ", 0) != 0 || at == std::string::npos) continue;
    const uint64_t sent = std::strtoull(line.c_str() + at + 6, nullptr, 10);
    bytes += sent;
    if (line.find("/checkpoints/") != std::string::npos) *state += sent;
    ++*puts;
  }
  return bytes;
}

uint64_t FileSize(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// window: bytes PUT by one new window into a bucket root naming n windows,
// counted from the request log of its seal and publish (every body sent,
// retries included); *listed: the bytes of the objects the listing shows
// new or changed, as a cross-check.
uint64_t BytesOfOneNewWindow(S3Client* client, const std::string& bucket, const ScratchDir& work, uint64_t n,
                             uint64_t* listed, uint64_t* puts, uint64_t* state, double* publish_s) {
  const std::string prefix = "history-" + std::to_string(n);
  const std::string root = "s3://" + bucket + "/" + prefix;
  CheckOk(SetBucketStateDir(root, work / ("state-" + std::to_string(n))), "state dir");
  const std::string log = work / ("requests-" + std::to_string(n) + ".log");
  setenv("SNAPSINK_S3_REQUEST_LOG", log.c_str(), 1);  // read once, when the root's Env is made
  Env* env = nullptr;
  CheckOk(EnvForRoot(root, &env), "env of " + root);
  unsetenv("SNAPSINK_S3_REQUEST_LOG");
  RootConfig config;
  config.window_ms = kMinuteMs;
  CheckOk(InitBucketRoot(env, root, config), "init " + root);
  std::unique_ptr<Root> r;
  CheckOk(Root::Open(env, root, Root::Access::kWriter, &r), "open " + root);
  Progress("window: a bucket root whose generation names " + std::to_string(n) + " windows (not timed)");
  GenerationManifest gm;
  for (uint64_t w = 0; w < n; ++w) {
    gm.windows.push_back({kWindow + static_cast<int64_t>(w) * kMinuteMs, 1, w * 0x9e3779b97f4a7c15ull});
  }
  // The state a writer keeps of each window it sealed and published: its
  // window state and its seal record (with the ledger of one metric).
  CheckOk(CommitGeneration(r->env(), root, r->store(), &gm, [&](Txn* txn) {
    SealRecord seal;
    seal.state = SealState::kPublished;
    seal.rows = 100;
    seal.ledger.push_back({"m", {}});
    seal.ledger.back().totals.count = 100;
    for (const auto& w : gm.windows) {
      SNAPSINK_RETURN_IF_ERROR(WriteWindowState(txn, w.window_ms, WindowState{1, false}));
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kSeals, codec::SealKey(w.window_ms, 1), codec::Encode(seal)));
    }
    return Status::OK();
  }, "bench"), "history of " + root);
  // That writer's state checkpoint of its last publish (not counted).
  {
    std::unique_ptr<Txn> read;
    CurrentPointer current;
    CheckOk(r->store()->BeginRead(&read), "read");
    CheckOk(RecordedCurrent(read.get(), &current), "current");
    read.reset();
    CheckOk(WriteStateCheckpoint(r->env(), root, r->store(), current.generation), "state checkpoint");
  }
  const std::string events = work / "window.ndjson";
  {
    std::ofstream out(events, std::ios::trunc);
    const int64_t ts = kWindow + static_cast<int64_t>(n) * kMinuteMs;
    for (int k = 0; k < 100; ++k) {
      out << "{\"producer\":\"p\",\"seq\":" << k << ",\"ts\":" << ts + k << ",\"metric\":\"m\",\"key\":\"k" << k
          << "\",\"value\":1}\n";
    }
  }
  Ingester in(r->env(), r->store(), r->config());
  IngestOptions opt;
  opt.path = events;
  opt.source = "window";
  opt.commit_every = 10000;
  opt.rejects_file = filenames::RejectsFile(root, opt.source);
  SourceState st;
  CheckOk(in.Run(opt, &st), "ingest " + events);
  const auto before = Listing(client, bucket, prefix);
  const uint64_t log_from = FileSize(log);
  std::vector<int64_t> dirty;
  CheckOk(DirtyWindows(r->store(), r->config(), /*all=*/true, &dirty), "dirty windows");
  if (dirty.size() != 1) Die("window: expected one dirty window, got " + std::to_string(dirty.size()));
  SealTarget target{r->env(), r->path(), r->store(), r->config().window_ms};
  std::vector<SealedWindow> sealed;
  CheckOk(SealWindows(target, dirty, &sealed), "seal");
  PublishResult result;
  const auto t0 = std::chrono::steady_clock::now();
  CheckOk(PublishStaged(r->env(), r->path(), r->store(), r->config(), &result), "publish");
  *publish_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (result.windows != 1) Die("window: expected one published window");
  Changed(before, Listing(client, bucket, prefix), listed);
  return LoggedPutBytes(log, log_from, puts, state);
}

void BenchWindow(const Flags& f, S3Client* client, const std::string& bucket, const ScratchDir& work) {
  const uint64_t small = 100;
  uint64_t big_listed = 0, small_listed = 0, big_puts = 0, small_puts = 0, big_state = 0, small_state = 0;
  double big_s = 0, small_s = 0;
  const uint64_t big_bytes =
      BytesOfOneNewWindow(client, bucket, work, f.windows, &big_listed, &big_puts, &big_state, &big_s);
  const uint64_t small_bytes =
      BytesOfOneNewWindow(client, bucket, work, small, &small_listed, &small_puts, &small_state, &small_s);
  std::printf("bucket_one_window_bytes_ratio: %.2fx (%s in %" PRIu64 " PUTs into a root of %" PRIu64
              " windows vs %s in %" PRIu64 " PUTs into %" PRIu64
              "; of them the state checkpoint %s vs %s; new objects by listing %s vs %s; the publish %.3f s vs "
              "%.3f s): one new window writes O(change) bytes (goal <= 2x)\n",
              static_cast<double>(big_bytes) / static_cast<double>(small_bytes),
              HumanBytes(static_cast<double>(big_bytes)).c_str(), big_puts, f.windows,
              HumanBytes(static_cast<double>(small_bytes)).c_str(), small_puts, small,
              HumanBytes(static_cast<double>(big_state)).c_str(), HumanBytes(static_cast<double>(small_state)).c_str(),
              HumanBytes(static_cast<double>(big_listed)).c_str(), HumanBytes(static_cast<double>(small_listed)).c_str(),
              big_s, small_s);
}

}  // namespace

int BucketBenchMain(int argc, char** argv) {
  Flags f;
  f.snapsink = SelfDir() + "/snapsink";
  bool only[3] = {true, true, true};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bucket") continue;
    if (a == "--quick") {
      f.rows = 20000, f.windows = 1000, f.queries = 3, f.reps = 1;
    } else if (a.rfind("--rows=", 0) == 0) {
      f.rows = std::max<uint64_t>(1, std::strtoull(a.c_str() + 7, nullptr, 10));
    } else if (a.rfind("--windows=", 0) == 0) {
      f.windows = std::max<uint64_t>(101, std::strtoull(a.c_str() + 10, nullptr, 10));
    } else if (a.rfind("--queries=", 0) == 0) {
      f.queries = std::max(1, std::atoi(a.c_str() + 10));
    } else if (a.rfind("--reps=", 0) == 0) {
      f.reps = std::max(1, std::atoi(a.c_str() + 7));
    } else if (a.rfind("--snapsink=", 0) == 0) {
      f.snapsink = a.substr(11);
    } else if (a.rfind("--benchmarks=", 0) == 0) {
      const std::string list = a.substr(13);
      only[0] = list.find("publish") != std::string::npos;
      only[1] = list.find("query") != std::string::npos;
      only[2] = list.find("window") != std::string::npos;
    } else {
      std::fprintf(stderr,
                   "usage: snapsink_bench --bucket [--quick] [--rows=N] [--windows=N] [--queries=N] [--reps=N]\n"
                   "         [--benchmarks=publish,query,window] [--snapsink=PATH]\n"
                   "needs a local S3 server: tests/rgw.sh start DIR; eval \"$(tests/rgw.sh env DIR)\"\n");
      return 2;
    }
  }
  if (only[1] && !only[0]) Die("--benchmarks: query needs publish (it queries the published window)");
#ifndef NDEBUG
  std::printf("WARNING: assertions are on; this is not an optimised build\n");
#endif
  S3Config config;
  CheckOk(S3Config::FromEnvironment(&config), "the S3 server (tests/rgw.sh env DIR)");
  S3Client client(config);
  const std::string bucket = "snapsink-bench-" + std::to_string(getpid());
  CheckOk(client.CreateBucket(bucket), "create bucket " + bucket);
  ScratchDir work("/tmp", "snapsink-bucket-bench-", false);
  std::map<std::string, std::string> roots;
  if (only[0]) BenchPublish(f, &client, bucket, work, &roots);
  if (only[1]) BenchQuery(f, work, roots);
  if (only[2]) BenchWindow(f, &client, bucket, work);
  // The server keeps objects in memory: the bench's are removed.
  std::vector<S3ObjectInfo> objects;
  if (client.List(bucket, "", "", &objects, nullptr).ok()) {
    for (const S3ObjectInfo& o : objects) (void)client.Delete(bucket, o.key);
  }
  return 0;
}

}  // namespace snapsink::bench
