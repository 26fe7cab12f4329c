#include "publish/snapshot_file.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "engine/coding.h"
#include "engine/crash_point.h"
#include "engine/decimal.h"
#include "publish/table_cache.h"

namespace snapsink {

namespace {

// Do not change these values: they are on disk (docs/FORMAT.md).
constexpr char kMagic[8] = {'S', 'N', 'A', 'P', 'S', 'N', 'K', '1'};
// 3: blocks end in a hash index (kHashSlotBytes per slot) after their
// restart points. Files of version 2 (no hash index) are still read.
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kOldestFormatVersion = 2;
constexpr size_t kFooterSize = 64;
constexpr size_t kIndexHeaderSize = 6 * 8;  // filter and stats: offset, size, xxh64 each
constexpr size_t kIndexEntryFixed = 8 + 4 + 4 + 4 + 8 + 4 + 4;  // without the two strings
constexpr size_t kFilterLineBytesForSize = 64;
constexpr uint64_t kMinFileBytes = kFooterSize + (kIndexHeaderSize + 8) + (kFilterLineBytesForSize + 1) + 8;  // 193
constexpr uint8_t kFilterProbes = 6;  // ~ kFilterBitsPerKey * ln 2, as LevelDB's bloom.cc
// A block is cut once its rows reach at most kSnapshotBlockBytes, so it never
// holds more than that plus one maximal row, plus its restart points (a row
// is at least 5 bytes).
// Per-block hash index (docs/FORMAT.md): a slot is {restart, fingerprint};
// restart kHashEmpty marks a free slot, so a block with more restart points
// than kHashMaxRestarts has no hash index (it is searched by restart points).
constexpr size_t kHashSlotBytes = 2;
constexpr uint8_t kHashEmpty = 0xFF;
constexpr uint32_t kHashMaxRestarts = 255;
constexpr uint64_t kHashMaxSlots = kHashMaxRestarts * kBlockRestartInterval * 4 / 3 + 1;
constexpr uint64_t kMaxBlockBytes = kSnapshotBlockBytes + 2 * kSnapshotMaxFieldBytes + 64 +
                                    4 * (kSnapshotBlockBytes / 5 / kBlockRestartInterval + 2) + 4 +
                                    kHashSlotBytes * kHashMaxSlots + 4;

using coding::DecodeFixed64;
using coding::EncodeVarint64;

// The row decoding below runs once per row of every block read (and per
// probed row of a lookup): these two take their common case inline, the
// one-byte varint (lengths and small numbers) and a little-endian u32,
// and leave the rest to coding::.
inline bool GetVarint64(const char** p, const char* end, uint64_t* v) {
  if (*p < end && (static_cast<uint8_t>(**p) & 0x80) == 0) {
    *v = static_cast<uint8_t>(**p);
    ++*p;
    return true;
  }
  return coding::GetVarint64(p, end, v);
}

inline uint32_t DecodeFixed32(const char* p) {
  if constexpr (std::endian::native == std::endian::little) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    return coding::DecodeFixed32(p);
  }
}
using coding::PutFixed32;
using coding::PutFixed64;
using coding::UnZigZag;
using coding::ZigZag;

bool GetLengthPrefixed(const char** p, const char* end, std::string_view* out) {
  uint64_t n;
  if (!GetVarint64(p, end, &n) || n > kSnapshotMaxFieldBytes ||
      n > static_cast<uint64_t>(end - *p)) {
    return false;
  }
  *out = std::string_view(*p, n);
  *p += n;
  return true;
}

// The metric and key of the row at *p, skipping its numbers: what a search
// compares. REQUIRES: a row of a checked block.
void GetRowKey(const char** p, const char* end, RowView* r) {
  GetLengthPrefixed(p, end, &r->metric);
  GetLengthPrefixed(p, end, &r->key);
  for (int n = 0; n < 3; n++) {
    while (*p < end && (static_cast<uint8_t>(**p) & 0x80) != 0) ++*p;
    ++*p;
  }
}

// A decoded row pointing into a block buffer.
bool GetRow(const char** p, const char* end, RowView* r) {
  uint64_t c, e, s;
  if (!GetLengthPrefixed(p, end, &r->metric) || !GetLengthPrefixed(p, end, &r->key) ||
      !GetVarint64(p, end, &c) || !GetVarint64(p, end, &e) || !GetVarint64(p, end, &s)) {
    return false;
  }
  r->count = UnZigZag(c);
  r->events = UnZigZag(e);
  r->sum_micros = UnZigZag(s);
  return true;
}

void ToRow(const RowView& v, Row* row) {
  row->metric.assign(v.metric);
  row->key.assign(v.key);
  row->count = v.count;
  row->sum_micros = v.sum_micros;
  row->events = v.events;
}

// (metric, key) ordering: metric first, both as byte strings.
int CompareKeys(std::string_view m1, std::string_view k1, std::string_view m2, std::string_view k2) {
  int c = m1.compare(m2);
  return c != 0 ? c : k1.compare(k2);
}

uint64_t Hash(std::string_view s) { return XXH64(s.data(), s.size(), 0); }

// The filter's hash of a (metric, key): the key hashed with the metric's hash as seed.
uint64_t FilterHash(std::string_view metric, std::string_view key) {
  return XXH64(key.data(), key.size(), XXH64(metric.data(), metric.size(), 0));
}

// Bloom filter (docs/FORMAT.md), blocked as RocksDB's cache-local filters:
// the high 32 bits of h pick one 64-byte line, and all probes of the key
// fall in that line, so a lookup costs one cache miss, not one per probe.
// Probe j tests bit (lo + j * delta) mod 512 of the line, lo the low 32
// bits of h and delta = lo rotated right by 17 (LevelDB's bloom.cc).
constexpr size_t kFilterLineBytes = 64;
constexpr uint32_t kFilterLineBits = kFilterLineBytes * 8;

size_t FilterLine(uint64_t h64, size_t lines) {
  return static_cast<size_t>((static_cast<uint64_t>(static_cast<uint32_t>(h64 >> 32)) * lines) >> 32);
}

// Every key's line is random, so a filter bigger than the caches costs a
// miss per key; the loops below that touch a line per key ask for the line
// kFilterPrefetch keys ahead, so the misses overlap instead of adding up.
constexpr size_t kFilterPrefetch = 8;

std::string BuildFilter(const std::vector<uint64_t>& hashes) {
  const size_t bits = std::max<size_t>(kFilterLineBits, hashes.size() * kFilterBitsPerKey);
  const size_t lines = (bits + kFilterLineBits - 1) / kFilterLineBits;
  std::string f(lines * kFilterLineBytes, '\0');
  for (size_t i = 0; i < hashes.size(); i++) {
    if (i + kFilterPrefetch < hashes.size()) {
      __builtin_prefetch(f.data() + FilterLine(hashes[i + kFilterPrefetch], lines) * kFilterLineBytes, 1);
    }
    const uint64_t h64 = hashes[i];
    char* line = f.data() + FilterLine(h64, lines) * kFilterLineBytes;
    uint32_t h = static_cast<uint32_t>(h64);
    const uint32_t delta = (h >> 17) | (h << 15);
    for (uint8_t j = 0; j < kFilterProbes; j++) {
      const uint32_t pos = h % kFilterLineBits;
      line[pos / 8] = static_cast<char>(line[pos / 8] | (1 << (pos % 8)));
      h += delta;
    }
  }
  f.push_back(static_cast<char>(kFilterProbes));
  return f;
}

bool FilterMatches(std::string_view filter, uint64_t h64) {
  const size_t lines = (filter.size() - 1) / kFilterLineBytes;
  const uint8_t probes = static_cast<uint8_t>(filter.back());
  const char* line = filter.data() + FilterLine(h64, lines) * kFilterLineBytes;
  uint32_t h = static_cast<uint32_t>(h64);
  const uint32_t delta = (h >> 17) | (h << 15);
  for (uint8_t j = 0; j < probes; j++) {
    const uint32_t pos = h % kFilterLineBits;
    if ((static_cast<uint8_t>(line[pos / 8]) & (1 << (pos % 8))) == 0) return false;
    h += delta;
  }
  return true;
}

// True if the filter matches every one of the n hashes (a checked block's
// rows: the filter must hold them all), with the lines fetched ahead.
bool FilterMatchesAll(std::string_view filter, const uint64_t* hashes, size_t n) {
  const size_t lines = (filter.size() - 1) / kFilterLineBytes;
  bool all = true;
  for (size_t i = 0; i < n; i++) {
    if (i + kFilterPrefetch < n) __builtin_prefetch(filter.data() + FilterLine(hashes[i + kFilterPrefetch], lines) * kFilterLineBytes);
    all &= FilterMatches(filter, hashes[i]);
  }
  return all;
}

// FilterHash of rows that arrive sorted by metric: the metric's hash (the
// seed) is computed once per run of rows of one metric, not once per row.
class RowHasher {
 public:
  uint64_t Hash(std::string_view metric, std::string_view key) {
    if (!valid_ || metric != metric_) {
      metric_.assign(metric);
      seed_ = XXH64(metric.data(), metric.size(), 0);
      valid_ = true;
    }
    return XXH64(key.data(), key.size(), seed_);
  }

