// The per-window impact table of backfill (and its --dry-run).
#include "engine/decimal.h"
#include "engine/timeutil.h"
#include "publish/backfill.h"
#include "tools/table.h"

namespace snapsink {

void PrintImpact(const std::vector<WindowImpact>& impact) {
  std::vector<Record> records;
  for (const WindowImpact& i : impact) {
    Record r;
    r.Str("window", FormatIso(i.window_ms));
    r.Num("current_events", std::to_string(i.current.events));
    r.Num("current_count", std::to_string(i.current.count));
    r.Num("current_sum", FormatMicros(i.current.sum_micros));
    r.Num("new_events", std::to_string(i.after.events));
    r.Num("new_count", std::to_string(i.after.count));
    r.Num("new_sum", FormatMicros(i.after.sum_micros));
    records.push_back(std::move(r));
  }
  PrintRecords(records,
               {"window", "current_events", "current_count", "current_sum", "new_events", "new_count", "new_sum"},
               OutputFormat::kTable);
}

}  // namespace snapsink
