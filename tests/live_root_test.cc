// A root that stays live (SPEC 13), through the binary: maintenance commands
// beside a running `run --follow`, and gc while following.
//
// Each maintenance test follows one file. Phase 1 is written before the
// follower starts (so its first generation is the same in every run); the
// command then runs while a feeder thread keeps appending lines; phase 3
// comes after it. The command must exit 0, the follower must go on (phase 3
// is read and it exits 0 on SIGTERM), and the rows it published must equal
// a reference root given the same lines and the same command with no
// follower: `run` of phase 1, the command, `run` of the whole file.
//
// Nothing here depends on machine speed: every wait is for a condition
// (an offset, a generation), bounded by a generous count.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "snapsink/sink.h"
#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


// One event of producer at minute (window 1m), seq as given.
std::string Line(const std::string& producer, int seq, int minute, int value = 1) {
  return EventLine()
      .Producer(producer)
      .Seq(seq)
      .Ts(kBase + minute * 60000LL + seq % 1000)
      .Metric("m")
      .Key("k" + std::to_string(seq % 3))
      .Value(value)
      .Line();
}

// query --format json without the generation: one line per row.
std::set<std::string> Rows(const std::string& root) {
  RunResult q = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  std::set<std::string> rows;
  size_t pos = 0;
  while (pos < q.out.size()) {
    const size_t nl = q.out.find('\n', pos);
    std::string line = q.out.substr(pos, nl - pos);
    rows.insert(line.substr(0, line.find(",\"generation\"")));
    pos = nl + 1;
  }
  return rows;
}

// Waits (bounded by count) until cond holds; false if it never did.
template <typename Cond>
bool WaitFor(Cond cond) {
  for (int i = 0; i < 1200; ++i) {  // 1200 x 100 ms: two minutes on a very busy machine
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return cond();
}

size_t ManifestCount(const std::string& root) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(root + "/manifests")) n += e.is_regular_file() ? 1 : 0;
  return n;
}

class LiveRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    ref_ = dir_ / "ref";
    file_ = dir_ / "in.ndjson";
    ref_file_ = dir_ / "ref.ndjson";
    ASSERT_EQ(Snapsink({"init", root_, "--window", "1m", "--lateness", "0s"}).exit_code, 0);
    ASSERT_EQ(Snapsink({"init", ref_, "--window", "1m", "--lateness", "0s"}).exit_code, 0);
  }
  void TearDown() override {
    StopFeeder();
    if (follower_.pid > 0 && follower_.Running()) {
      ::kill(follower_.pid, SIGKILL);
      follower_.Wait();
    }
  }

  // Phase 1: producers "live" (minutes 0..9), "old" (minute 0 only) and
  // "g" (seq 0, 1, then 5: a gap 2..4), then the follower, caught up and
  // published.
  void StartWithPhaseOne(std::vector<std::string> extra = {}) {
    std::string text = Line("old", 0, 0) + Line("g", 0, 1) + Line("g", 1, 1) + Line("g", 5, 2);
    for (; live_seq_ < 40; ++live_seq_) text += Line("live", live_seq_, live_seq_ / 4);
    WriteFile(file_, text);
    phase_one_ = text;
    std::vector<std::string> args = {"run",  root_, file_, "--follow", "--publish-every", "0s",
                                     "--poll", "100ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    follower_ = SpawnSnapsink(args);
    WaitCaughtUp();
    ASSERT_TRUE(WaitFor([&] { return CurrentGeneration(root_) >= 1; })) << "the follower never published";
  }
  void WaitCaughtUp() {
    const int64_t size = static_cast<int64_t>(ReadFile(file_).size());
    ASSERT_TRUE(WaitFor([&] { return SourceOffset(root_, file_) == size; })) << "the follower never read to " << size;
  }

  // Appends new events of "live" (later minutes), or with duplicates=true
  // lines already applied (no effect on any window), until StopFeeder.
  void StartFeeder(bool duplicates = false) {
    feeding_ = true;
    feeder_ = std::thread([this, duplicates] {
      int dup = 0;
      while (feeding_) {
        if (duplicates) {
          AppendFile(file_, Line("live", dup, dup / 4));
          dup = (dup + 1) % 40;
        } else {
          AppendFile(file_, Line("live", live_seq_, live_seq_ / 4));
          ++live_seq_;
        }
        ++fed_;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    // At least a few lines arrive before the command starts.
    ASSERT_TRUE(WaitFor([&] { return fed_ >= 5; }));
  }
  void StopFeeder() {
    feeding_ = false;
    if (feeder_.joinable()) feeder_.join();
  }

  // Phase 3, then SIGTERM: the follower read it all and exits 0.
  void FinishFollowing() {
    const uint64_t before = CurrentGeneration(root_);
    std::string more;
    for (int i = 0; i < 12; ++i, ++live_seq_) more += Line("live", live_seq_, live_seq_ / 4 + 2);
    AppendFile(file_, more);
    WaitCaughtUp();
    ASSERT_TRUE(WaitFor([&] { return CurrentGeneration(root_) > before; })) << "no publish after the command";
    ::kill(follower_.pid, SIGTERM);
    EXPECT_EQ(follower_.Wait(), 0);
  }

  // The reference: phase 1, the command, then the whole file, no follower.
  void ExpectEqualsStoppedFollower(const std::vector<std::string>& command_args, const std::string& root_arg_name) {
    WriteFile(ref_file_, phase_one_);
    ASSERT_EQ(Snapsink({"run", ref_, ref_file_}).exit_code, 0);
    std::vector<std::string> args = command_args;
    for (std::string& a : args) {
      if (a == root_arg_name) a = ref_;
    }
    RunResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    WriteFile(ref_file_, ReadFile(file_));
    ASSERT_EQ(Snapsink({"run", ref_, ref_file_}).exit_code, 0);
    const std::set<std::string> want = Rows(ref_);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(Rows(root_), want);
  }

  // The whole test for one command: args name the root as "ROOT".
  void RunBesideFollower(std::vector<std::string> args, bool duplicates = false,
                         std::vector<std::string> follower_extra = {}) {
    StartWithPhaseOne(follower_extra);
    if (HasFatalFailure()) return;
    StartFeeder(duplicates);
    std::vector<std::string> live = args;
    for (std::string& a : live) {
      if (a == "ROOT") a = root_;
    }
    RunResult r = Snapsink(live);
    StopFeeder();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(follower_.Running()) << "the follower stopped";
    FinishFollowing();
    ExpectEqualsStoppedFollower(args, "ROOT");
  }

  TempDir dir_;
  std::string root_, ref_, file_, ref_file_, phase_one_;
  Spawned follower_;
  std::thread feeder_;
  std::atomic<bool> feeding_{false};
  std::atomic<int> fed_{0};
  int live_seq_ = 0;  // the feeder thread's while it runs
};

TEST_F(LiveRootTest, GcBesideFollower) { RunBesideFollower({"gc", "ROOT", "--keep-generations", "1"}); }

TEST_F(LiveRootTest, RetireProducersBesideFollower) {
  RunBesideFollower({"gc", "ROOT", "--producers-idle", "5m"});
  EXPECT_NE(Snapsink({"inspect", root_, "producers", "--json"}).out.find("\"producer\":\"old\""), std::string::npos);
  EXPECT_EQ(Snapsink({"inspect", root_, "producers", "--json"}).out,
            Snapsink({"inspect", ref_, "producers", "--json"}).out);
}

TEST_F(LiveRootTest, GapsAcceptBesideFollower) {
  RunBesideFollower({"gaps", "ROOT", "accept", "--producer", "g"});
  const std::string gaps = Snapsink({"inspect", root_, "gaps", "--all", "--json"}).out;
  EXPECT_NE(gaps.find("\"g\""), std::string::npos) << gaps;
}

TEST_F(LiveRootTest, BackfillBesideFollower) {
  std::string archive;
  for (int i = 0; i < 20; ++i) archive += Line("arch", i, i / 4, 10);  // minutes 0..4
  WriteFile(dir_ / "archive.ndjson", archive);
  RunBesideFollower({"backfill", "ROOT", "--version", "5", dir_ / "archive.ndjson"});
  const std::set<std::string> rows = Rows(root_);
  bool backfilled = false;
  for (const std::string& r : rows) backfilled |= r.find("\"version\":5") != std::string::npos;
  EXPECT_TRUE(backfilled) << "no row of version 5 was published";
}

TEST_F(LiveRootTest, RollbackDryRunBesideFollower) {
  // The follower's gc must keep generation 1 for the command to name it.
  RunBesideFollower({"rollback", "ROOT", "--generation", "1", "--dry-run"}, false, {"--keep-generations", "1000"});
}

// Lines arriving during the rollback are redeliveries: which of them the
// follower reads before the rollback then cannot matter (new events would be
// taken out of the live view or not, by timing).
TEST_F(LiveRootTest, RollbackBesideFollower) {
  StartWithPhaseOne({"--keep-generations", "1000"});  // generation 1 stays for the rollback
  // Phase 2: windows that generation 1 does not have, then the rollback takes them out.
  std::string more;
  for (int i = 0; i < 20; ++i, ++live_seq_) more += Line("live", live_seq_, live_seq_ / 4);
  AppendFile(file_, more);
  WaitCaughtUp();
  ASSERT_TRUE(WaitFor([&] { return CurrentGeneration(root_) >= 2; }));
  const std::string phase_two = ReadFile(file_);
  StartFeeder(/*duplicates=*/true);
  RunResult r = Snapsink({"rollback", root_, "--generation", "1"});
  StopFeeder();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a copy of generation 1"), std::string::npos) << r.out;
  EXPECT_TRUE(follower_.Running());
  FinishFollowing();

  WriteFile(ref_file_, phase_one_);
  ASSERT_EQ(Snapsink({"run", ref_, ref_file_}).exit_code, 0);
  WriteFile(ref_file_, phase_two);
  ASSERT_EQ(Snapsink({"run", ref_, ref_file_}).exit_code, 0);
  ASSERT_EQ(Snapsink({"rollback", ref_, "--generation", "1"}).exit_code, 0);
  WriteFile(ref_file_, ReadFile(file_));
  ASSERT_EQ(Snapsink({"run", ref_, ref_file_}).exit_code, 0);
  EXPECT_EQ(Rows(root_), Rows(ref_));
}

// A dry run reads only: it answers while another process holds LOCK.
TEST_F(LiveRootTest, RollbackDryRunNeedsNoLock) {
  std::string text;
  for (int i = 0; i < 12; ++i) text += Line("p", i, i / 4);
  WriteFile(file_, text);
  ASSERT_EQ(Snapsink({"run", root_, file_}).exit_code, 0);
  AppendFile(file_, Line("p", 12, 5));
  ASSERT_EQ(Snapsink({"run", root_, file_}).exit_code, 0);
  int fd = ::open((root_ + "/LOCK").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  struct flock fl;
  std::memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(fd, F_OFD_SETLK, &fl), 0) << std::strerror(errno);
  RunResult dry = Snapsink({"rollback", root_, "--generation", "1", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("dry run: nothing changed"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("leaves the live view"), std::string::npos) << dry.out;
  // Without a follower, a writer is refused at once, as always.
  EXPECT_EQ(Snapsink({"rollback", root_, "--generation", "1"}).exit_code, 5);
  ::close(fd);
}

// A second follower of the same root is refused (exit 5), the first goes on.
TEST_F(LiveRootTest, SecondFollowerIsLocked) {
  StartWithPhaseOne();
  RunResult second = Snapsink({"run", root_, file_, "--follow", "--poll", "100ms"});
  EXPECT_EQ(second.exit_code, 5) << second.err;
  EXPECT_NE(second.err.find("followed by another"), std::string::npos) << second.err;
  EXPECT_TRUE(follower_.Running());
  FinishFollowing();
}

// 60 publishes with gc after each: at most keep generations remain besides
// the one a reader pins, which still reads; serve answers throughout.
TEST_F(LiveRootTest, GcWhileFollowingKeepsGenerationsAndPins) {
  WriteFile(file_, Line("p", 0, 0) + Line("p", 1, 1));
  Server server = StartServe(root_);
  ASSERT_NE(server.port, 0);
  follower_ = SpawnSnapsink(
      {"run", root_, file_, "--follow", "--publish-every", "0s", "--poll", "100ms", "--keep-generations", "2"});
  ASSERT_TRUE(WaitFor([&] { return CurrentGeneration(root_) >= 1; }));
  const uint64_t pinned_generation = CurrentGeneration(root_);
  auto handle = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(handle);
  auto reader = (*handle)->NewReader(pinned_generation);
  ASSERT_STATUS_OK(reader);
  const std::string pinned_rows = Snapsink({"query", root_, "--generation", std::to_string(pinned_generation),
                                            "--format", "json"}).out;
  ASSERT_FALSE(pinned_rows.empty());
  httplib::Client client("127.0.0.1", server.port);
  uint64_t last = pinned_generation;
  for (int minute = 2; minute < 62; ++minute) {
    AppendFile(file_, Line("p", minute, minute));  // closes window minute-1: one publish
    ASSERT_TRUE(WaitFor([&] { return CurrentGeneration(root_) > last; })) << "no publish for minute " << minute;
    last = CurrentGeneration(root_);
    // gc runs after CURRENT moves: one more may be there for a moment.
    EXPECT_LE(ManifestCount(root_), 2u + 1u + 1u) << "at generation " << last;
    auto r = client.Get("/v1/query?format=json");
    ASSERT_TRUE(r) << "serve did not answer at generation " << last;
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_GE(last, pinned_generation + 60);
  // Kept: the two newest, and the pinned one.
  const std::set<std::string> want = {std::to_string(pinned_generation), std::to_string(last - 1),
                                      std::to_string(last)};
  std::set<std::string> got;
  ASSERT_TRUE(WaitFor([&] {
    got.clear();
    for (const auto& e : std::filesystem::directory_iterator(root_ + "/manifests")) {
      if (e.is_regular_file()) got.insert(e.path().filename().string());  // not parts/
    }
    return got == want;
  })) << "manifests left: " << got.size();
  std::vector<std::string> keys;
  ASSERT_STATUS_OK((*reader)->Scan(kBase, std::string("m"), [&](const api::Row& r) { keys.push_back(r.key); }));
  EXPECT_FALSE(keys.empty());
  EXPECT_EQ(Snapsink({"query", root_, "--generation", std::to_string(pinned_generation), "--format", "json"}).out,
            pinned_rows);
  EXPECT_EQ(Snapsink({"verify", root_}).exit_code, 0);
  ::kill(follower_.pid, SIGTERM);
  EXPECT_EQ(follower_.Wait(), 0);
}

}  // namespace
}  // namespace snapsink::testing
