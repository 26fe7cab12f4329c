// SnapshotReader (snapshot/snapshot_file.h): the footer, index and filter at
// Open; blocks checked whole as they are read (docs/FORMAT.md).
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "engine/coding.h"
#include "engine/kind_sketch.h"
#include "snapshot/cached_block.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_filter.h"
#include "snapshot/snapshot_format.h"
#include "snapshot/table_cache.h"

namespace snapsink {

using coding::DecodeFixed64;
using coding::UnZigZag;
using snapshot::AppendHashIndex;
using snapshot::BlockParts;
using snapshot::CompareKeys;
using snapshot::DecodeFixed32;
using snapshot::FilterHash;
using snapshot::FilterLine;
using snapshot::FilterMatches;
using snapshot::FilterMatchesAll;
using snapshot::FindCachedRow;
using snapshot::GetIndexEntry;
using snapshot::GetLengthPrefixed;
using snapshot::GetRow;
using snapshot::GetVarint64;
using snapshot::Hash;
using snapshot::IndexEntryView;
using snapshot::kFilterLineBytes;
using snapshot::kFooterSize;
using snapshot::kFileFormatVersion;
using snapshot::kHashSlotBytes;
using snapshot::kIndexEntryFixed;
using snapshot::kIndexHeaderSize;
using snapshot::kMagic;
using snapshot::kMaxBlockBytes;
using snapshot::kMinFileBytes;
using snapshot::kOldestFormatVersion;
using snapshot::MakeCachedBlock;
using snapshot::RowHasher;
using snapshot::SplitBlock;
using snapshot::ToRow;

struct SnapshotReader::Scratch {
  Scratch() : dctx(ZSTD_createDCtx()) {}
  ~Scratch() { ZSTD_freeDCtx(dctx); }
  Scratch(const Scratch&) = delete;  // owns the zstd context
  Scratch& operator=(const Scratch&) = delete;
  ZSTD_DCtx* dctx;
  std::string compressed;
  std::string plain;
  std::vector<uint64_t> hashes;  // of the rows of `plain`, to check its hash index
  std::string table;             // the hash index rebuilt from them
  // VerifyAll only: the running XXH64 of the whole file, which LoadBlock
  // feeds each block's bytes as it reads them, and where they end.
  XXH64_state_t* file_hash = nullptr;
  uint64_t hashed_end = 0;
};

SnapshotReader::SnapshotReader(std::string path, std::unique_ptr<RandomAccessFile> file)
    : path_(std::move(path)), file_(std::move(file)), get_scratch_(new Scratch),
      cache_id_(BlockCache::Default()->NewId()) {}

// The cache clears the slots of the blocks it drops, under blocks_mu_.
SnapshotReader::~SnapshotReader() { BlockCache::Default()->Erase(cache_id_, index_.size()); }

Status SnapshotReader::Corrupt(uint64_t offset, std::string_view what) const {
  return Status::Corruption(fmt::format("snapshot {}: offset {}: {}", path_, offset, what));
}

Status SnapshotReader::Open(Env* env, const std::string& path, std::unique_ptr<SnapshotReader>* out) {
  std::unique_ptr<RandomAccessFile> file;
  SNAPSINK_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &file));
  std::unique_ptr<SnapshotReader> r(new SnapshotReader(path, std::move(file)));
  if (r->get_scratch_->dctx == nullptr) {
    return Status::IOError(fmt::format("snapshot {}: out of memory", path));
  }
  SNAPSINK_RETURN_IF_ERROR(r->ParseFooterAndIndex());
  r->slots_.reset(new CachedBlockSlot[r->index_.size()]);
  for (size_t i = 0; i < r->index_.size(); i++) r->slots_[i].mu = &r->blocks_mu_;
  *out = std::move(r);
  return Status::OK();
}

