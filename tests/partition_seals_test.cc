// The merged publish of a topic's partitions (SPEC 12, partitions/partition_seals.h):
// seal records in ROOT, the zombie fence on them, the k-way merge and its
// reconciliation, and two publishers at once. Each partition's state is a
// root of its own, driven through the public API as `run --kafka --state` does.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "engine/env.h"
#include "engine/filenames.h"
#include "partitions/partition_seals.h"
#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

// Seal options: every window with changes, closed or not (seal --all).
api::SealOptions AllWindows() {
  api::SealOptions o;
  o.all = true;
  return o;
}

constexpr int64_t kT0 = 1761040800000;  // 2025-10-21T10:00:00Z

// A topic whose partitions each have their own state under dir/state/<p>
// and one ROOT at dir/root that all share.
class Topic {
 public:
  Topic(const std::string& dir, int partitions) : dir_(dir), n_(partitions) {
    EXPECT_STATUS_OK(api::Sink::Create(root(), {}));
    lines_.resize(partitions);
  }
  std::string root() const { return dir_ + "/root"; }
  std::string state(int p) const { return dir_ + "/state/" + std::to_string(p); }
  std::string Source(int p) const { return "kafka:t/" + std::to_string(p); }

  // The events of partition p: producer "p<p>", keys shared across partitions.
  void Produce(int p, int events, int64_t first_ts) {
    for (int i = 0; i < events; ++i) {
      const uint64_t seq = lines_[p].size();
      lines_[p].push_back(EventLine()
                              .Producer("p" + std::to_string(p))
                              .Seq(seq)
                              .Ts(first_ts + i * 61000)
                              .Metric(i % 3 ? "orders" : "refunds")
                              .Key("k" + std::to_string(i % 7))
                              .Value(std::to_string(p + 1) + "." + std::to_string(i % 10))
                              .Line());
    }
  }
  // One event of `producer` at seq to partition p.
  void Add(int p, const std::string& producer, uint64_t seq, int64_t ts) {
    lines_[p].push_back(EventLine().Producer(producer).Seq(seq).Ts(ts).Metric("m").Key("k").Value("1").Line());
  }
  // Every line of every partition, partition after partition (SPEC 12).
  std::string AllLines() const {
    std::string all;
    for (const auto& ls : lines_) {
      for (const auto& l : ls) all += l;
    }
    return all;
  }

  // Opens (or reopens) partition p's state and takes it at a new epoch.
  Status Take(api::ReadOnlySink* ro, int p, const std::string& who, std::unique_ptr<api::Sink>* out, uint64_t* epoch) {
    if (!std::filesystem::exists(state(p) + "/state")) {
      std::filesystem::create_directories(dir_ + "/state");
      SNAPSINK_RETURN_IF_ERROR(api::Sink::Create(state(p), {}));
    }
    SNAPSINK_ASSIGN_OR_RETURN(*out, api::Sink::Open(state(p)));
    SNAPSINK_ASSIGN_OR_RETURN(*epoch, api::ClaimOwner(*ro, Source(p), who));
    api::WriteBatch take(Source(p));
    take.SetOwner(*epoch, true);
    return (*out)->Write(take);
  }
  // Writes partition p's lines [from, to) at epoch, position to.
  Status Write(api::Sink* s, int p, uint64_t epoch, size_t from, size_t to) {
    api::WriteBatch b(Source(p));
    b.SetOwner(epoch);
    for (size_t i = from; i < to; ++i) b.Add(lines_[p][i]);
    b.SetPosition(std::to_string(to));
    return s->Write(b);
  }
  size_t size(int p) const { return lines_[p].size(); }
  int partitions() const { return n_; }

 private:
  std::string dir_;
  int n_;
  std::vector<std::vector<std::string>> lines_;
};

// Every published row of root, without the version and generation (which
// count publishes, not rows).
std::string Rows(const std::string& root) {
  RunResult r = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return std::regex_replace(r.out, std::regex(",\"version\":[0-9]+,\"generation\":[0-9]+"), "");
}

