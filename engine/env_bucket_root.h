// The Env of a root in an S3 bucket, `s3://BUCKET/PREFIX`, as the engine
// sees it: one Env for every path under the root, each sent where it lives.
//
//   on this machine's disk, under the state directory DIR (`--state DIR`):
//     state/ state.init-tmp/ (LMDB), staging/ (snapshots being built),
//     LOCK LOCK.follower LOCK.queue, rejects/, and every `*.tmp` (what
//     WriteFileAtomic and StageCurrent write before their rename);
//   in the bucket (engine/env_bucket.h): everything else: settings,
//     writers/, snapshots/, manifests/, CURRENT, owners/, partitions/.
//
// A rename from the disk into the bucket is how a durable local file is
// published there: a file is one create-only PUT (the same bytes again are
// success), a directory (a staged snapshot) a create-only PUT of each of its
// files, manifest.json last, and then the local copy is removed. A rename
// onto CURRENT is its compare-and-swap (SwapCurrent). So the engine's
// commit points stay one code path: WriteFileAtomic of a manifest becomes a
// create-only object, InstallCurrent a conditional PUT.
//
// The writer lock: LOCK stays a local file lock (one writer per DIR), and
// taking it also claims the next writer epoch in the bucket, the
// create-only object writers/<epoch> naming host, pid and DIR. A CURRENT
// swap is refused (Locked) once a newer epoch is claimed, and when CURRENT
// already names this generation's number or a later one with other bytes:
// another writer published, nothing is overwritten.
//
// Without a state directory (readers: query, verify, inspect, status) the
// local paths go to a scratch directory of this process, removed when the
// Env is.
//
// With many publishers (ExpectCurrent, below) there is no writer epoch:
// CURRENT moves only from the generation a publish was built on.
//
// Crash points (engine/crash_point.h): bucket.upload_file (after each file
// of a directory uploaded into the bucket; up to four go up at once, its
// manifest.json or seal.json after all of them), bucket.removing_upload (a
// directory uploaded, its local manifest.json or seal.json removed, the rest
// not yet), bucket.claimed_epoch (a writer
// epoch stored, the local lock held), plus those of engine/env_bucket.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/env.h"
#include "engine/env_bucket.h"
#include "snapsink/bucket_access.h"

namespace snapsink {

// gc in a bucket keeps every generation replaced, and every object written,
// less than this long ago (it cannot see readers on other machines).
constexpr int64_t kDefaultGcMinAgeMs = 3600 * 1000;

class BucketRootEnv : public Env {
 public:
  // root: "s3://BUCKET/PREFIX" (no trailing '/'); state_dir: a local
  // directory ("" = a scratch directory of this process).
  BucketRootEnv(std::string root, std::string state_dir, S3Config config);
  ~BucketRootEnv() override;

