// Ingester::Write (engine/ingest_batch.cc): a group of memory batches in one
// transaction, where a batch that stops is left out whole and the others
// get the outcome they would have had one by one, in queue order.
#include <gtest/gtest.h>

#include "engine/env.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/long_key.h"
#include "engine/root.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

class IngestBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RootConfig c;
    c.on_gap = OnGap::kStop;
    ASSERT_STATUS_OK(Root::Init(Env::Default(), dir_ / "root", c));
    ASSERT_STATUS_OK(Root::Open(Env::Default(), dir_ / "root", Root::Access::kWriter, &root_));
  }
  // A request of one record holding `lines`, the strings kept in texts_.
  WriteRequest Request(const std::string& source, const std::string& lines, const std::string& at) {
    texts_.push_back(std::make_unique<std::string>(lines));
    labels_.push_back(std::make_unique<std::string>(at));
    labels_.push_back(std::make_unique<std::string>(source));  // r.source is a view
    WriteRequest r;
    r.source = *labels_.back();
    r.rejects_file = filenames::RejectsFile(root_->path(), source);
    r.records.push_back({texts_.back()->data(), texts_.back()->size(), texts_.back()->size(), *labels_[labels_.size() - 2]});
    return r;
  }
  static std::string Ev(uint64_t seq, const std::string& producer = "p") {
    return EventLine().Producer(producer).Seq(seq).Ts("2026-10-21T10:00:00Z").Line();
  }
  SourceState Source(const std::string& name) {
    std::unique_ptr<Txn> txn;
    EXPECT_STATUS_OK(root_->store()->BeginRead(&txn));
    std::string_view v;
    SourceState s;
    Status st = GetRecord(txn.get(), Table::kSources, name, &v);
    if (st.ok()) {
      EXPECT_STATUS_OK(codec::Decode(v, &s));
    }
    if (!st.IsNotFound()) {
      EXPECT_STATUS_OK(st);
    }
    return s;
  }

  TempDir dir_;
  std::unique_ptr<Root> root_;
  std::vector<std::unique_ptr<std::string>> texts_, labels_;
};

TEST_F(IngestBatchTest, AStoppedBatchIsLeftOutAndTheOthersCommit) {
  Ingester ingester(root_->env(), root_->store(), root_->config());
  WriteRequest a = Request("s", Ev(0) + Ev(1), "a");
  WriteRequest gap = Request("s", Ev(2) + Ev(9), "gap");        // seq 3..8 missing: Gap
  WriteRequest bad = Request("t", Ev(0, "q") + "{\n", "bad");         // bad line under stop
  bad.stop_on_error = true;
  WriteRequest c = Request("s", Ev(2) + Ev(3), "c");             // follows a, as if gap and bad never came
  WriteRequest after_bad = Request("t", Ev(1, "q"), "after_bad");     // would follow bad's seq 0: now a gap
  const std::string pos = "p-c";
  c.position = &pos;
  ASSERT_STATUS_OK(ingester.Write({&a, &gap, &bad, &c, &after_bad}));
  EXPECT_STATUS_OK(a.status);
  EXPECT_EQ(gap.status.code(), Status::Code::kGap) << gap.status.ToString();
  EXPECT_NE(gap.status.message().find("gap:2: producer p epoch 0: seq 3..8 missing"), std::string::npos)
      << gap.status.message();
  EXPECT_EQ(bad.status.code(), Status::Code::kBadInput) << bad.status.ToString();
  EXPECT_NE(bad.status.message().find("bad:2: "), std::string::npos) << bad.status.message();
  EXPECT_STATUS_OK(c.status);
  EXPECT_EQ(after_bad.status.code(), Status::Code::kGap) << after_bad.status.ToString();

  EXPECT_EQ(c.after.applied - c.before.applied, 2u);
  EXPECT_EQ(c.before.applied, 2u);  // a's two events, in the same transaction
  const SourceState s = Source("s");
  EXPECT_EQ(s.lines, 4u);
  EXPECT_EQ(s.applied, 4u);
  ASSERT_TRUE(s.position);
  EXPECT_EQ(*s.position, "p-c");
  ASSERT_TRUE(s.newest_ts_ms);
  EXPECT_EQ(*s.newest_ts_ms, Ms("2026-10-21T10:00:00Z"));
  EXPECT_EQ(Source("t").lines, 0u);

  // The producer went on from seq 4: the batch of seq 4 applies, once.
  WriteRequest d = Request("s", Ev(4) + Ev(3), "d");
  ASSERT_STATUS_OK(ingester.Write({&d}));
  EXPECT_EQ(d.after.applied - d.before.applied, 1u);
  EXPECT_EQ(d.after.duplicates - d.before.duplicates, 1u);
}

}  // namespace
}  // namespace snapsink::testing
