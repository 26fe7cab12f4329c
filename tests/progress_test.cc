// Progress on stderr: shown on a terminal, never otherwise, never with --quiet.
#include <gtest/gtest.h>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

std::string Lines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += EventLine().Seq(static_cast<uint64_t>(i)).Ts(int64_t{1792576800000} + i).Line();
  }
  return s;
}

// Runs the snapsink binary with args on a pseudo-terminal (stdin, stdout and
// stderr all the pty); returns everything it printed.
std::string OnATerminal(const std::vector<std::string>& args) {
  const ExecImage image(args);
  int master = -1;
  pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return "forkpty failed";
  if (pid == 0) image.Exec();
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(master, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));  // EIO once it exits
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST(Progress, OnlyOnATerminalAndNotWithQuiet) {
  TempDir d;
  const std::string in = d / "in.ndjson";
  WriteFile(in, Lines(50));
  ASSERT_EQ(Snapsink({"init", d / "a"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"init", d / "b"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"init", d / "c"}).exit_code, 0);
  // Not a terminal: no progress.
  RunResult piped = Snapsink({"ingest", d / "a", in, "--commit-every", "10"});
  ASSERT_EQ(piped.exit_code, 0);
  EXPECT_EQ(piped.err.find("lines/s"), std::string::npos) << piped.err;
  // A terminal: progress with bytes, lines, rate and time left.
  const std::string tty = OnATerminal({"ingest", d / "b", in, "--commit-every", "10"});
  EXPECT_NE(tty.find("lines/s"), std::string::npos) << tty;
  EXPECT_NE(tty.find("left"), std::string::npos) << tty;
  // Regression: the summary was glued to the last progress line
  // (its newline came after it). It must start a line of its own.
  const size_t summary = tty.find(in + ": this run: lines 50");
  ASSERT_NE(summary, std::string::npos) << tty;
  ASSERT_GT(summary, 0u);
  EXPECT_EQ(tty[summary - 1], '\n') << tty;
  // Sizes in the same unit on both sides of the slash: "0.0/0.0 MiB", never "x.y/z MiB".
  EXPECT_NE(tty.find("/0.0 MiB"), std::string::npos) << tty;
  // A terminal with --quiet: none.
  const std::string quiet = OnATerminal({"ingest", d / "c", in, "--commit-every", "10", "--quiet"});
  EXPECT_EQ(quiet.find("lines/s"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("lines 50"), std::string::npos) << quiet;
}

// The first progress line comes right after the first commit: a rate over
// those microseconds was absurd (52,356,020,942 lines/s). It shows "?" until
// there is time to measure over.
TEST(Progress, TheFirstLineShowsNoRateYet) {
  TempDir d;
  const std::string in = d / "in.ndjson";
  WriteFile(in, Lines(50));
  ASSERT_EQ(Snapsink({"init", d / "a"}).exit_code, 0);
  const std::string tty = OnATerminal({"ingest", d / "a", in, "--commit-every", "10"});
  const size_t first = tty.find(" lines/s");
  ASSERT_NE(first, std::string::npos) << tty;
  EXPECT_EQ(tty.substr(first - 3, 3), ", ?") << tty;
}

}  // namespace
}  // namespace snapsink::testing
