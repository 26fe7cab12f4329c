// metrics: the root's Prometheus metrics, printed once (publish/metrics.h).
#include <cstdio>

#include "engine/root.h"
#include "publish/metrics.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdMetrics(const std::string& path) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), path, /*writer=*/false, &root));
  RootStatus status;
  SNAPSINK_RETURN_IF_ERROR(GatherRootStatus(root.get(), &status));
  prometheus::Registry registry;
  AddRootMetrics(status, &registry);
  const std::string text = SerializeMetrics(registry);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::OK();
}

}  // namespace snapsink
