#include "engine/state_records.h"

#include <xxhash.h>

#include <memory>
#include <vector>

#include "engine/coding.h"

namespace snapsink {

namespace {

struct HashState {
  HashState() : h(XXH64_createState()) { XXH64_reset(h, 0); }
  ~HashState() { XXH64_freeState(h); }
  HashState(const HashState&) = delete;
  HashState& operator=(const HashState&) = delete;
  XXH64_state_t* h;
};

bool Skipped(int table, std::string_view key) {
  return table == static_cast<int>(Table::kMeta) && key == kCheckpointCopyKey;
}

void PutRecord(std::string* out, int table, bool put, std::string_view key, std::string_view value) {
  out->push_back(static_cast<char>(table));
  out->push_back(put ? '+' : '-');
  coding::PutVarint64(out, key.size());
  out->append(key);
  if (!put) return;
  coding::PutVarint64(out, value.size());
  out->append(value);
}

// Adds one record, as a put, to the digest.
void Hash(HashState* hs, std::string* scratch, int table, std::string_view key, std::string_view value) {
  scratch->clear();
  PutRecord(scratch, table, true, key, value);
  XXH64_update(hs->h, scratch->data(), scratch->size());
}

}  // namespace

Status EncodeStateBase(Txn* txn, StateRecords* out) {
  *out = StateRecords();
  HashState hs;
  std::string scratch;
  for (int t = 0; t < kNumTables; ++t) {
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(static_cast<Table>(t), "", [&](std::string_view k, std::string_view v) {
      if (Skipped(t, k)) return true;
      PutRecord(&out->data, t, true, k, v);
      Hash(&hs, &scratch, t, k, v);
      ++out->records;
      return true;
    }));
  }
  out->digest = XXH64_digest(hs.h);
  return Status::OK();
}

Status EncodeStateDelta(Txn* from, Txn* to, StateRecords* out) {
  *out = StateRecords();
  HashState hs;
  std::string scratch;
  for (int t = 0; t < kNumTables; ++t) {
    const Table table = static_cast<Table>(t);
    Status inner;
    std::vector<std::string> gone;  // in key order
    SNAPSINK_RETURN_IF_ERROR(from->Scan(table, "", [&](std::string_view k, std::string_view) {
      if (Skipped(t, k)) return true;
      std::string_view v;
      Status s = to->Get(table, k, &v);
      if (s.IsNotFound()) gone.emplace_back(k);
      else if (!s.ok()) inner = s;
      return inner.ok();
    }));
    SNAPSINK_RETURN_IF_ERROR(inner);
    size_t next_gone = 0;
    auto deletes_before = [&](const std::string_view* key) {
      for (; next_gone < gone.size() && (key == nullptr || gone[next_gone] < *key); ++next_gone) {
        PutRecord(&out->data, t, false, gone[next_gone], {});
        ++out->records;
      }
    };
    SNAPSINK_RETURN_IF_ERROR(to->Scan(table, "", [&](std::string_view k, std::string_view v) {
      if (Skipped(t, k)) return true;
      Hash(&hs, &scratch, t, k, v);
      std::string_view was;
      Status s = from->Get(table, k, &was);
      if (s.ok() && was == v) return true;
      if (!s.ok() && !s.IsNotFound()) {
        inner = s;
        return false;
      }
      deletes_before(&k);
      PutRecord(&out->data, t, true, k, v);
      ++out->records;
      return true;
    }));
    SNAPSINK_RETURN_IF_ERROR(inner);
    deletes_before(nullptr);
  }
  out->digest = XXH64_digest(hs.h);
  return Status::OK();
}

Status ApplyStateRecords(Txn* txn, std::string_view data, uint64_t records) {
  const char* p = data.data();
  const char* end = p + data.size();
  int last_table = -1;
  std::string last_key;
  uint64_t n = 0;
  auto bad = [&](const std::string& why) {
    return Status::Corruption("record " + std::to_string(n + 1) + " of " + std::to_string(records) + ": " + why);
  };
  for (; p < end; ++n) {
    if (end - p < 2) return bad("cut short");
    const int table = static_cast<unsigned char>(p[0]);
    const char op = p[1];
    p += 2;
    if (table >= kNumTables) return bad("no table " + std::to_string(table));
    if (op != '+' && op != '-') return bad("neither a put nor a delete");
    uint64_t klen = 0, vlen = 0;
    if (!coding::GetVarint64(&p, end, &klen) || klen > static_cast<uint64_t>(end - p)) {
      return bad("its key is cut short");
    }
    const std::string_view key(p, klen);
    p += klen;
    if (table < last_table || (table == last_table && key <= last_key)) return bad("out of key order");
    last_table = table;
    last_key.assign(key);
    if (op == '-') {
      SNAPSINK_RETURN_IF_ERROR(txn->Del(static_cast<Table>(table), key));
      continue;
    }
    if (!coding::GetVarint64(&p, end, &vlen) || vlen > static_cast<uint64_t>(end - p)) {
      return bad("its value is cut short");
    }
    SNAPSINK_RETURN_IF_ERROR(txn->Put(static_cast<Table>(table), key, std::string_view(p, vlen)));
    p += vlen;
  }
  if (n != records) {
    return Status::Corruption(std::to_string(n) + " records, its header says " + std::to_string(records));
  }
  return Status::OK();
}

Status StateDigest(Txn* txn, uint64_t* digest) {
  HashState hs;
  std::string scratch;
  for (int t = 0; t < kNumTables; ++t) {
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(static_cast<Table>(t), "", [&](std::string_view k, std::string_view v) {
      if (!Skipped(t, k)) Hash(&hs, &scratch, t, k, v);
      return true;
    }));
  }
  *digest = XXH64_digest(hs.h);
  return Status::OK();
}

}  // namespace snapsink
