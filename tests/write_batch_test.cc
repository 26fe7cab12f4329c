// The write path from memory (include/snapsink/write_batch.h, Sink::Write,
// Sink::Position): all or nothing per batch, positions, rejects with the
// record's `at` label, the accounting identity, dedup shared with file
// ingest, and group commit from many threads.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <atomic>
#include <thread>

#include "snapsink/sink.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

class WriteBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
  }
  void Create(api::GapPolicy gap = api::GapPolicy::kAccept) {
    api::InitOptions o;
    o.on_gap = gap;
    ASSERT_STATUS_OK(api::Sink::Create(root_, o));
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    sink_ = std::move(*sink);
  }
  // The source's row of Sources(); a default one when it has none.
  api::SourceView Source(const std::string& name) {
    auto all = sink_->Sources();
    EXPECT_STATUS_OK(all);
    for (const api::SourceView& s : *all) {
      if (s.source == name) return s;
    }
    return api::SourceView();
  }
  std::string Query() {
    RunResult q = Snapsink({"query", root_, "--format", "json"});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    return q.out;
  }
  static std::string Ev(const std::string& producer, uint64_t seq, const std::string& metric = "m") {
    std::string line = EventLine().Producer(producer).Seq(seq).Ts("2026-10-21T10:00:00Z").Metric(metric).Line();
    line.pop_back();  // a record's last line needs no '\n'
    return line;
  }
  TempDir dir_;
  std::string root_, in_;
  std::unique_ptr<api::Sink> sink_;
};

TEST_F(WriteBatchTest, PositionIsNulloptUntilSetAndSurvivesReopen) {
  Create();
  auto pos = sink_->Position("orders");
  ASSERT_STATUS_OK(pos);
  EXPECT_FALSE(*pos);
  api::WriteBatch b("orders");
  b.Add(Ev("p", 0));
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(r.applied, 1u);
  pos = sink_->Position("orders");
  ASSERT_STATUS_OK(pos);
  EXPECT_FALSE(*pos) << "a batch without SetPosition leaves it unset";

  b.Clear();
  b.Add(Ev("p", 1));
  b.SetPosition(std::string("offset\0 7", 9));
  ASSERT_STATUS_OK(sink_->Write(b));
  // A batch with a position and no records moves it alone.
  api::WriteBatch only("other");
  only.SetPosition("");
  ASSERT_STATUS_OK(sink_->Write(only));
  sink_.reset();
  auto again = api::Sink::Open(root_);
  ASSERT_STATUS_OK(again);
  pos = (*again)->Position("orders");
  ASSERT_STATUS_OK(pos);
  ASSERT_TRUE(*pos);
  EXPECT_EQ(**pos, std::string("offset\0 7", 9));
  pos = (*again)->Position("other");
  ASSERT_STATUS_OK(pos);
  ASSERT_TRUE(*pos);
  EXPECT_EQ(**pos, "");
}

// Under stop_on_error a bad line fails the whole batch: none of its events,
// counters or position commit, and the error names the record and line.
TEST_F(WriteBatchTest, BadLineUnderStopFailsTheWholeBatch) {
  Create();
  api::WriteBatch b("s");
  b.Add(Ev("p", 0) + "\n" + Ev("p", 1), "rec-A");
  b.Add(Ev("p", 2) + "\nnot json\n" + Ev("p", 3), "rec-B");
  b.SetPosition("after-B");
  api::WriteOptions stop;
  stop.stop_on_error = true;
  api::WriteResult r;
  r.applied = 99;
  Status s = sink_->Write(b, stop, &r);
  EXPECT_EQ(s.code(), Status::Code::kBadInput) << s.ToString();
  EXPECT_NE(s.message().find("rec-B:2: "), std::string::npos) << s.message();
  EXPECT_EQ(r.applied, 0u);
  EXPECT_FALSE(*sink_->Position("s"));
  EXPECT_EQ(Source("s").lines, 0u);
  auto producers = sink_->Producers();
  ASSERT_STATUS_OK(producers);
  EXPECT_TRUE(producers->empty());
  EXPECT_FALSE(boost::filesystem::exists(root_ + "/rejects/s.ndjson"));

  // The same events again, without the bad line: all four apply (none was kept).
  api::WriteBatch good("s");
  good.Add(Ev("p", 0) + "\n" + Ev("p", 1) + "\n" + Ev("p", 2) + "\n" + Ev("p", 3) + "\n");
  good.SetPosition("after-B");
  ASSERT_STATUS_OK(sink_->Write(good, stop, &r));
  EXPECT_EQ(r.lines, 4u);
  EXPECT_EQ(r.applied, 4u);
  EXPECT_EQ(**sink_->Position("s"), "after-B");
}