// What `run --final` publishes over the same events from one file.
std::string FileRows(const std::string& dir, const std::string& lines) {
  const std::string root = dir + "/file-root";
  std::ofstream(dir + "/all.ndjson") << lines;
  RunResult r = Snapsink({"init", root});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Snapsink({"run", root, dir + "/all.ndjson", "--final", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Rows(root);
}

// Writes all of p's lines, seals every window and records the round at its end.
void SealAll(Topic& t, api::ReadOnlySink* ro, int p, const std::string& who) {
  std::unique_ptr<api::Sink> s;
  uint64_t epoch = 0;
  ASSERT_STATUS_OK(t.Take(ro, p, who, &s, &epoch));
  ASSERT_STATUS_OK(t.Write(s.get(), p, epoch, 0, t.size(p)));
  ASSERT_STATUS_OK(s->Seal(AllWindows()));
  const int64_t end = static_cast<int64_t>(t.size(p));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(*ro, *s, {"t", p, epoch, end, end}));
}

TEST(MergedPublish, RowsEqualOneRootOverTheSameEventsAndAPartitionMissingHoldsEverything) {
  TempDir dir;
  Topic t(dir.path(), 3);
  for (int p = 0; p < 3; ++p) t.Produce(p, 300, kT0 + p * 1000);
  auto ro = api::Sink::OpenReadOnly(t.root());
  ASSERT_STATUS_OK(ro);
  SealAll(t, ro->get(), 0, "A");
  SealAll(t, ro->get(), 1, "A");
  // Partition 2 has recorded nothing: no window can be published.
  auto r = api::PublishMerged(**ro, "t", 3);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 0u);
  EXPECT_EQ(r->missing, std::vector<int32_t>{2});
  SealAll(t, ro->get(), 2, "B");
  r = api::PublishMerged(**ro, "t", 3);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 1u);
  EXPECT_EQ(r->windows.size(), 6u);  // 300 events a minute apart: 6 hours
  const std::string merged = Rows(t.root());
  ASSERT_FALSE(merged.empty());
  EXPECT_EQ(merged, FileRows(dir.path(), t.AllLines()));
  // Nothing changed: a second publish publishes nothing.
  r = api::PublishMerged(**ro, "t", 3);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 0u);
  RunResult v = Snapsink({"verify", t.root()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.err.find("unknown file"), std::string::npos) << v.err;
  EXPECT_EQ(v.out.find("unknown file"), std::string::npos) << v.out;
}

TEST(MergedPublish, AnOpenWindowWaitsUntilEveryPartitionIsPastItAndALateEventMakesANewVersion) {
  TempDir dir;
  Topic t(dir.path(), 2);
  t.Produce(0, 120, kT0);           // 10:00 .. 11:59
  t.Produce(1, 60, kT0);            // 10:00 .. 10:59
  t.Produce(1, 120, kT0 + 3 * kHour);  // then 13:00 .. 14:59
  auto ro = api::Sink::OpenReadOnly(t.root());
  ASSERT_STATUS_OK(ro);
  std::unique_ptr<api::Sink> s0, s1;
  uint64_t e0 = 0, e1 = 0;
  ASSERT_STATUS_OK(t.Take(ro->get(), 0, "A", &s0, &e0));
  ASSERT_STATUS_OK(t.Take(ro->get(), 1, "A", &s1, &e1));
  // Partition 0 has read its first 60 events and the topic holds more: 10:00
  // is open there (lateness is one window), nothing is past it.
  ASSERT_STATUS_OK(t.Write(s0.get(), 0, e0, 0, 60));
  ASSERT_STATUS_OK(s0->Seal({}));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(**ro, *s0, {"t", 0, e0, 60, 120}));
  ASSERT_STATUS_OK(t.Write(s1.get(), 1, e1, 0, 180));
  ASSERT_STATUS_OK(s1->Seal({}));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(**ro, *s1, {"t", 1, e1, 180, 180}));
  auto r = api::PublishMerged(**ro, "t", 2);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 0u);
  // Partition 0 reads on: its watermark passes 10:00's end, which publishes;
  // and now that it is idle at its high watermark it is past 13:00 too
  // (which partition 1 has closed), but not 11:00 and 12:00 (open in it).
  ASSERT_STATUS_OK(t.Write(s0.get(), 0, e0, 60, 120));
  ASSERT_STATUS_OK(s0->Seal({}));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(**ro, *s0, {"t", 0, e0, 120, 120}));
  r = api::PublishMerged(**ro, "t", 2);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 1u);
  EXPECT_EQ(r->windows, (std::vector<int64_t>{kT0, kT0 + 3 * kHour}));
  // A late event for 10:00 in partition 0: its new seal is a new merged version.
  t.Produce(0, 1, kT0 + 5000);
  ASSERT_STATUS_OK(t.Write(s0.get(), 0, e0, 120, 121));
  ASSERT_STATUS_OK(s0->Seal(AllWindows()));
  ASSERT_STATUS_OK(s1->Seal(AllWindows()));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(**ro, *s0, {"t", 0, e0, 121, 121}));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(**ro, *s1, {"t", 1, e1, 180, 180}));
  r = api::PublishMerged(**ro, "t", 2);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 2u);
  RunResult q = Snapsink({"query", t.root(), "--window", "2025-10-21T10:00:00Z", "--format", "json"});
  EXPECT_NE(q.out.find("\"version\":2"), std::string::npos) << q.out;
  EXPECT_EQ(Rows(t.root()), FileRows(dir.path(), t.AllLines()));
}

