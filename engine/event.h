// One input event (SPEC 1), as parsed from an NDJSON line.
//
// The string fields are views into storage owned by the EventParser that
// produced the event and stay valid only until that parser's next Parse();
// copy them to keep them longer (engine/parse_ahead.cc copies each one: a
// new string field must be added there too).
#pragma once

#include <cstdint>
#include <string_view>

namespace snapsink {

// The optional `item` field (docs/EVENTS.md), read only for a distinct
// metric's event: absent, well formed, or why not (an error only there).
enum class ItemField : uint8_t { kAbsent, kOk, kNotString, kBadLength, kDuplicate };

struct Event {
  std::string_view producer;        // 1..128 bytes of UTF-8; "" when absent (allowed without seq)
  uint32_t epoch = 0;               // absent: 0
  uint64_t seq = 0;                 // 0..2^63-1
  bool has_seq = true;              // false: deduplicated by id (engine/id_dedup.h)
  std::string_view id;              // 1..128 bytes, only when !has_seq; "" when absent
  int64_t ts_ms = 0;                // ms since the Unix epoch, UTC; within
                                    // [kMinTimestampMs, kMaxTimestampMs]
  std::string_view metric;          // 1..128 bytes
  std::string_view key;             // 0..256 bytes; absent: ""
  int64_t value_micros = 1000000;   // value in millionths (engine/decimal.h); absent: 1
  bool retract = false;             // op "retract" (absent or "add": false)
  ItemField item = ItemField::kAbsent;
  uint32_t item_length = 0;         // the item's length in bytes (unescaped), when a string
  uint64_t item_hash = 0;           // HyperLogLog::Hash of the item (1..256 bytes), when kOk
};

}  // namespace snapsink
