// Nothing lost at the source (docs/CONTRACT.md 1 and 5), through the binary:
// positions that are only a fast path (rotation, rewrite in place,
// truncation), standard input read from its start, half-written last lines,
// the 1 MiB CRLF line, the depth limit's reason, a byte order mark.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

std::string Ev(const std::string& producer, uint64_t seq) {
  std::string line = EventLine()
                         .Producer(producer)
                         .Seq(seq)
                         .Ts("2026-10-21T10:15:03Z")
                         .Key("k" + std::to_string(seq % 3))
                         .Value(static_cast<int64_t>(seq + 1))
                         .Line();
  line.pop_back();  // without its '\n'
  return line;
}

// Lines Ev(producer, seq) for seq in [from, to), each ended by eol.
std::string Evs(const std::string& producer, uint64_t from, uint64_t to, const std::string& eol = "\n") {
  std::string s;
  for (uint64_t i = from; i < to; ++i) s += Ev(producer, i) + eol;
  return s;
}

struct Counts {
  uint64_t offset = 0, lines = 0, applied = 0, duplicates = 0, fenced = 0, rejected = 0, ignored = 0;
};

// The reference model: every distinct (producer, seq) written counts once.
class Model {
 public:
  void Add(const std::string& producer, uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i) {
      if (!seen_.insert({producer, i}).second) continue;
      auto& row = rows_["m|k" + std::to_string(i % 3)];
      row.first += 1;
      row.second += static_cast<int64_t>(i + 1);
    }
  }
  const std::map<std::string, std::pair<int64_t, int64_t>>& rows() const { return rows_; }

 private:
  std::set<std::pair<std::string, uint64_t>> seen_;
  std::map<std::string, std::pair<int64_t, int64_t>> rows_;  // "metric|key" -> (count, sum)
};

class SourceIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(Snapsink({"init", root}).exit_code, 0); }

  RunResult Ingest(const std::string& file, const std::string& stdin_data = "") {
    return Snapsink({"ingest", root, file, "--source", "feed", "--quiet"}, {}, stdin_data);
  }

  Counts Source(const std::string& name = "feed") {
    RunResult r = Snapsink({"inspect", root, "sources", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    simdjson::dom::parser parser;
    size_t pos = 0;
    while (pos < r.out.size()) {
      const size_t nl = r.out.find('\n', pos);
      simdjson::padded_string line(r.out.substr(pos, nl - pos));
      pos = nl + 1;
      simdjson::dom::element doc = parser.parse(line);
      if (std::string_view(doc["source"]) != name) continue;
      Counts c{uint64_t(doc["offset"]), uint64_t(doc["lines"]),      uint64_t(doc["applied"]),
               uint64_t(doc["duplicates"]), uint64_t(doc["fenced"]), uint64_t(doc["rejected"]),
               uint64_t(doc["ignored"])};
      EXPECT_EQ(c.lines, c.applied + c.duplicates + c.fenced + c.rejected + c.ignored);
      return c;
    }
    ADD_FAILURE() << "no source " << name << " in " << r.out;
    return {};
  }

  // Seals every window, publishes, and returns the published rows.
  std::map<std::string, std::pair<int64_t, int64_t>> Published() {
    EXPECT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
    EXPECT_EQ(Snapsink({"publish", root}).exit_code, 0);
    RunResult q = Snapsink({"query", root, "--format", "json"});
    EXPECT_EQ(q.exit_code, 0) << q.err;
    std::map<std::string, std::pair<int64_t, int64_t>> rows;
    simdjson::dom::parser parser;
    size_t pos = 0;
    while (pos < q.out.size()) {
      const size_t nl = q.out.find('\n', pos);
      simdjson::padded_string line(q.out.substr(pos, nl - pos));
      pos = nl + 1;
      simdjson::dom::element doc = parser.parse(line);
      const std::string k = std::string(std::string_view(doc["metric"])) + "|" + std::string(std::string_view(doc["key"]));
      rows[k] = {int64_t(doc["count"]), static_cast<int64_t>(double(doc["sum"]))};
    }
    return rows;
  }

  std::string Rejects() { return ReadFile(root + "/rejects/feed.ndjson"); }

  TempDir d;
  std::string root = d / "root";
  std::string in = d / "in.ndjson";
  Model model;
};

const char kReplaced[] = "feed: file was replaced since offset ";

TEST_F(SourceIdentityTest, TwoDifferentStreamsOnStdinAreBothApplied) {
  const std::string a = Evs("a", 0, 100);
  const std::string b = Evs("b", 0, 40) + Evs("a", 90, 110);  // 10 redelivered, 10 new
  ASSERT_EQ(Ingest("-", a).exit_code, 0);
  RunResult r = Ingest("-", b);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("replaced"), std::string::npos) << r.err;  // stdin has no position to lose
  model.Add("a", 0, 110);
  model.Add("b", 0, 40);
  EXPECT_EQ(Published(), model.rows());
  Counts c = Source();
  EXPECT_EQ(c.lines, 160u);
  EXPECT_EQ(c.applied, 150u);
  EXPECT_EQ(c.duplicates, 10u);
  EXPECT_EQ(c.rejected, 0u);
  EXPECT_EQ(c.offset, b.size());
}

