// `snapsink upgrade` over roots that earlier builds wrote (tests/old_roots/,
// made by make_old_root.sh with the builds its README names, and checked in
// with the rows each build's own `query` printed for every generation).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = std::filesystem;

std::string OldRootDir(const std::string& name) { return std::string(SNAPSINK_SOURCE_DIR) + "/tests/old_roots/" + name; }

// The checked-in root copied to dir/root, with the empty directories git
// does not keep.
std::string CopyOldRoot(const std::string& name, const TempDir& dir) {
  const std::string root = dir / "root";
  fs::copy(OldRootDir(name) + "/root", root, fs::copy_options::recursive);
  for (const char* d : {"staging", "snapshots", "manifests", "rejects"}) fs::create_directories(root + "/" + d);
  return root;
}

// Every file of the root, LMDB's included, but not lock.mdb (LMDB's reader
// table, which any reader opens and writes). For "changes nothing".
std::map<std::string, std::string> AllFiles(const std::string& root) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (fs::is_directory(it->path())) {
      out[rel + "/"] = "";
    } else if (it->path().filename() != "lock.mdb") {
      out[rel] = ReadFile(it->path().string());
    }
  }
  return out;
}

// What two upgraded roots must agree on beyond their files (LMDB's pages
// differ with its allocation history, not its records).
std::string Records(const std::string& root) {
  std::string dump;
  for (const char* what : {"snapshots", "generations"}) {
    RunResult r = Snapsink({"inspect", root, what, "--json"});
    dump += std::string("## ") + what + " rc=" + std::to_string(r.exit_code) + "\n" + r.out;
  }
  return StateDump(root) + WithParentAsDir(root, dump);
}

