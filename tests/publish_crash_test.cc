// Crash points of seal and publish (docs/CONTRACT.md 8), through the binary.
//
// For every seal/publish crash point, at hits 1..3 for the points reached once
// per window and hit 1 for the points reached once per publish, the command
// is run with the crash armed (it must end with status 99: a case whose
// crash point is never reached fails rather than passing having tested
// nothing), then run again without it; the root must then hold
// exactly what a run without the crash leaves: the same `query --format
// json` output, the same engine state (StateDump), the same files byte for
// byte (every snapshot file, manifests/, CURRENT) and an empty staging/.
//
// Each case is done for `run --final` and for `seal --all` + `publish`, in
// round 1 (nothing published yet) and round 2 (a published generation, late
// events for three published windows and a new window: new versions and a
// parent generation). Every round stages four windows whose data files are
// two blocks or more, so the per-window points are hit three times.
//
// QuantilesPublishCrashTest does every case again on a root whose metric is
// quantiles (init --metric orders:quantiles), over inputs with negative
// values, retracts, redeliveries and events held back from round 1 to
// round 2 (gaps filled late): the sketches come out byte for byte.
// DistinctPublishCrashTest does them again on a root whose metric is
// distinct (init --metric orders:distinct), over the sum inputs with an
// item on every event and every 7th line delivered twice.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include <boost/filesystem.hpp>

#include "engine/timeutil.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int kKeysPerWindow = 1200;  // with ~70-byte rows: two blocks of ~64 KiB per data file

enum class Mode { kRun, kSealPublish };
enum class Kind { kSum, kQuantiles, kDistinct };  // of the metric orders
void PrintTo(Mode m, std::ostream* os) { *os << (m == Mode::kRun ? "run" : "seal+publish"); }

std::string Event(uint64_t seq, int64_t ts_ms, const std::string& key, int value, bool retract = false) {
  EventLine e;
  e.Seq(seq).Ts(ts_ms).Metric("orders").Key(key).Value(value);
  if (retract) e.Retract();
  return e.Line();
}

std::vector<std::string> InitArgs(Kind kind, const std::string& root) {
  if (kind == Kind::kSum) return {"init", root};
  if (kind == Kind::kDistinct) return {"init", root, "--metric", "orders:distinct"};
  return {"init", root, "--metric", "orders:quantiles"};
}

std::string Key(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "customer-%06d-%s-0123456789abcdef0123456789abcdef", i,
                i % 3 == 0 ? "eu" : i % 3 == 1 ? "us" : "apac");
  return buf;
}

// The lines that differ between two texts (at most a few), "" when equal.
std::string LineDiff(const std::string& got, const std::string& want) {
  if (got == want) return "";
  auto split = [](const std::string& t) {
    std::vector<std::string> v;
    size_t b = 0;
    for (size_t e; (e = t.find('\n', b)) != std::string::npos; b = e + 1) v.push_back(t.substr(b, e - b));
    if (b < t.size()) v.push_back(t.substr(b));
    return v;
  };
  const std::vector<std::string> g = split(got), w = split(want);
  std::string diff = "lines: " + std::to_string(g.size()) + " vs " + std::to_string(w.size()) + " wanted\n";
  int shown = 0;
  for (size_t i = 0; i < std::max(g.size(), w.size()) && shown < 6; ++i) {
    const std::string a = i < g.size() ? g[i] : "<none>", b = i < w.size() ? w[i] : "<none>";
    if (a == b) continue;
    diff += "  line " + std::to_string(i + 1) + ": got  " + a + "\n           want " + b + "\n";
    ++shown;
  }
  return diff;
}

std::vector<std::string> Children(const std::string& dir) {
  std::vector<std::string> out;
  const std::string cmd = "ls -A '" + dir + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    out.push_back(s);
  }
  ::pclose(p);
  return out;
}

// What a root looks like after a round, to compare against.
struct Outcome {
  std::string query;
  std::string state;
  std::map<std::string, std::string> tree;
};

