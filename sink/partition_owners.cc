// The operator's view of the partitions processes share through ROOT
// (docs/SCALE-OUT.md): for each owners/<name>/, the newest claim, the
// newest checkpoint and the last progress write (position, high watermark,
// lag, last seal), in `status --json` and `metrics` of ROOT (the status
// text is tools/cmd_status.cc's).
#include <prometheus/gauge.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <tuple>

#include "engine/filenames.h"
#include "engine/json_escape.h"
#include "engine/timeutil.h"
#include "partitions/partition_seals.h"
#include "sink/root_status.h"
#include "sink/partition_owners.h"
#include "sink/sink_impl.h"

namespace snapsink::api {
namespace {

// partitions/<name>/progress as the operator sees it; nullopt when there is none yet.
Result<std::optional<PartitionProgressInfo>> ReadProgressInfo(Env* env, const std::string& root,
                                                                            const std::string& name) {
  PartitionProgress progress;
  Status s = ReadPartitionProgress(env, root, name, &progress);
  if (s.IsNotFound()) return std::optional<PartitionProgressInfo>();
  SNAPSINK_RETURN_IF_ERROR(s);
  PartitionProgressInfo info;
  info.epoch = progress.epoch;
  info.position = progress.position;
  info.high_watermark = progress.high_watermark;
  info.lag = std::max<int64_t>(0, progress.high_watermark - progress.position);
  struct stat st;
  if (::stat(filenames::PartitionProgressFile(root, name).c_str(), &st) == 0) {
    info.written_at_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  }
  const PartitionSealRef* last = nullptr;
  for (const PartitionSealRef& r : progress.seals) {
    if (last == nullptr || std::tie(r.to, r.window_ms) > std::tie(last->to, last->window_ms)) last = &r;
  }
  if (last != nullptr) {
    info.last_seal_window_start_ms = last->window_ms;
    info.last_seal_version = last->version;
    info.last_seal_epoch = last->epoch;
    info.last_seal_to = last->to;
  }
  return std::optional<PartitionProgressInfo>(info);
}

}  // namespace

Result<std::vector<PartitionOwnerInfo>> PartitionOwners(const ReadOnlySink& root) {
  return PartitionOwnersIn(SinkAccess::Get(root)->root.get());
}

Result<std::vector<PartitionOwnerInfo>> PartitionOwnersIn(Root* root) {
  Env* env = root->env();
  const std::string dir = filenames::OwnersDir(root->path());
  std::vector<PartitionOwnerInfo> out;
  std::vector<std::string> names;
  Status s = env->GetChildren(dir, &names);
  if (s.IsNotFound()) return out;
  SNAPSINK_RETURN_IF_ERROR(s);
  for (const std::string& name : names) {
    if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") continue;
    // The owners' directory name is a sanitized source: sanitizing it again changes nothing.
    SNAPSINK_ASSIGN_OR_RETURN(OwnerClaim claim, NewestOwnerIn(root, name));
    if (claim.epoch == 0) continue;
    PartitionOwnerInfo p{name, claim.epoch, claim.who, std::nullopt, std::nullopt};
    SNAPSINK_ASSIGN_OR_RETURN(p.progress, ReadProgressInfo(env, root->path(), name));
    SNAPSINK_ASSIGN_OR_RETURN(auto checkpoints, CheckpointsIn(root, name));
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

std::string PartitionOwnersJson(const std::vector<PartitionOwnerInfo>& parts) {
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
    // As of the owner's last progress write: null before its first recorded round.
    j += ",\"progress\":";
    if (const auto& g = p.progress) {
      j += "{\"epoch\":" + std::to_string(g->epoch) + ",\"position\":" + std::to_string(g->position) +
           ",\"high_watermark\":" + std::to_string(g->high_watermark) + ",\"lag\":" + std::to_string(g->lag) +
           ",\"last_seal\":";
      if (g->last_seal_window_start_ms) {
        j += "{\"window\":" + JsonQuote(FormatIso(*g->last_seal_window_start_ms)) + ",\"version\":" +
             std::to_string(g->last_seal_version) + ",\"epoch\":" + std::to_string(g->last_seal_epoch) +
             ",\"to\":" + std::to_string(g->last_seal_to) + "}";
      } else {
        j += "null";
      }
      // When it was written, and how long ago (display only).
      j += ",\"written_at\":" + (g->written_at_ms ? JsonQuote(FormatIso(*g->written_at_ms)) : std::string("null")) +
           ",\"age_seconds\":" +
           (g->written_at_ms ? std::to_string(ProgressAgeSeconds(*g->written_at_ms)) : std::string("null"));
      j += "}";
    } else {
      j += "null";
    }
    j += "}";
  }
  return j + "]";
}

void AddPartitionOwnerMetrics(const std::vector<PartitionOwnerInfo>& parts,
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
  auto& position = BuildGauge().Name("snapsink_partition_position")
                       .Help("The partition's next offset to read, as of its owner's last progress write in the root.")
                       .Register(*registry);
  auto& hwm = BuildGauge().Name("snapsink_partition_high_watermark")
                  .Help("The partition's high watermark as its owner last saw it, as of its last progress write.")
                  .Register(*registry);
  auto& lag = BuildGauge().Name("snapsink_partition_lag")
                  .Help("High watermark minus position, as of the partition's last progress write.")
                  .Register(*registry);
  auto& age = BuildGauge().Name("snapsink_partition_progress_age_seconds")
                  .Help("Seconds since the partition's owner last wrote its progress in the root: a stopped owner's "
                        "lag stays as it left it, its age grows.")
                  .Register(*registry);
  auto& seal_to = BuildGauge().Name("snapsink_partition_last_seal_offset")
                      .Help("The offset at which the partition's last accepted seal was recorded.")
                      .Register(*registry);
  for (const auto& p : parts) {
    epoch.Add({{"partition", p.name}, {"owner", p.who}}).Set(static_cast<double>(p.epoch));
    if (p.progress) {
      position.Add({{"partition", p.name}}).Set(static_cast<double>(p.progress->position));
      hwm.Add({{"partition", p.name}}).Set(static_cast<double>(p.progress->high_watermark));
      lag.Add({{"partition", p.name}}).Set(static_cast<double>(p.progress->lag));
      if (p.progress->written_at_ms) {
        age.Add({{"partition", p.name}}).Set(static_cast<double>(ProgressAgeSeconds(*p.progress->written_at_ms)));
      }
      if (p.progress->last_seal_window_start_ms) {
        seal_to.Add({{"partition", p.name}}).Set(static_cast<double>(p.progress->last_seal_to));
      }
    }
    if (!p.checkpoint) continue;
    offset.Add({{"partition", p.name}}).Set(static_cast<double>(p.checkpoint->offset));
    cepoch.Add({{"partition", p.name}}).Set(static_cast<double>(p.checkpoint->epoch));
    bytes.Add({{"partition", p.name}}).Set(static_cast<double>(p.checkpoint->bytes));
  }
}

}  // namespace snapsink::api
