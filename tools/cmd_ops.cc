// gc and rollback (verify: cmd_verify.cc).
#include <cstdio>

#include "engine/root.h"
#include "engine/decimal.h"
#include "engine/timeutil.h"
#include "publish/maintenance.h"
#include "publish/rollback.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdGc(const std::string& path, uint64_t keep) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/true, &root));
  GcResult r;
  SNAPSINK_RETURN_IF_ERROR(CollectGarbage(root->env(), root->path(), root->store(), keep, &r));
  for (uint64_t g : r.removed_generations) std::printf("removed generation %llu\n", static_cast<unsigned long long>(g));
  for (const std::string& s : r.removed_snapshots) std::printf("removed snapshot %s\n", s.c_str());
  for (uint64_t g : r.pinned) std::printf("kept generation %llu: pinned by a reader\n", static_cast<unsigned long long>(g));
  if (r.removed_generations.empty() && r.removed_snapshots.empty()) {
    std::printf("nothing to remove (keeping the newest %llu generation(s) and what they use)\n",
                static_cast<unsigned long long>(keep));
  }
  return Status::OK();
}

Status CmdRollback(const std::string& path, uint64_t generation, bool dry_run) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/true, &root));
  RollbackResult r;
  SNAPSINK_RETURN_IF_ERROR(Rollback(root->env(), root->path(), root->store(), generation, dry_run, &r));
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  auto version = [&](uint64_t v) { return v == 0 ? std::string("unpublished") : "v" + std::to_string(v); };
  // Per window, what leaves (or comes back into) the live view.
  for (const RollbackWindowChange& c : r.changes) {
    std::printf("window %s: %s -> %s; events %lld -> %lld, count %lld -> %lld, sum %s -> %s%s\n",
                FormatIso(c.window_ms).c_str(), version(c.version_before).c_str(), version(c.version_after).c_str(),
                static_cast<long long>(c.before.events), static_cast<long long>(c.after.events),
                static_cast<long long>(c.before.count), static_cast<long long>(c.after.count),
                FormatMicros(c.before.sum_micros).c_str(), FormatMicros(c.after.sum_micros).c_str(),
                c.version_after == 0 ? " (leaves the live view)" : "");
  }
  if (r.nothing_to_do) {
    std::printf("the current generation already holds generation %llu's windows; nothing to do\n", u(generation));
  } else if (dry_run) {
    std::printf("dry run: nothing changed\n");
  } else {
    std::printf("published generation %llu: a copy of generation %llu\n", u(r.generation), u(generation));
  }
  return Status::OK();
}

}  // namespace snapsink
