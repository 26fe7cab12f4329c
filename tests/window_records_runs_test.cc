// engine/window_records_runs: a window's aggregates as base records plus
// sorted runs of deltas; merged reads, compaction, deletion.
#include "engine/window_records_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/filenames.h"
#include "engine/long_key.h"
#include "engine/root.h"
#include "engine/window_records.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int64_t kW = 3600000;

std::string NaturalKey(int64_t w, const std::string& metric, const std::string& key) {
  std::string k;
  codec::AggKeyInto(&k, w, metric, key);
  return k;
}

class WindowRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_STATUS_OK(Store::Open(dir_.path(), /*create=*/true, &store_));
    ASSERT_STATUS_OK(store_->BeginWrite(&txn_));
  }
  // Appends one run to window w: key -> delta, keys taken as metric "m".
  void Append(int64_t w, const std::map<std::string, Aggregate>& deltas, RunMerges merges = RunMerges::kAll) {
    std::vector<std::string> keys;
    for (const auto& [k, a] : deltas) keys.push_back(NaturalKey(w, "m", k).substr(8));
    std::vector<std::pair<std::string_view, Aggregate>> entries;
    size_t i = 0;
    for (const auto& [k, a] : deltas) entries.emplace_back(keys[i++], a);
    ASSERT_STATUS_OK(AppendWindowRun(txn_.get(), w, entries, merges));
  }
  // The number of entries of each of window w's runs, oldest first.
  std::vector<size_t> RunSizes(int64_t w) {
    WindowRuns runs;
    EXPECT_STATUS_OK(LoadWindowRuns(txn_.get(), w, &runs));
    std::vector<size_t> sizes;
    for (const AggRun& r : runs.runs) sizes.push_back(r.size());
    return sizes;
  }
  std::map<std::string, Aggregate> Scan(int64_t w) {
    std::map<std::string, Aggregate> out;
    std::string last;
    EXPECT_STATUS_OK(ScanWindowAggregates(txn_.get(), w, [&](const std::string& m, std::string_view key, const Aggregate& a) {
      EXPECT_EQ(m, "m");
      EXPECT_TRUE(out.empty() || std::string(key) > last) << "out of order: " << key << " after " << last;
      last = std::string(key);
      EXPECT_TRUE(out.emplace(std::string(key), a).second) << "key twice: " << key;
      return Status::OK();
    }));
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Txn> txn_;
};

TEST_F(WindowRunsTest, RunsAddToBaseRecordsInKeyOrder) {
  ASSERT_STATUS_OK(PutRecord(txn_.get(), Table::kAggs, NaturalKey(kW, "m", "b"), codec::Encode(Aggregate{1, 10, 1})));
  ASSERT_STATUS_OK(PutRecord(txn_.get(), Table::kAggs, NaturalKey(kW, "m", "d"), codec::Encode(Aggregate{2, 20, 2})));
  Append(kW, {{"a", {1, 1, 1}}, {"b", {1, 5, 1}}});
  Append(kW, {{"b", {-1, -2, 1}}, {"c", {3, 3, 3}}, {"e", {1, 7, 1}}});
  const std::map<std::string, Aggregate> want = {
      {"a", {1, 1, 1}}, {"b", {1, 13, 3}}, {"c", {3, 3, 3}}, {"d", {2, 20, 2}}, {"e", {1, 7, 1}}};
  EXPECT_EQ(Scan(kW), want);

  WindowRuns runs;
  ASSERT_STATUS_OK(LoadWindowRuns(txn_.get(), kW, &runs));
  for (const auto& [k, a] : want) {
    Aggregate got;
    bool found = false;
    ASSERT_STATUS_OK(GetLiveAggregate(txn_.get(), NaturalKey(kW, "m", k), runs, &got, &found));
    EXPECT_TRUE(found) << k;
    EXPECT_EQ(got, a) << k;
  }
  Aggregate got;
  bool found = true;
  ASSERT_STATUS_OK(GetLiveAggregate(txn_.get(), NaturalKey(kW, "m", "zz"), runs, &got, &found));
  EXPECT_FALSE(found);
  EXPECT_EQ(got, Aggregate());
}

