// Open gaps beyond the record's 1024 spill to their own table:
// heavily reordered input never dead-ends, and dedup stays exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "engine/gap_spill.h"
#include "engine/store.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


std::string Ev(uint64_t seq) {
  return EventLine().Seq(seq).Ts(kBase + static_cast<int64_t>(seq)).Metric("orders").Key("k" + std::to_string(seq % 5))
      .Value(static_cast<int64_t>(seq % 7)).Line();
}

// Against a model that remembers every seq: the same decision for every
// event of a shuffled stream with repeats, spilling many times over.
TEST(GapSpill, DedupStaysExactBeyondTheRecordsGaps) {
  TempDir d;
  std::unique_ptr<Store> store;
  ASSERT_STATUS_OK(Store::Open(d.path(), /*create=*/true, &store));
  std::vector<uint64_t> stream;
  for (uint64_t s = 0; s < 20000; ++s) stream.push_back(s);
  std::mt19937_64 rng(26);
  std::shuffle(stream.begin(), stream.end(), rng);
  for (int i = 0; i < 5000; ++i) stream.push_back(stream[rng() % stream.size()]);  // repeats
  std::set<uint64_t> seen;
  ProducerState p;
  uint64_t most_spilled = 0;
  for (size_t i = 0; i < stream.size(); i += 500) {
    std::unique_ptr<Txn> txn;
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    for (size_t j = i; j < std::min(stream.size(), i + 500); ++j) {
      const uint64_t seq = stream[j];
      auto d = DecideWithSpill(txn.get(), "p", p, 0, seq, /*stop_on_gap=*/false);
      ASSERT_STATUS_OK(d);
      const bool fresh = seen.insert(seq).second;
      ASSERT_EQ(d->outcome, fresh ? SeqOutcome::kApply : SeqOutcome::kDuplicate) << "seq " << seq << " at " << j;
      if (fresh) {
        ASSERT_STATUS_OK(AcceptWithSpill(txn.get(), "p", &p, 0, seq));
      }
      ASSERT_LE(p.gaps.size(), kMaxOpenGaps);
      most_spilled = std::max(most_spilled, p.spilled);
    }
    ASSERT_STATUS_OK(txn->Commit());
  }
  EXPECT_GT(most_spilled, 1000u);
  EXPECT_EQ(p.spilled, 0u);
  EXPECT_TRUE(p.gaps.empty());
  EXPECT_EQ(p.next_seq, 20000u);
  // A new epoch drops what the old one spilled.
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  for (uint64_t s = 0; s < 3000; s += 2) ASSERT_STATUS_OK(AcceptWithSpill(txn.get(), "p", &p, 1, s));
  EXPECT_EQ(p.spilled + p.gaps.size(), 1499u);
  std::vector<Gap> all;
  ASSERT_STATUS_OK(AllOpenGaps(txn.get(), "p", p, &all));
  ASSERT_EQ(all.size(), 1499u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], (Gap{2 * i + 1, 2 * i + 2}));
  ASSERT_STATUS_OK(AcceptWithSpill(txn.get(), "p", &p, 2, 0));
  EXPECT_EQ(p.spilled, 0u);
  uint64_t entries = 0, bytes = 0;
  ASSERT_STATUS_OK(txn->Stat(Table::kGapSpill, &entries, &bytes));
  EXPECT_EQ(entries, 0u);
}

// Past kMaxSpilledGaps ranges the source stops (exit 3 through ingest): the
// bound on state per producer stays, 1,049,600 open gaps in all.
TEST(GapSpill, TheTableHasALimitPerProducer) {
  TempDir d;
  std::unique_ptr<Store> store;
  ASSERT_STATUS_OK(Store::Open(d.path(), /*create=*/true, &store));
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  ProducerState p;
  for (uint64_t s = 0; s < 2 * kMaxOpenGaps + 2; s += 2) ASSERT_STATUS_OK(AcceptWithSpill(txn.get(), "p", &p, 0, s));
  ASSERT_EQ(p.gaps.size(), kMaxOpenGaps);
  ASSERT_EQ(p.spilled, 0u);
  p.spilled = kMaxSpilledGaps;  // as if the table were full
  auto d1 = DecideWithSpill(txn.get(), "p", p, 0, p.next_seq + 1, /*stop_on_gap=*/false);
  ASSERT_STATUS_OK(d1);
  EXPECT_EQ(d1->outcome, SeqOutcome::kGapLimit);
  p.spilled = kMaxSpilledGaps - 1;
  auto d2 = DecideWithSpill(txn.get(), "p", p, 0, p.next_seq + 1, /*stop_on_gap=*/false);
  ASSERT_STATUS_OK(d2);
  EXPECT_EQ(d2->outcome, SeqOutcome::kApply);
}

