// EventParser: one NDJSON line -> Event (SPEC 1, 7). The hot path of ingest.
//
// Built on simdjson On-Demand: the object's fields are walked once, known
// fields are matched on their raw key bytes and converted in place, unknown
// fields are skipped but still validated (the line must be valid JSON). No
// heap allocation per line once the parser has seen its longest line.
//
// A line is rejected, with a short reason, when it is not valid JSON ("invalid
// JSON..."), is empty or blank ("empty line"), is not an object ("line is not a
// JSON object"), repeats a known field ("duplicate field seq"), lacks a
// required one ("missing field seq"), or a field has the wrong type or is out
// of range ("field <name>: ..."). Reasons of field errors always name the field.
//
// Which fields are required: an event with `seq` takes the sequence path and
// needs `producer`; its `id`, if any, is not looked at (seq rules, so senders
// that always had an `id` field see no change). An event without `seq` but
// with `id` (string, 1..128 bytes) is deduplicated by id and may omit
// `producer`. With SetContentIds(true) an event may lack both; its id is
// then derived from its content by ingest. `ts` and `metric` are always
// required. `item` is checked only as JSON here; whether it is well formed
// (a string of 1..256 bytes, given once) is kept in Event::item, and is an
// error only for the event of a distinct metric (ItemReason), which ingest
// knows once it has the metric's kind: for other kinds it is ignored.
//
// Not thread-safe; use one parser per thread.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/event.h"

namespace snapsink {

// The hash ingest finds a producer by (XXH3-64 of its id); ParseAhead takes
// it on its own thread.
uint64_t ProducerHash(std::string_view producer);

// Why an event of a distinct metric cannot be applied for its item field
// ("missing field item", "field item: expected string", ...); "" when the
// item is well formed.
std::string ItemReason(const Event& ev);

// Bytes that must be readable past the end of a line handed to Parse().
constexpr size_t kEventPadding = simdjson::SIMDJSON_PADDING;

class EventParser {
 public:
  EventParser() = default;
  EventParser(const EventParser&) = delete;
  EventParser& operator=(const EventParser&) = delete;

  // Parses one line. data[0..len) is the line without its '\n'; one trailing
  // '\r' is stripped here. `capacity` is how many bytes starting at data are
  // readable; it should be >= len + kEventPadding so the line is parsed where
  // it lies (inside a bigger block buffer; the bytes past len may hold
  // anything). With less, the line is first copied to an internal buffer.
  // Returns true and fills every field of *ev (defaults for absent ones), or
  // false and sets *reason (if not null); *ev is then unspecified.
  // The views in *ev stay valid until the next call of Parse().
  bool Parse(const char* data, size_t len, size_t capacity, Event* ev, std::string* reason);

  // Accept events with neither seq nor id (ingest --id-from-content).
  void SetContentIds(bool on) { content_ids_ = on; }

 private:
  // Points *data at a padded copy when *capacity leaves less than
  // kEventPadding past the line, and sizes the parser for len.
  bool PrepareBuffer(const char** data, size_t len, size_t* capacity, std::string* reason);

  bool content_ids_ = false;
  simdjson::ondemand::parser parser_;
  std::string strbuf_;  // padded copy of a line given without enough padding
};

}  // namespace snapsink