 private:
  bool valid_ = false;
  std::string metric_;
  uint64_t seed_ = 0;
};

// The slots of a block's hash index of `rows` rows and `num` restart
// points: 4/3 slot per row (so at least one stays free), or 0 when the
// restart numbers do not fit a byte.
uint32_t HashSlots(uint32_t rows, uint32_t num) {
  return num > kHashMaxRestarts ? 0 : rows + rows / 3 + 1;
}

// Where a key's probe sequence starts, and the byte stored to tell it from
// the other keys of the chain; from the filter's hash of the key.
uint32_t HashBucket(uint64_t h, uint32_t slots) {
  return static_cast<uint32_t>(((h >> 32) * slots) >> 32);
}
uint8_t HashFingerprint(uint64_t h) { return static_cast<uint8_t>(h); }

// Appends the hash index of a block whose row r has hash hashes[r]:
// `slots` slots, filled by linear probing in row order, then u32 slots.
void AppendHashIndex(const uint64_t* hashes, uint32_t rows, uint32_t slots, std::string* out) {
  const size_t at = out->size();
  out->resize(at + kHashSlotBytes * size_t{slots}, static_cast<char>(kHashEmpty));
  char* t = out->data() + at;
  for (uint32_t r = 0; r < rows && slots > 0; r++) {
    uint32_t b = HashBucket(hashes[r], slots);
    while (static_cast<uint8_t>(t[kHashSlotBytes * b]) != kHashEmpty) b = b + 1 == slots ? 0 : b + 1;
    t[kHashSlotBytes * b] = static_cast<char>(r / kBlockRestartInterval);
    t[kHashSlotBytes * b + 1] = static_cast<char>(HashFingerprint(hashes[r]));
  }
  PutFixed32(out, slots);
}

// The rows of a decompressed block, its restart points and (version >= 3)
// its hash index, split apart. False if the trailer is malformed or does
// not fit `rows`.
struct BlockParts {
  std::string_view rows;
  const char* restarts = nullptr;  // num fixed32 offsets
  uint32_t num = 0;
  const char* slots = nullptr;  // hash index: kHashSlotBytes * num_slots bytes
  uint32_t num_slots = 0;       // 0: no hash index
};
bool SplitBlock(std::string_view plain, uint32_t rows, uint32_t version, BlockParts* out) {
  if (plain.size() < 4) return false;
  const uint32_t num = DecodeFixed32(plain.data() + plain.size() - 4);
  if (num != (rows + kBlockRestartInterval - 1) / kBlockRestartInterval) return false;
  uint64_t trailer = 4 * uint64_t{num} + 4;
  uint32_t slots = 0;
  if (version >= 3) {
    if (plain.size() < 8) return false;
    slots = DecodeFixed32(plain.data() + plain.size() - 8);
    // A writer may leave the index out (SnapshotWriterOptions::block_hash_index).
    if (slots != 0 && slots != HashSlots(rows, num)) return false;
    trailer += kHashSlotBytes * uint64_t{slots} + 4;
  }
  if (trailer > plain.size()) return false;
  out->rows = plain.substr(0, plain.size() - trailer);
  out->restarts = plain.data() + out->rows.size();
  out->num = num;
  out->slots = out->restarts + 4 * uint64_t{num};
  out->num_slots = slots;
  return true;
}

void PutVarint64(std::string* dst, uint64_t v) {
  char b[10];
  dst->append(b, EncodeVarint64(b, v) - b);
}

std::string EncodeStats(const std::vector<MetricStats>& stats) {
  std::string out;
  PutFixed64(&out, stats.size());
  for (const MetricStats& m : stats) {
    PutVarint64(&out, m.metric.size());
    out.append(m.metric);
    PutVarint64(&out, m.rows);
    PutVarint64(&out, ZigZag(m.events));
    PutVarint64(&out, ZigZag(m.count));
    PutVarint64(&out, ZigZag(m.sum_micros));
  }
  return out;
}

}  // namespace