TEST(MergedPublish, AZombiesSealIsRefusedNamingTheNewerOwner) {
  TempDir dir;
  Topic t(dir.path(), 1);
  t.Produce(0, 120, kT0);
  auto ro = api::Sink::OpenReadOnly(t.root());
  ASSERT_STATUS_OK(ro);
  std::unique_ptr<api::Sink> a;
  uint64_t ea = 0;
  ASSERT_STATUS_OK(t.Take(ro->get(), 0, "A host-a 11", &a, &ea));
  ASSERT_STATUS_OK(t.Write(a.get(), 0, ea, 0, 120));
  // B takes the partition (A was stopped past its session timeout) ...
  auto eb = api::ClaimOwner(**ro, t.Source(0), "B host-b 22");
  ASSERT_STATUS_OK(eb);
  // ... and A, resumed, seals and tries to record.
  ASSERT_STATUS_OK(a->Seal(AllWindows()));
  auto rec = api::RecordPartitionSeals(**ro, *a, {"t", 0, ea, 120, 120});
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), Status::Code::kLocked);
  EXPECT_NE(rec.status().message().find("kafka:t/0: seal of window 2025-10-21T10:00:00Z v1 (and 2 more) from owner "
                                        "epoch 1 refused: the partition's newest owner is epoch 2 (B host-b 22)"),
            std::string::npos)
      << rec.status().message();
  // Nothing of it is in ROOT: no record, no progress, nothing to publish.
  std::error_code ec;
  const std::string seals = filenames::PartitionSealsDir(t.root(), t.Source(0));
  EXPECT_TRUE(std::filesystem::is_empty(seals, ec)) << seals;
  EXPECT_FALSE(std::filesystem::exists(filenames::PartitionProgressFile(t.root(), t.Source(0))));
  auto r = api::PublishMerged(**ro, "t", 1);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(r->generation, 0u);
  // Its seals stay staged in its state: a retry is refused again.
  rec = api::RecordPartitionSeals(**ro, *a, {"t", 0, ea, 120, 120});
  EXPECT_EQ(rec.status().code(), Status::Code::kLocked);
}

TEST(MergedPublish, OffsetsThatDoNotFollowTheAcceptedOnesAreRefused) {
  TempDir dir;
  Topic t(dir.path(), 1);
  t.Produce(0, 120, kT0);
  auto ro = api::Sink::OpenReadOnly(t.root());
  ASSERT_STATUS_OK(ro);
  std::unique_ptr<api::Sink> a;
  uint64_t ea = 0;
  ASSERT_STATUS_OK(t.Take(ro->get(), 0, "A", &a, &ea));
  ASSERT_STATUS_OK(t.Write(a.get(), 0, ea, 0, 60));
  ASSERT_STATUS_OK(api::RecordPartitionSeals(**ro, *a, {"t", 0, ea, 60, 120}));
  // Progress that names an end past this state's: as if another round of
  // this epoch had been recorded that the state does not know.
  PartitionProgress p;
  ASSERT_STATUS_OK(ReadPartitionProgress(Env::Default(), t.root(), t.Source(0), &p));
  p.position = 90;
  ASSERT_STATUS_OK(WriteFileAtomic(Env::Default(), filenames::PartitionProgressFile(t.root(), t.Source(0)), p.Encode()));
  ASSERT_STATUS_OK(t.Write(a.get(), 0, ea, 60, 120));
  auto rec = api::RecordPartitionSeals(**ro, *a, {"t", 0, ea, 120, 120});
  EXPECT_EQ(rec.status().code(), Status::Code::kLocked);
  EXPECT_NE(rec.status().message().find("offsets 60..120 do not follow the accepted ones (which end at 90, epoch 1)"),
            std::string::npos)
      << rec.status().message();
}

