#include "engine/window_records.h"

#include <string>

namespace snapsink {
namespace {
std::string WindowKey(int64_t window_ms) {
  std::string key;
  codec::AppendWindowKey(&key, window_ms);
  return key;
}
}  // namespace

Status ReadWindowState(Txn* txn, int64_t window_ms, WindowState* out) {
  std::string_view v;
  Status s = txn->Get(Table::kWindows, WindowKey(window_ms), &v);
  if (s.IsNotFound()) {
    *out = WindowState();
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(s);
  return codec::Decode(v, out);
}

Status WriteWindowState(Txn* txn, int64_t window_ms, const WindowState& state) {
  return txn->Put(Table::kWindows, WindowKey(window_ms), codec::Encode(state));
}

Status SetSealState(Txn* txn, int64_t window_ms, uint64_t version, SealState state) {
  const std::string key = codec::SealKey(window_ms, version);
  std::string_view v;
  SNAPSINK_RETURN_IF_ERROR(txn->Get(Table::kSeals, key, &v));
  SealRecord r;
  SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &r));
  r.state = state;
  return txn->Put(Table::kSeals, key, codec::Encode(r));
}

Status SupersedeStagedSeals(Txn* txn, int64_t window_ms, uint64_t keep_version, std::vector<uint64_t>* superseded) {
  std::vector<uint64_t> staged;
  Status st;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kSeals, WindowKey(window_ms), [&](std::string_view k, std::string_view v) {
    SealRecord r;
    st = codec::Decode(v, &r);
    if (!st.ok()) return false;
    int64_t w;
    uint64_t version;
    codec::DecodeSealKey(k, &w, &version);
    if (r.state == SealState::kStaged && version != keep_version) staged.push_back(version);
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(st);
  for (uint64_t version : staged) {
    SNAPSINK_RETURN_IF_ERROR(SetSealState(txn, window_ms, version, SealState::kSuperseded));
    superseded->push_back(version);
  }
  return Status::OK();
}

}  // namespace snapsink
