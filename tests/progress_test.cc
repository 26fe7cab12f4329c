// Progress on stderr: shown on a terminal, never otherwise, never with --quiet.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

std::string Lines(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += "{\"producer\":\"p\",\"seq\":" + std::to_string(i) + ",\"ts\":" + std::to_string(1792576800000 + i) +
         ",\"metric\":\"m\"}\n";
  }
  return s;
}

// Runs cmd under script(1), which gives it a pseudo-terminal; returns what it printed.
std::string OnATerminal(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(("script -qec '" + cmd + "' /dev/null 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(Progress, OnlyOnATerminalAndNotWithQuiet) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  TempDir d;
  const std::string in = d / "in.ndjson";
  WriteFile(in, Lines(50));
  ASSERT_EQ(Snapsink({"init", d / "a"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"init", d / "b"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"init", d / "c"}).exit_code, 0);
  const std::string bin = SNAPSINK_BINARY;
  // Not a terminal: no progress.
  RunResult piped = Snapsink({"ingest", d / "a", in, "--commit-every", "10"});
  ASSERT_EQ(piped.exit_code, 0);
  EXPECT_EQ(piped.err.find("events/s"), std::string::npos) << piped.err;
  // A terminal: progress with bytes, events, rate and time left.
  const std::string tty = OnATerminal(bin + " ingest " + (d / "b") + " " + in + " --commit-every 10");
  EXPECT_NE(tty.find("events/s"), std::string::npos) << tty;
  EXPECT_NE(tty.find("left"), std::string::npos) << tty;
  // A terminal with --quiet: none.
  const std::string quiet = OnATerminal(bin + " ingest " + (d / "c") + " " + in + " --commit-every 10 --quiet");
  EXPECT_EQ(quiet.find("events/s"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("lines 50"), std::string::npos) << quiet;
}

}  // namespace
}  // namespace snapsink::testing
