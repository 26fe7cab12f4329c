// Internal to sink/: the partitions' owners and checkpoints
// (api::PartitionOwners, snapsink/utilities/partitions.h) as `status --json` and `metrics` of
// ROOT show them.
#pragma once

#include <prometheus/registry.h>

#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"

namespace snapsink {
class Root;
}

namespace snapsink::api {

// PartitionOwners, NewestOwner and Checkpoints (utilities/partitions.h) of an open
// root (the status page and the server hold a Root, not a ReadOnlySink).
Result<std::vector<PartitionOwnerInfo>> PartitionOwnersIn(Root* root);
Result<OwnerClaim> NewestOwnerIn(Root* root, const std::string& source);
Result<std::vector<CheckpointInfo>> CheckpointsIn(Root* root, const std::string& source);

// "partitions":[{"partition":..,"owner_epoch":..,"owner":..,"checkpoint":{..}|null,
//   "progress":{"epoch","position","high_watermark","lag","last_seal":{..}|null}|null},...]
std::string PartitionOwnersJson(const std::vector<PartitionOwnerInfo>& parts);
void AddPartitionOwnerMetrics(const std::vector<PartitionOwnerInfo>& parts,
                              prometheus::Registry* registry);

}  // namespace snapsink::api