Status SnapshotReader::ParseFooterAndIndex() {
  size_ = file_->Size();
  // The smallest file (no rows): the footer, an index with no blocks, a
  // one-line filter and an empty stats section (docs/FORMAT.md).
  if (size_ < kMinFileBytes) return Corrupt(0, fmt::format("file too short ({} bytes)", size_));
  const uint64_t footer_offset = size_ - kFooterSize;
  std::string footer;
  SNAPSINK_RETURN_IF_ERROR(file_->Read(footer_offset, kFooterSize, &footer));
  if (footer.size() != kFooterSize) return Corrupt(footer_offset, "short read of footer");
  const char* f = footer.data();
  if (std::memcmp(f, kMagic, sizeof(kMagic)) != 0) return Corrupt(footer_offset, "bad magic in footer");
  if (DecodeFixed64(f + 56) != XXH64(f, 56, 0)) return Corrupt(footer_offset, "footer checksum mismatch");
  version_ = DecodeFixed32(f + 8);
  if (version_ < kOldestFormatVersion || version_ > snapshot::kNewestFormatVersion) {
    return Corrupt(footer_offset + 8, fmt::format("unknown format version {}", version_));
  }
  if (DecodeFixed32(f + 12) != 0) return Corrupt(footer_offset + 12, "reserved footer field is not 0");
  index_offset_ = DecodeFixed64(f + 16);
  const uint64_t index_size = DecodeFixed64(f + 24);
  rows_ = DecodeFixed64(f + 32);
  const uint64_t index_xxh64 = DecodeFixed64(f + 40);
  prefix_xxh64_ = DecodeFixed64(f + 48);
  if (index_size < kIndexHeaderSize + 8 || index_offset_ > footer_offset || footer_offset - index_offset_ != index_size) {
    return Corrupt(footer_offset + 16, "index position does not match the file size");
  }

  // Kept: the blocks' first keys are views into it, one buffer a binary
  // search runs over rather than two heap strings per block.
  std::string& index = index_bytes_;
  SNAPSINK_RETURN_IF_ERROR(file_->Read(index_offset_, index_size, &index));
  if (index.size() != index_size) return Corrupt(index_offset_, "short read of index");
  if (Hash(index) != index_xxh64) return Corrupt(index_offset_, "index checksum mismatch");

  const char* p = index.data();
  const char* const end = p + index.size();
  filter_section_ = {DecodeFixed64(p), DecodeFixed64(p + 8), DecodeFixed64(p + 16)};
  stats_section_ = {DecodeFixed64(p + 24), DecodeFixed64(p + 32), DecodeFixed64(p + 40)};
  p += kIndexHeaderSize;
  const uint64_t count = DecodeFixed64(p);
  p += 8;
  if (count > index_size / kIndexEntryFixed) return Corrupt(index_offset_, "bad block count in index");
  index_.resize(count);
  uint64_t expect_offset = 0, total_rows = 0;
  for (uint64_t i = 0; i < count; i++) {
    const uint64_t at = index_offset_ + (p - index.data());
    IndexEntry& e = index_[i];
    IndexEntryView v;
    if (!GetIndexEntry(&p, end, &v)) return Corrupt(at, "index entry truncated");
    e = {v.offset, v.csize, v.usize, v.rows, v.xxh64, v.first_metric, v.first_key};
    if (e.offset != expect_offset || e.csize == 0 || e.usize == 0 || e.usize > kMaxBlockBytes ||
        e.rows == 0) {
      return Corrupt(at, fmt::format("bad index entry for block {}", i));
    }
    if (i > 0 && CompareKeys(index_[i - 1].first_metric, index_[i - 1].first_key, e.first_metric,
                             e.first_key) >= 0) {
      return Corrupt(at, fmt::format("index not sorted at block {}", i));
    }
    expect_offset += e.csize;
    total_rows += e.rows;
  }
  if (p != end) return Corrupt(index_offset_, "trailing bytes in index");
  if (filter_section_.offset != expect_offset || filter_section_.size < kFilterLineBytes + 1 ||
      filter_section_.size > index_offset_ - filter_section_.offset ||
      stats_section_.offset != filter_section_.offset + filter_section_.size || stats_section_.size < 8 ||
      stats_section_.offset + stats_section_.size != index_offset_) {
    return Corrupt(index_offset_, "filter and stats do not lie between the blocks and the index");
  }
  if (total_rows != rows_) return Corrupt(footer_offset + 32, "row count differs from the index");
  BuildBlockSearch();
  SNAPSINK_RETURN_IF_ERROR(ReadSection(filter_section_, "filter", &filter_));
  const uint8_t probes = static_cast<uint8_t>(filter_.back());
  if (probes == 0 || probes > 30) return Corrupt(filter_section_.offset, "bad filter probe count");
  if ((filter_.size() - 1) % kFilterLineBytes != 0) return Corrupt(filter_section_.offset, "bad filter size");
  return Status::OK();
}

