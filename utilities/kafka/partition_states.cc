#include "utilities/kafka/partition_states.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "utilities/status_macros.h"

namespace snapsink::kafka {
namespace {

api::InitOptions InitLike(const api::RootSettings& s) {
  api::InitOptions o;
  o.window_size_ms = s.window_size_ms;
  o.lateness_ms = s.lateness_ms;
  o.on_gap = s.on_gap;
  o.id_horizon_ms = s.id_horizon_ms;
  o.producer_retention_ms = s.producer_retention_ms;
  o.retain_ms = s.retain_ms;  // an event beyond retention is refused in its partition too
  o.max_ahead_ms = s.max_ahead_ms;
  return o;
}

}  // namespace

PartitionStates::PartitionStates(api::ReadOnlySink* root, std::string dir, std::string topic, std::string who)
    : root_(root), dir_(std::move(dir)), topic_(std::move(topic)), who_(std::move(who)) {}

std::string PartitionStates::PartitionDir(int32_t p) const { return dir_ + "/" + topic_ + "/" + std::to_string(p); }

Status PartitionStates::Take(int32_t p, const std::string& source, bool* claim_locked) {
  owned_.erase(p);
  warnings_.clear();
  if (claim_locked) *claim_locked = false;
  auto claimed = api::ClaimOwner(*root_, source, who_, claim_wait_ms_);
  if (!claimed.ok()) {
    if (claim_locked) *claim_locked = claimed.status().IsLocked();
    return claimed.status();
  }
  const uint64_t epoch = *claimed;
  const std::string path = PartitionDir(p);
  std::error_code ec;
  bool fresh = !std::filesystem::exists(path + "/CURRENT", ec) && !std::filesystem::exists(path + "/state", ec);
  uint64_t stale_epoch = 0;  // a restore never goes below the state it replaces
  std::unique_ptr<api::Sink> sink;
  if (!fresh) {
    SNAPSINK_ASSIGN_OR_RETURN(sink, api::Sink::Open(path));
    SNAPSINK_ASSIGN_OR_RETURN(const uint64_t stored, sink->OwnerEpoch(source));
    if (stored + 1 != epoch) {  // others owned it since: this copy is stale
      sink.reset();
      std::filesystem::remove_all(path, ec);
      if (ec) return Status::IOError(path + ": removing a stale partition state: " + ec.message());
      fresh = true;
      stale_epoch = stored;
    }
  }
  std::optional<api::CheckpointInfo> restored;
  if (fresh) {
    std::filesystem::create_directories(dir_ + "/" + topic_, ec);
    if (ec) return Status::IOError(dir_ + "/" + topic_ + ": " + ec.message());
    std::filesystem::remove_all(path, ec);  // a half-made one
    auto r = api::RestoreCheckpoint(*root_, source, path, stale_epoch, &warnings_);
    if (r.ok()) {
      restored = *r;
    } else if (r.status().IsNotFound()) {
      std::filesystem::remove_all(path, ec);
      SNAPSINK_RETURN_IF_ERROR(api::Sink::Create(path, InitLike(root_->settings())));
    } else {
      return r.status();
    }
    SNAPSINK_ASSIGN_OR_RETURN(sink, api::Sink::Open(path));
  }
  // The root's metric kinds hold in each partition's state (a no-op once
  // declared there; refused, as anywhere, over a window of another kind).
  SNAPSINK_ASSIGN_OR_RETURN(const auto kinds, root_->MetricKinds());
  for (const api::MetricKindInfo& k : kinds) {
    SNAPSINK_RETURN_IF_ERROR(sink->SetMetricKind(k.metric, k.kind, k.accuracy_ppm, k.precision));
  }
  api::WriteBatch take(source);  // the new epoch, in one LMDB write
  take.SetOwner(epoch, /*take=*/true);
  SNAPSINK_RETURN_IF_ERROR(sink->Write(take));
  Owned owned{std::move(sink), epoch, fresh && !restored, restored, restored ? restored->offset : 0};
  if (!owned.fresh && !restored) {  // its own state: checkpointed from where it is
    SNAPSINK_ASSIGN_OR_RETURN(auto pos, owned.sink->Position(source));
    owned.checkpointed = pos ? std::strtoull(pos->c_str(), nullptr, 10) : 0;
  }
  owned_[p] = std::move(owned);
  return Status::OK();
}

Result<api::CheckpointInfo> PartitionStates::Checkpoint(int32_t p, const std::string& source) {
  Owned* owned = Get(p);
  if (owned == nullptr) return Status::Locked(source + ": not owned by this process");
  SNAPSINK_ASSIGN_OR_RETURN(auto info, api::WriteCheckpoint(*root_, *owned->sink, source));
  owned->checkpointed = info.offset;
  return info;
}

Result<std::optional<api::CheckpointInfo>> PartitionStates::AfterCommit(int32_t p,
                                                                                       const std::string& source,
                                                                                       int64_t offset) {
  Owned* owned = Get(p);
  if (owned == nullptr || checkpoint_every_ == 0 || offset < 0 ||
      static_cast<uint64_t>(offset) < owned->checkpointed + checkpoint_every_) {
    return std::optional<api::CheckpointInfo>();
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto info, Checkpoint(p, source));
  return std::optional<api::CheckpointInfo>(std::move(info));
}

Status PartitionStates::Check(int32_t p, const std::string& source) const {
  auto it = owned_.find(p);
  if (it == owned_.end()) return Status::Locked(source + ": not owned by this process");
  SNAPSINK_ASSIGN_OR_RETURN(auto newest, api::NewestOwner(*root_, source));
  if (newest.epoch != it->second.epoch) {
    return Status::Locked(source + ": owner epoch " + std::to_string(it->second.epoch) + " was fenced by epoch " +
                          std::to_string(newest.epoch) + " (" + newest.who + ")");
  }
  return Status::OK();
}

void PartitionStates::Drop(int32_t p) { owned_.erase(p); }

PartitionStates::Owned* PartitionStates::Get(int32_t p) {
  auto it = owned_.find(p);
  return it == owned_.end() ? nullptr : &it->second;
}

}  // namespace snapsink::kafka
