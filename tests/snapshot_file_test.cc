// Tests of snapshot/snapshot_file: round trips, lookups at block boundaries,
// determinism, and a byte-flip corruption sweep (STYLE: corruption_test).
#include "snapshot/snapshot_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "engine/env.h"
#include "snapshot/snapshot_compressor.h"
#include "snapshot/snapshot_format.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

class SnapshotFileTest : public ::testing::Test {
 protected:
  // Blocks of about 2,000 bytes with the hash index: many blocks from a few
  // thousand rows.
  static SnapshotWriterOptions SmallBlocks() {
    SnapshotWriterOptions o;
    o.block_bytes = 2000;
    o.block_hash_index = true;
    return o;
  }
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "snapshot_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)env_->RemoveTree(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // n rows over 10 metrics; numbers vary in sign and size.
  static std::vector<Row> MakeRows(size_t n) {
    std::vector<Row> rows(n);
    for (size_t i = 0; i < n; i++) {
      Row& r = rows[i];
      r.metric = fmt::format("metric{:02d}", i * 10 / std::max<size_t>(n, 1));
      r.key = fmt::format("key{:09d}", i * 7);
      r.count = static_cast<int64_t>(i % 1000) - 3;
      r.sum_micros = static_cast<int64_t>(i) * 1234567 - 99999999;
      r.events = static_cast<int64_t>(i % 13);
    }
    return rows;
  }

  void Write(const std::string& path, const std::vector<Row>& rows, SnapshotFileInfo* info,
             const SnapshotWriterOptions& options = SnapshotWriterOptions()) {
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env_, path, &w, options));
    for (const Row& r : rows) ASSERT_STATUS_OK(w->Add(r));
    Status s = w->Finish(info);
    ASSERT_STATUS_OK(s);
  }

  std::unique_ptr<SnapshotReader> OpenOrDie(const std::string& path) {
    std::unique_ptr<SnapshotReader> r;
    Status s = SnapshotReader::Open(env_, path, &r);
    EXPECT_STATUS_OK(s);
    return r;
  }

  std::string ReadAll(const std::string& path) {
    std::string data;
    EXPECT_STATUS_OK(env_->ReadFileToString(path, &data));
    return data;
  }

  // Checks every way of reading the file against `rows`.
  void CheckContents(const std::string& path, const std::vector<Row>& rows, const SnapshotFileInfo& info) {
    std::string bytes = ReadAll(path);
    EXPECT_EQ(info.bytes, bytes.size());
    EXPECT_EQ(info.xxh64, XXH64(bytes.data(), bytes.size(), 0));
    EXPECT_EQ(info.rows, rows.size());
    auto r = OpenOrDie(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->rows(), rows.size());
    size_t i = 0;
    bool same = true;
    ASSERT_STATUS_OK(r->Scan(nullptr, [&](const Row& row) { same = same && i < rows.size() && row == rows[i++]; }));
    EXPECT_TRUE(same);
    EXPECT_EQ(i, rows.size());
    Status s = r->VerifyAll(info.xxh64);
    EXPECT_STATUS_OK(s);
  }

  Env* env_ = Env::Default();
  std::string dir_;
};

TEST_F(SnapshotFileTest, EmptyFile) {
  SnapshotFileInfo info;
  Write(Path("empty"), {}, &info);
  CheckContents(Path("empty"), {}, info);
  auto r = OpenOrDie(Path("empty"));
  EXPECT_EQ(r->blocks(), 0u);
  Row row;
  EXPECT_TRUE(r->Get("m", "k", &row).IsNotFound());
  EXPECT_TRUE(r->Get("", "", &row).IsNotFound());
  std::string m = "m";
  EXPECT_STATUS_OK(r->Scan(&m, [](const Row&) { ADD_FAILURE(); }));
}

TEST_F(SnapshotFileTest, OneRow) {
  std::vector<Row> rows = {{"orders", "eu", 3, 37500000, 4}};
  SnapshotFileInfo info;
  Write(Path("one"), rows, &info);
  CheckContents(Path("one"), rows, info);
  auto r = OpenOrDie(Path("one"));
  Row row;
  ASSERT_STATUS_OK(r->Get("orders", "eu", &row));
  EXPECT_EQ(row, rows[0]);
  EXPECT_TRUE(r->Get("orders", "e", &row).IsNotFound());
  EXPECT_TRUE(r->Get("orders", std::string_view("eu\0", 3), &row).IsNotFound());
  EXPECT_TRUE(r->Get("orders", "us", &row).IsNotFound());
  EXPECT_TRUE(r->Get("a", "eu", &row).IsNotFound());
  EXPECT_TRUE(r->Get("z", "", &row).IsNotFound());
}

TEST_F(SnapshotFileTest, ExtremeValuesAndBytes) {
  std::vector<Row> rows = {
      {"", "", INT64_MIN, INT64_MAX, 0},
      {"", std::string("\0", 1), -1, 1, INT64_MIN},
      {std::string("\xff\x00", 2), "\xff", INT64_MAX, INT64_MIN, INT64_MAX},
  };
  SnapshotFileInfo info;
  Write(Path("x"), rows, &info);
  CheckContents(Path("x"), rows, info);
  auto r = OpenOrDie(Path("x"));
  for (const Row& want : rows) {
    Row row;
    ASSERT_STATUS_OK(r->Get(want.metric, want.key, &row));
    EXPECT_EQ(row, want);
  }
}

TEST_F(SnapshotFileTest, ManyBlocks) {
  const std::vector<Row> rows = MakeRows(300000);
  SnapshotFileInfo info;
  Write(Path("big"), rows, &info);
  CheckContents(Path("big"), rows, info);
  auto r = OpenOrDie(Path("big"));
  ASSERT_GT(r->blocks(), 50u);

  // Every block boundary: the first row of each block, the last of the one
  // before, and absent keys on either side of the boundary.
  size_t first = 0;
  Row row;
  for (size_t b = 0; b < r->blocks(); b++) {
    SnapshotReader::BlockInfo bi = r->block(b);
    ASSERT_EQ(bi.first_metric, rows[first].metric);
    ASSERT_EQ(bi.first_key, rows[first].key);
    ASSERT_STATUS_OK(r->Get(rows[first].metric, rows[first].key, &row));
    EXPECT_EQ(row, rows[first]);
    const size_t last = first + bi.rows - 1;
    ASSERT_STATUS_OK(r->Get(rows[last].metric, rows[last].key, &row));
    EXPECT_EQ(row, rows[last]);
    EXPECT_TRUE(r->Get(rows[first].metric, rows[first].key + std::string("\0", 1), &row).IsNotFound());
    EXPECT_TRUE(r->Get(rows[last].metric, rows[last].key + "\x01", &row).IsNotFound());
    if (first > 0) {
      ASSERT_STATUS_OK(r->Get(rows[first - 1].metric, rows[first - 1].key, &row));
      EXPECT_EQ(row, rows[first - 1]);
    }
    first += bi.rows;
  }
  EXPECT_EQ(first, rows.size());
  for (size_t i = 0; i < rows.size(); i += 997) {
    ASSERT_STATUS_OK(r->Get(rows[i].metric, rows[i].key, &row));
    EXPECT_EQ(row, rows[i]);
  }
  EXPECT_TRUE(r->Get("metric00", "", &row).IsNotFound());
  EXPECT_TRUE(r->Get("metric", "key", &row).IsNotFound());
  EXPECT_TRUE(r->Get("metric09", "zzz", &row).IsNotFound());
  EXPECT_TRUE(r->Get("metric10", "", &row).IsNotFound());
}

