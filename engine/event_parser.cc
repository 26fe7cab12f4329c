#include "engine/event_parser.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include <xxhash.h>

#include "engine/decimal.h"
#include "engine/hyperloglog.h"
#include "engine/timeutil.h"

namespace snapsink {

namespace od = simdjson::ondemand;

namespace {

// Known fields; the bit (1 << id) marks a field as seen.
enum Field : int { kProducer, kEpoch, kSeq, kTs, kMetric, kKey, kValue, kOp, kId, kItem, kNumFields };

constexpr const char* kFieldNames[kNumFields] = {"producer", "epoch", "seq", "ts", "metric",
                                                 "key",      "value", "op",  "id", "item"};
constexpr size_t kMaxItemBytes = 256;

// Unknown fields nested deeper than this are rejected rather than recursed into.
constexpr int kMaxUnknownDepth = 256;
constexpr const char* kTooDeep = "unknown field nested deeper than 256 levels (the depth limit)";  // says kMaxUnknownDepth

// The lines we keep the simdjson parser sized for at least.
constexpr size_t kMinParserCapacity = 4096;

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Known field id for a key given as its raw bytes (after the opening quote,
// up to the closing quote, escapes not processed), or -1.
inline int ClassifyRaw(od::raw_json_string key) {
  const char* k = key.raw();
  switch (k[0]) {
    case 'p': return key.unsafe_is_equal("producer") ? kProducer : -1;
    case 'e': return key.unsafe_is_equal("epoch") ? kEpoch : -1;
    case 's': return key.unsafe_is_equal("seq") ? kSeq : -1;
    case 't': return key.unsafe_is_equal("ts") ? kTs : -1;
    case 'm': return key.unsafe_is_equal("metric") ? kMetric : -1;
    case 'k': return key.unsafe_is_equal("key") ? kKey : -1;
    case 'v': return key.unsafe_is_equal("value") ? kValue : -1;
    case 'o': return key.unsafe_is_equal("op") ? kOp : -1;
    case 'i': return key.unsafe_is_equal("id") ? kId : key.unsafe_is_equal("item") ? kItem : -1;
    default: return -1;
  }
}

int ClassifyUnescaped(std::string_view key) {
  for (int i = 0; i < kNumFields; ++i) {
    if (key == kFieldNames[i]) return i;
  }
  return -1;
}

// True when the raw key contains an escape sequence (stage 1 guarantees a
// closing quote, and an escaped quote is preceded by a backslash).
bool RawKeyHasEscape(od::raw_json_string key) {
  for (const char* p = key.raw();; ++p) {
    if (*p == '"') return false;
    if (*p == '\\') return true;
  }
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsJsonSpace(s.back())) s.remove_suffix(1);
  return s;
}

// RFC 8259 number grammar (simdjson does not check numbers it is not asked
// to convert, and rejects some valid ones such as 1e400).
bool IsJsonNumber(std::string_view s) {
  size_t i = 0;
  auto digit = [&](size_t j) { return j < s.size() && s[j] >= '0' && s[j] <= '9'; };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digit(i)) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == s.size();
}

// Checks that an ignored value is valid JSON, consuming it; *too_deep tells
// a value nested past kMaxUnknownDepth from invalid JSON.
bool ValidateValue(od::value v, int depth, bool* too_deep) {
  if (depth > kMaxUnknownDepth) {
    *too_deep = true;
    return false;
  }
  od::json_type type;
  if (v.type().get(type)) return false;
  switch (type) {
    case od::json_type::object: {
      od::object obj;
      if (v.get_object().get(obj)) return false;
      for (auto field_result : obj) {
        od::field field;
        if (std::move(field_result).get(field)) return false;
        if (RawKeyHasEscape(field.key())) {
          std::string_view unused;
          if (field.unescaped_key().get(unused)) return false;
        }
        if (!ValidateValue(field.value(), depth + 1, too_deep)) return false;
      }
      return true;
    }
    case od::json_type::array: {
      od::array arr;
      if (v.get_array().get(arr)) return false;
      for (auto element_result : arr) {
        od::value element;
        if (std::move(element_result).get(element)) return false;
        if (!ValidateValue(element, depth + 1, too_deep)) return false;
      }
      return true;
    }
    case od::json_type::string: {
      std::string_view unused;
      return !v.get_string().get(unused);
    }
    case od::json_type::number:
      return IsJsonNumber(TrimRight(v.raw_json_token()));
    case od::json_type::boolean: {
      bool unused;
      return !v.get_bool().get(unused);
    }
    case od::json_type::null: {
      bool is_null = false;
      return !v.is_null().get(is_null) && is_null;
    }
  }
  return false;
}

// True when a document that is not an object is still valid JSON (to tell
// "line is not a JSON object" from "invalid JSON"; off the hot path).
// `rest` is the line from its first non-blank character.
bool IsValidNonObjectDocument(od::document& doc, std::string_view rest) {
  od::json_type type;
  if (doc.type().get(type)) return false;
  bool ok = false;
  switch (type) {
    case od::json_type::object:
      return false;
    case od::json_type::array: {
      od::array arr;
      if (doc.get_array().get(arr)) return false;
      ok = true;
      bool deep = false;
      for (auto element_result : arr) {
        od::value element;
        if (std::move(element_result).get(element) || !ValidateValue(element, 1, &deep)) return false;
      }
      break;
    }
    case od::json_type::string: {
      std::string_view unused;
      ok = !doc.get_string().get(unused);
      break;
    }
    case od::json_type::number:
      return IsJsonNumber(TrimRight(rest));  // the token is the whole line
    case od::json_type::boolean: {
      bool unused;
      ok = !doc.get_bool().get(unused);
      break;
    }
    case od::json_type::null: {
      bool is_null = false;
      ok = !doc.is_null().get(is_null) && is_null;
      break;
    }
  }
  return ok && doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

bool Fail(std::string* reason, const char* why) {
  if (reason != nullptr) reason->assign(why);
  return false;
}

bool FieldFail(std::string* reason, int field, const char* why) {
  if (reason != nullptr) {
    reason->assign("field ");
    reason->append(kFieldNames[field]);
    reason->append(": ");
    reason->append(why);
  }
  return false;
}

const char* JsonErrorReason(simdjson::error_code e) {
  switch (e) {
    case simdjson::UTF8_ERROR: return "invalid JSON: invalid UTF-8";
    case simdjson::UNESCAPED_CHARS: return "invalid JSON: unescaped control character in string";
    case simdjson::UNCLOSED_STRING: return "invalid JSON: unclosed string";
    case simdjson::DEPTH_ERROR: return "JSON nested deeper than the parser's depth limit";
    case simdjson::EMPTY: return "empty line";
    default: return "invalid JSON";
  }
}

// A string field whose unescaped length must lie in [min_len, max_len].
bool GetString(od::value& v, int field, size_t min_len, size_t max_len, std::string_view* out,
               std::string* reason) {
  std::string_view s;
  const simdjson::error_code e = v.get_string().get(s);
  if (e == simdjson::INCORRECT_TYPE) return FieldFail(reason, field, "expected string");
  if (e) return FieldFail(reason, field, "invalid UTF-8 or escape");
  if (s.size() < min_len || s.size() > max_len) {
    if (reason != nullptr) {
      *reason = std::string("field ") + kFieldNames[field] + ": length " +
                std::to_string(s.size()) + " not in " + std::to_string(min_len) + ".." +
                std::to_string(max_len);
    }
    return false;
  }
  *out = s;
  return true;
}

// One helper per known field: each converts the field's value into *out or
// sets *reason (naming the field) and returns false.

bool ParseProducer(od::value& v, Event* out, std::string* reason) {
  return GetString(v, kProducer, 1, 128, &out->producer, reason);
}

bool ParseMetric(od::value& v, Event* out, std::string* reason) {
  return GetString(v, kMetric, 1, 128, &out->metric, reason);
}

bool ParseKey(od::value& v, Event* out, std::string* reason) {
  return GetString(v, kKey, 0, 256, &out->key, reason);
}

bool ParseEpoch(od::value& v, Event* out, std::string* reason) {
  uint64_t n;
  if (v.get_uint64().get(n) || n > std::numeric_limits<uint32_t>::max()) {
    return FieldFail(reason, kEpoch, "expected integer 0..2^32-1");
  }
  out->epoch = static_cast<uint32_t>(n);
  return true;
}

bool ParseSeq(od::value& v, Event* out, std::string* reason) {
  uint64_t n;
  if (v.get_uint64().get(n) || n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return FieldFail(reason, kSeq, "expected integer 0..2^63-1");
  }
  out->seq = n;
  return true;
}

// An RFC 3339 string or integer milliseconds, within years 0000..9999.
bool ParseTs(od::value& v, Event* out, std::string* reason) {
  od::json_type type;
  if (v.type().get(type)) return Fail(reason, "invalid JSON");
  int64_t ms;
  if (type == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return FieldFail(reason, kTs, "invalid UTF-8 or escape");
    if (!ParseRfc3339Ms(s, &ms)) return FieldFail(reason, kTs, "invalid RFC 3339 time");
  } else if (type == od::json_type::number) {
    if (v.get_int64().get(ms)) {
      return FieldFail(reason, kTs, "expected RFC 3339 string or integer milliseconds");
    }
  } else {
    return FieldFail(reason, kTs, "expected RFC 3339 string or integer milliseconds");
  }
  if (ms < kMinTimestampMs || ms > kMaxTimestampMs) {
    return FieldFail(reason, kTs, "out of range (years 0000..9999)");
  }
  out->ts_ms = ms;
  return true;
}

// A JSON number taken exactly as decimal micro-units (engine/decimal.h).
bool ParseValue(od::value& v, Event* out, std::string* reason) {
  od::json_type type;
  if (v.type().get(type)) return Fail(reason, "invalid JSON");
  if (type != od::json_type::number) return FieldFail(reason, kValue, "expected number");
  const char* why = nullptr;
  if (!ParseDecimalMicros(TrimRight(v.raw_json_token()), &out->value_micros, &why)) {
    return FieldFail(reason, kValue, why);
  }
  return true;
}

bool ParseOp(od::value& v, Event* out, std::string* reason) {
  std::string_view op;
  const simdjson::error_code se = v.get_string().get(op);
  if (se && se != simdjson::INCORRECT_TYPE) return FieldFail(reason, kOp, "invalid UTF-8 or escape");
  if (se || (op != "add" && op != "retract")) {
    return FieldFail(reason, kOp, "expected \"add\" or \"retract\"");
  }
  out->retract = op == "retract";
  return true;
}

// Not yet known whether seq follows: a well-formed id goes to out->id, a bad
// one (wrong type or length) to *id_error, which is an error only for an
// event without seq. Invalid JSON fails at once.
bool ParseId(od::value& v, Event* out, std::string* id_error, std::string* reason) {
  od::json_type type;
  if (v.type().get(type)) return Fail(reason, "invalid JSON");
  if (type != od::json_type::string) {
    bool too_deep = false;
    if (!ValidateValue(v, 1, &too_deep)) return Fail(reason, too_deep ? kTooDeep : "invalid JSON");
    *id_error = "field id: expected string";
  } else if (!GetString(v, kId, 1, 128, &out->id, id_error)) {
    if (id_error->find("length") == std::string::npos) return Fail(reason, "invalid JSON");
  }
  return true;
}

// Not yet known whether the metric is distinct: the item's hash and what is
// wrong with it go to *out (an error only for a distinct metric). Invalid
// JSON fails at once, as for an unknown field.
bool ParseItem(od::value& v, Event* out, std::string* reason) {
  od::json_type type;
  if (v.type().get(type)) return Fail(reason, "invalid JSON");
  if (type != od::json_type::string) {
    bool too_deep = false;
    if (!ValidateValue(v, 1, &too_deep)) return Fail(reason, too_deep ? kTooDeep : "invalid JSON");
    out->item = ItemField::kNotString;
    return true;
  }
  std::string_view s;
  if (v.get_string().get(s)) return Fail(reason, "invalid JSON");
  out->item_length = static_cast<uint32_t>(s.size());
  if (s.empty() || s.size() > kMaxItemBytes) {
    out->item = ItemField::kBadLength;
    return true;
  }
  out->item = ItemField::kOk;
  out->item_hash = HyperLogLog::Hash(s);
  return true;
}

// An unknown field's value is skipped, but must be valid JSON.
bool SkipUnknown(od::value& v, std::string* reason) {
  bool too_deep = false;
  if (!ValidateValue(v, 1, &too_deep)) return Fail(reason, too_deep ? kTooDeep : "invalid JSON");
  return true;
}

// The field's id: a known field matched on its raw bytes, or after
// unescaping when the key has an escape; -1 for an unknown one. Returns
// false on a bad escape.
bool ClassifyKey(od::field& field, int* id, std::string* reason) {
  *id = ClassifyRaw(field.key());
  if (*id < 0 && RawKeyHasEscape(field.key())) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return Fail(reason, "invalid JSON: bad escape in key");
    *id = ClassifyUnescaped(key);
  }
  return true;
}

bool ParseKnownField(int id, od::value& v, Event* out, std::string* id_error, std::string* reason) {
  switch (id) {
    case kProducer: return ParseProducer(v, out, reason);
    case kEpoch: return ParseEpoch(v, out, reason);
    case kSeq: return ParseSeq(v, out, reason);
    case kTs: return ParseTs(v, out, reason);
    case kMetric: return ParseMetric(v, out, reason);
    case kKey: return ParseKey(v, out, reason);
    case kValue: return ParseValue(v, out, reason);
    case kOp: return ParseOp(v, out, reason);
    case kId: return ParseId(v, out, id_error, reason);
    case kItem: return ParseItem(v, out, reason);
  }
  return true;
}

// After every field: seq decides the path, and with it the required fields
// (SPEC 1). `seen` has bit (1 << id) for each field present.
bool CheckRequired(unsigned seen, bool content_ids, const std::string& id_error, Event* out,
                   std::string* reason) {
  out->has_seq = (seen & (1u << kSeq)) != 0;
  const bool has_id = (seen & (1u << kId)) != 0;
  if (out->has_seq) {
    out->id = {};
  } else if (has_id && !id_error.empty()) {
    if (reason != nullptr) *reason = id_error;
    return false;
  }
  // Without seq (deduplicated by id, given or derived) producer and seq may be absent.
  const bool by_id = !out->has_seq && (has_id || content_ids);
  static constexpr int kRequired[] = {kProducer, kSeq, kTs, kMetric};
  for (int id : kRequired) {
    if (by_id && (id == kProducer || id == kSeq)) continue;
    if (!(seen & (1u << id))) {
      if (reason != nullptr) *reason = std::string("missing field ") + kFieldNames[id];
      return false;
    }
  }
  return true;
}

}  // namespace

