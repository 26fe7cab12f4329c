#include "publish/old_formats.h"

#include <simdjson.h>
#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "engine/coding.h"
#include "snapshot/checked_json.h"
#include "snapshot/snapshot_format.h"
#include "snapshot/json_members.h"

namespace snapsink::old_format {

namespace {

using coding::DecodeFixed32;
using coding::DecodeFixed64;

// Data file version 1 (docs/FORMAT.md, Old roots). Do not change: on disk.
constexpr char kMagic[8] = {'S', 'N', 'A', 'P', 'S', 'N', 'K', '1'};
constexpr size_t kFooterSize = 64;
constexpr size_t kIndexEntryFixed = 8 + 4 + 4 + 4 + 8 + 4 + 4;  // without the two strings
constexpr uint64_t kMaxBlockBytes = kSnapshotBlockBytes + 2 * kSnapshotMaxFieldBytes + 64;

uint64_t Hash(std::string_view s) { return XXH64(s.data(), s.size(), 0); }

int CompareKeys(std::string_view m1, std::string_view k1, std::string_view m2, std::string_view k2) {
  int c = m1.compare(m2);
  return c != 0 ? c : k1.compare(k2);
}

bool GetLengthPrefixed(const char** p, const char* end, std::string_view* out) {
  uint64_t n;
  if (!coding::GetVarint64(p, end, &n) || n > kSnapshotMaxFieldBytes || n > static_cast<uint64_t>(end - *p)) {
    return false;
  }
  *out = std::string_view(*p, n);
  *p += n;
  return true;
}

bool GetRow(const char** p, const char* end, RowView* r) {
  uint64_t c, e, s;
  if (!GetLengthPrefixed(p, end, &r->metric) || !GetLengthPrefixed(p, end, &r->key) ||
      !coding::GetVarint64(p, end, &c) || !coding::GetVarint64(p, end, &e) || !coding::GetVarint64(p, end, &s)) {
    return false;
  }
  r->count = coding::UnZigZag(c);
  r->events = coding::UnZigZag(e);
  r->sum_micros = coding::UnZigZag(s);
  return true;
}

struct IndexEntry {
  uint64_t offset = 0;
  uint32_t csize = 0, usize = 0, rows = 0;
  uint64_t xxh64 = 0;
  std::string first_metric, first_key;
};

class V1File {
 public:
  V1File(std::string path, std::string bytes) : path_(std::move(path)), bytes_(std::move(bytes)) {}

  Status Corrupt(uint64_t offset, std::string_view what) const {
    return Status::Corruption(fmt::format("snapshot {}: offset {}: {}", path_, offset, what));
  }

  Status ParseFooterAndIndex() {
    const uint64_t size = bytes_.size();
    if (size < kFooterSize + 8) return Corrupt(0, fmt::format("file too short ({} bytes)", size));
    const uint64_t footer_offset = size - kFooterSize;
    const char* f = bytes_.data() + footer_offset;
    if (std::memcmp(f, kMagic, sizeof(kMagic)) != 0) return Corrupt(footer_offset, "bad magic in footer");
    if (DecodeFixed64(f + 56) != XXH64(f, 56, 0)) return Corrupt(footer_offset, "footer checksum mismatch");
    if (DecodeFixed32(f + 8) != 1) return Corrupt(footer_offset + 8, "not a version 1 data file");
    if (DecodeFixed32(f + 12) != 0) return Corrupt(footer_offset + 12, "reserved footer field is not 0");
    const uint64_t index_offset = DecodeFixed64(f + 16);
    const uint64_t index_size = DecodeFixed64(f + 24);
    const uint64_t rows = DecodeFixed64(f + 32);
    if (index_size < 8 || index_offset > footer_offset || footer_offset - index_offset != index_size) {
      return Corrupt(footer_offset + 16, "index position does not match the file size");
    }
    if (XXH64(bytes_.data(), footer_offset, 0) != DecodeFixed64(f + 48)) {
      return Corrupt(0, "checksum of the blocks and index does not match the footer");
    }
    std::string_view index(bytes_.data() + index_offset, index_size);
    if (Hash(index) != DecodeFixed64(f + 40)) return Corrupt(index_offset, "index checksum mismatch");
    const char* p = index.data();
    const char* const end = p + index.size();
    const uint64_t count = DecodeFixed64(p);
    p += 8;
    if (count > index_size / kIndexEntryFixed) return Corrupt(index_offset, "bad block count in index");
    uint64_t expect_offset = 0, total_rows = 0;
    for (uint64_t i = 0; i < count; i++) {
      const uint64_t at = index_offset + static_cast<uint64_t>(p - index.data());
      // The entry is laid out as in every later version: one parser (snapshot/snapshot_format.h).
      snapshot::IndexEntryView v;
      if (!snapshot::GetIndexEntry(&p, end, &v)) return Corrupt(at, "index entry truncated");
      IndexEntry e{v.offset, v.csize, v.usize, v.rows, v.xxh64, std::string(v.first_metric), std::string(v.first_key)};
      if (e.offset != expect_offset || e.csize == 0 || e.usize == 0 || e.usize > kMaxBlockBytes || e.rows == 0) {
        return Corrupt(at, fmt::format("bad index entry for block {}", i));
      }
      if (!index_.empty() &&
          CompareKeys(index_.back().first_metric, index_.back().first_key, e.first_metric, e.first_key) >= 0) {
        return Corrupt(at, fmt::format("index not sorted at block {}", i));
      }
      expect_offset += e.csize;
      total_rows += e.rows;
      index_.push_back(std::move(e));
    }
    if (p != end) return Corrupt(index_offset, "trailing bytes in index");
    if (expect_offset != index_offset) return Corrupt(index_offset, "blocks do not end at the index");
    if (total_rows != rows) return Corrupt(footer_offset + 32, "row count differs from the index");
    return Status::OK();
  }