// Inputs and clean references, made once and shared by every case in every
// process: ctest starts one process a case, and building a case's clean
// references was most of its runs of the binary. They live in one directory
// beside the binary, named by the size and time of the snapsink binary and
// of this test binary (a rebuild gets a new one, and the old ones go). Each
// input is written once (linked into place, never replaced: a source's
// identity is its file), and each reference is built under a name of its
// own and renamed into place (the first rename wins; the others' copies go).
class Fixture {
 public:
  static Fixture& Get() {
    static Fixture f;
    return f;
  }

  const std::string& input(Kind kind, int round) const {
    if (kind == Kind::kQuantiles) return round == 1 ? q1_ : q2_;
    if (kind == Kind::kDistinct) return round == 1 ? d1_ : d2_;
    return round == 1 ? in1_ : in2_;
  }

  // Runs round `round` of mode on root, without crashes.
  static void CleanRound(Mode mode, const std::string& root, const std::string& in) {
    if (mode == Mode::kRun) {
      RunResult r = Snapsink({"run", root, in, "--final"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      return;
    }
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"ingest", root, in}, {"seal", root, "--all"}, {"publish", root}}) {
      RunResult r = Snapsink(args);
      ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    }
  }

  static void Capture(const std::string& root, Outcome* out) {
    out->state = StateDump(root);  // ends with the output of query --format json
    const std::string marker = "## query rc=0\n";
    const size_t at = out->state.find(marker);
    ASSERT_NE(at, std::string::npos) << out->state.substr(0, 2000);
    out->query = out->state.substr(at + marker.size());
    ASSERT_FALSE(out->query.empty());
    out->tree = TreeContents(root);
  }

  // A root after clean rounds 1..round of mode, and what it holds: round
  // r is a copy of round r-1's reference and round r run on it.
  void Reference(Kind kind, Mode mode, int round, std::string* root, const Outcome** outcome) {
    std::lock_guard<std::mutex> l(mu_);
    ReferenceLocked(kind, mode, round, root, outcome);
  }

  const std::string& dir() const { return dir_; }

 private:
  void ReferenceLocked(Kind kind, Mode mode, int round, std::string* root, const Outcome** outcome) {
    const auto key = std::make_tuple(kind, mode, round);
    auto it = refs_.find(key);
    if (it == refs_.end()) {
      const std::string path = dir_ + "/ref-" + std::to_string(static_cast<int>(kind)) + "-" +
                               std::to_string(static_cast<int>(mode)) + "-" + std::to_string(round);
      if (!boost::filesystem::exists(path)) {
        const std::string building = path + ".building-" + std::to_string(::getpid());
        boost::system::error_code ec;
        boost::filesystem::remove_all(building, ec);
        if (round == 1) {
          ASSERT_EQ(Snapsink(InitArgs(kind, building)).exit_code, 0);
        } else {
          std::string prev;
          const Outcome* unused = nullptr;
          ASSERT_NO_FATAL_FAILURE(ReferenceLocked(kind, mode, round - 1, &prev, &unused));
          ASSERT_EQ(std::system(("cp -a '" + prev + "' '" + building + "'").c_str()), 0);
        }
        ASSERT_NO_FATAL_FAILURE(CleanRound(mode, building, input(kind, round)));
        if (::rename(building.c_str(), path.c_str()) != 0) boost::filesystem::remove_all(building, ec);  // another won
      }
      Ref ref;
      ref.root = path;
      ASSERT_NO_FATAL_FAILURE(Capture(path, &ref.outcome));
      it = refs_.emplace(key, std::move(ref)).first;
    }
    *root = it->second.root;
    *outcome = &it->second.outcome;
  }

  Fixture() : dir_(SharedDir()) {
    int64_t base = 0;
    ParseRfc3339Ms("2026-10-21T10:00:00Z", &base);
    uint64_t seq = 0;
    std::string text;
    for (int w = 0; w < 4; ++w) {
      for (int i = 0; i < kKeysPerWindow; ++i) text += Event(seq++, base + w * kHour + i, Key(i), i % 97);
    }
    in1_ = dir_ + "/in1.ndjson";
    WriteOnce(in1_, text);
    text.clear();
    for (int w = 0; w < 3; ++w) text += Event(seq++, base + w * kHour + 7, "late", 5);  // new versions
    for (int i = 0; i < kKeysPerWindow; ++i) text += Event(seq++, base + 4 * kHour + i, Key(i), 3);
    in2_ = dir_ + "/in2.ndjson";
    WriteOnce(in2_, text);
    QuantilesInputs(base);
    d1_ = dir_ + "/d1.ndjson";
    d2_ = dir_ + "/d2.ndjson";
    WriteOnce(d1_, WithItems(ReadFile(in1_)));
    WriteOnce(d2_, WithItems(ReadFile(in2_)));
  }

  // BUILD/test-cache/publish-crash-KEY, made if missing; the other
  // publish-crash-* directories there are removed.
  static std::string SharedDir() {
    auto stamp = [](const std::string& file) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + file);
      return std::to_string(st.st_size) + "-" + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec);
    };
    const std::string binary = SnapsinkBinaryPath();
    const std::string cache = boost::filesystem::path(binary).parent_path().string() + "/test-cache";
    const std::string name = "publish-crash-" + stamp(binary) + "-" + stamp("/proc/self/exe");
    boost::filesystem::create_directories(cache);
    boost::system::error_code ec;
    for (boost::filesystem::directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string other = it->path().filename().string();
      if (other.rfind("publish-crash-", 0) == 0 && other != name) boost::filesystem::remove_all(it->path(), ec);
    }
    boost::filesystem::create_directories(cache + "/" + name);
    return cache + "/" + name;
  }

  // path with text, unless another process wrote it first: the file is
  // never replaced, as the roots' sources name it.
  static void WriteOnce(const std::string& path, const std::string& text) {
    const std::string mine = path + ".writing-" + std::to_string(::getpid());
    WriteFile(mine, text);
    if (::link(mine.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      throw std::runtime_error("cannot link " + mine + " to " + path);
    }
    ::unlink(mine.c_str());
  }

  // Each line of text with an item (one of 5, by its line number) and every
  // 7th line twice.
  static std::string WithItems(const std::string& text) {
    std::string out;
    int n = 0;
    for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1, ++n) {
      std::string line = text.substr(at, end - at);
      line.insert(line.size() - 1, ",\"item\":\"user-" + std::to_string(n % 5) + "\"");
      out += line + "\n";
      if (n % 7 == 0) out += line + "\n";
    }
    return out;
  }

  // The quantiles inputs: as above with values from -20 to 76, a retract
  // after every 23rd event, every 7th line delivered twice, and every 29th
  // event of round 1 held back to the start of round 2.
  void QuantilesInputs(int64_t base) {
    uint64_t seq = 0;
    std::string text, late;
    for (int w = 0; w < 4; ++w) {
      for (int i = 0; i < kKeysPerWindow; ++i) {
        const int64_t ts = base + w * kHour + i;
        std::string lines = Event(seq++, ts, Key(i), i % 97 - 20);
        if (i % 23 == 0) lines += Event(seq++, ts, Key(i), (i + w) % 11, /*retract=*/true);
        if (seq % 29 == 0) {
          late += lines;
          continue;
        }
        text += seq % 7 == 0 ? lines + lines : lines;
      }
    }
    q1_ = dir_ + "/q1.ndjson";
    WriteOnce(q1_, text);
    text = late;
    for (int w = 0; w < 3; ++w) text += Event(seq++, base + w * kHour + 7, "late", -5);
    for (int i = 0; i < kKeysPerWindow; ++i) text += Event(seq++, base + 4 * kHour + i, Key(i), i % 5 - 2);
    text += late.substr(0, late.find('\n') + 1);  // a redelivery of a late one
    q2_ = dir_ + "/q2.ndjson";
    WriteOnce(q2_, text);
  }

  struct Ref {
    std::string root;
    Outcome outcome;
  };
  std::string dir_;
  std::string in1_, in2_, q1_, q2_, d1_, d2_;
  std::mutex mu_;
  std::map<std::tuple<Kind, Mode, int>, Ref> refs_;
};

