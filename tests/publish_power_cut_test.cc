// Publishing under a power cut (STYLE: fault_injection_test).
//
// A root is prepared with the library (init, ingest, seal); then, for every
// k = 1, 2, ... until a publish completes, a copy of it is published through
// a FaultInjectionEnv whose k-th file operation fails (the process "dies"
// there), optionally followed by a power cut that drops whatever was not yet
// durable. A Reader on the copy must then see either the old generation
// (NotFound when there was none) or the whole new one, every row readable;
// a clean rerun of the publish must leave the copy exactly as a clean
// publish of the prepared root does. Once PublishStaged has returned OK, a
// power cut loses nothing of it.
//
// The same sweep is done for sealing (SealWindows): after a failure at any
// step and a power cut, every seal LMDB recorded must have its staged files,
// whole; sealing and publishing again must give the clean result.
//
// LMDB (state/) is outside the Env seam: its commits are durable on their
// own, which is what the model assumes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

#include <boost/filesystem.hpp>

#include "engine/decimal.h"
#include "engine/env.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/publisher.h"
#include "publish/generation_reader.h"
#include "publish/seal.h"
#include "tests/fault_env.h"
#include "tests/generation_view.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


int64_t BaseMs() {
  int64_t ms = 0;
  EXPECT_TRUE(ParseRfc3339Ms("2026-10-21T10:00:00Z", &ms));
  return ms;
}

std::string Event(const std::string& producer, uint64_t seq, int64_t ts_ms, const std::string& metric,
                  const std::string& key, const std::string& value) {
  return EventLine().Producer(producer).Seq(seq).Ts(ts_ms).Metric(metric).Key(key).Value(value).Line();
}

