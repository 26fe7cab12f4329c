// The write path at its crash points (docs/CONTRACT.md 8): a writer that feeds a root
// from memory and keeps its input position there (Sink::Position) is killed
// at ingest.before_commit / ingest.after_commit, restarted from the position
// it finds, and must end with the same published rows, source counters and
// rejects file as a run without the crash.
//
// The writer runs in a child process: this test binary itself, started with
// a filter for WriteBatchCrashChild.Writer and the root in the environment
// (a forked child could not be given SNAPSINK_CRASH_AT: the crash point
// reads it once per process).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

constexpr char kRootEnv[] = "SNAPSINK_TEST_WRITER_ROOT";
constexpr size_t kPerBatch = 7;

// 3 producers over 3 hours, with replays (duplicates) and bad lines.
std::vector<std::string> Events() {
  std::vector<std::string> out;
  uint64_t seq[3] = {0, 0, 0};
  for (int i = 0; i < 60; ++i) {
    if (i % 13 == 12) {
      out.emplace_back(R"({"producer":"p0","seq":"bad"})");
      continue;
    }
    const int p = i % 3;
    const uint64_t s = i % 11 == 10 && seq[p] > 0 ? seq[p] - 1 : seq[p]++;  // a replay now and then
    std::string line = EventLine()
                           .Producer("p" + std::to_string(p))
                           .Seq(s)
                           .Ts(Ms("2026-10-21T10:00:00Z") + int64_t{i} * 3 * 60 * 1000)
                           .Metric(i % 2 ? "orders" : "refunds")
                           .Key(i % 4 ? "eu" : "us")
                           .Value(std::to_string(i) + ".25")
                           .Line();
    line.pop_back();
    out.push_back(line);
  }
  return out;
}

// The writer: resumes from the committed position, writes the rest in
// batches of kPerBatch records, then seals and publishes everything.
TEST(WriteBatchCrashChild, Writer) {
  const char* root = std::getenv(kRootEnv);
  if (root == nullptr) GTEST_SKIP() << "run by WriteBatchCrashTest in a child process";
  auto sink = api::Sink::Open(root);
  ASSERT_STATUS_OK(sink);
  auto pos = (*sink)->Position("feed");
  ASSERT_STATUS_OK(pos);
  const std::vector<std::string> events = Events();
  for (size_t i = *pos ? std::stoul(**pos) : 0; i < events.size(); i += kPerBatch) {
    api::WriteBatch b("feed");
    const size_t end = std::min(events.size(), i + kPerBatch);
    for (size_t j = i; j < end; ++j) b.Add(events[j], "feed@" + std::to_string(j));
    b.SetPosition(std::to_string(end));
    ASSERT_STATUS_OK((*sink)->Write(b));
  }
  api::SealOptions all;
  all.all = true;
  ASSERT_STATUS_OK((*sink)->Seal(all));
  ASSERT_STATUS_OK((*sink)->Publish());
}

int RunWriter(const std::string& root, const std::string& crash_at, int hit) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv(kRootEnv, root.c_str(), 1);
    if (!crash_at.empty()) {
      setenv("SNAPSINK_CRASH_AT", crash_at.c_str(), 1);
      setenv("SNAPSINK_CRASH_HIT", std::to_string(hit).c_str(), 1);
    } else {
      unsetenv("SNAPSINK_CRASH_AT");
    }
    const char* argv[] = {"snapsink_tests", "--gtest_filter=WriteBatchCrashChild.Writer", nullptr};
    execv("/proc/self/exe", const_cast<char* const*>(argv));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Outcome {
  std::string query, sources, rejects;
};

Outcome Read(const std::string& root) {
  Outcome o;
  RunResult q = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  o.query = q.out;
  RunResult s = Snapsink({"inspect", root, "sources", "--json"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  o.sources = s.out;
  o.rejects = ReadFile(root + "/rejects/feed.ndjson");
  return o;
}

TEST(WriteBatchCrashTest, CrashAtEachCommitPointThenResumeFromPositionEqualsACleanRun) {
  TempDir dir;
  const std::string clean = dir / "clean";
  ASSERT_STATUS_OK(api::Sink::Create(clean, {}));
  ASSERT_EQ(RunWriter(clean, "", 0), 0);
  const Outcome want = Read(clean);
  ASSERT_NE(want.query.find("\"orders\""), std::string::npos) << want.query;
  ASSERT_NE(want.rejects.find("\"at\":\"feed@12\""), std::string::npos) << want.rejects;

  for (const char* point : {"ingest.before_commit", "ingest.after_commit"}) {
    for (int hit : {1, 2, 9}) {  // the first batch, the one with the first reject, the last
      SCOPED_TRACE(std::string(point) + " hit " + std::to_string(hit));
      const std::string root = dir / (std::string(point) + "-" + std::to_string(hit));
      ASSERT_STATUS_OK(api::Sink::Create(root, {}));
      ASSERT_EQ(RunWriter(root, point, hit), 99);
      ASSERT_EQ(RunWriter(root, "", 0), 0);
      const Outcome got = Read(root);
      EXPECT_EQ(got.query, want.query);
      EXPECT_EQ(got.sources, want.sources);
      EXPECT_EQ(got.rejects, want.rejects);
    }
  }
}

}  // namespace
}  // namespace snapsink::testing
