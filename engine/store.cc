#include "engine/store.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

#include "engine/long_key.h"

namespace snapsink {
namespace {

constexpr const char* kTableNames[kNumTables] = {"meta",  "producers", "sources", "rejectfiles",
                                                 "aggs", "ledger",    "windows", "seals",
                                                 "ids",  "id_expiry", "producer_seen", "producer_idle",
                                                 "retired", "source_ids", "gap_spill", "agg_runs"};
// Tables added after format 1: a root made before them opens without them.
constexpr int kFirstOptionalTable = static_cast<int>(Table::kIds);
// Address space only: the file grows as data does. Without an address-space
// limit the map starts here; the limit of its growth is kMaxMapSize.
constexpr size_t kMapSize = size_t{1} << 38;
constexpr size_t kMaxMapSize = size_t{1} << 42;
constexpr size_t kMiB = size_t{1} << 20;

// The address-space limit (RLIMIT_AS), or 0 when there is none.
size_t AddressSpaceLimit() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<size_t>(rl.rlim_cur);
}

// The map's first size and its largest for an environment whose data file
// holds data_bytes (see store.h).
void MapSizes(uint64_t data_bytes, size_t* first, size_t* max) {
  const size_t limit = AddressSpaceLimit();
  *max = limit == 0 ? kMaxMapSize : limit / 2;
  *first = limit == 0 ? kMapSize : std::min<size_t>(limit / 8, size_t{1} << 30);
  if (const char* e = std::getenv("SNAPSINK_LMDB_MAP_BYTES"); e != nullptr && *e != '\0') {
    *first = static_cast<size_t>(std::strtoull(e, nullptr, 10));
  }
  *first = std::max<size_t>(*first, std::max<size_t>(static_cast<size_t>(data_bytes) * 2, kMiB));
  *first = (*first + kMiB - 1) / kMiB * kMiB;
  *max = std::max(*max, *first);
}

std::string Mib(size_t bytes) {
  return bytes >= (size_t{1} << 30) ? std::to_string(bytes >> 30) + " GiB" : std::to_string(bytes >> 20) + " MiB";
}

MDB_val Val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view View(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

}  // namespace

namespace {

// LMDB reports a short write (what a full disk gives) as EIO; a disk with
// less than this left is taken to be full.
constexpr uint64_t kNearlyFullBytes = 1 << 20;

// LMDB sizes lock.mdb with ftruncate and writes it through a shared map: on
// a full disk the first touch of a page is SIGBUS, not an error. Allocating
// it first turns that into ENOSPC. Larger than LMDB asks for 512 readers
// (it then allows more).
constexpr off_t kLockFileBytes = 64 << 10;

Status AllocateLockFile(const std::string& dir) {
  const std::string path = dir + "/lock.mdb";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return LmdbStatus(errno, "open", dir);
  int rc = ::posix_fallocate(fd, 0, kLockFileBytes);
  ::close(fd);
  if (rc == EOPNOTSUPP || rc == EINVAL) return Status::OK();  // no fallocate here: LMDB as before
  return LmdbStatus(rc, "open", dir);
}

bool NearlyFull(const std::string& dir) {
  struct statvfs st;
  if (dir.empty() || ::statvfs(dir.c_str(), &st) != 0) return false;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize < kNearlyFullBytes;
}

}  // namespace

Status LmdbStatus(int rc, std::string_view what, const std::string& dir) {
  if (rc == MDB_SUCCESS) return Status::OK();
  const std::string where = "lmdb " + std::string(what) + (dir.empty() ? std::string() : " " + dir) + ": ";
  if (rc == ENOSPC || rc == EDQUOT || (rc == EIO && NearlyFull(dir))) {
    return Status::IOError(where + "no space left on device");
  }
  if (rc == EACCES || rc == EPERM) return Status::IOError(where + "permission denied");
  if (rc == EROFS) return Status::IOError(where + "read-only file system");
  if (rc == ENOMEM && (what.substr(0, 4) == "open" || what.substr(0, 4) == "grow")) {
    return Status::IOError(where + "cannot map the address space the state needs (is ulimit -v too small?)");
  }
  if (rc == MDB_MAP_FULL) {
    return Status::IOError(where + "the state's map is full (MDB_MAP_FULL)");
  }
  std::string msg = "lmdb " + std::string(what) + ": " + mdb_strerror(rc);
  if (rc == MDB_NOTFOUND) return Status::NotFound(msg);
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
    return Status::Corruption(msg);
  return Status::IOError(msg);
}

Txn::Txn(MDB_txn* txn, Store* store, std::shared_lock<std::shared_timed_mutex> held)
    : held_(std::move(held)), txn_(txn), store_(store), dbis_(store->dbis_), dir_(&store->dir_) {}

Txn::~Txn() {
  if (txn_ != nullptr) mdb_txn_abort(txn_);
}

Status Txn::Check(int rc, std::string_view what) {
  if (rc == MDB_MAP_FULL) store_->map_full_ = true;
  return LmdbStatus(rc, what, *dir_);
}

Status Txn::Get(Table t, std::string_view key, std::string_view* value) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::NotFound("not found");
  MDB_val k = Val(key), v;
  int rc = mdb_get(txn_, dbis_[static_cast<int>(t)], &k, &v);
  if (rc == MDB_NOTFOUND) return Status::NotFound("not found");
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(rc, "get"));
  *value = View(v);
  return Status::OK();
}