TEST(MergedPublish, TwoProcessesPublishingAtOnceMakeOneGeneration) {
  TempDir dir;
  Topic t(dir.path(), 4);
  for (int p = 0; p < 4; ++p) t.Produce(p, 2000, kT0 + p);
  {
    auto ro = api::Sink::OpenReadOnly(t.root());
    ASSERT_STATUS_OK(ro);
    for (int p = 0; p < 4; ++p) SealAll(t, ro->get(), p, "A");
  }  // no handle open across fork
  std::vector<pid_t> kids;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 1) _exit(3);  // both start at the same moment
      auto ro = api::Sink::OpenReadOnly(t.root());
      if (!ro.ok()) _exit(4);
      auto r = api::PublishMerged(**ro, "t", 4);
      if (!r.ok()) _exit(5);
      _exit(r->generation == 0 ? 10 : 11);  // 11: this one made the generation
    }
    kids.push_back(pid);
  }
  close(go[0]);
  ASSERT_EQ(write(go[1], "gg", 2), 2);
  close(go[1]);
  std::vector<int> codes;
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(k, &status, 0), k);
    ASSERT_TRUE(WIFEXITED(status));
    codes.push_back(WEXITSTATUS(status));
  }
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<int>{10, 11}));  // exactly one made it; the other changed nothing
  EXPECT_EQ(CurrentGeneration(t.root()), 1u);
  EXPECT_FALSE(std::filesystem::exists(t.root() + "/manifests/2"));
  EXPECT_EQ(Rows(t.root()), FileRows(dir.path(), t.AllLines()));
}

