#include "engine/gap_spill.h"

#include <optional>

#include "engine/coding.h"

namespace snapsink {
namespace {

std::string SpilledProducerPrefix(std::string_view producer) {
  std::string k;
  coding::PutBigEndian(&k, producer.size(), 2);
  k.append(producer);
  return k;
}

std::string EpochPrefix(std::string_view producer, uint32_t epoch) {
  std::string k = SpilledProducerPrefix(producer);
  coding::PutBigEndian(&k, epoch, 4);
  return k;
}

std::string RangeKey(std::string_view producer, uint32_t epoch, uint64_t lo) {
  std::string k = EpochPrefix(producer, epoch);
  coding::PutBigEndian(&k, lo, 8);
  return k;
}

std::string HiValue(uint64_t hi) {
  std::string v;
  codec::PutU64(&v, hi);
  return v;
}

// Whether seq can only be open in a spilled range: below next_seq and
// below every gap of the record.
bool InSpillRange(const ProducerState& p, uint32_t epoch, uint64_t seq) {
  return epoch == p.epoch && p.spilled > 0 && seq < p.next_seq && (p.gaps.empty() || seq < p.gaps.front().lo);
}

// The spilled range holding seq, if any.
Result<std::optional<Gap>> FindSpilled(Txn* txn, std::string_view producer, uint32_t epoch, uint64_t seq) {
  std::string_view k, v;
  Status s = txn->Floor(Table::kGapSpill, RangeKey(producer, epoch, seq), EpochPrefix(producer, epoch), &k, &v);
  if (s.IsNotFound()) return std::optional<Gap>();
  SNAPSINK_RETURN_IF_ERROR(s);
  if (v.size() != 8 || k.size() < 8) return Status::Corruption("malformed spilled gap record in state");
  const Gap g{coding::DecodeBigEndian(k.data() + k.size() - 8, 8), codec::GetU64(v.data())};
  if (seq < g.lo || seq >= g.hi) return std::optional<Gap>();
  return std::optional<Gap>(g);
}

}  // namespace

Result<SeqDecision> DecideWithSpill(Txn* txn, std::string_view producer, const ProducerState& p, uint32_t epoch,
                                    uint64_t seq, bool stop_on_gap) {
  SeqDecision d = Decide(p, epoch, seq, stop_on_gap);
  if (d.outcome == SeqOutcome::kGapLimit) {
    // The record is full: its lowest gap would spill.
    if (p.spilled + 1 <= kMaxSpilledGaps) d.outcome = SeqOutcome::kApply;
    return d;
  }
  if (d.outcome == SeqOutcome::kDuplicate && InSpillRange(p, epoch, seq)) {
    SNAPSINK_ASSIGN_OR_RETURN(std::optional<Gap> g, FindSpilled(txn, producer, epoch, seq));
    if (!g) return d;
    d.outcome = SeqOutcome::kApply;
    if (g->lo < seq && seq + 1 < g->hi && p.spilled + 1 > kMaxSpilledGaps) {
      d.outcome = SeqOutcome::kGapLimit;
      d.missing = *g;
    }
  }
  return d;
}

Status AcceptWithSpill(Txn* txn, std::string_view producer, ProducerState* p, uint32_t epoch, uint64_t seq) {
  if (epoch > p->epoch && p->spilled > 0) {
    SNAPSINK_RETURN_IF_ERROR(txn->DeletePrefix(Table::kGapSpill, EpochPrefix(producer, p->epoch)));
    p->spilled = 0;
  }
  if (InSpillRange(*p, epoch, seq)) {
    SNAPSINK_ASSIGN_OR_RETURN(std::optional<Gap> g, FindSpilled(txn, producer, epoch, seq));
    if (!g) return Status::Corruption("producer " + std::string(producer) + ": seq " + std::to_string(seq) +
                                      " applied as inside a spilled gap that is not there");
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kGapSpill, RangeKey(producer, epoch, g->lo)));
    --p->spilled;
    if (g->lo < seq) {
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kGapSpill, RangeKey(producer, epoch, g->lo), HiValue(seq)));
      ++p->spilled;
    }
    if (seq + 1 < g->hi) {
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kGapSpill, RangeKey(producer, epoch, seq + 1), HiValue(g->hi)));
      ++p->spilled;
    }
    return Status::OK();
  }
  Accept(p, epoch, seq);
  size_t spill = p->gaps.size() > kMaxOpenGaps ? p->gaps.size() - kMaxOpenGaps : 0;
  for (size_t i = 0; i < spill; ++i) {
    const Gap& g = p->gaps[i];
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kGapSpill, RangeKey(producer, p->epoch, g.lo), HiValue(g.hi)));
    ++p->spilled;
  }
  p->gaps.erase(p->gaps.begin(), p->gaps.begin() + static_cast<std::ptrdiff_t>(spill));
  return Status::OK();
}

Status ScanSpilledGaps(Txn* txn, std::string_view producer, uint32_t epoch, const std::function<void(const Gap&)>& fn) {
  Status st;
  SNAPSINK_RETURN_IF_ERROR(
      txn->Scan(Table::kGapSpill, EpochPrefix(producer, epoch), [&](std::string_view k, std::string_view v) {
        if (v.size() != 8 || k.size() < 8) {
          st = Status::Corruption("malformed spilled gap record in state");
          return false;
        }
        fn(Gap{coding::DecodeBigEndian(k.data() + k.size() - 8, 8), codec::GetU64(v.data())});
        return true;
      }));
  return st;
}

Status LowestSpilledGap(Txn* txn, std::string_view producer, uint32_t epoch, std::optional<Gap>* out) {
  out->reset();
  Status st;
  SNAPSINK_RETURN_IF_ERROR(
      txn->Scan(Table::kGapSpill, EpochPrefix(producer, epoch), [&](std::string_view k, std::string_view v) {
        if (v.size() != 8 || k.size() < 8) {
          st = Status::Corruption("malformed spilled gap record in state");
        } else {
          *out = Gap{coding::DecodeBigEndian(k.data() + k.size() - 8, 8), codec::GetU64(v.data())};
        }
        return false;  // the first is the lowest
      }));
  return st;
}

Status AllOpenGaps(Txn* txn, std::string_view producer, const ProducerState& p, std::vector<Gap>* out) {
  out->clear();
  if (p.spilled > 0) {
    SNAPSINK_RETURN_IF_ERROR(ScanSpilledGaps(txn, producer, p.epoch, [&](const Gap& g) { out->push_back(g); }));
  }
  out->insert(out->end(), p.gaps.begin(), p.gaps.end());
  return Status::OK();
}

Status DropSpilledGaps(Txn* txn, std::string_view producer) {
  return txn->DeletePrefix(Table::kGapSpill, SpilledProducerPrefix(producer));
}

}  // namespace snapsink
