// `snapsink ingest` on bad input and on errors (docs/CONTRACT.md 1, 2, 5, 7), through the binary.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// Minimal JSON quoting for the ASCII names these tests use.
std::string Q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

struct Ev {
  std::string producer = "p";
  uint64_t seq = 0;
  int64_t epoch = -1;  // -1: field absent
  std::string ts = "\"2026-10-21T10:15:03Z\"";
  std::string metric = "orders";
  std::string key = "eu";
  std::string value = "";  // "": absent
  std::string op = "";
  std::string Line() const {
    std::string s = "{\"producer\":" + Q(producer);
    if (epoch >= 0) s += ",\"epoch\":" + std::to_string(epoch);
    s += ",\"seq\":" + std::to_string(seq) + ",\"ts\":" + ts + ",\"metric\":" + Q(metric) + ",\"key\":" + Q(key);
    if (!value.empty()) s += ",\"value\":" + value;
    if (!op.empty()) s += ",\"op\":" + Q(op);
    return s + "}";
  }
};

std::string L(const std::string& producer, uint64_t seq, const std::string& value = "1") {
  Ev e;
  e.producer = producer;
  e.seq = seq;
  e.value = value;
  return e.Line();
}

// Builds an input file and remembers where each line starts.
struct Input {
  std::string data;
  std::vector<uint64_t> starts;  // starts[i]: offset of line i+1
  std::vector<std::string> lines;
  Input& Add(const std::string& line, const std::string& eol = "\n") {
    starts.push_back(data.size());
    lines.push_back(line);
    data += line + eol;
    return *this;
  }
};

std::string SourceJson(const std::string& source, uint64_t offset, uint64_t lines, uint64_t applied,
                       uint64_t duplicates, uint64_t fenced, uint64_t rejected, uint64_t ignored = 0) {
  EXPECT_EQ(lines, applied + duplicates + fenced + rejected + ignored) << "test bug";
  return "{\"source\":" + Q(source) + ",\"offset\":" + std::to_string(offset) + ",\"lines\":" + std::to_string(lines) +
         ",\"applied\":" + std::to_string(applied) + ",\"duplicates\":" + std::to_string(duplicates) +
         ",\"fenced\":" + std::to_string(fenced) + ",\"rejected\":" + std::to_string(rejected) +
         ",\"ignored\":" + std::to_string(ignored) + "}\n";
}

// Without the fields of id dedup and producer retention (tested in
// id_dedup_test.cc and producer_retention_test.cc).
std::string Inspect(const std::string& root, const std::string& what) {
  RunResult r = Snapsink({"inspect", root, what, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return WithoutIdFields(r.out);
}

struct Reject {
  std::string source, reason, raw;
  uint64_t line = 0, offset = 0;
  bool truncated = false;
};

std::vector<Reject> ReadRejects(const std::string& path) {
  std::vector<Reject> out;
  const std::string data = ReadFile(path);
  size_t pos = 0;
  simdjson::dom::parser parser;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    EXPECT_NE(nl, std::string::npos) << "rejects file must end with a newline";
    if (nl == std::string::npos) break;
    simdjson::padded_string line(data.substr(pos, nl - pos));
    simdjson::dom::element doc = parser.parse(line);
    Reject r;
    r.source = std::string(std::string_view(doc["source"]));
    r.reason = std::string(std::string_view(doc["reason"]));
    r.raw = std::string(std::string_view(doc["raw"]));
    r.line = uint64_t(doc["line"]);
    r.offset = uint64_t(doc["offset"]);
    bool t = false;
    if (doc["truncated"].get(t) == simdjson::SUCCESS) r.truncated = t;
    out.push_back(std::move(r));
    pos = nl + 1;
  }
  return out;
}

int CountLines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class IngestCliTest : public ::testing::Test {
 protected:
  void SetUp() override { Init(); }
  void Init(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"init", root};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Snapsink(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  RunResult Ingest(std::vector<std::string> files, std::vector<std::string> flags = {},
                   const std::string& stdin_data = "") {
    std::vector<std::string> args = {"ingest", root};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), flags.begin(), flags.end());
    return Snapsink(args, {}, stdin_data);
  }
  std::string RejectsFile(const std::string& sanitized) { return root + "/rejects/" + sanitized + ".ndjson"; }

  TempDir d;
  std::string root = d / "root";
  std::string in = d / "in.ndjson";
  std::string in_rejects = RejectsFile(SanitizedIn());

 private:
  std::string SanitizedIn() {
    std::string s = in;
    for (char& c : s)
      if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    return s;
  }
};

