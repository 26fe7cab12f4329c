// Internal to sink/: the partitions' owners and checkpoints
// (ReadOnlySink::PartitionOwners) as `status --json` and `metrics` of
// ROOT show them.
#pragma once

#include <prometheus/registry.h>

#include <string>
#include <vector>

#include "snapsink/sink.h"

namespace snapsink {
class Root;
}

namespace snapsink::api {

// ReadOnlySink::PartitionOwners, NewestOwner and Checkpoints of an open
// root (the status page and the server hold a Root, not a ReadOnlySink).
Result<std::vector<ReadOnlySink::PartitionOwnerInfo>> PartitionOwnersIn(Root* root);
Result<ReadOnlySink::OwnerClaim> NewestOwnerIn(Root* root, const std::string& source);
Result<std::vector<ReadOnlySink::CheckpointInfo>> CheckpointsIn(Root* root, const std::string& source);

// "partitions":[{"partition":..,"owner_epoch":..,"owner":..,"checkpoint":{..}|null,
//   "progress":{"epoch","position","high_watermark","lag","last_seal":{..}|null}|null},...]
std::string PartitionOwnersJson(const std::vector<ReadOnlySink::PartitionOwnerInfo>& parts);
void AddPartitionOwnerMetrics(const std::vector<ReadOnlySink::PartitionOwnerInfo>& parts,
                              prometheus::Registry* registry);

}  // namespace snapsink::api
