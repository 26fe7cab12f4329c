// Running a program as a child process from a benchmark, timed by the wall
// clock with its CPU time (user + system, from RUSAGE_CHILDREN) beside it:
// the whole-process benchmarks (--bucket, --process) compare what a user of
// the `snapsink` binary sees against other programs run the same way.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace snapsink::bench {

struct Cost {
  double wall = 0;
  double cpu = 0;  // user + system of the children (or of this process)
};

// User + system seconds of every child waited for so far.
double ChildrenCpu();

// Runs argv (stdout to log, stderr to log + ".err"), dies unless it exits 0.
Cost RunChild(const std::vector<std::string>& argv, const std::string& log);

// The directory of this executable ("." if unknown).
std::string SelfDir();

// A child that spins on a CPU until StopSpinner: "one core busy elsewhere".
pid_t StartSpinner();
void StopSpinner(pid_t pid);

}  // namespace snapsink::bench
