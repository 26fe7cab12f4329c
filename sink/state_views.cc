// The live-state views of sink/root_views.h: producers, gaps, sources, ids
// and windows, each read in one transaction.
#include <map>

#include "engine/gap_acceptance.h"
#include "engine/gap_spill.h"
#include "engine/long_key.h"
#include "engine/producer_retention.h"
#include "engine/root.h"
#include "engine/source_gap_acceptance.h"
#include "engine/window_records.h"
#include "engine/watermark.h"
#include "sink/root_views.h"

namespace snapsink {
namespace {

// Calls fn(key, decoded value) for every record of table t; stops at the
// first record that does not decode.
template <typename T, typename Fn>
Status ScanDecoded(Txn* txn, Table t, Fn&& fn) {
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(t, "", [&](std::string_view k, std::string_view v) {
    T value;
    decode = codec::Decode(v, &value);
    if (!decode.ok()) return false;
    fn(k, value);
    return true;
  }));
  return decode;
}

std::optional<int64_t> MaxEventTs(Txn* txn, Status* s) {
  auto r = Root::GetMetaU64(txn, meta::kMaxEventTs);
  if (!r.ok()) {
    *s = r.status();
    return std::nullopt;
  }
  if (!*r) return std::nullopt;
  return static_cast<int64_t>(**r);
}

}  // namespace

api::SourceView ToSourceView(const std::string& name, const SourceState& s, const SourceIdCounts& ids) {
  api::SourceView v;
  v.source = name;
  v.offset = s.offset;
  static_cast<api::LineCounts&>(v) = s;
  v.duplicates_id = ids.duplicates_id;
  v.rejected_horizon = ids.rejected_horizon;
  v.rejected_retired = ids.rejected_retired;
  v.position = s.position;
  if (s.progress) {
    v.read = s.progress->read;
    v.end = s.progress->end;
  }
  v.newest_event_ms = s.newest_ts_ms;
  return v;
}

Status ReadIdsInfo(Txn* txn, std::optional<int64_t> max_event_ts, const RootConfig& config, api::IdsInfo* out) {
  *out = api::IdsInfo();
  uint64_t n = 0, bytes = 0;
  SNAPSINK_RETURN_IF_ERROR(txn->Stat(Table::kIds, &out->held, &bytes));
  out->table_bytes = bytes;
  SNAPSINK_RETURN_IF_ERROR(txn->Stat(Table::kIdExpiry, &n, &bytes));
  out->table_bytes += bytes;
  out->horizon_ms = config.id_horizon_ms;
  const int64_t cutoff = IdCutoff(max_event_ts, config.lateness_ms, config.id_horizon_ms);
  if (cutoff != INT64_MIN) out->cutoff = cutoff;
  // Every commit deletes what expired, so the table holds exactly the ids within the horizon.
  return txn->Scan(Table::kIdExpiry, "", [&](std::string_view k, std::string_view) {
    if (k.size() >= 8) out->oldest = codec::DecodeWindowKey(k);
    return false;
  });
}

Status ProducerInfos(Txn* txn, std::vector<api::ProducerInfo>* out) {
  // Active producers with their last-seen times, then the tombstones of
  // retired ones (a tombstone wins over a record of the same id).
  std::map<std::string, api::ProducerInfo> by_id;
  Status life_status;
  SNAPSINK_RETURN_IF_ERROR(ScanDecoded<ProducerState>(txn, Table::kProducers, [&](std::string_view id,
                                                                                  const ProducerState& p) {
    api::ProducerInfo info{std::string(id), p.epoch, p.next_seq, p.gaps.size() + p.spilled, std::nullopt, false};
    by_id.emplace(info.producer, std::move(info));
  }));
  for (auto& [id, info] : by_id) {
    ProducerLife life;
    SNAPSINK_RETURN_IF_ERROR(LoadProducerLife(txn, id, &life));
    info.last_seen = life.last_seen;
  }
  Status decode;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kRetired, "", [&](std::string_view id, std::string_view v) {
    ProducerTombstone t;
    decode = DecodeTombstone(v, &t);
    if (!decode.ok()) return false;
    by_id.insert_or_assign(std::string(id), api::ProducerInfo{std::string(id), t.epoch, 0, 0, t.last_seen, true});
    return true;
  }));
  SNAPSINK_RETURN_IF_ERROR(decode);
  for (auto& [id, info] : by_id) out->push_back(std::move(info));
  return Status::OK();
}

Status GapInfos(Txn* txn, std::vector<api::GapInfo>* out) {
  Status st;
  std::vector<Gap> gaps;
  SNAPSINK_RETURN_IF_ERROR(
      ScanDecoded<ProducerState>(txn, Table::kProducers, [&](std::string_view id, const ProducerState& p) {
        if (!st.ok()) return;
        st = AllOpenGaps(txn, id, p, &gaps);  // with those spilled to their table
        for (const Gap& g : gaps) out->push_back({std::string(id), p.epoch, g.lo, g.hi - 1, g.hi - g.lo});
      }));
  return st;
}

Status AcceptedGapInfos(Txn* txn, std::vector<api::AcceptedGapInfo>* out) {
  std::vector<AcceptedGap> accepted;
  SNAPSINK_RETURN_IF_ERROR(ListAcceptedGaps(txn, &accepted));
  for (const AcceptedGap& g : accepted) {
    api::AcceptedGapInfo info;
    info.gap.producer = g.producer;
    if (!g.any_epoch) info.gap.epoch = g.epoch;
    info.gap.range = {g.range.lo, g.range.hi - 1};
    info.accepted_at_ms = g.accepted_at_ms;
    out->push_back(std::move(info));
  }
  return Status::OK();
}

Status AcceptedSourceGapInfos(Txn* txn, std::vector<api::AcceptedSourceGapInfo>* out) {
  std::vector<AcceptedSourceGap> accepted;
  SNAPSINK_RETURN_IF_ERROR(ListAcceptedSourceGaps(txn, &accepted));
  for (const AcceptedSourceGap& g : accepted) {
    out->push_back(api::AcceptedSourceGapInfo{{g.source, g.lo, g.hi}, g.accepted_at_ms});
  }
  return Status::OK();
}


Status SourceViews(Txn* txn, std::vector<api::SourceView>* out) {
  return ScanSources(txn, [&](const std::string& name, const SourceState& s, const SourceIdCounts& ids) {
    out->push_back(ToSourceView(name, s, ids));
  });
}

Status IdsView(const Root& root, Txn* txn, api::IdsInfo* out) {
  Status s;
  const std::optional<int64_t> max_ts = MaxEventTs(txn, &s);
  SNAPSINK_RETURN_IF_ERROR(s);
  return ReadIdsInfo(txn, max_ts, root.config(), out);
}

Status WindowInfos(const Root& root, Txn* txn, std::vector<api::WindowInfo>* out) {
  // Ledger totals per window, then the window records.
  std::map<int64_t, Aggregate> totals;
  SNAPSINK_RETURN_IF_ERROR(LedgerTotalsByWindow(txn, &totals));
  Status s;
  const std::optional<int64_t> wm = MaxEventTs(txn, &s);
  SNAPSINK_RETURN_IF_ERROR(s);
  const RootConfig& c = root.config();
  return ScanDecoded<WindowState>(txn, Table::kWindows, [&](std::string_view k, const WindowState& w) {
    const int64_t start = codec::DecodeWindowKey(k);
    const Aggregate& t = totals[start];
    out->push_back({start, static_cast<uint64_t>(w.last_version), w.dirty,
                    WindowClosed(start, c.window_ms, wm, c.lateness_ms), t.events, t.count});
  });
}

}  // namespace snapsink
