// README.md's fenced code blocks, and a shell to run them in: what the tests
// that run README's commands as written share (tests/readme_test.cc for the
// tour and the two commands, tests/readme_kafka_test.cc for the Kafka ones).
//
// A block's kind is its info string: `sh` is the tour (run by
// Readme.TourRunsAsWritten), `sh ci` the two commands (Readme.TwoCommands...),
// `sh kafka` needs a broker (ReadmeKafka.*, against librdkafka's mock
// cluster); `text` is output or input, never run. No other kind may appear,
// so no command in README escapes a test.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace snapsink::testing {

struct CodeBlock {
  std::string info;  // the fence's info string: "sh", "sh kafka", "text", ...
  std::string body;  // the lines between the fences, each ending in '\n'
  int line = 0;      // README's line of the opening fence
};

// Every fenced (```) block of a Markdown text, in order.
std::vector<CodeBlock> FencedBlocks(const std::string& markdown);

// The blocks of one kind joined into one bash script under `set -e`, each
// preceded by a line that names it on stderr (">>> README.md:LINE"), so a
// failure shows which block failed.
std::string BlocksScript(const std::vector<CodeBlock>& blocks, const std::string& info);

struct ScriptResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out, err;
};

// Runs `bash script` in dir with env on top of the inherited environment, in
// a process group of its own that is killed once the script ends (so a
// background process it left does not outlive it), or after timeout_s.
ScriptResult RunScript(const std::string& dir, const std::string& script,
                       const std::map<std::string, std::string>& env, int timeout_s);

// The name of the last block the script started (its ">>> README.md:LINE").
std::string LastBlock(const std::string& err);

}  // namespace snapsink::testing
