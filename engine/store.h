// Store: a thin RAII wrapper over one LMDB environment and its named tables.
//
// One Store per environment per process (LMDB forbids opening the same
// environment twice in a process). A Store is thread-safe; a Txn is not.
// Readers never block the writer (MVCC); LMDB itself serialises writers
// across processes, and snapsink's LOCK keeps to one writing process anyway.
//
// Every open runs mdb_reader_check, so reader slots left by killed
// processes do not pin old pages forever (LMDB's header warns of this).
//
// The map (LMDB's address-space reservation) fits the machine: its first
// size follows RLIMIT_AS (unlimited: 256 GiB of address space, nothing
// else; under a limit: an eighth of it, at most 1 GiB, and never less than
// twice the data), and it grows, doubling, up to half the limit: before a
// write transaction when the data fills half of it, and when a transaction
// met MDB_MAP_FULL (then the caller aborts it, calls GrowAfterMapFull and
// redoes its work; the Ingester does, per batch). No size is decided at
// init. LMDB needs no transaction of this process open while the map
// changes: every Txn holds a shared lock that growing takes exclusively.
// A reader whose map is smaller than another process made it gets
// MDB_MAP_RESIZED from LMDB and adopts the new size (then retries).
// SNAPSINK_LMDB_MAP_BYTES (tests) sets the first size, to grow with little data.
//
// Errors: ENOSPC (and a short write LMDB reports as EIO on a full disk),
// EACCES and EROFS come back as IOError "no space left on device" /
// "permission denied" / "read-only file system" naming the directory.
#pragma once

#include <lmdb.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <memory>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace snapsink {

enum class Table {
  kMeta,         // settings and counters: see engine/root.h
  kProducers,    // producer id -> ProducerState [+ last seen, idle key time] (codec::EncodeProducer)
  kSources,      // source name -> SourceState
  kRejectFiles,  // rejects file name -> committed length (u64)
  kAggs,         // window|metric|key -> Aggregate
  kLedger,       // window|metric -> Aggregate (the "records in")
  kWindows,      // window -> WindowState
  kSeals,        // window|version -> SealRecord
  // Id dedup and producer retention (engine/id_dedup.h, engine/producer_retention.h).
  kIds,           // id key (16) -> event time of its first delivery (u64)
  kIdExpiry,      // event time (8, ordered) | id key -> "": ids in expiry order
  kProducerSeen,  // producer id -> last seen event time (u64); formats 3, 4 only: read, then moved into kProducers
  kProducerIdle,  // bucket of last seen (8, ordered) | producer id -> "": idle candidates (producer_retention.h)
  kRetired,       // producer id -> tombstone: epoch (u32) | last seen (u64)
  kSourceIds,     // SourceIdsKey(source) -> id-dedup and retirement counts (engine/id_dedup.h)
  kGapSpill,      // producer|epoch|lo -> hi: open gaps beyond a producer record's (engine/gap_spill.h)
  kAggRuns,       // window|run number -> a sorted run of aggregate deltas (engine/window_records_runs.h)
};
inline constexpr int kNumTables = 16;

class Store;

class Txn {
 public:
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  // NotFound if absent. *value stays valid until the next write or the end of the txn.
  Status Get(Table t, std::string_view key, std::string_view* value);
  Status Put(Table t, std::string_view key, std::string_view value);
  // Put through one cursor the transaction keeps (for the table of its last
  // PutInOrder): a key that lies within the leaf page of the cursor's last
  // put is searched on that page alone (LMDB's mdb_cursor_set), so a run of
  // puts in key order skips most descents from the root.
  Status PutInOrder(Table t, std::string_view key, std::string_view value);
  Status Del(Table t, std::string_view key);  // OK if absent
  // Calls fn(key, value) for every record whose key starts with prefix, in key
  // order, until fn returns false.
  Status Scan(Table t, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn);
  // The last record whose key is <= key and starts with prefix; NotFound if none.
  Status Floor(Table t, std::string_view key, std::string_view prefix, std::string_view* found_key,
               std::string_view* value);
  // Removes every record whose key starts with prefix.
  Status DeletePrefix(Table t, std::string_view prefix);
  // Records in t and the bytes of its pages (branch, leaf, overflow).
  Status Stat(Table t, uint64_t* entries, uint64_t* bytes);
  Status Commit();
  // LMDB's id of this transaction: a write transaction's is the last
  // committed one's + 1, so a writer can tell whether another committed since.
  uint64_t id() const { return mdb_txn_id(txn_); }

