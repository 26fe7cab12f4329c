#include "engine/writer_lock.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "engine/filenames.h"

namespace snapsink {
namespace {

// How often a waiting writer, or a follower behind one, tries again.
constexpr int64_t kRetryMs = 20;

// "pid N" as the holder of the lock file at lock_path wrote it ("" if none).
std::string Holder(Env* env, const std::string& lock_path) {
  std::string holder;
  (void)env->ReadFileToString(lock_path, &holder);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder.empty() ? std::string() : " (" + holder + ")";
}

// Names this process as the holder for whoever is refused next; the lock
// itself is the fcntl lock.
Status WriteHolder(Env* env, const std::string& lock_path) {
  std::unique_ptr<WritableFile> f;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(lock_path, &f));
  SNAPSINK_RETURN_IF_ERROR(f->Append("pid " + std::to_string(::getpid()) + "\n"));
  return f->Close();
}

// One attempt, never waiting.
Status TryLockRoot(Env* env, const std::string& path, std::unique_ptr<FileLock>* lock) {
  const std::string lock_path = filenames::LockFile(path);
  Status s = env->LockFile(lock_path, lock);
  if (s.IsLocked()) {
    return Status::Locked("root " + path + " is locked by another writer" + Holder(env, lock_path));
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  return WriteHolder(env, lock_path);
}

bool FollowerRunning(Env* env, const std::string& path) {
  const std::string follower = filenames::FollowerLockFile(path);
  if (!env->FileExists(follower)) return false;
  std::unique_ptr<FileLock> probe;
  return env->LockFileShared(follower, &probe).IsLocked();
}

// Tries until wait_ms has passed, queued (LOCK.queue shared) so that a
// follower lets this writer in at the end of its step.
Status WaitForLock(Env* env, const std::string& path, int64_t wait_ms, std::unique_ptr<FileLock>* lock) {
  const std::string queue = filenames::LockQueueFile(path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  std::unique_ptr<FileLock> queued;
  for (;;) {
    // Refused only while the follower looks at the queue: again next time.
    if (queued == nullptr && env->FileExists(queue)) (void)env->LockFileShared(queue, &queued);
    Status s = TryLockRoot(env, path, lock);
    if (!s.IsLocked() || std::chrono::steady_clock::now() >= deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
  }
}

}  // namespace

Status LockRoot(Env* env, const std::string& path, std::unique_ptr<FileLock>* lock) {
  Status s = TryLockRoot(env, path, lock);
  if (!s.IsLocked() || !FollowerRunning(env, path)) return s;
  return WaitForLock(env, path, kFollowerStepWaitMs, lock);
}

Status LockRootWaiting(Env* env, const std::string& path, int64_t wait_ms, std::unique_ptr<FileLock>* lock) {
  return WaitForLock(env, path, wait_ms, lock);
}

Status LockFollower(Env* env, const std::string& path, std::unique_ptr<FileLock>* lock) {
  const std::string lock_path = filenames::FollowerLockFile(path);
  Status s = env->LockFile(lock_path, lock);
  if (s.IsLocked()) {
    return Status::Locked("root " + path + " is followed by another process (Sink::Follow)" + Holder(env, lock_path));
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  SNAPSINK_RETURN_IF_ERROR(WriteHolder(env, lock_path));
  // The queue must exist before a writer can wait in it.
  std::unique_ptr<FileLock> probe;
  s = env->LockFile(filenames::LockQueueFile(path), &probe);
  return s.IsLocked() ? Status::OK() : s;
}

bool WritersWaiting(Env* env, const std::string& path) {
  std::unique_ptr<FileLock> probe;
  return env->LockFile(filenames::LockQueueFile(path), &probe).IsLocked();
}

Status LockRootForStep(Env* env, const std::string& path, const std::function<bool()>& give_up,
                       const std::function<void(int64_t ms)>& sleep, std::unique_ptr<FileLock>* lock) {
  for (;;) {
    if (!WritersWaiting(env, path)) {
      Status s = TryLockRoot(env, path, lock);
      if (!s.IsLocked()) return s;
    }
    if (give_up()) return Status::Locked("root " + path + ": stopped while another writer held it");
    sleep(kRetryMs);
  }
}

}  // namespace snapsink
