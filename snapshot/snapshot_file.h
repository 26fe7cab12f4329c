// The immutable data file of one window snapshot (format: docs/FORMAT.md).
//
// A snapshot file holds the rows of one window, sorted by (metric, key) as
// byte strings, in zstd-compressed blocks of ~64 KiB (each ending in restart
// points for binary search and, since format 3, a hash index that names the
// restart interval of a key in two bytes a slot), then a bloom filter of
// every (metric, key), the
// per-metric stats that reconciliation compares, an index of the blocks and
// a fixed 64-byte footer. Every block, the filter, the stats, the index and
// the footer carry an xxh64 (XXH64, seed 0), so a flipped byte anywhere is
// reported as Status::Corruption naming the path and offset; a reader never
// returns a row whose numbers differ from what was written. A point lookup
// reads only the footer, the index, the filter and one block; only
// ReadStats reads the stats.
//
// The bytes depend only on the rows and the compression level: the same
// rows written twice give the same file (SPEC 4).
//
// SnapshotFileInfo::xxh64 is XXH64 (seed 0) of the ENTIRE file, footer
// included, so `verify` can recompute it without knowing the format; the
// snapshot manifest records it per file.
//
// The one header users include. The code is split as LevelDB's table/:
// snapshot_format.* (the layout both sides share: constants, row coding,
// restart points, hash index, stats), snapshot_filter.* (the bloom filter
// and the key hash), snapshot_writer.cc and snapshot_reader.cc.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/env.h"
#include "engine/status.h"
#include "snapsink/reader.h"

typedef struct ZSTD_CCtx_s ZSTD_CCtx;
typedef struct ZSTD_DCtx_s ZSTD_DCtx;
struct XXH64_state_s;

namespace snapsink {

struct CachedBlockSlot;  // snapshot/table_cache.h
class SnapshotCompressor;  // snapshot/snapshot_compressor.h

// A row as decoded in place: the views point into the reader's block buffer
// and are valid only during the callback that receives them.
struct RowView {
  std::string_view metric, key;
  int64_t count = 0, sum_micros = 0, events = 0;
  // A minmax metric's row (engine/metric_kinds.h): the least and greatest
  // value applied. Only files of version 4 hold one (extended rows).
  bool has_range = false;
  int64_t min_micros = 0, max_micros = 0;
  // A quantiles metric's row: its DDSketch (engine/ddsketch.h encoding), with
  // a range. Only files of version 5 hold one (sketch rows). A distinct
  // metric's: its HyperLogLog (engine/hyperloglog.h encoding; told apart by
  // engine/kind_sketch.h), with a range; only in files of version 6.
  std::string_view sketch = {};
};

// One aggregate of a window as a snapshot file holds it: the public row
// (metric, key, count, sum in micros, events, and a minmax or quantiles
// metric's range in min_micros/max_micros) and, for a quantiles metric, its
// DDSketch encoded, for a distinct metric its HyperLogLog ("" otherwise).
// quantile_micros and distinct are answers to a query, never stored: they
// stay empty here. A reader hands out the api::Row part.
struct Row : api::Row {
  std::string sketch = {};

  bool operator==(const Row&) const = default;
};

// A view of row (valid while row is).
inline RowView ViewOf(const Row& row) {
  return RowView{row.metric, row.key, row.count, row.sum_micros, row.events, row.min_micros.has_value(),
                 row.min_micros.value_or(0), row.max_micros.value_or(0), row.sketch};
}

// Totals of one metric's rows in a snapshot (the stats section). sum_micros
// wraps (two's complement) like the sums of the ledger it is compared with.
struct MetricStats {
  std::string metric;
  uint64_t rows = 0;
  int64_t events = 0;
  int64_t count = 0;
  int64_t sum_micros = 0;