void CopyTree(const std::string& from, const std::string& to) {
  const std::string cmd = "cp -a '" + from + "' '" + to + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

void Ingest(Root* root, const std::string& file) {
  Ingester ingester(root->env(), root->store(), root->config());
  IngestOptions opt;
  opt.path = file;
  opt.source = file;
  opt.rejects_file = filenames::RejectsFile(root->path(), file);
  SourceState st;
  ASSERT_STATUS_OK(ingester.Run(opt, &st));
  ASSERT_GT(st.applied, 0u);
}

void SealAll(Root* root, bool expect_windows = true) {
  std::vector<int64_t> windows;
  ASSERT_STATUS_OK(DirtyWindows(root->store(), root->config(), /*all=*/true, &windows));
  if (expect_windows) {
    ASSERT_FALSE(windows.empty());
  }
  SealTarget t{root->env(), root->path(), root->store(), root->config().window_ms};
  std::vector<SealedWindow> sealed;
  ASSERT_STATUS_OK(SealWindows(t, windows, &sealed));
  ASSERT_EQ(sealed.size(), windows.size());
}

void PublishClean(const std::string& path, uint64_t* generation, bool seal_first = false) {
  std::unique_ptr<Root> root;
  ASSERT_STATUS_OK(Root::Open(Env::Default(), path, Root::Access::kWriter, &root));
  if (seal_first) {
    ASSERT_NO_FATAL_FAILURE(SealAll(root.get(), /*expect_windows=*/false));
  }
  PublishResult r;
  ASSERT_STATUS_OK(PublishStaged(Env::Default(), path, root->store(), root->config(), &r));
  *generation = r.generation;
}

bool StagingEmpty(const std::string& root) {
  std::vector<std::string> names;
  Status s = Env::Default()->GetChildren(filenames::StagingDir(root), &names);
  return s.IsNotFound() || (s.ok() && names.empty());
}

// A prepared root with staged snapshots, and what publishing it gives.
struct Scenario {
  std::string name;
  std::string prepared;  // sealed, not published
  GenerationView before;  // what readers see in `prepared`
  GenerationView after;   // ... after a clean publish
  std::map<std::string, std::string> clean_tree;
};

class PowerCutTest : public ::testing::Test {
 protected:
  // Runs the interrupted work again without faults: the root must end as a
  // clean run leaves it, readers and bytes alike. Removes it if all held.
  static void FinishCleanly(const std::string& root, const Scenario& sc, bool seal_first) {
    uint64_t g = 0;
    ASSERT_NO_FATAL_FAILURE(PublishClean(root, &g, seal_first));
    GenerationView rerun;
    ASSERT_NO_FATAL_FAILURE(ReadGenerationView(root, 0, &rerun));
    EXPECT_EQ(rerun, sc.after);
    EXPECT_EQ(TreeDiff(TreeContents(root), sc.clean_tree), "");
    EXPECT_TRUE(StagingEmpty(root));
    if (!::testing::Test::HasFailure()) {
      boost::system::error_code ec;
      boost::filesystem::remove_all(root, ec);
    }
  }

  // first: nothing published yet, three windows staged.
  // second: generation 1 published, then a late event for a published
  // window and two new windows staged (so the publish has a parent).
  // With sealed = false the last input is ingested but not sealed (for the
  // seal sweep); the clean reference then seals and publishes.
  void Prepare(bool second, Scenario* sc, bool sealed = true) {
    const int64_t base = BaseMs();
    const std::string in1 = dir_ / "in1.ndjson", in2 = dir_ / "in2.ndjson";
    std::string text;
    uint64_t seq = 0;
    for (int w = 0; w < 3; ++w) {
      for (int i = 0; i < 12; ++i) {
        text += Event("p", seq++, base + w * kHour + i * 60000, i % 2 ? "orders" : "clicks",
                      "k" + std::to_string(i % 5), std::to_string(i) + ".25");
      }
    }
    WriteFile(in1, text);
    text.clear();
    text += Event("p", seq++, base + kHour + 5, "orders", "late", "7.5");
    for (int w = 3; w < 5; ++w) {
      for (int i = 0; i < 6; ++i) {
        text += Event("p", seq++, base + w * kHour + i * 1000, "orders", "k" + std::to_string(i % 3), "1");
      }
    }
    WriteFile(in2, text);

    sc->name = std::string(second ? "second" : "first") + (sealed ? "" : "-unsealed");
    sc->prepared = dir_ / (sc->name + "-prepared");
    ASSERT_STATUS_OK(Root::Init(Env::Default(), sc->prepared, RootConfig()));
    {
      std::unique_ptr<Root> root;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), sc->prepared, Root::Access::kWriter, &root));
      ASSERT_NO_FATAL_FAILURE(Ingest(root.get(), in1));
      if (second || sealed) {
        ASSERT_NO_FATAL_FAILURE(SealAll(root.get()));
      }
      if (second) {
        PublishResult r;
        ASSERT_STATUS_OK(PublishStaged(Env::Default(), sc->prepared, root->store(), root->config(), &r));
        ASSERT_EQ(r.generation, 1u);
        ASSERT_NO_FATAL_FAILURE(Ingest(root.get(), in2));
        if (sealed) {
          ASSERT_NO_FATAL_FAILURE(SealAll(root.get()));
        }
      }
    }
    ASSERT_NO_FATAL_FAILURE(ReadGenerationView(sc->prepared, 0, &sc->before));
    EXPECT_EQ(sc->before.none, !second);

    const std::string clean = dir_ / (sc->name + "-clean");
    ASSERT_NO_FATAL_FAILURE(CopyTree(sc->prepared, clean));
    uint64_t g = 0;
    ASSERT_NO_FATAL_FAILURE(PublishClean(clean, &g, /*seal_first=*/!sealed));
    ASSERT_EQ(g, second ? 2u : 1u);
    ASSERT_NO_FATAL_FAILURE(ReadGenerationView(clean, 0, &sc->after));
    ASSERT_EQ(sc->after.generation, g);
    sc->clean_tree = TreeContents(clean);
    ASSERT_TRUE(StagingEmpty(clean));
  }

  // Publishes a copy of sc.prepared with operation k failing; returns
  // whether PublishStaged completed (k was past its last operation).
  void RunCase(const Scenario& sc, uint64_t k, bool power_cut, bool* completed) {
    const std::string trace = sc.name + " scenario, fail at op " + std::to_string(k) +
                              (power_cut ? ", then power cut" : ", process crash only");
    SCOPED_TRACE(trace);
    const std::string root = dir_ / ("case-" + sc.name + "-" + std::to_string(k) + (power_cut ? "-pc" : "-crash"));
    ASSERT_NO_FATAL_FAILURE(CopyTree(sc.prepared, root));
    FaultInjectionEnv env;
    Status s;
    {
      std::unique_ptr<Root> r;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kWriter, &r));
      env.FailAtOp(k);
      PublishResult result;
      s = PublishStaged(&env, root, r->store(), r->config(), &result);
      if (s.ok()) {
        EXPECT_EQ(result.generation, sc.after.generation);
      }
    }
    *completed = s.ok();
    if (!s.ok()) {
      // The only failure must be ours, and it must stop the publish cold.
      EXPECT_TRUE(env.failed()) << s.ToString();
      EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
    } else {
      EXPECT_FALSE(env.failed());
    }
    if (power_cut) {
      ASSERT_STATUS_OK(env.PowerCut());
    }

    GenerationView seen;
    ASSERT_NO_FATAL_FAILURE(ReadGenerationView(root, 0, &seen));
    if (*completed) {
      // Acknowledged: nothing of it may be lost.
      EXPECT_EQ(seen, sc.after);
      EXPECT_EQ(TreeDiff(TreeContents(root), sc.clean_tree), "");
    } else if (seen != sc.before) {
      EXPECT_EQ(seen, sc.after) << "neither the old generation nor the whole new one";
    }

    // The same publish again, cleanly, finishes the work.
    ASSERT_NO_FATAL_FAILURE(FinishCleanly(root, sc, /*seal_first=*/false));
  }

  void Sweep(bool second) {
    Scenario sc;
    ASSERT_NO_FATAL_FAILURE(Prepare(second, &sc));
    uint64_t last = 0;
    for (uint64_t k = 1; k < 10000; ++k) {
      bool done_pc = false, done_crash = false;
      ASSERT_NO_FATAL_FAILURE(RunCase(sc, k, /*power_cut=*/true, &done_pc));
      ASSERT_NO_FATAL_FAILURE(RunCase(sc, k, /*power_cut=*/false, &done_crash));
      ASSERT_EQ(done_pc, done_crash);
      if (done_pc) {
        last = k;
        break;
      }
    }
    // Sanity: a publish of several windows takes dozens of file operations.
    EXPECT_GT(last, 20u);
  }

  // Seals a copy of sc.prepared (ingested, not sealed) with operation k
  // failing. Every seal LMDB recorded must still reconcile after the power
  // cut; sealing and publishing again must give the clean result.
  void RunSealCase(const Scenario& sc, uint64_t k, bool power_cut, bool* completed) {
    SCOPED_TRACE(sc.name + " scenario, seal fails at op " + std::to_string(k) +
                 (power_cut ? ", then power cut" : ", process crash only"));
    const std::string root = dir_ / ("seal-" + sc.name + "-" + std::to_string(k) + (power_cut ? "-pc" : "-crash"));
    ASSERT_NO_FATAL_FAILURE(CopyTree(sc.prepared, root));
    FaultInjectionEnv env;
    Status s;
    {
      std::unique_ptr<Root> r;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kWriter, &r));
      std::vector<int64_t> windows;
      ASSERT_STATUS_OK(DirtyWindows(r->store(), r->config(), /*all=*/true, &windows));
      SealTarget t{&env, root, r->store(), r->config().window_ms};
      std::vector<SealedWindow> sealed;
      env.FailAtOp(k);
      s = SealWindows(t, windows, &sealed);
    }
    *completed = s.ok();
    if (!s.ok()) {
      EXPECT_TRUE(env.failed()) << s.ToString();
    }
    if (power_cut) {
      ASSERT_STATUS_OK(env.PowerCut());
    }
    {
      // What LMDB says is sealed is on disk, whole.
      std::unique_ptr<Root> r;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kWriter, &r));
      std::vector<PendingSnapshot> staged;
      ASSERT_STATUS_OK(StagedSeals(r->store(), &staged));
      if (*completed) {
        EXPECT_FALSE(staged.empty());
      }
      for (const PendingSnapshot& p : staged) {
        uint64_t hash = 0;
        ASSERT_STATUS_OK(ReconcileSnapshot(Env::Default(), filenames::StagingSnapshotDir(root, p.window_ms, p.version), p, &hash));
      }
    }
    ASSERT_NO_FATAL_FAILURE(FinishCleanly(root, sc, /*seal_first=*/true));
  }

  void SealSweep(bool second) {
    Scenario sc;
    ASSERT_NO_FATAL_FAILURE(Prepare(second, &sc, /*sealed=*/false));
    uint64_t last = 0;
    for (uint64_t k = 1; k < 10000 && last == 0; ++k) {
      bool done_pc = false, done_crash = false;
      ASSERT_NO_FATAL_FAILURE(RunSealCase(sc, k, /*power_cut=*/true, &done_pc));
      ASSERT_NO_FATAL_FAILURE(RunSealCase(sc, k, /*power_cut=*/false, &done_crash));
      ASSERT_EQ(done_pc, done_crash);
      if (done_pc) last = k;
    }
    EXPECT_GT(last, 20u);
  }

  TempDir dir_;
};

