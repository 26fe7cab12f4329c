#include "bench/parts_bench.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "bench/bench_util.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "publish/generation_manifest.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"
#include "publish/seal.h"

namespace snapsink::bench {
namespace {

constexpr int64_t kT0 = 1792576800000;  // 2026-10-21T10:00:00Z
constexpr int64_t kMinuteMs = 60000;

void Progress(const std::string& what) { std::fprintf(stderr, "... %s\n", what.c_str()); }

// Counts the bytes appended to files it creates, and the bytes read from
// manifests/ (when `manifests` is set).
class CountingEnv : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(Env::Default()) {}

  class File : public WritableFile {
   public:
    File(std::unique_ptr<WritableFile> f, uint64_t* n) : f_(std::move(f)), n_(n) {}
    Status Append(std::string_view d) override {
      *n_ += d.size();
      return f_->Append(d);
    }
    Status Flush() override { return f_->Flush(); }
    Status Sync() override { return f_->Sync(); }
    Status Close() override { return f_->Close(); }

   private:
    std::unique_ptr<WritableFile> f_;
    uint64_t* n_;
  };

  Status NewWritableFile(const std::string& p, std::unique_ptr<WritableFile>* o) override {
    std::unique_ptr<WritableFile> f;
    SNAPSINK_RETURN_IF_ERROR(target()->NewWritableFile(p, &f));
    *o = std::make_unique<File>(std::move(f), &written);
    return Status::OK();
  }
  Status ReadFileToString(const std::string& p, std::string* o) override {
    Status s = target()->ReadFileToString(p, o);
    if (s.ok() && !manifests.empty() && p.rfind(manifests, 0) == 0) manifest_bytes_read += o->size();
    return s;
  }

  uint64_t written = 0;
  std::string manifests;
  uint64_t manifest_bytes_read = 0;
};

// A root of 1-minute windows whose current generation names `windows`
// windows (minutes 0 .. windows-1 after kT0), and one event file for the
// window after them.
void BuildRoot(const std::string& path, uint64_t windows, const std::string& events) {
  RemoveTree(path);
  RootConfig config;
  config.window_ms = kMinuteMs;
  CheckOk(Root::Init(Env::Default(), path, config), "init " + path);
  std::unique_ptr<Root> root;
  CheckOk(Root::Open(Env::Default(), path, Root::Access::kWriter, &root), "open " + path);
  GenerationManifest gm;
  for (uint64_t w = 0; w < windows; ++w) {
    gm.windows.push_back({kT0 + static_cast<int64_t>(w) * kMinuteMs, 1, w * 0x9e3779b97f4a7c15ull});
  }
  CheckOk(CommitGeneration(root->env(), path, root->store(), &gm, [](Txn*) { return Status::OK(); }, "bench"),
          "history of " + path);
  Ingester in(root->env(), root->store(), root->config());
  IngestOptions opt;
  opt.path = events;
  opt.source = "parts";
  opt.commit_every = 10000;
  opt.rejects_file = filenames::RejectsFile(path, opt.source);
  SourceState state;
  CheckOk(in.Run(opt, &state), "ingest " + events);
}

struct PublishCost {
  double seconds = 0;
  uint64_t bytes = 0;       // appended to files through the Env (snapshot, parts, top manifest, CURRENT)
  uint64_t disk_bytes = 0;  // the process's write_bytes (LMDB's pages too; 0 on tmpfs)
};

// Seals and publishes the one dirty window, timed, counting the bytes written.
PublishCost SealAndPublishOne(const std::string& path) {
  CountingEnv env;
  std::unique_ptr<Root> root;
  CheckOk(Root::Open(&env, path, Root::Access::kWriter, &root), "open " + path);
  env.written = 0;
  Stopwatch sw;
  std::vector<int64_t> dirty;
  CheckOk(DirtyWindows(root->store(), root->config(), /*all=*/true, &dirty), "dirty windows");
  if (dirty.size() != 1) Die("parts: expected one dirty window, got " + std::to_string(dirty.size()));
  SealTarget target{root->env(), root->path(), root->store(), root->config().window_ms};
  std::vector<SealedWindow> sealed;
  CheckOk(SealWindows(target, dirty, &sealed), "seal");
  PublishResult result;
  CheckOk(PublishStaged(root->env(), root->path(), root->store(), root->config(), &result), "publish");
  if (result.windows != 1) Die("parts: expected one published window");
  return {sw.Seconds(), env.written, sw.Split().written};
}

}  // namespace