  bool operator==(const MetricStats&) const = default;
};

struct SnapshotFileInfo {
  uint64_t bytes = 0;  // size of the whole file
  uint64_t xxh64 = 0;  // XXH64 (seed 0) of all `bytes` bytes of the file
  uint64_t rows = 0;
};

// Limits of the format (a longer metric or key is InvalidArgument).
inline constexpr size_t kSnapshotMaxFieldBytes = 1 << 20;
inline constexpr size_t kSnapshotBlockBytes = 64 << 10;  // default block target (uncompressed)
// Decompressed blocks that point lookups (Get) keep, all files of a process
// together (BlockCache, snapshot/table_cache.h).
inline constexpr size_t kBlockCacheBytes = size_t{64} << 20;
// A block records the offset of every kBlockRestartInterval-th row.
inline constexpr uint32_t kBlockRestartInterval = 16;
// Bloom filter bits per (metric, key); the filter probes 6 bits per key.
inline constexpr size_t kFilterBitsPerKey = 10;

// Both options decide the bytes: keep them fixed for a given snapshot.
struct SnapshotWriterOptions {
  int zstd_level = 3;
  // A block is cut once its uncompressed rows reach this size. 1..64 KiB;
  // smaller only for tests that want many blocks from few rows.
  size_t block_bytes = kSnapshotBlockBytes;
  // Each block ends in a hash index of its rows (docs/FORMAT.md). Off: no
  // lookup reads it any more (a block Get loads is cached with its own row
  // table, snapshot/cached_block.h), so it only cost the writer, the verify
  // pass and every block load time, and the data file 16% of its bytes.
  // On for tests of files that carry one; readers check it when present.
  bool block_hash_index = false;
  // Rows end in an extension (version 4 of the file): the writer of a root
  // with a metric of another kind than sum sets it, and only then may a row
  // carry a range (RowView::has_range). Off: version 3, the bytes as before.
  bool extended_rows = false;
  // Rows may carry a quantile sketch (RowView::sketch; version 5 of the
  // file): the writer of a root with a quantiles metric sets it with
  // extended_rows.
  bool sketch_rows = false;
  // Rows may carry a distinct-count sketch (a HyperLogLog in RowView::sketch;
  // version 6): the writer of a root with a distinct metric sets it.
  bool distinct_rows = false;
  // Blocks after the first are compressed on a second thread, and on the
  // caller's while it would wait for them, as the next ones are encoded
  // (snapshot/snapshot_compressor.h); the file's bytes are the same either
  // way. Off: every block inline, on the caller's thread.
  bool compress_ahead = true;
};

// Writes one snapshot file, streaming: it holds one block buffer and the
// index entries, never all rows. Not thread-safe. After any error the
// writer is dead: every later call returns that first error, and the file
// on disk is partial (the caller removes or rewrites it).
class SnapshotWriter {
 public:
  // Creates/truncates `path` through env. InvalidArgument for bad options.
  static Status Open(Env* env, const std::string& path, std::unique_ptr<SnapshotWriter>* out,
                     const SnapshotWriterOptions& options = SnapshotWriterOptions());
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // REQUIRES: rows arrive strictly ascending by (metric, key), compared as
  // byte strings, metric first; otherwise InvalidArgument (and the writer
  // is dead). Once the first block is full it is appended and Flush()ed,
  // and MaybeCrash("seal.mid_data") runs.
  Status Add(const Row& row);
  // The same from views (nothing is kept past the call): a caller that
  // has the bytes elsewhere need not copy them into a Row first.
  Status AddView(const RowView& row);

  // Writes the last block, the filter, the stats, the index and the footer,
  // Sync()s and closes the file, and fills *info. No Add or Finish after it.
  Status Finish(SnapshotFileInfo* info);
  // The same, except that the file is neither synced nor closed: it is
  // flushed and handed to the caller, who syncs it (batched with others)
  // before anything names it.
  Status FinishUnsynced(SnapshotFileInfo* info, std::unique_ptr<WritableFile>* file);

  // Stats of the rows added so far, by metric (what Finish writes).
  const std::vector<MetricStats>& stats() const { return stats_; }
  // Tests only: Finish writes these stats instead of the ones of the rows,
  // with valid checksums, so that reconciliation has something to catch.
  // Call it after the last Add.
  void OverrideStatsForTesting(std::vector<MetricStats> stats) { stats_ = std::move(stats); }
  // Tests only: byte `at` of the hash index of every block written from now
  // on is XORed with 0x01 before compression (with a valid checksum), so
  // that the reader's check of the index against the rows has something to
  // catch. Ignored for a block whose index is shorter.
  void FlipHashIndexByteForTesting(size_t at) { flip_hash_index_byte_ = at; }