// A range scan made in goes (ScanFrom with a ScanPosition): each go stops
// after a few rows and the next goes on from that row, with one set of
// buffers for two files read by turns (the same keys, other counts: a go's
// block is often the same block number of the other file, which the
// buffers hold), a seek over some rows in each; together the goes visit
// exactly the rows of one scan, and the position ends set to `end`.
TEST_F(SnapshotFileTest, AScanInGoesVisitsTheRowsOfOneScan) {
  const std::vector<Row> rows = MakeRows(3000);
  SnapshotWriterOptions small;
  small.block_bytes = 512;  // many blocks, so goes cross block boundaries
  SnapshotFileInfo info;
  Write(Path("a"), rows, &info, small);
  std::vector<Row> other_rows = rows;
  for (Row& r : other_rows) r.count = -r.count - 1;  // as many bytes, other numbers
  Write(Path("b"), other_rows, &info, small);
  auto a = OpenOrDie(Path("a"));
  auto b = OpenOrDie(Path("b"));
  ASSERT_GT(a->blocks(), 20u);
  // The rows a scan from metric03 visits, skipping keys ending in 5 by a seek
  // to the next row (as a filter that skips runs does).
  auto visit = [](std::vector<std::string>* seen, size_t* left) {
    return [seen, left](const RowView& v, SnapshotReader::SeekTo* to) {
      if (left != nullptr && (*left)-- == 0) return SnapshotReader::ScanNext::kStop;
      if (v.key.ends_with("5")) {
        to->metric.assign(v.metric);
        to->key.assign(v.key);
        to->key.push_back('\0');
        return SnapshotReader::ScanNext::kSeek;
      }
      seen->push_back(std::string(v.metric) + "/" + std::string(v.key) + "/" + std::to_string(v.count));
      return SnapshotReader::ScanNext::kNext;
    };
  };
  std::vector<std::string> whole;
  ASSERT_STATUS_OK(a->ScanFrom("metric03", "", visit(&whole, nullptr)));
  ASSERT_GT(whole.size(), 1000u);
  std::vector<std::string> whole_b;
  ASSERT_STATUS_OK(b->ScanFrom("metric03", "", visit(&whole_b, nullptr)));
  ASSERT_NE(whole_b, whole);
  for (size_t go_rows : {size_t{1}, size_t{7}, size_t{100}}) {
    std::vector<std::string> seen, other;
    SnapshotReader::ScanPosition pos, pos_b;
    SnapshotReader::ScanBuffers buffers;
    for (int go = 0; !pos.end; ++go) {
      ASSERT_LT(go, 10000) << "the goes do not end";
      size_t left = go_rows;
      ASSERT_STATUS_OK(a->ScanFrom("metric03", "", visit(&seen, &left), &pos, &buffers));
      left = go_rows;
      if (!pos_b.end) {
        ASSERT_STATUS_OK(b->ScanFrom("metric03", "", visit(&other, &left), &pos_b, &buffers));
      }
    }
    while (!pos_b.end) {
      size_t left = go_rows;
      ASSERT_STATUS_OK(b->ScanFrom("metric03", "", visit(&other, &left), &pos_b, &buffers));
    }
    EXPECT_EQ(seen, whole) << "goes of " << go_rows << " rows";
    EXPECT_EQ(other, whole_b) << "goes of " << go_rows << " rows";
    EXPECT_TRUE(pos.set);
  }
}

// Every row and the absent keys beside each one, with small blocks so that
// lookups cross many block boundaries and land on, before and after every
// restart point (rows 0, 16, 32, ... of a block) and between them.
TEST_F(SnapshotFileTest, GetHitsAndMissesAcrossBlocksAndRestartPoints) {
  const std::vector<Row> rows = MakeRows(5000);
  SnapshotWriterOptions small;
  small.block_bytes = 1000;  // ~40 rows a block: 2-3 restart points each
  SnapshotFileInfo info;
  Write(Path("small"), rows, &info, small);
  CheckContents(Path("small"), rows, info);
  auto r = OpenOrDie(Path("small"));
  ASSERT_GT(r->blocks(), 100u);
  size_t first = 0;
  for (size_t b = 0; b < r->blocks(); b++) {
    ASSERT_GT(r->block(b).rows, kBlockRestartInterval) << "block " << b << " has a single restart point";
    first += r->block(b).rows;
  }
  ASSERT_EQ(first, rows.size());
  Row row;
  for (size_t i = 0; i < rows.size(); i++) {
    ASSERT_STATUS_OK(r->Get(rows[i].metric, rows[i].key, &row)) << i;
    ASSERT_EQ(row, rows[i]) << i;
    // Keys are "key" + 9 digits, 7 apart: "...0" + "\0", "...1" sort between neighbours.
    EXPECT_TRUE(r->Get(rows[i].metric, rows[i].key + std::string("\0", 1), &row).IsNotFound()) << i;
    std::string before = rows[i].key;
    before.back() = static_cast<char>(before.back() - 1);
    if (i == 0 || rows[i - 1].key != before) {
      EXPECT_TRUE(r->Get(rows[i].metric, before, &row).IsNotFound()) << i;
    }
  }
  EXPECT_TRUE(r->Get("metric00", "", &row).IsNotFound());
  EXPECT_TRUE(r->Get("metric09", "zzz", &row).IsNotFound());
  EXPECT_TRUE(r->Get("metric10", "", &row).IsNotFound());
}

// The block index is searched by metric runs and 8-byte abbreviations of
// the first keys past the prefix a run's first keys share: Get and ScanFrom
// find what a search of the sorted rows finds, for keys before, inside and
// after every run, keys shorter than the shared prefix, and runs of blocks
// whose first keys have equal abbreviations (the keys decide there).
TEST_F(SnapshotFileTest, BlockSearchFindsWhatTheSortedRowsSay) {
  std::vector<Row> rows;
  auto add = [&](std::string metric, std::string key) { rows.push_back({metric, key, 1, 2, 3}); };
  add("a", "only");
  for (int i = 0; i < 3000; i++) {
    // 500 keys per leading letter share their next 16 bytes: equal abbreviations.
    add("m", fmt::format("{}0123456789abcdef{:06d}", static_cast<char>('b' + i / 500), i * 2));
  }
  for (int i = 0; i < 400; i++) add("n", fmt::format("shared-prefix-{:05d}", i * 3));
  add("z", "");
  add("z", "z");
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return std::tie(x.metric, x.key) < std::tie(y.metric, y.key);
  });
  SnapshotWriterOptions small;
  small.block_bytes = 600;
  SnapshotFileInfo info;
  Write(Path("runs"), rows, &info, small);
  auto r = OpenOrDie(Path("runs"));
  ASSERT_GT(r->blocks(), 100u);
  std::vector<std::pair<std::string, std::string>> probes = {
      {"", ""}, {"a", ""}, {"a", "only"}, {"a", "onlz"}, {"b", ""}, {"m", ""}, {"m", "a"}, {"m", "b"},
      {"m", "b0123"}, {"m", "c0123456789abcdef"}, {"m", "h"}, {"m", "zz"}, {"m0", ""}, {"n", "shared"},
      {"n", "shared-prefix-"}, {"n", "shared-prefix-99999"}, {"n", "t"}, {"z", ""}, {"z", "y"}, {"z", "zz"}, {"zz", ""}};
  for (const Row& row : rows) {
    probes.push_back({row.metric, row.key});
    std::string after = row.key;
    after.push_back('\0');
    probes.push_back({row.metric, after});
    probes.push_back({row.metric, row.key.substr(0, row.key.size() / 2)});
    if (!row.key.empty()) {
      std::string other = row.key;
      other.back() = '1';
      probes.push_back({row.metric, other});
    }
  }
  for (const auto& [metric, key] : probes) {
    auto it = std::lower_bound(rows.begin(), rows.end(), std::tie(metric, key), [](const Row& x, const auto& k) {
      return std::tie(x.metric, x.key) < k;
    });
    const bool present = it != rows.end() && it->metric == metric && it->key == key;
    Row got;
    Status s = r->Get(metric, key, &got);
    ASSERT_EQ(s.ok(), present) << metric << "/" << key << ": " << s.ToString();
    if (present) {
      ASSERT_EQ(got, *it);
    }
    std::string first_metric = "(none)", first_key;
    ASSERT_STATUS_OK(r->ScanFrom(metric, key, [&](const RowView& v, SnapshotReader::SeekTo*) {
      first_metric.assign(v.metric);
      first_key.assign(v.key);
      return SnapshotReader::ScanNext::kStop;
    }));
    if (it == rows.end()) {
      ASSERT_EQ(first_metric, "(none)") << metric << "/" << key;
    } else {
      ASSERT_EQ(first_metric + "/" + first_key, it->metric + "/" + it->key) << metric << "/" << key;
    }
  }
}