TEST_F(IngestCliTest, EveryRejectReasonLandsInRejectsWithLineOffsetRaw) {
  Input f;
  Ev bad_epoch;
  bad_epoch.seq = 9;
  bad_epoch.epoch = 4294967296LL;
  Ev long_metric;
  long_metric.seq = 9;
  long_metric.metric = std::string(129, 'm');
  Ev bad_op;
  bad_op.seq = 9;
  bad_op.op = "delete";
  Ev bad_ts;
  bad_ts.seq = 9;
  bad_ts.ts = "\"yesterday\"";
  Ev empty_producer;
  empty_producer.producer = "";
  f.Add(L("p", 0));                                                                      // 1
  f.Add("{\"producer\":\"p\",\"seq\":1");                                                // 2 invalid JSON
  f.Add("{\"producer\":\"p\",\"ts\":0,\"metric\":\"m\"}");                              // 3 missing seq
  f.Add("{\"producer\":\"p\",\"seq\":\"x\",\"ts\":0,\"metric\":\"m\"}");                // 4 wrong type
  f.Add(bad_epoch.Line());                                                               // 5 out of range
  f.Add("");                                                                             // 6 empty
  f.Add("   \t");                                                                        // 7 blank
  f.Add(L("p", 9, "1.0000001"));                                                         // 8 7 decimals
  f.Add("[1,2]");                                                                        // 9 not an object
  f.Add(bad_ts.Line());                                                                  // 10
  f.Add(bad_op.Line());                                                                  // 11
  f.Add(empty_producer.Line());                                                          // 12
  f.Add(L("p", 1));                                                                      // 13
  f.Add(long_metric.Line());                                                             // 14
  f.Add("{\"producer\":\"p\",\"seq\":2,\"ts\":0,\"metric\":\"m\",\"extra\":{\"a\":[1,null]}}");  // 15 ok
  WriteFile(in, f.data);

  RunResult r = Ingest({in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 15, 3, 0, 0, 12));

  const std::vector<std::pair<int, std::string>> expected = {
      {2, "invalid JSON"},  {3, "missing field seq"}, {4, "field seq"},       {5, "field epoch"},
      {6, "empty line"},    {7, "empty line"},        {8, "field value"},     {9, "not a JSON object"},
      {10, "field ts"},     {11, "field op"},         {12, "field producer"}, {14, "field metric"},
  };
  std::vector<Reject> rejects = ReadRejects(in_rejects);
  ASSERT_EQ(rejects.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [line, reason] = expected[i];
    SCOPED_TRACE("line " + std::to_string(line));
    EXPECT_EQ(rejects[i].source, in);
    EXPECT_EQ(rejects[i].line, static_cast<uint64_t>(line));
    EXPECT_EQ(rejects[i].offset, f.starts[line - 1]);
    EXPECT_EQ(rejects[i].raw, f.lines[line - 1]);
    EXPECT_NE(rejects[i].reason.find(reason), std::string::npos) << rejects[i].reason;
    EXPECT_FALSE(rejects[i].truncated);
  }
  // Rerun: nothing new, no duplicate reject lines.
  const std::string before = ReadFile(in_rejects);
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(ReadFile(in_rejects), before);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 15, 3, 0, 0, 12));
}

TEST_F(IngestCliTest, RejectsFileIsNamedAfterSanitizedSource) {
  WriteFile(in, "nope\n" + L("p", 0) + "\n");
  ASSERT_EQ(Ingest({in}, {"--source", "feed/a b:c"}).exit_code, 0);
  std::vector<Reject> rejects = ReadRejects(RejectsFile("feed_a_b_c"));
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0].source, "feed/a b:c");
  EXPECT_EQ(rejects[0].line, 1u);
  EXPECT_EQ(rejects[0].offset, 0u);
  EXPECT_EQ(rejects[0].raw, "nope");
  EXPECT_EQ(Inspect(root, "sources"), SourceJson("feed/a b:c", 5 + L("p", 0).size() + 1, 2, 1, 0, 0, 1));
}

