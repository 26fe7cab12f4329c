#include "tools/window_arg.h"

#include <charconv>

#include "snapsink/utilities/parse.h"
#include "snapsink/views.h"
#include "utilities/status_macros.h"

namespace snapsink {

const char kWindowForms[] =
    "a window start (2026-10-21T10:00:00Z or 20261021T100000Z), an RFC 3339 time inside the window "
    "(2026-10-21T10:30:00+02:00) or integer milliseconds since the Unix epoch";

Status ParseInstantArg(const std::string& option, const std::string& text, int64_t* ms) {
  const char* end = text.data() + text.size();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), end, v);
  bool ok = !text.empty() && ec == std::errc() && p == end;
  if (!ok) ok = api::ParseTime(text, &v);
  if (!ok || v < api::kMinTimeMs || v > api::kMaxTimeMs) {
    return Status::InvalidArgument(option + " '" + text + "': expected " + kWindowForms);
  }
  *ms = v;
  return Status::OK();
}

Status ParseWindowArg(const std::string& option, const std::string& text, int64_t window_size_ms, int64_t* start) {
  int64_t ms;
  SNAPSINK_RETURN_IF_ERROR(ParseInstantArg(option, text, &ms));
  *start = api::WindowStart(ms, window_size_ms);
  return Status::OK();
}

}  // namespace snapsink
