// gc of the partitions' seal records (partitions/partition_seals.h,
// docs/FORMAT.md "Seal records of partitions").
#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "partitions/partition_seals.h"

namespace snapsink {
namespace {

// One partition's replaced records and records beyond retention, under its
// claim lock (held by the caller).
Status RemoveDeadOf(Env* env, const std::string& root, const std::string& name,
                        std::optional<int64_t> retained_from, SealRecordsRemoved* removed,
                        const std::function<bool(const std::string& dir)>& young) {
  PartitionProgress progress;
  Status s = ReadPartitionProgress(env, root, name, &progress);
  if (s.IsNotFound()) return Status::OK();  // nothing accepted yet: nothing replaced, nothing merged
  SNAPSINK_RETURN_IF_ERROR(s);
  const std::string seals = filenames::PartitionSealsDir(root, name);
  std::vector<std::string> children;
  s = env->GetChildren(seals, &children);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  std::sort(children.begin(), children.end());
  const size_t before = removed->replaced.size() + removed->beyond_retention.size();
  for (const std::string& c : children) {
    int64_t w;
    uint64_t version, epoch;
    if (!filenames::ParsePartitionSealName(c, &w, &version, &epoch)) continue;  // a temp: its owner's
    // Beyond retention: ROOT's floor has passed w, so no merge reads it again
    // (PublishMerged merges no window before ROOT's oldest kept one, and the
    // floor never falls). Accepted or not, the record is dead.
    const bool beyond = retained_from && w < *retained_from;
    auto ref = std::lower_bound(progress.seals.begin(), progress.seals.end(), w,
                                [](const PartitionSealRef& r, int64_t x) { return r.window_ms < x; });
    if (!beyond) {
      if (ref == progress.seals.end() || ref->window_ms != w) continue;  // no accepted seal of w yet
      if (ref->version == version && ref->epoch == epoch) continue;      // the accepted one
    }
    const std::string dir = filenames::Join(seals, c);
    const std::string json = filenames::Join(dir, filenames::kSealRecordFile);
    std::string text;
    s = env->ReadFileToString(json, &text);
    if (s.ok()) {
      PartitionSealRecord rec;
      // A damaged record is verify's to report, not gc's to remove.
      if (!PartitionSealRecord::Decode(text, json, &rec).ok()) continue;
      // Replaced: the accepted seal of w was recorded further into the
      // partition. A record at or past it is a round whose progress is not
      // written yet (its rerun accepts it): kept.
      if (!beyond && rec.to >= ref->to) continue;
      SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(json));
      MaybeCrash("gc.seal_record");
    } else if (!s.IsNotFound()) {
      return s;
    } else if (young && young(dir)) {
      continue;  // in a bucket: perhaps an upload in flight (seal.json goes last)
    }
    // Without seal.json a record in place is one this step began to remove:
    // records are renamed into place whole.
    SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(dir));
    (beyond ? removed->beyond_retention : removed->replaced).push_back("partitions/" + name + "/seals/" + c);
  }
  return removed->replaced.size() + removed->beyond_retention.size() != before ? env->SyncDir(seals) : Status::OK();
}

}  // namespace

Status RemoveDeadSealRecords(Env* env, const std::string& root, std::optional<int64_t> retained_from,
                             SealRecordsRemoved* removed,
                             const std::function<bool(const std::string& dir)>& young) {
  std::vector<std::string> names;
  Status s = env->GetChildren(filenames::PartitionsDir(root), &names);
  if (s.IsNotFound()) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(s);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    // The directory's name is a sanitized source: sanitizing it again changes nothing.
    bool claimed = false;
    SNAPSINK_RETURN_IF_ERROR(env->Exists(filenames::OwnerDir(root, name), &claimed));
    if (!claimed) continue;
    std::unique_ptr<FileLock> lock;
    for (int waited = 0;; waited += 5) {
      s = env->LockFile(filenames::OwnerLockFile(root, name), &lock);
      if (s.ok() || !s.IsLocked() || waited >= kClaimLockWaitMs) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (s.IsLocked()) continue;  // an owner busy that long: the next gc
    SNAPSINK_RETURN_IF_ERROR(s);
    SNAPSINK_RETURN_IF_ERROR(RemoveDeadOf(env, root, name, retained_from, removed, young));
  }
  return Status::OK();
}

}  // namespace snapsink