using Param = std::tuple<Mode, std::string, int, int>;  // mode, point, hit, round

class PublishCrashTest : public ::testing::TestWithParam<Param> {};
class QuantilesPublishCrashTest : public ::testing::TestWithParam<Param> {};
class DistinctPublishCrashTest : public ::testing::TestWithParam<Param> {};

void CheckCase(Kind kind, const Param& param) {
  const auto& [mode, point, hit, round] = param;
  Fixture& fx = Fixture::Get();
  std::string ref_root;
  const Outcome* want = nullptr;
  ASSERT_NO_FATAL_FAILURE(fx.Reference(kind, mode, round, &ref_root, &want));
  if (kind == Kind::kDistinct) {  // rows with sketches to compare
    ASSERT_NE(want->query.find("\"distinct\":"), std::string::npos);
  }

  // Beside the references and the inputs, so that StateDump's $DIR matches.
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) c = c == '/' ? '_' : c;
  const std::string root =
      fx.dir() + "/" + ((kind == Kind::kSum ? "case-" : kind == Kind::kQuantiles ? "qcase-" : "dcase-") + name);
  boost::filesystem::remove_all(root);  // left by a failed attempt of this case
  struct Cleanup {
    std::string path;
    ~Cleanup() {
      boost::system::error_code ec;
      if (!::testing::Test::HasFailure()) boost::filesystem::remove_all(path, ec);
    }
  } cleanup{root};
  if (round == 1) {
    ASSERT_EQ(Snapsink(InitArgs(kind, root)).exit_code, 0);
  } else {
    std::string prev_root;
    const Outcome* prev = nullptr;
    ASSERT_NO_FATAL_FAILURE(fx.Reference(kind, mode, round - 1, &prev_root, &prev));
    const std::string cmd = "cp -a '" + prev_root + "' '" + root + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  const std::string& in = fx.input(kind, round);
  const std::map<std::string, std::string> crash = {{"SNAPSINK_CRASH_AT", point},
                                                    {"SNAPSINK_CRASH_HIT", std::to_string(hit)}};

  // The command that crashes, and the steps before and after it.
  std::vector<std::vector<std::string>> before, after;
  std::vector<std::string> cmd;
  if (mode == Mode::kRun) {
    cmd = {"run", root, in, "--final"};
  } else if (point.rfind("seal.", 0) == 0) {
    before = {{"ingest", root, in}};
    cmd = {"seal", root, "--all"};
    after = {{"publish", root}};
  } else {
    before = {{"ingest", root, in}, {"seal", root, "--all"}};
    cmd = {"publish", root};
  }
  for (const auto& args : before) {
    RunResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  }
  RunResult crashed = Snapsink(cmd, crash);
  ASSERT_EQ(crashed.exit_code, 99) << cmd[0] << " with " << point << " hit " << hit
                                   << (crashed.exit_code == 0 ? ": never reached its crash point" : "") << ": "
                                   << crashed.err;
  RunResult rerun = Snapsink(cmd);
  ASSERT_EQ(rerun.exit_code, 0) << "rerun of " << cmd[0] << ": " << rerun.err;
  for (const auto& args : after) {
    RunResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  }

  Outcome got;
  ASSERT_NO_FATAL_FAILURE(Fixture::Capture(root, &got));
  EXPECT_EQ(LineDiff(got.query, want->query), "");
  EXPECT_EQ(LineDiff(got.state, want->state), "");
  EXPECT_EQ(TreeDiff(got.tree, want->tree), "");
  EXPECT_TRUE(Children(root + "/staging").empty()) << "staging/ holds " << ::testing::PrintToString(Children(root + "/staging"));
}

