// Producer retention (engine/producer_retention.h), through the binary: a
// producer idle past the retention is retired to a tombstone; it comes back
// afresh only at a higher epoch, and its events at the same or a lower epoch
// are rejected, never guessed. Also gc --producers-idle.
#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/producer_retention.h"
#include "engine/root.h"
#include "engine/store.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {


std::string Ev(const std::string& producer, uint32_t epoch, uint64_t seq, int64_t ts) {
  return EventLine().Producer(producer).Epoch(epoch).Seq(seq).Ts(ts).Line();
}

std::string Inspect(const std::string& root, const std::string& what) {
  RunResult r = Snapsink({"inspect", root, what, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string Producer(const std::string& id, uint32_t epoch, uint64_t next, const std::string& last_seen,
                     bool retired) {
  return "{\"producer\":\"" + id + "\",\"epoch\":" + std::to_string(epoch) + ",\"next_seq\":" + std::to_string(next) +
         ",\"open_gaps\":0,\"last_seen\":\"" + last_seen + "\",\"retired\":" + (retired ? "true" : "false") + "}\n";
}

// Retention 2h, lateness 1h: p is last heard at 10:00; once q is at 15:00 the
// watermark is 14:00 and the cutoff 12:00, so p is retired. The outcome must
// not depend on where batches end (lazy retirement on touch, sweep at commit).
class ProducerRetentionTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ProducerRetentionTest, ComesBackOnlyAtAHigherEpoch) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root, "--producer-retention", "2h"}).exit_code, 0);
  const int64_t t5 = kBase + 5 * kHour;
  WriteFile(in, Ev("r", 0, 0, kBase) +  // never heard again: retired by the sweep at a commit
                    Ev("p", 2, 0, kBase) + Ev("p", 2, 1, kBase) + Ev("p", 2, 3, kBase) +  // a gap at 2
                    Ev("q", 0, 0, t5) +
                    Ev("q", 0, 1, t5 + kHour) +  // q's jump confirmed (engine/watermark.h: its own clock a reach on, none between)
                    Ev("p", 2, 4, t5));  // p is retired by now, in the same batch or not: rejected
  ASSERT_EQ(Snapsink({"ingest", root, in, "--commit-every", GetParam(), "--quiet"}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 2, 0, "2026-10-21T10:00:00Z", true) +
                                            Producer("q", 0, 2, "2026-10-21T16:00:00Z", false) +
                                            Producer("r", 0, 0, "2026-10-21T10:00:00Z", true));
  EXPECT_EQ(Inspect(root, "gaps"), "");

  AppendFile(in, Ev("p", 2, 2, t5) +   // the gap's seq at the same epoch: rejected, not applied
                     Ev("p", 2, 4, t5) +   // same epoch: rejected
                     Ev("p", 1, 9, t5) +   // lower epoch: rejected (not fenced: the engine forgot)
                     Ev("p", 3, 0, t5) +   // higher epoch: afresh
                     Ev("p", 3, 0, t5) +   // and deduplicated again
                     Ev("p", 2, 5, t5));   // now simply fenced
  ASSERT_EQ(Snapsink({"ingest", root, in, "--commit-every", GetParam(), "--quiet"}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 3, 1, "2026-10-21T15:00:00Z", false) +
                                            Producer("q", 0, 2, "2026-10-21T16:00:00Z", false) +
                                            Producer("r", 0, 0, "2026-10-21T10:00:00Z", true));
  const std::string sources = Inspect(root, "sources");
  EXPECT_NE(sources.find("\"lines\":13,\"applied\":7,\"duplicates\":1,\"fenced\":1,\"rejected\":4,\"ignored\":0,"
                         "\"duplicates_id\":0,\"rejected_horizon\":0,\"rejected_retired\":4"),
            std::string::npos)
      << sources;
  std::string rejects;
  for (const auto& [name, data] : TreeContents(root)) {
    if (name.rfind("rejects/", 0) == 0) rejects += data;
  }
  EXPECT_NE(rejects.find("\"line\":7,"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("\"reason\":\"producer retired; bump its epoch\""), std::string::npos) << rejects;
}