Status SnapshotReader::ReadSection(const Section& s, std::string_view name, std::string* out) const {
  SNAPSINK_RETURN_IF_ERROR(file_->Read(s.offset, s.size, out));
  if (out->size() != s.size) return Corrupt(s.offset, fmt::format("short read of {}", name));
  if (Hash(*out) != s.xxh64) return Corrupt(s.offset, fmt::format("{} checksum mismatch", name));
  return Status::OK();
}

bool SnapshotReader::FilterMayMatch(std::string_view metric, std::string_view key) const {
  return FilterMatches(filter_, FilterHash(metric, key));
}

Status SnapshotReader::ReadStats(std::vector<MetricStats>* out) const {
  out->clear();
  std::string bytes;
  SNAPSINK_RETURN_IF_ERROR(ReadSection(stats_section_, "stats", &bytes));
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  const uint64_t count = DecodeFixed64(p);
  p += 8;
  if (count > bytes.size()) return Corrupt(stats_section_.offset, "bad metric count in stats");
  out->reserve(count);
  uint64_t rows = 0;
  for (uint64_t i = 0; i < count; i++) {
    MetricStats m;
    std::string_view metric;
    uint64_t r, e, c, s;
    if (!GetLengthPrefixed(&p, end, &metric) || !GetVarint64(&p, end, &r) || !GetVarint64(&p, end, &e) ||
        !GetVarint64(&p, end, &c) || !GetVarint64(&p, end, &s)) {
      return Corrupt(stats_section_.offset, fmt::format("stats: bad entry {}", i));
    }
    if (!out->empty() && !(out->back().metric < metric)) {
      return Corrupt(stats_section_.offset, fmt::format("stats: metric {} not sorted or not unique", i));
    }
    m.metric.assign(metric);
    m.rows = r;
    m.events = UnZigZag(e);
    m.count = UnZigZag(c);
    m.sum_micros = UnZigZag(s);
    rows += r;
    out->push_back(std::move(m));
  }
  if (p != end) return Corrupt(stats_section_.offset, "trailing bytes in stats");
  if (rows != rows_) return Corrupt(stats_section_.offset, "stats: rows differ from the footer's");
  return Status::OK();
}

