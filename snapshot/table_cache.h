// Process-wide caches in front of snapshot files (after LevelDB's TableCache
// and block cache): however many windows the Readers of a process touch, at
// most `max_open_files` snapshot files stay open (plus those in use at the
// moment), and the decompressed blocks that point lookups keep take at most
// kBlockCacheBytes (BlockCache).
//
// A file is cached under its path and identity (device, inode, size, mtime)
// and the whole-file XXH64 its snapshot manifest records, so a file that was
// replaced or changed is opened afresh. Snapshot files are immutable and a
// Reader pins its generation (gc keeps every file it names), so a file closed
// by eviction is reopened, and checked again, when it is needed next.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "engine/env.h"
#include "snapshot/snapshot_file.h"

namespace snapsink {

class TableCache {
 public:
  // The cache of this process.
  static TableCache* Default();
  // max_open_files 0 = the default: min(500, RLIMIT_NOFILE / 4), at least 8.
  explicit TableCache(size_t max_open_files = 0);

  // The identity of the file at path, part of its cache key ("" if it cannot be stat'ed).
  static std::string FileIdentity(const std::string& path);

  // The reader of the snapshot file `path` under `key` (FileIdentity and
  // whatever else tells its contents apart), opened through env if it is not
  // cached. Hold *out only while using it: a held reader is never closed.
  Status Find(Env* env, const std::string& path, const std::string& key,
              std::shared_ptr<const SnapshotReader>* out);

  // Lets go of every cached file that is no longer at its path with the
  // identity it was opened with (gc removed it, or it was replaced): no
  // reader asks for it again, and an open descriptor would keep a deleted
  // file's disk space taken. A file a caller holds closes when it lets go.
  // Returns how many were let go. Run by gc after it removes snapshots and
  // by api::Reader::CurrentGeneration, which the server's watcher polls
  // (at_most_every_second: then it does nothing if it ran less than a second
  // ago).
  size_t DropRemoved(bool at_most_every_second = false);

  void SetMaxOpenFiles(size_t n);  // 0 = the default
  size_t max_open_files() const;
  size_t cached_files() const;  // files the cache holds open now

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const SnapshotReader> reader;
    std::string path, identity;  // FileIdentity(path) when it was opened
  };
  void EvictLocked();

  mutable std::mutex mu_;
  size_t max_open_files_;
  std::chrono::steady_clock::time_point last_drop_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
};

// Where a SnapshotReader keeps one of its blocks for lookups that need not
// ask the cache: BlockCache sets `data` and `bytes` when it takes the block
// and clears them when it drops the block, both with *mu held exclusively; a
// lookup reads `bytes` and uses the block with *mu held shared, and marks the
// use in `referenced`, which is then the block's CLOCK bit.
struct CachedBlockSlot {
  std::shared_mutex* mu = nullptr;  // the owner's
  const std::string* data = nullptr;  // guarded by *mu
  const char* bytes = nullptr;        // data->data(), guarded by *mu: a hit reads no std::string
  std::atomic<bool> referenced{false};
};

// Checked, decompressed blocks of snapshot files, shared by every
// SnapshotReader of the process, evicted by CLOCK (second chance): a hit
// sets its block's reference bit under a shared lock and moves nothing, so
// lookups of any number of threads never wait for each other; an insert
// (exclusive lock) sweeps the hand over the blocks in the order they were
// inserted, clearing set bits (that block goes round again) and evicting
// the first block whose bit is clear. A block enters with its bit clear: one
// that is read once leaves before the blocks that are read again.
class BlockCache {
 public:
  static BlockCache* Default();
  explicit BlockCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // A fresh id for the blocks of one SnapshotReader.
  uint64_t NewId();
  std::shared_ptr<const std::string> Lookup(uint64_t id, uint64_t block);
  // With a slot: the block is also published through *slot while the cache
  // holds it (slot->mu must outlive the block's stay: its owner erases its
  // blocks before it goes).
  void Insert(uint64_t id, uint64_t block, std::shared_ptr<const std::string> data,
              CachedBlockSlot* slot = nullptr);
  // Drops the blocks [0, blocks) of id.
  void Erase(uint64_t id, uint64_t blocks);

  void SetCapacity(size_t bytes);
  size_t capacity() const;
  size_t bytes() const;

 private:
  struct Key {
    uint64_t id, block;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.id * 0x9e3779b97f4a7c15ULL ^ k.block); }
  };
  struct Entry {
    std::shared_ptr<const std::string> data;
    uint64_t seq = 0;                         // its place in clock_ (an older place there is stale)
    mutable std::atomic<bool> referenced{false};  // set by a hit, cleared by the hand (no slot)
    CachedBlockSlot* slot = nullptr;              // where its owner looks it up, if anywhere
    std::atomic<bool>& ref() { return slot != nullptr ? slot->referenced : referenced; }
  };
  // The clock: every block in the order it entered, the hand at the front.
  // A block erased or replaced leaves a stale place (seq differs), skipped
  // by the hand and dropped when stale places outnumber live ones.
  struct Place {
    Key key;
    uint64_t seq;
  };
  // Sweeps the hand until the cache fits; `keep` (the block just inserted)
  // goes round without being evicted.
  void EvictLocked(const Key* keep);
  // Drops the entry at it (and clears its slot). REQUIRES: mu_ held exclusively.
  void DropLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it);
  void CompactClockLocked();

  mutable std::shared_mutex mu_;
  size_t capacity_;
  size_t bytes_ = 0;
  uint64_t next_id_ = 1;
  uint64_t next_seq_ = 1;
  std::deque<Place> clock_;
  std::unordered_map<Key, Entry, KeyHash> map_;
};

}  // namespace snapsink
