// rollback ROOT --generation G [--dry-run]: publishes a copy of generation
// G and rewinds the window state to match (api::Sink::Rollback).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// A dry run reads only: no LOCK, so it never waits for a writer (SPEC 13).
Result<api::RollbackResult> DoRollback(const std::string& path, uint64_t generation, bool dry_run) {
  if (dry_run) {
    auto reader = api::Sink::OpenReadOnly(path);
    if (!reader.ok()) return reader.status();
    return (*reader)->RollbackDryRun(generation);
  }
  auto sink = api::Sink::Open(path);
  if (!sink.ok()) return sink.status();
  return (*sink)->Rollback(generation);
}

Status CmdRollback(const std::string& path, uint64_t generation, bool dry_run) {
  auto r = DoRollback(path, generation, dry_run);
  if (!r.ok()) return r.status();
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  auto version = [&](uint64_t v) { return v == 0 ? std::string("unpublished") : "v" + std::to_string(v); };
  // Per window, what leaves (or comes back into) the live view.
  for (const api::RollbackChange& c : r->changes) {
    std::printf("window %s: %s -> %s; events %lld -> %lld, count %lld -> %lld, sum %s -> %s%s\n",
                api::FormatTime(c.window_start_ms).c_str(), version(c.version_before).c_str(),
                version(c.version_after).c_str(), static_cast<long long>(c.before.events),
                static_cast<long long>(c.after.events), static_cast<long long>(c.before.count),
                static_cast<long long>(c.after.count), api::FormatMicros(c.before.sum_micros).c_str(),
                api::FormatMicros(c.after.sum_micros).c_str(), c.version_after == 0 ? " (leaves the live view)" : "");
  }
  for (int64_t w : r->beyond_retention) {
    std::printf("window %s: beyond retention; kept out (its state was dropped)\n", api::FormatTime(w).c_str());
  }
  if (r->nothing_to_do) {
    std::printf("the current generation already holds generation %llu's windows; nothing to do\n", u(generation));
  } else if (dry_run) {
    std::printf("dry run: nothing changed\n");
  } else {
    std::printf("published generation %llu: a copy of generation %llu\n", u(r->generation), u(generation));
  }
  return Status::OK();
}

struct RollbackArgs {
  std::string root;
  uint64_t generation = 0;
  bool dry_run = false;
  std::string state;  // --state DIR: a root in a bucket's local state
};

}  // namespace

Command RegisterRollback(CLI::App& app) {
  auto a = std::make_shared<RollbackArgs>();
  auto* c = app.add_subcommand(
      "rollback",
      "Publish a new generation with generation G's windows and versions, and rewind the window state to match. "
      "Prints, per window, the events that leave the live view.");
  AddRoot(c, &a->root);
  c->add_option("--generation", a->generation, "The generation to copy (1 or more)")->required()->check(AtLeast(1));
  c->add_flag("--dry-run", a->dry_run, "Print what would change; change nothing");
  AddBucketState(c, &a->state);
  c->footer(Footer(CommonExitLine(), "snapsink rollback /data/orders --generation 3"));
  return {c, [a] {
            SNAPSINK_RETURN_IF_ERROR(UseBucketState(a->root, a->state));
            return CmdRollback(a->root, a->generation, a->dry_run);
          }};
}

}  // namespace snapsink