TEST_F(WindowRunsTest, CompactionKeepsFewRunsAndEverySum) {
  std::map<std::string, Aggregate> want;
  for (int c = 0; c < 200; ++c) {
    std::map<std::string, Aggregate> batch;
    for (int k = 0; k < 10; ++k) {
      const std::string key = "k" + std::to_string((c * 7 + k * 13) % 300);
      batch[key] = Aggregate{1, c, 1};
      want[key].count += 1;
      want[key].sum_micros += c;
      want[key].events += 1;
    }
    Append(kW, batch);
  }
  WindowRuns runs;
  ASSERT_STATUS_OK(LoadWindowRuns(txn_.get(), kW, &runs));
  EXPECT_GE(runs.runs.size(), 1u);
  EXPECT_LE(runs.runs.size(), 10u);  // about log2(200 commits)
  EXPECT_EQ(Scan(kW), want);
}

// Size-tiered compaction: with commits of one size the runs count in base
// 4 (four runs of a tier merge into one of the next), so each delta is
// rewritten about log4(commits) times.
TEST_F(WindowRunsTest, RunsOfOneTierMergeFourAtATime) {
  auto runs_after = [&](int commits) {
    txn_.reset();
    EXPECT_STATUS_OK(store_->BeginWrite(&txn_));
    EXPECT_STATUS_OK(DeleteWindowAggregates(txn_.get(), kW));
    for (int c = 0; c < commits; ++c) {
      std::map<std::string, Aggregate> batch;
      for (int k = 0; k < 8; ++k) batch["k" + std::to_string(c * 8 + k)] = Aggregate{1, 1, 1};
      Append(kW, batch);
    }
    WindowRuns runs;
    EXPECT_STATUS_OK(LoadWindowRuns(txn_.get(), kW, &runs));
    std::vector<size_t> sizes;
    for (const AggRun& r : runs.runs) sizes.push_back(r.size());
    return sizes;
  };
  EXPECT_EQ(runs_after(3), (std::vector<size_t>{8, 8, 8}));
  EXPECT_EQ(runs_after(4), (std::vector<size_t>{32}));
  EXPECT_EQ(runs_after(7), (std::vector<size_t>{32, 8, 8, 8}));
  EXPECT_EQ(runs_after(16), (std::vector<size_t>{128}));
  EXPECT_EQ(runs_after(21), (std::vector<size_t>{128, 32, 8}));
  EXPECT_EQ(Scan(kW).size(), 21u * 8);
}

// A window that ingest reads no key of (RunMerges::kSmall): small runs
// still merge four at a time, runs of new keys over kSmallMergeBytes
// together are left for the seal, and the scan still sums every key across
// all of them.
TEST_F(WindowRunsTest, LargeRunsOfAnUnreadWindowAreLeftForTheSeal) {
  std::map<std::string, Aggregate> want;
  auto commit = [&](int c, int keys, RunMerges merges) {
    std::map<std::string, Aggregate> batch;
    for (int k = 0; k < keys; ++k) {
      // Small commits share keys in pairs; large ones hold new keys only.
      const std::string key = "key-" + std::to_string(keys < 100 ? c / 2 : c) + "-" + std::to_string(k);
      batch[key] = Aggregate{1, c + 1, 1};
      want[key].count += 1;
      want[key].sum_micros += c + 1;
      want[key].events += 1;
    }
    Append(kW, batch, merges);
  };
  for (int c = 0; c < 4; ++c) commit(c, 8, RunMerges::kSmall);
  EXPECT_EQ(RunSizes(kW), (std::vector<size_t>{16}));  // small: merged as under kAll
  // About 40 bytes an entry: four runs of 10,000 are over 1 MiB together.
  const int big = 10000;
  ASSERT_GT(4 * big * 40, static_cast<int>(kSmallMergeBytes));
  for (int c = 4; c < 10; ++c) commit(c, big, RunMerges::kSmall);
  EXPECT_EQ(RunSizes(kW).size(), 7u);  // none of the large ones (of new keys) merged
  EXPECT_EQ(Scan(kW), want);
  // Read again (its bound gone): the same runs merge as they always did.
  commit(10, big, RunMerges::kAll);
  EXPECT_LT(RunSizes(kW).size(), 7u);
  EXPECT_EQ(Scan(kW), want);
}

