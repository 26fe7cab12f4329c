// Running for years (docs/CONTRACT.md 13), through the binary:
//  - retention: `init --retain 1h` with 1-minute windows fed 6 hours of
//    events publishes only the last hour's windows (plus the lateness),
//    leaves no live state for the others, and gc removes their files; a late
//    event for a dropped window is rejected `beyond retention` and counted;
//  - max-ahead: one producer's event dated 2099 seals nothing early and
//    drops nothing; the root equals one fed the stream without it, plus
//    that event's own rejection (`beyond max-ahead`); without max-ahead the
//    watermark's confirmation rule holds it (tests/watermark_test.cc);
//  - a crash at retention's state delete (publish.retention_delete), rerun,
//    equals a clean run byte for byte;
//  - a rollback to a generation that names dropped windows keeps them out;
//  - a root made before these settings reads as "keep every window".
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include <regex>
#include <set>
#include <string>

#include "engine/env.h"
#include "engine/root.h"
#include "engine/store.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;


// Two events a minute (at :00 and :30) from `from` for `minutes` minutes,
// producer p with seq going on from *seq.
std::string Minutes(int64_t from, int minutes, uint64_t* seq, const std::string& producer = "p") {
  std::string out;
  for (int i = 0; i < 2 * minutes; ++i) {
    out += EventLine().Producer(producer).Seq((*seq)++).Ts(from + i * 30 * 1000).Metric("orders")
               .Key(i % 2 ? "eu" : "us").Value("1.5").Line();
  }
  return out;
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

std::string Iso(int64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::set<std::string> WindowNames(int64_t first, int64_t last_inclusive) {
  std::set<std::string> out;
  for (int64_t w = first; w <= last_inclusive; w += kMinute) out.insert(Iso(w));
  return out;
}

RunResult Ok(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  RunResult r = Snapsink(args, env);
  EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.out << r.err;
  return r;
}

// Feeds 6 hours one hour per run (so older generations name windows that
// retention later drops); returns the input files.
void FeedSixHours(const std::string& root, const std::string& dir) {
  uint64_t seq = 0;
  for (int h = 0; h < 6; ++h) {
    const std::string in = dir + "/hour" + std::to_string(h) + ".ndjson";
    WriteFile(in, Minutes(kBase + h * kHour, 60, &seq));
    Ok({"run", root, in, "--source", "live"});
  }
}

// The last event is at 15:59:30, so the watermark (minus 1m lateness) is
// 15:58:30; kept: windows whose end it passed by at most 1h, from 14:58; closed
// (published): those that end by 15:58:30, up to 15:57.
const int64_t kOldestKept = kBase + 4 * kHour + 58 * kMinute;
const int64_t kNewestClosed = kBase + 5 * kHour + 57 * kMinute;

TEST(RetentionTest, SixHoursOfMinuteWindowsKeepTheLastHour) {
  FastDir dir;
  const std::string root = dir / "root";
  Ok({"init", root, "--window", "1m", "--retain", "1h"});
  FeedSixHours(root, dir.path());

  // Published: only the last hour's windows (plus the lateness).
  RunResult q = Ok({"query", root, "--format", "json"});
  EXPECT_EQ(Values(q.out, "window"), WindowNames(kOldestKept, kNewestClosed));

  // LMDB holds no state for the dropped windows: the engine's windows start at the oldest kept.
  RunResult w = Ok({"inspect", root, "windows", "--json"});
  const std::set<std::string> live = Values(w.out, "window");
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(*live.begin(), Iso(kOldestKept));
  EXPECT_EQ(live, WindowNames(kOldestKept, kBase + 5 * kHour + 59 * kMinute));

  // status and metrics show the retention and the oldest kept window.
  RunResult st = Ok({"status", root, "--json"});
  EXPECT_NE(st.out.find("\"retain\":\"1h\""), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\"oldest_kept_window\":\"" + Iso(kOldestKept) + "\""), std::string::npos) << st.out;
  RunResult text = Ok({"status", root});
  EXPECT_NE(text.out.find("retention   1h; oldest kept window " + Iso(kOldestKept)), std::string::npos) << text.out;
  RunResult m = Ok({"metrics", root});
  EXPECT_NE(m.out.find("snapsink_retain_seconds 3600"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("snapsink_oldest_kept_window_seconds " + std::to_string((kOldestKept / 1000))),
            std::string::npos);

  // Older generations still name dropped windows' files; gc removes them once none does.
  Ok({"gc", root, "--keep-generations", "1"});
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(root + "/snapshots")) on_disk.insert(e.path().filename().string());
  ASSERT_FALSE(on_disk.empty());
  const std::string oldest_dir = Iso(kOldestKept);  // 2026-10-21T14:58:00Z -> 20261021T145800Z
  std::string compact;
  for (char c : oldest_dir) {
    if (c != '-' && c != ':') compact += c;
  }
  EXPECT_EQ(*on_disk.begin(), compact);
  EXPECT_EQ(on_disk.size(), WindowNames(kOldestKept, kNewestClosed).size());
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);

  // A late event for a dropped window: rejected with its reason, counted, never applied.
  const std::string late = dir / "late.ndjson";
  WriteFile(late, EventLine().Producer("q").Seq(0).Ts(kBase + 10 * kMinute).Metric("orders").Key("eu")
                      .Value("7").Line());
  Ok({"run", root, late, "--source", "late"});
  const std::string rejects = ReadFile(root + "/rejects/late.ndjson");
  EXPECT_NE(rejects.find("\"reason\":\"beyond retention\""), std::string::npos) << rejects;
  RunResult src = Ok({"inspect", root, "sources", "--json"});
  EXPECT_NE(src.out.find("\"source\":\"late\",\"offset\":"), std::string::npos) << src.out;
  const std::regex late_row("\"source\":\"late\"[^}]*\"lines\":1,\"applied\":0,\"duplicates\":0,\"fenced\":0,"
                            "\"rejected\":1,\"ignored\":0");
  EXPECT_TRUE(std::regex_search(src.out, late_row)) << src.out;
  EXPECT_EQ(Values(Ok({"inspect", root, "windows", "--json"}).out, "window"), live);
  EXPECT_EQ(Values(Ok({"query", root, "--format", "json"}).out, "window"), WindowNames(kOldestKept, kNewestClosed));
}

