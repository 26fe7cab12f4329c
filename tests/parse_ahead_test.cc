// ParseAhead hands out every line of the input, in order, with exactly what
// LineReader + EventParser on one thread give, across chunk boundaries.
#include "engine/parse_ahead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/event_parser.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "engine/line_reader.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// Lines of every kind: events (escaped strings too), bad JSON, an overlong
// line; more than two chunks of them, and a last line without '\n'.
constexpr size_t kInputLines = std::max<size_t>(2 * ParseAhead::kChunkLines, 16384) + 777;  // then the last one

std::string Input() {
  std::string in;
  const size_t n = kInputLines;
  for (size_t i = 0; i < n; ++i) {
    if (i % 997 == 5) {
      in += "{not json\n";
    } else if (i % 5 == 1) {  // deduplicated by id: no seq, no producer
      in += "{\"id\":\"ev\\\"" + std::to_string(i) + "\",\"ts\":1792576800000,\"metric\":\"m\"}\n";
    } else if (i == 4200) {
      in += "{\"producer\":\"p\",\"seq\":1,\"ts\":1,\"metric\":\"m\",\"key\":\"" + std::string(kMaxLineBytes, 'x') + "\"}\n";
    } else {
      // Escapes in metric and key: EventLine writes its texts as JSON as given.
      in += EventLine()
                .Producer("p" + std::to_string(i % 7))
                .Seq(i)
                .Ts(1792576800000)
                .Metric("m\\u00e9" + std::to_string(i % 3))
                .Key("k\\\"" + std::to_string(i))
                .Value(std::to_string(i) + ".5")
                .Line();
    }
  }
  in += "{\"producer\":\"last\",\"seq\":9,\"ts\":1792576800000,\"metric\":\"m\"}";
  return in;
}

// Ahead(k) is the line that Next will return k calls later, as long as it
// lies in the chunk being handed out; nullptr past that chunk's end.
TEST(ParseAheadTest, AheadNamesTheLineNextWillReturn) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  WriteFile(path, Input());
  std::unique_ptr<LineReader> reader;
  ASSERT_STATUS_OK(LineReader::Open(path, &reader));
  ParseAhead ahead(reader.get());
  EXPECT_EQ(ahead.Ahead(1), nullptr);  // nothing handed out yet
  constexpr size_t kK = 4;
  std::map<size_t, uint64_t> expected;  // line number -> offset Ahead named for it
  size_t n = 0, named = 0, past = 0;
  for (const ParsedLine* p = ahead.Next(); p != nullptr; p = ahead.Next(), ++n) {
    EXPECT_EQ(ahead.Ahead(0), p);
    if (auto it = expected.find(n); it != expected.end()) {
      EXPECT_EQ(p->line.offset, it->second) << "line " << n;
      expected.erase(it);
    }
    if (const ParsedLine* a = ahead.Ahead(kK); a != nullptr) {
      expected[n + kK] = a->line.offset;
      ++named;
    } else {
      ++past;  // the last lines of a chunk
    }
  }
  EXPECT_TRUE(expected.empty());
  EXPECT_GT(named, 2 * ParseAhead::kChunkLines);
  EXPECT_GE(past, 2 * kK);  // at least two chunk ends (three chunks)
}

TEST(ParseAheadTest, SameLinesAndEventsAsParsingInline) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  WriteFile(path, Input());

  std::unique_ptr<LineReader> plain, ahead_reader;
  ASSERT_STATUS_OK(LineReader::Open(path, &plain));
  ASSERT_STATUS_OK(LineReader::Open(path, &ahead_reader));
  ParseAhead ahead(ahead_reader.get());
  EventParser parser;
  Line line;
  size_t n = 0, events = 0, bad = 0, overlong = 0;
  while (plain->Next(&line)) {
    const ParsedLine* p = ahead.Next();
    ASSERT_NE(p, nullptr) << "line " << n;
    EXPECT_EQ(p->line.offset, line.offset);
    EXPECT_EQ(p->line.end_offset, line.end_offset);
    EXPECT_EQ(p->line.terminated, line.terminated);
    EXPECT_EQ(p->line.overlong, line.overlong);
    ASSERT_EQ(std::string_view(p->line.data, p->line.size), std::string_view(line.data, line.size)) << "line " << n;
    if (line.overlong) {
      EXPECT_FALSE(p->ok);
      ++overlong;
    } else {
      Event e;
      std::string reason;
      const bool ok = parser.Parse(line.data, line.size, line.capacity, &e, &reason);
      ASSERT_EQ(p->ok, ok) << "line " << n;
      if (ok) {
        ++events;
        EXPECT_EQ(p->event.producer, e.producer);
        EXPECT_EQ(p->event.metric, e.metric);
        EXPECT_EQ(p->event.key, e.key);
        EXPECT_EQ(p->event.id, e.id);
        EXPECT_EQ(p->event.has_seq, e.has_seq);
        EXPECT_EQ(p->event.seq, e.seq);
        EXPECT_EQ(p->event.ts_ms, e.ts_ms);
        EXPECT_EQ(p->event.value_micros, e.value_micros);
      } else {
        ++bad;
        EXPECT_EQ(p->reason, reason);
      }
    }
    ++n;
  }
  EXPECT_EQ(ahead.Next(), nullptr);
  EXPECT_STATUS_OK(ahead_reader->status());
  EXPECT_EQ(n, kInputLines + 1);
  EXPECT_EQ(overlong, 1u);
  EXPECT_GT(bad, 5u);
  EXPECT_GT(events, 2 * ParseAhead::kChunkLines);
}

