#include "bench/baselines.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "engine/coding.h"
#include "engine/event_parser.h"
#include "engine/timeutil.h"

namespace snapsink::bench {

namespace {

// Folds every field of ev into a running checksum (so nothing is optimised away).
inline uint64_t Touch(const Event& ev) {
  auto str = [](std::string_view s) -> uint64_t {
    return s.size() + (s.empty() ? 0 : static_cast<uint8_t>(s.front()) + static_cast<uint8_t>(s.back()));
  };
  return str(ev.producer) + ev.epoch + ev.seq + static_cast<uint64_t>(ev.ts_ms) + str(ev.metric) + str(ev.key) +
         static_cast<uint64_t>(ev.value_micros) + ev.retract;
}

using coding::PutBigEndian;

}  // namespace

PassResult ParseLimit(const std::string& path) {
  PassResult r;
  EventParser parser;
  Event ev;
  std::string reason;
  NdjsonBlockReader reader(path);
  NdjsonBlockReader::Line line;
  while (reader.Next(&line)) {
    ++r.lines;
    r.bytes = line.end_offset;
    if (parser.Parse(line.data, line.size, line.capacity, &ev, &reason)) {
      ++r.applied;
      r.checksum += Touch(ev);
    } else {
      ++r.rejected;
    }
  }
  return r;
}

// ---------------------------------------------------------------- SQLite

SqliteLedger::SqliteLedger(const std::string& dir) : path_(dir + "/ledger.sqlite") {
  if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) Die("sqlite open " + path_ + ": " + sqlite3_errmsg(db_));
  Exec("PRAGMA journal_mode=WAL");
  Exec("PRAGMA synchronous=NORMAL");
  Exec("PRAGMA cache_size=-65536");  // KiB: 64 MiB
  Exec("CREATE TABLE IF NOT EXISTS ledger(producer TEXT NOT NULL, epoch INTEGER NOT NULL, seq INTEGER NOT NULL, "
       "PRIMARY KEY(producer, epoch, seq)) WITHOUT ROWID");
  Exec("CREATE TABLE IF NOT EXISTS aggs(\"window\" INTEGER NOT NULL, metric TEXT NOT NULL, key TEXT NOT NULL, "
       "count INTEGER NOT NULL, sum INTEGER NOT NULL, PRIMARY KEY(\"window\", metric, key)) WITHOUT ROWID");
  Exec("CREATE TABLE IF NOT EXISTS offsets(source TEXT PRIMARY KEY, \"offset\" INTEGER NOT NULL) WITHOUT ROWID");
  ledger_insert_ = Prepare("INSERT OR IGNORE INTO ledger(producer, epoch, seq) VALUES(?1, ?2, ?3)");
  agg_upsert_ = Prepare(
      "INSERT INTO aggs(\"window\", metric, key, count, sum) VALUES(?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT(\"window\", metric, key) DO UPDATE SET count = count + excluded.count, sum = sum + excluded.sum");
  offset_upsert_ = Prepare(
      "INSERT INTO offsets(source, \"offset\") VALUES(?1, ?2) "
      "ON CONFLICT(source) DO UPDATE SET \"offset\" = excluded.\"offset\"");
  begin_ = Prepare("BEGIN");
  commit_ = Prepare("COMMIT");
}

SqliteLedger::~SqliteLedger() {
  for (sqlite3_stmt* s : {ledger_insert_, agg_upsert_, offset_upsert_, begin_, commit_}) sqlite3_finalize(s);
  sqlite3_close(db_);
}

void SqliteLedger::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    Die(std::string("sqlite: ") + sql + ": " + msg);
  }
}

sqlite3_stmt* SqliteLedger::Prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    Die(std::string("sqlite prepare: ") + sql + ": " + sqlite3_errmsg(db_));
  }
  return stmt;
}

void SqliteLedger::Step(sqlite3_stmt* stmt, const char* what) {
  if (sqlite3_step(stmt) != SQLITE_DONE) Die(std::string("sqlite ") + what + ": " + sqlite3_errmsg(db_));
  sqlite3_reset(stmt);
}

