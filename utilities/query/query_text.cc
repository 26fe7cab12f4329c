// include/snapsink/utilities/query_text.h: query text into a QuerySpec, on
// the public API only.
#include "snapsink/utilities/query_text.h"

#include <charconv>

#include "snapsink/utilities/parse.h"
#include "snapsink/views.h"
#include "utilities/status_macros.h"

namespace snapsink::api {

const char kWindowForms[] =
    "a window start (2026-10-21T10:00:00Z or 20261021T100000Z), an RFC 3339 time inside the window "
    "(2026-10-21T10:30:00+02:00) or integer milliseconds since the Unix epoch";

Status ParseInstant(const std::string& name, const std::string& text, int64_t* ms) {
  const char* end = text.data() + text.size();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), end, v);
  bool ok = !text.empty() && ec == std::errc() && p == end;
  if (!ok) ok = ParseTime(text, &v);
  if (!ok || v < kMinTimeMs || v > kMaxTimeMs) {
    return Status::InvalidArgument(name + " '" + text + "': expected " + kWindowForms);
  }
  *ms = v;
  return Status::OK();
}

Status ParseWindow(const std::string& name, const std::string& text, int64_t window_size_ms, int64_t* start) {
  int64_t ms = 0;
  SNAPSINK_RETURN_IF_ERROR(ParseInstant(name, text, &ms));
  if (window_size_ms <= 0) {
    return Status::InvalidArgument(name + " '" + text + "': no window size to find its window in (got " +
                                   std::to_string(window_size_ms) + " ms)");
  }
  *start = WindowStart(ms, window_size_ms);
  return Status::OK();
}

Status ParseQuery(const QueryText& text, int64_t window_size_ms, QuerySpec* spec, const QueryTextNames& names) {
  *spec = QuerySpec();
  int64_t ms = 0;
  if (text.window) {
    SNAPSINK_RETURN_IF_ERROR(ParseWindow(names.window, *text.window, window_size_ms, &ms));
    spec->window = ms;
  }
  if (text.from) {
    SNAPSINK_RETURN_IF_ERROR(ParseWindow(names.from, *text.from, window_size_ms, &ms));
    spec->from = ms;
  }
  if (text.to) {
    SNAPSINK_RETURN_IF_ERROR(ParseWindow(names.to, *text.to, window_size_ms, &ms));
    spec->to = ms;
  }
  if (spec->from && spec->to) {
    SNAPSINK_RETURN_IF_ERROR(CheckRange(names.from, *text.from, *spec->from, names.to, *text.to, *spec->to));
  }
  if (text.rollup) {
    SNAPSINK_RETURN_IF_ERROR(ParseRollup(names.rollup, *text.rollup, window_size_ms, &ms));
    spec->rollup_ms = ms;
  }
  spec->metric = text.metric;
  spec->key = text.key;
  spec->metric_prefix = text.metric_prefix;
  spec->key_prefix = text.key_prefix;
  return Status::OK();
}

}  // namespace snapsink::api