// Lines are parsed where the reader read them: each line handed out holds
// the file's bytes at its offset, and so does every line of its chunk until
// the chunk is done, though the helper has read several 4 MiB blocks ahead
// meanwhile (the caller waits at the first line until it has).
TEST(ParseAheadTest, LinesKeepTheirBytesWhileTheReaderReadsOn) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  std::string in;
  for (size_t i = 0; in.size() < 5 * (size_t{4} << 20); ++i) {
    in += EventLine().Producer("p" + std::to_string(i % 13)).Seq(i).Ts(1792576800000).Metric("m").Key(std::string(i % 251, 'k')).Line();
  }
  WriteFile(path, in);
  std::unique_ptr<LineReader> reader;
  ASSERT_STATUS_OK(LineReader::Open(path, &reader));
  ParseAhead ahead(reader.get());
  std::vector<const ParsedLine*> chunk;  // the lines handed out of the chunk being handed out
  size_t n = 0;
  for (const ParsedLine* p = ahead.Next(); p != nullptr; p = ahead.Next(), ++n) {
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the helper fills every chunk
    ASSERT_TRUE(p->ok) << "line " << n << ": " << p->reason;
    ASSERT_EQ(std::string_view(p->line.data, p->line.size), std::string_view(in).substr(p->line.offset, p->line.size))
        << "line " << n;
    chunk.push_back(p);
    if (ahead.Ahead(1) == nullptr) {  // the chunk's last line: all of it still as read
      for (const ParsedLine* q : chunk) {
        ASSERT_EQ(std::string_view(q->line.data, q->line.size), std::string_view(in).substr(q->line.offset, q->line.size))
            << "line at offset " << q->line.offset;
        ASSERT_EQ(q->event.producer, "p" + std::to_string(q->event.seq % 13));
      }
      chunk.clear();
    }
  }
  EXPECT_STATUS_OK(reader->status());
  EXPECT_EQ(ahead.Next(), nullptr);
  EXPECT_GT(reader->blocks_made(), 1u);
}

// Given a window size, each event comes with its aggregate key as the
// apply thread would build it (codec::AggKeyInto for the event's window),
// its metric and key unchanged; a metric with a 0x00 byte (escaped in its
// key) gets none, and neither does any event without a window size.
TEST(ParseAheadTest, AggregateKeyIsTheOneTheApplyThreadWouldBuild) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  std::string in = Input();
  in.insert(0, EventLine().Producer("z").Seq(1).Ts(-3599999).Metric("nul\\u0000m").Key("k").Line() +
                   EventLine().Producer("z").Seq(2).Ts(1).Metric("").Key("").Line());
  WriteFile(path, in);
  constexpr int64_t kWindow = 3600000;
  for (const int64_t window_ms : {kWindow, int64_t{0}}) {
    std::unique_ptr<LineReader> plain, ahead_reader;
    ASSERT_STATUS_OK(LineReader::Open(path, &plain));
    ASSERT_STATUS_OK(LineReader::Open(path, &ahead_reader));
    ParseAhead ahead(ahead_reader.get(), false, window_ms);
    EventParser parser;
    Line line;
    size_t keys = 0, without = 0;
    for (size_t n = 0; plain->Next(&line); ++n) {
      const ParsedLine* p = ahead.Next();
      ASSERT_NE(p, nullptr);
      Event e;
      if (line.overlong || !parser.Parse(line.data, line.size, line.capacity, &e, nullptr)) continue;
      ASSERT_TRUE(p->ok) << "line " << n;
      EXPECT_EQ(p->event.metric, e.metric) << "line " << n;
      EXPECT_EQ(p->event.key, e.key) << "line " << n;
      if (window_ms == 0 || e.metric.find('\0') != std::string_view::npos) {
        EXPECT_TRUE(p->agg_key.empty()) << "line " << n;
        ++without;
        continue;
      }
      std::string want;
      codec::AggKeyInto(&want, WindowStart(e.ts_ms, window_ms), e.metric, e.key);
      EXPECT_EQ(p->agg_key, want) << "line " << n;
      ++keys;
    }
    if (window_ms > 0) {
      EXPECT_GT(keys, 2 * ParseAhead::kChunkLines);
      EXPECT_EQ(without, 1u);  // the metric with a 0x00 byte
    } else {
      EXPECT_EQ(keys, 0u);
    }
  }
}

