// The writers of a root in an S3 bucket beyond run, seal and publish, through
// the snapsink binary against the local RGW (tests/rgw.sh; skipped, naming
// why, where it is missing): run --follow, backfill, gaps and metric with
// --state DIR give the same published rows as on a local root.
#include <gtest/gtest.h>
#include <signal.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/s3/s3_client.h"
#include "tests/bucket_root_fixture.h"
#include "tests/rgw_server.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

using testing::RunResult;
using testing::Snapsink;

std::string Events() { return std::string(testing::SourceDirPath()) + "/sample/events.ndjson"; }

std::vector<std::string> EventLines() {
  std::ifstream in(Events());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  return lines;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// query's table without its last column, the generation: how often a
// follower published is not the rows.
std::string WithoutGeneration(const std::string& table) {
  return std::regex_replace(table, std::regex("[ ]+[0-9]+\n"), "\n");
}

class BucketRootWriters : public testing::BucketRootTest {
 protected:
  // The object at prefix/name ("" when missing).
  std::string Object(const std::string& prefix, const std::string& name) {
    std::string bytes;
    return client_->Get(bucket_, prefix + "/" + name, &bytes, nullptr).ok() ? bytes : "";
  }
  // The keys under prefix/ starting with `under`, past prefix/.
  std::vector<std::string> Keys(const std::string& prefix, const std::string& under) {
    std::vector<S3ObjectInfo> objects;
    EXPECT_TRUE(client_->List(bucket_, prefix + "/" + under, "", &objects, nullptr).ok());
    std::vector<std::string> keys;
    for (const auto& o : objects) keys.push_back(o.key.substr(prefix.size() + 1));
    return keys;
  }
  // Waits (up to 60 s) until prefix/CURRENT exists and differs from `old`.
  std::string WaitForCurrentOtherThan(const std::string& prefix, const std::string& old) {
    for (int i = 0; i < 600; ++i) {
      const std::string now = Object(prefix, "CURRENT");
      if (!now.empty() && now != old) return now;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << prefix << "/CURRENT never moved from \"" << old << "\"";
    return old;
  }
};

// run --follow into a bucket root: a file followed as it grows publishes as
// windows close, and at SIGTERM publishes what is closed: the same rows as
// a local root given the whole file by run; run --final then finishes both
// alike.
TEST_F(BucketRootWriters, RunFollowPublishesAsTheFileGrowsTheSameRowsAsALocalRoot) {
  testing::TempDir dir;
  const std::string local = dir.path() + "/local", bucket = Root("orders"), state = dir.path() + "/state";
  const std::string file = dir.path() + "/events.ndjson";
  const std::vector<std::string> lines = EventLines();
  const size_t half = lines.size() / 2;
  {
    std::ofstream out(file);
    for (size_t i = 0; i < half; ++i) out << lines[i];
  }
  // No lateness: the first half closes a window, so a generation shows the follower read it.
  ASSERT_EQ(Run({"init", local, "--lateness", "0s"}).exit_code, 0);
  ASSERT_EQ(Run({"init", bucket, "--lateness", "0s"}).exit_code, 0);
  testing::Spawned follower =
      testing::SpawnSnapsink({"run", bucket, file, "--follow", "--publish-every", "0s", "--poll", "100ms", "--state",
                              state},
                             env_, dir.path() + "/follow.out", dir.path() + "/follow.err");
  const std::string first = WaitForCurrentOtherThan("orders", "");
  {
    std::ofstream out(file, std::ios::app);
    for (size_t i = half; i < lines.size(); ++i) out << lines[i];
  }
  const std::string second = WaitForCurrentOtherThan("orders", first);
  EXPECT_NE(second, first);
  ::kill(follower.pid, SIGTERM);
  EXPECT_EQ(follower.Wait(), 0) << ReadAll(dir.path() + "/follow.err");

  RunResult l = Run({"run", local, file});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  RunResult qb = Run({"query", bucket}), ql = Run({"query", local});
  ASSERT_EQ(qb.exit_code, 0) << qb.err;
  EXPECT_EQ(WithoutGeneration(qb.out), WithoutGeneration(ql.out));
  EXPECT_GT(qb.out.size(), 100u);

  // Finished alike: the follower's state in DIR goes on where it stopped.
  RunResult fb = Run({"run", bucket, file, "--final", "--state", state});
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  ASSERT_EQ(Run({"run", local, file, "--final"}).exit_code, 0);
  qb = Run({"query", bucket});
  ql = Run({"query", local});
  EXPECT_EQ(WithoutGeneration(qb.out), WithoutGeneration(ql.out));
  RunResult v = Run({"verify", bucket, "--state", state});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// metric set, gaps accept and backfill take --state DIR on a bucket root:
// each says what it says on a local root, and after the backfill the
// published rows and generations are the same; without --state each stops
// naming it. Before, each refused --state (exit 1, "unknown option").
TEST_F(BucketRootWriters, BackfillGapsAndMetricWithStateDoAsOnALocalRoot) {
  testing::TempDir dir;
  const std::string local = dir.path() + "/local", bucket = Root("orders"), state = dir.path() + "/state";
  const std::vector<std::string> lines = EventLines();
  {
    std::ofstream first(dir.path() + "/first.ndjson"), archive(dir.path() + "/archive.ndjson");
    for (size_t i = 0; i < lines.size(); ++i) (i % 4 == 0 ? archive : first) << lines[i];
    for (size_t i = 0; i < lines.size(); i += 4) archive << lines[i];  // redelivered: counted once
  }
  ASSERT_EQ(Run({"init", local}).exit_code, 0);
  ASSERT_EQ(Run({"init", bucket}).exit_code, 0);
  const std::vector<std::vector<std::string>> steps = {
      {"metric", "ROOT", "set", "latency", "--kind", "minmax"},
      {"metric", "ROOT", "list"},
      {"run", "ROOT", dir.path() + "/first.ndjson", "--final"},
      {"gaps", "ROOT", "accept", "--producer", "shop-1", "--range", "0..3"},
      {"backfill", "ROOT", "--version", "5", dir.path() + "/archive.ndjson", "--quiet"},
  };
  for (const auto& step : steps) {
    std::vector<std::string> on_local = step, on_bucket = step;
    on_local[1] = local;
    on_bucket[1] = bucket;
    if (step[0] != "run") {
      RunResult without = Run(on_bucket);
      if (step[2] != "list") {
        EXPECT_EQ(without.exit_code, 1) << step[0] << ": " << without.out << without.err;
        EXPECT_NE(without.err.find("needs --state DIR"), std::string::npos) << step[0] << ": " << without.err;
      }
    }
    on_bucket.insert(on_bucket.end(), {"--state", state});
    RunResult l = Run(on_local), b = Run(on_bucket);
    ASSERT_EQ(l.exit_code, 0) << step[0] << ": " << l.err;
    ASSERT_EQ(b.exit_code, 0) << step[0] << ": " << b.err;
    EXPECT_EQ(b.out, l.out) << step[0];
    RunResult ql = Run({"query", local}), qb = Run({"query", bucket});
    EXPECT_EQ(qb.out, ql.out) << "after " << step[0];
    RunResult gl = Run({"inspect", local, "generations"}), gb = Run({"inspect", bucket, "generations"});
    EXPECT_EQ(gb.out, gl.out) << "after " << step[0];
  }
  RunResult gens = Run({"inspect", bucket, "generations"});
  EXPECT_NE(gens.out.find("2"), std::string::npos) << gens.out;  // the backfill published one
  RunResult v = Run({"verify", bucket, "--state", state});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// init --metric on a bucket root declares the kinds in its settings object:
// every state made from it (a reader's scratch state, each writer's fresh
// --state DIR) has them, so init says, metric list shows, and run publishes
// what the same init gives on a local root. Before, init refused --metric
// on a bucket root (exit 1, pointing at metric set --state).
TEST_F(BucketRootWriters, InitMetricKindsReachEveryStateMadeFromTheBucketAsOnALocalRoot) {
  testing::TempDir dir;
  const std::string local = dir.path() + "/local", bucket = Root("kinds");
  const std::vector<std::string> kinds = {"--metric", "orders:quantiles:0.02", "--metric", "refunds:minmax"};
  std::vector<std::string> init_local = {"init", local}, init_bucket = {"init", bucket};
  init_local.insert(init_local.end(), kinds.begin(), kinds.end());
  init_bucket.insert(init_bucket.end(), kinds.begin(), kinds.end());
  RunResult il = Run(init_local), ib = Run(init_bucket);
  ASSERT_EQ(il.exit_code, 0) << il.err;
  ASSERT_EQ(ib.exit_code, 0) << ib.err;
  EXPECT_EQ(std::regex_replace(ib.out, std::regex(bucket), "ROOT"), std::regex_replace(il.out, std::regex(local), "ROOT"));
  EXPECT_NE(ib.out.find("metric orders is quantiles (accuracy 0.02)"), std::string::npos) << ib.out;
  EXPECT_NE(Object("kinds", "settings").find("\nmetric minmax 0 refunds\n"), std::string::npos)
      << Object("kinds", "settings");
  const RunResult list_local = Run({"metric", local, "list"});
  ASSERT_EQ(list_local.exit_code, 0) << list_local.err;
  // A reader (no --state), and two writers' fresh state directories.
  for (const std::string& state : {std::string(), dir.path() + "/a", dir.path() + "/b"}) {
    std::vector<std::string> argv = {"metric", bucket, "list"};
    if (!state.empty()) argv.insert(argv.end(), {"--state", state});
    RunResult r = Run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, list_local.out) << (state.empty() ? "reader" : state);
  }
  RunResult rl = Run({"run", local, Events(), "--final"});
  RunResult rb = Run({"run", bucket, Events(), "--final", "--state", dir.path() + "/a"});
  ASSERT_EQ(rl.exit_code, 0) << rl.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  RunResult ql = Run({"query", local, "--metric", "orders", "--quantile", "0.5,0.99"});
  RunResult qb = Run({"query", bucket, "--metric", "orders", "--quantile", "0.5,0.99"});
  ASSERT_EQ(ql.exit_code, 0) << ql.err;
  EXPECT_EQ(qb.out, ql.out);
  RunResult v = Run({"verify", bucket, "--state", dir.path() + "/a"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A bucket has no directories: once gc removes the last merged/<topic>/
// object, the root's listing shows no merged/ (nor merged/<topic>/) at all,
// so no empty listing is left to remove, and a process recording a merged
// version meanwhile needs no directory made first. (On a local root these
// records live in ROOT's state, not in files: nothing is left there
// either.)
TEST_F(BucketRootWriters, GcLeavesNoMergedListingOnceItsLastObjectIsRemoved) {
  testing::TempDir dir;
  const std::string bucket = Root("mg"), state = dir.path() + "/state";
  ASSERT_EQ(Run({"init", bucket}).exit_code, 0);
  RunResult r = Run({"run", bucket, Events(), "--final", "--state", state});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rows = Run({"query", bucket}).out;
  S3PutOutcome put;
  for (const char* k : {"mg/merged/orders/1792576800000-v9", "mg/merged/clicks/1792580400000-v3"}) {
    ASSERT_TRUE(client_->PutCreateOnly(bucket_, k, "0:1:1,", &put, nullptr).ok()) << k;
  }
  ASSERT_EQ(Keys("mg", "merged/").size(), 2u);
  RunResult gc = Run({"gc", bucket, "--state", state, "--min-age", "0"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("merged input record(s) no kept generation names"), std::string::npos) << gc.out;
  EXPECT_TRUE(Keys("mg", "merged/").empty());
  std::vector<S3ObjectInfo> objects;
  std::vector<std::string> prefixes;
  for (const std::string& under : {std::string("mg/"), std::string("mg/merged/")}) {
    ASSERT_TRUE(client_->List(bucket_, under, "/", &objects, &prefixes).ok());
    for (const std::string& p : prefixes) EXPECT_EQ(p.find("merged/"), std::string::npos) << p;
    for (const S3ObjectInfo& o : objects) EXPECT_EQ(o.key.find("merged/"), std::string::npos) << o.key;
  }
  EXPECT_EQ(Run({"query", bucket}).out, rows);
}

class BucketRootRestore : public BucketRootWriters {
 protected:
  void SetUp() override {
    BucketRootWriters::SetUp();
    const std::vector<std::string> lines = EventLines();
    half_ = dir_.path() + "/half.ndjson";
    whole_ = dir_.path() + "/events.ndjson";
    std::ofstream h(half_), w(whole_);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i < lines.size() / 2) h << lines[i];
      w << lines[i];
    }
  }
  // The first half of the sample into Root(prefix) with state, then the
  // whole file grown from it (the file writer reads on from its position):
  // `input` names the file the writer reads, grown in place.
  std::string Grown(const std::string& prefix) { return dir_.path() + "/" + prefix + ".ndjson"; }
  void FirstHalf(const std::string& prefix, const std::string& state, const std::map<std::string, std::string>& env = {},
                 int want_exit = 0) {
    ASSERT_EQ(Run({"init", Root(prefix)}).exit_code, 0);
    std::filesystem::copy_file(half_, Grown(prefix), std::filesystem::copy_options::overwrite_existing);
    RunResult r = Run({"run", Root(prefix), Grown(prefix), "--final", "--state", state}, env);
    ASSERT_EQ(r.exit_code, want_exit) << r.err;
  }
  RunResult SecondHalf(const std::string& prefix, const std::string& state,
                       const std::map<std::string, std::string>& env = {}) {
    std::filesystem::copy_file(whole_, Grown(prefix), std::filesystem::copy_options::overwrite_existing);
    return Run({"run", Root(prefix), Grown(prefix), "--final", "--state", state}, env);
  }
  // A clean run: both halves with one DIR kept.
  std::map<std::string, std::string> Clean() {
    const std::string state = dir_.path() + "/clean-state";
    FirstHalf("clean", state);
    RunResult r = SecondHalf("clean", state);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Published("clean");
  }
  // Puts object, its xxh64 trailer added, in place of the bucket's key.
  void Replace(const std::string& key, std::string object) {
    char trailer[32];
    std::snprintf(trailer, sizeof trailer, "xxh64 %016llx\n",
                  static_cast<unsigned long long>(XXH64(object.data(), object.size(), 0)));
    object += trailer;
    ASSERT_TRUE(client_->Delete(bucket_, key).ok());
    S3PutOutcome outcome;
    std::string etag;
    ASSERT_TRUE(client_->PutCreateOnly(bucket_, key, object, &outcome, &etag).ok());
  }
  testing::TempDir dir_;
  std::string half_, whole_;
};

// A file writer whose --state DIR is lost (another, empty DIR) restores the
// state of the generation CURRENT names from the bucket's checkpoint and
// reads on from its positions: the rest of the grown file is applied once,
// and the bucket's published objects equal a clean run's byte for byte
// (nothing counted twice); verify passes with the new DIR.
TEST_F(BucketRootRestore, AFileWriterWithAnEmptyStateRestoresFromTheCheckpointOfCurrent) {
  const auto clean = Clean();
  FirstHalf("orders", dir_.path() + "/lost");
  EXPECT_EQ(Keys("orders", "checkpoints/").size(), 1u);
  RunResult r = SecondHalf("orders", dir_.path() + "/new");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Published("orders"), clean);
  RunResult v = Run({"verify", Root("orders"), "--state", dir_.path() + "/new"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  // Checkpoints of CURRENT's generation and the one before are kept.
  EXPECT_EQ(Keys("orders", "checkpoints/").size(), 2u);
}

// Without the checkpoint of CURRENT's generation (removed here, as when an
// older snapsink published it) a file writer with an empty DIR is refused,
// run and ingest alike: one line naming the DIR and the checkpoint, exit 1,
// nothing in the bucket changed, never a fresh state that would count the
// published events twice.
TEST_F(BucketRootRestore, WithoutTheCheckpointOfCurrentAWriterWithAnEmptyStateIsRefused) {
  FirstHalf("orders", dir_.path() + "/lost");
  for (const std::string& k : Keys("orders", "checkpoints/")) ASSERT_TRUE(client_->Delete(bucket_, "orders/" + k).ok());
  const auto published = Published("orders");
  std::filesystem::copy_file(whole_, Grown("orders"), std::filesystem::copy_options::overwrite_existing);
  for (const std::string cmd : {"run", "ingest"}) {
    const std::string state = dir_.path() + "/empty-" + cmd;
    RunResult refused = Run({cmd, Root("orders"), Grown("orders"), "--state", state});
    EXPECT_EQ(refused.exit_code, 1) << cmd << ": " << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    EXPECT_NE(refused.err.find(Root("orders") + " has published generations, and the state directory " + state +
                               "/state holds no state of it, nor does " + Root("orders") +
                               "/checkpoints/00000000000000000001 exist"),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(Published("orders"), published) << cmd;
  }
}

// A checkpoint of an older snapsink (format 1: LMDB's data file whole) is
// still restored, as a base: the writer reads on and the bucket equals a
// clean run's.
TEST_F(BucketRootRestore, AFormatOneCheckpointIsStillRestored) {
  const auto clean = Clean();
  FirstHalf("orders", dir_.path() + "/old");
  const std::string data = ReadAll(dir_.path() + "/old/state/data.mdb");
  ASSERT_FALSE(data.empty());
  std::string object = "snapsink state checkpoint 1\ngeneration 1\ndata " + std::to_string(data.size()) + "\n\n" + data;
  char trailer[32];
  std::snprintf(trailer, sizeof trailer, "xxh64 %016llx\n",
                static_cast<unsigned long long>(XXH64(object.data(), object.size(), 0)));
  object += trailer;
  const std::string key = "orders/checkpoints/00000000000000000001";
  ASSERT_TRUE(client_->Delete(bucket_, key).ok());
  S3PutOutcome outcome;
  std::string etag;
  ASSERT_TRUE(client_->PutCreateOnly(bucket_, key, object, &outcome, &etag).ok());
  RunResult r = SecondHalf("orders", dir_.path() + "/new");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Published("orders"), clean);
  // The next checkpoint is a format 3 base (no local copy of a format 1 state).
  EXPECT_EQ(Object("orders", "checkpoints/00000000000000000002").rfind("snapsink state checkpoint 3\n", 0), 0u);
}

// A checkpoint's records are stored in zstd frames (format 3): its header
// names the records' bytes (raw) and the stored bytes (data), the stored
// bytes start with a zstd frame and are under half the raw; an empty DIR
// restores the state from them and the bucket equals a clean run's.
TEST_F(BucketRootRestore, ACheckpointsRecordsAreStoredCompressedAndRestored) {
  const auto clean = Clean();
  FirstHalf("orders", dir_.path() + "/lost");
  const std::string object = Object("orders", "checkpoints/00000000000000000001");
  ASSERT_EQ(object.rfind("snapsink state checkpoint 3\n", 0), 0u) << object.substr(0, 40);
  auto field = [&](const std::string& name) {
    const size_t at = object.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << "no " << name << " line";
    return at == std::string::npos ? 0ull : std::stoull(object.substr(at + name.size() + 2));
  };
  const uint64_t raw = field("raw"), data = field("data");
  const size_t start = object.find("\n\n") + 2;
  EXPECT_EQ(object.size(), start + data + 23);
  EXPECT_EQ(object.compare(start, 4, "\x28\xb5\x2f\xfd"), 0) << "no zstd frame";
  EXPECT_LT(2 * data, raw) << data << " bytes stored of " << raw;
  RunResult r = SecondHalf("orders", dir_.path() + "/new");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Published("orders"), clean);
}

// A checkpoint whose checksum holds but whose zstd frame does not (a
// writer's bug, not the bucket's): an empty DIR is refused with one line
// naming the checkpoint and the frame (exit 10), nothing in the bucket
// changes.
TEST_F(BucketRootRestore, ACorruptCompressedFrameIsRefused) {
  FirstHalf("orders", dir_.path() + "/lost");
  const std::string key = "checkpoints/00000000000000000001";
  std::string object = Object("orders", key);
  ASSERT_EQ(object.rfind("snapsink state checkpoint 3\n", 0), 0u) << object.substr(0, 40);
  object[object.find("\n\n") + 2] ^= 0x5a;  // the first frame's magic number
  object.resize(object.size() - 23);       // its trailer, put again over the damage
  Replace("orders/" + key, object);
  const auto published = Published("orders");
  RunResult refused = SecondHalf("orders", dir_.path() + "/new");
  EXPECT_EQ(refused.exit_code, 10) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find(Root("orders") + "/" + key +
                             ": its zstd frame at byte 0 of its records is not whole"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(Published("orders"), published);
}

// Killed at each new durable step, then run again: at publish.state_checkpoint
// (generation 1 published, its checkpoint not yet PUT) the rerun on the same
// DIR puts it; at state.restore (the restored state written, not yet
// renamed into place) the rerun on that DIR restores again. Either way the
// writer then reads on from an empty DIR and the bucket equals a clean run.
TEST_F(BucketRootRestore, KilledAtACheckpointStepThenRunAgainEqualsACleanRun) {
  const auto clean = Clean();
  FirstHalf("orders", dir_.path() + "/a", {{"SNAPSINK_CRASH_AT", "publish.state_checkpoint"}}, 99);
  EXPECT_TRUE(Keys("orders", "checkpoints/").empty());
  EXPECT_FALSE(Object("orders", "CURRENT").empty());
  RunResult again = Run({"run", Root("orders"), Grown("orders"), "--final", "--state", dir_.path() + "/a"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Keys("orders", "checkpoints/").size(), 1u);
  RunResult killed = SecondHalf("orders", dir_.path() + "/b", {{"SNAPSINK_CRASH_AT", "state.restore"}});
  EXPECT_EQ(killed.exit_code, 99) << killed.err;
  RunResult rerun = SecondHalf("orders", dir_.path() + "/b");
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(Published("orders"), clean);
  RunResult v = Run({"verify", Root("orders"), "--state", dir_.path() + "/b"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// The sample in `parts` parts, run one part more each time: the writer of
// Root(prefix) reads on in the grown file and publishes a generation.
class BucketRootStateChain : public BucketRootRestore {
 protected:
  RunResult RunPart(const std::string& prefix, const std::string& state, size_t part,
                    std::map<std::string, std::string> env = {}) {
    const std::vector<std::string> lines = EventLines();
    {
      std::ofstream out(Grown(prefix), std::ios::trunc);
      for (size_t i = 0; i < lines.size() * part / kParts; ++i) out << lines[i];
    }
    env["SNAPSINK_STATE_CHECKPOINT_DELTAS"] = "2";  // a base and at most 2 deltas
    return Run({"run", Root(prefix), Grown(prefix), "--final", "--state", state}, env);
  }
  // A clean run of parts 1..last with one DIR kept.
  std::map<std::string, std::string> CleanParts(size_t last) {
    EXPECT_EQ(Run({"init", Root("clean")}).exit_code, 0);
    for (size_t part = 1; part <= last; ++part) {
      RunResult r = RunPart("clean", dir_.path() + "/clean-state", part);
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return Published("clean");
  }
  // generation -> the parent its checkpoint names (0: a base).
  std::map<uint64_t, uint64_t> Parents(const std::string& prefix) {
    std::map<uint64_t, uint64_t> out;
    for (const auto& [key, bytes] : Objects(prefix)) {
      if (key.rfind("checkpoints/", 0) != 0) continue;
      const size_t at = bytes.find("\nparent ");
      EXPECT_NE(at, std::string::npos) << key << " names no parent";
      out[std::stoull(key.substr(12))] = at == std::string::npos ? ~0ull : std::stoull(bytes.substr(at + 8));
    }
    return out;
  }
  static constexpr size_t kParts = 6;
};

// Each publish puts a delta on the checkpoint before it, up to two, then a
// new base. An empty DIR restores a base and two deltas (killed once at
// state.restore, then run again), and later a base and a delta across the
// rollover; the bucket equals a clean run's, and only the chains of the
// newest two checkpoints are kept.
TEST_F(BucketRootStateChain, AnEmptyStateRestoresABaseAndItsDeltasAcrossARollover) {
  const auto clean = CleanParts(kParts);
  ASSERT_EQ(Run({"init", Root("orders")}).exit_code, 0);
  for (size_t part = 1; part <= 3; ++part) ASSERT_EQ(RunPart("orders", dir_.path() + "/a", part).exit_code, 0);
  EXPECT_EQ(Parents("orders"), (std::map<uint64_t, uint64_t>{{1, 0}, {2, 1}, {3, 2}}));
  // Killed once with the chain's state written, not yet renamed into place.
  RunResult killed = RunPart("orders", dir_.path() + "/b", 4, {{"SNAPSINK_CRASH_AT", "state.restore"}});
  ASSERT_EQ(killed.exit_code, 99) << killed.err;
  for (size_t part = 4; part <= 5; ++part) {
    RunResult r = RunPart("orders", dir_.path() + "/b", part);  // 4: restored from 1, 2, 3
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(Parents("orders"), (std::map<uint64_t, uint64_t>{{4, 0}, {5, 4}}));  // 4 a new base
  RunResult r = RunPart("orders", dir_.path() + "/c", 6);  // restored from 4, 5
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Parents("orders"), (std::map<uint64_t, uint64_t>{{4, 0}, {5, 4}, {6, 5}}));
  EXPECT_EQ(Published("orders"), clean);
  RunResult v = Run({"verify", Root("orders"), "--state", dir_.path() + "/c"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Killed at a delta's steps (not yet PUT; PUT, the local copy not yet
// moved on), then run again on that DIR: the next checkpoint is a delta on
// the one the copy holds, an empty DIR restores it, and the bucket equals a
// clean run's.
TEST_F(BucketRootStateChain, KilledAtADeltaStepThenRunAgainEqualsACleanRun) {
  const auto clean = CleanParts(4);
  for (const std::string point : {"publish.state_checkpoint", "publish.state_checkpoint_copy"}) {
    const std::string prefix = "orders-" + point, state = dir_.path() + "/" + point;
    ASSERT_EQ(Run({"init", Root(prefix)}).exit_code, 0);
    ASSERT_EQ(RunPart(prefix, state, 1).exit_code, 0);
    RunResult killed = RunPart(prefix, state, 2, {{"SNAPSINK_CRASH_AT", point}});
    ASSERT_EQ(killed.exit_code, 99) << point << ": " << killed.err;
    for (size_t part = 2; part <= 3; ++part) {
      RunResult r = RunPart(prefix, state, part);
      ASSERT_EQ(r.exit_code, 0) << point << ": " << r.err;
    }
    // Put before the copy moved on, 2 is left out of the chain that follows
    // (and removed).
    const std::map<uint64_t, uint64_t> want = point == "publish.state_checkpoint"
                                                  ? std::map<uint64_t, uint64_t>{{1, 0}, {2, 1}, {3, 2}}
                                                  : std::map<uint64_t, uint64_t>{{1, 0}, {3, 1}};
    EXPECT_EQ(Parents(prefix), want) << point;
    RunResult r = RunPart(prefix, dir_.path() + "/empty-" + point, 4);
    ASSERT_EQ(r.exit_code, 0) << point << ": " << r.err;
    EXPECT_EQ(Published(prefix), clean) << point;
  }
}

// A chain missing a link: a writer with an empty DIR is refused with one
// line naming the missing checkpoint and the delta on it (exit 10, the
// bucket lost an object), and nothing in the bucket changes.
TEST_F(BucketRootStateChain, AChainMissingALinkIsRefused) {
  ASSERT_EQ(Run({"init", Root("orders")}).exit_code, 0);
  for (size_t part = 1; part <= 2; ++part) ASSERT_EQ(RunPart("orders", dir_.path() + "/a", part).exit_code, 0);
  ASSERT_EQ(Parents("orders"), (std::map<uint64_t, uint64_t>{{1, 0}, {2, 1}}));
  ASSERT_TRUE(client_->Delete(bucket_, "orders/checkpoints/00000000000000000001").ok());
  const auto published = Published("orders");
  RunResult refused = RunPart("orders", dir_.path() + "/empty", 3);
  EXPECT_EQ(refused.exit_code, 10) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find(Root("orders") + "/checkpoints/00000000000000000001 is missing: " + Root("orders") +
                             "/checkpoints/00000000000000000002 is a delta on it"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(Published("orders"), published);
}

// rollback and backfill put the checkpoint of the generation they publish,
// so an empty DIR restores it. Killed at publish.state_checkpoint (the
// generation published, its checkpoint not yet PUT), the same command run
// again finds its work done and puts it; the bucket then equals a clean
// run's. Before, neither put one, and an empty DIR was refused.
TEST_F(BucketRootStateChain, RollbackAndBackfillPutTheCheckpointOfTheirGeneration) {
  const std::string archive = dir_.path() + "/archive.ndjson";
  {
    const std::vector<std::string> lines = EventLines();
    std::ofstream out(archive);
    for (size_t i = 0; i < lines.size() / 3; i += 4) out << lines[i];
  }
  auto steps = [&](const std::string& prefix, const std::string& state, const std::string& crash_at) {
    ASSERT_EQ(Run({"init", Root(prefix)}).exit_code, 0);
    for (size_t part = 1; part <= 2; ++part) ASSERT_EQ(RunPart(prefix, state, part).exit_code, 0);
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"rollback", Root(prefix), "--generation", "1", "--state", state},
          std::vector<std::string>{"backfill", Root(prefix), "--version", "5", archive, "--quiet", "--state", state}}) {
      if (!crash_at.empty()) {
        RunResult killed = Run(cmd, {{"SNAPSINK_CRASH_AT", crash_at}});
        ASSERT_EQ(killed.exit_code, 99) << cmd[0] << ": " << killed.err;
      }
      RunResult r = Run(cmd);
      ASSERT_EQ(r.exit_code, 0) << cmd[0] << ": " << r.err;
    }
  };
  steps("clean", dir_.path() + "/clean-state", "");
  ASSERT_EQ(RunPart("clean", dir_.path() + "/clean-state", 3).exit_code, 0);
  steps("orders", dir_.path() + "/a", "publish.state_checkpoint");
  EXPECT_EQ(Parents("orders").count(3), 1u) << "the rollback's generation";
  EXPECT_EQ(Parents("orders").count(4), 1u) << "the backfill's generation";
  RunResult r = RunPart("orders", dir_.path() + "/empty", 3);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Published("orders"), Published("clean"));
}

// What a publish asks of the bucket (SNAPSINK_S3_REQUEST_LOG): a bucket has
// no directories, so nothing asks whether one exists (no listing of the
// bucket to tell a missing one, no HEAD of a snapshot's or a part's
// directory); a part is PUT create-only without a GET first; every PUT's
// line names the bytes sent, which are the object's; and the publish is a
// bounded number of requests for the sample's windows, not three per
// directory it touches; the settings object is read once (before, twice:
// the state's preparation and then the root check).
TEST_F(BucketRootWriters, APublishAsksNothingAboutDirectoriesAndLogsTheBytesItPuts) {
  testing::TempDir dir;
  const std::string root = Root("orders"), state = dir.path() + "/state", log = dir.path() + "/requests";
  ASSERT_EQ(Run({"init", root}).exit_code, 0);
  ASSERT_EQ(Run({"ingest", root, Events(), "--state", state}).exit_code, 0);
  ASSERT_EQ(Run({"seal", root, "--all", "--state", state}).exit_code, 0);
  RunResult p = Run({"publish", root, "--state", state}, {{"SNAPSINK_S3_REQUEST_LOG", log}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::map<std::string, std::string> objects = Objects("orders");
  std::istringstream in(ReadAll(log));
  size_t requests = 0, puts = 0, settings = 0;
  for (std::string line; std::getline(in, line); ++requests) {
    EXPECT_EQ(line.find("max-keys=0"), std::string::npos) << line;
    settings += line.rfind("GET s3://" + bucket_ + "/orders/settings ", 0) == 0;
    EXPECT_NE(line.rfind("HEAD s3://" + bucket_ + "/orders/manifests", 0), 0u) << line;
    EXPECT_FALSE(line.rfind("GET ", 0) == 0 && line.find("/manifests/parts/") != std::string::npos) << line;
    if (line.rfind("PUT ", 0) != 0) continue;
    ++puts;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex("^PUT s3://[^/]+/orders/(\\S+) sent=([0-9]+) [0-9]+ms 200$")))
        << line;
    if (m[1] == "CURRENT") continue;  // replaced: its first version was sent, checked at the end
    ASSERT_EQ(objects.count(m[1]), 1u) << line;
    EXPECT_EQ(std::to_string(objects.at(m[1]).size()), m[2].str()) << line;
  }
  EXPECT_GE(puts, 4u + 2 * 4) << "the writer epoch, 4 snapshots of 2 files, parts, a manifest and CURRENT";
  EXPECT_LE(requests, puts + 12) << ReadAll(log);
  EXPECT_EQ(settings, 1u) << "the settings object is read once per command: " << ReadAll(log);
}

}  // namespace
}  // namespace snapsink
