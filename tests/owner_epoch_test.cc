// The owner epoch of a shared source (SPEC 12): raised by a take in one
// LMDB write and checked by every commit in its own transaction
// (WriteBatch::SetOwner); claimed in ROOT so that each epoch goes to one
// process (api::ClaimOwner); and the Kafka partition states built
// on both (utilities/kafka/partition_states.h, partition_writer.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "snapsink/sink.h"
#include "snapsink/utilities/partitions.h"
#include "tests/test_util.h"
#include "utilities/kafka/partition_states.h"
#include "utilities/kafka/partition_writer.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

constexpr int64_t kTs = 1761041703000;  // 2025-10-21T10:15:03Z

std::string Event(const std::string& producer, uint64_t seq) {
  return EventLine().Producer(producer).Seq(seq).Ts(kTs).Metric("orders").Line();
}

uint64_t Applied(api::Sink* sink, const std::string& source) {
  auto sources = sink->Sources();
  EXPECT_STATUS_OK(sources);
  if (!sources.ok()) return 0;
  for (const auto& s : *sources) {
    if (s.source == source) return s.applied;
  }
  return 0;
}

TEST(OwnerEpoch, TakeRaisesItAndACommitAtAnOlderEpochIsRefusedWhole) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_STATUS_OK(api::Sink::Create(root, {}));
  {
    auto sink = api::Sink::Open(root);
    ASSERT_STATUS_OK(sink);
    api::Sink* s = sink->get();
    api::WriteBatch take("kafka:t/0");
    take.SetOwner(1, /*take=*/true);
    ASSERT_STATUS_OK(s->Write(take));
    EXPECT_EQ(*s->OwnerEpoch("kafka:t/0"), 1u);

    api::WriteBatch b("kafka:t/0");
    b.SetOwner(1);
    b.Add(Event("p", 0));
    b.SetPosition("1");
    ASSERT_STATUS_OK(s->Write(b));
    EXPECT_EQ(Applied(s, "kafka:t/0"), 1u);

    api::WriteBatch newer("kafka:t/0");  // another owner takes it
    newer.SetOwner(2, /*take=*/true);
    ASSERT_STATUS_OK(s->Write(newer));

    api::WriteBatch old("kafka:t/0");  // the old owner's next commit
    old.SetOwner(1);
    old.Add(Event("p", 1));
    old.SetPosition("2");
    Status st = s->Write(old);
    EXPECT_EQ(st.code(), Status::Code::kLocked) << st.ToString();
    EXPECT_NE(st.message().find("owner epoch 1 was fenced: it is at owner epoch 2"), std::string::npos) << st.message();
    EXPECT_EQ(Applied(s, "kafka:t/0"), 1u);  // nothing of it
    EXPECT_EQ(**s->Position("kafka:t/0"), "1");

    api::WriteBatch again("kafka:t/0");  // a take must raise the epoch
    again.SetOwner(2, /*take=*/true);
    EXPECT_EQ(s->Write(again).code(), Status::Code::kLocked);

    // A source without an owner is untouched by the others' epochs.
    api::WriteBatch free("file");
    free.Add(Event("q", 0));
    ASSERT_STATUS_OK(s->Write(free));
    EXPECT_EQ(*s->OwnerEpoch("file"), 0u);
  }
  auto sink = api::Sink::Open(root);  // the epoch is durable state
  ASSERT_STATUS_OK(sink);
  EXPECT_EQ(*(*sink)->OwnerEpoch("kafka:t/0"), 2u);
  api::WriteBatch b("kafka:t/0");
  b.SetOwner(2);
  b.Add(Event("p", 1));
  ASSERT_STATUS_OK((*sink)->Write(b));
  EXPECT_EQ(Applied(sink->get(), "kafka:t/0"), 2u);
}

TEST(OwnerEpoch, ConcurrentClaimsEachGetTheirOwnEpochAndTheNewestNamesItsOwner) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_STATUS_OK(api::Sink::Create(root, {}));
  auto ro = api::Sink::OpenReadOnly(root);
  ASSERT_STATUS_OK(ro);
  EXPECT_EQ(api::NewestOwner(**ro, "kafka:t/3")->epoch, 0u);
  constexpr int kThreads = 4, kClaims = 10;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kClaims; ++i) {
        auto e = api::ClaimOwner(**ro, "kafka:t/3", "client-" + std::to_string(t));
        if (e.ok()) got[t].push_back(*e);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (const auto& v : got) all.insert(v.begin(), v.end());
  ASSERT_EQ(all.size(), size_t{kThreads * kClaims});
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), uint64_t{kThreads * kClaims});
  auto newest = api::NewestOwner(**ro, "kafka:t/3");
  ASSERT_STATUS_OK(newest);
  EXPECT_EQ(newest->epoch, uint64_t{kThreads * kClaims});
  int owner = -1;
  for (int t = 0; t < kThreads; ++t) {
    if (std::find(got[t].begin(), got[t].end(), newest->epoch) != got[t].end()) owner = t;
  }
  EXPECT_EQ(newest->who, "client-" + std::to_string(owner));
  // The claims are files verify knows.
  api::VerifyReport report;
  ASSERT_STATUS_OK((*ro)->Verify(&report));
  for (const std::string& w : report.warnings) EXPECT_EQ(w.find("owners"), std::string::npos) << w;
}

