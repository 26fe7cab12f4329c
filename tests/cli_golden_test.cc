// Every command's stdout, stderr and exit code, byte for byte: a change to
// any message, table, flag or exit status of the binary shows here first.
//
// tests/cli_golden/commands.txt holds the commands, run in order against
// one scratch directory; tests/cli_golden/transcript.txt what they printed.
// Only what must differ between runs is rewritten before comparing: the
// scratch directory ($DIR), the source tree ($SRC), the binary's path
// (snapsink) and wall-clock times (when a generation was published or a gap
// accepted: an RFC 3339 time within a minute of the test's run, $NOW).
// `--version` is left out: it prints the build type and library versions. When a change to the output is intended, regenerate with
//   SNAPSINK_UPDATE_GOLDEN=1 build/snapsink_tests --gtest_filter='CliGolden.*'
// and review the diff of transcript.txt like any other change.
//
// A line of commands.txt is the arguments after `snapsink`, split at blanks;
// 'single quotes' keep blanks in one argument; a last `< FILE` feeds FILE to
// standard input. $DIR, $SRC and $GOLDEN (tests/cli_golden) are expanded.
// Lines starting with '#' and blank lines are skipped.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

const std::string kSource = SNAPSINK_SOURCE_DIR;
const std::string kGolden = kSource + "/tests/cli_golden";

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) {
    s->replace(at, from.size(), to);
  }
}

struct Command {
  std::string line;  // as written in commands.txt
  std::vector<std::string> args;
  std::string stdin_path;  // "" = none
};

// Splits one script line; single quotes group, nothing else is special.
std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (c == '\'') {
      quoted = !quoted;
      in_word = true;
    } else if (c == ' ' && !quoted) {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

std::vector<Command> ReadCommands(const std::string& dir) {
  std::vector<Command> out;
  std::istringstream in(ReadFile(kGolden + "/commands.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Command c{line, {}, ""};
    std::string expanded = line;
    ReplaceAll(&expanded, "$GOLDEN", kGolden);
    ReplaceAll(&expanded, "$SRC", kSource);
    ReplaceAll(&expanded, "$DIR", dir);
    c.args = Split(expanded);
    if (c.args.size() >= 2 && c.args[c.args.size() - 2] == "<") {
      c.stdin_path = c.args.back();
      c.args.resize(c.args.size() - 2);
    }
    out.push_back(std::move(c));
  }
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What differs from run to run: the paths and the wall-clock times.
struct GoldenRun {
  std::string dir;
  int64_t start_ms = 0;
};

// The output with the run's own paths written as they are in the script and
// the times it read from the wall clock as $NOW (event times stay).
std::string Normalize(std::string s, const GoldenRun& run) {
  ReplaceAll(&s, SNAPSINK_BINARY, "snapsink");
  ReplaceAll(&s, run.dir, "$DIR");
  ReplaceAll(&s, kSource, "$SRC");
  static const std::regex kTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)");
  const int64_t lo = run.start_ms - 60'000, hi = NowMs() + 60'000;
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), kTime);
  size_t copied = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const int64_t ms = Ms(it->str());
    out.append(s, copied, static_cast<size_t>(it->position()) - copied);
    out += (ms >= lo && ms <= hi) ? "$NOW" : it->str();
    copied = static_cast<size_t>(it->position() + it->length());
  }
  out.append(s, copied, std::string::npos);
  return out;
}

std::string Section(const std::string& name, const std::string& text) {
  std::string s = "---- " + name + "\n" + text;
  if (!text.empty() && text.back() != '\n') s += "\n(no newline at end)\n";
  return s;
}

// One command's record in the transcript.
std::string Entry(const Command& c, const RunResult& r, const GoldenRun& run) {
  return "==== " + c.line + "\n---- exit " + std::to_string(r.exit_code) + "\n" +
         Section("stdout", Normalize(r.out, run)) + Section("stderr", Normalize(r.err, run));
}

// The transcript split into entries, each starting at "==== ".
std::vector<std::string> Entries(const std::string& transcript) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < transcript.size()) {
    size_t next = transcript.find("\n==== ", at);
    size_t end = next == std::string::npos ? transcript.size() : next + 1;
    out.push_back(transcript.substr(at, end - at));
    at = end;
  }
  return out;
}

TEST(CliGolden, EveryCommandPrintsWhatItPrintedBefore) {
  TempDir d;
  const GoldenRun run{d.path(), NowMs()};
  const std::vector<Command> commands = ReadCommands(d.path());
  ASSERT_GE(commands.size(), 50u);
  std::string got;
  for (const Command& c : commands) {
    const std::string stdin_data = c.stdin_path.empty() ? "" : ReadFile(c.stdin_path);
    got += Entry(c, Snapsink(c.args, {}, stdin_data), run);
  }
  const std::string path = kGolden + "/transcript.txt";
  const char* update = std::getenv("SNAPSINK_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    WriteFile(path, got);
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string want = ReadFile(path);
  if (got == want) return;
  const std::string actual = d.path().substr(0, d.path().rfind('/')) + "/snapsink-cli-golden.actual";
  WriteFile(actual, got);
  const std::vector<std::string> g = Entries(got), w = Entries(want);
  for (size_t i = 0; i < std::max(g.size(), w.size()); ++i) {
    const std::string gi = i < g.size() ? g[i] : "(nothing)\n", wi = i < w.size() ? w[i] : "(nothing)\n";
    if (gi != wi) {
      ADD_FAILURE() << "command " << i + 1 << " of " << commands.size() << " printed something else.\nwant:\n"
                    << wi << "got:\n"
                    << gi << "(whole transcript: " << actual << "; diff it against " << path << ")";
      return;
    }
  }
}

}  // namespace
}  // namespace snapsink::testing