  Status Scan(const std::function<Status(const Row&)>& fn) const {
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (dctx == nullptr) return Status::IOError(fmt::format("snapshot {}: out of memory", path_));
    std::string plain;
    Row row;
    RowView cur;
    std::string prev_metric, prev_key;  // the row before, across blocks
    bool first_row = true;
    for (size_t i = 0; i < index_.size(); i++) {
      const IndexEntry& e = index_[i];
      std::string_view compressed(bytes_.data() + e.offset, e.csize);
      if (Hash(compressed) != e.xxh64) return Corrupt(e.offset, fmt::format("block {} checksum mismatch", i));
      if (ZSTD_getFrameContentSize(compressed.data(), e.csize) != e.usize) {
        return Corrupt(e.offset, fmt::format("block {} has the wrong size", i));
      }
      plain.resize(e.usize);
      size_t n = ZSTD_decompressDCtx(dctx.get(), plain.data(), e.usize, compressed.data(), e.csize);
      if (ZSTD_isError(n) || n != e.usize) return Corrupt(e.offset, fmt::format("block {} does not decompress", i));
      const char* p = plain.data();
      const char* const end = p + plain.size();
      uint32_t rows = 0;
      while (p < end) {
        if (!GetRow(&p, end, &cur)) return Corrupt(e.offset, fmt::format("block {}: bad row {}", i, rows));
        if (rows == 0 && CompareKeys(cur.metric, cur.key, e.first_metric, e.first_key) != 0) {
          return Corrupt(e.offset, fmt::format("block {}: first row differs from the index", i));
        }
        if (!first_row && CompareKeys(prev_metric, prev_key, cur.metric, cur.key) >= 0) {
          return Corrupt(e.offset, fmt::format("block {}: row {} out of order", i, rows));
        }
        if (++rows > e.rows) return Corrupt(e.offset, fmt::format("block {}: more rows than the index says", i));
        row.metric.assign(cur.metric);
        row.key.assign(cur.key);
        row.count = cur.count;
        row.sum_micros = cur.sum_micros;
        row.events = cur.events;
        SNAPSINK_RETURN_IF_ERROR(fn(row));
        prev_metric.swap(row.metric);
        prev_key.swap(row.key);
        first_row = false;
      }
      if (rows != e.rows) return Corrupt(e.offset, fmt::format("block {}: fewer rows than the index says", i));
    }
    return Status::OK();
  }

