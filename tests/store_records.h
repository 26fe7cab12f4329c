// Every record of an LMDB state, table by table, as one map: what the
// checkpoint tests compare a restored or rebuilt state by.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "engine/store.h"

namespace snapsink::testing {

// (table, key) -> value.
using StoreRecords = std::map<std::pair<int, std::string>, std::string>;

// All of store's records, read in one read transaction; a failed read is a
// test failure.
StoreRecords AllRecords(Store* store);

}  // namespace snapsink::testing