// A commit check (WriteBatch::SetCommitCheck) runs inside the commit, with
// the batch applied: when it fails nothing of the batch commits and Write
// returns its Status; the check sees the batch's effects' transaction still
// open (it runs after them, right before the commit), and a later batch
// whose check passes commits as usual.
TEST_F(WriteBatchTest, FailedCommitCheckCommitsNothingOfTheBatch) {
  Create();
  int calls = 0;
  bool fenced = true;
  api::WriteBatch b("kafka:t/0");
  b.Add(Ev("p", 0) + "\n" + Ev("p", 1));
  b.SetPosition("2");
  b.SetCommitCheck([&]() -> Status {
    ++calls;
    return fenced ? Status::Locked("kafka:t/0: owner epoch 1 was fenced by epoch 2 (B)") : Status::OK();
  });
  api::WriteResult r;
  Status s = sink_->Write(b, {}, &r);
  EXPECT_EQ(s.code(), Status::Code::kLocked) << s.ToString();
  EXPECT_EQ(s.message(), "kafka:t/0: owner epoch 1 was fenced by epoch 2 (B)");
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(*sink_->Position("kafka:t/0"));
  EXPECT_EQ(Source("kafka:t/0").lines, 0u);
  auto producers = sink_->Producers();
  ASSERT_STATUS_OK(producers);
  EXPECT_TRUE(producers->empty());

  // The same batch once the check passes: both events, the position.
  fenced = false;
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(r.applied, 2u);
  EXPECT_EQ(**sink_->Position("kafka:t/0"), "2");
  EXPECT_EQ(Source("kafka:t/0").applied, 2u);
}