// The helper thread is stopped and joined when a ParseAhead goes away with
// chunks still queued or being parsed (an ingest that stops at a bad line).
TEST(ParseAheadTest, DestroyedMidInputWithChunksQueued) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  WriteFile(path, Input());
  for (size_t stop_after : {size_t{0}, size_t{1}, size_t{100}, ParseAhead::kChunkLines + 3}) {
    std::unique_ptr<LineReader> reader;
    ASSERT_STATUS_OK(LineReader::Open(path, &reader));
    ParseAhead ahead(reader.get());
    for (size_t i = 0; i < stop_after; ++i) ASSERT_NE(ahead.Next(), nullptr) << i;
  }
}

// Stop joins the helper mid-input and hands the reader back: the lines
// handed out plus those the helper had read ahead plus what the caller
// reads on are the whole input, each once, with no read error.
TEST(ParseAheadTest, StopHandsTheReaderBack) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  // More than kDepth chunks, so lines are left after the ones read ahead.
  std::string input = Input();
  while (static_cast<size_t>(std::count(input.begin(), input.end(), '\n')) <= (ParseAhead::kDepth + 1) * ParseAhead::kChunkLines) {
    input += "\n" + Input();
  }
  ASSERT_GT(static_cast<size_t>(std::count(input.begin(), input.end(), '\n')),
            (ParseAhead::kDepth + 1) * ParseAhead::kChunkLines);
  WriteFile(path, input);
  std::unique_ptr<LineReader> reader;
  ASSERT_STATUS_OK(LineReader::Open(path, &reader));
  ParseAhead ahead(reader.get());
  const ParsedLine* p = nullptr;
  for (size_t i = 0; i < 10; ++i) ASSERT_NE(p = ahead.Next(), nullptr) << i;
  ahead.Stop();
  ahead.Stop();  // idempotent
  EXPECT_STATUS_OK(reader->status());
  // The helper read whole chunks ahead: the reader goes on at a line start
  // past the tenth line, and the lines from there run to the end.
  EXPECT_GE(reader->position(), p->line.end_offset);
  Line line;
  uint64_t expect = reader->position(), lines = 0;
  while (reader->Next(&line)) {
    EXPECT_EQ(line.offset, expect);
    expect = line.end_offset;
    ++lines;
  }
  EXPECT_STATUS_OK(reader->status());
  EXPECT_EQ(expect, input.size());
  EXPECT_GT(lines, 0u);
}

// The commit's tail hash, read from the file beside the reading thread,
// is the one the reader's buffer gives.
TEST(ParseAheadTest, TailHashAtMatchesTailHash) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  WriteFile(path, Input());
  std::unique_ptr<LineReader> reader;
  ASSERT_STATUS_OK(LineReader::Open(path, &reader));
  Line line;
  for (size_t i = 0; reader->Next(&line); ++i) {
    if (i % 1000 != 3 && line.overlong == false) continue;
    uint64_t a = 0, b = 1;
    ASSERT_STATUS_OK(reader->TailHash(line.end_offset, &a));
    ASSERT_STATUS_OK(reader->TailHashAt(line.end_offset, &b));
    ASSERT_EQ(a, b) << "line " << i;
  }
}

// Makes a root at root_path and ingests path into it as source "in", with
// parse-ahead or on one thread; st gets the source's counts.
void IngestIntoNewRoot(const std::string& root_path, const std::string& path, uint64_t commit_every, bool ahead,
                       SourceState* st) {
  ASSERT_STATUS_OK(Root::Init(Env::Default(), root_path, RootConfig()));
  std::unique_ptr<Root> root;
  ASSERT_STATUS_OK(Root::Open(Env::Default(), root_path, Root::Access::kWriter, &root));
  Ingester ingester(root->env(), root->store(), root->config());
  IngestOptions o;
  o.path = path;
  o.source = "in";
  o.commit_every = commit_every;
  o.parse_ahead = ahead;
  o.rejects_file = filenames::RejectsFile(root_path, "in");
  ASSERT_STATUS_OK(ingester.Run(o, st));
}

