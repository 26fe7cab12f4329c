// `run ROOT --kafka ... --state DIR` (SPEC 12): each partition of the topic
// has its own state, a snapsink root of its own at DIR/<topic>/<partition>
// (its LMDB environment: producers, open windows, position, owner epoch),
// made with ROOT's settings. DIR is this process's local disk; ROOT is
// shared by every process of the group.
//
// The owner epoch is the fence. Taking a partition claims its next epoch in
// ROOT (api::ClaimOwner: each epoch goes to one process) and raises
// the state's owner epoch to it in one LMDB write; every later batch carries
// the epoch (WriteBatch::SetOwner), which the commit checks in its own
// transaction, and before each commit Check() asks ROOT whether a newer
// owner has claimed the partition since. A process that lost its partition
// (stopped past the session timeout, cut off from the group) therefore
// fails its next commit with Status Locked naming the newer owner.
//
// A state whose owner epoch is not the one just before the new claim was
// left behind by this process while others owned the partition: it is
// stale, so it is removed. A missing or stale state is restored from the
// newest checkpoint in ROOT (api::RestoreCheckpoint; never one of
// an older epoch than the stale state's), and the partition is read from
// the checkpoint's position; with no checkpoint, from the start of the topic.
//
// Checkpoints: the owner writes one of each partition into ROOT when it
// closes the partition cleanly (Close: revoked, leaving) and after a commit
// that moved the position checkpoint_every offsets or more past the last
// checkpoint (AfterCommit); the two newest are kept.
//
// Built on the public API only. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"

namespace snapsink::kafka {

class PartitionStates {
 public:
  // root: ROOT, opened without its LOCK; dir: --state DIR; who: this
  // process as claims record it ("client id host pid").
  PartitionStates(api::ReadOnlySink* root, std::string dir, std::string topic, std::string who);

  struct Owned {
    std::unique_ptr<api::Sink> sink;
    uint64_t epoch = 0;
    bool fresh = false;  // the state was made (or remade) by this take: no position of its own
    std::optional<api::CheckpointInfo> restored;  // the checkpoint it was restored from
    uint64_t checkpointed = 0;  // the offset of the last checkpoint written or restored (0: none)
  };

  // Claims p, opens (or makes) its state and commits the new owner epoch.
  // When another live process holds p's claim lock for longer than
  // claim_wait_ms (stopped, or stuck, while it claims or records a seal
  // round), nothing is claimed or opened: Locked, with *claim_locked set
  // (if given), and the caller may try again later. Any other Locked (p's
  // state on DIR locked by another process) leaves *claim_locked false.
  Status Take(int32_t p, const std::string& source, bool* claim_locked = nullptr);
  // How long Take waits for p's claim lock (default 500 ms: a claim or a
  // seal round's renames hold it for milliseconds).
  void set_claim_wait_ms(int64_t ms) { claim_wait_ms_ = ms; }
  // OK while this process's epoch of p is the newest claim in ROOT; else
  // Locked naming the newer owner.
  Status Check(int32_t p, const std::string& source) const;
  // Closes p's state (lost, revoked, fenced).
  void Drop(int32_t p);
  // Writes a checkpoint of p's state into ROOT (between commits).
  Result<api::CheckpointInfo> Checkpoint(int32_t p, const std::string& source);
  // After a commit of p at `offset`: a checkpoint when offset is
  // checkpoint_every or more past the last one; nullopt when none was due.
  Result<std::optional<api::CheckpointInfo>> AfterCommit(int32_t p, const std::string& source,
                                                                        int64_t offset);
  // Offsets between checkpoints while a partition is owned (0: only when closed).
  void set_checkpoint_every(uint64_t n) { checkpoint_every_ = n; }
  // Warnings of the last Take (a damaged checkpoint skipped).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // p's state while owned; nullptr otherwise.
  Owned* Get(int32_t p);
  const std::string& dir() const { return dir_; }
  api::ReadOnlySink* root() const { return root_; }
  std::string PartitionDir(int32_t p) const;

 private:
  api::ReadOnlySink* root_;
  std::string dir_, topic_, who_;
  std::map<int32_t, Owned> owned_;
  uint64_t checkpoint_every_ = 100000;
  int64_t claim_wait_ms_ = 500;
  std::vector<std::string> warnings_;
};

}  // namespace snapsink::kafka
