#include "engine/producer_retention.h"

#include <algorithm>
#include <climits>

#include "engine/gap_spill.h"
#include "engine/root.h"

namespace snapsink {
namespace {

constexpr int64_t kMaxIdleBucketMs = int64_t{3600} * 1000;

std::string IdleKey(int64_t ts, std::string_view producer) {
  std::string k;
  codec::AppendWindowKey(&k, ts);
  k.append(producer);
  return k;
}

std::string EncodeTombstone(const ProducerTombstone& t) {
  std::string s;
  codec::PutU32(&s, t.epoch);
  codec::PutU64(&s, static_cast<uint64_t>(t.last_seen));
  return s;
}

// The last-seen record of formats 3 and 4 (Table::kProducerSeen).
Status GetLegacySeen(Txn* txn, std::string_view producer, std::optional<int64_t>* seen) {
  seen->reset();
  std::string_view v;
  Status s = txn->Get(Table::kProducerSeen, producer, &v);
  if (s.IsNotFound()) return Status::OK();
  if (!s.ok()) return s;
  if (v.size() != 8) return Status::Corruption("malformed producer last-seen record in state");
  *seen = static_cast<int64_t>(codec::GetU64(v.data()));
  return Status::OK();
}

}  // namespace

Status DecodeTombstone(std::string_view v, ProducerTombstone* t) {
  if (v.size() != 12) return Status::Corruption("malformed retired-producer record in state");
  t->epoch = codec::GetU32(v.data());
  t->last_seen = static_cast<int64_t>(codec::GetU64(v.data() + 4));
  return Status::OK();
}

int64_t IdleBucketMs(int64_t producer_retention_ms) {
  if (producer_retention_ms <= 0) return kMaxIdleBucketMs;
  return std::clamp<int64_t>(producer_retention_ms / 8, 1, kMaxIdleBucketMs);
}

int64_t IdleBucket(int64_t ts, int64_t bucket_ms) {
  const int64_t r = ((ts % bucket_ms) + bucket_ms) % bucket_ms;
  return ts < INT64_MIN + r ? INT64_MIN : ts - r;
}

int64_t RetentionCutoff(std::optional<int64_t> max_event_ts, int64_t lateness_ms, int64_t retention_ms) {
  if (retention_ms <= 0 || !max_event_ts) return INT64_MIN;
  const __int128 c = static_cast<__int128>(*max_event_ts) - lateness_ms - retention_ms;
  return c < INT64_MIN ? INT64_MIN : static_cast<int64_t>(c);
}

Status LoadProducerLife(Txn* txn, std::string_view producer, ProducerLife* life) {
  std::optional<ProducerSeen> seen;
  std::string_view v;
  Status s = txn->Get(Table::kProducers, producer, &v);
  if (s.ok()) {
    ProducerState state;
    SNAPSINK_RETURN_IF_ERROR(codec::DecodeProducer(v, &state, &seen));
  } else if (!s.IsNotFound()) {
    return s;
  }
  return LoadProducerLife(txn, producer, seen, life);
}

Status LoadProducerLife(Txn* txn, std::string_view producer, const std::optional<ProducerSeen>& seen,
                        ProducerLife* life) {
  *life = ProducerLife();
  if (seen) {
    life->last_seen = life->stored_seen = seen->last_seen;
    life->stored_idle = seen->idle_at;
  } else {
    SNAPSINK_RETURN_IF_ERROR(GetLegacySeen(txn, producer, &life->stored_seen));
    life->last_seen = life->stored_idle = life->stored_seen;  // keyed by the exact time
    life->legacy_seen = life->stored_seen.has_value();
  }
  std::string_view v;
  Status s = txn->Get(Table::kRetired, producer, &v);
  if (s.ok()) {
    ProducerTombstone t;
    SNAPSINK_RETURN_IF_ERROR(DecodeTombstone(v, &t));
    life->retired = t;
  } else if (!s.IsNotFound()) {
    return s;
  }
  return Status::OK();
}

bool RetireIfIdle(ProducerLife* life, const ProducerState& state, int64_t cutoff) {
  if (life->retired || !life->last_seen || *life->last_seen >= cutoff) return false;
  life->retired = ProducerTombstone{state.epoch, *life->last_seen};
  life->last_seen.reset();
  life->tombstone_dirty = true;
  return true;
}

Status CommitProducer(Txn* txn, std::string_view producer, const ProducerState& state, bool state_dirty,
                      ProducerLife* life, int64_t bucket_ms, std::string* scratch) {
  std::string own;
  std::string& value = scratch != nullptr ? *scratch : own;
  if (life->tombstone_dirty) {
    if (life->retired) {
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRetired, producer, EncodeTombstone(*life->retired)));
    } else {
      SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kRetired, producer));
    }
    life->tombstone_dirty = false;
  }
  if (!state_dirty && life->last_seen == life->stored_seen) return Status::OK();
  // The idle key to keep: the stored one while it is still at or before the
  // last-seen time and within its bucket, else the bucket's start.
  std::optional<int64_t> idle;
  if (life->last_seen && !life->retired) {
    const int64_t ts = *life->last_seen;
    const int64_t bucket = IdleBucket(ts, bucket_ms);
    idle = life->stored_idle && *life->stored_idle <= ts && *life->stored_idle >= bucket ? *life->stored_idle : bucket;
  }
  if (idle != life->stored_idle) {
    if (life->stored_idle) {
      SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducerIdle, IdleKey(*life->stored_idle, producer)));
    }
    if (idle) SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kProducerIdle, IdleKey(*idle, producer), ""));
  }
  if (life->retired) {
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducers, producer));
  } else if (idle) {
    const bool was_new_form = life->stored_seen && !life->legacy_seen;
    if (!was_new_form) SNAPSINK_RETURN_IF_ERROR(Root::RaiseFormat(txn));
    const ProducerSeen seen{*life->last_seen, *idle};
    codec::EncodeProducerInto(&value, state, seen);
    SNAPSINK_RETURN_IF_ERROR(txn->PutInOrder(Table::kProducers, producer, value));
  } else {  // never heard (a record of an old format without a last-seen time)
    codec::EncodeProducerInto(&value, state, std::nullopt);
    SNAPSINK_RETURN_IF_ERROR(txn->PutInOrder(Table::kProducers, producer, value));
  }
  if (life->legacy_seen) {
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducerSeen, producer));
    life->legacy_seen = false;
  }
  life->stored_seen = life->last_seen;
  life->stored_idle = idle;
  return Status::OK();
}