// WriteOptions::producer_check: once per producer with seq and batch, after
// its last line, with the epoch and seq range of its events in the batch; a
// failure leaves the batch out whole; OK with a split named goes on and
// records it in the same transaction (GetStatus).
TEST_F(WriteBatchTest, ProducerCheckOncePerProducerAndBatchFailureLeavesTheBatchOut) {
  Create();
  std::vector<std::string> calls;
  Status verdict;
  std::string split;
  api::WriteOptions o;
  o.producer_check = [&](std::string_view source, std::string_view producer, const api::ProducerSeqs& seqs,
                         std::string* out) {
    calls.push_back(std::string(source) + " " + std::string(producer) + " " + std::to_string(seqs.epoch) + ":" +
                    std::to_string(seqs.first) + "-" + std::to_string(seqs.last));
    if (source == "kafka:t/0" || producer != "a") return Status::OK();
    *out = split;  // "a" from a second source
    return verdict;
  };
  api::WriteBatch a("kafka:t/0");
  a.Add(Ev("a", 0) + "\n" + Ev("b", 0) + "\n" + Ev("a", 1));
  a.Add(Ev("a", 2));
  a.Add(R"({"id":"x","ts":"2026-10-21T10:00:00Z","metric":"m"})");  // no seq: not asked
  a.SetPosition("3");
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(a, o, &r));
  EXPECT_EQ(r.applied, 5u);
  EXPECT_EQ(calls, (std::vector<std::string>{"kafka:t/0 a 0:0-2", "kafka:t/0 b 0:0-0"}));

  // Another batch asks again.
  calls.clear();
  api::WriteBatch again("kafka:t/0");
  again.Add(Ev("a", 3));
  ASSERT_STATUS_OK(sink_->Write(again, o, &r));
  EXPECT_EQ(calls, (std::vector<std::string>{"kafka:t/0 a 0:3-3"}));

  // A second source's batch with "a": the check's failure is the batch's.
  calls.clear();
  verdict = Status::Gap("producer a is split over kafka:t/0 and kafka:t/1");
  api::WriteBatch b("kafka:t/1");
  b.Add(Ev("c", 0));
  b.Add(Ev("a", 4));
  b.SetPosition("2");
  Status s = sink_->Write(b, o, &r);
  EXPECT_EQ(s.code(), Status::Code::kGap) << s.ToString();
  EXPECT_EQ(s.message(), "producer a is split over kafka:t/0 and kafka:t/1");
  EXPECT_EQ(calls, (std::vector<std::string>{"kafka:t/1 c 0:0-0", "kafka:t/1 a 0:4-4"}));
  EXPECT_FALSE(*sink_->Position("kafka:t/1"));
  EXPECT_EQ(Source("kafka:t/1").lines, 0u);
  auto status = sink_->GetStatus();
  ASSERT_STATUS_OK(status);
  EXPECT_TRUE(status->split_producers.empty());
  EXPECT_EQ(status->producers, 2u);  // a and b: c's event went with the batch

  // OK with the split named: the batch goes on, the root records it.
  verdict = Status::OK();
  split = "kafka:t/0, kafka:t/1";
  ASSERT_STATUS_OK(sink_->Write(b, o, &r));
  EXPECT_EQ(r.applied, 2u);
  EXPECT_EQ(**sink_->Position("kafka:t/1"), "2");
  status = sink_->GetStatus();
  ASSERT_STATUS_OK(status);
  ASSERT_EQ(status->split_producers.size(), 1u);
  EXPECT_EQ(status->split_producers[0].producer, "a");
  EXPECT_EQ(status->split_producers[0].sources, "kafka:t/0, kafka:t/1");
}

TEST_F(WriteBatchTest, GapUnderStopFailsTheWholeBatch) {
  Create(api::GapPolicy::kStop);
  api::WriteBatch b("s");
  b.Add(Ev("p", 0));
  b.Add(Ev("p", 1));
  b.Add(Ev("p", 3), "kafka:t/0@12");
  b.SetPosition("13");
  Status s = sink_->Write(b);
  EXPECT_EQ(s.code(), Status::Code::kGap) << s.ToString();
  EXPECT_NE(s.message().find("kafka:t/0@12:1: producer p epoch 0: seq 2 missing"), std::string::npos)
      << s.message();
  EXPECT_FALSE(*sink_->Position("s"));
  EXPECT_EQ(Source("s").lines, 0u);
  auto windows = sink_->Windows();
  ASSERT_STATUS_OK(windows);
  EXPECT_TRUE(windows->empty());

  api::WriteBatch fixed("s");
  for (uint64_t i = 0; i < 4; ++i) fixed.Add(Ev("p", i));
  fixed.SetPosition("13");
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(fixed, {}, &r));
  EXPECT_EQ(r.applied, 4u);
}