// The filter answers "maybe" for every row (no false negatives) and "no"
// for nearly every absent key (about 1% false positives at 10 bits a key).
TEST_F(SnapshotFileTest, FilterHasNoFalseNegativesAndFewFalsePositives) {
  const std::vector<Row> rows = MakeRows(20000);
  SnapshotFileInfo info;
  Write(Path("f"), rows, &info);
  auto r = OpenOrDie(Path("f"));
  for (const Row& row : rows) ASSERT_TRUE(r->FilterMayMatch(row.metric, row.key)) << row.metric << "/" << row.key;
  size_t maybe = 0;
  const size_t absent = 20000;
  for (size_t i = 0; i < absent; i++) {
    // Keys are multiples of 7: i * 7 + 3 never is one.
    if (r->FilterMayMatch(rows[i].metric, fmt::format("key{:09d}", i * 7 + 3))) maybe++;
  }
  EXPECT_LT(maybe, absent / 25) << maybe << " false positives of " << absent;
  // The same key under another metric is another entry.
  EXPECT_FALSE(r->FilterMayMatch("metric99", rows[0].key) && r->FilterMayMatch("metric98", rows[0].key) &&
               r->FilterMayMatch("metric97", rows[0].key));
}

// ReadStats gives the totals of each metric's rows, sorted, wrapping sums.
TEST_F(SnapshotFileTest, StatsSectionHoldsPerMetricTotals) {
  std::vector<Row> rows = MakeRows(3000);
  rows.push_back({"zz", "a", 1, INT64_MAX, 2});
  rows.push_back({"zz", "b", 1, 2, 2});  // the sum wraps
  SnapshotFileInfo info;
  Write(Path("s"), rows, &info);
  auto r = OpenOrDie(Path("s"));
  std::vector<MetricStats> want;
  for (const Row& row : rows) {
    if (want.empty() || want.back().metric != row.metric) want.push_back(MetricStats{row.metric});
    want.back().rows++, want.back().events += row.events, want.back().count += row.count;
    want.back().sum_micros = static_cast<int64_t>(static_cast<uint64_t>(want.back().sum_micros) +
                                                  static_cast<uint64_t>(row.sum_micros));
  }
  std::vector<MetricStats> got;
  Status s = r->ReadStats(&got);
  ASSERT_STATUS_OK(s);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), 11u);
}

// The hash index (docs/FORMAT.md) answers exactly what the restart-point
// search answers, for every row and the absent keys beside each, in files
// with and without it, with many restart intervals per block and one.
TEST_F(SnapshotFileTest, HashIndexHitsAndMissesMatchBinarySearch) {
  const std::vector<Row> rows = MakeRows(20000);
  for (size_t block_bytes : {size_t{300}, size_t{4000}, kSnapshotBlockBytes}) {
    SCOPED_TRACE(block_bytes);
    SnapshotWriterOptions hashed, plain;
    hashed.block_bytes = plain.block_bytes = block_bytes;
    hashed.block_hash_index = true;
    plain.block_hash_index = false;
    SnapshotFileInfo hi, pi;
    Write(Path("hashed"), rows, &hi, hashed);
    Write(Path("plain"), rows, &pi, plain);
    CheckContents(Path("hashed"), rows, hi);
    CheckContents(Path("plain"), rows, pi);
    auto h = OpenOrDie(Path("hashed"));
    auto p = OpenOrDie(Path("plain"));
    ASSERT_EQ(h->blocks(), p->blocks());
    for (size_t b = 0; b < h->blocks(); b++) {
      // 2 bytes per slot, 4/3 slot per row (+1): the index is there.
      const uint32_t rows_in_block = h->block(b).rows;
      ASSERT_EQ(h->block(b).usize, p->block(b).usize + 2 * (rows_in_block + rows_in_block / 3 + 1)) << b;
    }
    Row hr, pr;
    for (size_t i = 0; i < rows.size(); i++) {
      ASSERT_STATUS_OK(h->Get(rows[i].metric, rows[i].key, &hr)) << i;
      ASSERT_EQ(hr, rows[i]) << i;
      ASSERT_STATUS_OK(p->Get(rows[i].metric, rows[i].key, &pr)) << i;
      ASSERT_EQ(pr, rows[i]) << i;
      for (const std::string& absent : {rows[i].key + "x", rows[i].key.substr(0, rows[i].key.size() - 1)}) {
        EXPECT_TRUE(h->Get(rows[i].metric, absent, &hr).IsNotFound()) << i << " " << absent;
        EXPECT_TRUE(p->Get(rows[i].metric, absent, &pr).IsNotFound()) << i << " " << absent;
      }
    }
  }
}

// A block with more than 255 restart points (rows of under ~16 bytes) has
// no hash index; lookups binary-search its restart points.
TEST_F(SnapshotFileTest, BlockWithTooManyRestartsHasNoHashIndex) {
  std::vector<Row> rows;
  for (int i = 0; i < 4500; i++) rows.push_back({"m", fmt::format("{:04x}", i * 2), i, -i, 1});
  SnapshotFileInfo info;
  Write(Path("tiny"), rows, &info);
  CheckContents(Path("tiny"), rows, info);
  auto r = OpenOrDie(Path("tiny"));
  ASSERT_EQ(r->blocks(), 1u);
  ASSERT_GT(r->block(0).rows, 255 * kBlockRestartInterval);
  SnapshotWriterOptions plain;
  plain.block_hash_index = false;
  SnapshotFileInfo pinfo;
  Write(Path("plain"), rows, &pinfo, plain);
  EXPECT_EQ(ReadAll(Path("tiny")), ReadAll(Path("plain")));  // no index: the same bytes
  Row row;
  for (int i = 0; i < 4500; i++) {
    ASSERT_STATUS_OK(r->Get("m", rows[i].key, &row)) << i;
    ASSERT_EQ(row, rows[i]);
    EXPECT_TRUE(r->Get("m", fmt::format("{:04x}", i * 2 + 1), &row).IsNotFound()) << i;
  }
}