std::string CommitEveryName(const ::testing::TestParamInfo<int>& info) {
  return "commit_every_" + std::to_string(info.param);
}

class IngestOnErrorStopTest : public IngestCliTest, public ::testing::WithParamInterface<int> {};

TEST_P(IngestOnErrorStopTest, ExitsTwoAfterCommittingEverythingBefore) {
  const std::string every = std::to_string(GetParam());
  Input f;
  f.Add(L("p", 0, "1")).Add(L("p", 1, "2")).Add(L("p", 1, "2")).Add("{bad").Add(L("p", 2, "4")).Add(L("p", 3, "8"));
  WriteFile(in, f.data);
  for (int attempt = 0; attempt < 2; ++attempt) {
    RunResult r = Ingest({in}, {"--on-error", "stop", "--commit-every", every});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(in + ":4: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("invalid JSON"), std::string::npos) << r.err;
    EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.starts[3], 3, 2, 1, 0, 0));
    EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":2,\"open_gaps\":0}\n");
    EXPECT_EQ(ReadFile(in_rejects), "");
  }
  // Skip goes past it and records it.
  RunResult r = Ingest({in}, {"--commit-every", every});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 6, 4, 1, 0, 1));
  std::vector<Reject> rejects = ReadRejects(in_rejects);
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0].line, 4u);
  EXPECT_EQ(rejects[0].offset, f.starts[3]);
  EXPECT_EQ(rejects[0].raw, "{bad");
}

INSTANTIATE_TEST_SUITE_P(IngestCommitEvery, IngestOnErrorStopTest, ::testing::Values(1, 2, 3, 100), CommitEveryName);

TEST_F(IngestCliTest, OnErrorStopOnFirstLine) {
  WriteFile(in, "x\n" + L("p", 0) + "\n");
  RunResult r = Ingest({in}, {"--on-error", "stop"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(in + ":1: "), std::string::npos) << r.err;
  // Nothing applied; the offset, if recorded, is 0.
  const std::string sources = Inspect(root, "sources");
  EXPECT_TRUE(sources.empty() || sources == SourceJson(in, 0, 0, 0, 0, 0, 0)) << sources;
  EXPECT_EQ(Inspect(root, "producers"), "");
}

TEST_F(IngestCliTest, FinalLineWithoutNewlineIsAnEvent) {
  const std::string data = L("p", 0) + "\n" + L("p", 1);
  WriteFile(in, data);
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, data.size(), 2, 2, 0, 0, 0));
  EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":2,\"open_gaps\":0}\n");
}

TEST_F(IngestCliTest, CrlfAccepted) {
  const std::string data = L("p", 0) + "\r\n" + L("p", 1) + "\n" + L("p", 2) + "\r\n" + L("p", 3) + "\r";
  WriteFile(in, data);
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, data.size(), 4, 4, 0, 0, 0));
  EXPECT_EQ(ReadFile(in_rejects), "");
}

// A valid event padded to exactly n bytes with an unknown field.
std::string PaddedEvent(uint64_t seq, size_t n) {
  std::string head = "{\"producer\":\"p\",\"seq\":" + std::to_string(seq) +
                     ",\"ts\":0,\"metric\":\"m\",\"pad\":\"";
  std::string tail = "\"}";
  return head + std::string(n - head.size() - tail.size(), 'x') + tail;
}

