// The tool's exit statuses in one table: the number a process exits with,
// the Status::Code that leads to it, and what it means. ExitCodeFor (the
// exit status of a command's Status) and every "Exit status: ..." line of
// --help read this table; no other file in tools/ writes an exit number.
#pragma once

#include <initializer_list>
#include <string>

#include "snapsink/status.h"

namespace snapsink {

enum class Exit { kOk, kFailure, kBadInput, kGap, kReconcile, kLocked, kCorruption };

struct ExitCode {
  Exit exit;
  int status;            // what the process exits with
  Status::Code code;     // the Status::Code that exits so (kFailure: every code not listed)
  const char* name;      // a word for it, as docs/CONTRACT.md's table says it
  const char* meaning;   // the wording of --help: "<status> <meaning>"
};

// Every row, by status.
extern const ExitCode kExitCodes[7];

// The number exit exits with.
int ExitStatus(Exit exit);
// The exit status of a command that returned s.
int ExitCodeFor(const Status& s);

// One code of an "Exit status:" line: the table's meaning, or a command's own
// wording of it (says).
struct ExitNote {
  ExitNote(Exit e) : exit(e) {}  // NOLINT(google-explicit-constructor): a bare Exit reads best
  ExitNote(Exit e, const char* s) : exit(e), says(s) {}
  Exit exit;
  const char* says = nullptr;
};

// "Exit status: 0 ok; 1 usage or failure; 5 root locked." for notes, in order.
std::string ExitStatusLine(std::initializer_list<ExitNote> notes);

// "exit 3" for --help texts that name the status a choice leads to.
std::string ExitText(Exit exit);

}  // namespace snapsink