TEST_F(SourceIdentityTest, RotatedFileIsReadFromItsStart) {
  WriteFile(in, Evs("p", 0, 50));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  ASSERT_EQ(std::rename(in.c_str(), (in + ".1").c_str()), 0);
  WriteFile(in, Evs("p", 50, 80));  // shorter than the old offset: a pure size check would not do
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(kReplaced + std::to_string(Evs("p", 0, 50).size()) + "; reading it from the start"),
            std::string::npos)
      << r.err;
  model.Add("p", 0, 80);
  EXPECT_EQ(Published(), model.rows());
  Counts c = Source();
  EXPECT_EQ(c.lines, 80u);
  EXPECT_EQ(c.applied, 80u);
  EXPECT_EQ(c.rejected, 0u);
  EXPECT_EQ(Rejects(), "");

  // Longer than the old one, and again rotated: same story.
  ASSERT_EQ(std::rename(in.c_str(), (in + ".2").c_str()), 0);
  WriteFile(in, Evs("q", 0, 200));
  r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(kReplaced), std::string::npos) << r.err;
  model.Add("q", 0, 200);
  EXPECT_EQ(Published(), model.rows());
  EXPECT_EQ(Source().applied, 280u);
}

// The same inode, rewritten: only the checksum of the bytes before the
// offset can tell.
TEST_F(SourceIdentityTest, FileRewrittenInPlaceSameLengthIsReadFromItsStart) {
  WriteFile(in, Evs("p", 0, 50));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  const std::string again = Evs("q", 0, 50);  // same length, other bytes
  ASSERT_EQ(again.size(), Evs("p", 0, 50).size());
  WriteFile(in, again);
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(kReplaced), std::string::npos) << r.err;
  model.Add("p", 0, 50);
  model.Add("q", 0, 50);
  EXPECT_EQ(Published(), model.rows());
  Counts c = Source();
  EXPECT_EQ(c.lines, 100u);
  EXPECT_EQ(c.applied, 100u);
  EXPECT_EQ(c.offset, again.size());
}

TEST_F(SourceIdentityTest, FileRewrittenInPlaceLongerIsReadFromItsStart) {
  WriteFile(in, Evs("p", 0, 50));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  // Redelivers p 10..49 at other offsets and adds new events.
  const std::string again = Evs("q", 0, 30) + Evs("p", 10, 60);
  WriteFile(in, again);
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(kReplaced), std::string::npos) << r.err;
  model.Add("p", 0, 60);
  model.Add("q", 0, 30);
  EXPECT_EQ(Published(), model.rows());
  Counts c = Source();
  EXPECT_EQ(c.lines, 130u);
  EXPECT_EQ(c.applied, 90u);
  EXPECT_EQ(c.duplicates, 40u);
  EXPECT_EQ(c.rejected, 0u);
}

TEST_F(SourceIdentityTest, TruncatedFileIsReadFromItsStart) {
  WriteFile(in, Evs("p", 0, 50));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  ASSERT_EQ(::truncate(in.c_str(), 0), 0);
  AppendFile(in, Evs("r", 0, 10));
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(kReplaced), std::string::npos) << r.err;
  model.Add("p", 0, 50);
  model.Add("r", 0, 10);
  EXPECT_EQ(Published(), model.rows());
  Counts c = Source();
  EXPECT_EQ(c.lines, 60u);
  EXPECT_EQ(c.applied, 60u);
  EXPECT_EQ(Rejects(), "");
}

// Appending to the same file is the fast path: nothing is read twice.
TEST_F(SourceIdentityTest, AppendedFileResumesAtItsPosition) {
  WriteFile(in, Evs("p", 0, 50));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  AppendFile(in, Evs("p", 50, 70));
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("replaced"), std::string::npos) << r.err;
  Counts c = Source();
  EXPECT_EQ(c.lines, 70u);
  EXPECT_EQ(c.duplicates, 0u);
}