uint64_t SnapshotKeyHash(std::string_view metric, std::string_view key) { return FilterHash(metric, key); }

// ---------------------------------------------------------------- writer

struct SnapshotWriter::IndexEntry {
  uint64_t offset = 0;
  uint32_t csize = 0, usize = 0, rows = 0;
  uint64_t xxh64 = 0;
  std::string first_metric, first_key;
};

SnapshotWriter::SnapshotWriter(std::string path, std::unique_ptr<WritableFile> file,
                               const SnapshotWriterOptions& options)
    : path_(std::move(path)),
      file_(std::move(file)),
      options_(options),
      cctx_(ZSTD_createCCtx()),
      file_hash_(XXH64_createState()) {
  XXH64_reset(file_hash_, 0);
  block_.reserve(options_.block_bytes + 1024);
}

SnapshotWriter::~SnapshotWriter() {
  ZSTD_freeCCtx(cctx_);
  XXH64_freeState(file_hash_);
}

Status SnapshotWriter::Open(Env* env, const std::string& path, std::unique_ptr<SnapshotWriter>* out,
                            const SnapshotWriterOptions& options) {
  if (options.zstd_level < ZSTD_minCLevel() || options.zstd_level > ZSTD_maxCLevel()) {
    return Status::InvalidArgument(fmt::format("snapshot {}: bad zstd level {}", path, options.zstd_level));
  }
  if (options.block_bytes == 0 || options.block_bytes > kSnapshotBlockBytes) {
    return Status::InvalidArgument(fmt::format("snapshot {}: bad block size {}", path, options.block_bytes));
  }
  std::unique_ptr<WritableFile> file;
  SNAPSINK_RETURN_IF_ERROR(env->NewWritableFile(path, &file));
  out->reset(new SnapshotWriter(path, std::move(file), options));
  if ((*out)->cctx_ == nullptr || (*out)->file_hash_ == nullptr) {
    out->reset();
    return Status::IOError(fmt::format("snapshot {}: out of memory", path));
  }
  return Status::OK();
}