TEST_F(IngestCliTest, OverlongLinesRejectedAndIngestGoesOn) {
  const size_t mib = size_t{1} << 20;
  Input f;
  f.Add(L("p", 0));
  f.Add(PaddedEvent(1, mib));          // exactly 1 MiB: fine
  f.Add(PaddedEvent(2, mib + 1));      // over: rejected
  f.Add(L("p", 2));
  f.Add(PaddedEvent(3, 5 * mib + 7));  // far over, longer than a read block
  f.Add(L("p", 3));
  f.Add(PaddedEvent(4, 3 * mib), "");  // final, no newline, over
  WriteFile(in, f.data);
  RunResult r = Ingest({in}, {"--commit-every", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // docs/CONTRACT.md 1: a last line without '\n' that is not a whole event may still be
  // being written: it is left unread (the position stays before it) ...
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.starts[6], 6, 4, 0, 0, 2));
  EXPECT_NE(r.err.find(":7: last line has no newline"), std::string::npos) << r.err;
  // ... and read as one line once its writer ends it.
  AppendFile(in, "\n");
  f.data += "\n";
  r = Ingest({in}, {"--commit-every", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 7, 4, 0, 0, 3));
  EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":4,\"open_gaps\":0}\n");
  std::vector<Reject> rejects = ReadRejects(in_rejects);
  ASSERT_EQ(rejects.size(), 3u);
  const int lines[] = {3, 5, 7};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rejects[i].line, static_cast<uint64_t>(lines[i]));
    EXPECT_EQ(rejects[i].offset, f.starts[lines[i] - 1]);
    EXPECT_NE(rejects[i].reason.find("1 MiB"), std::string::npos) << rejects[i].reason;
    EXPECT_LE(rejects[i].raw.size(), mib);
    EXPECT_EQ(rejects[i].raw, f.lines[lines[i] - 1].substr(0, rejects[i].raw.size()));
  }
}

TEST_F(IngestCliTest, EmptyLineRejected) {
  Input f;
  f.Add(L("p", 0)).Add("").Add(L("p", 1)).Add("\r");
  WriteFile(in, f.data);
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 4, 2, 0, 0, 2));
  std::vector<Reject> rejects = ReadRejects(in_rejects);
  ASSERT_EQ(rejects.size(), 2u);
  EXPECT_EQ(rejects[0].line, 2u);
  EXPECT_EQ(rejects[0].offset, f.starts[1]);
  EXPECT_EQ(rejects[0].raw, "");
  EXPECT_EQ(rejects[0].reason, "empty line");
  EXPECT_EQ(rejects[1].line, 4u);
  EXPECT_EQ(rejects[1].offset, f.starts[3]);
}

TEST_F(IngestCliTest, RejectedSumOverflowLeavesNoTrace) {
  // 9e12 twice overflows the int64 micros of the (window, metric) total even
  // on different keys; the rejected event must not leave a row behind.
  Input f;
  f.Add(L("p", 0, "9000000000000")).Add(L("p", 1, "9000000000000"));
  Ev k2;
  k2.seq = 1;
  k2.key = "us";
  k2.value = "9000000000000";
  f.Add(k2.Line());  // seq 1 again, other key: total overflows
  k2.seq = 1;
  k2.key = "as";
  k2.value = "2";
  f.Add(k2.Line());  // now fits
  WriteFile(in, f.data);
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 4, 2, 0, 0, 2));
  std::vector<Reject> rejects = ReadRejects(in_rejects);
  ASSERT_EQ(rejects.size(), 2u);
  EXPECT_NE(rejects[0].reason.find("overflow"), std::string::npos) << rejects[0].reason;
  EXPECT_NE(rejects[1].reason.find("overflow"), std::string::npos) << rejects[1].reason;
  ASSERT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"publish", root}).exit_code, 0);
  RunResult q = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(q.out,
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"as\",\"count\":1,\"sum\":2,"
            "\"version\":1,\"generation\":1}\n"
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":1,\"sum\":9000000000000,"
            "\"version\":1,\"generation\":1}\n");
}

class IngestOnGapStopTest : public IngestCliTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override { Init({"--on-gap", "stop"}); }
};

