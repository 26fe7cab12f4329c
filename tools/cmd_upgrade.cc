// upgrade ROOT [--dry-run]: converts a root of an earlier format in place
// (api::Sink::Upgrade).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/command.h"
#include "tools/flag_groups.h"

namespace snapsink {

namespace {

Status CmdUpgrade(const std::string& path, bool dry_run) {
  auto r = api::Sink::Upgrade(path, dry_run);
  if (!r.ok()) return r.status();
  if (r->nothing_to_do) {
    std::printf("%s is already of format %llu; nothing to do\n", path.c_str(),
                static_cast<unsigned long long>(r->format_after));
    return Status::OK();
  }
  for (const std::string& line : r->actions) std::printf("%s\n", line.c_str());
  if (dry_run) {
    std::printf("dry run: nothing changed (format %llu -> %llu)\n", static_cast<unsigned long long>(r->format_before),
                static_cast<unsigned long long>(r->format_after));
  } else {
    std::printf("upgraded %s from format %llu to %llu\n", path.c_str(),
                static_cast<unsigned long long>(r->format_before), static_cast<unsigned long long>(r->format_after));
  }
  return Status::OK();
}

struct UpgradeArgs {
  std::string root;
  bool dry_run = false;
};

}  // namespace

Command RegisterUpgrade(CLI::App& app) {
  auto a = std::make_shared<UpgradeArgs>();
  auto* c = app.add_subcommand(
      "upgrade",
      "Convert a root written by an earlier snapsink to this build's format, in place, keeping every published "
      "generation. Crash-safe: run it again after a crash and it finishes.");
  AddRoot(c, &a->root);
  c->add_flag("--dry-run", a->dry_run, "Print what would change; change nothing (takes no lock)");
  c->footer(Footer(CommonExitLine(), "snapsink upgrade /data/orders --dry-run"));
  return {c, [a] { return CmdUpgrade(a->root, a->dry_run); }};
}

}  // namespace snapsink
