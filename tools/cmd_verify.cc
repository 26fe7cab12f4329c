// verify: re-check every kept generation (api::ReadOnlySink::Verify).
#include <cstdio>

#include "snapsink/sink.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdVerify(const std::string& path) {
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::OpenReadOnly(path));
  api::VerifyReport report;
  Status s = sink->Verify(&report);
  for (const std::string& n : report.notes) std::printf("note: %s\n", n.c_str());
  for (const std::string& p : report.problems) std::printf("CORRUPT %s\n", p.c_str());
  // Files snapsink does not know: not its corruption, but worth a look.
  for (const std::string& w : report.warnings) std::printf("warning: %s\n", w.c_str());
  if (s.ok()) std::printf("ok: %zu snapshot(s) verified\n", report.snapshots_checked);
  return s;
}

}  // namespace snapsink