TEST_P(IngestOnGapStopTest, ExitsThreeNamingProducerAndRange) {
  const std::string every = std::to_string(GetParam());
  Input f;
  f.Add(L("p", 0)).Add(L("q", 0)).Add(L("p", 1)).Add(L("p", 5)).Add(L("p", 2));
  WriteFile(in, f.data);
  for (int attempt = 0; attempt < 2; ++attempt) {
    RunResult r = Ingest({in}, {"--commit-every", every});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("producer p"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("2..4"), std::string::npos) << r.err;
    EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.starts[3], 3, 3, 0, 0, 0));
    EXPECT_EQ(Inspect(root, "producers"),
              "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":2,\"open_gaps\":0}\n"
              "{\"producer\":\"q\",\"epoch\":0,\"next_seq\":1,\"open_gaps\":0}\n");
    EXPECT_EQ(Inspect(root, "gaps"), "");
  }
}

INSTANTIATE_TEST_SUITE_P(IngestCommitEvery, IngestOnGapStopTest, ::testing::Values(1, 2, 100), CommitEveryName);

TEST_F(IngestCliTest, OnGapStopAlsoForNewEpochAboveZero) {
  RunResult init = Snapsink({"init", d / "r2", "--on-gap", "stop"});
  ASSERT_EQ(init.exit_code, 0);
  Ev e;
  e.epoch = 1;
  e.seq = 0;
  Input f;
  f.Add(e.Line());
  e.epoch = 2;
  e.seq = 3;
  f.Add(e.Line());
  WriteFile(in, f.data);
  RunResult r = Snapsink({"ingest", d / "r2", in});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("producer p"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("0..2"), std::string::npos) << r.err;
  EXPECT_EQ(Inspect(d / "r2", "producers"), "{\"producer\":\"p\",\"epoch\":1,\"next_seq\":1,\"open_gaps\":0}\n");
}

// Broke: a 1025th open gap stopped the source for good (exit 3
// on every rerun). The record keeps 1024; the lowest spill to their table
// (engine/gap_spill.h), and dedup stays exact across both.
TEST_F(IngestCliTest, MoreThan1024GapsSpillAndStillFill) {
  // Gaps [4i, 4i+3) for i < 1024.
  Input f;
  for (uint64_t i = 0; i < 1024; ++i) f.Add(L("p", 4 * i + 3));
  f.Add(L("p", 4 * 1024 + 1));  // the 1025th gap: [0, 3) spills
  WriteFile(in, f.data);
  RunResult r = Ingest({in}, {"--commit-every", "100"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":4098,\"open_gaps\":1025}\n");
  std::string gaps = Inspect(root, "gaps");
  EXPECT_EQ(CountLines(gaps), 1025);
  EXPECT_EQ(gaps.substr(0, gaps.find('\n') + 1),
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":0,\"to_seq\":2,\"missing\":3}\n");

  // A fill that splits a spilled gap, and one of the record's last gap.
  const std::string split = d / "split.ndjson";
  WriteFile(split, L("p", 4096) + "\n" + L("p", 1) + "\n" + L("p", 1) + "\n");
  r = Ingest({split});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":4098,\"open_gaps\":1025}\n");
  gaps = Inspect(root, "gaps");
  EXPECT_EQ(gaps.substr(0, gaps.find('\n', gaps.find('\n') + 1) + 1),
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":0,\"to_seq\":0,\"missing\":1}\n"
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":2,\"to_seq\":2,\"missing\":1}\n");

  // Filling spilled and recorded gaps; repeats of them are duplicates.
  const std::string ends = d / "ends.ndjson";
  WriteFile(ends, L("p", 0) + "\n" + L("p", 2) + "\n" + L("p", 4) + "\n" + L("p", 5) + "\n" + L("p", 6) + "\n" +
                      L("p", 0) + "\n" + L("p", 3) + "\n");
  r = Ingest({ends});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":0,\"next_seq\":4098,\"open_gaps\":1022}\n");
  gaps = Inspect(root, "gaps");
  EXPECT_EQ(gaps.substr(0, gaps.find('\n') + 1),
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":8,\"to_seq\":10,\"missing\":3}\n");
  EXPECT_NE(Inspect(root, "sources").find("\"lines\":7,\"applied\":5,\"duplicates\":2"), std::string::npos)
      << Inspect(root, "sources");
}