// The generations the old build's query printed (query-g<G>.json).
std::vector<uint64_t> GoldenGenerations(const std::string& name) {
  std::vector<uint64_t> out;
  for (const auto& e : fs::directory_iterator(OldRootDir(name))) {
    const std::string f = e.path().filename().string();
    if (f.rfind("query-g", 0) == 0) out.push_back(std::stoull(f.substr(7)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

const char* const kOldRoots[] = {
    "format1",            // state 1, data 1, manifests 1, CURRENT without checksum
    "format2-snapshot2",  // state 2, data 2 and snapshot manifest 2, generation manifest 1
};

class UpgradeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(UpgradeTest, DryRunChangesNothing) {
  TempDir dir;
  const std::string root = CopyOldRoot(GetParam(), dir);
  const auto before = AllFiles(root);
  RunResult r = Snapsink({"upgrade", root, "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("would convert manifests/1: generation manifest format 1 -> 4 (parts)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would rewrite CURRENT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would convert the state"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dry run: nothing changed"), std::string::npos) << r.out;
  EXPECT_EQ(TreeDiff(AllFiles(root), before), "");
}

TEST_P(UpgradeTest, ReadCommandsNameTheUpgrade) {
  TempDir dir;
  const std::string root = CopyOldRoot(GetParam(), dir);
  for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
           {"query", root}, {"status", root}, {"verify", root}, {"inspect", root, "windows"}, {"run", root, "-"}}) {
    RunResult r = Snapsink(cmd);
    EXPECT_NE(r.exit_code, 0) << cmd[0];
    EXPECT_NE(r.err.find("snapsink upgrade " + root), std::string::npos) << cmd[0] << ": " << r.err;
  }
}

TEST_P(UpgradeTest, UpgradedRootGivesTheOldRowsAndVerifies) {
  TempDir dir;
  const std::string root = CopyOldRoot(GetParam(), dir);
  RunResult up = Snapsink({"upgrade", root});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  const std::vector<uint64_t> generations = GoldenGenerations(GetParam());
  ASSERT_GE(generations.size(), 3u);
  for (uint64_t g : generations) {
    RunResult q = Snapsink({"query", root, "--generation", std::to_string(g), "--format", "json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(q.out, ReadFile(OldRootDir(GetParam()) + "/query-g" + std::to_string(g) + ".json"))
        << "generation " << g;
  }
  RunResult q = Snapsink({"query", root, "--format", "json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, ReadFile(OldRootDir(GetParam()) + "/query-current.json"));
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  RunResult again = Snapsink({"upgrade", root});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to do"), std::string::npos) << again.out;

  // The converted state goes on: the window the old build staged (14:00)
  // publishes as its next version, and a later event seals on top.
  RunResult pub = Snapsink({"publish", root});
  ASSERT_EQ(pub.exit_code, 0) << pub.err;
  RunResult w = Snapsink({"query", root, "--window", "2026-10-21T14:00:00Z", "--format", "json"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("\"metric\":\"visits\",\"key\":\"eu\",\"count\":1"), std::string::npos) << w.out;
  const std::string later = dir / "later.ndjson";
  WriteFile(later, EventLine().Producer("p2").Seq(5).Ts("2026-10-21T14:30:00Z").Metric("visits").Key("eu").Line());
  RunResult run = Snapsink({"run", root, later, "--final"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  w = Snapsink({"query", root, "--window", "2026-10-21T14:00:00Z", "--format", "json"});
  EXPECT_NE(w.out.find("\"metric\":\"visits\",\"key\":\"eu\",\"count\":2,"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("\"version\":2"), std::string::npos) << w.out;
  v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A crash at every hit of every upgrade crash point, then a rerun: the same
// root as an upgrade that never stopped.
TEST_P(UpgradeTest, CrashAtEachStepThenRerunEqualsCleanUpgrade) {
  TempDir clean_dir;
  const std::string clean = CopyOldRoot(GetParam(), clean_dir);
  ASSERT_EQ(Snapsink({"upgrade", clean}).exit_code, 0);
  const auto want_files = TreeContents(clean);
  const std::string want_records = Records(clean);

  int crashes = 0;
  for (const char* point : {"upgrade.snapshot_data", "upgrade.snapshot", "upgrade.part_written", "upgrade.manifest",
                            "upgrade.current", "upgrade.backfill_state"}) {
    for (int hit = 1;; hit++) {
      TempDir dir;
      const std::string root = CopyOldRoot(GetParam(), dir);
      RunResult crashed = Snapsink({"upgrade", root}, {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", std::to_string(hit)}});
      if (crashed.exit_code == 0) break;  // fewer than `hit` such steps
      ASSERT_EQ(crashed.exit_code, 99) << point << " hit " << hit << ": " << crashed.err;
      crashes++;
      // Until the upgrade finishes, the root's commands name it.
      RunResult status = Snapsink({"status", root});
      EXPECT_NE(status.err.find("snapsink upgrade"), std::string::npos) << point << " hit " << hit << status.err;
      RunResult rerun = Snapsink({"upgrade", root});
      ASSERT_EQ(rerun.exit_code, 0) << point << " hit " << hit << ": " << rerun.err;
      EXPECT_EQ(TreeDiff(TreeContents(root), want_files), "") << point << " hit " << hit;
      EXPECT_EQ(Records(root), want_records) << point << " hit " << hit;
      EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0) << point << " hit " << hit;
    }
  }
  EXPECT_GE(crashes, 6);
}

INSTANTIATE_TEST_SUITE_P(OldRoots, UpgradeTest, ::testing::ValuesIn(kOldRoots),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string n = p.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// Damage in an old data file stops the upgrade before it changes anything.
TEST(UpgradeCli, DamagedOldSnapshotStopsBeforeAnyChange) {
  TempDir dir;
  const std::string root = CopyOldRoot("format1", dir);
  const std::string data = root + "/snapshots/20261021T110000Z/v2/data";
  std::string bytes = ReadFile(data);
  bytes[bytes.size() / 3] ^= 0x20;
  WriteFile(data, bytes);
  const auto before = AllFiles(root);
  RunResult r = Snapsink({"upgrade", root});
  EXPECT_EQ(r.exit_code, 10) << r.err;
  EXPECT_NE(r.err.find(data), std::string::npos) << r.err;
  auto after = AllFiles(root);
  after.erase("LOCK");  // the writer's pid
  auto want = before;
  want.erase("LOCK");
  EXPECT_EQ(TreeDiff(after, want), "");
  RunResult dry = Snapsink({"upgrade", root, "--dry-run"});
  EXPECT_EQ(dry.exit_code, 10) << dry.err;
}

TEST(UpgradeCli, CurrentRootIsNothingToDo) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunResult r = Snapsink({"upgrade", root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nothing to do"), std::string::npos) << r.out;
  RunResult missing = Snapsink({"upgrade", dir / "nope"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace snapsink::testing
