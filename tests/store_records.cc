#include "tests/store_records.h"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

namespace snapsink::testing {

StoreRecords AllRecords(Store* store) {
  std::unique_ptr<Txn> txn;
  EXPECT_TRUE(store->BeginRead(&txn).ok());
  StoreRecords out;
  for (int t = 0; t < kNumTables; ++t) {
    EXPECT_TRUE(txn->Scan(static_cast<Table>(t), "", [&](std::string_view k, std::string_view v) {
                     out[{t, std::string(k)}] = std::string(v);
                     return true;
                   }).ok());
  }
  return out;
}

}  // namespace snapsink::testing
