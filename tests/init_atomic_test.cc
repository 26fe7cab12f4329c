// init leaves no root or a whole one, never a half-made one that looks whole.
//
// Through the binary: a crash at each of init's crash points leaves a
// half-made root that every other command names as such and a rerun of
// init finishes; a root an older init left half-made (state/ with no
// settings) is named with what to do. Through the library: a failure at
// every file operation of init, followed by a power cut that drops what was
// not durable (tests/fault_env.h), leaves either no root or a whole one,
// and init then succeeds.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "engine/filenames.h"
#include "engine/root.h"
#include "tests/fault_env.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

constexpr char kHalfMade[] = "is a half-made root from an interrupted init";

std::string Event(uint64_t seq) {
  return EventLine().Seq(seq).Ts("2026-10-21T10:00:00Z").Key("k").Value(int64_t{1}).Line();
}

// What a whole root answers: the settings it was made with, and a run on it.
void ExpectWholeRoot(const std::string& root, const std::string& input) {
  RunResult r = Snapsink({"run", root, input, "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult q = Snapsink({"query", root, "--format", "json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\"count\":3"), std::string::npos) << q.out;
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

class InitCrash : public ::testing::TestWithParam<const char*> {};

// Broke: a kill -9 during init (before its first LMDB commit) left a root
// that init refused ("already a root") and every other command rejected
// with an LMDB error.
TEST_P(InitCrash, KillDuringInitLeavesAHalfMadeRootThatInitFinishes) {
  TempDir d;
  const std::string root = d / "r";
  WriteFile(d / "in", Event(0) + Event(1) + Event(2));
  RunResult crash = Snapsink({"init", root, "--window", "15m"}, {{"SNAPSINK_CRASH_AT", GetParam()}});
  ASSERT_EQ(crash.exit_code, 99) << crash.err;
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"ingest", root, d / "in"}, {"inspect", root, "windows"}, {"verify", root},
        {"seal", root, "--all"}, {"publish", root}}) {
    RunResult r = Snapsink(cmd);
    EXPECT_NE(r.exit_code, 0) << cmd[0];
    EXPECT_NE(r.err.find(kHalfMade), std::string::npos) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find("run snapsink init again"), std::string::npos) << r.err;
  }
  RunResult again = Snapsink({"init", root, "--window", "15m"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_FALSE(fs::exists(filenames::InitStateDir(root)));
  RunResult w = Snapsink({"inspect", root, "windows"});
  EXPECT_EQ(w.exit_code, 0) << w.err;
  ASSERT_NO_FATAL_FAILURE(ExpectWholeRoot(root, d / "in"));
  EXPECT_EQ(Snapsink({"init", root}).exit_code, 1);  // now it is a root
}

INSTANTIATE_TEST_SUITE_P(Points, InitCrash, ::testing::Values("init.after_layout", "init.before_rename"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '.' ? '_' : c;
                           return n;
                         });

TEST(InitAtomic, InitIntoAnExistingEmptyDirectoryWorks) {
  TempDir d;
  fs::create_directory(d / "r");
  RunResult r = Snapsink({"init", d / "r"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  WriteFile(d / "in", Event(0) + Event(1) + Event(2));
  ASSERT_NO_FATAL_FAILURE(ExpectWholeRoot(d / "r", d / "in"));
}

// Broke: an older init created state/ in place; stopped before its first
// commit, it left state/ without settings, which init refused as "already a
// root" and the rest as "state has no format version" or MDB_INVALID.
TEST(InitAtomic, HalfMadeRootOfAnOlderInitIsNamedWithWhatToDo) {
  TempDir d;
  const std::string root = d / "r";
  for (const char* dir : {"", "/state", "/staging", "/snapshots", "/manifests", "/rejects"}) {
    fs::create_directory(root + dir);
  }
  WriteFile(root + "/LOCK", "");
  WriteFile(root + "/state/data.mdb", "");  // created, never written
  for (const std::vector<std::string>& cmd : {std::vector<std::string>{"inspect", root, "sources"},
                                              {"verify", root}, {"init", root}, {"ingest", root, "/dev/null"}}) {
    RunResult r = Snapsink(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd[0];
    EXPECT_NE(r.err.find(kHalfMade), std::string::npos) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find("remove it and run snapsink init again"), std::string::npos) << r.err;
  }
  // Tables made, settings not: the older init's second commit never happened.
  fs::remove(root + "/state/data.mdb");
  {
    std::unique_ptr<Store> store;
    ASSERT_STATUS_OK(Store::Open(filenames::StateDir(root), /*create=*/true, &store));
  }
  RunResult r = Snapsink({"inspect", root, "windows"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(kHalfMade), std::string::npos) << r.err;
  fs::remove_all(root);
  EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
}

// A failure at each file operation of init, then a power cut: no root, or a
// whole one; init afterwards makes (or finds) a whole root.
TEST(InitAtomic, PowerCutAtEveryStepOfInitLeavesNoRootOrAWholeOne) {
  TempDir d;
  RootConfig config;
  config.window_ms = 15 * 60 * 1000;
  config.lateness_ms = 0;
  size_t whole = 0, none = 0;
  for (uint64_t k = 1;; ++k) {
    ASSERT_LT(k, 200u) << "init never completed";
    const std::string root = d / ("r" + std::to_string(k));
    FaultInjectionEnv env;
    env.FailAtOp(k);
    Status s = Root::Init(&env, root, config);
    const bool failed = env.failed();
    ASSERT_STATUS_OK(env.PowerCut());
    if (!failed) {
      ASSERT_STATUS_OK(s);
      // Done: nothing of it may be lost any more.
      std::unique_ptr<Root> r;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kUnlocked, &r));
      EXPECT_EQ(r->config().window_ms, config.window_ms);
      break;
    }
    ASSERT_FALSE(s.ok()) << "step " << k;
    std::unique_ptr<Root> r;
    Status open = Root::Open(Env::Default(), root, Root::Access::kUnlocked, &r);
    if (open.ok()) {
      ++whole;
      EXPECT_EQ(r->config().window_ms, config.window_ms) << "step " << k;
      r.reset();
      EXPECT_NE(Root::Init(Env::Default(), root, config).message().find("already a snapsink root"), std::string::npos);
    } else {
      ++none;
      EXPECT_TRUE(open.IsNotFound()) << "step " << k << ": " << open.ToString();
      const std::string m = open.message();
      EXPECT_TRUE(m.find("does not exist") != std::string::npos || m.find("is not a snapsink root") != std::string::npos ||
                  m.find("run snapsink init again to finish it") != std::string::npos)
          << "step " << k << ": " << m;
      Status again = Root::Init(Env::Default(), root, config);
      ASSERT_STATUS_OK(again) << "step " << k;
    }
    ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kWriter, &r)) << "step " << k;
    EXPECT_EQ(r->config().lateness_ms, 0);
    EXPECT_FALSE(fs::exists(filenames::InitStateDir(root))) << "step " << k;
  }
  EXPECT_GT(none, 5u);
}

// A failing init (not a crash) removes what it made.
TEST(InitAtomic, FailedInitRemovesWhatItMade) {
  TempDir d;
  for (uint64_t k = 1; k < 40; ++k) {
    const std::string root = d / ("r" + std::to_string(k));
    FaultInjectionEnv env;
    env.FailOnlyOp(k);
    Status s = Root::Init(&env, root, RootConfig());
    if (!env.failed()) break;
    ASSERT_FALSE(s.ok());
    EXPECT_FALSE(fs::exists(root)) << "step " << k;
  }
}

}  // namespace
}  // namespace snapsink::testing
