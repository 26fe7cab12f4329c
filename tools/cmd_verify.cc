// verify: re-check every kept generation (api::ReadOnlySink::Verify).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

Status CmdVerify(const std::string& path, const std::string& state) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(path, state));
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

}  // namespace

Command RegisterVerify(CLI::App& app) {
  auto root = std::make_shared<std::string>();
  auto state = std::make_shared<std::string>();
  auto* c = app.add_subcommand("verify", "Re-check every published snapshot; " + ExitText(Exit::kCorruption) +
                                             " on corruption");
  AddRoot(c, root.get());
  AddBucketState(c, state.get());
  c->footer(Footer(ExitStatusLine({Exit::kOk, Exit::kFailure, Exit::kCorruption}), "snapsink verify /data/orders"));
  return {c, [root, state] { return CmdVerify(*root, *state); }};
}

}  // namespace snapsink
