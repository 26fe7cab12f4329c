// SnapshotWriter (snapshot/snapshot_file.h): rows into blocks, then the
// filter, the stats, the index and the footer (docs/FORMAT.md).
#include <xxhash.h>
#include <zstd.h>

#include <cstring>

#include <fmt/format.h>

#include "engine/coding.h"
#include "engine/crash_point.h"
#include "engine/kind_sketch.h"
#include "engine/decimal.h"
#include "snapshot/snapshot_compressor.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_filter.h"
#include "snapshot/snapshot_format.h"

namespace snapsink {

using coding::PutFixed32;
using coding::PutFixed64;
using coding::ZigZag;
using snapshot::AppendHashIndex;
using snapshot::BuildFilter;
using snapshot::EncodeStats;
using snapshot::EncodeVarint64;
using snapshot::Hash;
using snapshot::HashSlots;
using snapshot::kFileFormatVersion;
using snapshot::kMaxRowSketchBytes;
using snapshot::kMagic;

struct SnapshotWriter::IndexEntry {
  uint64_t offset = 0;
  uint32_t csize = 0, usize = 0, rows = 0;
  uint64_t xxh64 = 0;
  std::string first_metric, first_key;
};

namespace {
// Sketch rows are extended rows (version 5 extends version 4).
SnapshotWriterOptions WithExtended(SnapshotWriterOptions o) {
  o.extended_rows |= o.sketch_rows || o.distinct_rows;
  return o;
}
}  // namespace

SnapshotWriter::SnapshotWriter(std::string path, std::unique_ptr<WritableFile> file,
                               const SnapshotWriterOptions& options)
    : path_(std::move(path)),
      file_(std::move(file)),
      options_(WithExtended(options)),
      cctx_(ZSTD_createCCtx()),
      file_hash_(XXH64_createState()) {
  XXH64_reset(file_hash_, 0);
  block_.reserve(options_.block_bytes + 1024);
}

SnapshotWriter::~SnapshotWriter() {
  compressor_.reset();  // stops its thread
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
  return AddView(ViewOf(row));
}

Status SnapshotWriter::AddView(const RowView& row) {
  if (!error_.ok()) return error_;
  if (finished_) return Status::InvalidArgument(fmt::format("snapshot {}: Add after Finish", path_));
  if (row.has_range && (!options_.extended_rows || row.min_micros > row.max_micros)) {
    return Fail(Status::InvalidArgument(fmt::format(
        "snapshot {}: row ({:?}, {:?}) has a range but the file was opened without extended rows", path_, row.metric,
        row.key)));
  }
  const bool distinct = IsDistinctSketch(row.sketch);
  if (!row.sketch.empty() && (!(distinct ? options_.distinct_rows : options_.sketch_rows) || !row.has_range ||
                              row.sketch.size() > kMaxRowSketchBytes)) {
    return Fail(Status::InvalidArgument(fmt::format(
        "snapshot {}: row ({:?}, {:?}) has a sketch but the file was opened without sketch rows", path_, row.metric,
        row.key)));
  }
  if (!row.sketch.empty()) {
    if (!CheckSketch(row.sketch).ok()) {
      return Fail(Status::Corruption(
          fmt::format("snapshot {}: row ({:?}, {:?}): its sketch does not decode", path_, row.metric,
                      row.key)));
    }
  }
  if (row.metric.size() > kSnapshotMaxFieldBytes || row.key.size() > kSnapshotMaxFieldBytes) {
    return Fail(Status::InvalidArgument(
        fmt::format("snapshot {}: metric or key longer than {} bytes", path_, kSnapshotMaxFieldBytes)));
  }
  // The row before: its metric is the last stats entry's, its key in block_
  // (or, for a block's first row, copied when the block before was cut).
  // The metrics are compared once, for the order and for the stats entry.
  const int metric_order = rows_ == 0 ? 1 : row.metric.compare(stats_.back().metric);
  if (metric_order <= 0) {
    const std::string_view last_key =
        block_rows_ > 0 ? std::string_view(block_).substr(last_key_at_, last_key_size_) : last_key_;
    if (metric_order < 0 || row.key.compare(last_key) <= 0) {
      return Fail(Status::InvalidArgument(fmt::format("snapshot {}: row ({:?}, {:?}) does not follow ({:?}, {:?})",
                                                      path_, row.metric, row.key, stats_.back().metric, last_key)));
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
  if (metric_order != 0) {
    stats_.push_back(MetricStats{std::string(row.metric)});
    metric_seed_ = XXH64(row.metric.data(), row.metric.size(), 0);
  }
  key_hashes_.push_back(snapshot::KeyHash(row.key.data(), row.key.size(), metric_seed_));
  MetricStats& ms = stats_.back();
  ms.rows += 1;
  ms.events = WrappingAdd(ms.events, row.events);
  ms.count = WrappingAdd(ms.count, row.count);
  ms.sum_micros = WrappingAdd(ms.sum_micros, row.sum_micros);
  // One append per row: encoded in place at the end of block_.
  const size_t at = block_.size();
  block_.resize(at + row.metric.size() + row.key.size() + 9 * 10 + row.sketch.size());
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
  if (options_.extended_rows) {
    p = EncodeVarint64(p, distinct              ? snapshot::kRowExtDistinct
                          : !row.sketch.empty() ? snapshot::kRowExtSketch
                          : row.has_range        ? snapshot::kRowExtRange
                                                 : snapshot::kRowExtNone);
    if (row.has_range) {
      p = EncodeVarint64(p, ZigZag(row.min_micros));
      p = EncodeVarint64(p, ZigZag(row.max_micros));
    }
    if (!row.sketch.empty()) {
      p = EncodeVarint64(p, row.sketch.size());
      std::memcpy(p, row.sketch.data(), row.sketch.size());
      p += row.sketch.size();
    }
  }
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
  index_.back().rows = block_rows_;
  // Every block after the first is compressed ahead, on both threads, while
  // the next ones are encoded; blocks reach the file in their order.
  if (index_.size() > 1 && options_.compress_ahead) {
    if (compressor_ == nullptr) compressor_ = std::make_unique<SnapshotCompressor>(options_.zstd_level);
    if (compressor_->full()) SNAPSINK_RETURN_IF_ERROR(TakeCompressed());
    if (compressor_->empty()) pending_entry_ = index_.size() - 1;
    if (compressor_->Submit(&block_)) {
      block_rows_ = 0;
      return Status::OK();
    }
  }
  SNAPSINK_RETURN_IF_ERROR(TakeAllCompressed());
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

Status SnapshotWriter::TakeCompressed() {
  if (compressor_ == nullptr || compressor_->empty()) return Status::OK();
  uint32_t usize = 0;
  uint64_t xxh64 = 0;
  std::string error;
  compressor_->TakeOldest(cctx_, &compressed_, &usize, &xxh64, &error);
  if (!error.empty()) return Fail(Status::IOError(fmt::format("snapshot {}: zstd: {}", path_, error)));
  IndexEntry& e = index_[pending_entry_++];
  e.offset = offset_;
  e.csize = static_cast<uint32_t>(compressed_.size());
  e.usize = usize;
  e.xxh64 = xxh64;
  return AppendToFile(compressed_);
}

Status SnapshotWriter::TakeAllCompressed() {
  while (compressor_ != nullptr && !compressor_->empty()) SNAPSINK_RETURN_IF_ERROR(TakeCompressed());
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
  SNAPSINK_RETURN_IF_ERROR(TakeAllCompressed());

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
  PutFixed32(&footer, options_.distinct_rows   ? snapshot::kDistinctRowsVersion
                      : options_.sketch_rows     ? snapshot::kSketchRowsVersion
                      : options_.extended_rows ? snapshot::kExtendedRowsVersion
                                               : kFileFormatVersion);
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

}  // namespace snapsink
