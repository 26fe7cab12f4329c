#include "publish/backfill.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/filenames.h"
#include "engine/writer_lock.h"
#include "publish/backfill_steps.h"

// RunBackfill runs the steps of backfill.h in order; each step is one
// function of publish/backfill_steps.h.
namespace snapsink {
namespace {

// How long step 4 waits for a live writer to let go of the root.
constexpr int64_t kLockWaitMs = 60 * 1000;

}  // namespace

// Commit points: the backfill's own LMDB commits (state/backfill-v<V>/,
// invisible to readers and live commands) until step 4; then publishing its
// generation, whose commit point is the switch of CURRENT, and the live
// LMDB commit that adopts it (a rerun finishes a publish that stopped
// between the two; verify notes it). A failure before the switch changes
// nothing a reader sees; the rerun resumes from the backfill's state.
bool IsBackfillSourceName(std::string_view name) {
  if (name.substr(0, std::strlen(kBackfillSourcePrefix)) != kBackfillSourcePrefix) return false;
  size_t i = std::strlen(kBackfillSourcePrefix);
  const size_t digits = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  return i > digits && name.substr(i, 2) == ": ";
}

Status RunBackfill(Root* root, const BackfillOptions& o, BackfillResult* result) {
  using namespace backfill_steps;
  *result = BackfillResult();
  Env* env = root->env();
  const std::string& path = root->path();
  if (o.version == 0) return Status::InvalidArgument("BackfillOptions::version 0: must be at least 1");

  // 1. Already published?
  SNAPSINK_ASSIGN_OR_RETURN(bool done, IsDone(root->store(), o.version));
  if (done) {
    std::unique_ptr<FileLock> lock;
    SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(env, path, kLockWaitMs, &lock));
    return FinishDone(root, o.version, result);
  }
  int64_t first, last;
  SNAPSINK_RETURN_IF_ERROR(CheckOptions(o, root->config().window_ms, &first, &last));

  // One backfill process per version: its lock is taken before the spool
  // (stdin) or else before step 3.
  const bool dir_existed = env->FileExists(filenames::BackfillStateDir(path, o.version));
  const bool reads_stdin = std::count(o.files.begin(), o.files.end(), "-") > 0;
  std::unique_ptr<FileLock> bf_lock;
  // 1b. Standard input is spooled, then read like a file.
  std::vector<std::string> inputs = o.files;
  if (reads_stdin) {
    SNAPSINK_RETURN_IF_ERROR(LockBackfill(env, path, o.version, &bf_lock));
    SNAPSINK_RETURN_IF_ERROR(SpoolStdin(env, path, o.version));
    std::replace(inputs.begin(), inputs.end(), std::string("-"), filenames::BackfillSpoolFile(path, o.version));
  }
  // 2. The version rule, before any work.
  std::set<int64_t> touched;
  SNAPSINK_RETURN_IF_ERROR(TouchedWindows(inputs, root->config().window_ms, first, last, &touched));
  if (Status s = CheckVersion(root->store(), touched, o.version); !s.ok()) {
    // Refused before any work: the spool made for it goes too. A spool of
    // an earlier run stays, with the state that holds offsets into it.
    if (reads_stdin && !dir_existed) {
      bf_lock.reset();
      SNAPSINK_RETURN_IF_ERROR(RemoveBackfillState(env, path, o.version));
    }
    return s;
  }

  // 3. Ingest into the backfill's own state.
  if (bf_lock == nullptr) SNAPSINK_RETURN_IF_ERROR(LockBackfill(env, path, o.version, &bf_lock));
  std::unique_ptr<Store> bf;
  SNAPSINK_RETURN_IF_ERROR(OpenBackfillStore(env, path, o.version, &bf));
  SNAPSINK_RETURN_IF_ERROR(IngestInputs(root, bf.get(), o, inputs, first, last, result));

  // 4. Seal and publish in one generation, under the root's lock.
  std::unique_ptr<FileLock> lock;
  SNAPSINK_RETURN_IF_ERROR(LockRootWaiting(env, path, kLockWaitMs, &lock));
  SNAPSINK_ASSIGN_OR_RETURN(done, IsDone(root->store(), o.version));
  if (done) {
    bf.reset();
    return FinishDone(root, o.version, result);
  }
  SNAPSINK_RETURN_IF_ERROR(SealAndPublish(root, bf.get(), o.version, result));
  // 5. The backfill's state has served its purpose.
  bf.reset();
  bf_lock.reset();
  return RemoveBackfillState(env, path, o.version);
}

}  // namespace snapsink
