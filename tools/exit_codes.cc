#include "tools/exit_codes.h"

namespace snapsink {

const ExitCode kExitCodes[7] = {
    {Exit::kOk, 0, Status::Code::kOk, "ok", "ok"},
    {Exit::kFailure, 1, Status::Code::kInvalidArgument, "failure", "usage or failure"},
    {Exit::kBadInput, 2, Status::Code::kBadInput, "bad-input", "bad input under --on-error stop"},
    {Exit::kGap, 3, Status::Code::kGap, "gap", "gap under --on-gap stop"},
    {Exit::kReconcile, 4, Status::Code::kReconcile, "reconcile", "reconciliation failed"},
    {Exit::kLocked, 5, Status::Code::kLocked, "locked", "root locked"},
    {Exit::kCorruption, 10, Status::Code::kCorruption, "corruption", "corruption found"},
};

namespace {

const ExitCode& Row(Exit exit) {
  for (const ExitCode& row : kExitCodes) {
    if (row.exit == exit) return row;
  }
  return kExitCodes[1];  // unreachable: every Exit has its row
}

}  // namespace

int ExitStatus(Exit exit) { return Row(exit).status; }

int ExitCodeFor(const Status& s) {
  for (const ExitCode& row : kExitCodes) {
    if (row.code == s.code()) return row.status;
  }
  return ExitStatus(Exit::kFailure);  // kNotFound, kIOError, ...
}

std::string ExitStatusLine(std::initializer_list<ExitNote> notes) {
  std::string line = "Exit status:";
  const char* sep = " ";
  for (const ExitNote& n : notes) {
    const ExitCode& row = Row(n.exit);
    line += sep + std::to_string(row.status) + " " + (n.says != nullptr ? n.says : row.meaning);
    sep = "; ";
  }
  return line + ".";
}

std::string ExitText(Exit exit) { return "exit " + std::to_string(ExitStatus(exit)); }

}  // namespace snapsink