TEST_F(PowerCutTest, FirstSealAtEveryOperation) { SealSweep(/*second=*/false); }

TEST_F(PowerCutTest, SecondSealAtEveryOperation) { SealSweep(/*second=*/true); }

TEST_F(PowerCutTest, FirstPublishAtEveryOperation) { Sweep(/*second=*/false); }

TEST_F(PowerCutTest, SecondPublishAtEveryOperation) { Sweep(/*second=*/true); }

// Forwards to another Env but skips (and reports OK for) the SyncDir of
// every directory whose path contains `skip`: a publisher that forgot one.
class SkipSyncDirEnv final : public EnvWrapper {
 public:
  SkipSyncDirEnv(Env* base, std::string skip) : EnvWrapper(base), skip_(std::move(skip)) {}
  Status SyncDir(const std::string& d) override {
    if (d.find(skip_) != std::string::npos) {
      ++skipped;
      return Status::OK();
    }
    return target()->SyncDir(d);
  }
  int skipped = 0;

 private:
  std::string skip_;
};

// The sweep has teeth: a publisher that does not sync the directory it
// renamed a snapshot into loses the snapshot at a power cut, although the
// published generation names it.
TEST_F(PowerCutTest, DetectsAMissingDirectorySync) {
  Scenario sc;
  ASSERT_NO_FATAL_FAILURE(Prepare(/*second=*/false, &sc));
  const std::string root = dir_ / "forgetful";
  ASSERT_NO_FATAL_FAILURE(CopyTree(sc.prepared, root));
  FaultInjectionEnv fault;
  SkipSyncDirEnv forgetful(&fault, "/snapshots/2026");
  {
    std::unique_ptr<Root> r;
    ASSERT_STATUS_OK(Root::Open(Env::Default(), root, Root::Access::kWriter, &r));
    PublishResult result;
    ASSERT_STATUS_OK(PublishStaged(&forgetful, root, r->store(), r->config(), &result));
  }
  ASSERT_GT(forgetful.skipped, 0);
  ASSERT_STATUS_OK(fault.PowerCut());
  std::unique_ptr<Reader> reader;
  ASSERT_STATUS_OK(Reader::Open(Env::Default(), root, 0, &reader));  // CURRENT and the manifest survived
  const int64_t w = reader->windows().front().window_ms;
  Status s = reader->Scan(w, nullptr, [](const Row&) {});
  EXPECT_FALSE(s.ok()) << "the snapshot should be back in staging/, out of the generation's reach";
}