std::string ItemReason(const Event& ev) {
  switch (ev.item) {
    case ItemField::kOk:
      return std::string();
    case ItemField::kAbsent:
      return "missing field item (a distinct metric counts the distinct items of its events)";
    case ItemField::kNotString:
      return "field item: expected string";
    case ItemField::kBadLength:
      return "field item: length " + std::to_string(ev.item_length) + " not in 1.." + std::to_string(kMaxItemBytes);
    case ItemField::kDuplicate:
      return "duplicate field item";
  }
  return "field item: unknown state";
}

uint64_t ProducerHash(std::string_view producer) { return XXH3_64bits(producer.data(), producer.size()); }

bool EventParser::PrepareBuffer(const char** data, size_t len, size_t* capacity, std::string* reason) {
  if (*capacity < len + simdjson::SIMDJSON_PADDING) {
    strbuf_.assign(*data, len);
    strbuf_.resize(len + simdjson::SIMDJSON_PADDING);
    *data = strbuf_.data();
    *capacity = strbuf_.size();
  }
  if (len > parser_.capacity()) {
    // Grow geometrically so slowly lengthening lines do not reallocate each time.
    size_t want = parser_.capacity() * 2;
    if (want < kMinParserCapacity) want = kMinParserCapacity;
    if (want < len) want = len;
    if (parser_.allocate(want, parser_.max_depth())) {
      return Fail(reason, "invalid JSON: line too long to parse");
    }
  }
  return true;
}

