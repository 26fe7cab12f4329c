// Readers in other processes during dozens of publishes (docs/CONTRACT.md 4, 5).
//
// The parent appends two events to an input and runs `run ROOT FILE --final`
// forty times: generation G is then the result of the first G iterations,
// which the test computes on its own (Expected). Meanwhile two forked
// children read without pause: one runs `query --format json`, the other
// reads with the Reader library and prints the same lines. Every read must
// succeed and equal Expected(G) for the one generation G it names (so all
// its lines carry the same generation and the totals of that generation),
// and the generations a reader sees never go backwards. Every third
// iteration also runs `gc --keep-generations 1`, which must not pull a
// generation from under a reader that has opened it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "engine/decimal.h"
#include "engine/env.h"
#include "engine/timeutil.h"
#include "publish/generation_reader.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int kIterations = 40;
constexpr int kWindows = 4;

int64_t BaseMs() {
  int64_t ms = 0;
  ParseRfc3339Ms("2026-10-21T10:00:00Z", &ms);
  return ms;
}

// The two events of iteration i: an "orders" event for window i % 4 and key
// k<i % 3> worth i.25, and a "total" event for window 0 worth 1.
std::string IterationEvents(int i) {
  const int64_t base = BaseMs();
  std::string s;
  s += EventLine()
           .Seq(static_cast<uint64_t>(2 * i))
           .Ts(base + (i % kWindows) * kHour + i * 1000)
           .Metric("orders")
           .Key("k" + std::to_string(i % 3))
           .Value(std::to_string(i) + ".25")
           .Line();
  s += EventLine().Seq(static_cast<uint64_t>(2 * i + 1)).Ts(base + i * 1000).Metric("total").Value(int64_t{1}).Line();
  return s;
}

struct Agg {
  int64_t count = 0, sum = 0;
};

std::string Line(int64_t window, const std::string& metric, const std::string& key, const Agg& a, int version,
                 uint64_t generation) {
  return "{\"window\":\"" + FormatIso(window) + "\",\"metric\":\"" + metric + "\",\"key\":\"" + key +
         "\",\"count\":" + std::to_string(a.count) + ",\"sum\":" + FormatMicros(a.sum) +
         ",\"version\":" + std::to_string(version) + ",\"generation\":" + std::to_string(generation) + "}\n";
}

// `query --format json` of generation g, worked out from the inputs.
std::string Expected(uint64_t g) {
  const int64_t base = BaseMs();
  std::map<int, int> versions;                                   // window -> seals with changes
  std::map<int, std::map<std::pair<std::string, std::string>, Agg>> rows;  // window -> (metric, key)
  for (int i = 0; i < static_cast<int>(g); ++i) {
    const int w = i % kWindows;
    Agg& o = rows[w][{"orders", "k" + std::to_string(i % 3)}];
    o.count += 1;
    o.sum += int64_t{i} * 1000000 + 250000;
    Agg& t = rows[0][{"total", ""}];
    t.count += 1;
    t.sum += 1000000;
    versions[0] += 1;
    if (w != 0) versions[w] += 1;
  }
  std::string out;
  for (const auto& [w, by_key] : rows) {
    for (const auto& [mk, a] : by_key) out += Line(base + w * kHour, mk.first, mk.second, a, versions[w], g);
  }
  return out;
}

// The generation the first line names; 0 for no lines.
uint64_t GenerationOf(const std::string& json) {
  const std::string tag = "\"generation\":";
  const size_t at = json.find(tag);
  if (at == std::string::npos) return 0;
  return std::strtoull(json.c_str() + at + tag.size(), nullptr, 10);
}

// What one reader process saw.
struct Tally {
  uint64_t reads = 0, empty = 0, failures = 0;
  std::set<uint64_t> generations;
  uint64_t last = 0;
  std::string first_failure;

  void Check(int exit_code, const std::string& out, const std::string& err) {
    ++reads;
    std::string problem;
    if (exit_code != 0) {
      problem = "exit " + std::to_string(exit_code) + ": " + err;
    } else if (out.empty()) {
      ++empty;
      if (last != 0) problem = "nothing published after generation " + std::to_string(last);
    } else {
      const uint64_t g = GenerationOf(out);
      if (g < last) problem = "went back from generation " + std::to_string(last) + " to " + std::to_string(g);
      if (problem.empty() && out != Expected(g)) problem = "generation " + std::to_string(g) + " read as:\n" + out +
                                                           "expected:\n" + Expected(g);
      generations.insert(g);
      last = std::max(last, g);
    }
    if (!problem.empty() && failures++ == 0) first_failure = problem;
  }