TEST_F(IngestCliTest, MissingFileExitsOneWithoutStateChange) {
  WriteFile(in, L("p", 0) + "\n");
  RunResult r = Ingest({in, d / "missing.ndjson"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.ndjson"), std::string::npos) << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), "");
  EXPECT_EQ(Inspect(root, "producers"), "");
  EXPECT_EQ(Inspect(root, "windows"), "");
}

TEST_F(IngestCliTest, DirectoryAsInputExitsOne) {
  RunResult r = Ingest({d.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Inspect(root, "sources"), "");
}

TEST_F(IngestCliTest, NotARootExitsOne) {
  WriteFile(in, L("p", 0) + "\n");
  const std::string plain = d / "plain";
  ASSERT_EQ(::mkdir(plain.c_str(), 0755), 0);
  RunResult r = Snapsink({"ingest", plain, in});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_TRUE(TreeContents(plain).empty());  // nothing created (LOCK aside)
  EXPECT_FALSE(std::ifstream(plain + "/state/data.mdb").good());

  r = Snapsink({"ingest", d / "nonexistent", in});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::ifstream(d / "nonexistent").good());
}

// Was: a file shorter than its committed offset exited 1. New contract
// (docs/CONTRACT.md 5): a position is never a reason to skip; a truncated file is read
// again from its start and sequence numbers drop what was applied.
TEST_F(IngestCliTest, FileShorterThanCommittedOffsetIsReadFromItsStart) {
  WriteFile(in, L("p", 0) + "\n" + L("p", 1) + "\n" + L("p", 2) + "\n");
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  const std::string data = L("p", 2) + "\n" + L("p", 3) + "\n";
  WriteFile(in, data);
  RunResult r = Ingest({in});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(in + ": file was replaced since offset "), std::string::npos) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, data.size(), 5, 4, 1, 0, 0));
}

// Was: a second file shorter than its offset failed the pre-check before the
// first was ingested. The pre-check now only refuses unreadable inputs.
TEST_F(IngestCliTest, MissingSecondFileChangesNothingOfTheFirst) {
  const std::string other = d / "other.ndjson";
  WriteFile(in, L("p", 0) + "\n");
  const std::string before = StateDump(root);
  RunResult r = Ingest({in, other});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open " + other), std::string::npos) << r.err;
  EXPECT_EQ(StateDump(root), before);  // `in` was not ingested either
}

TEST_F(IngestCliTest, RejectRawOfACrlfLineHasNoCr) {
  WriteFile(in, "not json\r\n" + L("p", 0) + "\r\n");
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_NE(ReadFile(in_rejects).find("\"raw\":\"not json\"}"), std::string::npos) << ReadFile(in_rejects);
}

// Was: standard input resumed by skipping the committed bytes (a second,
// different stream lost its head). New contract (docs/CONTRACT.md 5): `-` is read from
// its start every time; sequence numbers decide.
TEST_F(IngestCliTest, StdinIsReadFromItsStartEveryTime) {
  const std::string first = L("p", 0) + "\n" + L("p", 1) + "\n" + "bad\n";
  RunResult r = Ingest({"-"}, {"--commit-every", "2"}, first);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson("-", first.size(), 3, 2, 0, 0, 1));

  // The same stream again, longer: every line is read again.
  const std::string second = first + L("p", 2) + "\n" + L("p", 0) + "\n" + L("p", 3);
  r = Ingest({"-"}, {}, second);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson("-", second.size(), 9, 4, 3, 0, 2));
  std::vector<Reject> rejects = ReadRejects(RejectsFile("-"));
  ASSERT_EQ(rejects.size(), 2u);  // the bad line, once per read
  EXPECT_EQ(rejects[0].line, 3u);
  EXPECT_EQ(rejects[1].line, 3u);
  EXPECT_EQ(rejects[0].source, "-");

  // A shorter stream is no error.
  r = Ingest({"-"}, {}, L("p", 4) + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson("-", L("p", 4).size() + 1, 10, 5, 3, 0, 2));

  // A large stream (several read blocks) with a named source, then a longer one.
  std::string big;
  for (uint64_t i = 0; i < 60000; ++i) big += L("big", i, "0.5") + "\n";
  const size_t half = big.find('\n', big.size() / 2) + 1;
  ASSERT_EQ(Ingest({"-"}, {"--source", "bigstream"}, big.substr(0, half)).exit_code, 0);
  ASSERT_EQ(Ingest({"-"}, {"--source", "bigstream"}, big).exit_code, 0);
  const uint64_t h = static_cast<uint64_t>(std::count(big.begin(), big.begin() + half, '\n'));
  const std::string sources = Inspect(root, "sources");
  EXPECT_NE(sources.find(SourceJson("bigstream", big.size(), 60000 + h, 60000, h, 0, 0)), std::string::npos) << sources;
}

