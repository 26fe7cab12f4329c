// Owner epochs of sources that processes take turns at (SPEC 12): the claim
// files in ROOT/owners/ (engine/filenames.h) and the epoch a source's state
// holds. A claim is a create-only write: under the source's claim LOCK the
// next epoch is written to a temp file, synced and renamed to its name,
// which no claim ever rewrites (on object storage: a put-if-absent).
#include <chrono>
#include <thread>

#include "engine/crash_point.h"
#include "engine/filenames.h"
#include "engine/long_key.h"
#include "engine/state_codec.h"
#include "engine/store.h"
#include "sink/partition_owners.h"
#include "sink/sink_impl.h"

namespace snapsink::api {
namespace {

// Claims lost to another process's claim of the same epoch (in a bucket) before giving up.
constexpr int kClaimRounds = 8;

// The newest claim in dir (0 when none).
Status NewestClaim(Env* env, const std::string& dir, uint64_t* epoch, std::string* name) {
  *epoch = 0;
  bool exists = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(dir, &exists));
  if (!exists) return Status::OK();
  std::vector<std::string> children;
  SNAPSINK_RETURN_IF_ERROR(env->GetChildren(dir, &children));
  for (const std::string& c : children) {
    uint64_t e = 0;
    if (filenames::ParseOwnerClaimName(c, &e) && e > *epoch) {
      *epoch = e;
      *name = c;
    }
  }
  return Status::OK();
}

}  // namespace

Result<uint64_t> ClaimOwner(ReadOnlySink& handle, const std::string& source, const std::string& who,
                            int64_t lock_wait_ms) {
  Env* env = SinkAccess::Get(&handle)->root->env();
  const std::string& root = SinkAccess::Get(&handle)->root->path();
  const std::string dir = filenames::OwnerDir(root, source);
  bool exists = false;
  SNAPSINK_RETURN_IF_ERROR(env->Exists(dir, &exists));
  if (!exists) {
    SNAPSINK_RETURN_IF_ERROR(env->CreateDirs(dir));
    SNAPSINK_RETURN_IF_ERROR(env->SyncDir(filenames::OwnersDir(root)));
    SNAPSINK_RETURN_IF_ERROR(env->SyncDir(root));
  }
  std::unique_ptr<FileLock> lock;
  for (int64_t waited = 0;; waited += 5) {  // claims are short: wait for the one in flight
    Status s = env->LockFile(filenames::OwnerLockFile(root, source), &lock);
    if (s.ok()) break;
    if (!s.IsLocked() || waited >= lock_wait_ms) return s.Prefixed(source + ": claiming: ");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // In a bucket the claim LOCK excludes nobody on other machines: the
  // rename is a create-only PUT, and a process that lost it to another's
  // claim of the same epoch (Locked) reads the claims again.
  for (int round = 0; round < kClaimRounds; ++round) {
    uint64_t newest = 0;
    std::string name;
    SNAPSINK_RETURN_IF_ERROR(NewestClaim(env, dir, &newest, &name));
    const uint64_t epoch = newest + 1;
    const std::string file = filenames::OwnerClaimFile(root, source, epoch);
    const std::string tmp = file + ".tmp";
    std::unique_ptr<WritableFile> f;
    SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(tmp, &f));
    SNAPSINK_RETURN_IF_ERROR(f->Append(who + "\n"));
    SNAPSINK_RETURN_IF_ERROR(f->Sync());
    SNAPSINK_RETURN_IF_ERROR(f->Close());
    MaybeCrash("owner.before_claim");
    Status s = env->RenameFile(tmp, file);
    if (s.IsLocked()) {
      (void)env->RemoveFile(tmp);
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(s);
    SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
    return epoch;
  }
  return Status::Locked(source + ": claiming: other processes kept claiming its next epoch; try again");
}

Result<OwnerClaim> NewestOwner(const ReadOnlySink& root, const std::string& source) {
  return NewestOwnerIn(SinkAccess::Get(root)->root.get(), source);
}

Result<OwnerClaim> NewestOwnerIn(Root* root, const std::string& source) {
  Env* env = root->env();
  const std::string dir = filenames::OwnerDir(root->path(), source);
  OwnerClaim claim;
  std::string name;
  SNAPSINK_RETURN_IF_ERROR(NewestClaim(env, dir, &claim.epoch, &name));
  if (claim.epoch == 0) return claim;
  Status s = env->ReadFileToString(filenames::Join(dir, name), &claim.who);
  if (!s.ok()) return s.Prefixed(source + ": reading its owner: ");
  while (!claim.who.empty() && claim.who.back() == '\n') claim.who.pop_back();
  return claim;
}

Result<uint64_t> Sink::OwnerEpoch(const std::string& source) const {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(impl_->root->store()->BeginRead(&txn));
  std::string_view v;
  Status s = snapsink::GetRecord(txn.get(), snapsink::Table::kSources, source, &v);
  if (s.IsNotFound()) return uint64_t{0};
  SNAPSINK_RETURN_IF_ERROR(s);
  SourceState st;
  SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &st));
  return st.owner_epoch.value_or(0);
}

}  // namespace snapsink::api