// A rejected line of a record is kept with the record's `at` label and its
// line within the record; without a label, "SOURCE@INDEX".
TEST_F(WriteBatchTest, RejectsCarryTheAtLabelAndLineInRecord) {
  Create();
  api::WriteBatch b("src");
  b.Add(Ev("p", 0) + "\n{\"producer\":\"p\"}\n", "kafka:orders/3@1042");
  b.Add("oops");
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(r.lines, 3u);
  EXPECT_EQ(r.applied, 1u);
  EXPECT_EQ(r.rejected, 2u);
  const std::string rejects = ReadFile(root_ + "/rejects/src.ndjson");
  EXPECT_NE(rejects.find("{\"source\":\"src\",\"at\":\"kafka:orders/3@1042\",\"line\":2,\"reason\":"),
            std::string::npos)
      << rejects;
  EXPECT_NE(rejects.find("\"raw\":\"{\\\"producer\\\":\\\"p\\\"}\"}\n"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("{\"source\":\"src\",\"at\":\"src@1\",\"line\":1,\"reason\":"), std::string::npos)
      << rejects;
  EXPECT_EQ(rejects.find("\"offset\""), std::string::npos) << rejects;
}

// A batch's records lie back to back in one buffer: each is parsed as its
// own bytes (a record cut short is not completed by the next one, a line
// does not run on into it), its label is its own, and the views of
// record_list() hold what was added, with the parser's padding readable,
// however many Adds grew the buffer.
TEST_F(WriteBatchTest, RecordsBackToBackAreEachTheirOwn) {
  Create();
  api::WriteBatch b("src");
  const std::string whole = Ev("p", 0);
  b.Add(whole.substr(0, whole.size() - 1), "cut");  // its '}' is the next record's first byte
  b.Add("}" + Ev("p", 1).substr(1), "brace");       // starts with '}': rejected
  for (uint64_t i = 2; i < 3000; ++i) b.Add(Ev("p", i), "r" + std::to_string(i));
  b.Add("", "empty");                               // one empty line, between two records
  b.Add(Ev("p", 3000));
  const auto list = b.record_list();
  ASSERT_EQ(list.size(), 3002u);
  EXPECT_EQ(list[0].data, whole.substr(0, whole.size() - 1));
  EXPECT_EQ(list[0].at, "cut");
  EXPECT_EQ(list[1700].data, Ev("p", 1700));
  EXPECT_EQ(list[1700].at, "r1700");
  EXPECT_EQ(list[3000].data, "");
  EXPECT_EQ(list[3001].at, "");
  for (const api::WriteBatch::Record& rec : list) ASSERT_GE(rec.readable, rec.data.size() + 64);
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(r.lines, 3002u);
  EXPECT_EQ(r.applied, 2999u);  // seq 2..3000
  EXPECT_EQ(r.rejected, 3u);
  const std::string rejects = ReadFile(root_ + "/rejects/src.ndjson");
  for (const char* at : {"\"at\":\"cut\"", "\"at\":\"brace\"", "\"at\":\"empty\""}) {
    EXPECT_NE(rejects.find(at), std::string::npos) << at << "\n" << rejects;
  }
  b.Clear();
  EXPECT_EQ(b.records(), 0u);
  EXPECT_TRUE(b.record_list().empty());
}

TEST_F(WriteBatchTest, AccountingIdentityHoldsPerBatchAndPerSource) {
  Create();
  api::WriteBatch b("s");
  b.Add(Ev("p", 0) + "\n" + Ev("p", 1) + "\n" + Ev("p", 1));  // applied, applied, duplicate
  b.Add(EventLine().Producer("p").Epoch(1).Seq(0).Ts("2026-10-21T10:00:00Z").Line());  // new epoch
  b.Add(Ev("p", 5));      // fenced: epoch 0 is behind
  b.Add("[1,2]");         // rejected
  b.Add("\n");            // one empty line: rejected
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(r.lines, 7u);
  EXPECT_EQ(r.applied, 3u);
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(r.fenced, 1u);
  EXPECT_EQ(r.rejected, 2u);
  EXPECT_EQ(r.lines, r.applied + r.duplicates + r.fenced + r.rejected + r.ignored);
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));  // again: epoch 0 is fenced now, epoch 1's seq 0 a duplicate
  EXPECT_EQ(r.applied, 0u);
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(r.fenced, 4u);
  EXPECT_EQ(r.rejected, 2u);
  const api::SourceView v = Source("s");
  EXPECT_EQ(v.lines, 14u);
  EXPECT_EQ(v.lines, v.applied + v.duplicates + v.fenced + v.rejected + v.ignored);
}

