// A full disk: init, ingest, seal, publish, backfill and rollback
// on a small tmpfs that is full exit non-zero saying "no space left on
// device" with the path, change nothing a reader sees, and a rerun once
// space is freed leaves the root as a clean run does.
//
// Needs root (mount -t tmpfs); skipped with a message otherwise.
#include <sys/mount.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <boost/filesystem.hpp>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

std::string Events(uint64_t first, uint64_t n, const std::string& value) {
  std::string text;
  for (uint64_t i = first; i < first + n; ++i) {
    text += EventLine()
                .Seq(i)
                .Ts(1792576800000LL + static_cast<int64_t>(i % 3) * 3600000)
                .Key("key-" + std::to_string(i))
                .Value(value)
                .Line();
  }
  return text;
}

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs; skipped";
    mnt_ = dir_ / "mnt";
    fs::create_directory(mnt_);
    if (::mount("tmpfs", mnt_.c_str(), "tmpfs", 0, "size=16m") != 0) {
      GTEST_SKIP() << "mount -t tmpfs failed (" << std::strerror(errno) << "); skipped";
    }
    mounted_ = true;
    root_ = mnt_ + "/r";
    clean_ = dir_ / "clean";
  }
  void TearDown() override {
    if (mounted_) ::umount2(mnt_.c_str(), MNT_DETACH);
  }
  // Takes every free block of the tmpfs.
  void Fill() {
    const std::string cmd = "dd if=/dev/zero of='" + mnt_ + "/fill' bs=4k 2>/dev/null";
    (void)std::system(cmd.c_str());
    ASSERT_TRUE(fs::exists(mnt_ + "/fill"));
  }
  void Free() { fs::remove(mnt_ + "/fill"); }
  // Runs args on root_ (expecting success) and on clean_, the reference.
  void Both(std::vector<std::string> args) {
    for (const std::string& r : {root_, clean_}) {
      std::vector<std::string> a = args;
      a.insert(a.begin() + 1, r);
      RunResult res = Snapsink(a);
      ASSERT_EQ(res.exit_code, 0) << a[0] << " " << r << ": " << res.err;
    }
  }
  // Runs args on the full root_: a clean failure naming the full disk, and
  // nothing a reader sees changed.
  void FailsFull(std::vector<std::string> args) {
    const std::string before = StateDump(root_);
    args.insert(args.begin() + 1, root_);
    RunResult r = Snapsink(args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_LT(r.exit_code, 128) << args[0] << " died of a signal";
    EXPECT_NE(r.err.find("no space left on device"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(mnt_), std::string::npos) << args[0] << ": the path is named: " << r.err;
    EXPECT_EQ(StateDump(root_), before) << args[0];
  }
  // On a full disk args fails cleanly; with space again a rerun of it
  // finishes, and the root ends like the clean one.
  void FullThenRerunFinishes(const std::vector<std::string>& args) {
    Fill();
    FailsFull(args);
    Free();
    Both(args);
    ExpectLikeClean();
  }
  void ExpectLikeClean() {
    EXPECT_EQ(StateDump(root_), StateDump(clean_));
    EXPECT_EQ(TreeDiff(TreeContents(root_), TreeContents(clean_)), "");
    RunResult v = Snapsink({"verify", root_});
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  }

  TempDir dir_;
  std::string mnt_, root_, clean_;
  bool mounted_ = false;
};

// Broke: with 4 KiB free init died of SIGBUS, or failed and left a root
// that init refused and nothing else could open.
TEST_F(FullDisk, InitFailsCleanlyAndLeavesNoRoot) {
  ASSERT_EQ(::mount("tmpfs", mnt_.c_str(), "tmpfs", MS_REMOUNT, "size=4k"), 0) << std::strerror(errno);
  RunResult r = Snapsink({"init", root_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no space left on device"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_));
  ASSERT_EQ(::mount("tmpfs", mnt_.c_str(), "tmpfs", MS_REMOUNT, "size=16m"), 0) << std::strerror(errno);
  Fill();
  r = Snapsink({"init", root_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no space left on device"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_));
  Free();
  r = Snapsink({"init", root_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Snapsink({"init", clean_}).exit_code, 0);
  ExpectLikeClean();
}

// Broke: a full disk during ingest said "lmdb commit: Input/output error".
TEST_F(FullDisk, IngestSaysNoSpaceAndARerunFinishes) {
  Both({"init"});
  WriteFile(dir_ / "in", Events(0, 20000, "1.25") + "not json\n");
  FullThenRerunFinishes({"ingest", dir_ / "in", "--source", "in", "--quiet"});
}

TEST_F(FullDisk, SealSaysNoSpaceAndARerunFinishes) {
  Both({"init"});
  WriteFile(dir_ / "in", Events(0, 20000, "2"));
  Both({"ingest", dir_ / "in", "--source", "in", "--quiet"});
  FullThenRerunFinishes({"seal", "--all"});
  Both({"publish"});
  ExpectLikeClean();
}

TEST_F(FullDisk, PublishSaysNoSpaceAndARerunFinishes) {
  Both({"init"});
  WriteFile(dir_ / "in", Events(0, 300, "2"));
  Both({"run", dir_ / "in", "--source", "in", "--final", "--quiet"});
  WriteFile(dir_ / "in2", Events(300, 20000, "3"));
  Both({"ingest", dir_ / "in2", "--source", "in2", "--quiet"});
  Both({"seal", "--all"});
  FullThenRerunFinishes({"publish"});
}

TEST_F(FullDisk, BackfillSaysNoSpaceAndARerunFinishes) {
  Both({"init"});
  WriteFile(dir_ / "in", Events(0, 300, "2"));
  Both({"run", dir_ / "in", "--source", "in", "--final", "--quiet"});
  WriteFile(dir_ / "archive", Events(0, 20000, "5"));
  // Named: a published backfill's source stays in state, and the
  // two roots compared are in different directories.
  FullThenRerunFinishes({"backfill", "--version", "3", dir_ / "archive", "--source", "archive", "--quiet"});
}

// A rollback on a full disk cannot write its manifest: it exits non-zero
// before its commit, readers see the same generation and rows (CURRENT is
// byte for byte the same), verify passes, and once space is freed the same
// rollback leaves the root as a clean rollback does.
TEST_F(FullDisk, RollbackSaysNoSpaceChangesNothingAndARerunEqualsClean) {
  Both({"init"});
  WriteFile(dir_ / "in", Events(0, 300, "2"));
  Both({"run", dir_ / "in", "--source", "in", "--final", "--quiet"});
  WriteFile(dir_ / "in2", Events(300, 3000, "3"));
  Both({"run", dir_ / "in2", "--source", "in2", "--final", "--quiet"});
  const std::string current = ReadFile(root_ + "/CURRENT");
  const RunResult query = Snapsink({"query", root_, "--format", "json"});
  ASSERT_EQ(query.exit_code, 0) << query.err;
  Fill();
  FailsFull({"rollback", "--generation", "1"});
  EXPECT_EQ(ReadFile(root_ + "/CURRENT"), current);
  const RunResult after = Snapsink({"query", root_, "--format", "json"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, query.out);
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  Free();
  Both({"rollback", "--generation", "1"});
  EXPECT_NE(Snapsink({"query", root_, "--format", "json"}).out, query.out);  // it did roll back
  ExpectLikeClean();
}

}  // namespace
}  // namespace snapsink::testing