// No lookup reads a block's hash index any more (a loaded block is cached
// with its own row table), so the writer leaves it out unless asked: a
// default file is byte for byte the file written without it.
TEST_F(SnapshotFileTest, TheWriterLeavesTheHashIndexOutByDefault) {
  const std::vector<Row> rows = MakeRows(3000);
  SnapshotWriterOptions plain, hashed;
  plain.block_hash_index = false;
  hashed.block_hash_index = true;
  SnapshotFileInfo di, pi, hi;
  Write(Path("default"), rows, &di);
  Write(Path("plain"), rows, &pi, plain);
  Write(Path("hashed"), rows, &hi, hashed);
  EXPECT_EQ(ReadAll(Path("default")), ReadAll(Path("plain")));
  EXPECT_LT(di.bytes, hi.bytes);
  CheckContents(Path("default"), rows, di);
}

// Keys chosen to share a bucket and a fingerprint (docs/FORMAT.md: bucket
// (hi32(h) * slots) >> 32, fingerprint the low byte of h) in different
// restart intervals: the lookup of the second must go on probing after the
// first slot's interval does not hold it, and an absent key with the same
// bucket and fingerprint must end in NotFound at a free slot.
TEST_F(SnapshotFileTest, HashIndexFingerprintCollisions) {
  // 40 rows in one block: 3 restart intervals, 40 + 13 + 1 = 54 slots.
  constexpr uint32_t kSlots = 54;
  auto slot = [](const std::string& key) {
    const uint64_t h = SnapshotKeyHash("x", key);
    return static_cast<uint32_t>(((h >> 32) * kSlots) >> 32) << 8 | static_cast<uint8_t>(h);
  };
  std::map<uint32_t, std::string> first;  // (bucket, fingerprint) of "a<i>"
  for (int i = 0; i < 3000; i++) first.emplace(slot(fmt::format("a{}", i)), fmt::format("a{}", i));
  std::string a, z;
  for (int j = 0; j < 100000 && z.empty(); j++) {
    auto it = first.find(slot(fmt::format("z{}", j)));
    if (it != first.end()) a = it->second, z = fmt::format("z{}", j);
  }
  ASSERT_FALSE(z.empty()) << "no colliding pair among the candidates";
  std::vector<Row> rows = {{"x", a, 1, 11, 1}};
  for (int i = 0; i < 38; i++) rows.push_back({"x", fmt::format("m{:02d}", i), 2, 22, 2});
  rows.push_back({"x", z, 3, 33, 3});
  SnapshotFileInfo info;
  SnapshotWriterOptions hashed;
  hashed.block_hash_index = true;  // the file's index and the cached block's table, the same chain
  Write(Path("coll"), rows, &info, hashed);
  CheckContents(Path("coll"), rows, info);
  auto r = OpenOrDie(Path("coll"));
  ASSERT_EQ(r->blocks(), 1u);
  ASSERT_EQ(r->block(0).rows, 40u);
  Row row;
  ASSERT_STATUS_OK(r->Get("x", a, &row));
  EXPECT_EQ(row, rows.front());
  ASSERT_STATUS_OK(r->Get("x", z, &row));
  EXPECT_EQ(row, rows.back());
  // An absent key in the same chain that also passes the filter.
  std::string absent;
  for (int k = 0; k < 20000000 && absent.empty(); k++) {
    const std::string key = fmt::format("q{}", k);
    if (slot(key) == slot(a) && r->FilterMayMatch("x", key)) absent = key;
  }
  ASSERT_FALSE(absent.empty());
  EXPECT_TRUE(r->Get("x", absent, &row).IsNotFound());
}

// The hash index lies inside the block's compressed bytes: a flipped byte
// of a block fails its checksum before any slot is read. An index that
// does not match its rows under a valid checksum (a writer bug) is caught
// when the block is checked, by Get and by VerifyAll.
TEST_F(SnapshotFileTest, CorruptHashIndexIsCaught) {
  std::vector<Row> rows = MakeRows(200);
  const SnapshotWriterOptions small = SmallBlocks();
  SnapshotFileInfo info;
  Write(Path("good"), rows, &info, small);
  const std::string good = ReadAll(Path("good"));
  auto r = OpenOrDie(Path("good"));
  ASSERT_GE(r->blocks(), 2u);
  const SnapshotReader::BlockInfo b1 = r->block(1);
  const Row& probe = rows[r->block(0).rows];  // block 1's first row
  for (uint64_t at = b1.offset; at < b1.offset + b1.csize; at++) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    std::ofstream(Path("bad"), std::ios::binary | std::ios::trunc) << bad;
    auto br = OpenOrDie(Path("bad"));
    ASSERT_TRUE(br);
    Row row;
    Status s = br->Get(probe.metric, probe.key, &row);
    EXPECT_TRUE(s.IsCorruption()) << at << ": " << s.ToString();
    EXPECT_NE(s.message().find("block 1 checksum mismatch"), std::string::npos) << s.ToString();
  }
  // Every byte of the index: a restart number or a fingerprint.
  const uint32_t slots = r->block(0).rows + r->block(0).rows / 3 + 1;
  for (size_t at = 0; at < 2 * slots; at++) {
    SCOPED_TRACE(at);
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("wrong"), &w, small));
    w->FlipHashIndexByteForTesting(at);
    for (const Row& row : rows) ASSERT_STATUS_OK(w->Add(row));
    SnapshotFileInfo winfo;
    ASSERT_STATUS_OK(w->Finish(&winfo));
    auto wr = OpenOrDie(Path("wrong"));
    ASSERT_TRUE(wr);
    Row row;
    Status s = wr->Get(rows[0].metric, rows[0].key, &row);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find("block 0: hash index does not match its rows"), std::string::npos) << s.ToString();
    s = wr->VerifyAll(winfo.xxh64);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_STATUS_OK(wr->Scan(nullptr, [](const Row&) {}));  // Scan does not use the index
  }
}

