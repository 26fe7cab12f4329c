// ParseAhead hands out every line of the input, in order, with exactly what
// LineReader + EventParser on one thread give, across chunk boundaries.
#include "engine/parse_ahead.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/event_parser.h"
#include "engine/line_reader.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

// Lines of every kind: events (escaped strings too), bad JSON, an overlong
// line; more than two chunks of them, and a last line without '\n'.
std::string Input() {
  std::string in;
  const size_t n = 2 * ParseAhead::kChunkLines + 777;
  for (size_t i = 0; i < n; ++i) {
    if (i % 997 == 5) {
      in += "{not json\n";
    } else if (i % 5 == 1) {  // deduplicated by id: no seq, no producer
      in += "{\"id\":\"ev\\\"" + std::to_string(i) + "\",\"ts\":1792576800000,\"metric\":\"m\"}\n";
    } else if (i == 4200) {
      in += "{\"producer\":\"p\",\"seq\":1,\"ts\":1,\"metric\":\"m\",\"key\":\"" + std::string(kMaxLineBytes, 'x') + "\"}\n";
    } else {
      in += "{\"producer\":\"p" + std::to_string(i % 7) + "\",\"seq\":" + std::to_string(i) +
            ",\"ts\":1792576800000,\"metric\":\"m\\u00e9" + std::to_string(i % 3) + "\",\"key\":\"k\\\"" +
            std::to_string(i) + "\",\"value\":" + std::to_string(i) + ".5}\n";
    }
  }
  in += "{\"producer\":\"last\",\"seq\":9,\"ts\":1792576800000,\"metric\":\"m\"}";
  return in;
}

TEST(ParseAheadTest, SameLinesAndEventsAsParsingInline) {
  TempDir dir;
  const std::string path = dir.path() + "/in.ndjson";
  WriteFile(path, Input());

  std::unique_ptr<LineReader> plain, ahead_reader;
  ASSERT_TRUE(LineReader::Open(path, &plain).ok());
  ASSERT_TRUE(LineReader::Open(path, &ahead_reader).ok());
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
  EXPECT_TRUE(ahead_reader->status().ok());
  EXPECT_EQ(n, 2 * ParseAhead::kChunkLines + 778);
  EXPECT_EQ(overlong, 1u);
  EXPECT_GT(bad, 5u);
  EXPECT_GT(events, 2 * ParseAhead::kChunkLines);
}

}  // namespace
}  // namespace snapsink::testing