// Past kMaxReadRuns runs of new keys, the first append of a window whose
// keys are read merges all of them: a key is then looked up in one run.
TEST_F(WindowRunsTest, ManyRunsLeftUnmergedAllMergeOnceKeysAreRead) {
  std::map<std::string, Aggregate> want;
  auto commit = [&](int c, int keys, RunMerges merges) {
    std::map<std::string, Aggregate> batch;
    for (int k = 0; k < keys; ++k) {
      const std::string key = "key-" + std::to_string(c) + "-" + std::to_string(k);
      batch[key] = Aggregate{1, k, 1};
      want[key] = Aggregate{1, k, 1};
    }
    Append(kW, batch, merges);
  };
  const int n = static_cast<int>(kMaxReadRuns) + 1, big = 8000;  // four runs: over 1 MiB
  for (int c = 0; c < n; ++c) commit(c, big, RunMerges::kSmall);
  EXPECT_EQ(RunSizes(kW).size(), static_cast<size_t>(n));
  commit(n, 1, RunMerges::kAll);
  EXPECT_EQ(RunSizes(kW), (std::vector<size_t>{static_cast<size_t>(n * big + 1)}));
  EXPECT_EQ(Scan(kW), want);
}

// An unread window's runs of new keys stop growing one a commit at
// kMaxUnreadRuns: past it they merge size-tiered, a tier per factor of four.
TEST_F(WindowRunsTest, RunsOfNewKeysOfAnUnreadWindowStopGrowingAtTheirBound) {
  size_t entries = 0;
  const int big = 7000;  // about 270 KB a run: four are over 1 MiB
  const size_t commits = kMaxUnreadRuns + 48;
  for (size_t c = 0; c < commits; ++c) {
    std::map<std::string, Aggregate> batch;
    for (int k = 0; k < big; ++k) batch["key-" + std::to_string(c) + "-" + std::to_string(k)] = Aggregate{1, 1, 1};
    entries += batch.size();
    Append(kW, batch, RunMerges::kSmall);
    if (c + 1 == kMaxUnreadRuns) {
      ASSERT_EQ(RunSizes(kW).size(), kMaxUnreadRuns);  // none merged up to here
    }
  }
  const std::vector<size_t> sizes = RunSizes(kW);
  EXPECT_GE(sizes.size(), kMaxUnreadRuns - 3);
  EXPECT_LE(sizes.size(), kMaxUnreadRuns + 9);  // not one a commit: 48 more would be 304
  size_t total = 0;
  for (size_t n : sizes) total += n;
  EXPECT_EQ(total, entries);
}

// Large runs that share keys are merged in an unread window too: a window
// of many keys and many commits stays about the size of its keys.
TEST_F(WindowRunsTest, LargeRunsThatShareKeysStillMerge) {
  std::map<std::string, Aggregate> want;
  constexpr int kKeys = 10000;  // about 400 KB a run: four are over 1 MiB
  for (int c = 0; c < 40; ++c) {
    std::map<std::string, Aggregate> batch;
    for (int k = 0; k < kKeys; ++k) {
      const std::string key = "key-" + std::to_string(k);
      batch[key] = Aggregate{1, c, 1};
      want[key].count += 1;
      want[key].sum_micros += c;
      want[key].events += 1;
    }
    Append(kW, batch, RunMerges::kSmall);
  }
  const std::vector<size_t> sizes = RunSizes(kW);
  EXPECT_LE(sizes.size(), 6u);
  for (size_t n : sizes) EXPECT_EQ(n, static_cast<size_t>(kKeys));
  EXPECT_EQ(Scan(kW), want);
}