// A version 2 file (before hash indexes), as `snapsink run --final` wrote it
// on 2026-11-30 from 40 events: rows (m<i%2>, k<i>) = (1, i.5, 1). Readers
// still serve it, by the restart points.
TEST_F(SnapshotFileTest, ReadsVersion2File) {
  const char* const kHex =
      "28b52ffd600d014d0900d40d026d30026b300202c0843d026d30036b31de810a320202c0f0f50b340202c082ea0d3602"
      "02c094de0f380202c0a6d21196b10232b8c61332caba1532dcae1732eea2193280971b33928b1d33a4ff1e33b6f32033"
      "c8e72233dadb24a8a504ba9906cc8d08026d31026b310202c08db701026d31036b31e7fb0a330202c0f9ef0c350202c0"
      "8be40e370202c09dd810390202c0afcc1232c1c01432d3b41632e5a81832f79c1a3289911c9fab03339b851e33adf91f"
      "33bfed2133d1e12333e3d525b19f05c39307390202c0d5870900000000cd000000980100000300000041a88154012e76"
      "9f3150d3483d1080eedfd80887bf450d05550a3aad1b446a280ad40832d6eb74d004696d77b62dfdf28d44d810508508"
      "8f6042a12203a55936f4888a621550e553a6064e28020a185649b011580830098c001d680c0adc2a92f0154bfb1096b9"
      "fa6f949c5a4350295500e0c80c5684c618f829e70150019c885410bbc9c5590a4a8103060200000000000000026d3014"
      "282880b6f7f302026d3114282880ea8087033301000000000000410000000000000058387dfbacae8241740100000000"
      "00001e00000000000000eecae4904705415301000000000000000000000000000000330100000d02000028000000a906"
      "d190ad9787b6020000006d30020000006b30534e4150534e4b3102000000000000009201000000000000600000000000"
      "00002800000000000000d78da98da63dbe95a915350a32a5532d55c41f1c4329c263";
  std::string bytes;
  for (const char* p = kHex; *p != '\0'; p += 2) bytes.push_back(static_cast<char>(std::stoi(std::string(p, 2), nullptr, 16)));
  ASSERT_EQ(bytes.size(), 562u);
  ASSERT_EQ(bytes.substr(bytes.size() - 64 + 8, 4), std::string("\x02\0\0\0", 4));  // version 2
  std::ofstream(Path("v2"), std::ios::binary | std::ios::trunc) << bytes;
  auto r = OpenOrDie(Path("v2"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rows(), 40u);
  Row row;
  for (int i = 0; i < 40; i++) {
    const std::string metric = fmt::format("m{}", i % 2), key = fmt::format("k{}", i);
    ASSERT_STATUS_OK(r->Get(metric, key, &row)) << i;
    EXPECT_EQ(row, (Row{metric, key, 1, int64_t{i} * 1000000 + 500000, 1})) << i;
    EXPECT_TRUE(r->Get(metric, key + "x", &row).IsNotFound()) << i;
  }
  size_t n = 0;
  EXPECT_STATUS_OK(r->Scan(nullptr, [&](const Row&) { n++; }));
  EXPECT_EQ(n, 40u);
  Status s = r->VerifyAll(XXH64(bytes.data(), bytes.size(), 0));
  EXPECT_STATUS_OK(s);
  std::vector<MetricStats> stats;
  EXPECT_STATUS_OK(r->ReadStats(&stats));
  EXPECT_EQ(stats.size(), 2u);
}

// Section positions, from the footer and the index header (docs/FORMAT.md).
struct Sections {
  uint64_t filter_offset, filter_size, stats_offset, stats_size, index_offset, index_size;
};
Sections ReadSections(const std::string& bytes) {
  auto fixed64 = [&](size_t p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[p + i])) << (8 * i);
    return v;
  };
  Sections s;
  s.index_offset = fixed64(bytes.size() - 64 + 16);
  s.index_size = fixed64(bytes.size() - 64 + 24);
  s.filter_offset = fixed64(s.index_offset);
  s.filter_size = fixed64(s.index_offset + 8);
  s.stats_offset = fixed64(s.index_offset + 24);
  s.stats_size = fixed64(s.index_offset + 32);
  return s;
}

// A flipped byte in the filter or the index fails Open (both are read and
// checked there); one in the stats section leaves Get and Scan working (they
// never read it) but fails ReadStats and VerifyAll.
TEST_F(SnapshotFileTest, CorruptedFilterIndexAndStatsAreDetected) {
  const std::vector<Row> rows = MakeRows(3000);
  SnapshotFileInfo info;
  Write(Path("c"), rows, &info);
  const std::string good = ReadAll(Path("c"));
  const Sections sec = ReadSections(good);
  ASSERT_EQ(sec.filter_offset + sec.filter_size, sec.stats_offset);
  ASSERT_EQ(sec.stats_offset + sec.stats_size, sec.index_offset);
  ASSERT_EQ(sec.index_offset + sec.index_size + 64, good.size());
  auto flipped = [&](uint64_t at) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    std::ofstream(Path("bad"), std::ios::binary | std::ios::trunc) << bad;
    return Path("bad");
  };
  for (uint64_t at : {sec.filter_offset, sec.filter_offset + sec.filter_size / 2, sec.filter_offset + sec.filter_size - 1,
                      sec.index_offset, sec.index_offset + 30, sec.index_offset + sec.index_size - 1}) {
    std::unique_ptr<SnapshotReader> r;
    Status s = SnapshotReader::Open(env_, flipped(at), &r);
    EXPECT_TRUE(s.IsCorruption()) << "byte " << at << ": " << s.ToString();
  }
  for (uint64_t at : {sec.stats_offset, sec.stats_offset + 9, sec.stats_offset + sec.stats_size - 1}) {
    auto r = OpenOrDie(flipped(at));
    ASSERT_TRUE(r);
    Row row;
    EXPECT_STATUS_OK(r->Get(rows[7].metric, rows[7].key, &row));
    std::vector<MetricStats> stats;
    Status s = r->ReadStats(&stats);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find("stats checksum mismatch"), std::string::npos) << s.ToString();
    EXPECT_TRUE(r->VerifyAll(0).IsCorruption());
  }
}

// A filter that misses a row, with every checksum recomputed (a forged or
// miswritten file): the row's line is cleared. Get checks the filter against
// every row of a block it reads, VerifyAll against every row of the file;
// both must call it corruption, not hide the row.
TEST_F(SnapshotFileTest, FilterMissingARowIsCaught) {
  const std::vector<Row> rows = MakeRows(3000);  // a filter of 59 lines
  SnapshotFileInfo info;
  Write(Path("f"), rows, &info);
  const uint64_t block0_rows = OpenOrDie(Path("f"))->block(0).rows;
  std::string bytes = ReadAll(Path("f"));
  const Sections sec = ReadSections(bytes);
  const size_t lines = (sec.filter_size - 1) / 64;
  auto line_of = [&](const Row& r) {
    const uint64_t h = SnapshotKeyHash(r.metric, r.key);
    return static_cast<size_t>(((h >> 32) * lines) >> 32);
  };
  const size_t victim = 500;  // in block 0; its line cleared
  ASSERT_LT(victim, block0_rows);
  size_t probe = 0;  // a row of block 0 whose line is another one
  while (line_of(rows[probe]) == line_of(rows[victim])) probe++;
  ASSERT_LT(probe, block0_rows);
  std::memset(bytes.data() + sec.filter_offset + 64 * line_of(rows[victim]), 0, 64);
  auto put64 = [&](size_t at, uint64_t v) {
    for (int i = 0; i < 8; i++) bytes[at + i] = static_cast<char>(v >> (8 * i));
  };
  const size_t footer = bytes.size() - 64;
  put64(sec.index_offset + 16, XXH64(bytes.data() + sec.filter_offset, sec.filter_size, 0));
  put64(footer + 40, XXH64(bytes.data() + sec.index_offset, sec.index_size, 0));
  put64(footer + 48, XXH64(bytes.data(), footer, 0));
  put64(footer + 56, XXH64(bytes.data() + footer, 56, 0));
  std::ofstream(Path("forged"), std::ios::binary | std::ios::trunc) << bytes;
  auto r = OpenOrDie(Path("forged"));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->FilterMayMatch(rows[victim].metric, rows[victim].key));
  Row row;
  Status s = r->Get(rows[probe].metric, rows[probe].key, &row);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("filter misses a row of block 0"), std::string::npos) << s.ToString();
  s = r->VerifyAll(0);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("filter misses a row of block 0"), std::string::npos) << s.ToString();
}

