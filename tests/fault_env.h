// FaultInjectionEnv: an Env for tests that simulates a power cut and a
// process that dies at any chosen file operation (after LevelDB's
// db/fault_injection_test.cc).
//
// It wraps a base Env (Env::Default() unless given) and passes every call
// through, while keeping a model of what the disk would still hold if the
// power failed now:
//
//   * File data. For every file written through this Env it records how many
//     bytes were appended and how many of them a Sync() covered. A file
//     opened with NewWritableFile starts at 0 durable bytes (the truncation
//     is taken to be durable; the old contents are gone); one opened with
//     NewAppendableFile starts with its existing size durable.
//   * Names. A file or directory created through this Env, and a rename
//     done through it, are durable only once SyncDir() of the directory that
//     holds the (new) name is called afterwards. A rename is keyed on its
//     target's directory only: syncing the source directory does not make it
//     durable, syncing the target's does (ext4 and XFS journal a rename as
//     one transaction; the conservative rule is the target).
//
// PowerCut() then makes the disk look like that model: it truncates each
// tracked file to its synced length, undoes the not-yet-durable renames
// newest first (the new name goes back to the old one, and a file the rename
// replaced gets its old bytes back), and removes the files and directories
// whose creation was not yet durable (a directory with everything in it).
// Afterwards everything left counts as durable.
//
// Best effort, by design; known gaps of the model:
//   * Removals (RemoveFile, RemoveTree) and TruncateFile are taken as
//     durable at once: a power cut never brings a removed file back.
//   * Only what goes through this Env is tracked. Files written before it
//     was created, or by another Env, are durable as they are; LMDB (state/)
//     is outside the seam and does its own durable commits.
//   * A rename that replaced a directory, or one whose target was later
//     removed, cannot be undone and is left as is. Undoing a rename whose
//     source directory was removed since recreates that directory.
//   * A file still open for writing at PowerCut() keeps buffering in the
//     base Env: REQUIRES that every WritableFile of this Env is destroyed
//     first.
//
// Failing operations: FailAtOp(n) makes the n-th mutating operation from
// now on (counting NewWritableFile, NewAppendableFile, Append, Flush, Sync,
// Close, CreateDir, CreateDirs, RemoveFile, RemoveTree, RenameFile,
// TruncateFile and SyncDir; reads and locks are not counted) fail with
// IOError without touching the disk, and every mutating operation after it
// too, like a process that died there. Sweeping n = 1, 2, ... visits a crash
// at every step of an operation.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/env.h"

namespace snapsink::testing {

class FaultInjectionEnv final : public Env {
 public:
  explicit FaultInjectionEnv(Env* base = Env::Default());
  ~FaultInjectionEnv() override;

  // See above. n = 0 disarms. Resets the operation count.
  void FailAtOp(uint64_t n);
  // Fails the n-th mutating operation from now on only (a full disk that is
  // freed again): the caller's error handling then runs for real.
  void FailOnlyOp(uint64_t n);
  // Mutating operations since the last FailAtOp (or construction).
  uint64_t mutating_ops() const;
  // True once an operation has been failed on purpose.
  bool failed() const;

  // Drops everything that was not durable (see above), then forgets the
  // model: what is left is durable. Also disarms FailAtOp.
  Status PowerCut();
  // Forgets the model without changing anything: all is durable.
  void MarkAllDurable();
  // How many names (files, directories, renames) are not yet durable, and
  // how many tracked files have unsynced bytes. For tests of this Env.
  size_t pending_names() const;
  size_t files_with_unsynced_data() const;

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewAppendableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewRandomAccessFile(const std::string& path, std::unique_ptr<RandomAccessFile>* out) override;
  Status ReadFileToString(const std::string& path, std::string* out) override;
  bool FileExists(const std::string& path) override;
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

 private:
  friend class FaultWritableFile;

  // The durable state of one file written through this Env.
  struct FileState {
    std::string path;  // current name; follows renames
    uint64_t size = 0;    // bytes appended (from its start)
    uint64_t synced = 0;  // bytes a Sync() covered
  };
  // A name change that is not durable yet.
  struct PendingName {
    enum Kind { kCreateFile, kCreateDir, kRename } kind;
    std::string path;  // the name created / the rename's target
    std::string from;  // kRename: the old name
    bool replaced_file = false;  // kRename: `path` was a file before the rename
    std::string replaced;        // ... and these were its bytes
  };

  // Counts one mutating operation; IOError if it is the one to fail (or later).
  Status CountOp(const char* what, const std::string& path);
  // Rewrites every tracked path under `from` to be under `to` (a rename).
  void RenameTracked(const std::string& from, const std::string& to);
  void ForgetUnder(const std::string& path);  // a removal
  std::shared_ptr<FileState> Track(const std::string& path, uint64_t durable_size);

  Env* const base_;
  mutable std::mutex mu_;
  uint64_t ops_ = 0;        // guarded by mu_
  uint64_t fail_at_ = 0;    // guarded by mu_
  bool failed_ = false;     // guarded by mu_
  bool once_ = false;       // guarded by mu_
  std::map<std::string, std::shared_ptr<FileState>> files_;  // by current path; guarded by mu_
  std::vector<PendingName> pending_;                          // oldest first; guarded by mu_
};

}  // namespace snapsink::testing
