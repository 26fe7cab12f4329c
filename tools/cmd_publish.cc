// seal, publish and run.
#include <cstdio>

#include "engine/root.h"
#include "engine/timeutil.h"
#include "publish/publisher.h"
#include "publish/seal.h"
#include "tools/commands.h"

namespace snapsink {

Status IngestInto(Root* root, const IngestArgs& a);  // cmd_ingest.cc

void PrintSealed(const std::vector<SealedWindow>& sealed) {
  for (const SealedWindow& s : sealed) {
    std::printf("sealed %s v%u: %llu rows, %lld events\n", FormatIso(s.window_ms).c_str(), s.version,
                static_cast<unsigned long long>(s.rows), static_cast<long long>(s.events));
  }
}

namespace {

Status SealRoot(Root* root, const std::vector<std::string>& names, bool all) {
  std::vector<int64_t> windows;
  if (names.empty()) {
    SNAPSINK_RETURN_IF_ERROR(DirtyWindows(root->store(), root->config(), all, &windows));
  } else {
    for (const std::string& n : names) {
      int64_t w;
      if (!ParseWindowName(n, &w) || WindowStart(w, root->config().window_ms) != w) {
        return Status::InvalidArgument("--window " + n + ": not the start of a " +
                                       FormatDuration(root->config().window_ms) + " window");
      }
      windows.push_back(w);
    }
  }
  SealTarget t{root->env(), root->path(), root->store(), root->config().window_ms};
  std::vector<SealedWindow> sealed;
  SNAPSINK_RETURN_IF_ERROR(SealWindows(t, windows, &sealed));
  PrintSealed(sealed);
  if (sealed.empty()) std::printf("nothing to seal\n");
  return Status::OK();
}

Status PublishRoot(Root* root) {
  PublishResult r;
  SNAPSINK_RETURN_IF_ERROR(PublishStaged(root->env(), root->path(), root->store(), &r));
  if (r.generation == 0) {
    std::printf("nothing to publish\n");
  } else {
    std::printf("published generation %llu: %zu window(s)\n", static_cast<unsigned long long>(r.generation), r.windows);
  }
  return Status::OK();
}

}  // namespace

Status CmdSeal(const SealArgs& a) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/true, &root));
  return SealRoot(root.get(), a.windows, a.all);
}

Status CmdPublish(const std::string& path) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/true, &root));
  return PublishRoot(root.get());
}

Status CmdRun(const RunArgs& a) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.ingest.root, /*writer=*/true, &root));
  IngestArgs ingest = a.ingest;
  ingest.final = a.final;
  SNAPSINK_RETURN_IF_ERROR(IngestInto(root.get(), ingest));
  SNAPSINK_RETURN_IF_ERROR(SealRoot(root.get(), {}, a.final));
  return PublishRoot(root.get());
}

}  // namespace snapsink