PassResult SqliteLedger::Ingest(const LedgerRun& run) {
  PassResult r;
  EventParser parser;
  Event ev;
  std::string reason;
  NdjsonBlockReader reader(run.input);
  NdjsonBlockReader::Line line;
  uint64_t in_batch = 0;
  Step(begin_, "begin");
  while ((run.max_lines == 0 || r.lines < run.max_lines) && reader.Next(&line)) {
    ++r.lines;
    r.bytes = line.end_offset;
    if (!parser.Parse(line.data, line.size, line.capacity, &ev, &reason)) {
      ++r.rejected;
    } else {
      sqlite3_bind_text(ledger_insert_, 1, ev.producer.data(), static_cast<int>(ev.producer.size()), SQLITE_STATIC);
      sqlite3_bind_int64(ledger_insert_, 2, ev.epoch);
      sqlite3_bind_int64(ledger_insert_, 3, static_cast<sqlite3_int64>(ev.seq));
      Step(ledger_insert_, "ledger insert");
      if (sqlite3_changes(db_) == 0) {
        ++r.duplicates;
      } else {
        ++r.applied;
        r.checksum += Touch(ev);
        sqlite3_bind_int64(agg_upsert_, 1, WindowStart(ev.ts_ms, run.window_ms));
        sqlite3_bind_text(agg_upsert_, 2, ev.metric.data(), static_cast<int>(ev.metric.size()), SQLITE_STATIC);
        sqlite3_bind_text(agg_upsert_, 3, ev.key.data(), static_cast<int>(ev.key.size()), SQLITE_STATIC);
        sqlite3_bind_int64(agg_upsert_, 4, ev.retract ? -1 : 1);
        sqlite3_bind_int64(agg_upsert_, 5, ev.retract ? -ev.value_micros : ev.value_micros);
        Step(agg_upsert_, "agg upsert");
      }
    }
    if (++in_batch == run.commit_every) {
      sqlite3_bind_text(offset_upsert_, 1, run.source.data(), static_cast<int>(run.source.size()), SQLITE_STATIC);
      sqlite3_bind_int64(offset_upsert_, 2, static_cast<sqlite3_int64>(line.end_offset));
      Step(offset_upsert_, "offset upsert");
      Step(commit_, "commit");
      Step(begin_, "begin");
      in_batch = 0;
    }
  }
  if (in_batch > 0) {
    sqlite3_bind_text(offset_upsert_, 1, run.source.data(), static_cast<int>(run.source.size()), SQLITE_STATIC);
    sqlite3_bind_int64(offset_upsert_, 2, static_cast<sqlite3_int64>(r.bytes));
    Step(offset_upsert_, "offset upsert");
  }
  Step(commit_, "commit");
  return r;
}

uint64_t SqliteLedger::DiskBytes() const { return FileSize(path_) + FileSize(path_ + "-wal"); }

// ---------------------------------------------------------------- LMDB

