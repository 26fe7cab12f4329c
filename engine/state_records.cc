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

// Adds one record, as a put, to the digest: its encoding hashed piece by
// piece (a value of many megabytes, an aggregate run, is not copied first).
void Hash(HashState* hs, std::string* scratch, int table, std::string_view key, std::string_view value) {
  scratch->clear();
  scratch->push_back(static_cast<char>(table));
  scratch->push_back('+');
  coding::PutVarint64(scratch, key.size());
  XXH64_update(hs->h, scratch->data(), scratch->size());
  XXH64_update(hs->h, key.data(), key.size());
  scratch->clear();
  coding::PutVarint64(scratch, value.size());
  XXH64_update(hs->h, scratch->data(), scratch->size());
  XXH64_update(hs->h, value.data(), value.size());
}

}  // namespace

namespace {

// One record at *p before end: false when it is cut short.
bool NextRecord(const char** p, const char* end, int* table, char* op, std::string_view* key, std::string_view* value) {
  if (end - *p < 2) return false;
  *table = static_cast<unsigned char>((*p)[0]);
  *op = (*p)[1];
  *p += 2;
  uint64_t klen = 0, vlen = 0;
  if (!coding::GetVarint64(p, end, &klen) || klen > static_cast<uint64_t>(end - *p)) return false;
  *key = std::string_view(*p, klen);
  *p += klen;
  if (*op != '+') return true;
  if (!coding::GetVarint64(p, end, &vlen) || vlen > static_cast<uint64_t>(end - *p)) return false;
  *value = std::string_view(*p, vlen);
  *p += vlen;
  return true;
}

}  // namespace

Status EncodeStateBase(Txn* txn, StateRecords* out) {
  *out = StateRecords();
  HashState hs;
  // The tables' page bytes bound the records' (keys, values and a few
  // bytes each): one allocation, not a doubling string copied each time.
  uint64_t pages = 0;
  for (int t = 0; t < kNumTables; ++t) {
    uint64_t entries = 0, bytes = 0;
    SNAPSINK_RETURN_IF_ERROR(txn->Stat(static_cast<Table>(t), &entries, &bytes));
    pages += bytes;
  }
  out->data.reserve(pages);
  for (int t = 0; t < kNumTables; ++t) {
    SNAPSINK_RETURN_IF_ERROR(txn->Scan(static_cast<Table>(t), "", [&](std::string_view k, std::string_view v) {
      if (Skipped(t, k)) return true;
      const size_t at = out->data.size();
      PutRecord(&out->data, t, true, k, v);
      // A base's records are the digest's own encoding: hashed as written.
      XXH64_update(hs.h, out->data.data() + at, out->data.size() - at);
      ++out->records;
      return true;
    }));
  }
  out->digest = XXH64_digest(hs.h);
  return Status::OK();
}

namespace {

// Whether from's table t holds a key to's does not, given that `matched`
// of to's keys are in it: only when it holds more than `matched` records
// (not counting the copy's note, Skipped) is it scanned for them.
Result<bool> HasGone(Txn* from, Table table, uint64_t matched) {
  uint64_t entries = 0, bytes = 0;
  SNAPSINK_RETURN_IF_ERROR(from->Stat(table, &entries, &bytes));
  if (table == Table::kMeta) {
    std::string_view v;
    Status s = from->Get(table, kCheckpointCopyKey, &v);
    if (s.ok()) --entries;
    else if (!s.IsNotFound()) return s;
  }
  return entries > matched;
}

// The keys of from's table t that to's does not hold, in key order.
Status GoneKeys(Txn* from, Txn* to, Table table, std::vector<std::string>* gone) {
  Status inner;
  SNAPSINK_RETURN_IF_ERROR(from->Scan(table, "", [&](std::string_view k, std::string_view) {
    if (Skipped(static_cast<int>(table), k)) return true;
    std::string_view v;
    Status s = to->Get(table, k, &v);
    if (s.IsNotFound()) gone->emplace_back(k);
    else if (!s.ok()) inner = s;
    return inner.ok();
  }));
  return inner;
}

}  // namespace