Status SnapshotWriter::Fail(Status s) {
  if (error_.ok()) error_ = s;
  return s;
}

Status SnapshotWriter::AppendToFile(std::string_view data) {
  Status s = file_->Append(data);
  if (!s.ok()) return Fail(s);
  XXH64_update(file_hash_, data.data(), data.size());
  offset_ += data.size();
  return Status::OK();
}

Status SnapshotWriter::Add(const Row& row) {
  return AddView(RowView{row.metric, row.key, row.count, row.sum_micros, row.events});
}

Status SnapshotWriter::AddView(const RowView& row) {
  if (!error_.ok()) return error_;
  if (finished_) return Status::InvalidArgument(fmt::format("snapshot {}: Add after Finish", path_));
  if (row.metric.size() > kSnapshotMaxFieldBytes || row.key.size() > kSnapshotMaxFieldBytes) {
    return Fail(Status::InvalidArgument(
        fmt::format("snapshot {}: metric or key longer than {} bytes", path_, kSnapshotMaxFieldBytes)));
  }
  // The row before: its metric is the last stats entry's, its key in block_
  // (or, for a block's first row, copied when the block before was cut).
  if (rows_ > 0) {
    const std::string_view last_metric = stats_.back().metric;
    const std::string_view last_key =
        block_rows_ > 0 ? std::string_view(block_).substr(last_key_at_, last_key_size_) : last_key_;
    if (CompareKeys(row.metric, row.key, last_metric, last_key) <= 0) {
      return Fail(Status::InvalidArgument(fmt::format("snapshot {}: row ({:?}, {:?}) does not follow ({:?}, {:?})",
                                                      path_, row.metric, row.key, last_metric, last_key)));
    }
  }
  if (block_rows_ == 0) {
    IndexEntry e;
    e.first_metric = row.metric;
    e.first_key = row.key;
    index_.push_back(std::move(e));
  }
  if (block_rows_ % kBlockRestartInterval == 0) restarts_.push_back(static_cast<uint32_t>(block_.size()));
  // Rows come sorted by metric: its hash (the seed of the row's) and its
  // stats entry once per run of rows of one metric.
  if (stats_.empty() || stats_.back().metric != row.metric) {
    stats_.push_back(MetricStats{std::string(row.metric)});
    metric_seed_ = XXH64(row.metric.data(), row.metric.size(), 0);
  }
  key_hashes_.push_back(XXH64(row.key.data(), row.key.size(), metric_seed_));
  MetricStats& ms = stats_.back();
  ms.rows += 1;
  ms.events = WrappingAdd(ms.events, row.events);
  ms.count = WrappingAdd(ms.count, row.count);
  ms.sum_micros = WrappingAdd(ms.sum_micros, row.sum_micros);
  // One append per row: encoded in place at the end of block_.
  const size_t at = block_.size();
  block_.resize(at + row.metric.size() + row.key.size() + 5 * 10);
  char* p = block_.data() + at;
  p = EncodeVarint64(p, row.metric.size());
  std::memcpy(p, row.metric.data(), row.metric.size());
  p = EncodeVarint64(p + row.metric.size(), row.key.size());
  last_key_at_ = static_cast<size_t>(p - block_.data());
  last_key_size_ = row.key.size();
  std::memcpy(p, row.key.data(), row.key.size());
  p = EncodeVarint64(p + row.key.size(), ZigZag(row.count));
  p = EncodeVarint64(p, ZigZag(row.events));
  p = EncodeVarint64(p, ZigZag(row.sum_micros));
  block_.resize(p - block_.data());
  block_rows_++;
  rows_++;
  if (block_.size() >= options_.block_bytes) return FlushBlock();
  return Status::OK();
}