// More runs than one pass over their heads serves (a heap then): the same
// keys in order, each summed once, as a few runs give.
TEST_F(WindowRunsTest, ManyRunsMergeToEveryKeyOnceInOrder) {
  constexpr int kRuns = 40;
  std::map<std::string, Aggregate> want;  // by the key as runs hold it
  std::vector<std::string> keys[kRuns], bytes(kRuns);
  WindowRuns many;
  for (int c = 0; c < kRuns; ++c) {
    std::map<std::string, Aggregate> batch;  // sorted, unique: a run's entries
    for (int k = 0; k < 50; ++k) {
      const std::string key = NaturalKey(kW, "m", "k" + std::to_string((c * 37 + k * 11) % 400)).substr(8);
      batch[key] = Aggregate{1, c * 1000 + k, 1};
      want[key].count += 1;
      want[key].sum_micros += c * 1000 + k;
      want[key].events += 1;
    }
    std::vector<std::pair<std::string_view, Aggregate>> entries;
    for (const auto& [k, a] : batch) keys[c].push_back(k);
    size_t i = 0;
    for (const auto& [k, a] : batch) entries.emplace_back(keys[c][i++], a);
    EncodeAggRun(entries, &bytes[c]);
  }
  for (int c = 0; c < kRuns; ++c) many.runs.push_back(AggRun::Trusted(bytes[c]));
  std::map<std::string, Aggregate> got;
  std::string last;
  for (MergedRuns m(many); m.Valid(); m.Next()) {
    const std::string key(m.key());
    EXPECT_TRUE(got.empty() || key > last) << key << " after " << last;
    last = key;
    got[key] = m.agg();
  }
  EXPECT_EQ(got, want);
}

// A stored run's framing is checked when a merge reads it, not on every
// append (an append reads only a run's entry count).
TEST_F(WindowRunsTest, DamagedRunIsCorruptionWhenMerged) {
  Append(kW, {{"a", {1, 1, 1}}, {"b", {1, 1, 1}}});
  std::string key;
  codec::AppendWindowKey(&key, kW);
  std::string raw;
  ASSERT_STATUS_OK(txn_->Scan(Table::kAggRuns, key, [&](std::string_view k, std::string_view v) {
    key.assign(k);
    raw.assign(v);
    return false;
  }));
  raw[1] = '\x7f';  // the first key's length
  ASSERT_STATUS_OK(txn_->Put(Table::kAggRuns, key, raw));
  Append(kW, {{"c", {1, 1, 1}}, {"d", {1, 1, 1}}});
  Append(kW, {{"e", {1, 1, 1}}, {"f", {1, 1, 1}}});
  std::vector<std::string> keys = {NaturalKey(kW, "m", "g").substr(8), NaturalKey(kW, "m", "h").substr(8)};
  EXPECT_TRUE(AppendWindowRun(txn_.get(), kW, {{keys[0], Aggregate{1, 1, 1}}, {keys[1], Aggregate{1, 1, 1}}})
                  .IsCorruption());
}

TEST_F(WindowRunsTest, SumsWrapAcrossRunsToTheExactValue) {
  // +MAX then -MAX then +5: each live value fits, the merged deltas do not.
  const int64_t max = std::numeric_limits<int64_t>::max();
  Append(kW, {{"k", {1, max, 1}}});
  Append(kW, {{"k", {1, -max, 1}}});
  Append(kW, {{"k", {1, -max, 1}}});
  Append(kW, {{"k", {1, max, 1}}});
  Append(kW, {{"k", {1, 5, 1}}});
  EXPECT_EQ(Scan(kW), (std::map<std::string, Aggregate>{{"k", {5, 5, 5}}}));
}

TEST_F(WindowRunsTest, DeleteWindowAggregatesDropsBaseAndRunsOfThatWindowOnly) {
  ASSERT_STATUS_OK(PutRecord(txn_.get(), Table::kAggs, NaturalKey(kW, "m", "a"), codec::Encode(Aggregate{1, 1, 1})));
  Append(kW, {{"b", {1, 1, 1}}});
  Append(2 * kW, {{"c", {1, 1, 1}}});
  ASSERT_STATUS_OK(DeleteWindowAggregates(txn_.get(), kW));
  EXPECT_TRUE(Scan(kW).empty());
  WindowRuns runs;
  ASSERT_STATUS_OK(LoadWindowRuns(txn_.get(), kW, &runs));
  EXPECT_TRUE(runs.runs.empty());
  EXPECT_EQ(Scan(2 * kW), (std::map<std::string, Aggregate>{{"c", {1, 1, 1}}}));
  std::map<int64_t, Aggregate> totals;
  ASSERT_STATUS_OK(LiveAggregateTotals(txn_.get(), &totals));
  EXPECT_EQ(totals, (std::map<int64_t, Aggregate>{{2 * kW, {1, 1, 1}}}));
}