TEST_F(SnapshotFileTest, ScanByMetric) {
  std::vector<Row> rows = MakeRows(300000);
  // One tiny metric in the middle of a block, and a gap where a metric is absent.
  rows.push_back({"metric09x", "only", 1, 2, 3});
  rows.push_back({"metric11", "a", 4, 5, 6});
  SnapshotFileInfo info;
  Write(Path("scan"), rows, &info);
  auto r = OpenOrDie(Path("scan"));
  for (std::string metric : {"metric00", "metric03", "metric09", "metric09x", "metric11", "metric10",
                             "a", "metric03a", "zzz", ""}) {
    std::vector<Row> want;
    for (const Row& row : rows) {
      if (row.metric == metric) want.push_back(row);
    }
    std::vector<Row> got;
    Status s = r->Scan(&metric, [&](const Row& row) { got.push_back(row); });
    ASSERT_STATUS_OK(s);
    EXPECT_EQ(got.size(), want.size()) << metric;
    EXPECT_TRUE(got == want) << metric;
  }
}

TEST_F(SnapshotFileTest, UnsortedAddRejected) {
  struct Case {
    Row a, b;
  };
  for (const Case& c : std::vector<Case>{
           {{"m", "k"}, {"m", "k"}},          // duplicate
           {{"m", "k2"}, {"m", "k1"}},        // key descends
           {{"n", "a"}, {"m", "z"}},          // metric descends, key ascends
           {{"m", "\x80"}, {"m", "\x7f"}},    // bytes compare unsigned
       }) {
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("bad"), &w));
    ASSERT_STATUS_OK(w->Add(c.a));
    Status s = w->Add(c.b);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << c.a.key << " " << c.b.key;
    SnapshotFileInfo info;
    EXPECT_FALSE(w->Finish(&info).ok());  // the error sticks
  }
  std::unique_ptr<SnapshotWriter> w;
  ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("bad"), &w));
  EXPECT_STATUS_OK(w->Add({"m", "\x7f"}));
  EXPECT_STATUS_OK(w->Add({"m", "\x80"}));
  EXPECT_STATUS_OK(w->Add({"m\x01", ""}));
}

// The writer checks each row against the one before without keeping a copy
// of it: within a block it reads the key back from the block's bytes, and
// across a cut from the copy made when the block was cut.
TEST_F(SnapshotFileTest, UnsortedAddRejectedAtEveryBlockCut) {
  SnapshotWriterOptions options;
  options.block_bytes = 64;  // a few rows a block
  const std::vector<Row> rows = MakeRows(200);
  for (size_t at = 1; at <= 64; at++) {  // every position: some are a block's last row, some its first
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("bad"), &w, options));
    for (size_t i = 0; i < at; i++) ASSERT_STATUS_OK(w->Add(rows[i]));
    EXPECT_EQ(w->Add(rows[at - 1]).code(), Status::Code::kInvalidArgument) << at;  // a repeat
    ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("bad"), &w, options));
    for (size_t i = 0; i < at; i++) ASSERT_STATUS_OK(w->Add(rows[i]));
    Row back = rows[at - 1];
    back.key.pop_back();  // a prefix sorts before
    EXPECT_EQ(w->Add(back).code(), Status::Code::kInvalidArgument) << at;
  }
}

// AddView writes the same bytes as Add; two writers interleaved on one
// thread (each with its own metric hash) write the same bytes as each alone.
TEST_F(SnapshotFileTest, AddViewAndInterleavedWritersWriteTheSameBytes) {
  SnapshotWriterOptions options;
  options.block_bytes = 4096;
  const std::vector<Row> rows = MakeRows(20000);
  std::vector<Row> other = MakeRows(20000);
  for (Row& r : other) r.metric = "x" + r.metric;
  SnapshotFileInfo a, b;
  Write(Path("a"), rows, &a, options);
  Write(Path("b"), other, &b, options);
  std::unique_ptr<SnapshotWriter> wa, wb;
  ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("a2"), &wa, options));
  ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("b2"), &wb, options));
  for (size_t i = 0; i < rows.size(); i++) {
    const Row& r = rows[i];
    ASSERT_STATUS_OK(wa->AddView(RowView{r.metric, r.key, r.count, r.sum_micros, r.events}));
    ASSERT_STATUS_OK(wb->Add(other[i]));
  }
  SnapshotFileInfo a2, b2;
  ASSERT_STATUS_OK(wa->Finish(&a2));
  ASSERT_STATUS_OK(wb->Finish(&b2));
  EXPECT_TRUE(ReadAll(Path("a")) == ReadAll(Path("a2")));
  EXPECT_TRUE(ReadAll(Path("b")) == ReadAll(Path("b2")));
  CheckContents(Path("a2"), rows, a2);
  CheckContents(Path("b2"), other, b2);
}

TEST_F(SnapshotFileTest, DeterministicBytes) {
  const std::vector<Row> rows = MakeRows(100000);
  SnapshotFileInfo a, b;
  Write(Path("a"), rows, &a);
  Write(Path("b"), rows, &b);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.xxh64, b.xxh64);
  EXPECT_TRUE(ReadAll(Path("a")) == ReadAll(Path("b")));
  // Rewriting over an existing file truncates it.
  Write(Path("a"), {rows[0]}, &a);
  CheckContents(Path("a"), {rows[0]}, a);
}

// Blocks compressed on a second thread reach the file in their order, each
// with its own index entry: the bytes of compressing every block inline.
TEST_F(SnapshotFileTest, CompressingAheadWritesTheBytesOfCompressingInline) {
  for (const size_t block_bytes : {size_t{512}, size_t{4096}, kSnapshotBlockBytes}) {
    SCOPED_TRACE(block_bytes);
    const std::vector<Row> rows = MakeRows(block_bytes == kSnapshotBlockBytes ? 100000 : 20000);
    SnapshotWriterOptions inline_options;
    inline_options.block_bytes = block_bytes;
    inline_options.compress_ahead = false;
    SnapshotWriterOptions ahead = inline_options;
    ahead.compress_ahead = true;
    SnapshotFileInfo a, b;
    Write(Path("inline"), rows, &a, inline_options);
    Write(Path("ahead"), rows, &b, ahead);
    EXPECT_EQ(a.xxh64, b.xxh64);
    EXPECT_TRUE(ReadAll(Path("inline")) == ReadAll(Path("ahead")));
    CheckContents(Path("ahead"), rows, b);
  }
}

// The compressor holds up to kSlots blocks and hands them back oldest
// first, each the bytes of compressing it alone, whichever thread did it:
// the caller of TakeOldest compresses a later block while the oldest is
// not done, so both threads compress (the writer's two-core seal).
TEST(SnapshotCompressorTest, HandsBlocksBackInOrderWithTheBytesOfCompressingInline) {
  std::vector<std::string> blocks;
  for (int b = 0; b < 40; b++) {
    std::string block;
    for (int i = 0; i < 4000; i++) block += fmt::format("row {} of block {}: {};", i, b, i * b % 97);
    blocks.push_back(std::move(block));
  }
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ASSERT_NE(cctx, nullptr);
  auto inline_bytes = [&](const std::string& in) {
    std::string out(ZSTD_compressBound(in.size()), '\0');
    out.resize(ZSTD_compressCCtx(cctx, out.data(), out.size(), in.data(), in.size(), 3));
    return out;
  };
  SnapshotCompressor c(3);
  EXPECT_TRUE(c.empty());
  size_t next_in = 0, next_out = 0;
  auto take = [&] {
    std::string compressed, error;
    uint32_t usize = 0;
    uint64_t xxh64 = 0;
    c.TakeOldest(cctx, &compressed, &usize, &xxh64, &error);
    EXPECT_EQ(error, "");
    EXPECT_EQ(usize, blocks[next_out].size());
    EXPECT_TRUE(compressed == inline_bytes(blocks[next_out])) << "block " << next_out;
    EXPECT_EQ(xxh64, XXH64(compressed.data(), compressed.size(), 0));
    next_out++;
  };
  while (next_in < blocks.size()) {
    if (c.full()) take();
    std::string block = blocks[next_in++];
    ASSERT_TRUE(c.Submit(&block));
    EXPECT_TRUE(block.empty());
  }
  EXPECT_TRUE(c.full());
  while (!c.empty()) take();
  EXPECT_EQ(next_out, blocks.size());
  ZSTD_freeCCtx(cctx);
}