TEST_P(PublishCrashTest, RerunMatchesCleanRun) { CheckCase(Kind::kSum, GetParam()); }
TEST_P(QuantilesPublishCrashTest, RerunMatchesCleanRun) { CheckCase(Kind::kQuantiles, GetParam()); }
TEST_P(DistinctPublishCrashTest, RerunMatchesCleanRun) { CheckCase(Kind::kDistinct, GetParam()); }

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [mode, point, hit, round] = info.param;
  std::string p = point;
  for (char& c : p) c = c == '.' ? '_' : c;
  return std::string(mode == Mode::kRun ? "run" : "seal_publish") + "_" + p + "_hit" + std::to_string(hit) +
         "_round" + std::to_string(round);
}

// Points reached once per window: hits 1..3 (every round stages four windows).
INSTANTIATE_TEST_SUITE_P(PublishCrash, PublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("seal.mid_data", "seal.before_record",
                                                              "publish.after_rename"),
                                            ::testing::Values(1, 2, 3), ::testing::Values(1, 2)),
                         Name);
// Points reached once per publish: only hit 1 exists.
INSTANTIATE_TEST_SUITE_P(PublishCrashOnce, PublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("publish.part_written", "publish.manifest_written",
                                                              "publish.before_current", "publish.after_commit",
                                                              "publish.after_current"),
                                            ::testing::Values(1), ::testing::Values(1, 2)),
                         Name);