TEST_F(WindowRunsTest, LiveTotalsCountBaseAndRuns) {
  ASSERT_STATUS_OK(PutRecord(txn_.get(), Table::kAggs, NaturalKey(kW, "m", "a"), codec::Encode(Aggregate{1, 10, 1})));
  Append(kW, {{"a", {2, 20, 2}}, {"b", {1, 1, 1}}});
  std::map<int64_t, Aggregate> totals;
  ASSERT_STATUS_OK(LiveAggregateTotals(txn_.get(), &totals));
  EXPECT_EQ(totals, (std::map<int64_t, Aggregate>{{kW, {4, 31, 4}}}));
}

TEST_F(WindowRunsTest, CopyWindowAggregatesReplacesBoth) {
  TempDir other_dir;
  std::unique_ptr<Store> other;
  ASSERT_STATUS_OK(Store::Open(other_dir.path(), /*create=*/true, &other));
  {
    std::unique_ptr<Txn> t;
    ASSERT_STATUS_OK(other->BeginWrite(&t));
    ASSERT_STATUS_OK(PutRecord(t.get(), Table::kAggs, NaturalKey(kW, "m", "x"), codec::Encode(Aggregate{1, 1, 1})));
    std::string key = NaturalKey(kW, "m", "y").substr(8);
    ASSERT_STATUS_OK(AppendWindowRun(t.get(), kW, {{key, Aggregate{2, 2, 2}}}));
    ASSERT_STATUS_OK(t->Commit());
  }
  Append(kW, {{"old", {1, 1, 1}}});
  std::unique_ptr<Txn> from;
  ASSERT_STATUS_OK(other->BeginRead(&from));
  ASSERT_STATUS_OK(CopyWindowAggregates(from.get(), txn_.get(), kW));
  EXPECT_EQ(Scan(kW), (std::map<std::string, Aggregate>{{"x", {1, 1, 1}}, {"y", {2, 2, 2}}}));
}

TEST_F(WindowRunsTest, AppendingARunMarksTheRootFormat) {
  ASSERT_STATUS_OK(Root::PutMetaU64(txn_.get(), meta::kFormat, 3));
  Append(kW, {{"a", {1, 1, 1}}});
  auto format = Root::GetMetaU64(txn_.get(), meta::kFormat);
  ASSERT_STATUS_OK(format);
  ASSERT_TRUE(format->has_value());
  EXPECT_EQ(**format, kProducerTimesFormat);
  EXPECT_GE(kProducerTimesFormat, 4u);
}

TEST_F(WindowRunsTest, DamagedRunIsCorruption) {
  Append(kW, {{"a", {1, 1, 1}}, {"b", {1, 1, 1}}});
  std::string key;
  codec::AppendWindowKey(&key, kW);
  std::string raw;
  ASSERT_STATUS_OK(txn_->Scan(Table::kAggRuns, key, [&](std::string_view k, std::string_view v) {
    key.assign(k);
    raw.assign(v);
    return false;
  }));
  ASSERT_FALSE(raw.empty());
  for (size_t cut : {size_t{1}, raw.size() / 2, raw.size() - 1}) {
    ASSERT_STATUS_OK(txn_->Put(Table::kAggRuns, key, raw.substr(0, cut)));
    WindowRuns runs;
    EXPECT_TRUE(LoadWindowRuns(txn_.get(), kW, &runs).IsCorruption()) << cut;
  }
  std::string bad = raw;
  bad[1] = '\x7f';  // the first key's length
  ASSERT_STATUS_OK(txn_->Put(Table::kAggRuns, key, bad));
  WindowRuns runs;
  EXPECT_TRUE(LoadWindowRuns(txn_.get(), kW, &runs).IsCorruption());
}

}  // namespace
}  // namespace snapsink::testing