// A stop (here --on-gap stop) seals and publishes the windows that what came
// before it closed; a window still open (seq 2's, three hours on) is not
// sealed, even under --final: a stop is not the end of the input.
TEST(GapSpill, ARunThatStopsPublishesWhatCameBeforeTheStop) {
  TempDir d;
  const std::string later =
      EventLine().Seq(2).Ts(kBase + 3 * 3600 * 1000).Metric("orders").Key("k2").Value(1).Line();
  WriteFile(d / "in", Ev(0) + Ev(1) + later + Ev(5) + Ev(6));
  ASSERT_EQ(Snapsink({"init", d / "r", "--on-gap", "stop"}).exit_code, 0);
  RunResult r = Snapsink({"run", d / "r", d / "in", "--final"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("seq 3..4 missing"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gaps ROOT accept --producer p"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("generation 1"), std::string::npos) << r.out;
  RunResult q = Snapsink({"query", d / "r", "--format", "json"});
  EXPECT_NE(q.out.find("\"key\":\"k0\",\"count\":1,"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("\"key\":\"k1\",\"count\":1,"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("k2"), std::string::npos) << q.out;  // its window is still open
}

std::string GapLines(uint64_t from, uint64_t to) {  // the odd seqs in [from, to] as inspect gaps --json prints them
  std::string out;
  for (uint64_t s = from; s <= to; s += 2) {
    out += "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":" + std::to_string(s) + ",\"to_seq\":" + std::to_string(s) +
           ",\"missing\":1}\n";
  }
  return out;
}

// Broke: seq 0, 2, ..., 3998 then 1, 3, ... stopped run at line 1026 with
// "more than 1024 open gaps", exit 3, on every rerun, nothing published.
TEST(GapSpill, AHeavilyReorderedStreamIsAppliedExactlyOnce) {
  TempDir d;
  std::string evens, odds, all;
  for (uint64_t s = 0; s < 4000; s += 2) evens += Ev(s);
  for (uint64_t s = 1; s < 4000; s += 2) odds += Ev(s);
  for (uint64_t s = 0; s < 4000; ++s) all += Ev(s);
  WriteFile(d / "evens", evens);
  WriteFile(d / "odds", odds);
  WriteFile(d / "all", all);
  ASSERT_EQ(Snapsink({"init", d / "clean"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"run", d / "clean", d / "all", "--final"}).exit_code, 0);

  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  RunResult first = Snapsink({"run", r, d / "evens"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // Midway: 1999 open gaps, 975 of them spilled, listed in order.
  RunResult gaps = Snapsink({"inspect", r, "gaps", "--json"});
  ASSERT_EQ(gaps.exit_code, 0) << gaps.err;
  EXPECT_EQ(gaps.out, GapLines(1, 3997));
  RunResult producers = Snapsink({"inspect", r, "producers", "--json"});
  EXPECT_NE(producers.out.find("\"open_gaps\":1999"), std::string::npos) << producers.out;
  // Half the odds (the lowest, all spilled), then the rest.
  std::string odds1, odds2;
  for (uint64_t s = 1; s < 4000; s += 2) (s < 2000 ? odds1 : odds2) += Ev(s);
  WriteFile(d / "odds1", odds1);
  WriteFile(d / "odds2", odds2);
  ASSERT_EQ(Snapsink({"run", r, d / "odds1"}).exit_code, 0);
  gaps = Snapsink({"inspect", r, "gaps", "--json"});
  EXPECT_EQ(gaps.out, GapLines(2001, 3997));
  RunResult last = Snapsink({"run", r, d / "odds2", "--final"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(Snapsink({"inspect", r, "gaps", "--json"}).out, "");
  const std::string want = Snapsink({"query", d / "clean", "--format", "json"}).out;
  EXPECT_EQ(Snapsink({"query", r, "--format", "json"}).out, want);
  // Redelivery of everything adds nothing.
  RunResult again = Snapsink({"run", r, d / "all", "--final"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Snapsink({"query", r, "--format", "json"}).out, want);
  RunResult sources = Snapsink({"inspect", r, "sources", "--json"});
  EXPECT_NE(sources.out.find("\"applied\":0,\"duplicates\":4000"), std::string::npos) << sources.out;
  RunResult v = Snapsink({"verify", r});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// The same stream in one file, through one run.
TEST(GapSpill, OneRunOverTheReorderedStreamFinishes) {
  TempDir d;
  std::string in;
  for (uint64_t s = 0; s < 4000; s += 2) in += Ev(s);
  for (uint64_t s = 1; s < 4000; s += 2) in += Ev(s);
  WriteFile(d / "in", in);
  ASSERT_EQ(Snapsink({"init", d / "r"}).exit_code, 0);
  RunResult r = Snapsink({"run", d / "r", d / "in", "--final", "--commit-every", "300"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult sources = Snapsink({"inspect", d / "r", "sources", "--json"});
  EXPECT_NE(sources.out.find("\"applied\":4000,\"duplicates\":0"), std::string::npos) << sources.out;
  EXPECT_EQ(Snapsink({"inspect", d / "r", "gaps", "--json"}).out, "");
}

}  // namespace
}  // namespace snapsink::testing
