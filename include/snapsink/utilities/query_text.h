// snapsink public utilities: a query given as text (the values a caller
// holds, or the server's GET /v1/query parameters) into the
// api::QuerySpec a Reader takes. One parser and one window syntax for a
// caller, the HTTP server and an embedder.
//
// A window is named by
//   - its start, in either form: 2026-10-21T10:00:00Z or 20261021T100000Z,
//   - any RFC 3339 time inside it: 2026-10-21T10:30:00.5+02:00,
//   - any integer milliseconds since the Unix epoch inside it: 1792576800000.
// Each names the window holding that instant.
//
// Not part of the core. Standard library and the core headers only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "snapsink/reader.h"
#include "snapsink/status.h"

namespace snapsink::api {

// The accepted forms of a window, for messages and help texts.
extern const char kWindowForms[];

// text as an instant (ms since the epoch) by the forms above. InvalidArgument
// "NAME 'TEXT': expected <kWindowForms>", NAME being what the caller calls
// the value (an option's name, or "window").
Status ParseInstant(const std::string& name, const std::string& text, int64_t* ms);
// text as the start of the window of size window_size_ms (> 0) holding it;
// the same error.
Status ParseWindow(const std::string& name, const std::string& text, int64_t window_size_ms, int64_t* start);

// A query as text, each value as given; nullopt (or "") where not given.
struct QueryText {
  std::optional<std::string> window;
  std::optional<std::string> from, to;  // windows, both inclusive
  std::string metric;                   // "" = every metric
  std::optional<std::string> key;
  std::string metric_prefix, key_prefix;  // "" = every one
  std::optional<std::string> rollup;      // "all" or a duration (see ParseRollup)
  // Quantiles to answer (a quantiles metric's rows): decimals in [0, 1],
  // comma-separated, e.g. "0.5,0.9,0.99".
  std::optional<std::string> quantile;
};

// What each value is called in messages: the parameter names of a request
// by default; a caller passes its own names for them.
struct QueryTextNames {
  std::string window = "window";
  std::string from = "from";
  std::string to = "to";
  std::string rollup = "rollup";
  std::string quantile = "quantile";
};

// text into *spec (replaced whole), checked in this order: window, from,
// to, from after to (CheckRange), rollup (ParseRollup), quantile (each in
// [0, 1], at most 32 of them). window_size_ms is
// the root's (ReadOnlySink::settings()); it is read only when a window,
// from, to or rollup is given. InvalidArgument naming the value (by
// `names`) and its text.
Status ParseQuery(const QueryText& text, int64_t window_size_ms, QuerySpec* spec, const QueryTextNames& names = {});

}  // namespace snapsink::api
