#include "engine/sequencer.h"

#include <algorithm>

namespace snapsink {
namespace {

// The open gap holding seq, or gaps.end().
std::vector<Gap>::const_iterator FindGap(const std::vector<Gap>& gaps, uint64_t seq) {
  auto it = std::upper_bound(gaps.begin(), gaps.end(), seq, [](uint64_t s, const Gap& g) { return s < g.hi; });
  if (it != gaps.end() && it->lo <= seq) return it;
  return gaps.end();
}

}  // namespace

SeqDecision Decide(const ProducerState& p, uint32_t epoch, uint64_t seq, bool stop_on_gap) {
  SeqDecision d;
  if (epoch < p.epoch) {
    d.outcome = SeqOutcome::kFenced;
    return d;
  }
  // A higher epoch is a new incarnation: expected seq restarts at 0, no gaps.
  const bool fresh = epoch > p.epoch;
  const uint64_t next = fresh ? 0 : p.next_seq;
  const size_t open = fresh ? 0 : p.gaps.size();
  if (seq == next) return d;
  if (seq < next) {
    auto it = FindGap(p.gaps, seq);
    if (it == p.gaps.end()) {
      d.outcome = SeqOutcome::kDuplicate;
      return d;
    }
    // Filling the middle of a gap splits it in two.
    if (it->lo < seq && seq + 1 < it->hi && open + 1 > kMaxOpenGaps) {
      d.outcome = SeqOutcome::kGapLimit;
      d.missing = *it;
    }
    return d;
  }
  d.missing = Gap{next, seq};
  d.opens_gap = true;
  if (stop_on_gap) {
    d.outcome = SeqOutcome::kGapStop;
  } else if (open + 1 > kMaxOpenGaps) {
    d.outcome = SeqOutcome::kGapLimit;
  }
  return d;
}

void Accept(ProducerState* p, uint32_t epoch, uint64_t seq) {
  if (epoch > p->epoch) {
    p->epoch = epoch;
    p->next_seq = 0;
    p->gaps.clear();
  }
  if (seq >= p->next_seq) {
    if (seq > p->next_seq) p->gaps.push_back(Gap{p->next_seq, seq});
    p->next_seq = seq + 1;
    return;
  }
  auto cit = FindGap(p->gaps, seq);
  auto it = p->gaps.begin() + (cit - p->gaps.cbegin());
  if (it->lo == seq && it->hi == seq + 1) {
    p->gaps.erase(it);
  } else if (it->lo == seq) {
    it->lo = seq + 1;
  } else if (it->hi == seq + 1) {
    it->hi = seq;
  } else {
    Gap upper{seq + 1, it->hi};
    it->hi = seq;
    p->gaps.insert(it + 1, upper);
  }
}

}  // namespace snapsink