Status EncodeStateDelta(Txn* from, Txn* to, StateRecords* out) {
  *out = StateRecords();
  HashState hs;
  std::string scratch, puts;
  for (int t = 0; t < kNumTables; ++t) {
    const Table table = static_cast<Table>(t);
    // The puts first, into `puts`: to's records that from lacks or holds
    // otherwise, and how many of to's keys from holds.
    Status inner;
    uint64_t matched = 0, put_records = 0;
    puts.clear();
    SNAPSINK_RETURN_IF_ERROR(to->Scan(table, "", [&](std::string_view k, std::string_view v) {
      if (Skipped(t, k)) return true;
      Hash(&hs, &scratch, t, k, v);
      std::string_view was;
      Status s = from->Get(table, k, &was);
      if (s.ok()) ++matched;
      if (s.ok() && was == v) return true;
      if (!s.ok() && !s.IsNotFound()) {
        inner = s;
        return false;
      }
      PutRecord(&puts, t, true, k, v);
      ++put_records;
      return true;
    }));
    SNAPSINK_RETURN_IF_ERROR(inner);
    // Then the deletes, merged in key order: from is scanned for them only
    // when it holds keys to does not (a table only added to is not).
    SNAPSINK_ASSIGN_OR_RETURN(bool any_gone, HasGone(from, table, matched));
    std::vector<std::string> gone;
    if (any_gone) SNAPSINK_RETURN_IF_ERROR(GoneKeys(from, to, table, &gone));
    size_t next_gone = 0;
    auto deletes_before = [&](const std::string_view* key) {
      for (; next_gone < gone.size() && (key == nullptr || gone[next_gone] < *key); ++next_gone) {
        PutRecord(&out->data, t, false, gone[next_gone], {});
        ++out->records;
      }
    };
    if (gone.empty()) {
      out->data += puts;
    } else {
      const char* p = puts.data();
      const char* end = p + puts.size();
      while (p < end) {
        const char* record = p;
        int table_no = 0;
        char op = 0;
        std::string_view key, value;
        if (!NextRecord(&p, end, &table_no, &op, &key, &value)) return Status::Corruption("delta puts cut short");
        deletes_before(&key);
        out->data.append(record, static_cast<size_t>(p - record));
      }
    }
    out->records += put_records;
    deletes_before(nullptr);
  }
  out->digest = XXH64_digest(hs.h);
  return Status::OK();
}


Status ApplyStateRecords(Txn* txn, std::string_view data, uint64_t records) {
  StateRecordsApplier applier(txn, records);
  SNAPSINK_RETURN_IF_ERROR(applier.Apply(data));
  return applier.Finish();
}

Status StateRecordsApplier::Apply(std::string_view data) {
  const char* p = data.data();
  const char* end = p + data.size();
  auto bad = [&](const std::string& why) {
    return Status::Corruption("record " + std::to_string(n_ + 1) + " of " + std::to_string(records_) + ": " + why);
  };
  for (; p < end; ++n_) {
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
    if (table < last_table_ || (table == last_table_ && key <= last_key_)) return bad("out of key order");
    last_table_ = table;
    last_key_.assign(key);
    if (op == '-') {
      SNAPSINK_RETURN_IF_ERROR(txn_->Del(static_cast<Table>(table), key));
      continue;
    }
    if (!coding::GetVarint64(&p, end, &vlen) || vlen > static_cast<uint64_t>(end - p)) {
      return bad("its value is cut short");
    }
    SNAPSINK_RETURN_IF_ERROR(txn_->Put(static_cast<Table>(table), key, std::string_view(p, vlen)));
    p += vlen;
  }
  return Status::OK();
}

Status StateRecordsApplier::Finish() const {
  if (n_ != records_) {
    return Status::Corruption(std::to_string(n_) + " records, its header says " + std::to_string(records_));
  }
  return Status::OK();
}

size_t StateRecordsCut(std::string_view data, size_t limit) {
  const char* p = data.data();
  const char* end = p + data.size();
  size_t cut = 0;
  while (p < end) {
    int table = 0;
    char op = 0;
    std::string_view key, value;
    if (!NextRecord(&p, end, &table, &op, &key, &value)) break;
    const size_t at = static_cast<size_t>(p - data.data());
    if (at > limit && cut != 0) break;
    cut = at;
  }
  return cut;
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