// One producer's sequence is one sequence, whichever path its events take.
TEST_F(WriteBatchTest, DedupSpansBatchesAndFileIngest) {
  Create();
  std::string file;
  for (uint64_t i = 0; i < 5; ++i) file += Ev("p", i) + "\n";
  WriteFile(in_, file);
  api::IngestOptions o;
  o.files = {in_};
  ASSERT_STATUS_OK(sink_->Ingest(o));
  api::WriteBatch b("mem");
  for (uint64_t i = 3; i < 8; ++i) b.Add(Ev("p", i));
  api::WriteResult r;
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(r.duplicates, 2u);
  EXPECT_EQ(r.applied, 3u);
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));  // the same batch again
  EXPECT_EQ(r.duplicates, 5u);
  EXPECT_EQ(r.applied, 0u);
  // And back: the file now gets seq 0..9; only 8 and 9 are new.
  for (uint64_t i = 5; i < 10; ++i) file += Ev("p", i) + "\n";
  WriteFile(dir_ / "more.ndjson", file);
  o.files = {dir_ / "more.ndjson"};
  api::IngestResult ir;
  ASSERT_STATUS_OK(sink_->Ingest(o, &ir));
  EXPECT_EQ(ir.this_run[0].applied, 2u);
  EXPECT_EQ(ir.this_run[0].duplicates, 8u);
  // A batch after the file ingest sees its effects (the write path's caches
  // are reloaded when another transaction committed in between).
  b.Clear();
  b.Add(Ev("p", 9));
  b.Add(Ev("p", 10));
  ASSERT_STATUS_OK(sink_->Write(b, {}, &r));
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(r.applied, 1u);
}

// 8 threads, one event per Write: every caller gets its own outcome, and
// the totals are those of the calls one by one, however they were grouped.
TEST_F(WriteBatchTest, GroupCommitFromEightThreads) {
  Create(api::GapPolicy::kStop);
  constexpr int kThreads = 8, kPerThread = 150;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string producer = "p" + std::to_string(t);
      uint64_t seq = 0;
      for (int i = 0; i < kPerThread; ++i) {
        api::WriteBatch b("thread" + std::to_string(t));
        api::WriteOptions o;
        // Every 10th call is bad (a bad line under stop, or a gap): it must
        // fail alone, leaving no trace, whatever group it shares.
        const bool bad = i % 10 == 9;
        if (bad && t % 2 == 0) {
          b.Add(Ev(producer, seq) + "\n{bad", "bad-" + std::to_string(t));
          o.stop_on_error = true;
        } else if (bad) {
          b.Add(Ev(producer, seq + 1));  // skips seq: a gap under --on-gap stop
        } else {
          b.Add(Ev(producer, seq, "m" + std::to_string(i % 3)));
        }
        b.SetPosition(std::to_string(i));
        api::WriteResult r;
        Status s = sink_->Write(b, o, &r);
        if (bad) {
          const auto want = t % 2 == 0 ? Status::Code::kBadInput : Status::Code::kGap;
          if (s.code() != want || r.lines != 0) ++wrong;
        } else {
          if (!s.ok() || r.applied != 1 || r.lines != 1) ++wrong;
          ++seq;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const uint64_t good = kPerThread - kPerThread / 10;
  for (int t = 0; t < kThreads; ++t) {
    const api::SourceView v = Source("thread" + std::to_string(t));
    EXPECT_EQ(v.applied, good) << t;
    EXPECT_EQ(v.lines, good) << t;
    auto pos = sink_->Position("thread" + std::to_string(t));
    ASSERT_STATUS_OK(pos);
    EXPECT_EQ(**pos, std::to_string(kPerThread - 2)) << t;  // the last call (149) is bad: 148's
  }
  auto producers = sink_->Producers();
  ASSERT_STATUS_OK(producers);
  ASSERT_EQ(producers->size(), static_cast<size_t>(kThreads));
  for (const api::ProducerInfo& p : *producers) EXPECT_EQ(p.next_seq, good) << p.producer;
  auto windows = sink_->Windows();
  ASSERT_STATUS_OK(windows);
  ASSERT_EQ(windows->size(), 1u);
  EXPECT_EQ((*windows)[0].events, static_cast<int64_t>(kThreads * good));
}

}  // namespace
}  // namespace snapsink::testing