bool EventParser::Parse(const char* data, size_t len, size_t capacity, Event* ev,
                        std::string* reason) {
  if (len > 0 && data[len - 1] == '\r') --len;

  // Blank lines, and the first character to tell "not an object" from junk.
  size_t first = 0;
  while (first < len && IsJsonSpace(data[first])) ++first;
  if (first == len) return Fail(reason, "empty line");

  if (!PrepareBuffer(&data, len, &capacity, reason)) return false;

  od::document doc;
  simdjson::error_code e = parser_.iterate(data, len, capacity).get(doc);
  if (e) return Fail(reason, JsonErrorReason(e));

  od::object obj;
  e = doc.get_object().get(obj);
  if (e) {
    if (data[first] != '{' && e == simdjson::INCORRECT_TYPE &&
        IsValidNonObjectDocument(doc, std::string_view(data + first, len - first))) {
      return Fail(reason, "line is not a JSON object");
    }
    return Fail(reason, JsonErrorReason(e));
  }

  Event out;
  unsigned seen = 0;
  std::string id_error;  // only an error when the event has no seq
  for (auto field_result : obj) {
    od::field field;
    if (std::move(field_result).get(field)) return Fail(reason, "invalid JSON");
    int id;
    if (!ClassifyKey(field, &id, reason)) return false;
    od::value& v = field.value();
    if (id < 0) {
      if (!SkipUnknown(v, reason)) return false;
      continue;
    }
    if (id == kItem && (seen & (1u << id))) {
      // Ignored but for a distinct metric, as any unknown field was.
      if (!SkipUnknown(v, reason)) return false;
      out.item = ItemField::kDuplicate;
      continue;
    }
    if (seen & (1u << id)) {
      if (reason != nullptr) *reason = std::string("duplicate field ") + kFieldNames[id];
      return false;
    }
    seen |= 1u << id;
    if (!ParseKnownField(id, v, &out, &id_error, reason)) return false;
  }

  // Trailing content such as the second object of "{}{}" (simdjson already
  // refuses "{} x" when the object is opened).
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return Fail(reason, "invalid JSON: trailing content after the object");
  }
  if (!CheckRequired(seen, content_ids_, id_error, &out, reason)) return false;
  *ev = out;
  return true;
}

}  // namespace snapsink