TEST_F(IngestCliTest, SecondWriterGetsExitFive) {
  WriteFile(in, L("p", 0) + "\n");
  const std::string lock = root + "/LOCK";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  struct flock fl;
  std::memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(fd, F_OFD_SETLK, &fl), 0) << std::strerror(errno);
  RunResult r = Ingest({in});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("locked"), std::string::npos) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), "");  // readers are not blocked
  ::close(fd);
  r = Ingest({in});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, L("p", 0).size() + 1, 1, 1, 0, 0, 0));
}

TEST_F(IngestCliTest, SourceWithTwoFilesExitsOne) {
  WriteFile(in, L("p", 0) + "\n");
  WriteFile(d / "b.ndjson", L("q", 0) + "\n");
  RunResult r = Ingest({in, d / "b.ndjson"}, {"--source", "s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Inspect(root, "sources"), "");
  EXPECT_EQ(Inspect(root, "producers"), "");
}

TEST_F(IngestCliTest, ResumeAfterAppendAppliesOnlyNewLines) {
  Input f;
  f.Add(L("p", 0, "1")).Add(L("p", 1, "2")).Add(L("q", 0, "3"));
  WriteFile(in, f.data);
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 3, 3, 0, 0, 0));
  // Unchanged file: nothing happens.
  ASSERT_EQ(Ingest({in}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 3, 3, 0, 0, 0));
  // Appended: a redelivery, a new one, a bad one.
  f.Add(L("p", 1, "2")).Add(L("p", 2, "4")).Add("oops");
  AppendFile(in, f.data.substr(f.starts[3]));
  ASSERT_EQ(Ingest({in, in}).exit_code, 0);  // the same file twice: the second time is a no-op
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 6, 4, 1, 0, 1));
  std::vector<Reject> rejects = ReadRejects(in_rejects);
  ASSERT_EQ(rejects.size(), 1u);
  EXPECT_EQ(rejects[0].line, 6u);
  EXPECT_EQ(rejects[0].offset, f.starts[5]);
  ASSERT_EQ(Snapsink({"seal", root, "--all"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"publish", root}).exit_code, 0);
  RunResult q = Snapsink({"query", root, "--format", "json"});
  EXPECT_EQ(q.out,
            "{\"window\":\"2026-10-21T10:00:00Z\",\"metric\":\"orders\",\"key\":\"eu\",\"count\":4,\"sum\":10,"
            "\"version\":1,\"generation\":1}\n");
}

TEST_F(IngestCliTest, FencedAndDuplicatesCountedPerSource) {
  Input f;
  Ev e;
  e.epoch = 2;
  for (uint64_t s = 0; s < 3; ++s) {
    e.seq = s;
    f.Add(e.Line());
  }
  e.epoch = 1;
  e.seq = 7;
  f.Add(e.Line());  // zombie
  e.epoch = 2;
  e.seq = 1;
  f.Add(e.Line());  // duplicate
  e.epoch = 3;
  e.seq = 0;
  f.Add(e.Line());  // new incarnation
  e.epoch = 2;
  e.seq = 3;
  f.Add(e.Line());  // zombie now
  WriteFile(in, f.data);
  ASSERT_EQ(Ingest({in}, {"--commit-every", "3"}).exit_code, 0);
  EXPECT_EQ(Inspect(root, "sources"), SourceJson(in, f.data.size(), 7, 4, 1, 2, 0));
  EXPECT_EQ(Inspect(root, "producers"), "{\"producer\":\"p\",\"epoch\":3,\"next_seq\":1,\"open_gaps\":0}\n");
}

}  // namespace
}  // namespace snapsink::testing