// The fault model itself.

TEST(PowerCutEnv, DropsUnsyncedDataAndUnsyncedNames) {
  TempDir d;
  FaultInjectionEnv env;
  const std::string dir = d / "dir";
  ASSERT_STATUS_OK(env.CreateDir(dir));
  ASSERT_STATUS_OK(env.SyncDir(d.path()));  // dir is durable
  std::unique_ptr<WritableFile> f;
  ASSERT_STATUS_OK(env.NewWritableFile(dir + "/a", &f));
  ASSERT_STATUS_OK(f->Append("synced"));
  ASSERT_STATUS_OK(f->Sync());
  ASSERT_STATUS_OK(f->Append("-not"));
  ASSERT_STATUS_OK(f->Close());
  f.reset();
  ASSERT_STATUS_OK(env.SyncDir(dir));  // a's name is durable
  ASSERT_STATUS_OK(env.NewWritableFile(dir + "/b", &f));
  ASSERT_STATUS_OK(f->Append("b"));
  ASSERT_STATUS_OK(f->Sync());
  ASSERT_STATUS_OK(f->Close());
  f.reset();  // b's name is not durable
  ASSERT_STATUS_OK(env.CreateDir(dir + "/sub"));
  EXPECT_EQ(env.pending_names(), 2u);
  EXPECT_EQ(env.files_with_unsynced_data(), 1u);

  ASSERT_STATUS_OK(env.PowerCut());
  EXPECT_EQ(ReadFile(dir + "/a"), "synced");
  EXPECT_FALSE(Env::Default()->FileExists(dir + "/b"));
  EXPECT_FALSE(Env::Default()->FileExists(dir + "/sub"));
  EXPECT_EQ(env.pending_names(), 0u);
}

