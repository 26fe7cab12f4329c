// The one window syntax of the tool (query --window, seal --window,
// backfill --from/--to): a window is named by
//   - its start, in either form: 2026-10-21T10:00:00Z or 20261021T100000Z,
//   - any RFC 3339 time inside it: 2026-10-21T10:30:00.5+02:00,
//   - any integer milliseconds since the Unix epoch inside it: 1792576800000.
// Each names the window holding that instant.
#pragma once

#include <cstdint>
#include <string>

#include "snapsink/status.h"

namespace snapsink {

// The accepted forms, for error messages and --help.
extern const char kWindowForms[];

// Parses text, given to option (e.g. "--window"), into the start of the
// window of size window_size_ms holding it. InvalidArgument names the option, the
// text and the accepted forms.
Status ParseWindowArg(const std::string& option, const std::string& text, int64_t window_size_ms, int64_t* start);

// Parses text into an instant (ms since the epoch) by the forms above,
// without a window size. Same error as ParseWindowArg.
Status ParseInstantArg(const std::string& option, const std::string& text, int64_t* ms);

}  // namespace snapsink