namespace snapsink::testing {
namespace {

// Sums near the int64 limit: the window's sum bound must never let an
// overflowing event through, in one commit or across many, and the bound
// saturating must not reject what fits.
class RunsOverflowTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RunsOverflowTest, OverflowIsRejectedWhateverTheCommits) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const int64_t ts = Ms("2026-10-21T10:00:00Z");
  std::string lines;
  uint64_t seq = 0;
  auto add = [&](const std::string& key, const std::string& value) {
    lines += EventLine().Seq(seq++).Ts(ts).Metric("m").Key(key).Value(value).Line();
  };
  // One metric; a and z cancel in its total, so only the keys' own sums
  // can overflow (the metric's total is checked apart).
  add("a", "9000000000000");   // 1: 9e18 micros, fits
  add("z", "-9000000000000");  // 2: fits
  add("a", "9000000000000");   // 3: a would overflow (the total would not): rejected
  add("b", "1");               // 4
  add("z", "-300000000000");   // 5: z would overflow downwards: rejected
  add("a", "-1");              // 6
  WriteFile(in, lines);
  RunResult r = Snapsink({"run", root, in, "--final", "--commit-every", GetParam()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string rejects = ReadFile(root + "/rejects/" + [&] {
    std::string s = in;
    for (char& ch : s)
      if (!isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '_';
    return s;
  }() + ".ndjson");
  EXPECT_NE(rejects.find("\"line\":3,"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("\"line\":5,"), std::string::npos) << rejects;
  EXPECT_EQ(std::count(rejects.begin(), rejects.end(), '\n'), 2) << rejects;
  EXPECT_NE(rejects.find("sum would overflow"), std::string::npos) << rejects;
  RunResult q = Snapsink({"query", root, "--format", "csv"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find(",a,2,8999999999999,"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find(",b,1,1,"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find(",z,1,-9000000000000,"), std::string::npos) << q.out;
}

INSTANTIATE_TEST_SUITE_P(CommitEvery, RunsOverflowTest, ::testing::Values("1", "2", "1000"));

// A window of new keys in large commits: while its sum bound holds, ingest
// reads none of its keys, and its large runs are left for the seal; once
// values pass the bound, keys are read and the runs merge as before. Either
// way the sealed snapshot is byte for byte the one a single commit gives.
TEST(WideWindowRunsTest, LargeRunsWaitForTheSealUnlessKeysAreRead) {
  TempDir d;
  const int64_t ts = Ms("2026-10-21T10:00:00Z");
  constexpr int kCommits = 5, kKeys = 12000;  // 4 runs of 12,000 keys: over 1 MiB together
  auto runs_and_snapshot = [&](const std::string& name, int64_t value, int commit_every, size_t* runs) {
    const std::string root = d / name, in = d / (name + ".ndjson");
    std::string lines;
    for (int i = 0; i < kCommits * kKeys; ++i) {
      // Alternating signs keep the metric's total small; large ones pass the bound.
      lines += EventLine().Seq(i).Ts(ts).Metric("m").Key("key-" + std::to_string(i)).Value(
          std::to_string(i % 2 == 0 ? value : -value)).Line();
    }
    WriteFile(in, lines);
    EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
    RunResult r = Snapsink({"ingest", root, in, "--commit-every", std::to_string(commit_every)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    {
      std::unique_ptr<Store> store;
      EXPECT_STATUS_OK(Store::OpenReadOnly(root + "/state", &store));
      std::unique_ptr<Txn> txn;
      EXPECT_STATUS_OK(store->BeginRead(&txn));
      WindowRuns w;
      EXPECT_STATUS_OK(LoadWindowRuns(txn.get(), ts - ts % 3600000, &w));
      *runs = w.runs.size();
    }
    r = Snapsink({"seal", root, "--all"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ReadFile(filenames::Join(filenames::StagingSnapshotDir(root, ts - ts % 3600000, 1), filenames::kDataFile));
  };
  size_t runs = 0;
  const std::string one = runs_and_snapshot("one", 7, kCommits * kKeys, &runs);
  EXPECT_EQ(runs, 1u);
  EXPECT_FALSE(one.empty());
  EXPECT_EQ(runs_and_snapshot("bounded", 7, kKeys, &runs), one);
  EXPECT_EQ(runs, static_cast<size_t>(kCommits));  // no merge of the large runs
  // 9e17 micros a value: past the bound from the tenth event on.
  const std::string big_one = runs_and_snapshot("big-one", 900000000000, kCommits * kKeys, &runs);
  EXPECT_EQ(runs_and_snapshot("read", 900000000000, kKeys, &runs), big_one);
  EXPECT_EQ(runs, 2u);  // the first four merged, as size-tiered runs always were
}

}  // namespace
}  // namespace snapsink::testing
