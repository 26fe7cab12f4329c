// README's commands run as written (tests/readme_blocks.h says how its
// blocks are kinded): the tour in one shell against the built binary, from a
// directory laid out as a clone is after command 1 (build/snapsink,
// sample/); the two commands checked against what the suite runs. The Kafka
// blocks run in kafka_mock_harness (tests/readme_kafka_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/readme_blocks.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSource = SourceDirPath();

std::vector<CodeBlock> ReadmeBlocks() { return FencedBlocks(ReadFile(kSource + "/README.md")); }

// dir/clone: build/snapsink (the binary under test) and sample/ (the
// source tree's), as a clone is after command 1; dir/tmp for mktemp.
std::string MakeClone(const TempDir& dir) {
  const std::string clone = dir / "clone";
  fs::create_directories(clone + "/build");
  fs::create_directories(dir / "tmp");
  fs::create_directories(dir / "home");
  fs::create_symlink(SnapsinkBinaryPath(), clone + "/build/snapsink");
  fs::create_directory_symlink(kSource + "/sample", clone + "/sample");
  return clone;
}

std::map<std::string, std::string> ScratchEnv(const TempDir& dir) {
  return {{"TMPDIR", dir / "tmp"}, {"HOME", dir / "home"}};
}

TEST(Readme, EveryCodeBlockIsOfAKindATestRuns) {
  const std::vector<CodeBlock> blocks = ReadmeBlocks();
  int tour = 0, ci = 0, kafka = 0;
  for (const CodeBlock& b : blocks) {
    if (b.info == "sh") ++tour;
    else if (b.info == "sh ci") ++ci;
    else if (b.info == "sh kafka") ++kafka;
    else EXPECT_EQ(b.info, "text") << "README.md:" << b.line << ": a block no test runs (sh, sh ci, sh kafka or text)";
  }
  EXPECT_GE(tour, 5);
  EXPECT_EQ(ci, 1);
  EXPECT_GE(kafka, 2);
}

// Every `sh` block, in order, in one bash -e: a command that fails (a
// renamed flag, a changed argument) fails the test, naming its block.
TEST(Readme, TourRunsAsWritten) {
  TempDir dir;
  const std::string clone = MakeClone(dir);
  const ScriptResult r = RunScript(clone, BlocksScript(ReadmeBlocks(), "sh"), ScratchEnv(dir), 300);
  ASSERT_EQ(r.exit_code, 0) << "failed in the block at " << LastBlock(r.err) << "\nstderr:\n" << r.err
                            << "\nstdout:\n" << r.out;
  // What the tour says it shows: the sample's rows, over HTTP too, and the
  // backfilled then rolled-back count of orders in eu at 10:00.
  EXPECT_NE(r.out.find("2026-10-21T10:00:00Z,orders,eu,58,5174.82,1,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("window,metric,key,count,sum,version,generation\n"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("orders +eu +59 +5274.32 +2 "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("orders +eu +58 +5174.82 +1 "))) << r.out;
}

// The check itself: a tour with a command that fails is reported, naming
// the block it is in.
TEST(Readme, ABlockThatFailsIsNamed) {
  TempDir dir;
  const std::string clone = MakeClone(dir);
  const std::string readme = "```sh\ntrue\n```\n\n```text\nfalse\n```\n\n```sh\nsnapsink init demo --no-such-flag\n```\n";
  const ScriptResult r = RunScript(clone, "export PATH=\"$PWD/build:$PATH\"\n" + BlocksScript(FencedBlocks(readme), "sh"),
                                   ScratchEnv(dir), 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(LastBlock(r.err), "README.md:9");
}

// Command 2 is what .ci/run runs; command 1 builds as tests/run.sh does (so
// the suite reuses its build) and its part after the build, run here with
// its root in a scratch directory, prints the sample's four windows.
TEST(Readme, TwoCommandsAreWhatTheSuiteRuns) {
  std::vector<std::string> commands;
  for (const CodeBlock& b : ReadmeBlocks()) {
    if (b.info != "sh ci") continue;
    std::istringstream lines(b.body);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line[0] != '#') commands.push_back(line);
    }
  }
  ASSERT_EQ(commands.size(), 2u);
  const std::string ci = ReadFile(kSource + "/.ci/run");
  EXPECT_NE(ci.find("\n" + commands[1] + "\n"), std::string::npos) << ".ci/run does not run " << commands[1];

  const std::string build = "./install-deps.sh && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "
                            "-DSNAPSINK_WERROR=ON && cmake --build build -j2 --target snapsink && ";
  ASSERT_EQ(commands[0].rfind(build, 0), 0u) << commands[0];
  EXPECT_NE(ReadFile(kSource + "/tests/run.sh")
                .find("cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAPSINK_WERROR=ON"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(kSource + "/install-deps.sh"));

  TempDir dir;
  const std::string clone = MakeClone(dir);
  const std::string demo = commands[0].substr(build.size());
  const std::string scratch = std::regex_replace(demo, std::regex("/tmp/snapsink-demo"), dir / "snapsink-demo");
  ASSERT_NE(scratch, demo);
  const ScriptResult r = RunScript(clone, "set -e\n" + scratch + "\n", ScratchEnv(dir), 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* w : {"2026-10-21T10:00:00Z", "2026-10-21T11:00:00Z", "2026-10-21T12:00:00Z", "2026-10-21T13:00:00Z"}) {
    EXPECT_NE(r.out.find(std::string(w) + "  orders"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace snapsink::testing
