// Env: the one seam between snapsink and the file system.
//
// Every write, fsync, rename, mkdir, remove and lock of snapsink's own files
// goes through an Env, so a test can wrap it (see tests/fault_env.h, which
// drops whatever was not synced at a simulated power cut, as LevelDB's
// fault_injection_test does). LMDB does its own I/O under state/ and is not
// routed through here; its durability is LMDB's (MDB_NOSYNC is never set),
// except for the names of its files: whoever creates an environment syncs
// its directory and that directory's parent through SyncDir here (init,
// backfill), so a test's power cut can drop them.
//
// Env::Default() is the POSIX implementation; it is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace snapsink {

// A file being written from its start (or appended to). Not thread-safe.
class WritableFile {
 public:
  WritableFile() = default;
  virtual ~WritableFile() = default;
  WritableFile(const WritableFile&) = delete;  // owns an OS handle
  WritableFile& operator=(const WritableFile&) = delete;
  virtual Status Append(std::string_view data) = 0;
  // Pushes buffered bytes to the operating system (not to the disk).
  virtual Status Flush() = 0;
  // Flushes and makes the contents durable (fdatasync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

// A file read at arbitrary offsets. Thread-safe.
class RandomAccessFile {
 public:
  RandomAccessFile() = default;
  virtual ~RandomAccessFile() = default;
  RandomAccessFile(const RandomAccessFile&) = delete;  // owns an OS handle
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;
  // Reads exactly n bytes at offset into *out, or fails (short file = Corruption).
  virtual Status Read(uint64_t offset, size_t n, std::string* out) const = 0;
  virtual uint64_t Size() const = 0;
};

// A held lock on a file; released by Env::UnlockFile or process exit.
class FileLock {
 public:
  FileLock() = default;
  virtual ~FileLock() = default;
  FileLock(const FileLock&) = delete;  // owns an OS handle
  FileLock& operator=(const FileLock&) = delete;
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();

  virtual Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  virtual Status NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  virtual Status NewRandomAccessFile(const std::string& path,
                                     std::unique_ptr<RandomAccessFile>* out) = 0;
  virtual Status ReadFileToString(const std::string& path, std::string* out) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  // Whether path exists, or why that could not be found out: in a bucket
  // (engine/env_bucket.h) only a 404 is "missing"; refused keys, a 5xx or an
  // endpoint that stays unreachable after the client's retries are an error,
  // never read as absent. Here, on a local disk, FileExists.
  virtual Status Exists(const std::string& path, bool* exists) {
    *exists = FileExists(path);
    return Status::OK();
  }
  virtual Status GetFileSize(const std::string& path, uint64_t* size) = 0;
  // Names (not paths) of the entries of dir, sorted; NotFound if dir is missing.
  virtual Status GetChildren(const std::string& dir, std::vector<std::string>* names) = 0;

  virtual Status CreateDir(const std::string& path) = 0;      // OK if it exists
  virtual Status CreateDirs(const std::string& path) = 0;     // mkdir -p
  virtual Status RemoveFile(const std::string& path) = 0;     // OK if missing
  virtual Status RemoveTree(const std::string& path) = 0;     // rm -rf; OK if missing
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status TruncateFile(const std::string& path, uint64_t size) = 0;
  // fsync of a directory, so that renames and creations inside it are durable.
  virtual Status SyncDir(const std::string& dir) = 0;

  // Exclusive lock (fcntl F_SETLK, plus an in-process table, since fcntl
  // locks do not exclude the same process). Busy = Status::Locked.
  virtual Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) = 0;
  // Shared (read) lock; Locked when someone holds it exclusively.
  virtual Status LockFileShared(const std::string& path, std::unique_ptr<FileLock>* lock) = 0;