INSTANTIATE_TEST_SUITE_P(CommitEvery, ProducerRetentionTest, ::testing::Values("1", "100000"));

// Many producers over 12 hours of event time with retention 2h (idle buckets
// of 15 minutes): a quarter fall silent for good and are retired, a quarter
// fall silent for 6 hours, are retired, then send at their old epoch
// (rejected) and at a higher one (afresh); the rest send throughout, with
// redeliveries and times that wander inside and across buckets.
std::string ManyProducersInput() {
  std::string s;
  constexpr int kProducers = 240;
  constexpr int64_t kStep = 10 * 60 * 1000;
  std::vector<uint64_t> next(kProducers, 0);
  std::vector<uint32_t> epoch(kProducers, 0);
  for (int step = 0; step < 72; ++step) {
    const int64_t ts = kBase + step * kStep;
    for (int i = 0; i < kProducers; ++i) {
      const int group = i % 4;
      if (group == 0 && step >= 12) continue;               // silent for good after 2h
      if (group == 2 && step >= 12 && step < 48) continue;  // silent 6h
      char id[8];
      std::snprintf(id, sizeof(id), "p%03d", i);
      if (group == 2 && step == 48) s += Ev(id, epoch[i], next[i]++, ts);  // at the old epoch: rejected
      if (group == 2 && step == 48) {
        epoch[i] = 1;
        next[i] = 0;
      }
      const int64_t jitter = ((i * 7919 + step * 104729) % 600) * 1000;
      s += EventLine().Producer(id).Epoch(epoch[i]).Seq(next[i]).Ts(ts + jitter).Metric("m").Key(id).Line();
      if ((i + step) % 10 == 0) {  // a redelivery, a little later in event time
        s += EventLine().Producer(id).Epoch(epoch[i]).Seq(next[i]).Ts(ts + jitter + 1000).Metric("m").Key(id).Line();
      }
      ++next[i];
    }
  }
  return s;
}

