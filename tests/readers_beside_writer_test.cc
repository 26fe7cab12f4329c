// verify, inspect and query on a root they may only read, and beside a
// writer that publishes and collects garbage (docs/CONTRACT.md 5, 10).
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <boost/filesystem.hpp>

#include "engine/filenames.h"
#include "engine/root.h"
#include "publish/generation_manifest.h"
#include "publish/maintenance.h"
#include "sink/root_views.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

std::string Events(uint64_t first, uint64_t n, int64_t base_ms) {
  std::string text;
  for (uint64_t i = first; i < first + n; ++i) {
    text += EventLine()
                .Seq(i)
                .Ts(base_ms + static_cast<int64_t>(i % 2) * 60000)
                .Key("k" + std::to_string(i % 5))
                .Value(int64_t{1})
                .Line();
  }
  return text;
}


// The commands a reader runs, each of which must work read-only. Broke
// (status, metrics): they opened LMDB for writing and failed with
// "lmdb open ROOT/state: permission denied" for a user who may not write
// the root; every read-side command now opens it through
// api::Sink::OpenReadOnly.
const std::vector<std::vector<std::string>> kReads = {
    {"verify"}, {"inspect", "generations"}, {"inspect", "snapshots"}, {"inspect", "windows"},
    {"inspect", "sources"}, {"inspect", "producers"}, {"inspect", "gaps"}, {"inspect", "ids"},
    {"query"}, {"status"}, {"metrics"}};

