// `run --kafka --state DIR` into a root in an S3 bucket: processes that share
// nothing but the bucket (each its own --state DIR), against librdkafka's
// mock cluster and the local RGW (tests/rgw.sh; skipped, naming why, where
// it is missing). Owner claims, seal records, progress and checkpoints are
// in the bucket; every process publishes merged generations, CURRENT moving
// only by compare-and-swap from the generation a publish was built on. Part
// of kafka_scale_test (its main() is in kafka_scale_test.cc).
#include <gtest/gtest.h>
#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/s3/s3_client.h"
#include "tests/kafka_fixture.h"

namespace snapsink::kafkatest {
namespace {

// The local S3 server: the AWS_* variables of this process, else the env
// file tests/rgw.sh writes beside the binary (BUILD/rgw-kafka/env, as
// ctest's `rgw_kafka` fixture starts it). False, and why, when neither answers.
bool RgwConfig(S3Config* out, std::string* why_not) {
  if (std::getenv("AWS_ENDPOINT_URL") == nullptr) {
    const std::string file = std::filesystem::path(g_snapsink).parent_path().string() + "/rgw-kafka/env";
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      const size_t eq = line.find('=');
      if (line.rfind("export AWS_", 0) == 0 && eq != std::string::npos) {
        setenv(line.substr(7, eq - 7).c_str(), line.substr(eq + 1).c_str(), 1);
      }
    }
    if (std::getenv("AWS_ENDPOINT_URL") == nullptr) {
      *why_not = "no S3 server: ctest starts one (fixture rgw_kafka), or run tests/rgw.sh start " +
                 std::filesystem::path(g_snapsink).parent_path().string() + "/rgw-kafka";
      return false;
    }
  }
  Status s = S3Config::FromEnvironment(out);
  if (!s.ok()) {
    *why_not = "the S3 server of the environment is unusable: " + s.ToString();
    return false;
  }
  std::vector<S3ObjectInfo> none;
  s = S3Client(*out).List("snapsink-probe-" + std::to_string(getpid()), "", "", &none, nullptr, 1);
  if (s.IsIOError()) {
    *why_not = "the S3 server at " + out->endpoint + " does not answer: " + s.ToString();
    return false;
  }
  return true;
}

class KafkaBucket : public KafkaMock {
 protected:
  void SetUp() override {
    std::string why_not;
    if (!RgwConfig(&config_, &why_not)) GTEST_SKIP() << why_not;
    KafkaMock::SetUp();
    client_ = std::make_unique<S3Client>(config_);
    static int buckets = 0;
    bucket_ = "snapsink-kafka-test-" + std::to_string(getpid()) + "-" + std::to_string(buckets++);
    ASSERT_TRUE(client_->CreateBucket(bucket_).ok());
    env_ = {"AWS_ENDPOINT_URL=" + config_.endpoint, "AWS_REGION=" + config_.region,
            "AWS_ACCESS_KEY_ID=" + config_.access_key_id, "AWS_SECRET_ACCESS_KEY=" + config_.secret_access_key};
  }
  std::string BucketRoot(const std::string& prefix) {
    const std::string root = "s3://" + bucket_ + "/" + prefix;
    ChildResult r = Snapsink({"init", root}, env_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return root;
  }
  // Every commit of a partition asks the bucket for its newest claim: a
  // session of 10 s, not the fixture's 3 s, keeps a loaded machine's
  // processes in the group. A member killed inside a rebalance leaves the
  // group only after the rebalance timeout, max.poll.interval.ms: 20 s
  // here, not librdkafka's 300 s, or the others' --final bound (45 s) ends
  // before they are given its partitions.
  std::vector<std::string> FinalArgs(const std::string& root, const std::string& group, const std::string& state) {
    return RunArgs(root, group, {"--state", dir_ + "/" + state, "--final", "--kafka-config",
                                 "max.partition.fetch.bytes=16384", "--kafka-config", "session.timeout.ms=10000",
                                 "--kafka-config", "max.poll.interval.ms=20000"});
  }
  std::unique_ptr<Child> Start(const std::vector<std::string>& args, std::vector<std::string> extra = {}) {
    std::vector<std::string> env = env_;
    env.insert(env.end(), extra.begin(), extra.end());
    return std::make_unique<Child>(g_snapsink, args, env, dir_);
  }
  std::string BucketQuery(const std::string& root) {
    ChildResult r = Snapsink({"query", root, "--format", "json"}, env_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  // The keys under prefix/ (past it).
  std::set<std::string> Keys(const std::string& prefix) {
    std::vector<S3ObjectInfo> objects;
    EXPECT_TRUE(client_->List(bucket_, prefix + "/", "", &objects, nullptr).ok());
    std::set<std::string> out;
    for (const auto& o : objects) out.insert(o.key.substr(prefix.size() + 1));
    return out;
  }
  // The state directory the newest claim of partition p names ("" before any).
  std::string ClaimedState(const std::string& prefix, int p) {
    std::string newest;
    for (const std::string& k : Keys(prefix)) {
      const std::string dir = "owners/kafka_orders_" + std::to_string(p) + "/";
      if (k.rfind(dir, 0) == 0 && k.size() == dir.size() + 20 && k > newest) newest = k;
    }
    if (newest.empty()) return "";
    std::string who;
    EXPECT_TRUE(client_->Get(bucket_, prefix + "/" + newest, &who, nullptr).ok());
    while (!who.empty() && who.back() == '\n') who.pop_back();
    return who.substr(who.find(' ') + 1);
  }
  void ExpectNoSecret(const std::string& text) {
    EXPECT_EQ(text.find(config_.secret_access_key), std::string::npos) << "the secret was printed";
  }

  S3Config config_;
  std::unique_ptr<S3Client> client_;
  std::string bucket_;
  std::vector<std::string> env_;
};

// Two machines' worth of processes: three owners with their own --state
// dirs share one bucket root; C dies (crash point partition.seal_record,
// its records written on its own disk, none in the bucket). A and B take
// C's partitions after its session expires, from the claims, progress and
// checkpoints in the bucket, and exit 0: the bucket's published rows equal
// run --final over the same events as one file, and verify passes. Nothing
// of the partitions' bookkeeping is left in a --state dir's root part.
TEST_F(KafkaBucket, ThreeOwnersOneKilledPublishIntoOneBucketEqualToAFileRun) {
  const EventStream events = GenerateEvents(kPartitions, 200, 91);
  ProduceStream(events);
  const std::string root = BucketRoot("orders");
  auto a = Start(FinalArgs(root, "gb1", "state-a"));
  auto b = Start(FinalArgs(root, "gb1", "state-b"));
  auto c = Start(FinalArgs(root, "gb1", "state-c"), {"SNAPSINK_CRASH_AT=partition.seal_record"});
  ChildResult rc = c->Wait(120);
  ASSERT_EQ(rc.exit_code, 99) << rc.err;
  ChildResult ra = a->Wait(180);
  ChildResult rb = b->Wait(180);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  ExpectNoSecret(ra.err + ra.out + rb.err + rb.out + rc.err);
  for (int p = 0; p < kPartitions; ++p) {
    const std::string owner = ClaimedState("orders", p);
    EXPECT_TRUE(owner == dir_ + "/state-a" || owner == dir_ + "/state-b") << "partition " << p << ": " << owner;
  }
  const std::set<std::string> keys = Keys("orders");
  for (const char* want : {"CURRENT", "settings", "partitions/kafka_orders_0/progress"}) {
    EXPECT_EQ(keys.count(want), 1u) << want;
  }
  for (const std::string& k : keys) {
    EXPECT_EQ(k.find(".tmp"), std::string::npos) << k;
    EXPECT_NE(k.rfind("writers/", 0), 0u) << "a merged publisher claimed a writer epoch: " << k;
  }
  const std::string want = Rows(FileQuery({&events}));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(Rows(BucketQuery(root)), want) << ra.err << rb.err;
  ChildResult v = Snapsink({"verify", root}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// The same with a real kill -9 at no chosen point: once all three hold
// partitions, C is killed a quarter of a second later, mid-read or
// mid-commit (with 400 events a partition, a loaded machine once saw all
// three finish the topic within the second the test used to wait); A and
// B take its partitions over from the bucket and finish the topic: the
// rows equal a file run.
TEST_F(KafkaBucket, ThreeOwnersOneKilledWithSigkillMidRunEqualToAFileRun) {
  const EventStream events = GenerateEvents(kPartitions, 2000, 96);
  ProduceStream(events);
  const std::string root = BucketRoot("orders");
  auto args = [&](const std::string& state) { return FinalArgs(root, "gb4", state); };
  auto a = Start(args("state-a"));
  auto b = Start(args("state-b"));
  auto c = Start(args("state-c"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto took = [](Child& x) { return x.Err().find("taken at owner epoch") != std::string::npos; };
  while (!(took(*a) && took(*b) && took(*c)) && c->Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const bool killed_running = c->Running();
  c->Signal(SIGKILL);
  ChildResult rc = c->Wait(30);
  ChildResult ra = a->Wait(240);
  ChildResult rb = b->Wait(240);
  ASSERT_TRUE(killed_running) << "C ended before it was killed: " << rc.err;
  EXPECT_EQ(rc.exit_code, 128 + SIGKILL) << rc.err;
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  ExpectNoSecret(ra.err + rb.err + rc.err);
  EXPECT_EQ(Rows(BucketQuery(root)), Rows(FileQuery({&events}))) << ra.err << rb.err;
  ChildResult v = Snapsink({"verify", root}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A process with an empty --state DIR restores from the checkpoints in the
// bucket: A reads the topic, closes its partitions cleanly (a checkpoint
// each) and exits; more events come; B, on another "machine" (a new, empty
// DIR), takes every partition from A's checkpoints in the bucket and reads
// on from their offsets: the rows equal a file run over all the events.
TEST_F(KafkaBucket, AProcessWithAnEmptyStateRestoresFromTheCheckpointsInTheBucket) {
  const EventStream first = GenerateEvents(kPartitions, 150, 92);
  const EventStream second = GenerateEvents(kPartitions, 150, 93, 150);
  ProduceStream(first);
  const std::string root = BucketRoot("orders");
  ChildResult ra = Snapsink(FinalArgs(root, "gb2", "state-a"), env_, 180);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ProduceStream(second);
  ChildResult rb = Snapsink(FinalArgs(root, "gb2", "state-b"), env_, 180);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  ExpectNoSecret(ra.err + rb.err);
  for (int p = 0; p < kPartitions; ++p) {
    EXPECT_NE(rb.err.find("kafka:orders/" + std::to_string(p)), std::string::npos) << rb.err;
  }
  EXPECT_NE(rb.err.find("(restored from the checkpoint of epoch 1"), std::string::npos) << rb.err;
  EXPECT_EQ(Rows(BucketQuery(root)), Rows(FileQuery({&first, &second})));
  ChildResult v = Snapsink({"verify", root}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Metric kinds declared at init (`init s3://... --metric NAME:KIND`, kept in
// the bucket's settings object) reach the state of every `run --kafka`
// process with an empty --state DIR: A reads the topic from an empty DIR,
// B (another empty DIR) takes every partition from A's checkpoints and
// reads on. The rows equal a file run over the same events into a local
// root declared alike (clicks as minmax: a retract of a click is rejected;
// orders as quantiles), and differ from a root without the kinds.
TEST_F(KafkaBucket, InitMetricKindsReachEveryEmptyStateOfRunKafka) {
  const EventStream first = GenerateEvents(kPartitions, 150, 94);
  const EventStream second = GenerateEvents(kPartitions, 150, 95, 150);
  ProduceStream(first);
  const std::vector<std::string> kinds = {"--metric", "orders:quantiles:0.02", "--metric", "clicks:minmax"};
  const std::string root = "s3://" + bucket_ + "/kinds";
  std::vector<std::string> init = {"init", root};
  init.insert(init.end(), kinds.begin(), kinds.end());
  ChildResult ri = Snapsink(init, env_);
  ASSERT_EQ(ri.exit_code, 0) << ri.err;
  ChildResult ra = Snapsink(FinalArgs(root, "gk1", "state-a"), env_, 180);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ProduceStream(second);
  ChildResult rb = Snapsink(FinalArgs(root, "gk1", "state-b"), env_, 180);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_NE(rb.err.find("(restored from the checkpoint of epoch 1"), std::string::npos) << rb.err;
  // The same events as one file into local roots, with and without the kinds.
  WriteFile(dir_ + "/all.ndjson", AsFile(first) + AsFile(second));
  std::vector<std::string> init_local = {"init", dir_ + "/local-kinds"};
  init_local.insert(init_local.end(), kinds.begin(), kinds.end());
  ASSERT_EQ(Snapsink(init_local).exit_code, 0);
  const std::string plain = NewRoot("local-plain");
  for (const std::string& local : {dir_ + "/local-kinds", plain}) {
    ChildResult r = Snapsink({"run", local, dir_ + "/all.ndjson", "--final", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string want = Rows(Query(dir_ + "/local-kinds"));
  ASSERT_NE(want, Rows(Query(plain))) << "the kinds change no row: the test would see nothing";
  EXPECT_EQ(Rows(BucketQuery(root)), want) << ra.err << rb.err;
  ChildResult ml = Snapsink({"metric", dir_ + "/local-kinds", "list"});
  ChildResult mb = Snapsink({"metric", root, "list", "--state", dir_ + "/state-b"}, env_);
  EXPECT_EQ(mb.out, ml.out) << mb.err;
  ChildResult v = Snapsink({"verify", root}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// gc in a bucket root removes what no kept generation needs of the merged
// publish: merged/<topic>/<window>-v<version> of window versions no kept
// generation names, and partitions' seal records a newer seal of their
// window replaced. A reads the topic, more events come into the same
// windows, A reads on (new versions, new seals). gc with the default
// --min-age (1h) removes none of them (an upload in flight is never an
// orphan); --min-age 0 --keep-generations 1, killed at its first removal of
// a merged object and run again, removes them; the rows stay those of a file
// run, verify passes and a third gc finds nothing.
TEST_F(KafkaBucket, GcRemovesMergedInputsAndSealRecordsNoKeptGenerationNeeds) {
  const EventStream first = GenerateEvents(kPartitions, 150, 97);
  const EventStream second = GenerateEvents(kPartitions, 150, 98, 150);
  ProduceStream(first);
  const std::string root = BucketRoot("orders");
  ChildResult r1 = Snapsink(FinalArgs(root, "gb5", "state-a"), env_, 180);
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  ProduceStream(second);
  ChildResult r2 = Snapsink(FinalArgs(root, "gb5", "state-a"), env_, 180);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  auto count = [&](const std::string& prefix, const std::string& tail) {
    size_t n = 0;
    for (const std::string& k : Keys("orders")) {
      n += k.rfind(prefix, 0) == 0 && k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0;
    }
    return n;
  };
  const size_t merged = count("merged/", ""), seals = count("partitions/", "/seal.json");
  const std::string want = Rows(FileQuery({&first, &second}));
  ASSERT_EQ(Rows(BucketQuery(root)), want);
  // A seal record being uploaded (its data there, its seal.json not yet):
  // a later version of a window partition 0 has an accepted seal of.
  std::string in_flight;
  for (const std::string& k : Keys("orders")) {
    const std::string dir = "partitions/kafka_orders_0/seals/";
    if (k.rfind(dir, 0) == 0 && k.size() > 10 && k.compare(k.size() - 10, 10, "/seal.json") == 0) {
      const std::string name = k.substr(dir.size(), k.size() - 10 - dir.size());
      const size_t v = name.find("-v"), e = name.rfind("-e");
      in_flight = dir + name.substr(0, v) + "-v" + std::to_string(std::stoull(name.substr(v + 2, e - v - 2)) + 10) +
                  name.substr(e) + "/data";
    }
  }
  ASSERT_FALSE(in_flight.empty());
  S3PutOutcome put;
  ASSERT_TRUE(client_->PutCreateOnly(bucket_, "orders/" + in_flight, "half uploaded", &put, nullptr).ok());
  const std::vector<std::string> gc = {"gc", root, "--state", dir_ + "/state-a", "--keep-generations", "1"};
  ChildResult young = Snapsink(gc, env_);
  ASSERT_EQ(young.exit_code, 0) << young.err;
  EXPECT_EQ(count("merged/", ""), merged) << young.out;
  EXPECT_EQ(Keys("orders").count(in_flight), 1u) << "an upload in flight was removed: " << young.out;
  std::vector<std::string> now = gc;
  now.insert(now.end(), {"--min-age", "0"});
  ChildResult crashed = Snapsink(now, {env_[0], env_[1], env_[2], env_[3], "SNAPSINK_CRASH_AT=gc.merged_inputs"});
  EXPECT_EQ(crashed.exit_code, 99) << crashed.err;
  EXPECT_EQ(count("merged/", ""), merged - 1);
  const size_t left = count("merged/", "");
  ChildResult old = Snapsink(now, env_);
  ASSERT_EQ(old.exit_code, 0) << old.err;
  // One merged object per window of the current generation stays.
  std::set<std::string> windows;
  for (const std::string& k : Keys("orders")) {
    if (k.rfind("merged/orders/", 0) == 0) {
      EXPECT_TRUE(windows.insert(k.substr(14, k.find("-v") - 14)).second) << k;
    }
  }
  EXPECT_LT(count("merged/", ""), merged) << old.out;
  EXPECT_EQ(windows.size(), count("merged/", "")) << old.out;
  if (count("merged/", "") < left) {  // what the killed gc left to remove
    EXPECT_NE(old.out.find("merged input record(s) no kept generation names"), std::string::npos) << old.out;
  }
  EXPECT_LT(count("partitions/", "/seal.json"), seals) << young.out << old.out;
  EXPECT_NE((young.out + old.out).find("seal record(s) of partitions a newer seal of the same window replaced"),
            std::string::npos)
      << young.out << old.out;
  EXPECT_EQ(Keys("orders").count(in_flight), 0u) << "older than --min-age 0, and never finished: " << old.out;
  EXPECT_EQ(Rows(BucketQuery(root)), want);
  ChildResult v = Snapsink({"verify", root, "--state", dir_ + "/state-a"}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  ChildResult again = Snapsink(now, env_);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to remove"), std::string::npos) << again.out;
  // The topic read on after gc: the next publish takes the bucket's CURRENT as before.
  const EventStream third = GenerateEvents(kPartitions, 20, 99, 300);
  ProduceStream(third);
  ChildResult r3 = Snapsink(FinalArgs(root, "gb5", "state-b"), env_, 180);
  ASSERT_EQ(r3.exit_code, 0) << r3.err;
  EXPECT_EQ(Rows(BucketQuery(root)), Rows(FileQuery({&first, &second, &third})));
  ExpectNoSecret(r1.err + r2.err + r3.err + old.out + old.err);
}

// A zombie's CURRENT swap loses: A is stopped (SNAPSINK_PAUSE_AT, a
// SIGSTOP) right after writing its generation's manifest, before its swap,
// and stays stopped past its session timeout; B takes A's partitions,
// finishes the topic and publishes over it. Released, A's swap finds
// CURRENT moved past the generation A built on and loses: A's generation is
// on no chain from CURRENT, nothing is overwritten, and the rows equal a
// file run.
TEST_F(KafkaBucket, AZombieStoppedBeforeItsCurrentSwapLosesIt) {
  const EventStream events = GenerateEvents(kPartitions, 200, 95);
  ProduceStream(events);
  const std::string root = BucketRoot("orders");
  auto a = Start(FinalArgs(root, "gb3", "state-a"), {"SNAPSINK_PAUSE_AT=publish.manifest_written"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!a->Stopped() && a->Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(a->Stopped()) << a->Err();
  // A's generation: the newest manifest, which CURRENT does not name yet.
  uint64_t zombie = 0;
  for (const std::string& k : Keys("orders")) {
    if (k.rfind("manifests/", 0) == 0 && k.find('/', 10) == std::string::npos) {
      zombie = std::max<uint64_t>(zombie, std::stoull(k.substr(10)));
    }
  }
  ASSERT_GT(zombie, 0u);
  ChildResult rb = Snapsink(FinalArgs(root, "gb3", "state-b"), env_, 180);
  a->Signal(SIGCONT);
  ChildResult ra = a->Wait(180);
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  ExpectNoSecret(ra.err + rb.err);
  // The chain of generations from CURRENT back to the first.
  ChildResult gens = Snapsink({"inspect", root, "generations", "--json"}, env_);
  ASSERT_EQ(gens.exit_code, 0) << gens.err;
  std::map<uint64_t, uint64_t> parent;
  uint64_t current = 0;
  std::istringstream in(gens.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch g, p;
    if (!std::regex_search(line, g, std::regex("\"generation\":([0-9]+)")) ||
        !std::regex_search(line, p, std::regex("\"parent\":([0-9]+)"))) {
      continue;
    }
    parent[std::stoull(g[1])] = std::stoull(p[1]);
    if (line.find("\"current\":true") != std::string::npos) current = std::stoull(g[1]);
  }
  ASSERT_GT(current, zombie) << gens.out;
  for (uint64_t at = current; at != 0; at = parent[at]) {
    EXPECT_NE(at, zombie) << "the zombie's generation was published: " << gens.out;
    if (!parent.count(at)) break;
  }
  EXPECT_EQ(Rows(BucketQuery(root)), Rows(FileQuery({&events}))) << ra.err;
  ChildResult v = Snapsink({"verify", root}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Scaled 1 -> 3 -> 1: one process reads the topic and exits; more events
// come and three processes (two new "machines", each its own --state DIR
// and a reader with its own cache dir) share the group and the bucket;
// more events, and one process again. After each phase a reader on yet
// another DIR sees the rows of a file run of every event so far; at the
// end they equal a file run of all events, and verify passes.
TEST_F(KafkaBucket, ScaledOneToThreeToOneEqualsAFileRun) {
  std::vector<EventStream> phases;
  for (int i = 0; i < 3; ++i) phases.push_back(GenerateEvents(kPartitions, 100, 97 + i, 100 * i));
  const std::string root = BucketRoot("orders");
  auto rows_so_far = [&](int phase) {
    std::vector<const EventStream*> all;
    for (int i = 0; i <= phase; ++i) all.push_back(&phases[i]);
    return Rows(FileQuery(all));
  };
  auto read_with_own_cache = [&](int phase) {
    ChildResult r = Snapsink({"query", root, "--format", "json", "--cache-dir",
                              dir_ + "/cache-" + std::to_string(phase)},
                             env_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Rows(r.out);
  };
  std::string seen;
  // 1: one process.
  ProduceStream(phases[0]);
  ChildResult one = Snapsink(FinalArgs(root, "gb5", "state-a"), env_, 180);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(read_with_own_cache(0), rows_so_far(0));
  // 3: A again on its own DIR, and B and C on new, empty ones.
  ProduceStream(phases[1]);
  std::vector<std::unique_ptr<Child>> three;
  for (const char* state : {"state-a", "state-b", "state-c"}) three.push_back(Start(FinalArgs(root, "gb5", state)));
  for (auto& c : three) {
    ChildResult r = c->Wait(240);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    seen += r.err;
  }
  ASSERT_FALSE(HasFailure()) << seen;
  EXPECT_EQ(read_with_own_cache(1), rows_so_far(1)) << seen;
  // 1: C alone, which may have held none of some partitions' state.
  ProduceStream(phases[2]);
  ChildResult last = Snapsink(FinalArgs(root, "gb5", "state-c"), env_, 180);
  ASSERT_EQ(last.exit_code, 0) << last.err;
  ExpectNoSecret(one.err + seen + last.err);
  for (int p = 0; p < kPartitions; ++p) EXPECT_EQ(ClaimedState("orders", p), dir_ + "/state-c") << p;
  EXPECT_EQ(read_with_own_cache(2), rows_so_far(2)) << last.err;
  ChildResult v = Snapsink({"verify", root}, env_);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// One owner killed at each durable step of its bucket writes (a claim, a
// seal record uploaded, progress swapped, a checkpoint, the merged
// inputs, the generation and its CURRENT swap), then run again: on the same
// --state DIR, and on an empty one (restoring from the bucket). Either way
// the bucket's published rows equal a clean run's.
class KafkaBucketCrash : public KafkaBucket, public ::testing::WithParamInterface<const char*> {};

TEST_P(KafkaBucketCrash, KilledAtABucketWriteThenRunAgainEqualsACleanRun) {
  const std::string point = GetParam();
  const EventStream events = GenerateEvents(kPartitions, 120, 94);
  ProduceStream(events);
  const std::string want = Rows(FileQuery({&events}));
  for (const bool same_dir : {true, false}) {
    const std::string prefix = same_dir ? "same" : "fresh";
    const std::string root = BucketRoot(prefix);
    const std::string group = "gc-" + prefix;
    ChildResult crashed =
        Snapsink(FinalArgs(root, group, prefix + "-1"), [&] {
          std::vector<std::string> env = env_;
          env.push_back("SNAPSINK_CRASH_AT=" + point);
          return env;
        }(), 180);
    ASSERT_EQ(crashed.exit_code, 99) << point << ": " << crashed.err;
    ChildResult rerun = Snapsink(FinalArgs(root, group, prefix + (same_dir ? "-1" : "-2")), env_, 180);
    ASSERT_EQ(rerun.exit_code, 0) << point << (same_dir ? " (same DIR)" : " (empty DIR)") << ": " << rerun.err;
    EXPECT_EQ(Rows(BucketQuery(root)), want) << point << (same_dir ? " (same DIR)" : " (empty DIR)");
    ChildResult v = Snapsink({"verify", root}, env_);
    EXPECT_EQ(v.exit_code, 0) << point << ": " << v.out << v.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Points, KafkaBucketCrash,
                         ::testing::Values("owner.before_claim", "bucket.upload_file", "partition.seal_record",
                                           "partition.progress", "bucket.after_swap_put", "checkpoint.before_rename",
                                           "merge.inputs_recorded", "merge.before_publish", "merge.after_publish"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = (ch == '.' ? '_' : ch);
                           return n;
                         });

}  // namespace
}  // namespace snapsink::kafkatest