// A root's state plus its rejects files, byte for byte.
std::string FullDump(const std::string& root) {
  std::string out = StateDump(root);
  for (const auto& [path, data] : TreeContents(root)) {
    if (path.rfind("rejects/", 0) == 0) out += "## " + path + "\n" + data;
  }
  return out;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// SPEC 8: a crash at the commit's crash points with many producers and
// retention on, then a rerun, leaves what a clean run leaves, byte for byte
// (producers with their last-seen times and tombstones, sources, rejects,
// windows); so does a clean run with other batch boundaries.
TEST(ProducerRetentionCrashTest, RerunAfterCrashAtCommitMatchesCleanRun) {
  TempDir d;
  const std::string in = d / "in.ndjson";
  WriteFile(in, ManyProducersInput());
  auto init = [&](const std::string& name) {
    const std::string root = d / name;
    EXPECT_EQ(Snapsink({"init", root, "--producer-retention", "2h"}).exit_code, 0);
    return root;
  };
  const std::string clean = init("clean");
  RunResult r = Snapsink({"ingest", clean, in, "--commit-every", "500", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string want = FullDump(clean);
  const std::string producers = Inspect(clean, "producers");
  EXPECT_EQ(Count(producers, "\"retired\":true"), 60u) << producers;  // group 0; group 2 came back
  EXPECT_EQ(Count(producers, "\"retired\":false"), 180u);
  EXPECT_EQ(Count(producers, "\"epoch\":1,"), 60u);  // group 2, afresh
  EXPECT_NE(Inspect(clean, "sources").find("\"rejected_retired\":60"), std::string::npos);

  const std::string other = init("other");
  ASSERT_EQ(Snapsink({"ingest", other, in, "--commit-every", "37", "--quiet"}).exit_code, 0);
  EXPECT_EQ(FullDump(other), want);

  const std::vector<std::pair<const char*, int>> crashes = {
      {"ingest.before_commit", 1}, {"ingest.before_commit", 9}, {"ingest.after_commit", 14}, {"ingest.before_commit", 22}};
  for (const auto& [point, hit] : crashes) {
    SCOPED_TRACE(std::string(point) + " hit " + std::to_string(hit));
    const std::string root = init(std::string("crash-") + point + "-" + std::to_string(hit));
    r = Snapsink({"ingest", root, in, "--commit-every", "500", "--quiet"},
                 {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", std::to_string(hit)}});
    ASSERT_EQ(r.exit_code, 99) << r.err;
    r = Snapsink({"ingest", root, in, "--commit-every", "500", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(FullDump(root), want);
  }
}

// Without --producer-retention nothing is retired; gc --producers-idle
// retires once, and the producer's next event at its old epoch is refused.
TEST(ProducerRetentionGcTest, GcRetiresIdleProducers) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const int64_t t5 = kBase + 5 * kHour;
  // q first: a 5-hour jump by one of two producers would wait for a
  // second producer (engine/watermark.h); the root's first event counts.
  WriteFile(in, Ev("q", 0, 0, t5) + Ev("p", 0, 0, kBase));
  ASSERT_EQ(Snapsink({"ingest", root, in, "--quiet"}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 0, 1, "2026-10-21T10:00:00Z", false) +
                                            Producer("q", 0, 1, "2026-10-21T15:00:00Z", false));
  RunResult g = Snapsink({"gc", root, "--producers-idle", "2h"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("retired producer p\n"), std::string::npos) << g.out;
  EXPECT_EQ(g.out.find("retired producer q"), std::string::npos) << g.out;
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 0, 0, "2026-10-21T10:00:00Z", true) +
                                            Producer("q", 0, 1, "2026-10-21T15:00:00Z", false));
  AppendFile(in, Ev("p", 0, 1, t5));
  ASSERT_EQ(Snapsink({"ingest", root, in, "--quiet"}).exit_code, 0);
  EXPECT_NE(Inspect(root, "sources").find("\"rejected_retired\":1"), std::string::npos);
  EXPECT_EQ(Snapsink({"gc", root, "--producers-idle", "soon"}).exit_code, 1);
}

}  // namespace
}  // namespace snapsink::testing

namespace snapsink::testing {
namespace {

// A root made before the id and retention tables existed (format 1 and 2
// roots): readers see them as empty, the first writer creates them.
TEST(OlderRootTest, MissingTablesAreCreatedByTheFirstWriter) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  {
    MDB_env* env;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_set_maxdbs(env, 64), 0);
    ASSERT_EQ(mdb_env_open(env, (root + "/state").c_str(), 0, 0644), 0);
    MDB_txn* txn;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
    for (const char* name : {"ids", "id_expiry", "producer_seen", "producer_idle", "retired", "source_ids"}) {
      MDB_dbi dbi;
      ASSERT_EQ(mdb_dbi_open(txn, name, 0, &dbi), 0) << name;
      ASSERT_EQ(mdb_drop(txn, dbi, 1), 0) << name;
    }
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
  }
  EXPECT_EQ(Inspect(root, "ids"), "{\"ids\":0,\"oldest\":null,\"horizon\":\"7d\",\"cutoff\":null,\"table_bytes\":0}\n");
  EXPECT_EQ(Inspect(root, "producers"), "");
  WriteFile(in, Ev("p", 0, 0, kBase) + "{\"id\":\"a\",\"ts\":" + std::to_string(kBase) + ",\"metric\":\"m\"}\n");
  RunResult r = Snapsink({"ingest", root, in, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Inspect(root, "ids").find("{\"ids\":1,"), std::string::npos);
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 0, 1, "2026-10-21T10:00:00Z", false));
}

// A root whose producer records are those of state format 4 (last-seen
// times in producer_seen, idle keys at the exact times): `inspect`, gc
// --producers-idle and ingest read it as before, and ingest moves a
// producer it writes into the format-5 record.
TEST(OlderRootTest, FormatFourProducerRecordsKeepWorking) {
  TempDir d;
  const std::string root = d / "root", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  const int64_t t5 = kBase + 5 * kHour;
  WriteFile(in, Ev("q", 0, 0, t5) + Ev("p", 0, 0, kBase + 1234));
  ASSERT_EQ(Snapsink({"ingest", root, in, "--quiet"}).exit_code, 0);
  const std::string before = Inspect(root, "producers");
  auto rewrite = [&](bool to_format4) {
    std::unique_ptr<Store> store;
    ASSERT_STATUS_OK(Store::Open(root + "/state", /*create=*/false, &store));
    std::unique_ptr<Txn> txn;
    ASSERT_STATUS_OK(store->BeginWrite(&txn));
    uint64_t format = 0;
    for (const std::string& id : to_format4 ? std::vector<std::string>{"p", "q"} : std::vector<std::string>{"q"}) {
      std::string_view v;
      ASSERT_STATUS_OK(txn->Get(Table::kProducers, id, &v));
      ProducerState st;
      std::optional<ProducerSeen> seen;
      ASSERT_STATUS_OK(codec::DecodeProducer(v, &st, &seen));
      if (!to_format4) {
        EXPECT_TRUE(seen.has_value());  // written again: its last-seen time in its record
        std::string_view old_seen;
        EXPECT_TRUE(txn->Get(Table::kProducerSeen, id, &old_seen).IsNotFound());
        continue;
      }
      ASSERT_TRUE(seen.has_value());
      EXPECT_EQ(seen->idle_at, IdleBucket(seen->last_seen, kHour));
      ASSERT_STATUS_OK(txn->Put(Table::kProducers, id, codec::Encode(st)));
      std::string u, old_key, exact_key;
      codec::PutU64(&u, static_cast<uint64_t>(seen->last_seen));
      ASSERT_STATUS_OK(txn->Put(Table::kProducerSeen, id, u));
      codec::AppendWindowKey(&old_key, seen->idle_at);
      codec::AppendWindowKey(&exact_key, seen->last_seen);
      ASSERT_STATUS_OK(txn->Del(Table::kProducerIdle, old_key + id));
      ASSERT_STATUS_OK(txn->Put(Table::kProducerIdle, exact_key + id, ""));
    }
    if (to_format4) {
      ASSERT_STATUS_OK(Root::PutMetaU64(txn.get(), meta::kFormat, 4));
      ASSERT_STATUS_OK(txn->Commit());
    } else {
      auto f = Root::GetMetaU64(txn.get(), meta::kFormat);
      ASSERT_STATUS_OK(f);
      format = f->value_or(0);
      EXPECT_EQ(format, kProducerTimesFormat);
    }
  };
  rewrite(/*to_format4=*/true);
  EXPECT_EQ(Inspect(root, "producers"), before);
  RunResult g = Snapsink({"gc", root, "--producers-idle", "2h"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out.find("retired producer q"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("retired producer p\n"), std::string::npos) << g.out;
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 0, 0, "2026-10-21T10:00:01.234Z", true) +
                                            Producer("q", 0, 1, "2026-10-21T15:00:00Z", false));
  AppendFile(in, Ev("q", 0, 1, t5 + 2 * kHour));
  ASSERT_EQ(Snapsink({"ingest", root, in, "--quiet"}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "producers"), Producer("p", 0, 0, "2026-10-21T10:00:01.234Z", true) +
                                            Producer("q", 0, 2, "2026-10-21T17:00:00Z", false));
  rewrite(/*to_format4=*/false);
}

}  // namespace
}  // namespace snapsink::testing