Status SnapshotReader::LoadBlock(size_t i, Scratch* scratch) const {
  const IndexEntry& e = index_[i];
  SNAPSINK_RETURN_IF_ERROR(file_->Read(e.offset, e.csize, &scratch->compressed));
  if (scratch->compressed.size() != e.csize) return Corrupt(e.offset, fmt::format("short read of block {}", i));
  if (scratch->file_hash != nullptr) {
    XXH64_update(scratch->file_hash, scratch->compressed.data(), e.csize);
    scratch->hashed_end = e.offset + e.csize;
  }
  if (Hash(scratch->compressed) != e.xxh64) return Corrupt(e.offset, fmt::format("block {} checksum mismatch", i));
  const char* src = scratch->compressed.data();
  if (ZSTD_getFrameContentSize(src, e.csize) != e.usize) {
    return Corrupt(e.offset, fmt::format("block {} has the wrong size", i));
  }
  scratch->plain.resize(e.usize);
  size_t n = ZSTD_decompressDCtx(scratch->dctx, scratch->plain.data(), e.usize, src, e.csize);
  if (ZSTD_isError(n) || n != e.usize) {
    return Corrupt(e.offset, fmt::format("block {} does not decompress: {}", i,
                                         ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
  }
  return Status::OK();
}

template <typename Fn>
Status SnapshotReader::DecodeBlock(size_t i, std::string_view plain, Fn&& fn) const {
  return DecodeBlock(i, plain, nullptr, std::forward<Fn>(fn));
}

template <typename Fn>
Status SnapshotReader::DecodeBlock(size_t i, std::string_view plain, ScanPosition* at, Fn&& fn) const {
  const IndexEntry& e = index_[i];
  BlockParts parts;
  if (!SplitBlock(plain, e.rows, version_, &parts)) {
    return Corrupt(e.offset, fmt::format("block {}: bad restart points or hash index", i));
  }
  const char* const begin = parts.rows.data();
  const char* p = begin;
  const char* const end = p + parts.rows.size();
  RowView prev, cur;
  uint32_t n = 0;
  if (at != nullptr && at->set) {  // from a row decoded (and checked) by an earlier go, in a block that checksums the same
    if (at->offset > parts.rows.size() || at->row >= e.rows) {
      return Corrupt(e.offset, fmt::format("block {}: no row {} at offset {}", i, at->row, at->offset));
    }
    p = begin + at->offset;
    n = at->row;
    prev.metric = at->prev_metric;
    prev.key = at->prev_key;
  }
  while (p < end) {
    const char* const row_start = p;
    if (n % kBlockRestartInterval == 0 && (n / kBlockRestartInterval >= parts.num ||
                                           DecodeFixed32(parts.restarts + 4 * (n / kBlockRestartInterval)) !=
                                               static_cast<uint64_t>(p - begin))) {
      return Corrupt(e.offset, fmt::format("block {}: restart point of row {} is wrong", i, n));
    }
    if (!GetRow(&p, end, &cur, extended_rows())) return Corrupt(e.offset, fmt::format("block {}: bad row {}", i, n));
    if (!cur.sketch.empty()) {
      const bool distinct = IsDistinctSketch(cur.sketch);
      if (version_ < (distinct ? snapshot::kDistinctRowsVersion : snapshot::kSketchRowsVersion) ||
          !CheckSketch(cur.sketch).ok()) {
        return Corrupt(e.offset,
                       fmt::format("block {}: row {}: bad {} sketch", i, n, distinct ? "distinct-count" : "quantile"));
      }
    }
    if (n == 0 ? CompareKeys(cur.metric, cur.key, e.first_metric, e.first_key) != 0
               : CompareKeys(prev.metric, prev.key, cur.metric, cur.key) >= 0) {
      return Corrupt(e.offset, fmt::format("block {}: row {} out of order", i, n));
    }
    if (++n > e.rows) return Corrupt(e.offset, fmt::format("block {}: more rows than the index says", i));
    if (!fn(cur)) {
      if (at != nullptr) {
        at->offset = static_cast<uint32_t>(row_start - begin);
        at->row = n - 1;
        at->prev_metric.assign(prev.metric);  // before `at` is reused: prev may point into it
        at->prev_key.assign(prev.key);
      }
      return Status::OK();
    }
    prev = cur;
  }
  if (n != e.rows) return Corrupt(e.offset, fmt::format("block {}: fewer rows than the index says", i));
  return Status::OK();
}

namespace {

// The first 8 bytes of s after `skip`, big-endian, zero-padded: if
// Abbrev(a) < Abbrev(b) then a < b (a padding byte is below every byte but
// a 0, and a 0 there means the shorter string is a prefix of the longer).
uint64_t Abbrev(std::string_view s, size_t skip) {
  unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (skip < s.size()) std::memcpy(b, s.data() + skip, std::min<size_t>(8, s.size() - skip));
  uint64_t v = 0;
  for (unsigned char c : b) v = v << 8 | c;
  return v;
}

}  // namespace

void SnapshotReader::BuildBlockSearch() {
  runs_.clear();
  key_abbrev_.resize(index_.size());
  for (size_t i = 0; i < index_.size();) {
    MetricRun run{index_[i].first_metric, i, i + 1, 0};
    while (run.end < index_.size() && index_[run.end].first_metric == run.metric) run.end++;
    // The run's first keys are sorted: what the first and last share, all share.
    const std::string_view a = index_[run.first].first_key, b = index_[run.end - 1].first_key;
    while (run.skip < a.size() && run.skip < b.size() && a[run.skip] == b[run.skip]) run.skip++;
    for (size_t j = run.first; j < run.end; j++) key_abbrev_[j] = Abbrev(index_[j].first_key, run.skip);
    runs_.push_back(run);
    i = run.end;
  }
}

size_t SnapshotReader::FindBlock(std::string_view metric, std::string_view key) const {
  // The blocks whose first rows share a metric form a run (BuildBlockSearch):
  // the last run whose metric <= metric, then, if that metric is the one
  // asked for, the last block of the run whose first key <= key, found by
  // 8-byte abbreviations of the first keys past their shared prefix (held
  // in one small array) and only among equal abbreviations by the keys.
  auto r = std::upper_bound(runs_.begin(), runs_.end(), metric,
                            [](std::string_view m, const MetricRun& run) { return m < run.metric; });
  if (r == runs_.begin()) return index_.size();  // every block starts after it
  --r;
  const size_t before = r->first == 0 ? index_.size() : r->first - 1;  // the block before the run
  if (r->metric != metric) return r->end - 1;  // the run's rows, and the last block's, start before it
  const std::string_view shared = index_[r->first].first_key.substr(0, r->skip);
  const int c = key.substr(0, r->skip).compare(shared);
  if (c < 0) return before;
  if (c > 0) return r->end - 1;
  const uint64_t a = Abbrev(key, r->skip);
  const uint64_t* const abbrev = key_abbrev_.data();
  const uint64_t* lo = std::lower_bound(abbrev + r->first, abbrev + r->end, a);  // blocks before lo start before key
  const uint64_t* hi = std::upper_bound(lo, abbrev + r->end, a);                 // blocks from hi start after it
  size_t j = static_cast<size_t>(lo - abbrev);
  while (j < static_cast<size_t>(hi - abbrev) && index_[j].first_key <= key) j++;
  return j == r->first ? before : j - 1;
}

Status SnapshotReader::CheckHashIndex(size_t i, std::string_view plain, const std::vector<uint64_t>& hashes,
                                      std::string* scratch) const {
  const IndexEntry& e = index_[i];
  BlockParts parts;
  if (!SplitBlock(plain, e.rows, version_, &parts) || hashes.size() != e.rows) {
    return Corrupt(e.offset, fmt::format("block {}: bad restart points or hash index", i));
  }
  if (parts.num_slots == 0) return Status::OK();
  // The index is a function of the rows: rebuild it and compare, so a
  // lookup can trust every slot (and find a free one to stop at).
  scratch->clear();
  AppendHashIndex(hashes.data(), e.rows, parts.num_slots, scratch);
  if (std::memcmp(scratch->data(), parts.slots, kHashSlotBytes * size_t{parts.num_slots}) != 0) {
    return Corrupt(e.offset, fmt::format("block {}: hash index does not match its rows", i));
  }
  return Status::OK();
}

Status SnapshotReader::Get(std::string_view metric, std::string_view key, Row* row) const {
  // A short message: absent keys are common, and this one fits the string's inline buffer.
  const uint64_t hash = FilterHash(metric, key);
  // The filter's line arrives while the block index is searched.
  __builtin_prefetch(filter_.data() + FilterLine(hash, (filter_.size() - 1) / kFilterLineBytes) * kFilterLineBytes);
  const size_t i = FindBlock(metric, key);
  if (i == index_.size() || !FilterMatches(filter_, hash)) return Status::NotFound("no such row");
  const IndexEntry& e = index_[i];
  RowView v;
  {
    // A hit: the block's slot beside the index, no cache lookup and no
    // reference count; the shared lock keeps the cache from dropping it.
    CachedBlockSlot& slot = slots_[i];
    std::shared_lock lock(blocks_mu_);
    if (slot.bytes != nullptr) {
      if (!slot.referenced.load(std::memory_order_relaxed)) slot.referenced.store(true, std::memory_order_relaxed);
      if (!FindCachedRow(slot.bytes, e.usize, e.rows, hash, metric, key, &v, extended_rows())) {
        return Status::NotFound("no such row");
      }
      ToRow(v, row);
      return Status::OK();
    }
  }
  std::shared_ptr<const std::string> block;
  {
    std::lock_guard<std::mutex> lock(get_mu_);
    Scratch* scratch = get_scratch_.get();
    SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, scratch));
    scratch->hashes.clear();
    RowHasher hasher;
    SNAPSINK_RETURN_IF_ERROR(DecodeBlock(i, scratch->plain, [&](const RowView& r) {
      scratch->hashes.push_back(hasher.Hash(r.metric, r.key));
      return true;
    }));
    // The filter must hold every row: one that misses a row hides it from
    // lookups. Rows of a block Get reads are checked here; VerifyAll checks all.
    if (!FilterMatchesAll(filter_, scratch->hashes.data(), scratch->hashes.size())) return Corrupt(filter_section_.offset, fmt::format("filter misses a row of block {}", i));
    if (version_ >= 3) SNAPSINK_RETURN_IF_ERROR(CheckHashIndex(i, scratch->plain, scratch->hashes, &scratch->table));
    BlockParts parts;
    SplitBlock(scratch->plain, e.rows, version_, &parts);  // accepted by DecodeBlock
    // Cached with a table naming each row (snapshot/cached_block.h): what
    // every lookup of the block searches, whatever index the file has.
    block = std::make_shared<const std::string>(
        MakeCachedBlock(scratch->plain, parts.rows.size(), scratch->hashes.data(), e.rows, extended_rows()));
  }
  BlockCache::Default()->Insert(cache_id_, i, block, &slots_[i]);
  if (!FindCachedRow(block->data(), e.usize, e.rows, hash, metric, key, &v, extended_rows())) {
    return Status::NotFound("no such row");
  }
  ToRow(v, row);
  return Status::OK();
}

