#include "engine/producer_retention.h"

#include "engine/gap_spill.h"

#include <climits>

namespace snapsink {
namespace {

std::string IdleKey(int64_t ts, std::string_view producer) {
  std::string k;
  codec::AppendWindowKey(&k, ts);
  k.append(producer);
  return k;
}

std::string U64Value(int64_t v) {
  std::string s;
  codec::PutU64(&s, static_cast<uint64_t>(v));
  return s;
}

std::string EncodeTombstone(const ProducerTombstone& t) {
  std::string s;
  codec::PutU32(&s, t.epoch);
  codec::PutU64(&s, static_cast<uint64_t>(t.last_seen));
  return s;
}

}  // namespace

Status DecodeTombstone(std::string_view v, ProducerTombstone* t) {
  if (v.size() != 12) return Status::Corruption("malformed retired-producer record in state");
  t->epoch = codec::GetU32(v.data());
  t->last_seen = static_cast<int64_t>(codec::GetU64(v.data() + 4));
  return Status::OK();
}

int64_t RetentionCutoff(std::optional<int64_t> max_event_ts, int64_t lateness_ms, int64_t retention_ms) {
  if (retention_ms <= 0 || !max_event_ts) return INT64_MIN;
  const __int128 c = static_cast<__int128>(*max_event_ts) - lateness_ms - retention_ms;
  return c < INT64_MIN ? INT64_MIN : static_cast<int64_t>(c);
}

Status LoadProducerLife(Txn* txn, std::string_view producer, ProducerLife* life) {
  *life = ProducerLife();
  std::string_view v;
  Status s = txn->Get(Table::kProducerSeen, producer, &v);
  if (s.ok()) {
    if (v.size() != 8) return Status::Corruption("malformed producer last-seen record in state");
    life->last_seen = life->stored_seen = static_cast<int64_t>(codec::GetU64(v.data()));
  } else if (!s.IsNotFound()) {
    return s;
  }
  s = txn->Get(Table::kRetired, producer, &v);
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

Status CommitProducerLife(Txn* txn, std::string_view producer, ProducerLife* life) {
  if (life->tombstone_dirty) {
    if (life->retired) {
      SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kRetired, producer, EncodeTombstone(*life->retired)));
    } else {
      SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kRetired, producer));
    }
    life->tombstone_dirty = false;
  }
  if (life->last_seen == life->stored_seen) return Status::OK();
  if (life->stored_seen) {
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducerIdle, IdleKey(*life->stored_seen, producer)));
  }
  if (life->last_seen) {
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kProducerSeen, producer, U64Value(*life->last_seen)));
    SNAPSINK_RETURN_IF_ERROR(txn->Put(Table::kProducerIdle, IdleKey(*life->last_seen, producer), ""));
  } else {
    SNAPSINK_RETURN_IF_ERROR(txn->Del(Table::kProducerSeen, producer));
  }
  life->stored_seen = life->last_seen;
  return Status::OK();
}

Status RetireIdleProducers(Txn* txn, int64_t cutoff, std::vector<std::string>* retired) {
  if (cutoff == INT64_MIN) return Status::OK();
  std::string end;
  codec::AppendWindowKey(&end, cutoff);
  std::vector<std::string> idle;
  SNAPSINK_RETURN_IF_ERROR(txn->Scan(Table::kProducerIdle, "", [&](std::string_view k, std::string_view) {
    if (k.size() <= 8 || k.substr(0, 8) >= end) return false;
    idle.emplace_back(k);
    return true;
  }));
  for (const std::string& k : idle) {
    const std::string_view producer = std::string_view(k).substr(8);
    ProducerState state;
    std::string_view v;
    Status s = txn->Get(Table::kProducers, producer, &v);
    if (s.ok()) {
      SNAPSINK_RETURN_IF_ERROR(codec::Decode(v, &state));
    } else if (!s.IsNotFound()) {
      return s;
    }
    const ProducerTombstone t{state.epoch, codec::DecodeWindowKey(k)};
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