  std::string Encode() const {
    std::string s = std::to_string(reads) + " " + std::to_string(empty) + " " + std::to_string(failures) + " " +
                    std::to_string(generations.size()) + " " + std::to_string(last) + "\n" + first_failure;
    return s;
  }
};

// Reads with the library, printing what query would print.
void LibraryRead(const std::string& root, Tally* t) {
  std::unique_ptr<Reader> reader;
  Status s = Reader::Open(Env::Default(), root, 0, &reader);
  if (s.IsNotFound()) return t->Check(0, "", "");
  if (!s.ok()) return t->Check(1, "", s.ToString());
  std::string out;
  for (const GenerationEntry& e : reader->windows()) {
    s = reader->Scan(e.window_ms, nullptr, [&](const Row& r) {
      out += Line(e.window_ms, r.metric, r.key, Agg{r.count, r.sum_micros}, static_cast<int>(e.version),
                  reader->generation());
    });
    if (!s.ok()) return t->Check(1, "", s.ToString());
  }
  t->Check(0, out, "");
}

// Forks a reader loop that runs until `stop` exists, then writes its Tally
// to `result`.
pid_t StartReader(bool library, const std::string& root, const std::string& stop, const std::string& result) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  Tally t;
  while (!Env::Default()->FileExists(stop)) {
    if (library) {
      LibraryRead(root, &t);
    } else {
      RunResult r = Snapsink({"query", root, "--format", "json"});
      t.Check(r.exit_code, r.out, r.err);
    }
  }
  WriteFile(result, t.Encode());
  ::_exit(0);
}

void Collect(const std::string& result, const char* who, uint64_t final_generation) {
  SCOPED_TRACE(who);
  const std::string text = ReadFile(result);
  ASSERT_FALSE(text.empty()) << "the reader wrote no result";
  unsigned long long reads = 0, empty = 0, failures = 0, distinct = 0, last = 0;
  ASSERT_EQ(std::sscanf(text.c_str(), "%llu %llu %llu %llu %llu", &reads, &empty, &failures, &distinct, &last), 5);
  const std::string first_failure = text.substr(text.find('\n') + 1);
  std::printf("[ reader   ] %s: %llu reads, %llu before the first publish, %llu generations seen\n", who, reads,
              empty, distinct);
  EXPECT_EQ(failures, 0u) << first_failure;
  EXPECT_GE(distinct, 2u) << "the reader did not overlap the publishes";
  EXPECT_LE(last, final_generation);
}

TEST(ReaderConcurrency, ReadersSeeWholeGenerationsDuringPublishes) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson", stop = d / "stop";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  WriteFile(in, "");
  ASSERT_EQ(Expected(1), Line(BaseMs(), "orders", "k0", Agg{1, 250000}, 1, 1) +
                             Line(BaseMs(), "total", "", Agg{1, 1000000}, 1, 1));

  const pid_t query_reader = StartReader(false, root, stop, d / "query.result");
  const pid_t library_reader = StartReader(true, root, stop, d / "library.result");
  ASSERT_GT(query_reader, 0);
  ASSERT_GT(library_reader, 0);

  for (int i = 0; i < kIterations; ++i) {
    AppendFile(in, IterationEvents(i));
    RunResult r = Snapsink({"run", root, in, "--final"});
    if (r.exit_code != 0) {
      ADD_FAILURE() << "run " << i << ": " << r.err;
      break;
    }
    if (i % 3 == 2) {  // collect what readers are not using, under their feet
      RunResult gc = Snapsink({"gc", root, "--keep-generations", "1"});
      ASSERT_EQ(gc.exit_code, 0) << gc.err;
    }
    if (i % 8 == 7) {  // the model agrees with what the writer published
      RunResult q = Snapsink({"query", root, "--format", "json"});
      ASSERT_EQ(q.exit_code, 0) << q.err;
      EXPECT_EQ(q.out, Expected(static_cast<uint64_t>(i + 1)));
    }
  }
  WriteFile(stop, "");
  for (pid_t pid : {query_reader, library_reader}) {
    // Blocks until the reader sees the stop file: no wall-clock limit here (a
    // busy machine may take long); a reader that never stops is ctest's timeout.
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  Collect(d / "query.result", "query --format json", kIterations);
  Collect(d / "library.result", "Reader library", kIterations);
}

}  // namespace
}  // namespace snapsink::testing