 private:
  struct IndexEntry;
  SnapshotWriter(std::string path, std::unique_ptr<WritableFile> file, const SnapshotWriterOptions& options);
  Status Fail(Status s);
  Status AppendToFile(std::string_view data);
  Status FlushBlock();
  // Appends the oldest block the compressor holds, if any, and fills its
  // entry; TakeAllCompressed appends every one it holds.
  Status TakeCompressed();
  Status TakeAllCompressed();
  Status WriteTail(SnapshotFileInfo* info);

  const std::string path_;
  std::unique_ptr<WritableFile> file_;
  const SnapshotWriterOptions options_;
  ZSTD_CCtx* cctx_ = nullptr;
  XXH64_state_s* file_hash_ = nullptr;  // running XXH64 over every byte written
  Status error_;                        // first error; sticks
  bool finished_ = false;
  uint64_t offset_ = 0;  // bytes appended so far
  uint64_t rows_ = 0;
  std::string block_;       // uncompressed rows of the current block
  uint32_t block_rows_ = 0;
  std::vector<uint32_t> restarts_;      // of the current block
  std::vector<uint64_t> key_hashes_;    // FilterHash of every row, for the filter
  std::vector<MetricStats> stats_;     // the last one is the current row's metric
  uint64_t metric_seed_ = 0;           // XXH64 of stats_.back().metric: the seed of its rows' hashes
  std::string compressed_;  // reused output buffer of zstd
  // The key of the last row added: at last_key_at_ in block_ while the
  // block has rows, else in last_key_ (copied when the block was cut).
  size_t last_key_at_ = 0, last_key_size_ = 0;
  std::string last_key_;
  std::vector<IndexEntry> index_;
  size_t flip_hash_index_byte_ = SIZE_MAX;
  std::unique_ptr<SnapshotCompressor> compressor_;  // blocks after the first, on both threads
  size_t pending_entry_ = 0;                        // index_ entry of the oldest block it holds
};

// The hash of (metric, key) that the filter and the blocks' hash indexes
// use (docs/FORMAT.md): XXH64 of the key seeded with XXH64 of the metric.
uint64_t SnapshotKeyHash(std::string_view metric, std::string_view key);

// Reads one snapshot file. Open checks the footer, the index and the filter
// (it reads those three); each block is checked (xxh64 of its compressed
// bytes, exact decoded size and row count, sorted rows, first row equal to
// the index, restart points on row boundaries) when it is read.
// Thread-safe: Get shares one decompression context under a mutex and keeps
// the blocks it has checked in the process's BlockCache, which publishes
// each through a slot of this reader indexed by block number (a hit reads
// the slot, not the cache); Scan and VerifyAll use their own. `fn`
// of Scan may call back into the reader.
class SnapshotReader {
  // Decompression scratch reused across the blocks of one call.
  struct Scratch;

 public:
  static Status Open(Env* env, const std::string& path, std::unique_ptr<SnapshotReader>* out);
  ~SnapshotReader();
  SnapshotReader(const SnapshotReader&) = delete;
  SnapshotReader& operator=(const SnapshotReader&) = delete;

  uint64_t rows() const { return rows_; }
  // The file's rows end in an extension (version 4): a metric of another
  // kind than sum may hold a range.
  bool extended_rows() const;
  // Rows may carry a quantile sketch (version 5).
  bool sketch_rows() const;
  // Rows may carry a distinct-count sketch (version 6).
  bool distinct_rows() const;
  const std::string& path() const { return path_; }

  // The index, for inspection and tests. REQUIRES: i < blocks().
  struct BlockInfo {
    uint64_t offset = 0;
    uint32_t csize = 0, usize = 0, rows = 0;
    std::string_view first_metric, first_key;  // valid as long as the reader
  };
  size_t blocks() const { return index_.size(); }
  BlockInfo block(size_t i) const {
    const IndexEntry& e = index_[i];
    return {e.offset, e.csize, e.usize, e.rows, e.first_metric, e.first_key};
  }

  // Point lookup: the filter first (most absent keys stop there), then a
  // binary search over the block first keys, then the hash index (or, in a
  // block without one, a binary search over the restart points) of at most
  // one block, which is read, checked whole and cached once.
  // NotFound if absent; Corruption if that block is bad.
  Status Get(std::string_view metric, std::string_view key, Row* row) const;