// One producer's clock gone wrong: an event dated 2099 in a stream of today's.
TEST(RetentionTest, AnEventDated2099SealsAndDropsNothing) {
  FastDir dir;
  uint64_t seq = 0;
  const std::string before = Minutes(kBase, 90, &seq);
  const std::string after = Minutes(kBase + 90 * kMinute, 90, &seq);
  const std::string wrong = EventLine().Producer("broken-clock").Seq(0).Ts("2099-01-01T00:00:00Z")
                                .Metric("orders").Key("eu").Value("1").Line();
  const std::string with = dir / "with", without = dir / "without", unguarded = dir / "unguarded";
  Ok({"init", with, "--window", "1m", "--retain", "1h"});
  Ok({"init", without, "--window", "1m", "--retain", "1h"});
  Ok({"init", unguarded, "--window", "1m", "--retain", "1h", "--max-ahead", "0"});
  // Without --retain there is no max-ahead limit unless asked for.
  TempDir plain;
  Ok({"init", plain / "r", "--window", "1m"});
  EXPECT_NE(Ok({"status", plain / "r", "--json"}).out.find("\"max_ahead\":null"), std::string::npos);
  // Two runs each, the input growing between them: the first run's publish
  // comes right after the bad event.
  const std::string in_with = dir / "with.ndjson", in_without = dir / "without.ndjson";
  WriteFile(in_with, before + wrong);
  WriteFile(in_without, before);
  Ok({"run", with, in_with, "--source", "s"});
  Ok({"run", without, in_without, "--source", "s"});
  Ok({"run", unguarded, in_with, "--source", "s"});
  const RunResult mid_with = Ok({"query", with, "--format", "json"});
  EXPECT_EQ(mid_with.out, Ok({"query", without, "--format", "json"}).out);
  EXPECT_FALSE(Values(mid_with.out, "window").empty());
  AppendFile(in_with, after);
  AppendFile(in_without, after);
  Ok({"run", with, in_with, "--source", "s"});
  Ok({"run", without, in_without, "--source", "s"});
  Ok({"run", unguarded, in_with, "--source", "s"});

  // Nothing sealed early, nothing dropped: the same windows, versions and rows.
  EXPECT_EQ(Ok({"query", with, "--format", "json"}).out, Ok({"query", without, "--format", "json"}).out);
  EXPECT_EQ(Ok({"inspect", with, "windows", "--json"}).out, Ok({"inspect", without, "windows", "--json"}).out);
  // ... plus its own rejection.
  const std::string rejects = ReadFile(with + "/rejects/s.ndjson");
  EXPECT_NE(rejects.find("\"reason\":\"beyond max-ahead\""), std::string::npos) << rejects;
  EXPECT_NE(rejects.find("2099-01-01T00:00:00Z"), std::string::npos);
  EXPECT_FALSE(fs::exists(without + "/rejects/s.ndjson"));
  RunResult st = Ok({"status", with, "--json"});
  EXPECT_EQ(Values(st.out, "watermark"), Values(Ok({"status", without, "--json"}).out, "watermark"));
  EXPECT_NE(st.out.find("\"max_ahead\":\"1d\""), std::string::npos) << st.out;
  EXPECT_NE(Ok({"status", with}).out.find("rule: newest confirmed event time minus lateness 1m; "), std::string::npos);
  EXPECT_NE(Ok({"status", with}).out.find("; an event more than 1d ahead is rejected (beyond max-ahead)"),
            std::string::npos);

  // Without max-ahead the confirmation rule (engine/watermark.h) holds the
  // 2099 event, which no second producer confirms: the same windows are
  // published, none dropped. (Before that rule this root moved the
  // watermark to 2098 and dropped every window.)
  EXPECT_EQ(Ok({"query", unguarded, "--format", "json"}).out, Ok({"query", without, "--format", "json"}).out);
  EXPECT_NE(Ok({"status", unguarded, "--json"}).out.find("\"watermark_held\":{\"ts\":\"2099-01-01T00:00:00Z\""),
            std::string::npos);
}