// Ingest with parse-ahead commits exactly what ingest on one thread does:
// same state, same rejected lines, over several chunks with bad lines,
// duplicates and gaps, at a commit size that does not divide a chunk.
TEST(ParseAheadTest, IngestWithParseAheadMatchesOneThread) {
  TempDir dir;
  std::string in;
  for (size_t i = 0; i < 3 * ParseAhead::kChunkLines + 101; ++i) {
    const uint64_t seq = i % 1000 == 7 ? i - 5 : (i % 1777 == 3 ? i + 2 : i);  // duplicates, gaps
    in += i % 613 == 11 ? "{bad " + std::to_string(i) + "\n"
                        : EventLine()
                              .Producer("p" + std::to_string(i % 5))
                              .Seq(seq / 5)
                              .Ts(static_cast<int64_t>(1792576800000 + 997 * i))
                              .Metric(i % 7 == 2 ? "m\\u0000" + std::to_string(i % 3) : "m" + std::to_string(i % 3))
                              .Key("k" + std::to_string(i % 101))
                              .Value(std::to_string(i) + ".25")
                              .Line();
  }
  WriteFile(dir / "in.ndjson", in);
  std::string outcome[2];
  for (bool ahead : {false, true}) {
    const std::string root_path = dir / (ahead ? "ahead" : "one");
    SourceState st;
    ASSERT_NO_FATAL_FAILURE(IngestIntoNewRoot(root_path, dir / "in.ndjson", 1000, ahead, &st));
    // Sealed and published, so the query shows the aggregates too.
    ASSERT_EQ(Snapsink({"seal", root_path, "--all"}).exit_code, 0);
    ASSERT_EQ(Snapsink({"publish", root_path}).exit_code, 0);
    outcome[ahead] = StateDump(root_path) + ReadFile(filenames::RejectsFile(root_path, "in"));
    // Paths differ only in the root's name.
    const std::string name = ahead ? "ahead" : "one";
    for (size_t at; (at = outcome[ahead].find("/" + name + "/")) != std::string::npos;) {
      outcome[ahead].replace(at, name.size() + 2, "/ROOT/");
    }
  }
  EXPECT_NE(outcome[0].find("\"rejected\":"), std::string::npos);
  EXPECT_EQ(outcome[1], outcome[0]);
}

// Ingest finds a producer through a small table by the id's hash (a set of
// two slots); three producers whose hashes share their low 14 bits share a
// set in any table of up to 16,384 slots and evict one another there. Each
// must still be judged against its own sequence: every event applied once,
// every redelivery a duplicate, with parse-ahead and without.
TEST(ParseAheadTest, ProducersSharingAFrontSetKeepTheirOwnSequences) {
  std::map<uint64_t, std::vector<std::string>> by_set;
  std::vector<std::string> ids;
  for (int i = 0; ids.empty(); ++i) {
    const std::string id = "front-" + std::to_string(i);
    std::vector<std::string>& same = by_set[ProducerHash(id) & 0x3ffe];
    same.push_back(id);
    if (same.size() == 3) ids = same;
  }
  TempDir dir;
  std::string in;
  constexpr uint64_t kPerProducer = 3000;
  uint64_t redelivered = 0;
  for (uint64_t seq = 0; seq < kPerProducer; ++seq) {
    for (size_t p = 0; p < ids.size(); ++p) {
      const uint64_t send = (seq + p) % 10 == 9 ? seq - 1 : seq;  // the seq before, again
      in += EventLine().Producer(ids[p]).Seq(send).Ts(1792576800000 + static_cast<int64_t>(seq)).Metric("m").Line();
      if (send != seq) {
        ++redelivered;
        in += EventLine().Producer(ids[p]).Seq(seq).Ts(1792576800000 + static_cast<int64_t>(seq)).Metric("m").Line();
      }
    }
  }
  WriteFile(dir / "in.ndjson", in);
  for (bool ahead : {false, true}) {
    SourceState st;
    ASSERT_NO_FATAL_FAILURE(IngestIntoNewRoot(dir / (ahead ? "ahead" : "one"), dir / "in.ndjson", 997, ahead, &st));
    EXPECT_EQ(st.applied, ids.size() * kPerProducer) << (ahead ? "parse-ahead" : "one thread");
    EXPECT_EQ(st.duplicates, redelivered) << (ahead ? "parse-ahead" : "one thread");
    EXPECT_EQ(st.rejected, 0u);
  }
}

}  // namespace
}  // namespace snapsink::testing