 private:
  std::string path_;
  std::string bytes_;
  std::vector<IndexEntry> index_;
};

}  // namespace

Status DataFileVersion(Env* env, const std::string& path, uint32_t* version) {
  std::unique_ptr<RandomAccessFile> file;
  SNAPSINK_RETURN_IF_ERROR(env->NewRandomAccessFile(path, &file));
  if (file->Size() < kFooterSize) return Status::Corruption(fmt::format("snapshot {}: too short for a footer", path));
  std::string footer;
  SNAPSINK_RETURN_IF_ERROR(file->Read(file->Size() - kFooterSize, kFooterSize, &footer));
  if (std::memcmp(footer.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Corruption(fmt::format("snapshot {}: bad magic in footer", path));
  }
  *version = DecodeFixed32(footer.data() + 8);
  if (*version < 1 || *version > 3) {
    return Status::Corruption(fmt::format("snapshot {}: unknown format version {}", path, *version));
  }
  return Status::OK();
}

Status ScanDataFileV1(Env* env, const std::string& path, uint64_t expected_xxh64,
                      const std::function<Status(const Row&)>& fn) {
  std::string bytes;
  SNAPSINK_RETURN_IF_ERROR(env->ReadFileToString(path, &bytes));
  if (Hash(bytes) != expected_xxh64) {
    return Status::Corruption(fmt::format("snapshot {}: checksum differs from its manifest's", path));
  }
  V1File f(path, std::move(bytes));
  SNAPSINK_RETURN_IF_ERROR(f.ParseFooterAndIndex());
  return f.Scan(fn);
}

Status ManifestVersion(std::string_view text, const std::string& name, uint64_t* version) {
  std::string_view body;
  SNAPSINK_RETURN_IF_ERROR(OpenJson(text, &body, name));
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(body.data(), body.size()).get(doc); err != simdjson::SUCCESS) {
    return r.Bad("JSON", simdjson::error_message(err));
  }
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(r.Object(doc, "document", &o));
  return r.Uint(o, "format_version", UINT64_MAX, version);
}

Status DecodeSnapshotManifestV1(std::string_view text, const std::string& name, SnapshotManifest* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, "snapsink.snapshot", 1, &r, &parser, &o, name));
  SnapshotManifest m;
  uint32_t version = 0;
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "window_ms", &m.window_ms));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "window_size_ms", &m.window_size_ms));
  SNAPSINK_RETURN_IF_ERROR(r.Uint32(o, "version", &version));
  m.version = version;
  SNAPSINK_RETURN_IF_ERROR(r.Uint32(o, "aggregation_version", &m.aggregation_version));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "rows", UINT64_MAX, &m.rows));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "events", &m.events));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "count", &m.count));
  SNAPSINK_RETURN_IF_ERROR(r.Int(o, "sum_micros", &m.sum_micros));
  SNAPSINK_RETURN_IF_ERROR(DecodeSnapshotFiles(r, o, &m.files));
  *out = std::move(m);
  return Status::OK();
}

Status DecodeGenerationManifestV1(std::string_view text, const std::string& name, GenerationManifest* out) {
  MemberReader r(name);
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  SNAPSINK_RETURN_IF_ERROR(OpenCheckedDocument(text, "snapsink.generation", 1, &r, &parser, &o, name));
  GenerationManifest g;
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "generation", UINT64_MAX, &g.generation));
  SNAPSINK_RETURN_IF_ERROR(r.Uint(o, "parent", UINT64_MAX, &g.parent));
  if (g.parent != 0 && g.parent >= g.generation) return r.Bad("parent", "not below generation");
  simdjson::dom::array arr;
  SNAPSINK_RETURN_IF_ERROR(r.Array(o, "windows", &arr));
  for (simdjson::dom::element e : arr) {
    simdjson::dom::object wo;
    SNAPSINK_RETURN_IF_ERROR(r.Object(e, "windows[]", &wo));
    GenerationEntry w;
    uint32_t version = 0;
    SNAPSINK_RETURN_IF_ERROR(r.Int(wo, "window_ms", &w.window_ms));
    SNAPSINK_RETURN_IF_ERROR(r.Uint32(wo, "version", &version));
    w.version = version;
    SNAPSINK_RETURN_IF_ERROR(r.Hex(wo, "manifest_xxh64", &w.manifest_xxh64));
    if (!g.windows.empty() && g.windows.back().window_ms >= w.window_ms) {
      return r.Bad("windows", fmt::format("window_ms {} is not sorted or not unique", w.window_ms));
    }
    g.windows.push_back(w);
  }
  *out = std::move(g);
  return Status::OK();
}

bool ParseCurrentV1(std::string_view text, uint64_t* generation) {
  if (text.size() < 2 || text.back() != '\n' || text[0] == '0') return false;
  uint64_t g = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return false;
    if (g > (UINT64_MAX - 9) / 10) return false;
    g = g * 10 + static_cast<uint64_t>(c - '0');
  }
  *generation = g;
  return true;
}

}  // namespace snapsink::old_format