// A writer appends a valid line in two pieces; ingest runs between them.
TEST_F(SourceIdentityTest, UnterminatedValidLineIsTakenAndItsNewlineSkipped) {
  WriteFile(in, Evs("p", 0, 3) + Ev("p", 3));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  Counts c = Source();
  EXPECT_EQ(c.lines, 4u);
  EXPECT_EQ(c.applied, 4u);
  AppendFile(in, "  \r\n");  // the rest of line 4: blanks and its newline
  ASSERT_EQ(Ingest(in).exit_code, 0);
  AppendFile(in, Ev("p", 4) + "\n");
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  c = Source();
  EXPECT_EQ(c.lines, 5u);
  EXPECT_EQ(c.applied, 5u);
  EXPECT_EQ(c.rejected, 0u);
  EXPECT_EQ(c.offset, ReadFile(in).size());
  EXPECT_EQ(Rejects(), "");
  model.Add("p", 0, 5);
  EXPECT_EQ(Published(), model.rows());
}

TEST_F(SourceIdentityTest, UnterminatedInvalidPrefixIsLeftUnreadUntilFinished) {
  const std::string line = Ev("p", 1);
  const size_t cut = line.size() / 2;
  WriteFile(in, Ev("p", 0) + "\n" + line.substr(0, cut));
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("feed:2: last line has no newline and is not a whole event yet; left unread"),
            std::string::npos)
      << r.err;
  Counts c = Source();
  EXPECT_EQ(c.lines, 1u);
  EXPECT_EQ(c.offset, Ev("p", 0).size() + 1);
  AppendFile(in, line.substr(cut) + "\n");
  ASSERT_EQ(Ingest(in).exit_code, 0);
  c = Source();
  EXPECT_EQ(c.lines, 2u);
  EXPECT_EQ(c.applied, 2u);
  EXPECT_EQ(c.rejected, 0u);
  EXPECT_EQ(Rejects(), "");
}

TEST_F(SourceIdentityTest, CrlfSplitBetweenTwoAppends) {
  WriteFile(in, Ev("p", 0) + "\r\n" + Ev("p", 1) + "\r");
  ASSERT_EQ(Ingest(in).exit_code, 0);
  EXPECT_EQ(Source().lines, 2u);
  AppendFile(in, "\n" + Ev("p", 2) + "\r\n");
  ASSERT_EQ(Ingest(in).exit_code, 0);
  Counts c = Source();
  EXPECT_EQ(c.lines, 3u);
  EXPECT_EQ(c.applied, 3u);
  EXPECT_EQ(c.rejected, 0u);
  EXPECT_EQ(Rejects(), "");
}