namespace {
void Lmdb(int rc, const char* what) {
  if (rc != MDB_SUCCESS) Die(std::string("lmdb ledger ") + what + ": " + mdb_strerror(rc));
}
MDB_val Val(const std::string& s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
}  // namespace

LmdbLedger::LmdbLedger(const std::string& dir) : dir_(dir) {
  Lmdb(mdb_env_create(&env_), "env_create");
  Lmdb(mdb_env_set_maxdbs(env_, 4), "set_maxdbs");
  Lmdb(mdb_env_set_mapsize(env_, size_t{1} << 38), "set_mapsize");
  Lmdb(mdb_env_open(env_, dir.c_str(), MDB_NOTLS, 0644), "open");
  MDB_txn* txn;
  Lmdb(mdb_txn_begin(env_, nullptr, 0, &txn), "begin");
  Lmdb(mdb_dbi_open(txn, "ledger", MDB_CREATE, &ledger_), "open ledger");
  Lmdb(mdb_dbi_open(txn, "aggs", MDB_CREATE, &aggs_), "open aggs");
  Lmdb(mdb_dbi_open(txn, "offsets", MDB_CREATE, &offsets_), "open offsets");
  Lmdb(mdb_txn_commit(txn), "commit");
}

LmdbLedger::~LmdbLedger() { mdb_env_close(env_); }

PassResult LmdbLedger::Ingest(const LedgerRun& run) {
  PassResult r;
  EventParser parser;
  Event ev;
  std::string reason;
  NdjsonBlockReader reader(run.input);
  NdjsonBlockReader::Line line;
  std::string key, agg_key;
  MDB_txn* txn;
  Lmdb(mdb_txn_begin(env_, nullptr, 0, &txn), "begin");
  uint64_t in_batch = 0;
  auto put_offset = [&](uint64_t offset) {
    std::string v(reinterpret_cast<const char*>(&offset), sizeof offset);
    MDB_val k = Val(run.source), val = Val(v);
    Lmdb(mdb_put(txn, offsets_, &k, &val, 0), "put offset");
  };
  while ((run.max_lines == 0 || r.lines < run.max_lines) && reader.Next(&line)) {
    ++r.lines;
    r.bytes = line.end_offset;
    if (!parser.Parse(line.data, line.size, line.capacity, &ev, &reason)) {
      ++r.rejected;
    } else {
      key.assign(ev.producer);
      key.push_back('\0');
      PutBigEndian(&key, ev.epoch, 4);
      PutBigEndian(&key, ev.seq, 8);
      MDB_val k = Val(key), empty{0, nullptr};
      const int rc = mdb_put(txn, ledger_, &k, &empty, MDB_NOOVERWRITE);
      if (rc == MDB_KEYEXIST) {
        ++r.duplicates;
      } else {
        Lmdb(rc, "put ledger");
        ++r.applied;
        r.checksum += Touch(ev);
        agg_key.clear();
        PutBigEndian(&agg_key, static_cast<uint64_t>(WindowStart(ev.ts_ms, run.window_ms)) ^ (uint64_t{1} << 63), 8);
        agg_key.append(ev.metric);
        agg_key.push_back('\0');
        agg_key.append(ev.key);
        int64_t agg[2] = {0, 0};  // count, sum_micros
        MDB_val ak = Val(agg_key), av;
        const int g = mdb_get(txn, aggs_, &ak, &av);
        if (g == MDB_SUCCESS && av.mv_size == sizeof agg) {
          std::memcpy(agg, av.mv_data, sizeof agg);
        } else if (g != MDB_NOTFOUND) {
          Lmdb(g, "get agg");
        }
        agg[0] += ev.retract ? -1 : 1;
        agg[1] += ev.retract ? -ev.value_micros : ev.value_micros;
        MDB_val nv{sizeof agg, agg};
        Lmdb(mdb_put(txn, aggs_, &ak, &nv, 0), "put agg");
      }
    }
    if (++in_batch == run.commit_every) {
      put_offset(line.end_offset);
      Lmdb(mdb_txn_commit(txn), "commit");
      Lmdb(mdb_txn_begin(env_, nullptr, 0, &txn), "begin");
      in_batch = 0;
    }
  }
  if (in_batch > 0) put_offset(r.bytes);
  Lmdb(mdb_txn_commit(txn), "commit");
  return r;
}

LmdbSpace LmdbLedger::Space() const { return MeasureLmdbEnv(env_, dir_); }

// ---------------------------------------------------------------- zstd + write

namespace {

using coding::EncodeVarint64;
using coding::ZigZag;

void WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

ZstdWriteResult ZstdWriteRows(const std::vector<Row>& rows, const std::string& path, int level, size_t block_bytes) {
  ZstdWriteResult r;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("create " + path + ": " + std::strerror(errno));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::string block, compressed, out;
  block.reserve(block_bytes + 1024);
  out.reserve(1 << 20);
  auto flush_block = [&] {
    if (block.empty()) return;
    compressed.resize(ZSTD_compressBound(block.size()));
    const size_t n = ZSTD_compressCCtx(cctx, compressed.data(), compressed.size(), block.data(), block.size(), level);
    if (ZSTD_isError(n)) Die(std::string("zstd: ") + ZSTD_getErrorName(n));
    r.raw_bytes += block.size();
    out.append(compressed.data(), n);
    block.clear();
    if (out.size() >= (1 << 20)) {
      WriteAll(fd, out, path);
      r.file_bytes += out.size();
      out.clear();
    }
  };
  for (const Row& row : rows) {
    const size_t at = block.size();
    block.resize(at + row.metric.size() + row.key.size() + 50);
    char* p = block.data() + at;
    p = EncodeVarint64(p, row.metric.size());
    std::memcpy(p, row.metric.data(), row.metric.size());
    p = EncodeVarint64(p + row.metric.size(), row.key.size());
    std::memcpy(p, row.key.data(), row.key.size());
    p = EncodeVarint64(p + row.key.size(), ZigZag(row.count));
    p = EncodeVarint64(p, ZigZag(row.events));
    p = EncodeVarint64(p, ZigZag(row.sum_micros));
    block.resize(static_cast<size_t>(p - block.data()));
    if (block.size() >= block_bytes) flush_block();
  }
  flush_block();
  WriteAll(fd, out, path);
  r.file_bytes += out.size();
  if (::fdatasync(fd) != 0) Die("fdatasync " + path + ": " + std::strerror(errno));
  if (::close(fd) != 0) Die("close " + path + ": " + std::strerror(errno));
  ZSTD_freeCCtx(cctx);
  return r;
}

}  // namespace snapsink::bench