// VerifyAllInParts checks the blocks in runs on threads of their own: the
// rows each run sees, one run after another, are the file's, and a damaged
// file gets VerifyAll's result and error whichever run holds the damage.
TEST_F(SnapshotFileTest, VerifyAllInPartsSeesEveryRowOnceAndReportsWhatVerifyAllReports) {
  const std::vector<Row> rows = MakeRows(3000);
  const SnapshotWriterOptions small = SmallBlocks();
  SnapshotFileInfo info;
  Write(Path("good"), rows, &info, small);
  auto r = OpenOrDie(Path("good"));
  ASSERT_TRUE(r);
  ASSERT_GE(r->blocks(), 24u);
  for (size_t parts : {size_t{1}, size_t{2}, size_t{3}, r->blocks()}) {
    SCOPED_TRACE(parts);
    std::vector<std::vector<Row>> seen(parts);
    std::vector<std::function<void(const RowView&)>> visits;
    for (size_t p = 0; p < parts; p++) {
      visits.push_back([&seen, p](const RowView& v) {
        Row row;
        snapshot::ToRow(v, &row);
        seen[p].push_back(std::move(row));
      });
    }
    ASSERT_STATUS_OK(r->VerifyAllInParts(info.xxh64, visits));
    std::vector<Row> all;
    for (const auto& s : seen) all.insert(all.end(), s.begin(), s.end());
    EXPECT_TRUE(all == rows);
    if (parts == 2) {
      EXPECT_FALSE(seen[0].empty() || seen[1].empty());
    }
    EXPECT_TRUE(r->VerifyAllInParts(info.xxh64 ^ 1, visits).IsCorruption());
  }
  // Files whose checksums hold but whose blocks from row `from` on carry a
  // wrong hash index: the first such block is named, in the first run or a
  // later one.
  for (size_t from : {size_t{0}, size_t{700}, size_t{1499}, size_t{1500}, size_t{2300}, size_t{2999}}) {
    SCOPED_TRACE(from);
    std::unique_ptr<SnapshotWriter> w;
    ASSERT_STATUS_OK(SnapshotWriter::Open(env_, Path("wrong"), &w, small));
    for (size_t i = 0; i < rows.size(); i++) {
      if (i == from) w->FlipHashIndexByteForTesting(0);
      ASSERT_STATUS_OK(w->Add(rows[i]));
    }
    SnapshotFileInfo winfo;
    ASSERT_STATUS_OK(w->Finish(&winfo));
    auto wr = OpenOrDie(Path("wrong"));
    ASSERT_TRUE(wr);
    const Status one = wr->VerifyAll(winfo.xxh64);
    ASSERT_TRUE(one.IsCorruption()) << one.ToString();
    for (size_t parts : {size_t{2}, size_t{3}}) {
      std::vector<std::function<void(const RowView&)>> visits(parts, [](const RowView&) {});
      const Status split = wr->VerifyAllInParts(winfo.xxh64, visits);
      EXPECT_EQ(split.ToString(), one.ToString()) << parts;
    }
  }
}

TEST_F(SnapshotFileTest, VerifyAllComparesExpectedChecksum) {
  const std::vector<Row> rows = MakeRows(10);
  SnapshotFileInfo info;
  Write(Path("v"), rows, &info);
  auto r = OpenOrDie(Path("v"));
  EXPECT_STATUS_OK(r->VerifyAll(0));
  EXPECT_TRUE(r->VerifyAll(info.xxh64 ^ 1).IsCorruption());
}

// VerifyAll reads the file once: each block's bytes go into the whole
// file's XXH64 as the block is loaded, and the filter, stats, index and
// footer after them. So every byte counts once (a clean file gives the
// writer's xxh64), and a flipped byte anywhere, in a block too, is reported
// as the file's checksum before the block's own error.
TEST_F(SnapshotFileTest, VerifyAllHashesEveryByteOnceAndNamesTheFileFirst) {
  const std::vector<Row> rows = MakeRows(3000);
  const SnapshotWriterOptions small = SmallBlocks();
  SnapshotFileInfo info;
  Write(Path("good"), rows, &info, small);
  const std::string good = ReadAll(Path("good"));
  ASSERT_EQ(info.xxh64, XXH64(good.data(), good.size(), 0));
  auto r = OpenOrDie(Path("good"));
  ASSERT_TRUE(r);
  ASSERT_GE(r->blocks(), 3u);
  size_t visited = 0;
  const std::function<void(const RowView&)> visit = [&](const RowView&) { visited++; };
  ASSERT_STATUS_OK(r->VerifyAll(info.xxh64, &visit));
  EXPECT_EQ(visited, rows.size());

  const Sections sec = ReadSections(good);
  const SnapshotReader::BlockInfo last = r->block(r->blocks() - 1);
  // Bytes a reader opens past: the blocks (first, a middle one, last) and the stats.
  for (uint64_t at : {uint64_t{0}, r->block(1).offset + r->block(1).csize / 2, last.offset + last.csize - 1,
                      sec.stats_offset, sec.stats_offset + sec.stats_size - 1}) {
    SCOPED_TRACE(at);
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    std::ofstream(Path("bad"), std::ios::binary | std::ios::trunc) << bad;
    auto br = OpenOrDie(Path("bad"));
    ASSERT_TRUE(br);
    Status s = br->VerifyAll(info.xxh64);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find(fmt::format("file xxh64 {:016x} differs from the expected {:016x}",
                                           XXH64(bad.data(), bad.size(), 0), info.xxh64)),
              std::string::npos)
        << s.ToString();
    // Without an expected checksum: the footer's checksum of the bytes before it.
    s = br->VerifyAll(0);
    EXPECT_NE(s.message().find("data checksum in footer does not match the file"), std::string::npos) << s.ToString();
  }
}

TEST_F(SnapshotFileTest, TruncatedFile) {
  const std::vector<Row> rows = MakeRows(50000);
  SnapshotFileInfo info;
  Write(Path("t"), rows, &info);
  for (uint64_t size : {uint64_t{0}, uint64_t{10}, info.bytes / 2, info.bytes - 64, info.bytes - 1}) {
    Write(Path("t"), rows, &info);
    ASSERT_STATUS_OK(env_->TruncateFile(Path("t"), size));
    std::unique_ptr<SnapshotReader> r;
    Status s = SnapshotReader::Open(env_, Path("t"), &r);
    EXPECT_TRUE(s.IsCorruption()) << size << " " << s.ToString();
  }
}

