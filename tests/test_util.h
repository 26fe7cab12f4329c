// Helpers for tests that drive the snapsink binary or the library.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace snapsink::testing {

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct RunResult {
  int exit_code = -1;  // the process's exit status; 128+N when killed by signal N
  std::string out, err;
};

// Runs the snapsink binary with args; extra environment variables in env
// (e.g. SNAPSINK_CRASH_AT); stdin_data fed to standard input.
RunResult Snapsink(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                   const std::string& stdin_data = "");

// Starts the snapsink binary without waiting (stdin, stdout and stderr to
// /dev/null); Wait returns its exit status as RunResult::exit_code does.
struct Spawned {
  int pid = -1;
  bool Running();   // false once it has exited (then exit_code is set)
  int Wait();
  int exit_code = -1;
};
Spawned SpawnSnapsink(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& data);
void AppendFile(const std::string& path, const std::string& data);

// Every regular file under dir (relative path -> contents), skipping state/
// (LMDB files) and LOCK. For byte-for-byte comparison of two roots.
std::map<std::string, std::string> TreeContents(const std::string& dir);

// The paths where two TreeContents differ, one line each ("" when equal).
std::string TreeDiff(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& want);

// A comparable dump of a root's engine state: the output of
// `inspect producers|gaps|sources|windows --json` and `query --format json`,
// with the root's parent directory written as $DIR (so that roots in two
// temp dirs with inputs beside them compare equal).
std::string StateDump(const std::string& root);

// `inspect producers|sources --json` output without the fields that id dedup
// and producer retention add (last_seen, retired; duplicates_id,
// rejected_horizon, rejected_retired), for tests about other things.
std::string WithoutIdFields(const std::string& inspect_json);

}  // namespace snapsink::testing