Status SnapshotReader::Scan(const std::string* metric, const std::function<void(const Row&)>& fn) const {
  size_t start = 0;
  if (metric != nullptr) {
    start = FindBlock(*metric, "");
    if (start == index_.size()) start = 0;
  }
  Scratch scratch;
  if (scratch.dctx == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  Row row;
  bool done = false;
  for (size_t i = start; i < index_.size() && !done; i++) {
    SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, &scratch));
    SNAPSINK_RETURN_IF_ERROR(DecodeBlock(i, scratch.plain, [&](const RowView& v) {
      if (metric != nullptr) {
        int c = v.metric.compare(*metric);
        if (c < 0) return true;
        if (c > 0) {
          done = true;
          return false;
        }
      }
      ToRow(v, &row);
      fn(row);
      return true;
    }));
  }
  return Status::OK();
}

Status SnapshotReader::ReadBlockRows(size_t i, std::vector<Row>* rows) const {
  rows->clear();
  Scratch scratch;
  if (scratch.dctx == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, &scratch));
  return DecodeBlock(i, scratch.plain, [&](const RowView& v) {
    rows->emplace_back();
    ToRow(v, &rows->back());
    return true;
  });
}

Status SnapshotReader::ScanFrom(std::string_view metric, std::string_view key,
                                const std::function<ScanNext(const RowView&, SeekTo*)>& fn) const {
  return ScanFrom(metric, key, fn, nullptr, nullptr);
}

