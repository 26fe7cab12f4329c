// Crashes during ingest (docs/CONTRACT.md 2, 5, 8): after a crash at any point, or a
// kill -9 at any moment, rerunning the same ingest leaves the root exactly as
// a run without the crash would have.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

std::string Line(const std::string& producer, uint64_t seq, const std::string& value, const std::string& extra = "",
                 const std::string& ts = "\"2026-10-21T10:15:03Z\"") {
  return "{\"producer\":\"" + producer + "\",\"seq\":" + std::to_string(seq) + ",\"ts\":" + ts +
         ",\"metric\":\"orders\",\"key\":\"eu\",\"value\":" + value + extra + "}\n";
}

// The kind of the metric orders on a crash case's root.
enum class Kind { kSum = 0, kQuantiles = 1, kDistinct = 2 };

void Init(const std::string& root, Kind kind = Kind::kSum) {
  std::vector<std::string> args = {"init", root};
  if (kind == Kind::kQuantiles) args = {"init", root, "--metric", "orders:quantiles"};
  if (kind == Kind::kDistinct) args = {"init", root, "--metric", "orders:distinct"};
  RunResult r = Snapsink(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void SealAndPublish(const std::string& root) {
  RunResult r = Snapsink({"seal", root, "--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"publish", root});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Without the fields of id dedup and producer retention (tested in
// id_dedup_test.cc and producer_retention_test.cc).
std::string Inspect(const std::string& root, const std::string& what) {
  RunResult r = Snapsink({"inspect", root, what, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return WithoutIdFields(r.out);
}

// A root's state plus its rejects files, byte for byte.
std::string FullDump(const std::string& root) {
  std::string out = StateDump(root);
  for (const auto& [path, data] : TreeContents(root)) {
    if (path.rfind("rejects/", 0) == 0) out += "## " + path + "\n" + data;
  }
  return out;
}

// The "lines" of a source in `inspect sources --json` (-1 if absent).
int64_t SourceLines(const std::string& root, const std::string& source) {
  const std::string out = Inspect(root, "sources");
  const std::string needle = "{\"source\":\"" + source + "\",";
  size_t p = out.find(needle);
  if (p == std::string::npos) return -1;
  p = out.find("\"lines\":", p);
  return std::stoll(out.substr(p + 8));
}

// --- a. The article test --------------------------------------------------

TEST(IngestCrashTest, CrashBetweenApplyAndCommitThenCorrectionThenReplays) {
  TempDir d;
  const std::string in = d / "orders.ndjson";
  const std::string crashed = d / "crashed";
  const std::string clean = d / "clean";
  WriteFile(in, Line("shop", 0, "10") + Line("shop", 1, "20") + Line("shop", 2, "30"));
  Init(crashed);
  Init(clean);

  // Crash after the 2nd event is applied, before its progress is committed.
  RunResult r = Snapsink({"ingest", crashed, in, "--commit-every", "1"},
                         {{"SNAPSINK_CRASH_AT", "ingest.before_commit"}, {"SNAPSINK_CRASH_HIT", "2"}});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  EXPECT_EQ(SourceLines(crashed, in), 1);
  EXPECT_EQ(Inspect(crashed, "producers"), "{\"producer\":\"shop\",\"epoch\":0,\"next_seq\":1,\"open_gaps\":0}\n");

  r = Snapsink({"ingest", crashed, in, "--commit-every", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"ingest", clean, in, "--commit-every", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(StateDump(crashed), StateDump(clean));
  EXPECT_EQ(Inspect(crashed, "windows"),
            "{\"window\":\"2026-10-21T10:00:00Z\",\"version\":0,\"dirty\":true,\"closed\":false,\"events\":3,\"count\":3}\n");

  for (const std::string& root : {crashed, clean}) SealAndPublish(root);
  const std::string v1 =
      "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":3,\"sum\":60,"
      "\"version\":1,\"generation\":1}\n";
  EXPECT_EQ(Snapsink({"query", crashed, "--format", "json"}).out, v1);

  // A correction: 20 was wrong, it is 25.
  AppendFile(in, Line("shop", 3, "20", ",\"op\":\"retract\"") + Line("shop", 4, "25"));
  for (const std::string& root : {crashed, clean}) {
    r = Snapsink({"ingest", root, in, "--commit-every", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    SealAndPublish(root);
  }
  const std::string v2 =
      "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":3,\"sum\":65,"
      "\"version\":2,\"generation\":2}\n";
  EXPECT_EQ(Snapsink({"query", crashed, "--format", "json"}).out, v2);
  EXPECT_EQ(Inspect(crashed, "windows"),
            "{\"window\":\"2026-10-21T10:00:00Z\",\"version\":2,\"dirty\":false,\"closed\":false,\"events\":5,\"count\":3}\n");
  const std::string after_correction = StateDump(crashed);
  EXPECT_EQ(after_correction, StateDump(clean));
  EXPECT_EQ(TreeContents(crashed), TreeContents(clean));

  // Replays: the same file again changes nothing (its offset is committed).
  for (int i = 0; i < 2; ++i) {
    r = Snapsink({"ingest", crashed, in, "--commit-every", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(StateDump(crashed), after_correction);
  }
  // The same content redelivered under another source name: all duplicates.
  for (int i = 0; i < 2; ++i) {
    r = Snapsink({"ingest", crashed, in, "--source", "redelivered", "--commit-every", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const std::string sources = Inspect(crashed, "sources");
  EXPECT_NE(sources.find("{\"source\":\"redelivered\",\"offset\":" + std::to_string(ReadFile(in).size()) +
                         ",\"lines\":5,\"applied\":0,\"duplicates\":5,\"fenced\":0,\"rejected\":0"),
            std::string::npos)
      << sources;
  for (const char* what : {"producers", "gaps", "windows"}) {
    EXPECT_EQ(Inspect(crashed, what), Inspect(clean, what)) << what;
  }
  r = Snapsink({"seal", crashed, "--all"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("nothing to seal"), std::string::npos) << r.out;
  EXPECT_EQ(Snapsink({"query", crashed, "--format", "json"}).out, v2);
}

// --- b. Every crash point, several hits ------------------------------------

// ~20 lines: duplicates, a gap filled late, zombies, an epoch bump, bad lines, retractions.
std::string MixedInput() {
  const std::string late = "\"2026-10-21T11:40:00.5+01:00\"";
  std::string s;
  s += Line("p0", 0, "1.5");                                          // 1
  s += Line("p0", 1, "2", ",\"key\":\"us\"");                          // 2 bad: duplicate field key
  s += "{oops\n";                                                     // 3 bad
  s += Line("p1", 0, "1", ",\"epoch\":1");                            // 4
  s += Line("p0", 0, "1.5");                                          // 5 duplicate
  s += "{\"producer\":\"p0\",\"seq\":\"x\",\"ts\":0,\"metric\":\"m\"}\n";  // 6 bad
  s += Line("p0", 3, "4");                                            // 7 gap 1..2
  s += Line("p1", 1, "1", ",\"epoch\":1,\"op\":\"retract\"");         // 8
  s += Line("p0", 1, "2");                                            // 9 fill
  s += Line("p1", 5, "9", ",\"epoch\":0");                            // 10 zombie
  s += Line("p0", 2, "0.25", "", late);                               // 11 fill, closes the gap
  s += Line("p1", 0, "7", ",\"epoch\":2");                            // 12 new epoch
  s += Line("p1", 2, "1", ",\"epoch\":1");                            // 13 zombie
  s += Line("p0", 3, "4");                                            // 14 duplicate
  s += Line("p2", 3, "-3.125");                                       // 15 new producer, gap 0..2
  s += Line("p0", 4, "1.5", ",\"op\":\"retract\"");                   // 16
  s += Line("p2", 1, "1");                                            // 17 splits p2's gap
  s += Line("p0", 5, "0.000001", "", "1792577703000");                // 18 other window
  s += Line("p0", 6, "1.0000001");                                    // 19 bad: 7 decimals
  s += "\n";                                                          // 20 empty
  s += Line("p2", 4, "2");                                            // 21
  s += Line("p1", 1, "3", ",\"epoch\":2");                            // 22
  return s;
}

// MixedInput with an item on every event, each line's its own ("u" and
// its line number), for a distinct metric: an item lost or kept twice
// changes the small exact counts. Its retracts are bad lines there.
std::string MixedInputWithItems() {
  const std::string in = MixedInput();
  std::string out;
  int n = 0;
  for (size_t at = 0, end; at < in.size(); at = end + 1) {
    end = in.find('\n', at);
    std::string line = in.substr(at, end - at);
    ++n;
    if (line.rfind("{\"producer\"", 0) == 0 && line.back() == '}') {
      line.insert(line.size() - 1, ",\"item\":\"u" + std::to_string(n) + "\"");
    }
    out += line + "\n";
  }
  return out;
}

struct CrashCase {
  std::string point;
  int hit;
  Kind kind = Kind::kSum;  // of the metric orders on the root
};
void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.point << " hit " << c.hit; }

class IngestCrashPointTest : public ::testing::TestWithParam<CrashCase> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    WriteFile(Input(Kind::kSum), MixedInput());
    WriteFile(Input(Kind::kDistinct), MixedInputWithItems());
  }
  // The dump of a clean run on a root of kind, made when a case of that
  // kind first asks (ctest runs each case in a process of its own: making
  // all three kinds' runs for each was most of its runs of the binary).
  static const std::string& CleanDump(Kind kind) {
    std::string*& dump = clean_dump_[static_cast<int>(kind)];
    if (dump == nullptr) {
      const std::string clean = *dir_ / ("clean" + std::to_string(static_cast<int>(kind)));
      Init(clean, kind);
      RunResult r = Snapsink({"ingest", clean, Input(kind), "--commit-every", "2"});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      dump = new std::string(FinalDump(clean, kind));
    }
    return *dump;
  }
  static void TearDownTestSuite() {
    for (std::string*& d : clean_dump_) delete d;
    delete dir_;
  }
  // FullDump; for a quantiles or distinct root also every snapshot file
  // after seal and publish, byte for byte (the sketches).
  static std::string FinalDump(const std::string& root, Kind kind) {
    std::string out = FullDump(root);
    if (kind == Kind::kSum) return out;
    SealAndPublish(root);
    for (const auto& [path, data] : TreeContents(root)) {
      if (path.rfind("snapshots/", 0) == 0) out += "## " + path + "\n" + data;
    }
    return out;
  }
  static std::string Input(Kind kind) { return *dir_ / (kind == Kind::kDistinct ? "items.ndjson" : "mixed.ndjson"); }
  // Next to the input and the clean root, so StateDump's $DIR covers the source name.
  static std::string NewRoot(Kind kind) {
    static int n = 0;
    const std::string root = *dir_ / ("root" + std::to_string(++n));
    Init(root, kind);
    return root;
  }
  static TempDir* dir_;
  static std::string* clean_dump_[3];  // by kind
};
TempDir* IngestCrashPointTest::dir_ = nullptr;
std::string* IngestCrashPointTest::clean_dump_[3] = {nullptr, nullptr, nullptr};

TEST_P(IngestCrashPointTest, RerunMatchesCleanRun) {
  const CrashCase c = GetParam();
  const std::string root = NewRoot(c.kind);
  RunResult r = Snapsink({"ingest", root, Input(c.kind), "--commit-every", "2"},
                         {{"SNAPSINK_CRASH_AT", c.point}, {"SNAPSINK_CRASH_HIT", std::to_string(c.hit)}});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  // The crash happened where the point says: batches of 2 lines.
  const int committed = c.point == "ingest.before_commit" ? 2 * (c.hit - 1) : 2 * c.hit;
  EXPECT_EQ(SourceLines(root, Input(c.kind)), committed == 0 ? -1 : committed);
  r = Snapsink({"ingest", root, Input(c.kind), "--commit-every", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FinalDump(root, c.kind), CleanDump(c.kind));
}

TEST_P(IngestCrashPointTest, CrashAgainDuringRecoveryWithOtherBatchSize) {
  const CrashCase c = GetParam();
  const std::string root = NewRoot(c.kind);
  const std::map<std::string, std::string> env = {{"SNAPSINK_CRASH_AT", c.point},
                                                  {"SNAPSINK_CRASH_HIT", std::to_string(c.hit)}};
  ASSERT_EQ(Snapsink({"ingest", root, Input(c.kind), "--commit-every", "2"}, env).exit_code, 99);
  // Past the last batch for the larger hits: then the second run just finishes.
  const int second = Snapsink({"ingest", root, Input(c.kind), "--commit-every", "3"}, env).exit_code;
  if (c.hit <= 3) {
    ASSERT_EQ(second, 99);
  } else {
    ASSERT_TRUE(second == 99 || second == 0) << second;
  }
  RunResult r = Snapsink({"ingest", root, Input(c.kind), "--commit-every", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(FinalDump(root, c.kind), CleanDump(c.kind));
}

std::string CrashCaseName(const ::testing::TestParamInfo<CrashCase>& info) {
  std::string n = info.param.point.substr(info.param.point.find('.') + 1) + "_hit" + std::to_string(info.param.hit);
  return n;
}

INSTANTIATE_TEST_SUITE_P(IngestPoints, IngestCrashPointTest,
                         ::testing::Values(CrashCase{"ingest.before_commit", 1}, CrashCase{"ingest.before_commit", 2},
                                           CrashCase{"ingest.before_commit", 3}, CrashCase{"ingest.after_commit", 1},
                                           CrashCase{"ingest.after_commit", 2}, CrashCase{"ingest.after_commit", 3},
                                           CrashCase{"ingest.before_commit", 9},
                                           CrashCase{"ingest.before_commit", 11}),
                         CrashCaseName);
// The same on a quantiles root: its sketches (state and snapshots) come out
// byte for byte.
constexpr Kind kQ = Kind::kQuantiles;
INSTANTIATE_TEST_SUITE_P(IngestPointsQuantiles, IngestCrashPointTest,
                         ::testing::Values(CrashCase{"ingest.before_commit", 1, kQ},
                                           CrashCase{"ingest.before_commit", 2, kQ},
                                           CrashCase{"ingest.before_commit", 3, kQ},
                                           CrashCase{"ingest.after_commit", 1, kQ},
                                           CrashCase{"ingest.after_commit", 2, kQ},
                                           CrashCase{"ingest.after_commit", 3, kQ},
                                           CrashCase{"ingest.before_commit", 9, kQ},
                                           CrashCase{"ingest.before_commit", 11, kQ}),
                         CrashCaseName);
// And on a distinct root, each event with its own item.
constexpr Kind kD = Kind::kDistinct;
INSTANTIATE_TEST_SUITE_P(IngestPointsDistinct, IngestCrashPointTest,
                         ::testing::Values(CrashCase{"ingest.before_commit", 1, kD},
                                           CrashCase{"ingest.before_commit", 2, kD},
                                           CrashCase{"ingest.before_commit", 3, kD},
                                           CrashCase{"ingest.after_commit", 1, kD},
                                           CrashCase{"ingest.after_commit", 2, kD},
                                           CrashCase{"ingest.after_commit", 3, kD},
                                           CrashCase{"ingest.before_commit", 9, kD},
                                           CrashCase{"ingest.before_commit", 11, kD}),
                         CrashCaseName);

TEST(IngestCrashTest, CrashInSecondFileOfOneCommand) {
  TempDir d;
  const std::string a = d / "a.ndjson";
  const std::string b = d / "b.ndjson";
  WriteFile(a, MixedInput());
  std::string other;
  for (uint64_t i = 0; i < 9; ++i) other += Line("q", i % 4 == 3 ? i - 2 : i, std::to_string(i) + ".5");
  other += "nope\n";
  WriteFile(b, other);
  const std::string clean = d / "clean";
  Init(clean);
  ASSERT_EQ(Snapsink({"ingest", clean, a, b, "--commit-every", "4"}).exit_code, 0);
  for (const char* point : {"ingest.before_commit", "ingest.after_commit"}) {
    SCOPED_TRACE(point);
    const std::string root = d / (std::string("root-") + point);
    Init(root);
    // a has 22 lines: 6 batches; b's first batch is the 7th hit, its second the 8th.
    RunResult r = Snapsink({"ingest", root, a, b, "--commit-every", "4"},
                           {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", "8"}});
    ASSERT_EQ(r.exit_code, 99) << r.err;
    EXPECT_EQ(SourceLines(root, a), 22);
    EXPECT_EQ(SourceLines(root, b), std::string(point) == "ingest.before_commit" ? 4 : 8);
    r = Snapsink({"ingest", root, a, b, "--commit-every", "4"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(FullDump(root), FullDump(clean));
  }
}

// --- c. kill -9 at random moments ------------------------------------------

// ~200k lines from 12 producers: redeliveries, gaps filled later, an epoch
// bump with zombies, retractions and a bad line now and then.
std::string BigInput() {
  std::mt19937_64 rng(424242);
  std::string s;
  s.reserve(24 << 20);
  struct Prod {
    uint32_t epoch = 0;
    uint64_t next = 0;
    std::vector<uint64_t> held;  // skipped seqs, sent later
  };
  std::vector<Prod> prods(12);
  const int64_t t0 = 1792576800000;  // 2026-10-21T10:00:00Z
  auto event = [&](size_t p, uint32_t epoch, uint64_t seq) {
    // The payload is a function of (producer, epoch, seq): redeliveries are identical.
    const uint64_t h = (p * 1000003 + epoch * 7919 + seq * 2654435761u) % 1000000007;
    std::string v = std::to_string(h % 5000) + "." + std::to_string(h % 100);
    EventLine e;
    e.Producer("prod" + std::to_string(p)).Epoch(epoch).Seq(seq).Ts(t0 + static_cast<int64_t>(h % 36) * 600000);
    e.Metric("m" + std::to_string(h % 3)).Key("k" + std::to_string(h % 17)).Value(v);
    if (h % 11 == 0) e.Retract();
    std::string line = e.Line();
    s += line;
  };
  for (int i = 0; i < 200000; ++i) {
    const size_t p = rng() % prods.size();
    Prod& pr = prods[p];
    const uint64_t r = rng() % 1000;
    if (r < 30 && pr.next > 0) {
      event(p, pr.epoch, rng() % pr.next);  // redelivery (or a late fill)
    } else if (r < 40) {
      pr.held.push_back(pr.next++);  // a gap, filled later
      event(p, pr.epoch, pr.next++);
    } else if (r < 60 && !pr.held.empty()) {
      event(p, pr.epoch, pr.held.back());
      pr.held.pop_back();
    } else if (r < 62 && pr.epoch > 0) {
      event(p, pr.epoch - 1, rng() % 50);  // zombie
    } else if (r == 62 && i > 1000) {
      pr.epoch++;
      pr.next = 0;
      pr.held.clear();
      event(p, pr.epoch, pr.next++);
    } else if (r == 63) {
      s += "{\"producer\":\"bad\",\"seq\":" + std::to_string(i) + "\n";
    } else {
      event(p, pr.epoch, pr.next++);
    }
  }
  return s;
}

TEST(IngestCrashTest, KillNineLoopMatchesCleanRun) {
  TempDir d;
  const std::string in = d / "big.ndjson";
  WriteFile(in, BigInput());
  const std::string clean = d / "clean";
  Init(clean);
  RunResult r = Snapsink({"ingest", clean, in, "--commit-every", "1000", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string expected = FullDump(clean);
  ASSERT_NE(expected.find("\"rejected\":"), std::string::npos);

  const std::string root = d / "killed";
  Init(root);
  std::mt19937 rng(20261021);
  // Bounded by count, not by time: kKillAttempts runs are each killed after a
  // random, growing delay (or finish first); then one run goes to the end
  // unkilled. On a slow or busy machine the kills land earlier in the input,
  // which changes what is tested, never whether the test passes.
  constexpr int kKillAttempts = 30;
  int kills = 0, attempts = 0;
  int64_t last_lines = -1;
  bool finished = false;
  for (; attempts < kKillAttempts && !finished; ++attempts) {
    const pid_t pid = SpawnSnapsink({"ingest", root, in, "--commit-every", "1000", "--quiet"}).pid;
    ASSERT_GT(pid, 0);
    const int max_ms = 20 + 4 * attempts;
    std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % (max_ms * 1000)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status)) {
      ASSERT_EQ(WEXITSTATUS(status), 0);
      finished = true;
      break;
    }
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    ++kills;
    // Progress never goes backwards, and what is committed adds up.
    const int64_t lines = SourceLines(root, in);
    EXPECT_GE(lines, last_lines);
    last_lines = lines;
  }
  if (!finished) {
    RunResult last = Snapsink({"ingest", root, in, "--commit-every", "1000", "--quiet"});
    ASSERT_EQ(last.exit_code, 0) << last.err;
  }
  std::printf("kill -9 loop: %d attempts, %d killed mid-run\n", attempts, kills);
  EXPECT_GE(kills, 3) << "the loop did not kill mid-run often enough to test anything";
  EXPECT_EQ(FullDump(root), expected) << "after " << kills << " kills";
}

}  // namespace
}  // namespace snapsink::testing
