// Crash states made by hand: what a power cut or a file system
// can leave that the crash points cannot reach, rerun through the binary and
// compared byte for byte with a clean run.
//  - a backfill's LMDB environment whose first write never reached the disk
//    (zero-filled or truncated data.mdb, nothing committed);
//  - a directory rename a crash left half done: both staging/W/vN and
//    snapshots/W/vN present.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/filenames.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;


// n events per hour for `hours` hours from kBase, producer p; value v.
std::string Events(int hours, int per_hour, const std::string& value) {
  std::string out;
  uint64_t seq = 0;
  for (int h = 0; h < hours; ++h) {
    for (int i = 0; i < per_hour; ++i) {
      out += EventLine().Seq(seq++).Ts(kBase + h * kHour + i * 1000).Metric("orders").Key(i % 2 ? "eu" : "us")
                 .Value(value).Line();
    }
  }
  return out;
}

struct Roots {
  TempDir dir;
  std::string live = dir / "live.ndjson";
  std::string archive = dir / "archive.ndjson";
  Roots() {
    WriteFile(live, Events(4, 20, "1"));
    WriteFile(archive, Events(4, 20, "2"));
  }
  // A root with the live events published (run --final).
  std::string Make(const std::string& name) {
    const std::string root = dir / name;
    EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
    RunResult r = Snapsink({"run", root, live, "--final"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return root;
  }
};

void ExpectSameRoot(const std::string& got, const std::string& want) {
  EXPECT_EQ(TreeDiff(TreeContents(got), TreeContents(want)), "");
  EXPECT_EQ(StateDump(got), StateDump(want));
  RunResult v = Snapsink({"verify", got});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A backfill's environment whose first write was torn, zero-filled or cut
// short before any fsync: the rerun recognises it as never committed.
class NeverCommittedBackfillEnv : public ::testing::TestWithParam<int> {};

TEST_P(NeverCommittedBackfillEnv, RerunFinishesAndEqualsACleanRun) {
  Roots r;
  const std::string clean = r.Make("clean");
  RunResult c = Snapsink({"backfill", clean, "--version", "2", r.archive});
  ASSERT_EQ(c.exit_code, 0) << c.err;

  const std::string root = r.Make("crashed");
  const std::string bf = filenames::BackfillStateDir(root, 2);
  fs::create_directories(bf);
  switch (GetParam()) {
    case 0: WriteFile(filenames::LmdbDataFile(bf), std::string(8192, '\0')); break;  // zero-filled pages
    case 1: WriteFile(filenames::LmdbDataFile(bf), std::string(100, '\0')); break;   // cut short
    case 2: {  // a torn first write: the start of a real file, the rest zeros
      TempDir other;
      const std::string o = other / "r";
      ASSERT_EQ(Snapsink({"init", o}).exit_code, 0);
      std::string real = ReadFile(filenames::LmdbDataFile(filenames::StateDir(o)));
      real.resize(8192, '\0');
      std::fill(real.begin() + 12, real.end(), '\0');
      WriteFile(filenames::LmdbDataFile(bf), real);
      break;
    }
    case 3: WriteFile(filenames::LmdbDataFile(bf), ""); break;  // the name made durable, no byte
  }
  RunResult b = Snapsink({"backfill", root, "--version", "2", r.archive});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_FALSE(fs::exists(bf));
  ExpectSameRoot(root, clean);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NeverCommittedBackfillEnv, ::testing::Values(0, 1, 2, 3));

// Every snapshot directory under `from` (W/vN) copied to the same place under `to`.
int CopySnapshotDirs(const std::string& from, const std::string& to) {
  int copied = 0;
  for (fs::directory_iterator w(from), end; w != end; ++w) {
    for (fs::directory_iterator v(w->path()); v != end; ++v) {
      const fs::path dest = fs::path(to) / w->path().filename() / v->path().filename();
      if (fs::exists(dest)) continue;
      fs::create_directories(dest);
      for (fs::directory_iterator f(v->path()); f != end; ++f) fs::copy_file(f->path(), dest / f->path().filename());
      ++copied;
    }
  }
  return copied;
}

// Both names of a half-done rename: the rerun keeps the verified copy in
// snapshots/ (or replaces a damaged one from staging) instead of failing
// with "Directory not empty".
class HalfRenamedSnapshot : public ::testing::TestWithParam<bool> {};

TEST_P(HalfRenamedSnapshot, RerunSettlesItAndEqualsACleanRun) {
  const bool damaged = GetParam();
  Roots r;
  const std::string clean = r.Make("clean");
  const std::string root = r.dir / "crashed";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  RunResult crashed = Snapsink({"run", root, r.live, "--final"},
                               {{"SNAPSINK_CRASH_AT", "publish.after_rename"}, {"SNAPSINK_CRASH_HIT", "2"}});
  ASSERT_EQ(crashed.exit_code, 99) << crashed.err;
  // The two moved snapshots come back to staging/ as well.
  ASSERT_EQ(CopySnapshotDirs(filenames::SnapshotsDir(root), filenames::StagingDir(root)), 2);
  if (damaged) {  // the copy in snapshots/ is torn: its data file cut short
    for (fs::recursive_directory_iterator f(filenames::SnapshotsDir(root)), end; f != end; ++f) {
      if (f->path().filename() == filenames::kDataFile) {
        fs::resize_file(f->path(), fs::file_size(f->path()) / 2);
        break;
      }
    }
  }
  RunResult rerun = Snapsink({"run", root, r.live, "--final"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  ExpectSameRoot(root, clean);
}

INSTANTIATE_TEST_SUITE_P(Copies, HalfRenamedSnapshot, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "Damaged" : "Intact"); });

// The same half-done rename after a publish that completed: the seals are
// published and the staging copies stay beside their published twins. gc
// (and the next publish) removes each copy whose twin verifies, and keeps a
// copy whose twin does not (verify names the twin).
TEST(HalfRenamedPublished, GcAndPublishRemoveTheCopyOfAVerifiedTwin) {
  Roots r;
  const std::string clean = r.Make("clean");
  for (const std::vector<std::string>& cmd : {std::vector<std::string>{"gc"}, std::vector<std::string>{"publish"}}) {
    const std::string root = r.Make("left-" + cmd[0]);
    ASSERT_EQ(CopySnapshotDirs(filenames::SnapshotsDir(root), filenames::StagingDir(root)), 4);
    std::vector<std::string> args = cmd;
    args.push_back(root);
    RunResult done = Snapsink(args);
    ASSERT_EQ(done.exit_code, 0) << done.err;
    EXPECT_FALSE(fs::exists(filenames::StagingDir(root)) && !fs::is_empty(filenames::StagingDir(root)))
        << cmd[0] << " left staging copies";
    ExpectSameRoot(root, clean);
  }
}

TEST(HalfRenamedPublished, ACopyWhoseTwinIsDamagedStays) {
  Roots r;
  const std::string root = r.Make("damaged");
  ASSERT_EQ(CopySnapshotDirs(filenames::SnapshotsDir(root), filenames::StagingDir(root)), 4);
  std::string torn;
  for (fs::recursive_directory_iterator f(filenames::SnapshotsDir(root)), end; f != end; ++f) {
    if (f->path().filename() == filenames::kDataFile) {
      torn = f->path().string();
      fs::resize_file(f->path(), fs::file_size(f->path()) / 2);
      break;
    }
  }
  ASSERT_FALSE(torn.empty());
  ASSERT_EQ(Snapsink({"gc", root}).exit_code, 0);
  // Its staging copy is the one good copy left; the three others went.
  int left = 0;
  for (fs::recursive_directory_iterator f(filenames::StagingDir(root)), end; f != end; ++f) {
    left += f->path().filename() == filenames::kDataFile;
  }
  EXPECT_EQ(left, 1);
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 10);
  EXPECT_NE((v.out + v.err).find(torn), std::string::npos) << v.out << v.err;
}

}  // namespace
}  // namespace snapsink::testing
