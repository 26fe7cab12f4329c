// verify, gc and rollback.
#include <cstdio>

#include "engine/root.h"
#include "publish/maintenance.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdVerify(const std::string& path) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::OpenReadOnly(Env::Default(), path, &root));
  std::vector<std::string> problems, notes;
  size_t checked = 0;
  Status s = Verify(root->env(), root->path(), root->store(), &problems, &notes, &checked);
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  for (const std::string& p : problems) std::printf("CORRUPT %s\n", p.c_str());
  if (s.ok()) std::printf("ok: %zu snapshot(s) verified\n", checked);
  return s;
}

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

Status CmdRollback(const std::string& path, uint64_t generation) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/true, &root));
  SNAPSINK_RETURN_IF_ERROR(Rollback(root->env(), root->path(), root->store(), generation));
  std::printf("generation %llu is current\n", static_cast<unsigned long long>(generation));
  return Status::OK();
}

}  // namespace snapsink