void RunPartsBench(const std::string& scratch_dir, const PartsBenchSizes& sizes, std::map<std::string, double>* ratios) {
  std::vector<double> time_ratio, bytes_ratio, disk_ratio, big_s, small_s, big_b, small_b, big_d, small_d;
  uint64_t point_bytes = 0;
  for (int rep = 0; rep < sizes.reps; ++rep) {
    PublishCost cost[2];
    const uint64_t counts[2] = {sizes.small, sizes.big};
    for (int i = 0; i < 2; ++i) {
      const uint64_t n = counts[i];
      Progress("parts (rep " + std::to_string(rep + 1) + "/" + std::to_string(sizes.reps) + "): root of " +
               std::to_string(n) + " windows, not timed");
      const std::string events = scratch_dir + "/parts-events.ndjson";
      {
        std::ofstream out(events, std::ios::trunc);
        const int64_t ts = kT0 + static_cast<int64_t>(n) * kMinuteMs;
        for (int k = 0; k < 100; ++k) {
          out << "{\"producer\":\"p\",\"seq\":" << k << ",\"ts\":" << ts + k << ",\"metric\":\"m\",\"key\":\"k" << k
              << "\",\"value\":1}\n";
        }
      }
      const std::string path = scratch_dir + "/parts-root-" + std::to_string(n);
      BuildRoot(path, n, events);
      cost[i] = SealAndPublishOne(path);
      if (i == 1 && rep == 0) {
        // A point read of a window in a full part (the middle of history).
        CountingEnv env;
        env.manifests = filenames::ManifestsDir(path) + "/";
        std::unique_ptr<Reader> r;
        CheckOk(Reader::OpenTop(&env, path, 0, &r), "open reader");
        const GenerationEntry* e = nullptr;
        CheckOk(r->Entry(kT0 + static_cast<int64_t>(n / 2) * kMinuteMs, &e), "point read");
        if (e == nullptr) Die("parts: the middle window is missing");
        point_bytes = env.manifest_bytes_read;
      }
      RemoveTree(path);
    }
    small_s.push_back(cost[0].seconds);
    big_s.push_back(cost[1].seconds);
    small_b.push_back(static_cast<double>(cost[0].bytes));
    big_b.push_back(static_cast<double>(cost[1].bytes));
    small_d.push_back(static_cast<double>(cost[0].disk_bytes));
    big_d.push_back(static_cast<double>(cost[1].disk_bytes));
    if (cost[0].disk_bytes > 0) {
      disk_ratio.push_back(static_cast<double>(cost[1].disk_bytes) / static_cast<double>(cost[0].disk_bytes));
    }
    time_ratio.push_back(cost[1].seconds / cost[0].seconds);
    bytes_ratio.push_back(static_cast<double>(cost[1].bytes) / static_cast<double>(cost[0].bytes));
  }
  std::printf("parts: seal+publish of one window into %" PRIu64 " windows: %.4f s, %s written to files, %s to disk\n",
              sizes.big, Median(big_s), HumanBytes(Median(big_b)).c_str(), HumanBytes(Median(big_d)).c_str());
  std::printf("parts: seal+publish of one window into %" PRIu64 " windows: %.4f s, %s written to files, %s to disk\n",
              sizes.small, Median(small_s), HumanBytes(Median(small_b)).c_str(), HumanBytes(Median(small_d)).c_str());
  std::printf("parts: ratio %" PRIu64 " / %" PRIu64 ": time %.2fx, file bytes %.2fx, disk bytes %.2fx (goal <= 2x)\n",
              sizes.big, sizes.small, Median(time_ratio), Median(bytes_ratio), Median(disk_ratio));
  std::printf("parts: a point read in the %" PRIu64 "-window root reads %s of manifests (goal <= 64 KB)\n", sizes.big,
              HumanBytes(static_cast<double>(point_bytes)).c_str());
  (*ratios)["parts_time_ratio"] = Median(time_ratio);
  (*ratios)["parts_bytes_ratio"] = Median(bytes_ratio);
  (*ratios)["parts_disk_bytes_ratio"] = Median(disk_ratio);
  (*ratios)["parts_point_read_bytes"] = static_cast<double>(point_bytes);
}

}  // namespace snapsink::bench