  const std::string& root() const { return root_; }
  const std::string& state_dir() const { return state_dir_; }
  bool has_state_dir() const { return !scratch_; }
  BucketEnv* bucket() { return &bucket_; }
  ObjectCache* cache() const { return cache_.get(); }
  // Reads of objects other than CURRENT go through cache from now on.
  void UseCache(std::unique_ptr<ObjectCache> cache);

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) override;
  Status ReadFileToString(const std::string& path, std::string* out) override;
  bool FileExists(const std::string& path) override;
  Status Exists(const std::string& path, bool* exists) override;
  Status GetFileSize(const std::string& path, uint64_t* size) override;
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override;
  Status CreateDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveTree(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status TruncateFile(const std::string& path, uint64_t size) override;
  Status SyncDir(const std::string& dir) override;
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override;
  Status LockFileShared(const std::string& path, std::unique_ptr<FileLock>* lock) override;
  Status ReadFileVersioned(const std::string& path, std::string* data, std::string* version) override;
  Status ReplaceFileIfVersion(const std::string& path, std::string_view data, const std::string& version,
                              std::string* new_version) override;
  std::string LocalPath(const std::string& path) override;

  // Replaces CURRENT with data (one line "<generation> <xxh64>\n") by a
  // compare-and-swap from a fresh read: OK when CURRENT holds data already;
  // Locked, naming both, when it names this generation or a later one with
  // other bytes or a newer writer epoch is claimed; a lost swap is retried
  // from a new read a bounded number of times.
  Status SwapCurrent(std::string_view data);

  // Every object under dir (a path in the bucket), by its path past dir/,
  // with its Last-Modified from the listing (the server's clock, Unix ms).
  Status ModifiedTimes(const std::string& dir, std::map<std::string, int64_t>* out);
  // gc's --min-age in this process (BucketRootOptions::gc_min_age_ms).
  int64_t gc_min_age_ms() const { return gc_min_age_ms_; }
  void set_gc_min_age_ms(int64_t ms) { gc_min_age_ms_ = ms; }

  // The writer epoch this process claimed (0 = none yet).
  uint64_t epoch() const;

  // Shared publishing: many processes publish into this root, each from a
  // state of its own (run --kafka --state: the merged publish). Then taking
  // LOCK claims no writer epoch (no process fences the others), and
  // SwapCurrent replaces CURRENT only while it still holds `built_on`, the
  // CURRENT line ("" = none) the generation being published was built on:
  // a swap that finds anything else is Locked, naming both (another process
  // published first; the publish is made again from a fresh read).
  void ExpectCurrent(std::string built_on);
  // Shared publishing without a publish yet (LOCK taken for another step).
  void SharePublishing();
  bool shared_publishing() const {
    std::lock_guard<std::mutex> l(mu_);
    return shared_;
  }

 private:
  // True and *local set when path lives on this machine's disk.
  bool Local(const std::string& path, std::string* local) const;
  Status Upload(const std::string& local, const std::string& to);
  // PUTs each of names (files in the local directory) create-only as
  // to/<name>, a few at once; the first error once all in flight are done.
  Status UploadFiles(const std::string& local, const std::string& to, const std::vector<std::string>& names);
  Status ClaimEpoch();
  // The newest writer epoch claimed, and (who != null) what its claim says.
  Status NewestEpoch(uint64_t* epoch, std::string* who);

  const std::string root_;
  std::string state_dir_;
  bool scratch_ = false;
  BucketEnv bucket_;
  std::unique_ptr<ObjectCache> cache_;
  int64_t gc_min_age_ms_ = kDefaultGcMinAgeMs;
  mutable std::mutex mu_;
  uint64_t epoch_ = 0;
  bool shared_ = false;
  std::string built_on_;
};

// Runs one(0), ..., one(n - 1), a few at once (each is an upload into a
// bucket, waiting on the server far more than on this machine): the first
// error, once every one started is done; none is started after an error.
Status UploadEach(size_t n, const std::function<Status(size_t)>& one);

// The Env of the root at path: Env::Default() for a local path; for
// "s3://BUCKET/PREFIX" a BucketRootEnv, one per root for the process's
// life, its endpoint and keys from the AWS_* variables (S3Config) and its
// state directory from SetBucketStateDir. InvalidArgument naming the root
// and what to set when it cannot be made.
Status EnvForRoot(const std::string& path, Env** out);

// Marks the bucket root at path as published into by many processes
// (BucketRootEnv::SharePublishing), its Env made now or later.
Status SetBucketSharedPublishing(const std::string& path);
// What a process may set for a bucket root before its first EnvForRoot
// (api::BucketAccess): the endpoint, region and keys in place of the AWS_*
// variables (each "" keeps the variable's), a local cache of the objects
// its readers read (engine/object_cache.h; query and serve; "" and 0 are
// ObjectCache::DefaultDir() and kDefaultCapacity) and gc's --min-age (-1 =
// kDefaultGcMinAgeMs).
// InvalidArgument when an Env for path was made already with other options.
Status SetBucketRootOptions(const std::string& path, const api::BucketAccess& options);

// The local cache of the bucket root at path in this process (the one its
// Env reads through: query, serve), or null when it has none.
ObjectCache* CacheOfRoot(const std::string& path);

// Names the local state directory of the bucket root at path, before the
// first EnvForRoot of it (a later call for an Env already made must name
// the same directory).
Status SetBucketStateDir(const std::string& path, const std::string& dir);

}  // namespace snapsink
