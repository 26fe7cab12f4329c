// Store: get, put, delete, scan and transactions through the Store interface.
// engine/store: the LMDB wrapper on its own.
#include "engine/store.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

std::unique_ptr<Store> OpenStore(const std::string& dir) {
  std::unique_ptr<Store> store;
  Status s = Store::Open(dir, /*create=*/true, &store);
  EXPECT_STATUS_OK(s);
  return store;
}

TEST(StoreTest, PutGetDelInOneTable) {
  TempDir d;
  auto store = OpenStore(d.path());
  ASSERT_NE(store, nullptr);
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  ASSERT_STATUS_OK(txn->Put(Table::kMeta, "a", "1"));
  std::string_view v;
  ASSERT_STATUS_OK(txn->Get(Table::kMeta, "a", &v));
  EXPECT_EQ(v, "1");
  // Tables are separate namespaces.
  EXPECT_TRUE(txn->Get(Table::kSources, "a", &v).IsNotFound());
  ASSERT_STATUS_OK(txn->Del(Table::kMeta, "a"));
  EXPECT_TRUE(txn->Get(Table::kMeta, "a", &v).IsNotFound());
  EXPECT_STATUS_OK(txn->Del(Table::kMeta, "absent"));
  ASSERT_STATUS_OK(txn->Commit());
}

// PutInOrder keeps one cursor per transaction: puts in key order and out
// of it, across tables, mixed with Put and Del on the same table (which
// move LMDB's pages under the cursor), across a commit and an abort, leave
// exactly what Put would.
TEST(StoreTest, PutInOrderWritesWhatPutWrites) {
  TempDir d;
  auto store = OpenStore(d.path());
  ASSERT_NE(store, nullptr);
  std::map<std::string, std::string> want;
  for (int round = 0; round < 3; ++round) {
    std::unique_ptr<Txn> txn;
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    for (int i = 0; i < 3000; ++i) {
      const int n = round == 1 ? (i * 7919) % 3000 : i;  // round 1: out of order
      const std::string key = "p" + std::to_string(100000 + n);
      const std::string value(static_cast<size_t>(8 + (n + round) % 40), static_cast<char>('a' + round));
      if (i % 5 == 0) {
        ASSERT_STATUS_OK(txn->Put(Table::kProducers, key, value));
      } else {
        ASSERT_STATUS_OK(txn->PutInOrder(Table::kProducers, key, value));
      }
      want[key] = value;
      if (i % 97 == 0) {
        ASSERT_STATUS_OK(txn->PutInOrder(Table::kMeta, key, "m"));  // the cursor moves tables
      }
      if (i % 13 == 0) {
        const std::string gone = "p" + std::to_string(100000 + (n * 31) % 3000);
        ASSERT_STATUS_OK(txn->Del(Table::kProducers, gone));
        want.erase(gone);
      }
    }
    ASSERT_STATUS_OK(txn->Commit());
  }
  {
    std::unique_ptr<Txn> txn;  // aborted: nothing of it stays
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    ASSERT_STATUS_OK(txn->PutInOrder(Table::kProducers, "p999999", "x"));
  }
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginRead(&txn));
  std::map<std::string, std::string> got;
  ASSERT_STATUS_OK(txn->Scan(Table::kProducers, "", [&](std::string_view k, std::string_view v) {
    got.emplace(std::string(k), std::string(v));
    return true;
  }));
  EXPECT_EQ(got, want);
}

TEST(StoreTest, CommittedWritesSurviveReopenUncommittedDoNot) {
  TempDir d;
  {
    auto store = OpenStore(d.path());
    std::unique_ptr<Txn> txn;
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    ASSERT_STATUS_OK(txn->Put(Table::kSources, "kept", "x"));
    ASSERT_STATUS_OK(txn->Commit());
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    ASSERT_STATUS_OK(txn->Put(Table::kSources, "dropped", "y"));
    txn.reset();  // aborted
  }
  auto store = OpenStore(d.path());
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginRead(&txn));
  std::string_view v;
  ASSERT_STATUS_OK(txn->Get(Table::kSources, "kept", &v));
  EXPECT_EQ(v, "x");
  EXPECT_TRUE(txn->Get(Table::kSources, "dropped", &v).IsNotFound());
}

TEST(StoreTest, ScanByPrefixInKeyOrderAndStopEarly) {
  TempDir d;
  auto store = OpenStore(d.path());
  std::unique_ptr<Txn> txn;
  ASSERT_STATUS_OK(store->BeginWrite(&txn));
  for (const char* k : {"b2", "a1", "b1", "b3", "c1"}) ASSERT_STATUS_OK(txn->Put(Table::kAggs, k, k));
  std::vector<std::string> seen;
  ASSERT_STATUS_OK(txn->Scan(Table::kAggs, "b", [&](std::string_view k, std::string_view) {
    seen.emplace_back(k);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"b1", "b2", "b3"}));
  seen.clear();
  ASSERT_STATUS_OK(txn->Scan(Table::kAggs, "", [&](std::string_view k, std::string_view) {
    seen.emplace_back(k);
    return seen.size() < 2;
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"a1", "b1"}));
  ASSERT_STATUS_OK(txn->DeletePrefix(Table::kAggs, "b"));
  seen.clear();
  ASSERT_STATUS_OK(txn->Scan(Table::kAggs, "", [&](std::string_view k, std::string_view) {
    seen.emplace_back(k);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"a1", "c1"}));
}

TEST(StoreTest, ReaderSeesSnapshotNotLaterWrites) {
  TempDir d;
  auto store = OpenStore(d.path());
  std::unique_ptr<Txn> w;
  ASSERT_STATUS_OK(store->BeginWrite(&w));
  ASSERT_STATUS_OK(w->Put(Table::kMeta, "k", "old"));
  ASSERT_STATUS_OK(w->Commit());
  std::unique_ptr<Txn> r;
  ASSERT_STATUS_OK(store->BeginRead(&r));
  ASSERT_STATUS_OK(store->BeginWrite(&w));
  ASSERT_STATUS_OK(w->Put(Table::kMeta, "k", "new"));
  ASSERT_STATUS_OK(w->Commit());
  std::string_view v;
  ASSERT_STATUS_OK(r->Get(Table::kMeta, "k", &v));
  EXPECT_EQ(v, "old");
}

TEST(StoreTest, OpenWithoutCreateOnMissingDirFails) {
  TempDir d;
  std::unique_ptr<Store> store;
  EXPECT_FALSE(Store::Open(d / "missing", /*create=*/false, &store).ok());
}

}  // namespace
}  // namespace snapsink::testing