// SPEC 8: a crash where retention's state delete sits in the open
// transaction; the rerun equals a clean run byte for byte.
TEST(RetentionTest, CrashAtRetentionDeleteRerunEqualsCleanRun) {
  FastDir dir;
  uint64_t seq = 0;
  WriteFile(dir / "a.ndjson", Minutes(kBase, 60, &seq));
  WriteFile(dir / "b.ndjson", Minutes(kBase + kHour, 90, &seq));
  const std::string clean = dir / "clean", crashed = dir / "crashed";
  for (const std::string& root : {clean, crashed}) {
    Ok({"init", root, "--window", "1m", "--retain", "30m"});
    Ok({"run", root, dir / "a.ndjson", "--source", "s"});
  }
  Ok({"run", clean, dir / "b.ndjson", "--source", "s"});
  RunResult crash = Snapsink({"run", crashed, dir / "b.ndjson", "--source", "s"},
                             {{"SNAPSINK_CRASH_AT", "publish.retention_delete"}});
  ASSERT_EQ(crash.exit_code, 99) << crash.out << crash.err;
  // Nothing of the publish is visible: the windows are still in the state
  // (the first run kept from 10:28: watermark 10:58:30 - 30m - 1m).
  EXPECT_EQ(*Values(Ok({"inspect", crashed, "windows", "--json"}).out, "window").begin(), Iso(kBase + 28 * kMinute));
  Ok({"run", crashed, dir / "b.ndjson", "--source", "s"});
  EXPECT_EQ(TreeDiff(TreeContents(crashed), TreeContents(clean)), "");
  EXPECT_EQ(StateDump(crashed), StateDump(clean));
  EXPECT_EQ(Snapsink({"verify", crashed}).exit_code, 0);
  EXPECT_EQ(*Values(Ok({"inspect", crashed, "windows", "--json"}).out, "window").begin(), Iso(kBase + 118 * kMinute));
}

