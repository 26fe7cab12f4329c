// The Env of a root in an S3 bucket: paths `s3://BUCKET/PREFIX/...`, every
// operation an S3 request (engine/s3/s3_client.h). What each Env call
// becomes:
//
//   NewWritableFile   bytes buffered; the first Sync or Close PUTs them with
//                     If-None-Match: * (create-only). An object with the same
//                     name and the same bytes is success (a retry after a
//                     lost answer, or a rerun after a crash); other bytes are
//                     Locked naming the object: objects named by the work are
//                     written once, never overwritten.
//   ReplaceFileIfVersion  the one replaced object (CURRENT): one PUT with
//                     If-Match on the ETag ReadFileVersioned returned
//                     (If-None-Match: * for version ""). A lost race is Locked
//                     naming the object and the version it was read at.
//   NewRandomAccessFile  a HEAD for the size, then a ranged GET per Read.
//   ReadFileToString, ReadFileVersioned  a GET (the ETag is the version).
//   GetChildren       ListObjectsV2 with delimiter '/': objects and "dirs".
//   RemoveFile        DELETE; RemoveTree lists and deletes the prefix.
//   FileExists        HEAD, else a listing of PATH/ (directories are
//                     implicit: CreateDir, CreateDirs and SyncDir do nothing,
//                     and an empty directory does not exist).
//
// A PUT whose answer is lost (timeout, reset, 5xx) is resolved by re-reading
// the object: it holds our bytes (done), is missing or still at the old
// version (PUT again after a growing pause, a bounded number of times), or
// holds someone else's (lost). Every request is retried by the client
// (engine/s3/s3_client.h) for a bounded time before it fails. Not supported in a bucket, each an IOError saying so: appending,
// truncating, renaming (no atomic rename; CURRENT is replaced by
// ReplaceFileIfVersion) and file locks (a root in a bucket keeps LOCK on
// the writer's disk and claims a writer epoch object: engine/env_bucket_root.h).
//
// Crash points (engine/crash_point.h): bucket.before_create_put,
// bucket.after_create_put (a create-only object stored, or found holding
// our bytes), bucket.before_swap_put, bucket.after_swap_put.
#pragma once

#include <memory>
#include <string>

#include "engine/env.h"
#include "engine/s3/s3_client.h"

namespace snapsink {

class BucketEnv : public Env {
 public:
  explicit BucketEnv(S3Config config);

  S3Client* client() { return &client_; }

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) override;
  Status ReadFileToString(const std::string& path, std::string* out) override;
  bool FileExists(const std::string& path) override;
  Status GetFileSize(const std::string& path, uint64_t* size) override;
  // Sorted names; an empty (never written) directory lists as empty, not NotFound.
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

  // The create-only PUT of path (what a WritableFile's Sync/Close does).
  Status PutCreateOnly(const std::string& path, std::string_view data);

 private:
  S3Client client_;
};

}  // namespace snapsink