SnapshotReader::ScanBuffers::ScanBuffers() : scratch_(new Scratch) {}
SnapshotReader::ScanBuffers::~ScanBuffers() = default;

Status SnapshotReader::ScanFrom(std::string_view metric, std::string_view key,
                                const std::function<ScanNext(const RowView&, SeekTo*)>& fn, ScanPosition* pos,
                                ScanBuffers* buffers) const {
  if (pos != nullptr && pos->set && pos->end) return Status::OK();
  const bool resume = pos != nullptr && pos->set;
  SeekTo to{std::string(resume ? std::string_view() : metric), std::string(resume ? std::string_view() : key)};
  size_t i = resume ? pos->block : FindBlock(to.metric, to.key);
  if (i == index_.size() && !resume) i = 0;  // every block starts after it: from the first
  std::unique_ptr<Scratch> own;
  Scratch* scratch = buffers != nullptr ? buffers->scratch_.get() : (own = std::make_unique<Scratch>()).get();
  if (scratch->dctx == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  bool seeking = !resume;  // rows before `to` are skipped
  bool stop = false;
  ScanPosition* at = resume ? pos : nullptr;  // where the first block's decoding starts
  while (i < index_.size() && !stop) {
    size_t next = i + 1;
    if (buffers == nullptr || buffers->reader_ != cache_id_ || buffers->block_ != i) {
      if (buffers != nullptr) buffers->reader_ = 0;
      SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, scratch));
      if (buffers != nullptr) {
        buffers->reader_ = cache_id_;
        buffers->block_ = i;
      }
    }
    ScanPosition start;
    if (at == nullptr) at = &start;  // from the block's first row
    SNAPSINK_RETURN_IF_ERROR(DecodeBlock(i, scratch->plain, at, [&](const RowView& v) {
      if (seeking) {
        if (CompareKeys(v.metric, v.key, to.metric, to.key) < 0) return true;
        seeking = false;
      }
      switch (fn(v, &to)) {
        case ScanNext::kNext: return true;
        case ScanNext::kStop: stop = true; return false;
        case ScanNext::kSeek: break;
      }
      seeking = true;
      const size_t j = FindBlock(to.metric, to.key);
      if (j == index_.size() || j <= i) return true;  // in this block
      next = j;
      return false;
    }));
    if (stop && pos != nullptr) {  // at is the row fn stopped at
      if (at != pos) *pos = std::move(*at);
      pos->set = true;
      pos->end = false;
      pos->block = i;
      return Status::OK();
    }
    at = nullptr;
    i = next;
  }
  if (pos != nullptr) {
    pos->set = true;
    pos->end = true;
  }
  return Status::OK();
}