Status Txn::Put(Table t, std::string_view key, std::string_view value) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::IOError("lmdb put: table not created");
  MDB_val k = Val(key), v = Val(value);
  return Check(mdb_put(txn_, dbis_[static_cast<int>(t)], &k, &v, 0), "put");
}

Status Txn::PutInOrder(Table t, std::string_view key, std::string_view value) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::IOError("lmdb put: table not created");
  if (put_cursor_ == nullptr || put_cursor_table_ != t) {
    if (put_cursor_ != nullptr) mdb_cursor_close(put_cursor_);
    put_cursor_ = nullptr;
    SNAPSINK_RETURN_IF_ERROR(Check(mdb_cursor_open(txn_, dbis_[static_cast<int>(t)], &put_cursor_), "cursor"));
    put_cursor_table_ = t;
  }
  MDB_val k = Val(key), v = Val(value);
  return Check(mdb_cursor_put(put_cursor_, &k, &v, 0), "put");
}

Status Txn::Del(Table t, std::string_view key) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::OK();
  MDB_val k = Val(key);
  int rc = mdb_del(txn_, dbis_[static_cast<int>(t)], &k, nullptr);
  if (rc == MDB_NOTFOUND) return Status::OK();
  return Check(rc, "del");
}

Status Txn::Scan(Table t, std::string_view prefix,
                 const std::function<bool(std::string_view, std::string_view)>& fn) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::OK();
  MDB_cursor* cur;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_cursor_open(txn_, dbis_[static_cast<int>(t)], &cur), "cursor"));
  MDB_val k = Val(prefix), v;
  int rc = prefix.empty() ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  while (rc == MDB_SUCCESS) {
    std::string_view key = View(k);
    if (key.substr(0, prefix.size()) != prefix) break;
    if (!fn(key, View(v))) break;
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(cur);
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return LmdbStatus(rc, "scan");
  return Status::OK();
}

Status Txn::Floor(Table t, std::string_view key, std::string_view prefix, std::string_view* found_key,
                  std::string_view* value) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::NotFound("not found");
  MDB_cursor* cur;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_cursor_open(txn_, dbis_[static_cast<int>(t)], &cur), "cursor"));
  MDB_val k = Val(key), v;
  int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  if (rc == MDB_SUCCESS && View(k) != key) rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
  else if (rc == MDB_NOTFOUND) rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND || (rc == MDB_SUCCESS && View(k).substr(0, prefix.size()) != prefix)) {
    return Status::NotFound("not found");
  }
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(rc, "floor"));
  *found_key = View(k);
  *value = View(v);
  return Status::OK();
}

Status Txn::DeletePrefix(Table t, std::string_view prefix) {
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::OK();
  MDB_cursor* cur;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_cursor_open(txn_, dbis_[static_cast<int>(t)], &cur), "cursor"));
  MDB_val k = Val(prefix), v;
  int rc = prefix.empty() ? mdb_cursor_get(cur, &k, &v, MDB_FIRST) : mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  while (rc == MDB_SUCCESS && View(k).substr(0, prefix.size()) == prefix) {
    rc = mdb_cursor_del(cur, 0);
    if (rc != MDB_SUCCESS) break;
    rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    if (rc == MDB_NOTFOUND || rc == EINVAL) {
      rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    }
  }
  mdb_cursor_close(cur);
  if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) return Check(rc, "delete");
  return Status::OK();
}

