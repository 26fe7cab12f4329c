#include "engine/gap_acceptance.h"

#include <charconv>

namespace snapsink {
namespace {

constexpr std::string_view kPrefix = "accepted_gap/";
constexpr size_t kValueSize = 1 + 4 + 8 + 8 + 8;

std::string ProducerPrefix(std::string_view producer) {
  std::string k(kPrefix);
  codec::AppendEscapedMetric(&k, producer);
  return k;
}

Status Decode(std::string_view key, std::string_view v, AcceptedGap* out) {
  std::string_view rest;
  if (v.size() != kValueSize ||
      !codec::SplitEscapedMetric(key.substr(kPrefix.size()), &out->producer, &rest) || rest.size() != 8) {
    return Status::Corruption("malformed accepted gap record in state");
  }
  out->any_epoch = v[0] != 0;
  out->epoch = codec::GetU32(v.data() + 1);
  out->range.lo = codec::GetU64(v.data() + 5);
  out->range.hi = codec::GetU64(v.data() + 13);
  out->accepted_at_ms = static_cast<int64_t>(codec::GetU64(v.data() + 21));
  return Status::OK();
}

Status Scan(Txn* txn, std::string_view prefix, const std::function<void(const AcceptedGap&)>& fn) {
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kMeta, prefix, [&](std::string_view k, std::string_view v) {
    AcceptedGap g;
    decode = Decode(k, v, &g);
    if (!decode.ok()) return false;
    fn(g);
    return true;
  }));
  return decode;
}

}  // namespace

Status RecordAcceptedGap(Txn* txn, const AcceptedGap& rec) {
  const std::string prefix = ProducerPrefix(rec.producer);
  uint64_t n = 0;
  SNAPSINK_RETURN_IF_ERROR(Scan(txn, prefix, [&](const AcceptedGap&) { ++n; }));
  std::string key = prefix;
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(n >> (8 * i)));
  std::string v;
  v.push_back(rec.any_epoch ? 1 : 0);
  codec::PutU32(&v, rec.epoch);
  codec::PutU64(&v, rec.range.lo);
  codec::PutU64(&v, rec.range.hi);
  codec::PutU64(&v, static_cast<uint64_t>(rec.accepted_at_ms));
  return txn->Put(Table::kMeta, key, v);
}

Status ListAcceptedGaps(Txn* txn, std::vector<AcceptedGap>* out) {
  return Scan(txn, kPrefix, [&](const AcceptedGap& g) { out->push_back(g); });
}

Result<bool> GapAccepted(Txn* txn, std::string_view producer, uint32_t epoch, const Gap& missing) {
  bool accepted = false;
  SNAPSINK_RETURN_IF_ERROR(Scan(txn, ProducerPrefix(producer), [&](const AcceptedGap& g) {
    if ((g.any_epoch || g.epoch == epoch) && g.range.lo <= missing.lo && missing.hi <= g.range.hi) accepted = true;
  }));
  return accepted;
}

bool ParseSeqRange(std::string_view text, Gap* out) {
  auto num = [](std::string_view s, uint64_t* v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  uint64_t lo, hi;
  const size_t dots = text.find("..");
  if (dots == std::string_view::npos) {
    if (!num(text, &lo)) return false;
    hi = lo;
  } else if (!num(text.substr(0, dots), &lo) || !num(text.substr(dots + 2), &hi)) {
    return false;
  }
  if (lo > hi || hi == UINT64_MAX) return false;
  *out = Gap{lo, hi + 1};
  return true;
}

}  // namespace snapsink