// One root, one kind of source: rows that came into ROOT another way (a
// file written into it while partitions were being merged), or a second
// topic's claims, make the merged publish refuse, naming them, rather than
// replace their windows; what ROOT published stays.
TEST(MergedPublish, ARootFedAnotherWayOrByAnotherTopicIsRefusedNamingIt) {
  TempDir dir;
  Topic t(dir.path(), 2);
  for (int p = 0; p < 2; ++p) t.Produce(p, 120, kT0 + p * 1000);
  auto ro = api::Sink::OpenReadOnly(t.root());
  ASSERT_STATUS_OK(ro);
  SealAll(t, ro->get(), 0, "A");
  SealAll(t, ro->get(), 1, "A");
  auto r = api::PublishMerged(**ro, "t", 2);
  ASSERT_STATUS_OK(r);
  ASSERT_EQ(r->generation, 1u);
  const std::string before = Rows(t.root());
  ASSERT_FALSE(before.empty());
  EXPECT_STATUS_OK(api::CheckOneKindOfSource(**ro, "t"));
  {
    auto w = api::Sink::Open(t.root());
    ASSERT_STATUS_OK(w);
    api::WriteBatch b("a.ndjson");
    b.Add(EventLine().Producer("f").Seq(0).Ts(kT0).Metric("orders").Key("k1").Value("1").Line());
    ASSERT_STATUS_OK((*w)->Write(b));
  }
  r = api::PublishMerged(**ro, "t", 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("already takes rows from its own sources a.ndjson; a merged publish of topic t"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(Rows(t.root()), before);

  TempDir dir2;
  Topic t2(dir2.path(), 1);
  t2.Produce(0, 30, kT0);
  auto ro2 = api::Sink::OpenReadOnly(t2.root());
  ASSERT_STATUS_OK(ro2);
  SealAll(t2, ro2->get(), 0, "A");
  ASSERT_STATUS_OK(api::ClaimOwner(**ro2, "kafka:u/3", "B"));
  r = api::PublishMerged(**ro2, "t", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("already takes rows from topic u (1 partition through run --kafka --state)"),
            std::string::npos)
      << r.status().message();
  // Writing into ROOT itself is refused the other way round.
  Status own = api::CheckOneKindOfSource(**ro2, "");
  EXPECT_EQ(own.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(own.message().find("publishes the merged partitions of topic t (1 partition"), std::string::npos)
      << own.message();
}

TEST(MergedPublish, SealRecordAndProgressFormatsRoundTripAndAFlippedByteIsCorruption) {
  PartitionSealRecord r;
  r.topic = std::string("t\xff\x01", 3);
  r.partition = 7;
  r.epoch = 3;
  r.window_ms = kT0;
  r.version = 2;
  r.from = 10;
  r.to = 20;
  r.rows = 5;
  r.ledger = {{"a\"b", {3, 1500000, 4}}, {"z", {-1, -2, 1}}};
  r.data_bytes = 99;
  r.data_xxh64 = 0x0123456789abcdefULL;
  const std::string text = r.Encode();
  PartitionSealRecord back;
  ASSERT_STATUS_OK(PartitionSealRecord::Decode(text, "seal.json", &back));
  EXPECT_EQ(back, r);
  std::string bad = text;
  bad[bad.find("\"to\":20") + 5] = '3';
  EXPECT_EQ(PartitionSealRecord::Decode(bad, "seal.json", &back).code(), Status::Code::kCorruption);

  PartitionProgress p;
  p.topic = "t";
  p.partition = 1;
  p.epoch = 2;
  p.position = 40;
  p.high_watermark = 50;
  p.max_event_ts = kT0;
  p.unsealed = {kT0};
  p.seals = {{kT0 - kHour, 1, 2, 30}, {kT0, 3, 1, 12}};
  PartitionProgress pb;
  ASSERT_STATUS_OK(PartitionProgress::Decode(p.Encode(), "progress", &pb));
  EXPECT_EQ(pb, p);
  EXPECT_FALSE(pb.Past(kT0, kHour, kHour));          // unsealed changes
  EXPECT_FALSE(pb.Past(kT0 - kHour, kHour, kHour));  // watermark at 9:00: 9:00 not closed, not at its end
  pb.position = 50;
  EXPECT_TRUE(pb.Past(kT0 - kHour, kHour, kHour));  // idle at its high watermark
}

// Each recorded round lists its state's producers with the range of seqs
// their epoch applied (first: past an open gap from 0, spilled or not), and
// only producers whose ranges on two partitions overlap are a split: a key
// that moved (all of its seqs on partition 1 above those on 0) is not.
TEST(MergedPublish, ProducersListsHoldTheAppliedSeqRangesAndOnlyOverlappingRangesAreASplit) {
  TempDir dir;
  Topic t(dir.path(), 2);
  for (uint64_t seq = 0; seq < 10; ++seq) t.Add(seq < 5 ? 0 : 1, "moved", seq, kT0 + 1000 * seq);
  // Round robin, enough gaps on each partition that the lowest ones spill.
  for (uint64_t seq = 0; seq < 2100; ++seq) t.Add(seq % 2, "rr", seq, kT0 + static_cast<int64_t>(seq));
  auto ro = api::Sink::OpenReadOnly(t.root());
  ASSERT_STATUS_OK(ro);
  SealAll(t, ro->get(), 0, "A");
  SealAll(t, ro->get(), 1, "B");
  using P = PartitionProducers::Producer;
  PartitionProducers l0, l1;
  ASSERT_STATUS_OK(ReadPartitionProducers(Env::Default(), t.root(), t.Source(0), &l0));
  ASSERT_STATUS_OK(ReadPartitionProducers(Env::Default(), t.root(), t.Source(1), &l1));
  EXPECT_EQ(l0.producers, (std::vector<P>{{"moved", 0, 0, 4}, {"rr", 0, 0, 2098}}));
  EXPECT_EQ(l1.producers, (std::vector<P>{{"moved", 0, 5, 9}, {"rr", 0, 1, 2099}}));
  PartitionProducers back;
  ASSERT_STATUS_OK(PartitionProducers::Decode(l1.Encode(), "producers", &back));
  EXPECT_EQ(back, l1);
  std::string bad = l1.Encode();
  bad[bad.find("\"first\":5") + 8] = '7';  // a changed byte: the checksum no longer matches
  EXPECT_EQ(PartitionProducers::Decode(bad, "producers", &back).code(), Status::Code::kCorruption);

  // Unset: the publish stops, Gap naming the producer and both partitions.
  auto stopped = api::PublishMerged(**ro, "t", 2);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), Status::Code::kGap);
  EXPECT_NE(stopped.status().message().find(R"(producer "rr" is split over kafka:t/0 and kafka:t/1)"),
            std::string::npos)
      << stopped.status().message();
  RunResult q = Snapsink({"query", t.root()});
  EXPECT_NE(q.err.find("nothing is published"), std::string::npos) << q.out << q.err;

  std::vector<std::string> found;
  api::MergedPublishOptions o;
  o.on_split_producer = [&](const std::string& producer, const std::vector<std::string>& sources) {
    found.push_back(producer + " " + sources.at(0) + " " + sources.at(1) + " " + std::to_string(sources.size()));
    return Status::OK();
  };
  auto r = api::PublishMerged(**ro, "t", 2, o);
  ASSERT_STATUS_OK(r);
  EXPECT_EQ(found, std::vector<std::string>{"rr kafka:t/0 kafka:t/1 2"});
  EXPECT_GT(r->generation, 0u);
}

}  // namespace
}  // namespace snapsink::testing