Status Txn::Stat(Table t, uint64_t* entries, uint64_t* bytes) {
  *entries = *bytes = 0;
  if (dbis_[static_cast<int>(t)] == kAbsentTable) return Status::OK();
  MDB_stat st;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_stat(txn_, dbis_[static_cast<int>(t)], &st), "stat"));
  *entries = st.ms_entries;
  *bytes = uint64_t{st.ms_psize} * (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages);
  return Status::OK();
}

Status Txn::Commit() {
  int rc = mdb_txn_commit(txn_);
  txn_ = nullptr;
  put_cursor_ = nullptr;  // closed by the commit
  held_ = {};
  return Check(rc, "commit");
}

Status Store::Open(const std::string& dir, bool create, std::unique_ptr<Store>* out) {
  return OpenEnv(dir, MDB_NOTLS, create, out);
}

Status Store::OpenReadOnly(const std::string& dir, std::unique_ptr<Store>* out) {
  Status s = OpenEnv(dir, MDB_NOTLS | MDB_RDONLY, false, out);
  // LMDB itself goes without lock.mdb on a read-only file system (EROFS);
  // a user who may read but not write it gets EACCES: read without it.
  if (s.ok() || s.message().find("permission denied") == std::string::npos) return s;
  return OpenEnv(dir, MDB_NOTLS | MDB_RDONLY | MDB_NOLOCK, false, out);
}

Status Store::OpenEnv(const std::string& dir, unsigned flags, bool create, std::unique_ptr<Store>* out) {
  std::unique_ptr<Store> s(new Store);
  s->dir_ = dir;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_create(&s->env_), "env_create"));
  // engine/long_key.h keeps every stored key within this.
  if (mdb_env_get_maxkeysize(s->env_) < static_cast<int>(kStoredLongKey)) {
    return Status::InvalidArgument("this LMDB build takes keys of at most " +
                                   std::to_string(mdb_env_get_maxkeysize(s->env_)) + " bytes; snapsink needs " +
                                   std::to_string(kStoredLongKey));
  }
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_set_maxdbs(s->env_, kNumTables), "set_maxdbs"));
  uint64_t data_bytes = 0;
  if (struct stat st; ::stat((dir + "/data.mdb").c_str(), &st) == 0) data_bytes = static_cast<uint64_t>(st.st_size);
  size_t first = 0;
  MapSizes(data_bytes, &first, &s->max_map_);
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_set_mapsize(s->env_, first), "set_mapsize"));
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_set_maxreaders(s->env_, 512), "set_maxreaders"));
  if ((flags & MDB_RDONLY) == 0) SNAPSINK_RETURN_IF_ERROR(AllocateLockFile(dir));
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_open(s->env_, dir.c_str(), flags, 0644), "open", dir));
  {
    MDB_envinfo info;
    mdb_env_info(s->env_, &info);
    s->map_size_ = info.me_mapsize;
  }
  // Slots of readers that died (kill -9) would pin old pages forever.
  int dead = 0;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_reader_check(s->env_, &dead), "reader_check", dir));
  const bool read_only = (flags & MDB_RDONLY) != 0;
  MDB_txn* txn;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_txn_begin(s->env_, nullptr, create ? 0 : MDB_RDONLY, &txn), "begin", dir));
  for (int i = 0; i < kNumTables; ++i) {
    int rc = mdb_dbi_open(txn, kTableNames[i], create ? MDB_CREATE : 0, &s->dbis_[i]);
    if (rc == MDB_NOTFOUND && !create && i >= kFirstOptionalTable) {
      s->dbis_[i] = kAbsentTable;
      continue;
    }
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn);
      if (rc == MDB_NOTFOUND) return Status::NotFound(dir + " holds no snapsink state");
      return LmdbStatus(rc, "open table", dir);
    }
  }
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_txn_commit(txn), "commit", dir));
  // The commit synced the new file's pages; force it anyway, so nothing
  // that relies on the environment runs before its first pages are durable.
  if (create && !read_only) SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_sync(s->env_, 1), "sync", dir));
  *out = std::move(s);
  return Status::OK();
}