void MakeRoot(const std::string& root, const std::string& dir) {
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  WriteFile(dir + "/in", Events(0, 40, kBase) + Events(40, 40, kBase + kHour));
  RunResult r = Snapsink({"run", root, dir + "/in", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// MakeRoot, then a second run that publishes generation 2.
void MakeRootOfTwoGenerations(const std::string& root, const std::string& dir) {
  ASSERT_NO_FATAL_FAILURE(MakeRoot(root, dir));
  WriteFile(dir + "/in2", Events(100, 10, kBase + 5 * kHour));
  ASSERT_EQ(Snapsink({"run", root, dir + "/in2", "--final", "--quiet"}).exit_code, 0);
}

// Broke: verify and inspect opened LMDB for writing (lock.mdb, a write
// transaction to open the tables) and failed on a read-only file system.
TEST(ReadOnlyRoot, VerifyInspectAndQueryWorkOnAReadOnlyFileSystem) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs and remount it read-only; skipped";
  TempDir d;
  const std::string mnt = d / "mnt";
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64m") != 0) {
    GTEST_SKIP() << "mount -t tmpfs failed (" << std::strerror(errno) << "); skipped";
  }
  ASSERT_NO_FATAL_FAILURE(MakeRoot(mnt + "/r", d.path()));
  // One root as LMDB leaves it (lock.mdb present), one without lock.mdb.
  ASSERT_NO_FATAL_FAILURE(MakeRoot(mnt + "/nolock", d.path()));
  fs::remove(mnt + "/nolock/state/lock.mdb");
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=64m"), 0) << std::strerror(errno);
  for (const std::string& root : {mnt + "/r", mnt + "/nolock"}) {
    for (std::vector<std::string> args : kReads) {
      args.insert(args.begin() + 1, root);
      RunResult r = Snapsink(args);
      EXPECT_EQ(r.exit_code, 0) << args[0] << " " << (args.size() > 2 ? args[2] : "") << ": " << r.out << r.err;
      EXPECT_FALSE(r.out.empty()) << args[0];
    }
    RunResult w = Snapsink({"ingest", root, d / "in"});
    EXPECT_NE(w.exit_code, 0);  // a writer is refused, plainly
  }
  ::umount2(mnt.c_str(), MNT_DETACH);
}

// Runs the binary as user `nobody` (setpriv), stdout and stderr together.
RunResult RunAsNobody(const std::vector<std::string>& args) {
  std::string cmd = "setpriv --reuid=65534 --regid=65534 --clear-groups " + std::string(SNAPSINK_BINARY);
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Broke: as a user who may not write the root (not even lock.mdb), verify
// and inspect failed with "Permission denied".
TEST(ReadOnlyRoot, VerifyInspectAndQueryWorkForAUserWithoutWritePermission) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a command as another user; skipped";
  if (std::system("command -v setpriv >/dev/null 2>&1") != 0) GTEST_SKIP() << "setpriv not found; skipped";
  TempDir d;
  ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
  const std::string root = d / "r";
  ASSERT_NO_FATAL_FAILURE(MakeRoot(root, d.path()));
  if (RunAsNobody({"--help"}).exit_code != 0) GTEST_SKIP() << "user nobody cannot run " << SNAPSINK_BINARY;
  for (std::vector<std::string> args : kReads) {
    args.insert(args.begin() + 1, root);
    RunResult r = RunAsNobody(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << " " << (args.size() > 2 ? args[2] : "") << ": " << r.out;
    EXPECT_EQ(r.out.find("snapsink:"), std::string::npos) << r.out;
  }
  RunResult w = RunAsNobody({"seal", root, "--all"});
  EXPECT_NE(w.exit_code, 0) << w.out;
}

// Broke: verify reported corruption that was not there while a publish or
// gc ran beside it ("generation 2 not found", "CURRENT names generation 16,
// but state records 17"), and inspect generations|snapshots failed during gc.
TEST(ReadersBesideWriter, VerifyAndInspectDuring50PublishesAndGcNeverFail) {
  TempDir d;
  const std::string root = d / "r";
  ASSERT_EQ(Snapsink({"init", root, "--lateness", "0s"}).exit_code, 0);
  constexpr int kPublishes = 50;
  for (int i = 0; i < kPublishes; ++i) {
    WriteFile(d / ("in" + std::to_string(i)), Events(static_cast<uint64_t>(i) * 4, 4, kBase + i * kHour));
  }
  WriteFile(d / "writer.log", "");
  const pid_t writer = ::fork();
  if (writer == 0) {
    int failures = 0;
    for (int i = 0; i < kPublishes; ++i) {
      RunResult r = Snapsink({"run", root, d / ("in" + std::to_string(i)), "--final", "--quiet"});
      RunResult g = Snapsink({"gc", root, "--keep-generations", "1"});
      if (r.exit_code != 0 || g.exit_code != 0) {
        AppendFile(d / "writer.log", r.err + g.err);
        ++failures;
      }
    }
    ::_exit(failures == 0 ? 0 : 1);
  }
  ASSERT_GT(writer, 0);
  int rounds = 0, status = 0;
  bool writer_done = false;
  std::string failures;
  // Bounded by count: at most 400 rounds, and never past the writer's end
  // by more than one round.
  for (; rounds < 400 && !writer_done; ++rounds) {
    writer_done = ::waitpid(writer, &status, WNOHANG) == writer;
    for (std::vector<std::string> args : kReads) {
      args.insert(args.begin() + 1, root);
      RunResult r = Snapsink(args);
      // Before the first publish query finds nothing (exit 1, "nothing is published").
      if (args[0] == "query" && r.exit_code == 1 && r.err.find("nothing is published") != std::string::npos) continue;
      if (r.exit_code != 0 || r.out.find("CORRUPT") != std::string::npos) {
        failures += args[0] + " " + (args.size() > 2 ? args[2] : "") + " (round " + std::to_string(rounds) +
                    ", exit " + std::to_string(r.exit_code) + "): " + r.out + r.err + "\n";
      }
    }
  }
  if (!writer_done) {
    ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(d / "writer.log");
  EXPECT_EQ(failures, "");
  EXPECT_GT(rounds, 1);
  RunResult gens = Snapsink({"inspect", root, "generations", "--json"});
  EXPECT_NE(gens.out.find("\"generation\":" + std::to_string(kPublishes)), std::string::npos) << gens.out;
}

// Env::Default(), except that listing manifests/ also removes the manifest
// of one generation right after, as a gc running beside the reader would.
class GcAfterListingEnv final : public EnvWrapper {
 public:
  GcAfterListingEnv(std::string manifests, std::string victim)
      : EnvWrapper(Env::Default()), manifests_(std::move(manifests)), victim_(std::move(victim)) {}
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    Status s = target()->GetChildren(dir, names);
    if (dir == manifests_) (void)target()->RemoveFile(victim_);
    return s;
  }

 private:
  const std::string manifests_, victim_;
};

// Broke: verify listed the generations, then read each; one that gc
// removed in between was reported as corruption ("generation 2 not found").
TEST(ReadersBesideWriter, GenerationRemovedByGcWhileVerifyRunsIsSkippedAndSaid) {
  TempDir d;
  const std::string root = d / "r";
  ASSERT_NO_FATAL_FAILURE(MakeRootOfTwoGenerations(root, d.path()));
  GcAfterListingEnv env(filenames::ManifestsDir(root), filenames::GenerationManifest(root, 1));
  std::unique_ptr<Root> r;
  ASSERT_STATUS_OK(Root::Open(&env, root, Root::Access::kReadOnly, &r));
  std::vector<std::string> problems, notes;
  size_t checked = 0;
  Status s = Verify(&env, root, r->store(), &problems, &notes, &checked);
  EXPECT_STATUS_OK(s);
  EXPECT_TRUE(problems.empty()) << problems.front();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "generation 1: removed by gc while verify ran; skipped");
  EXPECT_GT(checked, 0u);
}

// Env::Default(), except that reading generation 1's top manifest also
// removes it and the first part it names, as a gc running beside the
// reader would (gc removes the top before the parts only it names).
class GcAfterTopReadEnv final : public EnvWrapper {
 public:
  explicit GcAfterTopReadEnv(std::string root) : EnvWrapper(Env::Default()), root_(std::move(root)) {}
  Status ReadFileToString(const std::string& p, std::string* o) override {
    Status s = target()->ReadFileToString(p, o);
    const std::string top = filenames::GenerationManifest(root_, 1);
    if (s.ok() && p == top && !removed) {
      GenerationManifest m;
      EXPECT_STATUS_OK(GenerationManifest::Decode(*o, p, &m));
      EXPECT_FALSE(m.parts.empty());
      EXPECT_STATUS_OK(target()->RemoveFile(top));
      if (!m.parts.empty()) {
        EXPECT_STATUS_OK(target()->RemoveFile(filenames::GenerationPart(root_, m.parts[0].xxh64)));
      }
      removed = true;
    }
    return s;
  }
  bool removed = false;

 private:
  const std::string root_;
};

// Broke: inspect snapshots (and generations) read a generation's top
// manifest, then its parts; when gc removed both in between, the part was
// reported as damage ("manifests/parts/...: missing, but generation 3 names
// it", exit 10). The generation is now left out, as one whose top manifest
// is gone by the listing.
TEST(ReadersBesideWriter, GenerationRemovedByGcBetweenItsTopAndItsPartsIsLeftOut) {
  TempDir d;
  const std::string root = d / "r";
  ASSERT_NO_FATAL_FAILURE(MakeRootOfTwoGenerations(root, d.path()));
  GcAfterTopReadEnv env(root);
  std::vector<api::GenerationInfo> generations;
  std::vector<api::SnapshotInfo> snapshots;
  EXPECT_STATUS_OK(ListPublished(&env, root, &generations, &snapshots));
  EXPECT_TRUE(env.removed);
  ASSERT_EQ(generations.size(), 1u);
  EXPECT_EQ(generations[0].generation, 2u);
  EXPECT_FALSE(snapshots.empty());
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// Broke: verify printed its first problem twice (a CORRUPT line, then again
// in the error message).
TEST(VerifyReport, NamesEachProblemOnce) {
  TempDir d;
  const std::string root = d / "r";
  ASSERT_NO_FATAL_FAILURE(MakeRoot(root, d.path()));
  fs::path manifest;
  for (const auto& e : fs::recursive_directory_iterator(root + "/snapshots")) {
    if (e.path().filename() == "manifest.json") manifest = e.path();
  }
  ASSERT_FALSE(manifest.empty());
  std::string text = ReadFile(manifest.string());
  text[text.size() / 2] ^= 0x01;
  WriteFile(manifest.string(), text);
  RunResult r = Snapsink({"verify", root});
  EXPECT_EQ(r.exit_code, 10) << r.out << r.err;
  EXPECT_EQ(Count(r.out + r.err, manifest.string()), 1u) << r.out << r.err;
  EXPECT_EQ(Count(r.out, "CORRUPT "), 1u) << r.out;
  EXPECT_NE(r.err.find("1 problem(s) found"), std::string::npos) << r.err;
}

// Broke: after a crash in a backfill's publish, before its live
// bookkeeping, verify reported "no seal record in state" (exit 10) for a
// state a rerun of the backfill finishes. The live bookkeeping is now in the
// publish's commit, so the state left is a generation manifest written before
// that commit.
TEST(VerifyReport, UnfinishedBackfillPublishIsANoteNotCorruption) {
  TempDir d;
  const std::string root = d / "r";
  ASSERT_NO_FATAL_FAILURE(MakeRoot(root, d.path()));
  WriteFile(d / "archive", Events(0, 40, kBase));
  RunResult crash = Snapsink({"backfill", root, "--version", "4", d / "archive", "--quiet"},
                             {{"SNAPSINK_CRASH_AT", "publish.before_current"}});
  ASSERT_EQ(crash.exit_code, 99) << crash.err;
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("note: unfinished backfill v4 publish; rerun backfill"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("CORRUPT"), std::string::npos) << v.out;
  RunResult again = Snapsink({"backfill", root, "--version", "4", d / "archive", "--quiet"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.out.find("note:"), std::string::npos) << v.out;
}

}  // namespace
}  // namespace snapsink::testing