 private:
  friend class Store;
  Txn(MDB_txn* txn, Store* store, std::shared_lock<std::shared_timed_mutex> held);
  Status Check(int rc, std::string_view what);  // LmdbStatus, noting MDB_MAP_FULL in the Store
  std::shared_lock<std::shared_timed_mutex> held_;  // the Store's map does not change under this txn
  MDB_txn* txn_;
  Store* store_;
  const MDB_dbi* dbis_;
  const std::string* dir_;  // the Store's, for error messages
  // PutInOrder's; closed by LMDB with the transaction.
  MDB_cursor* put_cursor_ = nullptr;
  Table put_cursor_table_ = Table::kMeta;
};

class Store {
 public:
  // Opens (create: creating) the environment in directory dir for reading
  // and writing. With create, the tables are created and the first pages
  // made durable (mdb_env_sync) before it returns; the caller fsyncs dir's
  // parent so that dir itself is durable (see Root::Init).
  static Status Open(const std::string& dir, bool create, std::unique_ptr<Store>* out);
  // Opens an existing environment read-only (MDB_RDONLY): BeginWrite fails.
  // Works on a read-only file system (LMDB then runs without its lock file)
  // and for a user who may not write lock.mdb (then MDB_NOLOCK: no reader
  // slot, so pages a concurrent writer frees may be reused under the reader;
  // checksums above LMDB catch what that could tear).
  static Status OpenReadOnly(const std::string& dir, std::unique_ptr<Store>* out);
  ~Store();
  Store(const Store&) = delete;  // owns the LMDB environment
  Store& operator=(const Store&) = delete;

  Status BeginWrite(std::unique_ptr<Txn>* txn);
  Status BeginRead(std::unique_ptr<Txn>* txn);
  const std::string& dir() const { return dir_; }

  // Creates the tables a root made by an older build lacks. Open without
  // create leaves them absent (reads find nothing, writes fail), so readers
  // of such a root never write; a writer calls this once, holding LOCK.
  Status CreateMissingTables();

  // True when a write transaction of this Store met MDB_MAP_FULL since the
  // last growth. Then, with no Txn of this Store open in this thread, the
  // caller calls GrowAfterMapFull and redoes the transaction's work; it
  // fails when the map is as large as the address-space limit allows.
  bool map_full() const { return map_full_.load(); }
  // LMDB's consistent copy of the environment as of one read transaction,
  // compacted (mdb_env_copy2, MDB_CP_COMPACT): writes dir/data.mdb; dir must
  // exist and hold no data.mdb. Not synced: the caller copies it on.
  Status CopyCompact(const std::string& dir);
  Status GrowAfterMapFull();
  uint64_t map_bytes() const { return map_size_.load(); }

 private:
  friend class Txn;
  Store() = default;
  // Grows the map to at least `want` bytes (doubling), within max_map_;
  // blocking: waits (bounded) for this process's transactions to end.
  Status Grow(size_t want, bool wait);
  void MaybeGrowBeforeWrite();
  std::shared_timed_mutex map_mu_;
  std::atomic<uint64_t> map_size_{0};
  size_t max_map_ = 0;
  std::atomic<bool> map_full_{false};
  static Status OpenEnv(const std::string& dir, unsigned flags, bool create, std::unique_ptr<Store>* out);
  Status Begin(unsigned flags, std::unique_ptr<Txn>* txn);
  std::string dir_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbis_[kNumTables] = {};  // kAbsentTable: not in this environment (yet)
};

inline constexpr MDB_dbi kAbsentTable = ~MDB_dbi{0};

// Status for an LMDB return code; OK for MDB_SUCCESS. dir (may be empty)
// is named in the message of a full disk, a permission or a read-only
// file system.
Status LmdbStatus(int rc, std::string_view what, const std::string& dir = std::string());

}  // namespace snapsink