Status SnapshotWriter::FlushBlock() {
  if (block_rows_ == 0) return Status::OK();
  last_key_.assign(block_, last_key_at_, last_key_size_);  // what the next block's first row follows
  for (uint32_t r : restarts_) PutFixed32(&block_, r);
  const uint32_t num = static_cast<uint32_t>(restarts_.size());
  const size_t index_at = block_.size();
  AppendHashIndex(key_hashes_.data() + (key_hashes_.size() - block_rows_), block_rows_,
                  options_.block_hash_index ? HashSlots(block_rows_, num) : 0, &block_);
  if (flip_hash_index_byte_ < block_.size() - index_at - 4) block_[index_at + flip_hash_index_byte_] ^= 0x01;
  PutFixed32(&block_, num);
  restarts_.clear();
  compressed_.resize(ZSTD_compressBound(block_.size()));
  size_t n = ZSTD_compressCCtx(cctx_, compressed_.data(), compressed_.size(), block_.data(),
                               block_.size(), options_.zstd_level);
  if (ZSTD_isError(n)) {
    return Fail(Status::IOError(fmt::format("snapshot {}: zstd: {}", path_, ZSTD_getErrorName(n))));
  }
  IndexEntry& e = index_.back();
  e.offset = offset_;
  e.csize = static_cast<uint32_t>(n);
  e.usize = static_cast<uint32_t>(block_.size());
  e.rows = block_rows_;
  e.xxh64 = XXH64(compressed_.data(), n, 0);
  SNAPSINK_RETURN_IF_ERROR(AppendToFile(std::string_view(compressed_.data(), n)));
  block_.clear();
  block_rows_ = 0;
  if (index_.size() == 1) {
    // SPEC 8: a crash here leaves a data file with only part of its data.
    Status s = file_->Flush();
    if (!s.ok()) return Fail(s);
    MaybeCrash("seal.mid_data");
  }
  return Status::OK();
}

Status SnapshotWriter::Finish(SnapshotFileInfo* info) {
  SNAPSINK_RETURN_IF_ERROR(WriteTail(info));
  Status s = file_->Sync();
  if (s.ok()) s = file_->Close();
  if (!s.ok()) return Fail(s);
  return Status::OK();
}

Status SnapshotWriter::FinishUnsynced(SnapshotFileInfo* info, std::unique_ptr<WritableFile>* file) {
  SNAPSINK_RETURN_IF_ERROR(WriteTail(info));
  Status s = file_->Flush();
  if (!s.ok()) return Fail(s);
  *file = std::move(file_);
  return Status::OK();
}