  // False only if (metric, key) is certainly not in the file.
  bool FilterMayMatch(std::string_view metric, std::string_view key) const;

  // Reads and checks the stats section (its xxh64, sorted unique metrics,
  // rows adding up to the footer's). Only reconciliation and verify need it.
  Status ReadStats(std::vector<MetricStats>* out) const;

  // Calls fn for every row in order; if metric is non-null only for rows of
  // that metric, starting at the first block that can hold it. Stops at the
  // first bad block with Corruption (fn has then seen only good rows).
  Status Scan(const std::string* metric, const std::function<void(const Row&)>& fn) const;

  // The rows of block i (< blocks()), read and checked, in order: a caller
  // that merges files holds one block of each.
  Status ReadBlockRows(size_t i, std::vector<Row>* rows) const;

  // A range scan: what fn answers for each row, in order, from the first
  // row >= (metric, key) (a binary search over the block index, then over
  // the block's rows): go on, stop, or skip ahead to the first row >= *to,
  // which must be after the row (a later block is found through the index
  // again, not read through). Reads only the blocks it visits.
  enum class ScanNext { kNext, kStop, kSeek };
  struct SeekTo {
    std::string metric, key;
  };
  Status ScanFrom(std::string_view metric, std::string_view key,
                  const std::function<ScanNext(const RowView&, SeekTo* to)>& fn) const;
  // A scan made in several goes keeps its place here between them: the row
  // fn answered kStop for (in block `block`, at `offset` of its rows, row
  // `row` of it), or `end` when no row is left. A ScanFrom given a set
  // position starts at that row (metric and key are not searched): its
  // block is read and checked again, but no row before it is decoded again.
  struct ScanPosition {
    bool set = false, end = false;
    size_t block = 0;
    uint32_t offset = 0, row = 0;
    std::string prev_metric, prev_key;  // the row before it in its block (row > 0), whose order is checked
  };
  // Decompression buffers that a caller scanning in many goes (of any
  // files, one at a time) keeps, so that each go does not make them again;
  // a go that starts in the block the last one ended in does not read it
  // again.
  class ScanBuffers {
   public:
    ScanBuffers();
    ~ScanBuffers();
    ScanBuffers(const ScanBuffers&) = delete;
    ScanBuffers& operator=(const ScanBuffers&) = delete;

   private:
    friend class SnapshotReader;
    std::unique_ptr<Scratch> scratch_;
    uint64_t reader_ = 0;  // the cache_id_ of the reader whose block `block_` scratch_ holds decompressed (0: none)
    size_t block_ = 0;
  };
  // ScanFrom from *pos when it is set, recording where it stops in *pos;
  // buffers may be null.
  Status ScanFrom(std::string_view metric, std::string_view key,
                  const std::function<ScanNext(const RowView&, SeekTo* to)>& fn, ScanPosition* pos,
                  ScanBuffers* buffers) const;

  // Full check: XXH64 of the whole file (equal to expected_xxh64 unless that
  // is 0), the footer's prefix checksum, every block's checksum and decoding,
  // rows strictly sorted across blocks, the row count of the footer, and
  // that the filter matches every row.
  // One read of the file: each block is hashed into the whole file's XXH64
  // as it is loaded; the file's checksums are reported before a block's
  // error. With visit: also calls visit(row) for every row, in order, as
  // the blocks are checked, so a caller can reconcile the rows in the same
  // pass; the rows visited count only if VerifyAll then returns OK.
  Status VerifyAll(uint64_t expected_xxh64) const { return VerifyParts(expected_xxh64, 1, nullptr); }
  Status VerifyAll(uint64_t expected_xxh64, const std::function<void(const RowView&)>* visit) const {
    return VerifyParts(expected_xxh64, 1, visit == nullptr ? nullptr : &visit);
  }
  // The same check with the blocks split in visits.size() runs of
  // consecutive blocks, checked at once, the first on the caller's thread
  // and each other on a thread of its own: visits[p] sees the rows of run
  // p, in order, on run p's thread (a caller keeps a tally per run and adds
  // them up). A run holds 8 blocks or more: a smaller file has fewer runs
  // (the visitors past them see no rows). The result, and the error
  // reported on damage, are those of VerifyAll. REQUIRES: !visits.empty().
  Status VerifyAllInParts(uint64_t expected_xxh64, const std::vector<std::function<void(const RowView&)>>& visits) const;