// A rollback to a generation whose windows retention dropped since keeps
// them out (and says so) instead of publishing versions whose state is gone.
TEST(RetentionTest, RollbackKeepsDroppedWindowsOut) {
  FastDir dir;
  uint64_t seq = 0;
  WriteFile(dir / "a.ndjson", Minutes(kBase, 30, &seq));
  WriteFile(dir / "b.ndjson", Minutes(kBase + 2 * kHour, 30, &seq));
  const std::string root = dir / "root";
  Ok({"init", root, "--window", "1m", "--retain", "1h"});
  Ok({"run", root, dir / "a.ndjson", "--source", "a"});  // generation 1: 10:00 .. 10:28
  Ok({"run", root, dir / "b.ndjson", "--source", "b"});  // generation 2: 12:00 .. 12:28; 10:xx dropped
  RunResult r = Ok({"rollback", root, "--generation", "1"});
  EXPECT_NE(r.out.find("window " + Iso(kBase) + ": beyond retention; kept out"), std::string::npos) << r.out;
  EXPECT_TRUE(Values(Ok({"query", root, "--format", "json"}).out, "window").empty());
  EXPECT_TRUE(Values(Ok({"inspect", root, "windows", "--json"}).out, "window").count(Iso(kBase)) == 0);
  EXPECT_EQ(Snapsink({"verify", root}).exit_code, 0);
  // The late event for a dropped window is still rejected after the rollback.
  WriteFile(dir / "late.ndjson", EventLine().Producer("q").Seq(0).Ts(kBase).Metric("orders").Value("1").Line());
  Ok({"run", root, dir / "late.ndjson", "--source", "late"});
  EXPECT_NE(ReadFile(root + "/rejects/late.ndjson").find("beyond retention"), std::string::npos);
}

// `gc --retain` changes the retention later; the next publish applies it.
TEST(RetentionTest, GcRetainShortensRetentionAtTheNextPublish) {
  FastDir dir;
  uint64_t seq = 0;
  WriteFile(dir / "a.ndjson", Minutes(kBase, 120, &seq));
  const std::string root = dir / "root";
  Ok({"init", root, "--window", "1m"});
  Ok({"run", root, dir / "a.ndjson", "--source", "a"});
  EXPECT_EQ(Values(Ok({"query", root, "--format", "json"}).out, "window").size(), 118u);  // every closed window
  RunResult g = Ok({"gc", root, "--retain", "30m"});
  EXPECT_NE(g.out.find("retain 30m"), std::string::npos) << g.out;
  // Nothing staged: the publish still runs, for retention alone.
  RunResult p = Ok({"publish", root});
  EXPECT_NE(p.out.find("dropped"), std::string::npos) << p.out;
  const std::set<std::string> kept = Values(Ok({"query", root, "--format", "json"}).out, "window");
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(*kept.begin(), Iso(kBase + 88 * kMinute));  // watermark 11:58:30 - 30m - 1m -> from 11:28
  EXPECT_EQ(Snapsink({"publish", root}).out, "nothing to publish\n");
}

// A root made before retention and max-ahead existed (no meta records)
// reads as "keep every window", no limit: no format bump.
TEST(RetentionTest, RootWithoutTheSettingsKeepsEveryWindow) {
  TempDir dir;
  const std::string path = dir / "root";
  Ok({"init", path, "--window", "1m", "--retain", "1h"});
  {
    std::unique_ptr<Root> root;
    ASSERT_STATUS_OK(Root::Open(Env::Default(), path, Root::Access::kWriter, &root));
    std::unique_ptr<Txn> txn;
    ASSERT_STATUS_OK(root->store()->BeginWrite(&txn));
    ASSERT_STATUS_OK(txn->Del(Table::kMeta, meta::kRetainMs));
    ASSERT_STATUS_OK(txn->Del(Table::kMeta, meta::kMaxAheadMs));
    ASSERT_STATUS_OK(txn->Commit());
  }
  std::unique_ptr<Root> root;
  ASSERT_STATUS_OK(Root::Open(Env::Default(), path, Root::Access::kReadOnly, &root));
  EXPECT_EQ(root->config().retain_ms, 0);
  EXPECT_EQ(root->config().max_ahead_ms, 0);
  RunResult st = Ok({"status", path, "--json"});
  EXPECT_NE(st.out.find("\"retain\":null"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("\"max_ahead\":null"), std::string::npos) << st.out;
}

}  // namespace
}  // namespace snapsink::testing