Status SnapshotWriter::WriteTail(SnapshotFileInfo* info) {
  if (!error_.ok()) return error_;
  if (finished_) return Status::InvalidArgument(fmt::format("snapshot {}: Finish twice", path_));
  finished_ = true;
  SNAPSINK_RETURN_IF_ERROR(FlushBlock());

  const std::string filter = BuildFilter(key_hashes_);
  const uint64_t filter_offset = offset_;
  SNAPSINK_RETURN_IF_ERROR(AppendToFile(filter));
  const std::string stats = EncodeStats(stats_);
  const uint64_t stats_offset = offset_;
  SNAPSINK_RETURN_IF_ERROR(AppendToFile(stats));

  std::string index;
  PutFixed64(&index, filter_offset);
  PutFixed64(&index, filter.size());
  PutFixed64(&index, Hash(filter));
  PutFixed64(&index, stats_offset);
  PutFixed64(&index, stats.size());
  PutFixed64(&index, Hash(stats));
  PutFixed64(&index, index_.size());
  for (const IndexEntry& e : index_) {
    PutFixed64(&index, e.offset);
    PutFixed32(&index, e.csize);
    PutFixed32(&index, e.usize);
    PutFixed32(&index, e.rows);
    PutFixed64(&index, e.xxh64);
    PutFixed32(&index, static_cast<uint32_t>(e.first_metric.size()));
    index.append(e.first_metric);
    PutFixed32(&index, static_cast<uint32_t>(e.first_key.size()));
    index.append(e.first_key);
  }
  const uint64_t index_offset = offset_;
  SNAPSINK_RETURN_IF_ERROR(AppendToFile(index));

  std::string footer(kMagic, sizeof(kMagic));
  PutFixed32(&footer, kFormatVersion);
  PutFixed32(&footer, 0);  // reserved
  PutFixed64(&footer, index_offset);
  PutFixed64(&footer, index.size());
  PutFixed64(&footer, rows_);
  PutFixed64(&footer, Hash(index));
  PutFixed64(&footer, XXH64_digest(file_hash_));  // every byte before the footer
  PutFixed64(&footer, Hash(footer));
  SNAPSINK_RETURN_IF_ERROR(AppendToFile(footer));
  info->bytes = offset_;
  info->xxh64 = XXH64_digest(file_hash_);
  info->rows = rows_;
  return Status::OK();
}

// ---------------------------------------------------------------- reader

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
};

SnapshotReader::SnapshotReader(std::string path, std::unique_ptr<RandomAccessFile> file)
    : path_(std::move(path)), file_(std::move(file)), get_scratch_(new Scratch),
      cache_id_(BlockCache::Default()->NewId()) {}

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
  if (version_ < kOldestFormatVersion || version_ > kFormatVersion) {
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

  std::string index;
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
    if (static_cast<size_t>(end - p) < kIndexEntryFixed - 8) return Corrupt(at, "index entry truncated");
    e.offset = DecodeFixed64(p);
    e.csize = DecodeFixed32(p + 8);
    e.usize = DecodeFixed32(p + 12);
    e.rows = DecodeFixed32(p + 16);
    e.xxh64 = DecodeFixed64(p + 20);
    p += 28;
    for (std::string* s : {&e.first_metric, &e.first_key}) {
      if (end - p < 4) return Corrupt(at, "index entry truncated");
      const uint32_t n = DecodeFixed32(p);
      p += 4;
      if (n > kSnapshotMaxFieldBytes || n > static_cast<uint64_t>(end - p)) {
        return Corrupt(at, "index entry truncated");
      }
      s->assign(p, n);
      p += n;
    }
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
  while (p < end) {
    if (n % kBlockRestartInterval == 0 && (n / kBlockRestartInterval >= parts.num ||
                                           DecodeFixed32(parts.restarts + 4 * (n / kBlockRestartInterval)) !=
                                               static_cast<uint64_t>(p - begin))) {
      return Corrupt(e.offset, fmt::format("block {}: restart point of row {} is wrong", i, n));
    }
    if (!GetRow(&p, end, &cur)) return Corrupt(e.offset, fmt::format("block {}: bad row {}", i, n));
    if (n == 0 ? CompareKeys(cur.metric, cur.key, e.first_metric, e.first_key) != 0
               : CompareKeys(prev.metric, prev.key, cur.metric, cur.key) >= 0) {
      return Corrupt(e.offset, fmt::format("block {}: row {} out of order", i, n));
    }
    if (++n > e.rows) return Corrupt(e.offset, fmt::format("block {}: more rows than the index says", i));
    if (!fn(cur)) return Status::OK();
    prev = cur;
  }
  if (n != e.rows) return Corrupt(e.offset, fmt::format("block {}: fewer rows than the index says", i));
  return Status::OK();
}

