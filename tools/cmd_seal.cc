// seal ROOT [--window W]... [--all]: stages closed windows with unpublished
// changes (api::Sink::Seal).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "snapsink/utilities/query_text.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/write_results.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// seal: commit point is each window's LMDB seal record (publish/seal.h).
Status CmdSeal(const SealArgs& a) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.root, a.state));
  auto sink = api::Sink::Open(a.root);
  if (!sink.ok()) return sink.status();
  api::SealOptions o;
  o.all = a.all;
  for (const std::string& n : a.windows) {
    int64_t w;
    SNAPSINK_RETURN_IF_ERROR(api::ParseWindow("--window", n, (*sink)->settings().window_size_ms, &w));
    o.windows.push_back(w);
  }
  auto sealed = (*sink)->Seal(o);
  if (!sealed.ok()) return sealed.status();
  PrintSealed(*sealed);
  if (sealed->empty()) {
    if (!a.windows.empty()) {
      std::printf("nothing to seal: no unsealed changes in the windows asked for\n");
    } else {
      auto why = (*sink)->Unsealed();
      if (!why.ok()) return why.status();
      PrintNothingToSeal(*why, "--all");
    }
  }
  return Status::OK();
}

}  // namespace

Command RegisterSeal(CLI::App& app) {
  auto a = std::make_shared<SealArgs>();
  auto* c = app.add_subcommand("seal", "Stage closed windows with unpublished changes");
  AddRoot(c, &a->root);
  c->add_option("--window", a->windows, WindowHelp("Seal this window (repeatable), closed or not."));
  c->add_flag("--all", a->all, "Seal every window with changes, closed or not");
  AddBucketState(c, &a->state);
  c->footer(Footer(CommonExitLine(), "snapsink seal /data/orders --window 2026-10-21T10:00:00Z"));
  return {c, [a] { return CmdSeal(*a); }};
}

}  // namespace snapsink
