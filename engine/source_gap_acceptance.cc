#include "engine/source_gap_acceptance.h"

#include <string_view>

#include "engine/state_codec.h"

namespace snapsink {
namespace {

constexpr std::string_view kPrefix = "accepted_source_gap/";
constexpr size_t kFixed = 8 + 8 + 8;

}  // namespace

Status RecordAcceptedSourceGap(Txn* txn, const AcceptedSourceGap& rec) {
  std::vector<AcceptedSourceGap> earlier;
  SNAPSINK_RETURN_IF_ERROR(ListAcceptedSourceGaps(txn, &earlier));
  const uint64_t n = earlier.size();
  std::string key(kPrefix);
  for (int i = 7; i >= 0; --i) key.push_back(static_cast<char>(n >> (8 * i)));
  std::string v;
  codec::PutU64(&v, rec.lo);
  codec::PutU64(&v, rec.hi);
  codec::PutU64(&v, static_cast<uint64_t>(rec.accepted_at_ms));
  v += rec.source;
  return txn->Put(Table::kMeta, key, v);
}

Status ListAcceptedSourceGaps(Txn* txn, std::vector<AcceptedSourceGap>* out) {
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kMeta, kPrefix, [&](std::string_view k, std::string_view v) {
    if (k.size() != kPrefix.size() + 8 || v.size() <= kFixed) {
      decode = Status::Corruption("malformed accepted source gap record in state");
      return false;
    }
    AcceptedSourceGap g;
    g.lo = codec::GetU64(v.data());
    g.hi = codec::GetU64(v.data() + 8);
    g.accepted_at_ms = static_cast<int64_t>(codec::GetU64(v.data() + 16));
    g.source = std::string(v.substr(kFixed));
    out->push_back(std::move(g));
    return true;
  }));
  return decode;
}

}  // namespace snapsink