// Inputs that cannot grow: the unterminated bad last line is rejected.
TEST_F(SourceIdentityTest, UnterminatedBadLineRejectedAtTheEndOfStdinAndOfRunFinal) {
  ASSERT_EQ(Ingest("-", Ev("p", 0) + "\n{\"producer\":").exit_code, 0);
  Counts c = Source();
  EXPECT_EQ(c.lines, 2u);
  EXPECT_EQ(c.rejected, 1u);

  WriteFile(in, Ev("q", 0) + "\n{\"producer\":");
  RunResult r = Snapsink({"run", root, in, "--source", "file", "--final", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  c = Source("file");
  EXPECT_EQ(c.lines, 2u);
  EXPECT_EQ(c.rejected, 1u);
}

TEST_F(SourceIdentityTest, OneMibLineEndingInCrlfIsAccepted) {
  const size_t mib = size_t{1} << 20;
  std::string head = "{\"producer\":\"p\",\"seq\":0,\"ts\":0,\"metric\":\"m\",\"pad\":\"";
  std::string line = head + std::string(mib - head.size() - 2, 'x') + "\"}";
  ASSERT_EQ(line.size(), mib);
  WriteFile(in, line + "\r\n" + Ev("p", 1) + "\r\n");
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Counts c = Source();
  EXPECT_EQ(c.lines, 2u);
  EXPECT_EQ(c.applied, 2u);
  EXPECT_EQ(c.rejected, 0u) << Rejects().substr(0, 300);
}

TEST_F(SourceIdentityTest, DeepUnknownFieldNamesTheDepthLimit) {
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "[";
  for (int i = 0; i < 300; ++i) deep += "]";
  WriteFile(in, "{\"producer\":\"p\",\"seq\":0,\"ts\":0,\"metric\":\"m\",\"x\":" + deep + "}\n");
  ASSERT_EQ(Ingest(in).exit_code, 0);
  EXPECT_EQ(Source().rejected, 1u);
  const std::string rejects = Rejects();
  EXPECT_NE(rejects.find("depth limit"), std::string::npos) << rejects.substr(0, 300);
  EXPECT_EQ(rejects.find("invalid JSON"), std::string::npos) << rejects.substr(0, 300);
}

TEST_F(SourceIdentityTest, ByteOrderMarkAtTheStartIsSkipped) {
  WriteFile(in, "\xEF\xBB\xBF" + Evs("p", 0, 3));
  ASSERT_EQ(Ingest(in).exit_code, 0);
  ASSERT_EQ(Ingest("-", "\xEF\xBB\xBF" + Evs("q", 0, 2)).exit_code, 0);
  Counts c = Source();
  EXPECT_EQ(c.lines, 5u);
  EXPECT_EQ(c.applied, 5u);
  EXPECT_EQ(Rejects(), "");
}

TEST_F(SourceIdentityTest, SummarySaysThisRunThenTotalsAndWhereRejectsWent) {
  WriteFile(in, Evs("p", 0, 3) + "bad\n");
  ASSERT_EQ(Ingest(in).exit_code, 0);
  AppendFile(in, Evs("p", 3, 5) + Ev("p", 0) + "\n");
  RunResult r = Ingest(in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("feed: this run: lines 3, applied 2, duplicates 1, fenced 0, rejected 0, ignored 0; "
                       "source totals: lines 7, applied 5, duplicates 1, fenced 0, rejected 1, ignored 0"),
            std::string::npos)
      << r.err;
  // Where rejects went is said by the run that rejected them
  // (the first one here), not by every later run.
  EXPECT_EQ(r.err.find("rejected lines in"), std::string::npos) << r.err;
  AppendFile(in, "bad again\n");
  r = Ingest(in);
  EXPECT_NE(r.err.find("rejected 1, ignored 0; source totals:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rejected lines in " + root + "/rejects/feed.ndjson"), std::string::npos) << r.err;
}

// The position's new parts (identity, the taken half line's flag) commit in
// the batch's transaction: a crash at either ingest point, then a rerun,
// leaves the root as a clean run does, through a half line, its tail, a
// rewrite in place and bad lines.
class SourceIdentityCrashTest : public ::testing::TestWithParam<std::pair<const char*, int>> {};

std::string Scenario(const std::string& dir, const std::map<std::string, std::string>& crash) {
  const std::string root = dir + "/root", in = dir + "/in.ndjson";
  EXPECT_EQ(Snapsink({"init", root}).exit_code, 0);
  auto ingest = [&] {
    const std::vector<std::string> args = {"ingest", root, in, "--source", "feed", "--commit-every", "2", "--quiet"};
    RunResult r = Snapsink(args, crash);
    if (r.exit_code == 99) r = Snapsink(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  WriteFile(in, Evs("p", 0, 5) + Ev("p", 5));
  ingest();
  AppendFile(in, "\r\nbad\n" + Evs("p", 6, 9));
  ingest();
  WriteFile(in, Evs("q", 0, 4) + "bad\n" + Evs("p", 0, 3));  // rewritten in place
  ingest();
  return StateDump(root) + "## rejects\n" + ReadFile(root + "/rejects/feed.ndjson");
}

TEST_P(SourceIdentityCrashTest, RerunMatchesCleanRun) {
  TempDir clean, crashed;
  const std::string want = Scenario(clean.path(), {});
  const std::string got = Scenario(
      crashed.path(), {{"SNAPSINK_CRASH_AT", GetParam().first}, {"SNAPSINK_CRASH_HIT", std::to_string(GetParam().second)}});
  EXPECT_EQ(got, want);
  EXPECT_NE(want.find("\"lines\":18,\"applied\":13,\"duplicates\":3,\"fenced\":0,\"rejected\":2"),
            std::string::npos)
      << want;
}

INSTANTIATE_TEST_SUITE_P(Points, SourceIdentityCrashTest,
                         ::testing::Values(std::pair{"ingest.before_commit", 1}, std::pair{"ingest.before_commit", 2},
                                           std::pair{"ingest.before_commit", 3}, std::pair{"ingest.after_commit", 1},
                                           std::pair{"ingest.after_commit", 3}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.first) + "_hit" + std::to_string(info.param.second);
                           for (char& c : name) c = c == '.' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace snapsink::testing