size_t SnapshotReader::FindBlock(std::string_view metric, std::string_view key) const {
  auto it = std::upper_bound(index_.begin(), index_.end(), 0, [&](int, const IndexEntry& e) {
    return CompareKeys(metric, key, e.first_metric, e.first_key) < 0;
  });
  return it == index_.begin() ? index_.size() : static_cast<size_t>(it - index_.begin()) - 1;
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

namespace {

// Compares (metric, key) with at most kBlockRestartInterval rows from
// `p`, in order; fills *row on a match.
bool ScanRestartInterval(const char* p, const char* end, std::string_view metric, std::string_view key, Row* row) {
  RowView v;
  for (uint32_t n = 0; n < kBlockRestartInterval && p < end; n++) {
    const char* at = p;
    GetRowKey(&p, end, &v);
    const int c = CompareKeys(v.metric, v.key, metric, key);
    if (c == 0) {
      GetRow(&at, end, &v);
      ToRow(v, row);
      return true;
    }
    if (c > 0) break;
  }
  return false;
}

}  // namespace

bool SnapshotReader::SearchBlock(std::string_view plain, uint32_t rows, std::string_view metric,
                                 std::string_view key, uint64_t hash, Row* row) const {
  // The block was checked whole when it was cached: every restart point is
  // the start of a row, rows are sorted, the hash index is the one its rows
  // give, so the decoding and probing below cannot fail or loop forever.
  BlockParts parts;
  SplitBlock(plain, rows, version_, &parts);
  const char* const begin = parts.rows.data();
  const char* const end = begin + parts.rows.size();
  if (parts.num_slots > 0) {
    // Linear probing from the key's bucket: a free slot ends the chain
    // (absent); a slot with the key's fingerprint names a restart interval
    // that may hold it (a fingerprint shared by another key costs one scan).
    const uint8_t fp = HashFingerprint(hash);
    uint32_t b = HashBucket(hash, parts.num_slots);
    for (;;) {
      const uint8_t restart = static_cast<uint8_t>(parts.slots[kHashSlotBytes * b]);
      if (restart == kHashEmpty) return false;
      if (static_cast<uint8_t>(parts.slots[kHashSlotBytes * b + 1]) == fp &&
          ScanRestartInterval(begin + DecodeFixed32(parts.restarts + 4 * restart), end, metric, key, row)) {
        return true;
      }
      b = b + 1 == parts.num_slots ? 0 : b + 1;
    }
  }
  // No hash index (a version 2 file, or too many restart points): the last
  // restart whose row is <= (metric, key); row 0 is (FindBlock).
  uint32_t lo = 0, hi = parts.num - 1;
  RowView v;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo + 1) / 2;
    const char* p = begin + DecodeFixed32(parts.restarts + 4 * mid);
    GetRowKey(&p, end, &v);
    if (CompareKeys(v.metric, v.key, metric, key) <= 0) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return ScanRestartInterval(begin + DecodeFixed32(parts.restarts + 4 * lo), end, metric, key, row);
}

