// A bounded local cache of the immutable objects a reader of a root in a
// bucket reads (engine/env_bucket.h): whole objects (manifests, settings)
// with their ETag, and ranges of snapshot blocks. Every object but CURRENT
// is written once under a name the work gives it and never replaced, so an
// entry named by the object (its ETag and the range) never goes stale;
// CURRENT is never cached here. This class only stores bytes by name.
//
// One file an entry, named by the XXH64 of its name, in the cache
// directory. A file holds a header (a magic, the entry's full name, the
// length and XXH64 of the bytes) and the bytes; it is written under a
// temporary name and renamed into place, so a reader that crashed while
// writing leaves only a temporary file (removed by the next process that
// opens the cache, once its writer is gone), and a file cut short or
// damaged (a crash of the machine) fails its check and is removed, never
// trusted. Least recently used entries are removed when the total passes
// the capacity; a hit touches its file's time so that processes sharing the
// directory agree on what was used last. Those times order eviction only:
// nothing read from them reaches an answer.
//
// Thread-safe. Crash point: cache.before_rename (an entry's temporary file
// written, not yet renamed into place).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/status.h"

namespace snapsink {

class ObjectCache {
 public:
  static constexpr uint64_t kDefaultCapacity = 1ull << 30;  // 1 GiB

  // The default directory: $TMPDIR (else /tmp)/snapsink-cache-<uid>.
  static std::string DefaultDir();

  // Opens (creating, mode 0700) the cache in dir holding at most capacity
  // bytes. InvalidArgument naming dir when it cannot be made, is not a
  // directory or belongs to another user.
  static Status Open(const std::string& dir, uint64_t capacity, std::unique_ptr<ObjectCache>* out);

  // True and *out set when the entry is here whole and checks.
  bool Get(const std::string& name, std::string* out);
  // Stores the entry (best effort: a cache that cannot write is a miss next time).
  void Put(const std::string& name, std::string_view data);

  const std::string& dir() const { return dir_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  // Entries this process removed to stay within the capacity.
  uint64_t evictions() const { return evictions_; }
  // The bytes of the entries this process knows of (what it scanned when
  // it opened the directory, plus what it wrote since, less what it removed).
  uint64_t bytes() const;

 private:
  ObjectCache(std::string dir, uint64_t capacity) : dir_(std::move(dir)), capacity_(capacity) {}
  void Load();
  void Forget(const std::string& file);                 // REQUIRES: mu_ held
  void Touch(const std::string& file, uint64_t size);   // REQUIRES: mu_ held
  void EvictLocked();

  const std::string dir_;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // file names, most recently used first
  struct Slot {
    std::list<std::string>::iterator at;
    uint64_t size;
  };
  std::unordered_map<std::string, Slot> index_;
  uint64_t total_ = 0;
  std::atomic<uint64_t> hits_{0}, misses_{0}, evictions_{0};
  std::atomic<uint64_t> seq_{0};
};

}  // namespace snapsink
