#include "publish/backfill_impact.h"

#include <string>
#include <unordered_map>

#include "engine/decimal.h"
#include "engine/event_parser.h"
#include "engine/line_reader.h"
#include "engine/sequencer.h"
#include "engine/timeutil.h"
#include "engine/window_records.h"

namespace snapsink {

Status WindowTotals(Store* store, const std::set<int64_t>& windows, std::map<int64_t, Aggregate>* out) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(store->BeginRead(&txn));
  for (int64_t w : windows) {
    std::string prefix;
    codec::AppendWindowKey(&prefix, w);
    Aggregate& t = (*out)[w];
    Status decode;
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kLedger, prefix, [&](std::string_view, std::string_view v) {
      Aggregate a;
      decode = codec::Decode(v, &a);
      if (!decode.ok()) return false;
      t.count = WrappingAdd(t.count, a.count);
      t.events = WrappingAdd(t.events, a.events);
      t.sum_micros = WrappingAdd(t.sum_micros, a.sum_micros);
      return true;
    }));
    SNAPSINK_RETURN_IF_ERROR(decode);
  }
  return Status::OK();
}

Status CompareTotals(Store* live, Store* backfill, const std::set<int64_t>& windows, std::vector<WindowImpact>* out) {
  std::map<int64_t, Aggregate> before, after;
  SNAPSINK_RETURN_IF_ERROR(WindowTotals(live, windows, &before));
  SNAPSINK_RETURN_IF_ERROR(WindowTotals(backfill, windows, &after));
  for (int64_t w : windows) out->push_back(WindowImpact{w, before[w], after[w]});
  return Status::OK();
}

Status PlanBackfill(Root* root, const BackfillOptions& o, bool* already_done, std::vector<WindowImpact>* out) {
  *already_done = false;
  out->clear();
  {
    std::unique_ptr<Txn> txn;
    SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
    std::string_view v;
    Status s = txn->Get(Table::kMeta, meta::BackfillDoneKey(o.version), &v);
    if (s.ok()) {
      *already_done = true;
      return Status::OK();
    }
    if (!s.IsNotFound()) return s;
  }
  const int64_t window_ms = root->config().window_ms;
  const int64_t first = o.from ? WindowStart(*o.from, window_ms) : INT64_MIN;
  const int64_t last = o.to ? WindowStart(*o.to, window_ms) : INT64_MAX;
  if (first > last) return Status::InvalidArgument("BackfillOptions::from is after BackfillOptions::to");

  std::unordered_map<std::string, ProducerState> producers;
  std::map<int64_t, Aggregate> after;
  EventParser parser;
  Event ev;
  std::string reason;
  for (const std::string& f : o.files) {
    std::unique_ptr<LineReader> reader;
    SNAPSINK_RETURN_IF_ERROR(LineReader::Open(f, &reader));
    Line line;
    while (reader->Next(&line)) {
      if (line.overlong || !parser.Parse(line.data, line.size, line.capacity, &ev, &reason)) continue;
      ProducerState& p = producers[std::string(ev.producer)];
      const SeqDecision d = Decide(p, ev.epoch, ev.seq, /*stop_on_gap=*/false);
      // In memory the gaps need no bound: the backfill itself spills those
      // beyond kMaxOpenGaps (engine/gap_spill.h) and applies the event.
      if (d.outcome != SeqOutcome::kApply && d.outcome != SeqOutcome::kGapLimit) continue;
      Accept(&p, ev.epoch, ev.seq);
      const int64_t w = WindowStart(ev.ts_ms, window_ms);
      if (w < first || w > last) continue;
      Aggregate& a = after[w];
      a.events += 1;
      a.count += ev.retract ? -1 : 1;
      int64_t sum;
      if (AddMicros(a.sum_micros, ev.retract ? -ev.value_micros : ev.value_micros, &sum)) a.sum_micros = sum;
    }
    SNAPSINK_RETURN_IF_ERROR(reader->status());
  }

  std::set<int64_t> windows;
  for (const auto& [w, a] : after) windows.insert(w);
  std::map<int64_t, Aggregate> before;
  SNAPSINK_RETURN_IF_ERROR(WindowTotals(root->store(), windows, &before));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&txn));
  for (int64_t w : windows) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    if (ws.last_version >= o.version) {
      return Status::InvalidArgument("BackfillOptions::version " + std::to_string(o.version) +
                                     " must exceed the versions of its windows: window " + FormatIso(w) +
                                     " is already at v" + std::to_string(ws.last_version));
    }
    out->push_back(WindowImpact{w, before[w], after[w]});
  }
  return Status::OK();
}

}  // namespace snapsink
