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
};
inline constexpr int kNumTables = 8;

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
  Store(const Store&) = delete;  // owns the LMDB environment
  Store& operator=(const Store&) = delete;

  Status BeginWrite(std::unique_ptr<Txn>* txn);
  Status BeginRead(std::unique_ptr<Txn>* txn);
  const std::string& dir() const { return dir_; }

 private:
  Store() = default;
  Status Begin(unsigned flags, std::unique_ptr<Txn>* txn);
  std::string dir_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbis_[kNumTables] = {};
};

// Status for an LMDB return code; OK for MDB_SUCCESS.
Status LmdbStatus(int rc, std::string_view what);

}  // namespace snapsink
