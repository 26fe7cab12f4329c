// A state's records as a checkpoint holds them (engine/state_records.h):
// a delta between two states, applied to the first, makes the second (same
// digest, same records); a base rebuilds a state; records out of order or
// cut short are Corruption.
#include "engine/state_records.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tests/store_records.h"
#include "tests/test_util.h"

namespace snapsink {
namespace {

using Records = testing::StoreRecords;

class StateRecordsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> Make(const std::string& name, const Records& records) {
    std::unique_ptr<Store> store;
    std::filesystem::create_directories(dir_.path() + "/" + name);
    EXPECT_TRUE(Store::Open(dir_.path() + "/" + name, /*create=*/true, &store).ok());
    Apply(store.get(), [&](Txn* txn) {
      for (const auto& [k, v] : records) EXPECT_TRUE(txn->Put(static_cast<Table>(k.first), k.second, v).ok());
      return Status::OK();
    });
    return store;
  }
  void Apply(Store* store, const std::function<Status(Txn*)>& fn) {
    std::unique_ptr<Txn> txn;
    ASSERT_TRUE(store->BeginWrite(&txn).ok());
    Status s = fn(txn.get());
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(txn->Commit().ok());
  }
  uint64_t Digest(Store* store) {
    std::unique_ptr<Txn> txn;
    EXPECT_TRUE(store->BeginRead(&txn).ok());
    uint64_t d = 0;
    EXPECT_TRUE(StateDigest(txn.get(), &d).ok());
    return d;
  }
  testing::TempDir dir_;
};

TEST_F(StateRecordsTest, ADeltaAppliedToTheOldStateMakesTheNewOne) {
  const Records before = {{{0, "format"}, "8"}, {{1, "p1"}, "seq 4"}, {{1, "p2"}, "seq 9"}, {{6, "w1"}, "v1"},
                          {{6, "w3"}, "v1"}, {{7, "w1|1"}, "sealed"}};
  Records after = before;
  after[{1, "p1"}] = "seq 5";  // changed
  after.erase({1, "p2"});      // deleted, before a put in the same table
  after[{1, "p3"}] = "seq 1";  // new
  after.erase({6, "w1"});
  after[{6, "w2"}] = "v1";
  after[{15, "run"}] = std::string(3000, 'x');
  auto from = Make("from", before), to = Make("to", after), copy = Make("copy", before);
  StateRecords delta;
  {
    std::unique_ptr<Txn> a, b;
    ASSERT_TRUE(from->BeginRead(&a).ok());
    ASSERT_TRUE(to->BeginRead(&b).ok());
    ASSERT_TRUE(EncodeStateDelta(a.get(), b.get(), &delta).ok());
  }
  EXPECT_EQ(delta.records, 6u);  // 4 puts, 2 deletes; the unchanged records are not in it
  EXPECT_LT(delta.data.size(), 3100u);
  EXPECT_EQ(delta.digest, Digest(to.get()));
  Apply(copy.get(), [&](Txn* txn) { return ApplyStateRecords(txn, delta.data, delta.records); });
  EXPECT_EQ(testing::AllRecords(copy.get()), after);
  EXPECT_EQ(Digest(copy.get()), Digest(to.get()));
  EXPECT_NE(Digest(from.get()), Digest(to.get()));
}

// The deletes of a delta are found only in tables where the old state
// holds more keys than the new one shares with it; the copy's note in the
// old state is not one of them. A delete after a table's last put, a table
// whose keys all stay (one changed), and a table only added to each come
// out in key order and make the new state.
TEST_F(StateRecordsTest, ADeltaFindsEveryDeleteBesideTheCopysNote) {
  Records before = {{{0, "format"}, "8"},       {{0, std::string(kCheckpointCopyKey)}, "generation 1"},
                    {{1, "p1"}, "seq 4"},       {{1, "p2"}, "seq 9"},
                    {{4, "w1|a"}, "1"},         {{4, "w1|b"}, "2"},
                    {{4, "w1|c"}, "3"}};
  Records after = before;
  after.erase({0, std::string(kCheckpointCopyKey)});
  after[{0, "format"}] = "9";    // kMeta: every key stays but the note
  after.erase({1, "p2"});        // a delete after the table's last put
  after[{1, "p1"}] = "seq 5";
  after.erase({4, "w1|a"});      // a delete before a put
  after[{4, "w1|b"}] = "20";
  after[{6, "w1"}] = "v1";       // a table only added to
  auto from = Make("from", before), to = Make("to", after);
  StateRecords delta;
  {
    std::unique_ptr<Txn> a, b;
    ASSERT_TRUE(from->BeginRead(&a).ok());
    ASSERT_TRUE(to->BeginRead(&b).ok());
    ASSERT_TRUE(EncodeStateDelta(a.get(), b.get(), &delta).ok());
  }
  EXPECT_EQ(delta.records, 6u);  // 4 puts, 2 deletes
  Records without_note = before;
  without_note.erase({0, std::string(kCheckpointCopyKey)});
  auto copy = Make("copy", without_note);
  Apply(copy.get(), [&](Txn* txn) { return ApplyStateRecords(txn, delta.data, delta.records); });
  EXPECT_EQ(testing::AllRecords(copy.get()), after);
  EXPECT_EQ(Digest(copy.get()), delta.digest);
}

TEST_F(StateRecordsTest, ABaseRebuildsTheStateAndTheCopysNoteIsNoRecord) {
  const Records state = {{{0, "format"}, "8"}, {{4, std::string("k\0\xff", 3)}, "agg"}, {{8, "id"}, ""}};
  Records noted = state;
  noted[{0, std::string(kCheckpointCopyKey)}] = "generation 3";
  auto live = Make("live", state), copy = Make("copy", noted), empty = Make("empty", {});
  StateRecords base;
  {
    std::unique_ptr<Txn> txn;
    ASSERT_TRUE(copy->BeginRead(&txn).ok());
    ASSERT_TRUE(EncodeStateBase(txn.get(), &base).ok());
  }
  EXPECT_EQ(base.records, 3u);
  EXPECT_EQ(base.digest, Digest(live.get()));
  EXPECT_EQ(Digest(copy.get()), Digest(live.get()));
  Apply(empty.get(), [&](Txn* txn) { return ApplyStateRecords(txn, base.data, base.records); });
  EXPECT_EQ(testing::AllRecords(empty.get()), state);
}

// A checkpoint's zstd frames hold whole records (StateRecordsCut): cut at
// a limit, pieces end on record boundaries (a record longer than the limit
// alone), and applied piece by piece they make the state; a piece out of
// order with the one before is Corruption.
TEST_F(StateRecordsTest, RecordsCutIntoPiecesMakeTheStatePieceByPiece) {
  Records state;
  for (int i = 0; i < 50; ++i) state[{4, "key" + std::to_string(100 + i)}] = std::string(i == 7 ? 300 : 20, 'v');
  auto live = Make("live", state), empty = Make("empty", {});
  StateRecords base;
  {
    std::unique_ptr<Txn> txn;
    ASSERT_TRUE(live->BeginRead(&txn).ok());
    ASSERT_TRUE(EncodeStateBase(txn.get(), &base).ok());
  }
  std::vector<std::string_view> pieces;
  for (std::string_view rest = base.data; !rest.empty();) {
    const size_t cut = StateRecordsCut(rest, 100);
    ASSERT_GT(cut, 0u);
    EXPECT_TRUE(cut <= 100 || pieces.size() == 3) << "piece " << pieces.size() << " is " << cut << " bytes";
    pieces.push_back(rest.substr(0, cut));
    rest.remove_prefix(cut);
  }
  EXPECT_GT(pieces.size(), 10u);
  EXPECT_EQ(StateRecordsCut(std::string_view(base.data).substr(0, 5), 100), 0u);  // no whole record
  Apply(empty.get(), [&](Txn* txn) {
    StateRecordsApplier applier(txn, base.records);
    for (std::string_view p : pieces) SNAPSINK_RETURN_IF_ERROR(applier.Apply(p));
    return applier.Finish();
  });
  EXPECT_EQ(testing::AllRecords(empty.get()), state);
  std::unique_ptr<Txn> txn;
  ASSERT_TRUE(empty->BeginWrite(&txn).ok());
  StateRecordsApplier applier(txn.get(), base.records);
  ASSERT_TRUE(applier.Apply(pieces[1]).ok());
  Status s = applier.Apply(pieces[0]);
  EXPECT_NE(s.ToString().find("out of key order"), std::string::npos) << s.ToString();
}

TEST_F(StateRecordsTest, RecordsOutOfOrderOrCutShortAreCorruption) {
  auto store = Make("s", {});
  std::unique_ptr<Txn> txn;
  ASSERT_TRUE(store->BeginWrite(&txn).ok());
  const std::string b_then_a = std::string("\x01+\x01" "b\x01" "1", 6) + std::string("\x01+\x01" "a\x01" "1", 6);
  Status s = ApplyStateRecords(txn.get(), b_then_a, 2);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("record 2 of 2: out of key order"), std::string::npos) << s.ToString();
  s = ApplyStateRecords(txn.get(), std::string("\x01+\x05" "ab", 5), 1);
  EXPECT_NE(s.ToString().find("record 1 of 1: its key is cut short"), std::string::npos) << s.ToString();
  s = ApplyStateRecords(txn.get(), std::string("\x10+\x01" "a\x01" "1", 6), 1);
  EXPECT_NE(s.ToString().find("no table 16"), std::string::npos) << s.ToString();
  s = ApplyStateRecords(txn.get(), std::string("\x01+\x01" "a\x01" "1", 6), 2);
  EXPECT_NE(s.ToString().find("1 records, its header says 2"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace snapsink
