// run --follow through the binary: a file appended in bursts (half lines, a
// rotation), a spool directory, and kill -9 at random moments, each compared
// with a one-shot `run --final` of the same data in a fresh root.
//
// How "the watermark passes" is handled: after the writer stops and the
// follower got SIGTERM (which commits, seals closed windows and publishes),
// the test runs `run ROOT FILES --final` on the same root, which seals the
// windows still open. Its rows (window, metric, key, count, sum) must equal
// those of a clean root given the same files with `run --final`. Generation
// and version numbers are left out of the comparison: a follower publishes
// more generations than one run. Before that final run the windows the
// follower published must already hold their final rows.
#include <signal.h>
#include <unistd.h>


#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "tests/serve_util.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


std::string Event(const std::string& producer, int seq, int minute) {
  return EventLine()
      .Producer(producer)
      .Seq(static_cast<uint64_t>(seq))
      .Ts(kBase + minute * 60000LL)
      .Key("k" + std::to_string(seq % 3))
      .Value(std::to_string(seq % 7) + ".5")
      .Line();
}

// query --format json without generation and version: one line per row.
std::set<std::string> Rows(const std::string& root) {
  RunResult q = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  std::set<std::string> rows;
  size_t pos = 0;
  while (pos < q.out.size()) {
    size_t nl = q.out.find('\n', pos);
    std::string line = q.out.substr(pos, nl - pos);
    line = line.substr(0, line.find(",\"version\""));
    rows.insert(line);
    pos = nl + 1;
  }
  return rows;
}

// Waits (bounded by count, ~60 s) until source's committed offset is size.
void WaitCaughtUp(const std::string& root, const std::string& source, int64_t size) {
  for (int i = 0; i < 600; ++i) {
    if (SourceOffset(root, source) == size) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << source << " never reached offset " << size;
}

int64_t FileSize(const std::string& path) { return static_cast<int64_t>(ReadFile(path).size()); }

class FollowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    clean_ = dir_ / "clean";
    ASSERT_EQ(Snapsink({"init", root_, "--window", "15m", "--lateness", "0s"}).exit_code, 0);
    ASSERT_EQ(Snapsink({"init", clean_, "--window", "15m", "--lateness", "0s"}).exit_code, 0);
  }
  Spawned Follow(const std::vector<std::string>& inputs, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", root_};
    args.insert(args.end(), inputs.begin(), inputs.end());
    args.insert(args.end(), {"--follow", "--publish-every", "0s", "--poll", "200ms"});
    args.insert(args.end(), extra.begin(), extra.end());
    return SpawnSnapsink(args);
  }
  void Term(Spawned& p) {
    ::kill(p.pid, SIGTERM);
    EXPECT_EQ(p.Wait(), 0);
  }
  // The followed root, finished with run --final, equals the clean root.
  void ExpectEqualsOneShot(const std::vector<std::string>& followed_files, const std::vector<std::string>& clean_files) {
    const std::set<std::string> published = Rows(root_);
    std::vector<std::string> args = {"run", root_};
    args.insert(args.end(), followed_files.begin(), followed_files.end());
    args.push_back("--final");
    ASSERT_EQ(Snapsink(args).exit_code, 0);
    args = {"run", clean_};
    args.insert(args.end(), clean_files.begin(), clean_files.end());
    args.push_back("--final");
    ASSERT_EQ(Snapsink(args).exit_code, 0);
    const std::set<std::string> want = Rows(clean_);
    EXPECT_EQ(Rows(root_), want);
    ASSERT_FALSE(published.empty()) << "the follower published nothing";
    for (const std::string& row : published) EXPECT_TRUE(want.count(row)) << "published while following: " << row;
  }

  TempDir dir_;
  std::string root_, clean_;
};