  // The replaceable files (CURRENT; a partition's progress and producers
  // list) as a compare-and-swap sees them.
  // ReadFileVersioned reads path and the version a later
  // ReplaceFileIfVersion compares against (NotFound when missing).
  // ReplaceFileIfVersion replaces path with data only if it is still at
  // `version` ("" = it must not exist yet) and sets *new_version; a writer
  // that lost the race gets Locked naming path, and nothing is overwritten.
  // In a bucket (engine/env_bucket.h) that is one conditional PUT. Here, on a
  // local disk, a root's LOCK already excludes a second writer: the version
  // is "" and the replace is WriteFileAtomic, comparing nothing.
  virtual Status ReadFileVersioned(const std::string& path, std::string* data, std::string* version) {
    version->clear();
    return ReadFileToString(path, data);
  }
  virtual Status ReplaceFileIfVersion(const std::string& path, std::string_view data, const std::string& version,
                                      std::string* new_version);

  // Where LMDB, which does its own I/O, opens the environment this Env
  // calls path: path itself here; the local state directory of a root in a
  // bucket (engine/env_bucket_root.h) for that root's state/.
  virtual std::string LocalPath(const std::string& path) { return path; }
};

// An Env that forwards every call to another (LevelDB's EnvWrapper): a test
// that changes one operation overrides just that one.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Status NewWritableFile(const std::string& p, std::unique_ptr<WritableFile>* o) override {
    return target_->NewWritableFile(p, o);
  }
  Status NewAppendableFile(const std::string& p, std::unique_ptr<WritableFile>* o) override {
    return target_->NewAppendableFile(p, o);
  }
  Status NewRandomAccessFile(const std::string& p, std::unique_ptr<RandomAccessFile>* o) override {
    return target_->NewRandomAccessFile(p, o);
  }
  Status ReadFileToString(const std::string& p, std::string* o) override { return target_->ReadFileToString(p, o); }
  bool FileExists(const std::string& p) override { return target_->FileExists(p); }
  Status Exists(const std::string& p, bool* e) override { return target_->Exists(p, e); }
  Status GetFileSize(const std::string& p, uint64_t* s) override { return target_->GetFileSize(p, s); }
  Status GetChildren(const std::string& d, std::vector<std::string>* n) override { return target_->GetChildren(d, n); }
  Status CreateDir(const std::string& p) override { return target_->CreateDir(p); }
  Status CreateDirs(const std::string& p) override { return target_->CreateDirs(p); }
  Status RemoveFile(const std::string& p) override { return target_->RemoveFile(p); }
  Status RemoveTree(const std::string& p) override { return target_->RemoveTree(p); }
  Status RenameFile(const std::string& f, const std::string& t) override { return target_->RenameFile(f, t); }
  Status TruncateFile(const std::string& p, uint64_t s) override { return target_->TruncateFile(p, s); }
  Status SyncDir(const std::string& d) override { return target_->SyncDir(d); }
  Status LockFile(const std::string& p, std::unique_ptr<FileLock>* l) override { return target_->LockFile(p, l); }
  Status LockFileShared(const std::string& p, std::unique_ptr<FileLock>* l) override {
    return target_->LockFileShared(p, l);
  }
  std::string LocalPath(const std::string& p) override { return target_->LocalPath(p); }
  // ReadFileVersioned and ReplaceFileIfVersion are not forwarded: their
  // defaults go through this wrapper's own calls (so a fault-injecting
  // wrapper of the POSIX Env sees the replace's temp file, sync and
  // rename). A wrapper of a bucket Env overrides them to forward.

 private:
  Env* const target_;
};

// Writes data to path atomically and durably: temp file, fsync, rename over
// path, fsync of the directory. Used for CURRENT and every manifest.
Status WriteFileAtomic(Env* env, const std::string& path, std::string_view data);

// Creates dir (and its missing ancestors) when missing, each made durable by
// an fsync of its parent. For the directories the engine writes into
// (rejects/, staging/, snapshots/, manifests/): one deleted by hand is
// re-created, not a reason to fail.
Status EnsureDir(Env* env, const std::string& dir);

}  // namespace snapsink