Status RetireIdleProducers(Txn* txn, int64_t cutoff, std::vector<std::string>* retired) {
  if (cutoff == INT64_MIN) return Status::OK();
  std::string end;
  codec::AppendWindowKey(&end, cutoff);
  std::vector<std::string> candidates;  // keys before the cutoff: last heard at or after their time
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kProducerIdle, "", [&](std::string_view k, std::string_view) {
    if (k.size() <= 8 || k.substr(0, 8) >= end) return false;
    candidates.emplace_back(k);
    return true;
  }));
  for (const std::string& k : candidates) {
    const std::string_view producer = std::string_view(k).substr(8);
    ProducerState state;
    std::optional<ProducerSeen> seen;
    std::string_view v;
    Status s = txn->Get(Table::kProducers, producer, &v);
    if (s.ok()) {
      SNAPSINK_RETURN_IF_ERROR(codec::DecodeProducer(v, &state, &seen));
    } else if (!s.IsNotFound()) {
      return s;
    }
    std::optional<int64_t> last_seen;
    if (seen) {
      last_seen = seen->last_seen;
    } else {
      SNAPSINK_RETURN_IF_ERROR(GetLegacySeen(txn, producer, &last_seen));
    }
    if (!last_seen) last_seen = codec::DecodeWindowKey(k);  // the key alone: its time is the last-seen one
    if (*last_seen >= cutoff) continue;                        // heard again within its key's bucket
    const ProducerTombstone t{state.epoch, *last_seen};
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRetired, producer, EncodeTombstone(t)));
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducers, producer));
    SNAPSINK_RETURN_IF_ERROR(DropSpilledGaps(txn, producer));
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducerSeen, producer));
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducerIdle, k));
    if (retired != nullptr) retired->emplace_back(producer);
  }
  return Status::OK();
}

}  // namespace snapsink