// Two processes' partition states over one ROOT (here in one process, each
// with its own --state DIR): the one that lost the partition fails its next
// commit, and taking back a partition that others owned meanwhile starts
// from a fresh state, never from the stale one.
TEST(PartitionStates, ALostPartitionFailsItsNextCommitAndAStaleStateIsRemade) {
  TempDir dir;
  const std::string root = dir / "root";
  ASSERT_STATUS_OK(api::Sink::Create(root, {}));
  auto ro = api::Sink::OpenReadOnly(root);
  ASSERT_STATUS_OK(ro);
  const std::string src = kafka::SourceName("orders", 0);
  kafka::PartitionStates a(ro->get(), dir / "a", "orders", "A");
  kafka::PartitionStates b(ro->get(), dir / "b", "orders", "B");

  ASSERT_STATUS_OK(a.Take(0, src));
  ASSERT_NE(a.Get(0), nullptr);
  EXPECT_EQ(a.Get(0)->epoch, 1u);
  EXPECT_TRUE(a.Get(0)->fresh);
  kafka::PartitionWriter wa(nullptr, "orders", {});
  wa.set_commit_check([&](int32_t p) { return a.Check(p, src); });
  {
    auto& part = wa.Get(0);
    part.sink = a.Get(0)->sink.get();
    part.batch.SetOwner(a.Get(0)->epoch);
    part.committed = 0;
  }
  wa.Add(0, 0, Event("p", 0));
  api::WriteResult sum;
  ASSERT_STATUS_OK(wa.FlushOne(0, &sum));
  EXPECT_EQ(sum.applied, 1u);
  EXPECT_EQ(**a.Get(0)->sink->Position(src), "1");

  ASSERT_STATUS_OK(b.Take(0, src));  // the group gave partition 0 to B
  EXPECT_EQ(b.Get(0)->epoch, 2u);
  EXPECT_TRUE(b.Get(0)->fresh);
  Status fenced = a.Check(0, src);
  EXPECT_EQ(fenced.code(), Status::Code::kLocked);
  EXPECT_NE(fenced.message().find("owner epoch 1 was fenced by epoch 2 (B)"), std::string::npos) << fenced.message();
  wa.Add(0, 1, Event("p", 1));  // A, resumed, tries to commit what it had read
  Status s = wa.FlushOne(0, &sum);
  EXPECT_EQ(s.code(), Status::Code::kLocked) << s.ToString();
  EXPECT_EQ(wa.Get(0).next, 1);  // back at its committed offset
  EXPECT_EQ(**a.Get(0)->sink->Position(src), "1");  // nothing committed
  EXPECT_EQ(Applied(a.Get(0)->sink.get(), src), 1u);

  // B keeps it a while; then A is given it back: A's copy is stale (B
  // committed under epoch 2), so A starts over from a new state.
  a.Drop(0);
  b.Drop(0);
  ASSERT_STATUS_OK(a.Take(0, src));
  EXPECT_EQ(a.Get(0)->epoch, 3u);
  EXPECT_TRUE(a.Get(0)->fresh);
  EXPECT_FALSE(*a.Get(0)->sink->Position(src));
  // ... and when nobody else owned it between, the state goes on as it was.
  api::WriteBatch more(src);
  more.SetOwner(3);
  more.Add(Event("p", 0));
  more.SetPosition("1");
  ASSERT_STATUS_OK(a.Get(0)->sink->Write(more));
  a.Drop(0);
  ASSERT_STATUS_OK(a.Take(0, src));
  EXPECT_EQ(a.Get(0)->epoch, 4u);
  EXPECT_FALSE(a.Get(0)->fresh);
  EXPECT_EQ(**a.Get(0)->sink->Position(src), "1");
  EXPECT_EQ(*a.Get(0)->sink->OwnerEpoch(src), 4u);
}

}  // namespace
}  // namespace snapsink::testing