Status SnapshotReader::Get(std::string_view metric, std::string_view key, Row* row) const {
  // A short message: absent keys are common, and this one fits the string's inline buffer.
  const uint64_t hash = FilterHash(metric, key);
  if (!FilterMatches(filter_, hash)) return Status::NotFound("no such row");
  const size_t i = FindBlock(metric, key);
  if (i == index_.size()) return Status::NotFound("no such row");
  BlockCache* cache = BlockCache::Default();
  std::shared_ptr<const std::string> block = cache->Lookup(cache_id_, i);
  if (block == nullptr) {
    std::lock_guard<std::mutex> lock(get_mu_);
    Scratch* scratch = get_scratch_.get();
    SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, scratch));
    scratch->hashes.clear();
    RowHasher hasher;
    SNAPSINK_RETURN_IF_ERROR(DecodeBlock(i, scratch->plain, [&](const RowView& v) {
      scratch->hashes.push_back(hasher.Hash(v.metric, v.key));
      return true;
    }));
    // The filter must hold every row: one that misses a row hides it from
    // lookups. Rows of a block Get reads are checked here; VerifyAll checks all.
    if (!FilterMatchesAll(filter_, scratch->hashes.data(), scratch->hashes.size())) return Corrupt(filter_section_.offset, fmt::format("filter misses a row of block {}", i));
    if (version_ >= 3) SNAPSINK_RETURN_IF_ERROR(CheckHashIndex(i, scratch->plain, scratch->hashes, &scratch->table));
    block = std::make_shared<const std::string>(scratch->plain);
    cache->Insert(cache_id_, i, block);
  }
  if (!SearchBlock(*block, index_[i].rows, metric, key, hash, row)) return Status::NotFound("no such row");
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
  SeekTo to{std::string(metric), std::string(key)};
  size_t i = FindBlock(to.metric, to.key);
  if (i == index_.size()) i = 0;  // every block starts after it: from the first
  Scratch scratch;
  if (scratch.dctx == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  bool seeking = true;  // rows before `to` are skipped
  bool stop = false;
  while (i < index_.size() && !stop) {
    size_t next = i + 1;
    SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, &scratch));
    SNAPSINK_RETURN_IF_ERROR(DecodeBlock(i, scratch.plain, [&](const RowView& v) {
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
    i = next;
  }
  return Status::OK();
}

Status SnapshotReader::VerifyAll(uint64_t expected_xxh64, const std::function<void(const RowView&)>* visit) const {
  // Pass 1: the bytes, with no knowledge of the format beyond the footer.
  XXH64_state_t* state = XXH64_createState();
  if (state == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  XXH64_reset(state, 0);
  std::string chunk;
  uint64_t prefix = 0;
  Status s;
  for (uint64_t off = 0; off < size_ && s.ok();) {
    const uint64_t footer_offset = size_ - kFooterSize;
    if (off == footer_offset) prefix = XXH64_digest(state);
    uint64_t n = std::min<uint64_t>(1 << 20, (off < footer_offset ? footer_offset : size_) - off);
    s = file_->Read(off, n, &chunk);
    if (s.ok() && chunk.size() != n) s = Corrupt(off, "short read");
    if (s.ok()) XXH64_update(state, chunk.data(), n);
    off += n;
  }
  const uint64_t whole = XXH64_digest(state);
  XXH64_freeState(state);
  SNAPSINK_RETURN_IF_ERROR(s);
  if (expected_xxh64 != 0 && whole != expected_xxh64) {
    return Corrupt(0, fmt::format("file xxh64 {:016x} differs from the expected {:016x}", whole,
                                  expected_xxh64));
  }
  if (prefix != prefix_xxh64_) return Corrupt(0, "data checksum in footer does not match the file");

  // Pass 2: every block, and the order across blocks.
  Scratch scratch;
  if (scratch.dctx == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
  std::string last_metric, last_key;
  uint64_t rows = 0;
  RowHasher hasher;
  for (size_t i = 0; i < index_.size(); i++) {
    SNAPSINK_RETURN_IF_ERROR(LoadBlock(i, &scratch));
    bool first = true, ordered = true;
    RowView last;  // points into scratch.plain, valid until the next LoadBlock
    scratch.hashes.clear();
    SNAPSINK_RETURN_IF_ERROR(DecodeBlock(i, scratch.plain, [&](const RowView& v) {
      if (first && i > 0 && CompareKeys(last_metric, last_key, v.metric, v.key) >= 0) ordered = false;
      scratch.hashes.push_back(hasher.Hash(v.metric, v.key));
      first = false;
      last = v;
      rows++;
      if (visit != nullptr) (*visit)(v);
      return true;
    }));
    if (!ordered) return Corrupt(index_[i].offset, fmt::format("block {} overlaps the block before", i));
    if (!FilterMatchesAll(filter_, scratch.hashes.data(), scratch.hashes.size())) {
      return Corrupt(filter_section_.offset, fmt::format("filter misses a row of block {}", i));
    }
    if (version_ >= 3) SNAPSINK_RETURN_IF_ERROR(CheckHashIndex(i, scratch.plain, scratch.hashes, &scratch.table));
    last_metric.assign(last.metric);
    last_key.assign(last.key);
  }
  if (rows != rows_) return Corrupt(size_ - kFooterSize + 32, "row count differs from the blocks");
  return Status::OK();
}

}  // namespace snapsink
