#include "tests/readme_blocks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "tests/file_util.h"

extern char** environ;

namespace snapsink::testing {

std::vector<CodeBlock> FencedBlocks(const std::string& markdown) {
  std::vector<CodeBlock> out;
  std::istringstream lines(markdown);
  std::string line;
  int number = 0;
  bool inside = false;
  CodeBlock block;
  while (std::getline(lines, line)) {
    ++number;
    if (line.rfind("```", 0) != 0) {
      if (inside) block.body += line + "\n";
      continue;
    }
    if (inside) {
      out.push_back(block);
      inside = false;
    } else {
      block = CodeBlock{line.substr(3), "", number};
      inside = true;
    }
  }
  return out;
}

std::string BlocksScript(const std::vector<CodeBlock>& blocks, const std::string& info) {
  std::string script = "set -e\n";
  for (const CodeBlock& b : blocks) {
    if (b.info != info) continue;
    script += "echo '>>> README.md:" + std::to_string(b.line) + "' >&2\n" + b.body;
  }
  return script;
}

ScriptResult RunScript(const std::string& dir, const std::string& script,
                       const std::map<std::string, std::string>& env, int timeout_s) {
  const std::string path = dir + "/.readme-script.sh", out = dir + "/.readme-out", err = dir + "/.readme-err";
  WriteFile(path, script);
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) env_text.push_back(kv);
  }
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& kv : env_text) envp.push_back(kv.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/bash", path.c_str(), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    // Only async-signal-safe calls between fork and exec.
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int i = ::open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || i < 0 || ::chdir(dir.c_str()) != 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 ||
        ::dup2(i, 0) < 0) {
      ::_exit(127);
    }
    ::execve(argv[0], const_cast<char**>(argv), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ScriptResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);  // whatever it left running in the background
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

std::string LastBlock(const std::string& err) {
  const size_t at = err.rfind(">>> README.md:");
  if (at == std::string::npos) return "before the first block";
  return err.substr(at + 4, err.find('\n', at) - at - 4);
}

}  // namespace snapsink::testing
