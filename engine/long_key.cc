#include "engine/long_key.h"

#include <xxhash.h>

#include "engine/state_codec.h"

namespace snapsink {
namespace {

uint64_t (*g_hash)(std::string_view) = nullptr;

uint64_t Hash(std::string_view s) { return g_hash != nullptr ? g_hash(s) : XXH64(s.data(), s.size(), 0); }

void SlotKey(std::string_view natural, uint64_t slot, std::string* out) {
  out->assign(natural.substr(0, kLongKeyPrefix));
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>((slot >> shift) & 0xff));
}

uint64_t SlotOf(std::string_view stored) {
  uint64_t u = 0;
  for (size_t i = kLongKeyPrefix; i < kStoredLongKey; ++i) u = (u << 8) | static_cast<uint8_t>(stored[i]);
  return u;
}

// Splits a long-form value into payload and the natural key's tail.
bool SplitValue(std::string_view value, std::string_view* payload, std::string_view* tail) {
  if (value.size() < 4) return false;
  const uint32_t n = codec::GetU32(value.data() + value.size() - 4);
  if (n > value.size() - 4) return false;
  *payload = value.substr(0, value.size() - 4 - n);
  *tail = value.substr(value.size() - 4 - n, n);
  return true;
}

Status Malformed() { return Status::Corruption("malformed long-key record in state"); }

// Finds natural's slot: *found when it holds natural, else *slot_key is the
// first empty slot of its chain.
Status FindSlot(Txn* txn, Table t, std::string_view natural, std::string* slot_key, bool* found,
                std::string_view* payload) {
  const uint64_t h = Hash(natural);
  const std::string_view want_tail = natural.substr(kLongKeyPrefix);
  for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    SlotKey(natural, h + probe, slot_key);
    std::string_view v;
    Status s = txn->Get(t, *slot_key, &v);
    if (s.IsNotFound()) {
      *found = false;
      return Status::OK();
    }
    SNAPSINK_RETURN_IF_ERROR(s);
    std::string_view tail;
    if (!SplitValue(v, payload, &tail)) return Malformed();
    if (tail == want_tail) {
      *found = true;
      return Status::OK();
    }
    // Another natural key with the same prefix and hash: the next slot.
  }
  return Status::IOError("a " + std::to_string(natural.size()) + "-byte key collides with " +
                         std::to_string(kMaxProbes) + " others in state (hash chain full)");
}

}  // namespace

Status GetRecord(Txn* txn, Table t, std::string_view key, std::string_view* value) {
  if (key.size() <= kMaxDirectKey) return txn->Get(t, key, value);
  std::string slot;
  bool found = false;
  SNAPSINK_RETURN_IF_ERROR(FindSlot(txn, t, key, &slot, &found, value));
  if (!found) return Status::NotFound("not found");
  return Status::OK();
}

Status PutRecord(Txn* txn, Table t, std::string_view key, std::string_view value) {
  if (key.size() <= kMaxDirectKey) return txn->Put(t, key, value);
  std::string slot;
  bool found = false;
  std::string_view unused;
  SNAPSINK_RETURN_IF_ERROR(FindSlot(txn, t, key, &slot, &found, &unused));
  std::string v(value);
  v.append(key.substr(kLongKeyPrefix));
  codec::PutU32(&v, static_cast<uint32_t>(key.size() - kLongKeyPrefix));
  return txn->Put(t, slot, v);
}

Status DecodeRecord(std::string_view stored, std::string_view value, std::string* natural, std::string_view* payload) {
  if (!IsLongForm(stored)) {
    natural->assign(stored);
    *payload = value;
    return Status::OK();
  }
  std::string_view tail;
  if (!SplitValue(value, payload, &tail) || tail.empty()) return Malformed();
  natural->assign(stored.substr(0, kLongKeyPrefix));
  natural->append(tail);
  if (SlotOf(stored) - Hash(*natural) >= kMaxProbes) return Malformed();
  return Status::OK();
}

void SetLongKeyHashForTesting(uint64_t (*hash)(std::string_view)) { g_hash = hash; }

}  // namespace snapsink