struct SnapshotReader::VerifiedRun {
  uint64_t rows = 0;
  bool first_block_unread = false;    // the run's first block did not load or decode (its error is the run's)
  std::string last_metric, last_key;  // of the last row of the last block checked
};

Status SnapshotReader::VerifyBlocks(size_t begin, size_t end, Scratch* scratch,
                                    const std::function<void(const RowView&)>* visit, VerifiedRun* out) const {
  RowHasher hasher;
  for (size_t i = begin; i < end; i++) {
    Status s = LoadBlock(i, scratch);
    bool first = true, ordered = true;
    RowView last;  // points into scratch->plain, valid until the next LoadBlock
    scratch->hashes.clear();
    if (s.ok()) {
      s = DecodeBlock(i, scratch->plain, [&](const RowView& v) {
        if (first && i > begin && CompareKeys(out->last_metric, out->last_key, v.metric, v.key) >= 0) ordered = false;
        scratch->hashes.push_back(hasher.Hash(v.metric, v.key));
        first = false;
        last = v;
        out->rows++;
        if (visit != nullptr) (*visit)(v);
        return true;
      });
    }
    if (!s.ok()) {
      out->first_block_unread = i == begin;
      return s;
    }
    if (!ordered) return Corrupt(index_[i].offset, fmt::format("block {} overlaps the block before", i));
    if (!FilterMatchesAll(filter_, scratch->hashes.data(), scratch->hashes.size())) {
      return Corrupt(filter_section_.offset, fmt::format("filter misses a row of block {}", i));
    }
    if (version_ >= 3) SNAPSINK_RETURN_IF_ERROR(CheckHashIndex(i, scratch->plain, scratch->hashes, &scratch->table));
    out->last_metric.assign(last.metric);
    out->last_key.assign(last.key);
  }
  return Status::OK();
}

Status SnapshotReader::VerifyAllInParts(uint64_t expected_xxh64,
                                        const std::vector<std::function<void(const RowView&)>>& visits) const {
  std::vector<const std::function<void(const RowView&)>*> each;
  for (const auto& v : visits) each.push_back(&v);
  return VerifyParts(expected_xxh64, each.size(), each.data());
}

