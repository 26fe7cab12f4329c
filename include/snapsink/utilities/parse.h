// snapsink public utilities: the text forms of durations, times, sums,
// sequence ranges and roll-ups, both ways, as snapsink reads and writes
// them everywhere (window names, query parameters, printed tables).
//
// Not part of the core: a program that only writes and reads a root needs
// none of it. Standard library and the core headers only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "snapsink/status.h"
#include "snapsink/views.h"

namespace snapsink::api {

// "1h", "15m", "30s", "1d", "250ms" <-> milliseconds. false for anything else.
bool ParseDuration(const std::string& text, int64_t* ms);
std::string FormatDuration(int64_t ms);
// A window name or time, "2026-10-21T10:00:00Z" or "20261021T100000Z" <-> ms.
bool ParseTime(const std::string& text, int64_t* ms);
std::string FormatTime(int64_t ms);
// Fixed-point micros as a decimal ("1.5", "-0.000001").
std::string FormatMicros(int64_t micros);

// "LO..HI" (LO <= HI < 2^64-1) or "N". false for anything else.
bool ParseSeqRange(const std::string& text, SeqRange* out);

// A roll-up size given as text: "all" (0), or a duration (1h, 1d ...) that
// is a positive multiple of window_size_ms. InvalidArgument names `name` (what
// the caller calls the value) and text.
Status ParseRollup(const std::string& name, const std::string& text, int64_t window_size_ms, int64_t* rollup_ms);
// InvalidArgument naming both values and texts when window `from` is after
// window `to`; OK otherwise.
Status CheckRange(const std::string& from_name, const std::string& from_text, int64_t from,
                  const std::string& to_name, const std::string& to_text, int64_t to);

// s as a JSON string, quotes included: '"' and '\\' escaped, control bytes
// as \u00xx, bytes that are not valid UTF-8 as \ufffd. Every JSON snapsink
// writes quotes its strings so.
std::string JsonQuote(std::string_view s);

}  // namespace snapsink::api
