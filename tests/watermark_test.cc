// A watermark one bad clock cannot move (docs/CONTRACT.md 13), on
// every root, with no setting (engine/watermark.h):
//  - the rule itself (ObserveEvent): a lone producer's own newest time
//    counts; with two or more producers an event further ahead than the
//    reach is held until a second producer lands that far too;
//  - through the binary, on a plain root (no --retain, no --max-ahead):
//    several producers of today's events plus one event dated 2099 seal
//    nothing early; the root equals one fed the stream without it, plus
//    that event's own window (open, and published only by --final);
//  - under --retain 1h with no max-ahead limit: no window dropped;
//  - a single producer's stream (ts 0, then today, then days later) seals
//    as before: every jump moves the watermark;
//  - a crash at every commit of such a stream, rerun, equals a clean run
//    byte for byte: the held event is in LMDB with the events;
//  - a root written before the rule (no hold record) reads on.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "engine/env.h"
#include "engine/root.h"
#include "engine/store.h"
#include "engine/watermark.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

constexpr int64_t kDay = 24 * kHour;
constexpr char k2099[] = "2099-01-01T00:00:00Z";

RunResult Ok(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  RunResult r = Snapsink(args, env);
  EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.out << r.err;
  return r;
}

// Every distinct value of "field":"..." in text.
std::set<std::string> Values(const std::string& text, const std::string& field) {
  std::set<std::string> out;
  const std::regex re("\"" + field + "\":\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

// Producers a, b and c in turn, one event every 20 s, for `minutes` minutes
// from `from`; seqs go on from seq[producer].
std::string Today(int64_t from, int minutes, std::map<std::string, uint64_t>* seq) {
  std::string out;
  const char* producers[] = {"a", "b", "c"};
  for (int i = 0; i < 3 * minutes; ++i) {
    const std::string p = producers[i % 3];
    out += EventLine().Producer(p).Seq((*seq)[p]++).Ts(from + i * 20 * 1000).Metric("orders")
               .Key(i % 2 ? "eu" : "us").Value("1.5").Line();
  }
  return out;
}

// The broken clock's one event dated 2099, then (burst > 1) more of its
// events in a row, 1 s apart: less than a reach (1m) of its own clock.
std::string Wrong(int burst = 1) {
  std::string out;
  for (int i = 0; i < burst; ++i) {
    out += EventLine().Producer("broken-clock").Seq(i).Ts(std::string("2099-01-01T00:00:") + (i < 10 ? "0" : "") +
                                                          std::to_string(i) + "Z")
               .Metric("orders").Key("eu").Value("1").Line();
  }
  return out;
}

// ------------------------------------------------------------- the rule

TEST(WatermarkRule, LoneProducerOwnNewestTimeCounts) {
  WatermarkState s;
  EXPECT_TRUE(ObserveEvent(&s, "p", 0, kMinute));
  EXPECT_TRUE(ObserveEvent(&s, "p", kBase, kMinute));  // 1970 to 2026 in one step
  EXPECT_EQ(s.confirmed, kBase);
  EXPECT_TRUE(ObserveEvent(&s, "p", kBase + 3 * kDay, kMinute));
  EXPECT_EQ(s.confirmed, kBase + 3 * kDay);
  EXPECT_FALSE(ObserveEvent(&s, "p", kBase, kMinute));  // behind: nothing changes
  EXPECT_FALSE(s.many);
  EXPECT_FALSE(s.held);
}

TEST(WatermarkRule, FarAheadEventWaitsForASecondProducer) {
  const int64_t reach = kHour;
  WatermarkState s;
  ObserveEvent(&s, "a", kBase, reach);
  ObserveEvent(&s, "b", kBase + 10 * kMinute, reach);  // within reach: steady progress
  EXPECT_EQ(s.confirmed, kBase + 10 * kMinute);
  EXPECT_TRUE(s.many);
  ObserveEvent(&s, "x", kBase + 100 * kDay, reach);  // far ahead: held
  EXPECT_EQ(s.confirmed, kBase + 10 * kMinute);
  EXPECT_EQ(s.held, kBase + 100 * kDay);
  EXPECT_EQ(s.held_producer, "x");
  ObserveEvent(&s, "a", kBase + 50 * kMinute, reach);  // the others go on
  EXPECT_EQ(s.confirmed, kBase + 50 * kMinute);
  ObserveEvent(&s, "x", kBase + 200 * kDay, reach);  // x again, others between: still held, at its newest
  EXPECT_EQ(s.held, kBase + 200 * kDay);
  EXPECT_EQ(s.confirmed, kBase + 50 * kMinute);
  // A second producer lands far ahead too: the lower time is confirmed,
  // the higher waits on.
  ObserveEvent(&s, "b", kBase + 3 * kDay, reach);
  EXPECT_EQ(s.confirmed, kBase + 3 * kDay);
  EXPECT_EQ(s.held, kBase + 200 * kDay);
  EXPECT_EQ(s.held_producer, "x");
  // A held time the confirmed time comes within reach of confirms too.
  WatermarkState t;
  ObserveEvent(&t, "a", kBase, reach);
  ObserveEvent(&t, "b", kBase + 2 * kHour, reach);  // held
  ObserveEvent(&t, "a", kBase + 50 * kMinute, reach);
  EXPECT_EQ(t.held, kBase + 2 * kHour);
  ObserveEvent(&t, "a", kBase + 70 * kMinute, reach);  // within reach of b's: both confirmed
  EXPECT_EQ(t.confirmed, kBase + 2 * kHour);
  EXPECT_FALSE(t.held);
}

// The only producer still sending jumps: once its own clock has gone a full
// reach past the held time, with no other producer's event between, it
// confirms (a quiet producer does not freeze the root).
TEST(WatermarkRule, HeldProducerSendingAloneForAReachConfirmsItself) {
  const int64_t reach = kMinute;
  WatermarkState s;
  ObserveEvent(&s, "old", kBase, reach);
  ObserveEvent(&s, "live", kBase + kMinute, reach);
  ObserveEvent(&s, "live", kBase + 3 * kMinute, reach);  // held
  EXPECT_EQ(s.confirmed, kBase + kMinute);
  EXPECT_FALSE(ObserveEvent(&s, "live", kBase + 3 * kMinute + 59 * 1000, reach));  // not yet a reach on
  EXPECT_EQ(s.confirmed, kBase + kMinute);
  EXPECT_EQ(s.held, kBase + 3 * kMinute);
  EXPECT_TRUE(ObserveEvent(&s, "live", kBase + 4 * kMinute, reach));  // a reach past the hold
  EXPECT_EQ(s.confirmed, kBase + 4 * kMinute);
  EXPECT_FALSE(s.held);
}

// A broken clock's burst: many far-ahead events in a row from one producer,
// spanning less than a reach of its own clock, move nothing; one other
// producer's event between ends its chance to confirm itself for good.
TEST(WatermarkRule, ABurstOfFarAheadEventsFromOneProducerMovesNothing) {
  const int64_t reach = kHour;
  const int64_t far = kBase + 73 * 365 * kDay;
  WatermarkState s;
  ObserveEvent(&s, "a", kBase, reach);
  ObserveEvent(&s, "b", kBase + kMinute, reach);
  for (int i = 0; i < 100; ++i) ObserveEvent(&s, "broken", far + i * 30 * 1000, reach);  // 50 minutes of its clock
  EXPECT_EQ(s.confirmed, kBase + kMinute);
  EXPECT_EQ(s.held, far);
  EXPECT_EQ(s.held_producer, "broken");
  ObserveEvent(&s, "a", kBase + 2 * kMinute, reach);
  for (int i = 0; i < 10; ++i) ObserveEvent(&s, "broken", far + i * kHour, reach);  // hours on, but not alone
  EXPECT_EQ(s.confirmed, kBase + 2 * kMinute);
  EXPECT_TRUE(s.held);
}

// ------------------------------------------------------- through the binary

// Feeds `with` the stream with the 2099 event and `without` the same stream
// without it, in two runs each (the first publish right after the bad
// event), and checks they publish the same and hold the same watermark.
// At least min_windows windows are published: today's windows did close.
void FeedBoth(const std::string& with, const std::string& without, const std::string& dir, size_t min_windows,
              int burst = 1) {
  std::map<std::string, uint64_t> seq;
  const std::string before = Today(kBase, 90, &seq);
  const std::string after = Today(kBase + 90 * kMinute, 90, &seq);
  const std::string in_with = dir + "/with.ndjson", in_without = dir + "/without.ndjson";
  WriteFile(in_with, before + Wrong(burst));
  WriteFile(in_without, before);
  Ok({"run", with, in_with, "--source", "s"});
  Ok({"run", without, in_without, "--source", "s"});
  EXPECT_EQ(Ok({"query", with, "--format", "json"}).out, Ok({"query", without, "--format", "json"}).out);
  AppendFile(in_with, after);
  AppendFile(in_without, after);
  Ok({"run", with, in_with, "--source", "s"});
  Ok({"run", without, in_without, "--source", "s"});
  const std::string published = Ok({"query", with, "--format", "json"}).out;
  EXPECT_EQ(published, Ok({"query", without, "--format", "json"}).out);
  EXPECT_GE(Values(published, "window").size(), min_windows) << published;
  EXPECT_EQ(Values(published, "window").count(k2099), 0u);
  RunResult st = Ok({"status", with, "--json"});
  EXPECT_EQ(Values(st.out, "watermark"), Values(Ok({"status", without, "--json"}).out, "watermark"));
  EXPECT_NE(st.out.find(std::string("\"watermark_held\":{\"ts\":\"") + k2099 + "\",\"producer\":\"broken-clock\"}"),
            std::string::npos)
      << st.out;
}

TEST(WatermarkBinary, PlainRootFarAheadEventSealsNothingEarly) {
  FastDir dir;
  const std::string with = dir / "with", without = dir / "without";
  Ok({"init", with, "--window", "1m"});
  Ok({"init", without, "--window", "1m"});
  FeedBoth(with, without, dir.path(), 170);
  // Every window of today is in the same state; the 2099 window is the one more.
  std::set<std::string> windows_with = Values(Ok({"inspect", with, "windows", "--json"}).out, "window");
  std::set<std::string> windows_without = Values(Ok({"inspect", without, "windows", "--json"}).out, "window");
  windows_without.insert(k2099);
  EXPECT_EQ(windows_with, windows_without);
  const std::string text = Ok({"status", with}).out;
  EXPECT_NE(text.find("rule: newest confirmed event time minus lateness 1m; an event more than 1m ahead of it"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string("; held now: an event at ") + k2099 + " from producer \"broken-clock\""), std::string::npos)
      << text;
  const std::string metrics = Ok({"metrics", with}).out;
  EXPECT_NE(metrics.find("snapsink_watermark_held_seconds 4070908800"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("snapsink_watermark_seconds " + std::to_string((kBase + 180 * kMinute - 20000 - kMinute) / 1000)),
            std::string::npos)
      << metrics;
  // --final seals every window: the same rows plus the 2099 event's own.
  Ok({"run", with, dir / "with.ndjson", "--source", "s", "--final"});
  Ok({"run", without, dir / "without.ndjson", "--source", "s", "--final"});
  const std::string final_with = Ok({"query", with, "--format", "json"}).out;
  const std::string final_without = Ok({"query", without, "--format", "json"}).out;
  const std::string own = Ok({"query", with, "--format", "json", "--window", k2099}).out;
  EXPECT_NE(own.find("\"count\":1,\"sum\":1,"), std::string::npos) << own;
  EXPECT_EQ(final_with, final_without + own);
}

// The broken clock sends 30 events in a row (30 s of its clock, under the
// 1m reach) with no other producer's between: still nothing sealed early.
TEST(WatermarkBinary, PlainRootBurstOfFarAheadEventsSealsNothingEarly) {
  FastDir dir;
  const std::string with = dir / "with", without = dir / "without";
  Ok({"init", with, "--window", "1m"});
  Ok({"init", without, "--window", "1m"});
  FeedBoth(with, without, dir.path(), 170, /*burst=*/30);
}

TEST(WatermarkBinary, RetainOneHourNoMaxAheadDropsNoWindow) {
  FastDir dir;
  const std::string with = dir / "with", without = dir / "without";
  // --max-ahead 0: no reject rule, so the watermark rule alone must hold.
  Ok({"init", with, "--window", "1m", "--retain", "1h", "--max-ahead", "0"});
  Ok({"init", without, "--window", "1m", "--retain", "1h", "--max-ahead", "0"});
  FeedBoth(with, without, dir.path(), 55);
  EXPECT_EQ(Values(Ok({"status", with, "--json"}).out, "oldest_kept_window"),
            Values(Ok({"status", without, "--json"}).out, "oldest_kept_window"));
  // The last hour's windows are all there (FeedBoth): none was dropped by the 2099 event.
  EXPECT_FALSE(std::filesystem::exists(with + "/rejects/s.ndjson"));
}

// One producer, the stream jumping from 1970 to today and then days on:
// each jump moves the watermark and closes the windows before it, as before
// the rule.
TEST(WatermarkBinary, SingleProducerJumpsSealAsBefore) {
  FastDir dir;
  const std::string root = dir / "r";
  Ok({"init", root, "--window", "1h"});
  std::string in;
  uint64_t seq = 0;
  for (int64_t ts : {int64_t{0}, kBase, kBase + kMinute, kBase + 3 * kDay, kBase + 3 * kDay + 5 * kMinute}) {
    in += EventLine().Producer("p").Seq(seq++).Ts(ts).Metric("m").Line();
  }
  WriteFile(dir / "in.ndjson", in);
  Ok({"run", root, dir / "in.ndjson"});
  const std::set<std::string> published = Values(Ok({"query", root, "--format", "json"}).out, "window");
  EXPECT_EQ(published, (std::set<std::string>{"1970-01-01T00:00:00Z", "2026-10-21T10:00:00Z"}));
  RunResult st = Ok({"status", root, "--json"});
  EXPECT_EQ(Values(st.out, "watermark"), (std::set<std::string>{"2026-10-24T09:05:00Z"}));
  EXPECT_NE(st.out.find("\"watermark_held\":null"), std::string::npos) << st.out;
}

// The held event is LMDB state committed with the events: a crash at every
// commit, rerun, equals a clean run byte for byte. The stream holds a 2099
// event, then a second producer's event dated 2098 that confirms 2098: a
// rerun that had lost the hold would hold 2098 instead.
TEST(WatermarkBinary, CrashAtEveryCommitRerunEqualsCleanRun) {
  FastDir dir;
  std::map<std::string, uint64_t> seq;
  std::string in = Today(kBase, 2, &seq) + Wrong() + Today(kBase + 2 * kMinute, 2, &seq);
  in += EventLine().Producer("other-clock").Seq(0).Ts("2098-06-01T00:00:00Z").Metric("orders").Line();
  in += Today(kBase + 4 * kMinute, 1, &seq);
  WriteFile(dir / "in.ndjson", in);
  const std::string clean = dir / "clean";
  Ok({"init", clean, "--window", "1m"});
  Ok({"run", clean, dir / "in.ndjson", "--source", "s", "--commit-every", "1"});
  EXPECT_EQ(Values(Ok({"status", clean, "--json"}).out, "watermark"), (std::set<std::string>{"2098-05-31T23:59:00Z"}));
  const std::string clean_dump = StateDump(clean);
  const auto clean_tree = TreeContents(clean);
  for (const char* point : {"ingest.before_commit", "ingest.after_commit"}) {
    for (int hit : {6, 7, 12, 13, 16}) {
      SCOPED_TRACE(std::string(point) + " hit " + std::to_string(hit));
      const std::string root = dir / (std::string("crashed-") + point + "-" + std::to_string(hit));
      Ok({"init", root, "--window", "1m"});
      RunResult crash = Snapsink({"run", root, dir / "in.ndjson", "--source", "s", "--commit-every", "1"},
                                 {{"SNAPSINK_CRASH_AT", point}, {"SNAPSINK_CRASH_HIT", std::to_string(hit)}});
      ASSERT_EQ(crash.exit_code, 99) << crash.out << crash.err;
      Ok({"run", root, dir / "in.ndjson", "--source", "s", "--commit-every", "1"});
      EXPECT_EQ(StateDump(root), clean_dump);
      EXPECT_EQ(TreeDiff(TreeContents(root), clean_tree), "");
    }
  }
}

// A root written before the rule has max_event_ts and no hold record: with
// one producer in its table it reads as lone (its jumps count), with two as
// many (a far jump waits).
TEST(WatermarkBinary, RootWrittenBeforeTheRuleReadsOn) {
  for (int producers : {1, 2}) {
    SCOPED_TRACE(producers);
    TempDir dir;
    const std::string path = dir / "root";
    Ok({"init", path, "--window", "1m"});
    std::string in = EventLine().Producer("p").Seq(0).Ts(kBase).Metric("m").Line();
    if (producers == 2) in += EventLine().Producer("q").Seq(0).Ts(kBase).Metric("m").Line();
    WriteFile(dir / "a.ndjson", in);
    Ok({"ingest", path, dir / "a.ndjson"});
    {
      std::unique_ptr<Root> root;
      ASSERT_STATUS_OK(Root::Open(Env::Default(), path, Root::Access::kWriter, &root));
      std::unique_ptr<Txn> txn;
      ASSERT_STATUS_OK(root->store()->BeginWrite(&txn));
      ASSERT_STATUS_OK(txn->Del(Table::kMeta, meta::kWatermarkHold));
      ASSERT_STATUS_OK(txn->Commit());
    }
    WriteFile(dir / "b.ndjson", EventLine().Producer("p").Seq(1).Ts(kBase + kDay).Metric("m").Line());
    Ok({"ingest", path, dir / "b.ndjson"});
    RunResult st = Ok({"status", path, "--json"});
    if (producers == 1) {
      EXPECT_EQ(Values(st.out, "watermark"), (std::set<std::string>{"2026-10-22T09:59:00Z"}));
    } else {
      EXPECT_EQ(Values(st.out, "watermark"), (std::set<std::string>{"2026-10-21T09:59:00Z"}));
      EXPECT_NE(st.out.find("\"watermark_held\":{\"ts\":\"2026-10-22T10:00:00Z\",\"producer\":\"p\"}"),
                std::string::npos)
          << st.out;
    }
  }
}

}  // namespace
}  // namespace snapsink::testing
