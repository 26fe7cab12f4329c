// A state's records as a file writer's checkpoint in a bucket holds them
// (engine/state_checkpoint.h, docs/FORMAT.md "A file writer's state in a
// bucket"): every record of every table, or the puts and deletes that turn
// one state into another, in (table, key) order, each key at most once.
// One record: the table's number (u8, engine/store.h's Table), '+' (put)
// or '-' (delete), varint key length, key, and for a put varint value
// length, value. The digest of a state is XXH64 over its records encoded
// as puts in that order: equal digests, equal states.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/status.h"
#include "engine/store.h"

namespace snapsink {

// The key in kMeta under which a checkpoint's local copy of the state
// (engine/state_checkpoint.cc) notes what it is a copy of. Never a record
// of a checkpoint, of a digest or of a delta.
inline constexpr std::string_view kCheckpointCopyKey = "\xff" "checkpoint copy";

struct StateRecords {
  std::string data;      // the records, encoded
  uint64_t records = 0;  // how many
  uint64_t digest = 0;   // of the state they make (of `to` for a delta)
};

// Every record of txn's state, as puts.
// Errors: LMDB's.
Status EncodeStateBase(Txn* txn, StateRecords* out);

// The puts and deletes that make from's state into to's.
// Errors: LMDB's.
Status EncodeStateDelta(Txn* from, Txn* to, StateRecords* out);

// Applies `records` encoded records to txn.
// Errors: Corruption when data is not that many records in order; LMDB's.
Status ApplyStateRecords(Txn* txn, std::string_view data, uint64_t records);

// Applies `records` encoded records to txn in pieces, each of whole
// records, the order checked across them (a checkpoint's zstd frames).
class StateRecordsApplier {
 public:
  StateRecordsApplier(Txn* txn, uint64_t records) : txn_(txn), records_(records) {}
  // Errors: Corruption when data is not whole records following those
  // before in order; LMDB's.
  Status Apply(std::string_view data);
  // Errors: Corruption when not `records` records were applied.
  Status Finish() const;

 private:
  Txn* txn_;
  uint64_t records_, n_ = 0;
  int last_table_ = -1;
  std::string last_key_;
};

// The length of the longest run of whole records at the front of data no
// longer than limit, or of its first record when that alone is longer; 0
// when data does not start with a whole record.
size_t StateRecordsCut(std::string_view data, size_t limit);

// The digest of txn's state.
// Errors: LMDB's.
Status StateDigest(Txn* txn, uint64_t* digest);

}  // namespace snapsink