// A publish writes one part per level of the tree (leaf, level 1, level 2:
// docs/FORMAT.md section 4) before the top manifest: a crash after the
// second and third part written.
INSTANTIATE_TEST_SUITE_P(PublishCrashParts, PublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("publish.part_written"), ::testing::Values(2, 3),
                                            ::testing::Values(1, 2)),
                         Name);

// The same cases on the quantiles root and its inputs.
INSTANTIATE_TEST_SUITE_P(PublishCrash, QuantilesPublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("seal.mid_data", "seal.before_record",
                                                              "publish.after_rename"),
                                            ::testing::Values(1, 2, 3), ::testing::Values(1, 2)),
                         Name);
INSTANTIATE_TEST_SUITE_P(PublishCrashOnce, QuantilesPublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("publish.part_written", "publish.manifest_written",
                                                              "publish.before_current", "publish.after_commit",
                                                              "publish.after_current"),
                                            ::testing::Values(1), ::testing::Values(1, 2)),
                         Name);
INSTANTIATE_TEST_SUITE_P(PublishCrashParts, QuantilesPublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("publish.part_written"), ::testing::Values(2, 3),
                                            ::testing::Values(1, 2)),
                         Name);

// And on the distinct root and its inputs.
INSTANTIATE_TEST_SUITE_P(PublishCrash, DistinctPublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("seal.mid_data", "seal.before_record",
                                                              "publish.after_rename"),
                                            ::testing::Values(1, 2, 3), ::testing::Values(1, 2)),
                         Name);
INSTANTIATE_TEST_SUITE_P(PublishCrashOnce, DistinctPublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("publish.part_written", "publish.manifest_written",
                                                              "publish.before_current", "publish.after_commit",
                                                              "publish.after_current"),
                                            ::testing::Values(1), ::testing::Values(1, 2)),
                         Name);
INSTANTIATE_TEST_SUITE_P(PublishCrashParts, DistinctPublishCrashTest,
                         ::testing::Combine(::testing::Values(Mode::kRun, Mode::kSealPublish),
                                            ::testing::Values("publish.part_written"), ::testing::Values(2, 3),
                                            ::testing::Values(1, 2)),
                         Name);

// The per-window points really are reached three times by these inputs
// (otherwise hits 2 and 3 would test nothing): a crash at hit 3 of
// seal.mid_data leaves two windows sealed.
TEST(PublishCrashInputs, ThreeWindowsSealedBeforeThirdMidDataHit) {
  Fixture& fx = Fixture::Get();
  TempDir d;
  const std::string root = d / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  ASSERT_EQ(Snapsink({"ingest", root, fx.input(Kind::kSum, 1)}).exit_code, 0);
  RunResult r = Snapsink({"seal", root, "--all"}, {{"SNAPSINK_CRASH_AT", "seal.mid_data"}, {"SNAPSINK_CRASH_HIT", "3"}});
  ASSERT_EQ(r.exit_code, 99) << r.err;
  RunResult w = Snapsink({"inspect", root, "windows", "--json"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  // Two windows recorded as sealed (v1), the third's data file half written.
  EXPECT_EQ(Children(root + "/staging").size(), 3u) << w.out;
}

}  // namespace
}  // namespace snapsink::testing
