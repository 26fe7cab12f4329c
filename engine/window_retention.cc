#include "engine/window_retention.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "engine/crash_point.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "engine/watermark.h"
#include "engine/window_records.h"

namespace snapsink {

std::optional<int64_t> OldestKeptWindow(const RootConfig& config, std::optional<int64_t> max_event_ts,
                                        std::optional<int64_t> retained_from) {
  std::optional<int64_t> oldest = retained_from;
  if (config.retain_ms <= 0 || !max_event_ts) return oldest;
  // Kept: watermark - (start + window) <= retain, i.e. start >= watermark - retain - window.
  const int64_t watermark = Watermark(*max_event_ts, config.lateness_ms);
  int64_t bound;
  if (__builtin_sub_overflow(watermark, config.retain_ms, &bound) ||
      __builtin_sub_overflow(bound, config.window_ms, &bound) || bound <= kMinTimestampMs) {
    return oldest;  // before any window that can exist: nothing is beyond
  }
  // The first window start at or after bound.
  int64_t start = WindowStart(bound, config.window_ms);
  if (start < bound) start += config.window_ms;
  return oldest ? std::max(*oldest, start) : start;
}

Result<std::optional<int64_t>> RetainedFrom(Txn* txn) {
  SNAPSINK_ASSIGN_OR_RETURN(auto floor, Root::GetMetaU64(txn, meta::kRetainedFrom));
  if (!floor) return std::optional<int64_t>();
  return std::optional<int64_t>(static_cast<int64_t>(*floor));
}

Result<std::optional<int64_t>> OldestKeptWindow(Txn* txn, const RootConfig& config) {
  SNAPSINK_ASSIGN_OR_RETURN(auto max_ts, Root::GetMetaU64(txn, meta::kMaxEventTs));
  SNAPSINK_ASSIGN_OR_RETURN(auto floor, RetainedFrom(txn));
  std::optional<int64_t> newest;
  if (max_ts) newest = static_cast<int64_t>(*max_ts);
  return OldestKeptWindow(config, newest, floor);
}

namespace {

// Window starts before oldest_kept that hold any record in the per-window
// tables, ascending. Every such table's keys begin with the window key, in
// time order, so each scan stops at the first kept window.
Status WindowsBefore(Txn* txn, int64_t oldest_kept, std::vector<int64_t>* out) {
  for (Table t : {Table::kWindows, Table::kSeals, Table::kLedger, Table::kAggs}) {
    int64_t last = 0;
    bool any = false;
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(t, "", [&](std::string_view k, std::string_view) {
      if (k.size() < 8) return true;
      const int64_t w = codec::DecodeWindowKey(k);
      if (w >= oldest_kept) return false;
      if (!any || w != last) out->push_back(w);
      any = true;
      last = w;
      return true;
    }));
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return Status::OK();
}

}  // namespace

Result<bool> HasWindowsBefore(Txn* txn, int64_t oldest_kept) {
  bool found = false;
  for (Table t : {Table::kWindows, Table::kSeals, Table::kLedger, Table::kAggs}) {
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(t, "", [&](std::string_view k, std::string_view) {
      found = k.size() >= 8 && codec::DecodeWindowKey(k) < oldest_kept;
      return false;  // the first record is the oldest
    }));
    if (found) return true;
  }
  return false;
}

Status DropWindowsBefore(Txn* txn, int64_t oldest_kept, std::vector<int64_t>* dropped) {
  std::vector<int64_t> windows;
  SNAPSINK_RETURN_IF_ERROR(WindowsBefore(txn, oldest_kept, &windows));
  for (int64_t w : windows) SNAPSINK_RETURN_IF_ERROR(DeleteWindowState(txn, w));
  SNAPSINK_ASSIGN_OR_RETURN(auto floor, RetainedFrom(txn));
  if (!floor || *floor < oldest_kept) {
    SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn, meta::kRetainedFrom, static_cast<uint64_t>(oldest_kept)));
  }
  dropped->insert(dropped->end(), windows.begin(), windows.end());
  MaybeCrash("publish.retention_delete");
  return Status::OK();
}

}  // namespace snapsink