TEST_F(FollowTest, FileInBurstsWithHalfLinesAndRotationEqualsOneShotRun) {
  const std::string file = dir_ / "events.ndjson";
  const std::string rotated = dir_ / "events.ndjson.1";
  WriteFile(file, "");
  Spawned follower = Follow({file});
  int seq = 0;
  for (int burst = 0; burst < 12; ++burst) {
    std::string data;
    for (int i = 0; i < 15; ++i, ++seq) data += Event("p", seq, seq / 4);
    if (burst % 3 == 1) {
      // A half line: its rest comes with the next burst.
      const std::string e = Event("p", seq, seq / 4);
      ++seq;
      AppendFile(file, data + e.substr(0, e.size() / 2));
      WaitCaughtUp(root_, file, FileSize(file) - static_cast<int64_t>(e.size() / 2));
      data = e.substr(e.size() / 2);
    }
    AppendFile(file, data);
    if (burst == 6) {
      // Rotation by name: caught up first (what a follower has not read of
      // a file renamed away is not read, as with tail -F by name).
      WaitCaughtUp(root_, file, FileSize(file));
      ASSERT_EQ(::rename(file.c_str(), rotated.c_str()), 0);
      WriteFile(file, "");
    }
  }
  WaitCaughtUp(root_, file, FileSize(file));
  Term(follower);
  RunResult sources = Snapsink({"inspect", root_, "sources", "--json"});
  EXPECT_NE(sources.out.find("\"rejected\":0"), std::string::npos) << sources.out;
  EXPECT_EQ(sources.out.find("\"rejected\":1"), std::string::npos) << "a half line was rejected: " << sources.out;
  ExpectEqualsOneShot({file}, {rotated, file});
}

TEST_F(FollowTest, SpoolDirectoryEachFileItsOwnSource) {
  const std::string spool = dir_ / "spool";
  ASSERT_EQ(::mkdir(spool.c_str(), 0755), 0);
  Spawned follower = Follow({spool});
  std::vector<std::string> files;
  for (int f = 0; f < 4; ++f) {
    const std::string path = spool + "/part-" + std::to_string(f) + ".ndjson";
    files.push_back(path);
    std::string data;
    for (int i = 0; i < 40; ++i) data += Event("p" + std::to_string(f), i, f * 10 + i / 2);
    AppendFile(path, data.substr(0, data.size() / 2));
    AppendFile(path, data.substr(data.size() / 2));
    WriteFile(spool + "/ignored.txt", Event("x", 0, 0));
  }
  for (const std::string& f : files) WaitCaughtUp(root_, f, FileSize(f));
  Term(follower);
  EXPECT_EQ(SourceOffset(root_, spool + "/ignored.txt"), -1);
  ExpectEqualsOneShot(files, files);
}

TEST_F(FollowTest, KillNineLoopThenRestartEqualsCleanRun) {
  const std::string file = dir_ / "events.ndjson";
  WriteFile(file, "");
  std::mt19937 rng(12345);
  int seq = 0;
  for (int round = 0; round < 8; ++round) {
    std::string data;
    for (int i = 0; i < 300; ++i, ++seq) data += Event("p", seq, seq / 40);
    AppendFile(file, data);
    Spawned follower = Follow({file}, {"--commit-every", "7"});
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 300));
    ::kill(follower.pid, SIGKILL);
    follower.Wait();
  }
  Spawned follower = Follow({file}, {"--commit-every", "7"});
  // Lines appended after the start: the offset reaches the end only by this
  // follower's commit, so it has its SIGTERM handling by then. Broke: the
  // killed followers had often committed everything, the wait returned at
  // once, and the SIGTERM came before the new process had blocked it (143).
  std::string tail;
  for (int i = 0; i < 40; ++i, ++seq) tail += Event("p", seq, seq / 40);
  AppendFile(file, tail);
  WaitCaughtUp(root_, file, FileSize(file));
  Term(follower);
  RunResult sources = Snapsink({"inspect", root_, "sources", "--json"});
  EXPECT_NE(sources.out.find("\"applied\":" + std::to_string(seq) + ","), std::string::npos) << sources.out;
  ExpectEqualsOneShot({file}, {file});
}

// One process follows and serves: what it publishes is answered over HTTP.
TEST_F(FollowTest, FollowAndServeInOneProcess) {
  const std::string file = dir_ / "events.ndjson";
  std::string data;
  for (int seq = 0; seq < 100; ++seq) data += Event("p", seq, seq);
  WriteFile(file, data);
  const int port = FreePort();
  Spawned follower = Follow({file}, {"--serve", "127.0.0.1:" + std::to_string(port)});
  httplib::Client c("127.0.0.1", port);
  std::string generation, body;
  for (int i = 0; i < 600 && follower.Running(); ++i) {
    auto q = c.Get("/v1/query?format=json");
    if (q && q->status == 200) {
      generation = q->get_header_value("Snapsink-Generation");
      body = q->body;
      if (!generation.empty() && generation != "0") break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(generation.empty());
  ASSERT_NE(generation, "0");
  EXPECT_EQ(body, Snapsink({"query", root_, "--generation", generation, "--format", "json"}).out);
  auto r = c.Get("/v1/windows");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"window\":"), std::string::npos);
  Term(follower);
}

}  // namespace
}  // namespace snapsink::testing
