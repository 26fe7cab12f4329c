#include "engine/watermark.h"

#include <algorithm>

#include "engine/coding.h"

using snapsink::coding::DecodeFixed64;
using snapsink::coding::GetVarint64;
using snapsink::coding::PutFixed64;
using snapsink::coding::PutVarint64;

namespace snapsink {
namespace {

// kWatermarkHold: u8 version (1), u8 flags, [fixed64 held time, varint
// length, held producer], [varint length, lone producer].
constexpr uint8_t kHoldVersion = 1;
constexpr uint8_t kMany = 1;  // do not change these values: they are on disk
constexpr uint8_t kHeld = 2;
constexpr uint8_t kOthersSinceHold = 4;

// True when ts lies at most reach after base.
bool WithinReach(int64_t base, int64_t ts, int64_t reach) {
  return static_cast<__int128>(ts) - base <= reach;
}

// The confirmed time came within reach of the held one: it confirms too.
void Absorb(WatermarkState* s, int64_t reach) {
  if (!s->held) return;
  if (*s->held <= *s->confirmed) {
    s->held.reset();
    s->others_since_hold = false;
  } else if (WithinReach(*s->confirmed, *s->held, reach)) {
    s->confirmed = s->held;
    s->held.reset();
    s->others_since_hold = false;
  } else {
    return;
  }
  s->held_producer.clear();
}

bool GetString(const char** p, const char* end, std::string* out) {
  uint64_t n;
  if (!GetVarint64(p, end, &n) || n > static_cast<uint64_t>(end - *p)) return false;
  out->assign(*p, n);
  *p += n;
  return true;
}

}  // namespace

int64_t WatermarkReach(const RootConfig& config) {
  return std::max<int64_t>({config.lateness_ms, config.window_ms, 1});
}

bool ObserveEvent(WatermarkState* s, std::string_view producer, int64_t ts, int64_t reach) {
  if (!s->confirmed) {  // the first event of the root: nothing to be ahead of
    s->confirmed = ts;
    s->lone = std::string(producer);
    return true;
  }
  bool changed = false;
  if (!s->many && producer != s->lone) {
    s->many = true;
    s->lone.clear();
    changed = true;
  }
  if (s->held && producer != s->held_producer && !s->others_since_hold) {
    s->others_since_hold = true;
    changed = true;
  }
  if (ts <= *s->confirmed) return changed;
  if (!s->many || WithinReach(*s->confirmed, ts, reach)) {
    s->confirmed = ts;
    Absorb(s, reach);
    return true;
  }
  if (s->held && s->held_producer == producer && !s->others_since_hold) {
    // No other producer's event since the hold. Once its own clock has gone
    // a full reach past the held time with nobody else sending, it is the
    // only one sending, and its newest time counts (as for a lone producer).
    // Before that, a burst of its own far-ahead events moves nothing: the
    // held time stays where the hold began.
    if (WithinReach(*s->held, ts, reach - 1)) return changed;
    s->confirmed = ts;
    s->held.reset();
    s->held_producer.clear();
    return true;
  }
  if (!s->held || s->held_producer == producer) {  // held, waiting for a second producer
    if (s->held && ts <= *s->held) return changed;
    if (!s->held) s->others_since_hold = false;
    s->held = ts;
    s->held_producer = std::string(producer);
    return true;
  }
  // A second producer beyond the reach: the lower time is confirmed, the
  // higher (if higher) waits on.
  if (ts < *s->held) {
    s->confirmed = ts;
  } else {
    s->confirmed = s->held;
    s->held = ts;
    s->held_producer = std::string(producer);
    s->others_since_hold = false;
  }
  Absorb(s, reach);
  return true;
}

Status LoadWatermark(Txn* txn, WatermarkState* s) {
  *s = WatermarkState();
  SNAPSINK_ASSIGN_OR_RETURN(auto ts, Root::GetMetaU64(txn, meta::kMaxEventTs));
  if (!ts) return Status::OK();
  s->confirmed = static_cast<int64_t>(*ts);
  std::string_view v;
  Status st = txn->Get(Table::kMeta, meta::kWatermarkHold, &v);
  if (st.IsNotFound()) {
    // Written before the rule: lone if its producer table holds one producer.
    int n = 0;
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kProducers, "", [&](std::string_view k, std::string_view) {
      if (++n == 1) s->lone = std::string(k);
      return n < 2;
    }));
    s->many = n != 1;
    if (s->many) s->lone.clear();
    return Status::OK();
  }
  SNAPSINK_RETURN_IF_ERROR(st);
  const Status bad = Status::Corruption("malformed watermark record (meta watermark_hold) in state");
  const char* p = v.data();
  const char* end = v.data() + v.size();
  if (v.size() < 2 || static_cast<uint8_t>(p[0]) != kHoldVersion) return bad;
  const uint8_t flags = static_cast<uint8_t>(p[1]);
  p += 2;
  s->many = (flags & kMany) != 0;
  s->others_since_hold = (flags & kOthersSinceHold) != 0;
  if ((flags & kHeld) != 0) {
    if (end - p < 8) return bad;
    s->held = static_cast<int64_t>(DecodeFixed64(p));
    p += 8;
    if (!GetString(&p, end, &s->held_producer)) return bad;
  }
  if (!s->many && !GetString(&p, end, &s->lone)) return bad;
  if (p != end) return bad;
  return Status::OK();
}

Status StoreWatermark(Txn* txn, const WatermarkState& s) {
  if (!s.confirmed) return Status::OK();
  SNAPSINK_RETURN_IF_ERROR(Root::PutMetaU64(txn, meta::kMaxEventTs, static_cast<uint64_t>(*s.confirmed)));
  std::string v;
  v.push_back(static_cast<char>(kHoldVersion));
  v.push_back(static_cast<char>((s.many ? kMany : 0) | (s.held ? kHeld : 0) |
                                (s.held && s.others_since_hold ? kOthersSinceHold : 0)));
  if (s.held) {
    PutFixed64(&v, static_cast<uint64_t>(*s.held));
    PutVarint64(&v, s.held_producer.size());
    v.append(s.held_producer);
  }
  if (!s.many) {
    PutVarint64(&v, s.lone.size());
    v.append(s.lone);
  }
  return txn->Put(Table::kMeta, meta::kWatermarkHold, v);
}

std::string WatermarkRule(const RootConfig& config, std::optional<int64_t> held, std::string_view held_producer) {
  std::string rule = "newest confirmed event time minus lateness " + FormatDuration(config.lateness_ms) +
                     "; an event more than " + FormatDuration(WatermarkReach(config)) +
                     " ahead of it is applied but held: it moves it once a second producer's event lands that far "
                     "ahead too, or its own producer's clock goes " + FormatDuration(WatermarkReach(config)) +
                     " past it with no other producer's event between (while every event came from one producer, "
                     "that producer's newest time counts)";
  if (config.max_ahead_ms > 0) {
    rule += "; an event more than " + FormatDuration(config.max_ahead_ms) +
            " ahead is rejected (beyond max-ahead)";
  }
  if (held) {
    rule += "; held now: an event at " + FormatIso(*held) + " from producer \"" + std::string(held_producer) +
            "\", waiting for a second producer";
  }
  return rule;
}

}  // namespace snapsink
