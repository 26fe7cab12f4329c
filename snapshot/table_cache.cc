#include "snapshot/table_cache.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>

namespace snapsink {

namespace {

size_t DefaultMaxOpenFiles() {
  struct rlimit rl;
  size_t n = 500;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    n = std::min<size_t>(n, static_cast<size_t>(rl.rlim_cur / 4));
  }
  return std::max<size_t>(n, 8);
}

}  // namespace

TableCache* TableCache::Default() {
  static TableCache* cache = new TableCache();  // never destroyed: used until exit
  return cache;
}

TableCache::TableCache(size_t max_open_files)
    : max_open_files_(max_open_files == 0 ? DefaultMaxOpenFiles() : max_open_files) {}

std::string TableCache::FileIdentity(const std::string& path) {
  // An object in a bucket is written once under a name the work gives it,
  // never replaced: its name (and the checksum in the key) identify it.
  if (path.rfind("s3://", 0) == 0) return "object";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) + ':' +
         std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec);
}

Status TableCache::Find(Env* env, const std::string& path, const std::string& key,
                        std::shared_ptr<const SnapshotReader>* out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      *out = it->second->reader;
      return Status::OK();
    }
  }
  // Opened without the lock (it reads the footer, index and filter); two
  // threads may open the same file at once: the first to insert wins.
  std::unique_ptr<SnapshotReader> opened;
  std::string identity = FileIdentity(path);
  SNAPSINK_RETURN_IF_ERROR(SnapshotReader::Open(env, path, &opened));
  std::shared_ptr<const SnapshotReader> reader(std::move(opened));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    *out = it->second->reader;
    return Status::OK();
  }
  lru_.push_front(Entry{key, reader, path, std::move(identity)});
  map_[key] = lru_.begin();
  *out = std::move(reader);
  EvictLocked();
  return Status::OK();
}

void TableCache::EvictLocked() {
  // Least recently used first, skipping files in use (held by a caller):
  // those are closed when their last user lets go, not under its feet.
  auto it = lru_.end();
  while (lru_.size() > max_open_files_ && it != lru_.begin()) {
    --it;
    if (it->reader.use_count() > 1) continue;
    map_.erase(it->key);
    it = lru_.erase(it);
  }
}

size_t TableCache::DropRemoved(bool at_most_every_second) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (at_most_every_second && now - last_drop_ < std::chrono::seconds(1)) return 0;
  last_drop_ = now;
  size_t dropped = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (FileIdentity(it->path) == it->identity) {
      ++it;
      continue;
    }
    map_.erase(it->key);
    it = lru_.erase(it);
    ++dropped;
  }
  return dropped;
}

void TableCache::SetMaxOpenFiles(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  max_open_files_ = n == 0 ? DefaultMaxOpenFiles() : n;
  EvictLocked();
}

size_t TableCache::max_open_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_open_files_;
}

size_t TableCache::cached_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

BlockCache* BlockCache::Default() {
  static BlockCache* cache = new BlockCache(kBlockCacheBytes);  // never destroyed
  return cache;
}

uint64_t BlockCache::NewId() {
  std::unique_lock lock(mu_);
  return next_id_++;
}

std::shared_ptr<const std::string> BlockCache::Lookup(uint64_t id, uint64_t block) {
  std::shared_lock lock(mu_);
  auto it = map_.find(Key{id, block});
  if (it == map_.end()) return nullptr;
  // Written only when clear: a hot block's line is not written on every hit.
  std::atomic<bool>& ref = it->second.ref();
  if (!ref.load(std::memory_order_relaxed)) ref.store(true, std::memory_order_relaxed);
  return it->second.data;
}

void BlockCache::Insert(uint64_t id, uint64_t block, std::shared_ptr<const std::string> data,
                        CachedBlockSlot* slot) {
  std::unique_lock lock(mu_);
  const Key key{id, block};
  Entry& e = map_[key];
  if (e.data != nullptr) bytes_ -= e.data->size();  // replaced: its old place goes stale
  bytes_ += data->size();
  if (e.slot != nullptr && e.slot != slot) {
    std::unique_lock owner(*e.slot->mu);
    e.slot->data = nullptr;
    e.slot->bytes = nullptr;
  }
  if (slot != nullptr) {
    std::unique_lock owner(*slot->mu);
    slot->data = data.get();
    slot->bytes = data->data();
  }
  e.data = std::move(data);
  e.slot = slot;
  e.seq = next_seq_++;
  e.ref().store(false, std::memory_order_relaxed);
  clock_.push_back(Place{key, e.seq});
  EvictLocked(&key);
  if (clock_.size() > 2 * map_.size() + 16) CompactClockLocked();
}

void BlockCache::Erase(uint64_t id, uint64_t blocks) {
  std::unique_lock lock(mu_);
  if (map_.empty()) return;
  for (uint64_t b = 0; b < blocks; b++) {
    auto it = map_.find(Key{id, b});
    if (it == map_.end()) continue;
    DropLocked(it);
  }
  if (clock_.size() > 2 * map_.size() + 16) CompactClockLocked();
}

void BlockCache::EvictLocked(const Key* keep) {
  // A block larger than the whole cache is still kept (alone) until the next
  // insert. Each pass of the hand clears a bit or evicts, and a cleared block
  // is evicted when the hand comes round again, so this ends.
  while (bytes_ > capacity_ && map_.size() > 1) {
    const Place p = clock_.front();
    clock_.pop_front();
    auto it = map_.find(p.key);
    if (it == map_.end() || it->second.seq != p.seq) continue;  // stale place
    Entry& e = it->second;
    if ((keep != nullptr && p.key == *keep) || e.ref().load(std::memory_order_relaxed)) {
      e.ref().store(false, std::memory_order_relaxed);
      clock_.push_back(p);  // second chance
      continue;
    }
    DropLocked(it);
  }
}

void BlockCache::DropLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  Entry& e = it->second;
  if (e.slot != nullptr) {
    // No lookup of the owner uses the block once this lock is ours.
    std::unique_lock owner(*e.slot->mu);
    e.slot->data = nullptr;
    e.slot->bytes = nullptr;
  }
  bytes_ -= e.data->size();
  map_.erase(it);
}

void BlockCache::CompactClockLocked() {
  std::deque<Place> live;
  for (const Place& p : clock_) {
    auto it = map_.find(p.key);
    if (it != map_.end() && it->second.seq == p.seq) live.push_back(p);
  }
  clock_.swap(live);
}

void BlockCache::SetCapacity(size_t bytes) {
  std::unique_lock lock(mu_);
  capacity_ = bytes;
  EvictLocked(nullptr);
}

size_t BlockCache::capacity() const {
  std::shared_lock lock(mu_);
  return capacity_;
}

size_t BlockCache::bytes() const {
  std::shared_lock lock(mu_);
  return bytes_;
}

}  // namespace snapsink