Status SnapshotReader::VerifyParts(uint64_t expected_xxh64, size_t parts,
                                   const std::function<void(const RowView&)>* const* visits) const {
  // One pass in file order. Each block is read once: LoadBlock feeds its
  // bytes to the whole file's XXH64, then it is checked and decoded. Open
  // found the filter, stats, index and footer to tile the rest of the file
  // after the blocks, so hashing from the end of the last block read to the
  // end of the file covers every byte once. The file's own checksums are
  // judged before a block's error is reported: a damaged file is named as
  // such, and a bad block stops the checks and the visits, not the hashing.
  // With runs: the first run's blocks feed the XXH64 as they load, and the
  // bytes after them (the other runs' blocks too) are read again for it;
  // each other run is checked on a thread with its own scratch, and the
  // first error in file order is the one reported.
  Scratch scratch;
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(), XXH64_freeState);
  if (scratch.dctx == nullptr || state == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  XXH64_reset(state.get(), 0);
  scratch.file_hash = state.get();
  const size_t n = index_.size();
  // A thread pays for itself over a few blocks only: runs of 8 or more.
  const size_t runs = std::max<size_t>(1, std::min(parts, n / 8));
  auto visit_of = [&](size_t r) { return visits == nullptr ? nullptr : visits[r]; };
  auto begin_of = [&](size_t r) { return r * n / runs; };
  std::vector<VerifiedRun> seen(runs);
  std::vector<Status> results(runs);
  std::vector<std::thread> threads;
  for (size_t r = 1; r < runs; r++) {
    auto check = [this, r, &seen, &results, &begin_of, &visit_of] {
      Scratch own;
      results[r] = own.dctx == nullptr ? Status::IOError(fmt::format("snapshot {}: out of memory", path_))
                                       : VerifyBlocks(begin_of(r), begin_of(r + 1), &own, visit_of(r), &seen[r]);
    };
    try {
      threads.emplace_back(check);
    } catch (const std::system_error&) {
      threads.emplace_back();
      check();  // no thread: checked here, before the first run
    }
  }
  results[0] = VerifyBlocks(0, begin_of(1), &scratch, visit_of(0), &seen[0]);
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  const Status checks = [&]() -> Status {
    uint64_t rows = 0;
    for (size_t r = 0; r < runs; r++) {
      // The order against the block before the run: the run's first row is
      // its index entry's first key (DecodeBlock checks it), so it is
      // checked here, after that block loaded and decoded.
      const size_t b = begin_of(r);
      if (r > 0 && !seen[r].first_block_unread &&
          CompareKeys(seen[r - 1].last_metric, seen[r - 1].last_key, index_[b].first_metric, index_[b].first_key) >= 0) {
        return Corrupt(index_[b].offset, fmt::format("block {} overlaps the block before", b));
      }
      SNAPSINK_RETURN_IF_ERROR(results[r]);
      rows += seen[r].rows;
    }
    if (rows != rows_) return Corrupt(size_ - kFooterSize + 32, "row count differs from the blocks");
    return Status::OK();
  }();

  std::string chunk;
  auto hash_to = [&](uint64_t end) {
    for (uint64_t off = scratch.hashed_end; off < end;) {
      const uint64_t n = std::min<uint64_t>(1 << 20, end - off);
      SNAPSINK_RETURN_IF_ERROR(file_->Read(off, n, &chunk));
      if (chunk.size() != n) return Corrupt(off, "short read");
      XXH64_update(state.get(), chunk.data(), n);
      off += n;
      scratch.hashed_end = off;
    }
    return Status::OK();
  };
  const uint64_t footer_offset = size_ - kFooterSize;
  SNAPSINK_RETURN_IF_ERROR(hash_to(footer_offset));
  const uint64_t prefix = XXH64_digest(state.get());
  SNAPSINK_RETURN_IF_ERROR(hash_to(size_));
  const uint64_t whole = XXH64_digest(state.get());
  if (expected_xxh64 != 0 && whole != expected_xxh64) {
    return Corrupt(0, fmt::format("file xxh64 {:016x} differs from the expected {:016x}", whole,
                                  expected_xxh64));
  }
  if (prefix != prefix_xxh64_) return Corrupt(0, "data checksum in footer does not match the file");
  return checks;
}

bool SnapshotReader::extended_rows() const { return version_ >= snapshot::kExtendedRowsVersion; }

bool SnapshotReader::sketch_rows() const { return version_ >= snapshot::kSketchRowsVersion; }

bool SnapshotReader::distinct_rows() const { return version_ >= snapshot::kDistinctRowsVersion; }

}  // namespace snapsink
