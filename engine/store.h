// Store: a thin RAII wrapper over one LMDB environment and its named tables.
//
// One Store per environment per process (LMDB forbids opening the same
// environment twice in a process). A Store is thread-safe; a Txn is not.
// Readers never block the writer (MVCC); LMDB itself serialises writers
// across processes, and snapsink's LOCK keeps to one writing process anyway.
#pragma once

#include <lmdb.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace snapsink {

enum class Table {
  kMeta,         // settings and counters: see engine/root.h
  kProducers,    // producer id -> ProducerState
  kSources,      // source name -> SourceState
  kRejectFiles,  // rejects file name -> committed length (u64)
  kAggs,         // window|metric|key -> Aggregate
  kLedger,       // window|metric -> Aggregate (the "records in")
  kWindows,      // window -> WindowState
  kSeals,        // window|version -> SealRecord
  // Id dedup and producer retention (engine/id_dedup.h, engine/producer_retention.h).
  kIds,           // id key (16) -> event time of its first delivery (u64)
  kIdExpiry,      // event time (8, ordered) | id key -> "": ids in expiry order
  kProducerSeen,  // producer id -> last seen event time (u64)
  kProducerIdle,  // last seen (8, ordered) | producer id -> "": producers in idle order
  kRetired,       // producer id -> tombstone: epoch (u32) | last seen (u64)
  kSourceIds,     // SourceIdsKey(source) -> id-dedup and retirement counts (engine/id_dedup.h)
};
inline constexpr int kNumTables = 14;

class Txn {
 public:
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  // NotFound if absent. *value stays valid until the next write or the end of the txn.
  Status Get(Table t, std::string_view key, std::string_view* value);
  Status Put(Table t, std::string_view key, std::string_view value);
  Status Del(Table t, std::string_view key);  // OK if absent
  // Calls fn(key, value) for every record whose key starts with prefix, in key
  // order, until fn returns false.
  Status Scan(Table t, std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn);
  // Removes every record whose key starts with prefix.
  Status DeletePrefix(Table t, std::string_view prefix);
  // Records in t and the bytes of its pages (branch, leaf, overflow).
  Status Stat(Table t, uint64_t* entries, uint64_t* bytes);
  Status Commit();

 private:
  friend class Store;
  Txn(MDB_txn* txn, const MDB_dbi* dbis) : txn_(txn), dbis_(dbis) {}
  MDB_txn* txn_;
  const MDB_dbi* dbis_;
};

class Store {
 public:
  // Opens (create: creating) the environment in directory dir.
  static Status Open(const std::string& dir, bool create, std::unique_ptr<Store>* out);
  ~Store();

  Status BeginWrite(std::unique_ptr<Txn>* txn);
  Status BeginRead(std::unique_ptr<Txn>* txn);
  const std::string& dir() const { return dir_; }

  // Creates the tables a root made by an older build lacks. Open without
  // create leaves them absent (reads find nothing, writes fail), so readers
  // of such a root never write; a writer calls this once, holding LOCK.
  Status CreateMissingTables();

 private:
  Store() = default;
  Status Begin(unsigned flags, std::unique_ptr<Txn>* txn);
  std::string dir_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbis_[kNumTables] = {};  // kAbsentTable: not in this environment (yet)
};

inline constexpr MDB_dbi kAbsentTable = ~MDB_dbi{0};

// Status for an LMDB return code; OK for MDB_SUCCESS.
Status LmdbStatus(int rc, std::string_view what);

}  // namespace snapsink
