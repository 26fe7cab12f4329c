// The text forms of include/snapsink/utilities/parse.h: each the engine's own
// parser or formatter, so a program reads and writes them exactly as the
// engine does.
#include "snapsink/utilities/parse.h"

#include "engine/decimal.h"
#include "engine/gap_acceptance.h"
#include "engine/json_escape.h"
#include "engine/timeutil.h"

namespace snapsink::api {

bool ParseDuration(const std::string& text, int64_t* ms) { return snapsink::ParseDuration(text, ms); }
std::string FormatDuration(int64_t ms) { return snapsink::FormatDuration(ms); }
bool ParseTime(const std::string& text, int64_t* ms) { return ParseWindowName(text, ms); }
std::string FormatTime(int64_t ms) { return FormatIso(ms); }
std::string FormatMicros(int64_t micros) { return snapsink::FormatMicros(micros); }

bool ParseSeqRange(const std::string& text, SeqRange* out) {
  Gap g;
  if (!snapsink::ParseSeqRange(text, &g)) return false;
  *out = {g.lo, g.hi - 1};
  return true;
}

Status ParseRollup(const std::string& name, const std::string& text, int64_t window_size_ms, int64_t* rollup_ms) {
  if (text == "all") {
    *rollup_ms = 0;
    return Status::OK();
  }
  int64_t v = 0;
  if (!ParseDuration(text, &v) || v <= 0 || window_size_ms <= 0 || v % window_size_ms != 0) {
    return Status::InvalidArgument(name + " '" + text + "': expected all or a multiple of the window size " +
                                   FormatDuration(window_size_ms) + " (such as 1h or 1d)");
  }
  *rollup_ms = v;
  return Status::OK();
}

Status CheckRange(const std::string& from_name, const std::string& from_text, int64_t from,
                  const std::string& to_name, const std::string& to_text, int64_t to) {
  if (from <= to) return Status::OK();
  return Status::InvalidArgument(from_name + " '" + from_text + "' (window " + FormatIso(from) + ") is after " +
                                 to_name + " '" + to_text + "' (window " + FormatIso(to) + ")");
}

std::string JsonQuote(std::string_view s) { return snapsink::JsonQuote(s); }

}  // namespace snapsink::api