 private:
  struct IndexEntry {
    uint64_t offset = 0;
    uint32_t csize = 0, usize = 0, rows = 0;
    uint64_t xxh64 = 0;
    std::string_view first_metric, first_key;  // into index_bytes_
  };
  // Where a section (filter, stats) lies, from the index header.
  struct Section {
    uint64_t offset = 0, size = 0, xxh64 = 0;
  };

  SnapshotReader(std::string path, std::unique_ptr<RandomAccessFile> file);
  Status ParseFooterAndIndex();
  Status Corrupt(uint64_t offset, std::string_view what) const;
  // Reads, checks and decompresses block i into scratch->plain.
  Status LoadBlock(size_t i, Scratch* scratch) const;
  // VerifyAll in `parts` runs of blocks; visits (null: none) holds one
  // visitor per run, each of which may be null.
  Status VerifyParts(uint64_t expected_xxh64, size_t parts,
                     const std::function<void(const RowView&)>* const* visits) const;
  // What VerifyBlocks saw of its run of blocks.
  struct VerifiedRun;
  // Every check of VerifyAll on blocks [begin, end) but the order against
  // the block before begin, visiting their rows.
  Status VerifyBlocks(size_t begin, size_t end, Scratch* scratch, const std::function<void(const RowView&)>* visit,
                      VerifiedRun* out) const;
  // Decodes the rows of a loaded block i, calling fn(row view) for each; fn
  // returns false to stop early. Checks order, count and first key.
  template <typename Fn>
  Status DecodeBlock(size_t i, std::string_view plain, Fn&& fn) const;
  // The same from *at (its offset, row and the row before it) when at->set;
  // when fn stops, *at becomes the row it stopped at.
  template <typename Fn>
  Status DecodeBlock(size_t i, std::string_view plain, ScanPosition* at, Fn&& fn) const;
  // Index of the last block whose first (metric, key) <= (metric, key), or
  // blocks() when every block starts after it.
  size_t FindBlock(std::string_view metric, std::string_view key) const;
  // Fills runs_ and key_abbrev_ from index_.
  void BuildBlockSearch();
  // Reads section s and checks its checksum.
  Status ReadSection(const Section& s, std::string_view name, std::string* out) const;
  // Checks that the hash index of block i (if it has one) is the one its
  // rows, with filter hashes `hashes`, give. `scratch` is a buffer.
  Status CheckHashIndex(size_t i, std::string_view plain, const std::vector<uint64_t>& hashes,
                        std::string* scratch) const;

  const std::string path_;
  std::unique_ptr<RandomAccessFile> file_;
  uint64_t size_ = 0;
  uint64_t rows_ = 0;
  uint32_t version_ = 0;  // of the file's format (footer)
  uint64_t index_offset_ = 0;
  uint64_t prefix_xxh64_ = 0;  // footer: XXH64 of the bytes before the footer
  std::string index_bytes_;  // the index section, checked
  std::vector<IndexEntry> index_;
  // Blocks [first, end) start with rows of `metric`; their first keys share
  // their first `skip` bytes. key_abbrev_[i]: 8 bytes of block i's first
  // key after its run's skip, big-endian (FindBlock searches these).
  struct MetricRun {
    std::string_view metric;
    size_t first = 0, end = 0, skip = 0;
  };
  std::vector<MetricRun> runs_;
  std::vector<uint64_t> key_abbrev_;
  Section filter_section_, stats_section_;
  std::string filter_;  // the filter's bytes, checked

  mutable std::mutex get_mu_;
  std::unique_ptr<Scratch> get_scratch_;  // guarded by get_mu_
  // Names this reader's blocks in the process's BlockCache, where Get keeps
  // the blocks it has read and checked whole.
  uint64_t cache_id_ = 0;
  // Block i's slot: set by the cache while it holds the block.
  mutable std::shared_mutex blocks_mu_;
  std::unique_ptr<CachedBlockSlot[]> slots_;
};

}  // namespace snapsink