Status Store::CreateMissingTables() {
  bool missing = false;
  for (MDB_dbi d : dbis_) missing |= d == kAbsentTable;
  if (!missing) return Status::OK();
  MDB_txn* txn;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_txn_begin(env_, nullptr, 0, &txn), "begin"));
  MDB_dbi opened[kNumTables];
  for (int i = 0; i < kNumTables; ++i) {
    opened[i] = dbis_[i];
    if (dbis_[i] != kAbsentTable) continue;
    int rc = mdb_dbi_open(txn, kTableNames[i], MDB_CREATE, &opened[i]);
    if (rc != MDB_SUCCESS) {
      mdb_txn_abort(txn);
      return LmdbStatus(rc, "create table");
    }
  }
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_txn_commit(txn), "commit"));
  std::copy(opened, opened + kNumTables, dbis_);
  return Status::OK();
}

Store::~Store() {
  if (env_ != nullptr) mdb_env_close(env_);
}

namespace {
// How long growing the map waits for this process's transactions to end.
constexpr auto kGrowWait = std::chrono::seconds(30);
}  // namespace

Status Store::Grow(size_t want, bool wait) {
  std::unique_lock<std::shared_timed_mutex> lock(map_mu_, std::defer_lock);
  if (wait ? !lock.try_lock_for(kGrowWait) : !lock.try_lock()) {
    return wait ? Status::IOError("lmdb grow " + dir_ + ": transactions of this process stayed open") : Status::OK();
  }
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  size_t size = info.me_mapsize;
  if (size >= want) return Status::OK();  // another thread grew it
  if (size >= max_map_) {
    return Status::IOError("lmdb grow " + dir_ + ": the state's map is full at " + Mib(size) +
                           ", half the address-space limit (ulimit -v); raise the limit");
  }
  while (size < want) size *= 2;
  size = std::min(size, max_map_);
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_set_mapsize(env_, size), "grow", dir_));
  map_size_ = size;
  return Status::OK();
}

// The data fills half the map: double it before the transaction starts,
// when no transaction of this process is open (else next time).
void Store::MaybeGrowBeforeWrite() {
  MDB_envinfo info;
  MDB_stat st;
  if (mdb_env_info(env_, &info) != MDB_SUCCESS || mdb_env_stat(env_, &st) != MDB_SUCCESS) return;
  const size_t used = (info.me_last_pgno + 1) * size_t{st.ms_psize};
  // A transaction before this one found it full: grow as well.
  if ((used * 2 <= info.me_mapsize && !map_full_) || info.me_mapsize >= max_map_) return;
  if (Grow(info.me_mapsize * 2, /*wait=*/false).ok() && map_bytes() > info.me_mapsize) map_full_ = false;
}

Status Store::GrowAfterMapFull() {
  MDB_envinfo info;
  SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_info(env_, &info), "grow", dir_));
  SNAPSINK_RETURN_IF_ERROR(Grow(info.me_mapsize * 2, /*wait=*/true));
  map_full_ = false;
  return Status::OK();
}

Status Store::Begin(unsigned flags, std::unique_ptr<Txn>* txn) {
  if ((flags & MDB_RDONLY) == 0) MaybeGrowBeforeWrite();
  for (int attempt = 0;; ++attempt) {
    std::shared_lock<std::shared_timed_mutex> held(map_mu_);
    MDB_txn* t;
    const int rc = mdb_txn_begin(env_, nullptr, flags, &t);
    if (rc == MDB_MAP_RESIZED && attempt < 3) {
      // Another process grew the map past ours: adopt its size, with no
      // transaction of this process open.
      held.unlock();
      std::unique_lock<std::shared_timed_mutex> lock(map_mu_, std::defer_lock);
      if (!lock.try_lock_for(kGrowWait)) return LmdbStatus(rc, "begin", dir_);
      SNAPSINK_RETURN_IF_ERROR(LmdbStatus(mdb_env_set_mapsize(env_, 0), "grow", dir_));
      MDB_envinfo info;
      mdb_env_info(env_, &info);
      map_size_ = info.me_mapsize;
      continue;
    }
    SNAPSINK_RETURN_IF_ERROR(LmdbStatus(rc, "begin", dir_));
    txn->reset(new Txn(t, this, std::move(held)));
    return Status::OK();
  }
}

Status Store::CopyCompact(const std::string& dir) {
  std::shared_lock<std::shared_timed_mutex> held(map_mu_);  // the map does not change under the copy
  return LmdbStatus(mdb_env_copy2(env_, dir.c_str(), MDB_CP_COMPACT), "copy", dir_);
}

Status Store::BeginWrite(std::unique_ptr<Txn>* txn) { return Begin(0, txn); }
Status Store::BeginRead(std::unique_ptr<Txn>* txn) { return Begin(MDB_RDONLY, txn); }

}  // namespace snapsink
