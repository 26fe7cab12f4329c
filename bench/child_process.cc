#include "bench/child_process.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "bench/bench_util.h"

namespace snapsink::bench {

double ChildrenCpu() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

Cost RunChild(const std::vector<std::string>& argv, const std::string& log) {
  const double cpu0 = ChildrenCpu();
  std::fflush(stdout);  // else the child's freopen writes this process's buffered lines again
  std::fflush(stderr);
  Stopwatch sw;
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    FILE* err = std::freopen((log + ".err").c_str(), "w", stderr);
    (void)out;
    (void)err;
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Cost c{sw.Seconds(), ChildrenCpu() - cpu0};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(log + ".err");
    std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Die(argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " failed: " + err);
  }
  return c;
}

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

pid_t StartSpinner() {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    volatile uint64_t n = 0;
    for (;;) n = n + 1;
  }
  if (pid < 0) Die("fork for the busy core failed");
  return pid;
}

void StopSpinner(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace snapsink::bench
