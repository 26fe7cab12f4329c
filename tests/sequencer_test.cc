// docs/CONTRACT.md 2, row by row, against the pure sequencer functions Decide/Accept.
#include "engine/sequencer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace snapsink {
namespace {

ProducerState P(uint32_t epoch, uint64_t next, std::vector<Gap> gaps = {}) {
  ProducerState p;
  p.epoch = epoch;
  p.next_seq = next;
  p.gaps = std::move(gaps);
  return p;
}

// Decide, check it is kApply (and leaves the state alone), then Accept.
void Apply(ProducerState* p, uint32_t epoch, uint64_t seq) {
  const ProducerState before = *p;
  SeqDecision d = Decide(*p, epoch, seq, /*stop_on_gap=*/false);
  ASSERT_EQ(d.outcome, SeqOutcome::kApply) << "epoch " << epoch << " seq " << seq;
  ASSERT_EQ(*p, before);
  Accept(p, epoch, seq);
}

SeqOutcome Outcome(const ProducerState& p, uint32_t epoch, uint64_t seq, bool stop = false) {
  return Decide(p, epoch, seq, stop).outcome;
}

TEST(SequencerTest, NewProducerStartsAtZero) {
  ProducerState p;  // what the engine uses for a producer it has never seen
  SeqDecision d = Decide(p, 0, 0, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_FALSE(d.opens_gap);
  Accept(&p, 0, 0);
  EXPECT_EQ(p, P(0, 1));
}

TEST(SequencerTest, NewProducerWithHigherEpochStartsAtZero) {
  ProducerState p;
  Apply(&p, 7, 0);
  EXPECT_EQ(p, P(7, 1));
}

TEST(SequencerTest, NewProducerFirstSeqAboveZeroOpensGapFromZero) {
  ProducerState p;
  SeqDecision d = Decide(p, 3, 5, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_TRUE(d.opens_gap);
  EXPECT_EQ(d.missing, (Gap{0, 5}));
  Accept(&p, 3, 5);
  EXPECT_EQ(p, P(3, 6, {{0, 5}}));
}

TEST(SequencerTest, LowerEpochIsFenced) {
  const ProducerState p = P(3, 5, {{1, 2}});
  for (uint64_t seq : {0ull, 1ull, 4ull, 5ull, 6ull, 1000ull}) {
    EXPECT_EQ(Outcome(p, 2, seq), SeqOutcome::kFenced) << seq;
    EXPECT_EQ(Outcome(p, 0, seq), SeqOutcome::kFenced) << seq;
    EXPECT_EQ(Outcome(p, 2, seq, /*stop=*/true), SeqOutcome::kFenced) << seq;
  }
  // A seq inside the current epoch's open gap does not make a zombie apply.
  EXPECT_EQ(Outcome(p, 2, 1), SeqOutcome::kFenced);
}

TEST(SequencerTest, HigherEpochRestartsAtZeroAndClearsGaps) {
  ProducerState p = P(1, 10, {{2, 4}, {6, 8}});
  SeqDecision d = Decide(p, 2, 0, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_FALSE(d.opens_gap);
  Accept(&p, 2, 0);
  EXPECT_EQ(p, P(2, 1));
  // The old epoch is now fenced, even for seqs that were in its gaps.
  EXPECT_EQ(Outcome(p, 1, 3), SeqOutcome::kFenced);
  EXPECT_EQ(Outcome(p, 1, 10), SeqOutcome::kFenced);
  // Seq 0 of the new epoch again is a duplicate.
  EXPECT_EQ(Outcome(p, 2, 0), SeqOutcome::kDuplicate);
}

TEST(SequencerTest, HigherEpochAboveZeroOpensGapFromZero) {
  ProducerState p = P(1, 10, {{2, 4}});
  SeqDecision d = Decide(p, 4, 3, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_TRUE(d.opens_gap);
  EXPECT_EQ(d.missing, (Gap{0, 3}));
  Accept(&p, 4, 3);
  EXPECT_EQ(p, P(4, 4, {{0, 3}}));
}

TEST(SequencerTest, HigherEpochSeqBelowOldNextIsNotADuplicate) {
  // next was 10 in epoch 1; seq 5 in epoch 2 is new.
  ProducerState p = P(1, 10);
  SeqDecision d = Decide(p, 2, 5, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_TRUE(d.opens_gap);
  EXPECT_EQ(d.missing, (Gap{0, 5}));
}

TEST(SequencerTest, HigherEpochIgnoresOldGapCountForLimit) {
  ProducerState p = P(1, 0);
  for (uint64_t i = 0; i < kMaxOpenGaps; ++i) Apply(&p, 1, 2 * i + 1);
  ASSERT_EQ(p.gaps.size(), kMaxOpenGaps);
  SeqDecision d = Decide(p, 2, 9, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_TRUE(d.opens_gap);
  Accept(&p, 2, 9);
  EXPECT_EQ(p, P(2, 10, {{0, 9}}));
}

TEST(SequencerTest, BelowExpectedNotInGapIsDuplicate) {
  const ProducerState p = P(0, 5);
  for (uint64_t seq = 0; seq < 5; ++seq) {
    EXPECT_EQ(Outcome(p, 0, seq), SeqOutcome::kDuplicate) << seq;
    EXPECT_EQ(Outcome(p, 0, seq, /*stop=*/true), SeqOutcome::kDuplicate) << seq;
  }
  const ProducerState q = P(0, 10, {{2, 4}, {6, 7}});
  for (uint64_t seq : {0ull, 1ull, 4ull, 5ull, 7ull, 8ull, 9ull}) {
    EXPECT_EQ(Outcome(q, 0, seq), SeqOutcome::kDuplicate) << seq;
  }
  for (uint64_t seq : {2ull, 3ull, 6ull}) EXPECT_EQ(Outcome(q, 0, seq), SeqOutcome::kApply) << seq;
}

TEST(SequencerTest, EqualToExpectedIsApplied) {
  ProducerState p = P(2, 5, {{1, 3}});
  SeqDecision d = Decide(p, 2, 5, /*stop=*/true);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_FALSE(d.opens_gap);
  Accept(&p, 2, 5);
  EXPECT_EQ(p, P(2, 6, {{1, 3}}));
  Apply(&p, 2, 6);
  Apply(&p, 2, 7);
  EXPECT_EQ(p, P(2, 8, {{1, 3}}));
}

TEST(SequencerTest, AboveExpectedOpensGapWithMissingRange) {
  ProducerState p = P(0, 5, {{1, 2}});
  SeqDecision d = Decide(p, 0, 9, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_TRUE(d.opens_gap);
  EXPECT_EQ(d.missing, (Gap{5, 9}));
  Accept(&p, 0, 9);
  EXPECT_EQ(p, P(0, 10, {{1, 2}, {5, 9}}));
  // One missing seq.
  d = Decide(p, 0, 11, false);
  EXPECT_EQ(d.missing, (Gap{10, 11}));
  Accept(&p, 0, 11);
  EXPECT_EQ(p, P(0, 12, {{1, 2}, {5, 9}, {10, 11}}));
}

TEST(SequencerTest, HugeSeqOpensHugeGap) {
  ProducerState p;
  const uint64_t max = (uint64_t{1} << 63) - 1;
  SeqDecision d = Decide(p, 0, max, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_EQ(d.missing, (Gap{0, max}));
  Accept(&p, 0, max);
  EXPECT_EQ(p, P(0, max + 1, {{0, max}}));
  Apply(&p, 0, max - 1);
  Apply(&p, 0, 0);
  EXPECT_EQ(p, P(0, max + 1, {{1, max - 1}}));
}

TEST(SequencerTest, FillAtLowEnd) {
  ProducerState p = P(0, 10, {{5, 9}});
  SeqDecision d = Decide(p, 0, 5, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_FALSE(d.opens_gap);
  Accept(&p, 0, 5);
  EXPECT_EQ(p, P(0, 10, {{6, 9}}));
  EXPECT_EQ(Outcome(p, 0, 5), SeqOutcome::kDuplicate);
}

TEST(SequencerTest, FillAtHighEnd) {
  ProducerState p = P(0, 10, {{5, 9}});
  Apply(&p, 0, 8);
  EXPECT_EQ(p, P(0, 10, {{5, 8}}));
  EXPECT_EQ(Outcome(p, 0, 8), SeqOutcome::kDuplicate);
}

TEST(SequencerTest, FillInMiddleSplitsGap) {
  ProducerState p = P(0, 10, {{1, 2}, {5, 9}});
  SeqDecision d = Decide(p, 0, 7, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kApply);
  EXPECT_FALSE(d.opens_gap);
  Accept(&p, 0, 7);
  EXPECT_EQ(p, P(0, 10, {{1, 2}, {5, 7}, {8, 9}}));
  EXPECT_EQ(Outcome(p, 0, 7), SeqOutcome::kDuplicate);
  for (uint64_t seq : {1ull, 5ull, 6ull, 8ull}) EXPECT_EQ(Outcome(p, 0, seq), SeqOutcome::kApply) << seq;
}

TEST(SequencerTest, FillOfSingleSeqGapClosesIt) {
  ProducerState p = P(0, 10, {{2, 3}, {5, 6}, {8, 9}});
  Apply(&p, 0, 5);
  EXPECT_EQ(p, P(0, 10, {{2, 3}, {8, 9}}));
  Apply(&p, 0, 8);
  Apply(&p, 0, 2);
  EXPECT_EQ(p, P(0, 10));
  for (uint64_t seq = 0; seq < 10; ++seq) EXPECT_EQ(Outcome(p, 0, seq), SeqOutcome::kDuplicate) << seq;
}

TEST(SequencerTest, FillsOutOfOrderUntilClosed) {
  ProducerState p;
  Apply(&p, 0, 0);
  Apply(&p, 0, 9);  // gap [1, 9)
  ASSERT_EQ(p, P(0, 10, {{1, 9}}));
  const uint64_t order[] = {4, 1, 8, 6, 2, 7, 3, 5};
  std::vector<uint64_t> filled;
  for (uint64_t seq : order) {
    Apply(&p, 0, seq);
    filled.push_back(seq);
    // Every seq filled so far is now a duplicate, every other is still open.
    for (uint64_t s = 1; s < 9; ++s) {
      const bool done = std::find(filled.begin(), filled.end(), s) != filled.end();
      EXPECT_EQ(Outcome(p, 0, s), done ? SeqOutcome::kDuplicate : SeqOutcome::kApply) << s << " after " << seq;
    }
    EXPECT_EQ(p.next_seq, 10u);
  }
  EXPECT_EQ(p, P(0, 10));
}

TEST(SequencerTest, GapsStaySortedAndDisjoint) {
  ProducerState p;
  Apply(&p, 0, 3);    // [0,3)
  Apply(&p, 0, 10);   // [4,10)
  Apply(&p, 0, 20);   // [11,20)
  Apply(&p, 0, 15);   // split
  Apply(&p, 0, 6);    // split
  Apply(&p, 0, 0);    // low end of first
  EXPECT_EQ(p, P(0, 21, {{1, 3}, {4, 6}, {7, 10}, {11, 15}, {16, 20}}));
}

TEST(SequencerTest, OpenGapLimit) {
  ProducerState p;
  // Gaps [4i, 4i+3) with i = 0..1023: seq 4i+3 applied.
  for (uint64_t i = 0; i < kMaxOpenGaps; ++i) {
    SeqDecision d = Decide(p, 0, 4 * i + 3, false);
    ASSERT_EQ(d.outcome, SeqOutcome::kApply) << i;
    ASSERT_TRUE(d.opens_gap);
    Accept(&p, 0, 4 * i + 3);
  }
  ASSERT_EQ(p.gaps.size(), 1024u);
  const ProducerState full = p;
  const uint64_t next = p.next_seq;
  ASSERT_EQ(next, 4 * kMaxOpenGaps);

  // The 1025th gap.
  SeqDecision d = Decide(p, 0, next + 1, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kGapLimit);
  EXPECT_EQ(d.missing, (Gap{next, next + 1}));
  // In order and filling at an end of a gap are fine at the limit.
  EXPECT_EQ(Outcome(p, 0, next), SeqOutcome::kApply);
  EXPECT_EQ(Outcome(p, 0, 0), SeqOutcome::kApply);
  EXPECT_EQ(Outcome(p, 0, 2), SeqOutcome::kApply);
  EXPECT_EQ(Outcome(p, 0, 4 * 500 + 2), SeqOutcome::kApply);
  // Splitting a gap at the limit would make 1025.
  d = Decide(p, 0, 4 * 500 + 1, false);
  EXPECT_EQ(d.outcome, SeqOutcome::kGapLimit);
  EXPECT_EQ(d.missing, (Gap{2000, 2003}));
  EXPECT_EQ(p, full);  // Decide changed nothing

  // Applying in order keeps the limit.
  Apply(&p, 0, next);
  EXPECT_EQ(Outcome(p, 0, next + 2), SeqOutcome::kGapLimit);

  // Close one gap completely: 1023 open, one split is now fine, the next is not.
  Apply(&p, 0, 4);
  Apply(&p, 0, 5);
  Apply(&p, 0, 6);
  ASSERT_EQ(p.gaps.size(), 1023u);
  Apply(&p, 0, 1);  // split [0,3) into [0,1) [2,3)
  ASSERT_EQ(p.gaps.size(), 1024u);
  EXPECT_EQ(Outcome(p, 0, 9), SeqOutcome::kGapLimit);
  EXPECT_EQ(Outcome(p, 0, p.next_seq + 5), SeqOutcome::kGapLimit);
  // A new epoch is always fine.
  EXPECT_EQ(Outcome(p, 1, 5), SeqOutcome::kApply);
}

TEST(SequencerTest, StopOnGapStopsWithoutStateChange) {
  const ProducerState p = P(2, 5, {{1, 3}});
  ProducerState copy = p;
  SeqDecision d = Decide(copy, 2, 8, /*stop_on_gap=*/true);
  EXPECT_EQ(d.outcome, SeqOutcome::kGapStop);
  EXPECT_EQ(d.missing, (Gap{5, 8}));
  EXPECT_EQ(copy, p);
  // A higher epoch above 0 is a gap too.
  d = Decide(copy, 3, 2, true);
  EXPECT_EQ(d.outcome, SeqOutcome::kGapStop);
  EXPECT_EQ(d.missing, (Gap{0, 2}));
  EXPECT_EQ(copy, p);
  // Without a new gap, stop_on_gap changes nothing.
  EXPECT_EQ(Outcome(p, 2, 5, true), SeqOutcome::kApply);
  EXPECT_EQ(Outcome(p, 2, 2, true), SeqOutcome::kApply);  // filling an old gap
  EXPECT_EQ(Outcome(p, 2, 4, true), SeqOutcome::kDuplicate);
  EXPECT_EQ(Outcome(p, 1, 9, true), SeqOutcome::kFenced);
  EXPECT_EQ(Outcome(p, 3, 0, true), SeqOutcome::kApply);
}

TEST(SequencerTest, DecideNeverChangesState) {
  const ProducerState p = P(1, 6, {{1, 4}});
  ProducerState copy = p;
  for (uint32_t epoch : {0u, 1u, 2u}) {
    for (uint64_t seq = 0; seq < 10; ++seq) {
      for (bool stop : {false, true}) {
        (void)Decide(copy, epoch, seq, stop);
        ASSERT_EQ(copy, p);
      }
    }
  }
}

}  // namespace
}  // namespace snapsink
