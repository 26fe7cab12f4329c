// What snapsink is measured against, in the same process on the same input
// (LevelDB's db_bench_sqlite3 idea):
//
//   ParseLimit     read + split + EventParser::Parse of every line, nothing
//                  stored: the ceiling for any ingest built on this parser.
//   SqliteLedger   the textbook exactly-once sink: a ledger row per event
//                  (INSERT OR IGNORE) plus an aggregate upsert, WAL mode.
//   LmdbLedger     the same design on LMDB, snapsink's own storage engine.
//   ZstdWriteRows  the floor of publishing: the rows encoded as the snapshot
//                  format does, zstd-compressed in 64 KiB blocks, written and
//                  fdatasync'ed; no checksums, no manifest, no reconcile.
//
// Every baseline parses with the engine's EventParser and reads its input
// with NdjsonBlockReader, and all of them commit every 10000 lines together
// with the input offset, as snapsink does.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "snapshot/snapshot_file.h"

struct sqlite3;
struct sqlite3_stmt;

namespace snapsink::bench {

// What a pass over an input saw.
struct PassResult {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  uint64_t applied = 0;     // new events (ledgers); parsed lines (ParseLimit)
  uint64_t duplicates = 0;  // ledger hits
  uint64_t rejected = 0;    // lines the parser refused
  uint64_t checksum = 0;    // keeps the compiler from dropping the work
};

PassResult ParseLimit(const std::string& path);

struct LedgerRun {
  std::string input;
  std::string source;         // the offset record's key
  uint64_t max_lines = 0;     // stop after this many lines (0: the whole file)
  uint64_t commit_every = 10000;
  int64_t window_ms = 3600 * 1000;
};

// A ledger database in dir/ledger.sqlite: PRAGMA journal_mode=WAL,
// synchronous=NORMAL (in WAL mode a commit is not fsynced, only checkpoints
// are: weaker durability than snapsink's fsync per commit), cache_size 64 MiB,
// WITHOUT ROWID tables, prepared statements, one transaction per batch.
class SqliteLedger {
 public:
  explicit SqliteLedger(const std::string& dir);
  ~SqliteLedger();
  SqliteLedger(const SqliteLedger&) = delete;
  SqliteLedger& operator=(const SqliteLedger&) = delete;

  PassResult Ingest(const LedgerRun& run);
  // st_size of the database file plus its -wal file.
  uint64_t DiskBytes() const;

 private:
  void Exec(const char* sql);
  sqlite3_stmt* Prepare(const char* sql);
  void Step(sqlite3_stmt* stmt, const char* what);

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* ledger_insert_ = nullptr;
  sqlite3_stmt* agg_upsert_ = nullptr;
  sqlite3_stmt* offset_upsert_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
};

// A ledger in its own LMDB environment in dir (default flags: every commit is
// fsynced, as snapsink's). Tables: ledger (producer \0 epoch BE32 seq BE64 ->
// empty, put with MDB_NOOVERWRITE), aggs (window BE64 metric \0 key ->
// count, sum as 2 x int64), offsets (source -> u64).
class LmdbLedger {
 public:
  explicit LmdbLedger(const std::string& dir);
  ~LmdbLedger();
  LmdbLedger(const LmdbLedger&) = delete;
  LmdbLedger& operator=(const LmdbLedger&) = delete;

  PassResult Ingest(const LedgerRun& run);
  LmdbSpace Space() const;

 private:
  std::string dir_;
  MDB_env* env_ = nullptr;
  MDB_dbi ledger_ = 0, aggs_ = 0, offsets_ = 0;
};

struct ZstdWriteResult {
  uint64_t raw_bytes = 0;   // encoded rows before compression
  uint64_t file_bytes = 0;  // written
};

// Encodes rows (the snapshot's row encoding, docs/FORMAT.md), cuts blocks at
// block_bytes, ZSTD_compressCCtx each at level, writes them to path and
// fdatasyncs it.
ZstdWriteResult ZstdWriteRows(const std::vector<Row>& rows, const std::string& path, int level,
                              size_t block_bytes = kSnapshotBlockBytes);

}  // namespace snapsink::bench
