// The operator's view of the partitions processes share through ROOT
// (docs/SCALE-OUT.md): for each owners/<name>/, the newest claim and the
// newest checkpoint, in `status --json` and `metrics` of ROOT (the status
// text is tools/cmd_status.cc's).
#include <prometheus/gauge.h>

#include <algorithm>
#include <memory>

#include "engine/filenames.h"
#include "engine/json_escape.h"
#include "sink/partition_owners.h"
#include "sink/sink_impl.h"

namespace snapsink::api {

Result<std::vector<ReadOnlySink::PartitionOwnerInfo>> ReadOnlySink::PartitionOwners() const {
  Env* env = impl_->root->env();
  const std::string dir = filenames::OwnersDir(impl_->root->path());
  std::vector<PartitionOwnerInfo> out;
  std::vector<std::string> names;
  Status s = env->GetChildren(dir, &names);
  if (s.IsNotFound()) return out;
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& name : names) {
    if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") continue;
    // The owners' directory name is a sanitized source: sanitizing it again changes nothing.
    SNAPSINK_ASSIGN_OR_RETURN(OwnerClaim claim, NewestOwner(name));
    if (claim.epoch == 0) continue;
    PartitionOwnerInfo p{name, claim.epoch, claim.who, std::nullopt};
    SNAPSINK_ASSIGN_OR_RETURN(auto checkpoints, Checkpoints(name));
    if (!checkpoints.empty()) {
      p.checkpoint = checkpoints.front();
      // The source as its checkpoint names it ("kafka:orders/3"), for RestoreCheckpoint.
      std::string head;
      std::unique_ptr<RandomAccessFile> f;
      if (env->NewRandomAccessFile(p.checkpoint->path, &f).ok() &&
          f->Read(0, std::min<uint64_t>(f->Size(), 4096), &head).ok()) {
        const size_t at = head.find("\nsource ");
        const size_t end = at == std::string::npos ? at : head.find('\n', at + 1);
        if (end != std::string::npos) p.checkpoint->source = head.substr(at + 8, end - at - 8);
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string PartitionOwnersJson(const std::vector<ReadOnlySink::PartitionOwnerInfo>& parts) {
  std::string j = "\"partitions\":[";
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    j += std::string(i ? "," : "") + "{\"partition\":" + JsonQuote(p.name) + ",\"owner_epoch\":" +
         std::to_string(p.epoch) + ",\"owner\":" + JsonQuote(p.who) + ",\"checkpoint\":";
    if (p.checkpoint) {
      j += "{\"epoch\":" + std::to_string(p.checkpoint->epoch) + ",\"offset\":" + std::to_string(p.checkpoint->offset) +
           ",\"bytes\":" + std::to_string(p.checkpoint->bytes) + "}";
    } else {
      j += "null";
    }
    j += "}";
  }
  return j + "]";
}

void AddPartitionOwnerMetrics(const std::vector<ReadOnlySink::PartitionOwnerInfo>& parts,
                              prometheus::Registry* registry) {
  if (parts.empty()) return;
  using prometheus::BuildGauge;
  auto& epoch = BuildGauge().Name("snapsink_partition_owner_epoch")
                    .Help("The newest owner epoch claimed, per partition shared through owners/.")
                    .Register(*registry);
  auto& offset = BuildGauge().Name("snapsink_partition_checkpoint_offset")
                     .Help("The offset of the partition's newest checkpoint in the root.")
                     .Register(*registry);
  auto& cepoch = BuildGauge().Name("snapsink_partition_checkpoint_epoch")
                     .Help("The owner epoch of the partition's newest checkpoint in the root.")
                     .Register(*registry);
  auto& bytes = BuildGauge().Name("snapsink_partition_checkpoint_bytes")
                    .Help("The size of the partition's newest checkpoint in the root.")
                    .Register(*registry);
  for (const auto& p : parts) {
    epoch.Add({{"partition", p.name}, {"owner", p.who}}).Set(static_cast<double>(p.epoch));
    if (!p.checkpoint) continue;
    offset.Add({{"partition", p.name}}).Set(static_cast<double>(p.checkpoint->offset));
    cepoch.Add({{"partition", p.name}}).Set(static_cast<double>(p.checkpoint->epoch));
    bytes.Add({{"partition", p.name}}).Set(static_cast<double>(p.checkpoint->bytes));
  }
}

}  // namespace snapsink::api
