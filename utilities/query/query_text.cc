// include/snapsink/utilities/query_text.h: query text into a QuerySpec, on
// the public API only.
#include "snapsink/utilities/query_text.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

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

namespace {

// "0.5,0.9,0.99": each a decimal in [0, 1] (digits, at most one point).
Status ParseQuantiles(const std::string& name, const std::string& text, std::vector<double>* out) {
  constexpr size_t kMaxQuantiles = 32;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string one = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const bool digits = !one.empty() && one.find_first_not_of("0123456789.") == std::string::npos &&
                        std::count(one.begin(), one.end(), '.') <= 1 && one != ".";
    const double q = digits ? std::strtod(one.c_str(), nullptr) : -1;
    if (!(q >= 0 && q <= 1)) {
      return Status::InvalidArgument(name + " '" + text + "': expected quantiles between 0 and 1, comma-separated " +
                                     "(e.g. 0.5,0.9,0.99), got '" + one + "'");
    }
    out->push_back(q);
    if (out->size() > kMaxQuantiles) {
      return Status::InvalidArgument(name + " '" + text + "': at most " + std::to_string(kMaxQuantiles) +
                                     " quantiles");
    }
    if (comma == std::string::npos) return Status::OK();
    at = comma + 1;
  }
}

}  // namespace

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
  if (text.quantile) SNAPSINK_RETURN_IF_ERROR(ParseQuantiles(names.quantile, *text.quantile, &spec->quantiles));
  spec->metric = text.metric;
  spec->key = text.key;
  spec->metric_prefix = text.metric_prefix;
  spec->key_prefix = text.key_prefix;
  return Status::OK();
}

}  // namespace snapsink::api
