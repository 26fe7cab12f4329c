// The backfill's own state, state/backfill-v<V>/: its done record in live
// state, its lock, its LMDB environment and its removal.
#include <string>

#include "engine/filenames.h"
#include "publish/backfill_steps.h"

namespace snapsink::backfill_steps {

Result<bool> IsDone(Store* live, uint64_t version) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  std::string_view v;
  Status s = txn->Get(Table::kMeta, meta::BackfillDoneKey(version), &v);
  if (s.IsNotFound()) return false;
  SNAPSINK_RETURN_IF_ERROR(s);
  return true;
}

Status LockBackfill(Env* env, const std::string& root, uint64_t version, std::unique_ptr<FileLock>* lock) {
  SNAPSINK_RETURN_IF_ERROR(EnsureDir(env, filenames::BackfillStateDir(root, version)));
  Status s = env->LockFile(filenames::BackfillLockFile(root, version), lock);
  if (s.IsLocked()) {
    return Status::Locked("backfill v" + std::to_string(version) + " of " + root + " is running in another process");
  }
  return s;
}

// The backfill's environment is born whole, as init's is: it is created
// in state.init-tmp/ inside the backfill dir, its first commit (the tables)
// made durable there, and only then is its data.mdb renamed into the
// backfill dir and that dir synced. Created in place, a power cut before
// LMDB's first fsync could leave a data.mdb whose first pages are torn,
// zero-filled or lost: LMDB then refuses it (MDB_INVALID: File is not an
// LMDB file) and every rerun failed on it.
//
// A data.mdb that LMDB calls invalid all the same (left by an older build,
// or made by hand) is recognised as never committed and made again: LMDB
// writes the magic of both meta pages in the file's first write and never
// rewrites it, and a commit fsyncs the file, so a file without a valid
// magic held no commit. Starting over is safe in any case: the backfill's
// state is private (no reader, no live command looks at it), nothing is
// done until the live commit that adopts it, its rejects files are cut
// back to the committed length (none), and a rerun ingests its inputs
// (or the spool, kept beside it) from their start.
Status OpenBackfillStore(Env* env, const std::string& root, uint64_t version, std::unique_ptr<Store>* out) {
  const std::string dir = filenames::BackfillStateDir(root, version);
  const std::string data = filenames::LmdbDataFile(dir);
  if (env->FileExists(data)) {
    Status s = Store::Open(env->LocalPath(dir), /*create=*/true, out);
    if (s.ok() || !s.IsCorruption() || s.message().find(mdb_strerror(MDB_INVALID)) == std::string::npos) return s;
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(data));
    SNAPSINK_RETURN_IF_ERROR(env->RemoveFile(filenames::LmdbLockFile(dir)));
    SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));
  }
  const std::string building = filenames::BackfillEnvBuildDir(root, version);
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(building));  // a crashed attempt's
  SNAPSINK_RETURN_IF_ERROR(env->CreateDir(building));
  {
    std::unique_ptr<Store> fresh;
    // The tables committed and synced.
    SNAPSINK_RETURN_IF_ERROR(Store::Open(env->LocalPath(building), /*create=*/true, &fresh));
  }
  SNAPSINK_RETURN_IF_ERROR(env->RenameFile(filenames::LmdbDataFile(building), data));
  SNAPSINK_RETURN_IF_ERROR(env->SyncDir(dir));  // data.mdb's name
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(building));
  return Store::Open(env->LocalPath(dir), /*create=*/true, out);
}

Status RemoveBackfillState(Env* env, const std::string& root, uint64_t version) {
  SNAPSINK_RETURN_IF_ERROR(env->RemoveTree(filenames::BackfillStateDir(root, version)));
  return env->SyncDir(filenames::StateDir(root));
}

}  // namespace snapsink::backfill_steps