TEST(PowerCutEnv, UndoesRenameIntoUnsyncedDirectory) {
  TempDir d;
  FaultInjectionEnv env;
  WriteFile(d / "CURRENT", "1\n");
  // WriteFileAtomic, but the directory sync fails: the rename is undone.
  env.FailAtOp(6);  // create, append, sync, close, rename, *fsync dir*
  Status s = WriteFileAtomic(&env, d / "CURRENT", "2\n");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(ReadFile(d / "CURRENT"), "2\n");  // the process saw the rename
  ASSERT_STATUS_OK(env.PowerCut());
  EXPECT_EQ(ReadFile(d / "CURRENT"), "1\n");
  EXPECT_FALSE(Env::Default()->FileExists(d / "CURRENT.tmp"));

  // Completed, it survives.
  ASSERT_STATUS_OK(WriteFileAtomic(&env, d / "CURRENT", "3\n"));
  ASSERT_STATUS_OK(env.PowerCut());
  EXPECT_EQ(ReadFile(d / "CURRENT"), "3\n");

  // A directory renamed into a directory that is then synced stays moved.
  ASSERT_STATUS_OK(Env::Default()->CreateDirs(d / "staging/v1"));
  WriteFile(d / "staging/v1/data", "x");
  ASSERT_STATUS_OK(env.CreateDir(d / "snap"));
  ASSERT_STATUS_OK(env.SyncDir(d.path()));
  ASSERT_STATUS_OK(env.RenameFile(d / "staging/v1", d / "snap/v1"));
  ASSERT_STATUS_OK(env.RenameFile(d / "CURRENT", d / "CURRENT.old"));  // not synced
  ASSERT_STATUS_OK(env.SyncDir(d / "snap"));
  ASSERT_STATUS_OK(env.PowerCut());
  EXPECT_EQ(ReadFile(d / "snap/v1/data"), "x");
  EXPECT_FALSE(Env::Default()->FileExists(d / "staging/v1"));
  EXPECT_EQ(ReadFile(d / "CURRENT"), "3\n");
  EXPECT_FALSE(Env::Default()->FileExists(d / "CURRENT.old"));
}

TEST(PowerCutEnv, FailedOperationSticks) {
  TempDir d;
  FaultInjectionEnv env;
  env.FailAtOp(2);
  ASSERT_STATUS_OK(env.CreateDir(d / "a"));
  EXPECT_FALSE(env.CreateDir(d / "b").ok());
  EXPECT_FALSE(env.CreateDir(d / "c").ok());  // the process is dead
  EXPECT_TRUE(env.failed());
  EXPECT_FALSE(Env::Default()->FileExists(d / "b"));
  EXPECT_FALSE(Env::Default()->FileExists(d / "c"));
  ASSERT_STATUS_OK(env.PowerCut());  // a was never made durable
  EXPECT_FALSE(Env::Default()->FileExists(d / "a"));
  ASSERT_STATUS_OK(env.CreateDir(d / "d"));  // disarmed
}

}  // namespace
}  // namespace snapsink::testing
