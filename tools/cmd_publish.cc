// publish ROOT: reconciles everything staged and switches CURRENT once
// (api::Sink::Publish).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/command.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"
#include "tools/write_results.h"

namespace snapsink {

namespace {

Status CmdPublish(const std::string& path, const std::string& state) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(path, state));
  auto sink = api::Sink::Open(path);
  if (!sink.ok()) return sink.status();
  auto r = (*sink)->Publish();
  if (!r.ok()) return r.status();
  PrintPublishResult(*r);
  return Status::OK();
}

}  // namespace

Command RegisterPublish(CLI::App& app) {
  auto root = std::make_shared<std::string>();
  auto state = std::make_shared<std::string>();
  auto* c = app.add_subcommand("publish", "Reconcile everything staged and switch CURRENT once");
  AddRoot(c, root.get());
  AddBucketState(c, state.get());
  c->footer(Footer(ExitStatusLine({Exit::kOk, Exit::kFailure, Exit::kReconcile, Exit::kLocked, Exit::kCorruption}),
                   "snapsink publish /data/orders"));
  return {c, [root, state] { return CmdPublish(*root, *state); }};
}

}  // namespace snapsink
