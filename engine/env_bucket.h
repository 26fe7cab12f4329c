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
//                     CURRENT, the one object replaced, is read again by a
//                     conditional GET (If-None-Match on the ETag last read:
//                     a 304 answers with the bytes already held).
//
// With a cache (SetCache: readers, engine/object_cache.h): a ranged read of
// an object other than CURRENT is asked of the cache first, by the object's
// name, its ETag (from the HEAD that opens it) and the range, and stored
// there after its GET; an object read whole is kept with its ETag and read
// again by a conditional GET (a 304 carries no body). Those objects are
// written once and never replaced; the ETag guards against one removed and
// written anew under its name (a root made again at the same prefix).
//   GetChildren       ListObjectsV2 with delimiter '/': objects and "dirs".
//   RemoveFile        DELETE; RemoveTree lists and deletes the prefix.
//   Exists            HEAD, else (a 404) a listing of one key under PATH/
//                     (directories are implicit: CreateDir, CreateDirs and
//                     SyncDir do nothing, and an empty directory does not
//                     exist). Only a 404 and an empty listing are "missing":
//                     any other answer, after the client's retries, is an
//                     error. FileExists is Exists with an error read as
//                     false: every caller that reads the bucket asks Exists.
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

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/env.h"
#include "engine/object_cache.h"
#include "engine/s3/s3_client.h"

namespace snapsink {

class BucketEnv : public Env {
 public:
  explicit BucketEnv(S3Config config);

  S3Client* client() { return &client_; }
  // Reads of objects other than CURRENT go through cache (not owned; null: none).
  void SetCache(ObjectCache* cache) { cache_ = cache; }
  ObjectCache* cache() const { return cache_; }
  // Objects whose name is the checksum of their bytes, checked by their
  // reader (a generation's manifest parts): with a cache, read from it
  // without asking the bucket.
  void SetNamedByContent(std::function<bool(const std::string& key)> named_by_content) {
    named_by_content_ = std::move(named_by_content);
  }

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) override;
  Status ReadFileToString(const std::string& path, std::string* out) override;
  bool FileExists(const std::string& path) override;
  Status Exists(const std::string& path, bool* exists) override;
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
  // A HEAD of an object other than CURRENT; with a cache, answered once per
  // process (objects are written once).
  Status HeadOnce(const std::string& bucket, const std::string& key, uint64_t* size, std::string* etag,
                  bool name_missing_bucket = true);
  // CURRENT by a conditional GET against the last ETag read.
  Status GetMutable(const std::string& bucket, const std::string& key, std::string* data, std::string* version);

  S3Client client_;
  ObjectCache* cache_ = nullptr;
  std::mutex memo_mu_;
  std::map<std::string, std::pair<std::string, std::string>> memo_;  // key -> (ETag, bytes) of CURRENT
  std::map<std::string, std::pair<uint64_t, std::string>> heads_;    // key -> (size, ETag), with a cache
  std::function<bool(const std::string& key)> named_by_content_;
};

}  // namespace snapsink