// docs/CONTRACT.md 8: seal.mid_data ends the process once the first block is on file,
// leaving a partial file that a reader rejects.
TEST_F(SnapshotFileTest, CrashMidDataLeavesPartialFile) {
  // The child re-runs this test from its start (threadsafe style, so the
  // crash point reads SNAPSINK_CRASH_AT afresh); the path travels in the
  // environment so that both use the same file.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  if (getenv("SNAPSHOT_FILE_TEST_CRASH_PATH") == nullptr) {
    setenv("SNAPSHOT_FILE_TEST_CRASH_PATH", Path("crash").c_str(), 1);
  }
  const std::string path = getenv("SNAPSHOT_FILE_TEST_CRASH_PATH");
  const std::vector<Row> rows = MakeRows(50000);
  EXPECT_EXIT(
      {
        (void)env_->RemoveTree(dir_);  // the child's own, unused; TearDown will not run
        setenv("SNAPSINK_CRASH_AT", "seal.mid_data", 1);
        SnapshotFileInfo info;
        Write(path, rows, &info);
      },
      ::testing::ExitedWithCode(99), "");
  unsetenv("SNAPSHOT_FILE_TEST_CRASH_PATH");
  uint64_t size = 0;
  ASSERT_STATUS_OK(env_->GetFileSize(path, &size));
  EXPECT_GT(size, 0u);
  SnapshotFileInfo info;
  Write(Path("whole"), rows, &info);
  auto whole = OpenOrDie(Path("whole"));
  EXPECT_EQ(size, whole->block(0).csize);  // exactly the first block
  std::unique_ptr<SnapshotReader> r;
  EXPECT_TRUE(SnapshotReader::Open(env_, path, &r).IsCorruption());
}

// Flips bytes of `path` one at a time (each position in `positions`) and
// checks no read path ever returns a wrong row.
class FlipChecker {
 public:
  FlipChecker(Env* env, std::string path, std::vector<Row> rows, SnapshotFileInfo info)
      : env_(env), path_(std::move(path)), rows_(std::move(rows)), info_(info) {
    std::unique_ptr<SnapshotReader> r;
    EXPECT_STATUS_OK(SnapshotReader::Open(env_, path_, &r));
    size_t first = 0;
    for (size_t b = 0; b < r->blocks(); b++) {
      blocks_.push_back({r->block(b).offset, r->block(b).csize, first, r->block(b).rows});
      first += r->block(b).rows;
    }
  }

  void FlipAt(uint64_t pos, uint8_t mask) {
    SCOPED_TRACE(fmt::format("byte {} ^ {:#x}", pos, mask));
    // Probe keys: first, middle and last row of (up to 8 spread) blocks and
    // of the block holding the flipped byte.
    probes_.clear();
    const size_t stride = blocks_.size() / 8 + 1;
    for (size_t b = 0; b < blocks_.size(); b++) {
      const BlockSpan& s = blocks_[b];
      if (b % stride == 0 || b + 1 == blocks_.size() || (pos >= s.offset && pos < s.offset + s.csize)) {
        probes_.push_back(s.first_row);
        probes_.push_back(s.first_row + s.rows / 2);
        probes_.push_back(s.first_row + s.rows - 1);
      }
    }
    Flip(pos, mask);
    Check();
    Flip(pos, mask);
  }

 private:
  void Flip(uint64_t pos, uint8_t mask) {
    std::FILE* f = std::fopen(path_.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, static_cast<long>(pos), SEEK_SET);
    int c = std::fgetc(f);
    std::fseek(f, static_cast<long>(pos), SEEK_SET);
    std::fputc(c ^ mask, f);
    std::fclose(f);
  }

  void Check() {
    std::unique_ptr<SnapshotReader> r;
    Status s = SnapshotReader::Open(env_, path_, &r);
    if (!s.ok()) {
      ASSERT_TRUE(s.IsCorruption()) << s.ToString();
      return;
    }
    ASSERT_EQ(r->rows(), rows_.size());
    EXPECT_TRUE(r->VerifyAll(info_.xxh64).IsCorruption());
    EXPECT_TRUE(r->VerifyAll(0).IsCorruption());
    size_t i = 0;
    s = r->Scan(nullptr, [&](const Row& row) {
      ASSERT_LT(i, rows_.size());
      ASSERT_EQ(row, rows_[i]);
      i++;
    });
    ASSERT_TRUE(s.ok() ? i == rows_.size() : s.IsCorruption()) << s.ToString();
    for (size_t p : probes_) {
      Row row;
      s = r->Get(rows_[p].metric, rows_[p].key, &row);
      if (s.ok()) {
        ASSERT_EQ(row, rows_[p]);
      } else {
        ASSERT_TRUE(s.IsCorruption()) << s.ToString();
      }
    }
    std::string metric = rows_[rows_.size() / 2].metric;
    s = r->Scan(&metric, [&](const Row& row) { ASSERT_EQ(row.metric, metric); });
    ASSERT_TRUE(s.ok() || s.IsCorruption()) << s.ToString();
  }

  Env* env_;
  std::string path_;
  std::vector<Row> rows_;
  SnapshotFileInfo info_;
  struct BlockSpan {
    uint64_t offset, csize, first_row, rows;
  };
  std::vector<BlockSpan> blocks_;
  std::vector<size_t> probes_;
};

TEST_F(SnapshotFileTest, EveryByteFlipOfSmallMultiBlockFileIsCaught) {
  // Small blocks, so a file of a few KiB has several of them.
  std::vector<Row> rows;
  for (int i = 0; i < 400; i++) {
    rows.push_back({fmt::format("m{}", i / 150), fmt::format("k{:04d}", i * 3), i % 5 - 1, i * 10 - 7, i % 3});
  }
  SnapshotWriterOptions options;
  options.block_bytes = 1024;
  SnapshotFileInfo info;
  Write(Path("flip"), rows, &info, options);
  ASSERT_GE(OpenOrDie(Path("flip"))->blocks(), 5u);
  FlipChecker checker(env_, Path("flip"), rows, info);
  for (uint64_t pos = 0; pos < info.bytes; pos++) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) checker.FlipAt(pos, mask);
    if (HasFatalFailure()) return;
  }
  CheckContents(Path("flip"), rows, info);  // and the file is whole again
}

TEST_F(SnapshotFileTest, ByteFlipsOfDefaultBlockFileAreCaught) {
  // Three 64 KiB blocks: every byte of the index and footer, every 31st of the data.
  std::vector<Row> rows;
  for (int i = 0; i < 9000; i++) {
    rows.push_back({fmt::format("m{}", i / 3000), fmt::format("k{:06d}", i), i % 5, i * 10, 1});
  }
  SnapshotFileInfo info;
  Write(Path("flip"), rows, &info);
  auto r = OpenOrDie(Path("flip"));
  ASSERT_GE(r->blocks(), 3u);
  const uint64_t index_offset = r->block(r->blocks() - 1).offset + r->block(r->blocks() - 1).csize;
  FlipChecker checker(env_, Path("flip"), rows, info);
  for (uint64_t pos = 0; pos < info.bytes; pos += pos < index_offset ? 31 : 1) {
    checker.FlipAt(pos, 0x01);
    if (HasFatalFailure()) return;
  }
}

TEST_F(SnapshotFileTest, SampledByteFlipsOfLargeFileAreCaught) {
  const std::vector<Row> rows = MakeRows(300000);
  SnapshotFileInfo info;
  Write(Path("flipbig"), rows, &info);
  FlipChecker checker(env_, Path("flipbig"), rows, info);
  const uint64_t step = info.bytes / 53 + 1;
  for (uint64_t pos = 3; pos < info.bytes; pos += step) {
    checker.FlipAt(pos, 0x10);
    if (HasFatalFailure()) return;
  }
  for (uint64_t pos = info.bytes - 64; pos < info.bytes; pos++) {
    checker.FlipAt(pos, 0x04);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace snapsink
