// Ctrl-C (SIGINT) during `run`, `ingest` and `backfill`, sent to the binary:
// the batch in progress commits, the command says where it stopped and that
// the same command goes on, and exits 130; the rerun ends where a run
// without the interruption ends (tools/batch_interrupt.h).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// n lines over a few hourly windows of 2026-10-21.
std::string Lines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += EventLine()
             .Seq(static_cast<uint64_t>(i))
             .Ts(int64_t{1792576800000} + int64_t{i} * 20)
             .Metric("m")
             .Key("k" + std::to_string(i % 13))
             .Value(i % 100)
             .Line();
  }
  return s;
}

// Waits (at most ~60 s) until ready() holds, then sends SIGINT; returns the
// exit status and what it printed on stderr.
RunResult InterruptWhen(const std::vector<std::string>& args, const std::string& err_path,
                        const std::function<bool()>& ready) {
  Spawned p = SpawnSnapsink(args, {}, err_path + ".out", err_path);
  for (int i = 0; i < 6000 && p.Running() && !ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(p.Running()) << "it finished before the signal: make the input longer";
  ::kill(p.pid, SIGINT);
  RunResult r;
  r.exit_code = p.Wait();
  r.out = ReadFile(err_path + ".out");
  r.err = ReadFile(err_path);
  return r;
}

class Interrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = d_ / "in.ndjson";
    WriteFile(in_, Lines(200000));
    ASSERT_EQ(Snapsink({"init", d_ / "clean"}).exit_code, 0);
    ASSERT_EQ(Snapsink({"init", d_ / "root"}).exit_code, 0);
  }
  TempDir d_;
  std::string in_;
};

TEST_F(Interrupt, RunCommitsSaysWhereAndTheRerunGoesOn) {
  ASSERT_EQ(Snapsink({"run", d_ / "clean", in_, "--final"}).exit_code, 0);
  const std::string root = d_ / "root";
  const std::vector<std::string> cmd = {"run", root, in_, "--final", "--commit-every", "100"};
  RunResult r = InterruptWhen(cmd, d_ / "err", [&] { return SourceOffset(root, in_) > 0; });
  EXPECT_EQ(r.exit_code, 130) << r.err;
  const int64_t offset = SourceOffset(root, in_);
  EXPECT_GT(offset, 0);
  EXPECT_LT(offset, static_cast<int64_t>(std::filesystem::file_size(in_)));
  EXPECT_NE(r.err.find("interrupted: committed up to " + in_ + " offset " + std::to_string(offset) +
                       "; run the same command to go on\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.rfind("interrupting: the batch in progress commits first (Ctrl-C again stops at once)\n", 0), 0u)
      << r.err;  // no empty line first: stderr is not a terminal
  EXPECT_EQ(r.out.find("published generation"), std::string::npos) << r.out;  // stopped before its publish

  RunResult again = Snapsink(cmd);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Snapsink({"query", root, "--format", "json"}).out,
            Snapsink({"query", d_ / "clean", "--format", "json"}).out);
}

TEST_F(Interrupt, IngestSaysWhere) {
  const std::string root = d_ / "root";
  const std::vector<std::string> cmd = {"ingest", root, in_, "--commit-every", "100"};
  RunResult r = InterruptWhen(cmd, d_ / "err", [&] { return SourceOffset(root, in_) > 0; });
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted: committed up to " + in_ + " offset " + std::to_string(SourceOffset(root, in_))),
            std::string::npos)
      << r.err;
}

TEST_F(Interrupt, BackfillSaysWhereAndTheRerunGoesOn) {
  ASSERT_EQ(Snapsink({"backfill", d_ / "clean", "--version", "1", in_}).exit_code, 0);
  const std::string root = d_ / "root";
  const std::vector<std::string> cmd = {"backfill", root, "--version", "1", in_, "--commit-every", "100"};
  // Its own state appears once it has begun to ingest.
  RunResult r = InterruptWhen(cmd, d_ / "err", [&] {
    return std::filesystem::exists(root + "/state/backfill-v1/data.mdb") &&
           std::filesystem::file_size(root + "/state/backfill-v1/data.mdb") > 0;
  });
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted: committed up to backfill v1 " + in_ + " offset "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; run the same command to go on\n"), std::string::npos) << r.err;
  RunResult again = Snapsink(cmd);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Snapsink({"query", root, "--format", "json"}).out,
            Snapsink({"query", d_ / "clean", "--format", "json"}).out);
}

}  // namespace
}  // namespace snapsink::testing
