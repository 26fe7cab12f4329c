// engine/line_reader, through its public interface only: lines, offsets,
// the last line without '\n', overlong lines and padding. (Positions and
// file identity: tests/source_identity_test.cc.)
#include "engine/line_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

struct Got {
  std::string text;
  uint64_t offset, end_offset;
  bool overlong;
  bool terminated;
};

std::vector<Got> ReadAll(const std::string& path) {
  std::unique_ptr<LineReader> r;
  Status s = LineReader::Open(path, &r);
  EXPECT_STATUS_OK(s);
  std::vector<Got> out;
  if (!s.ok()) return out;
  Line line;
  while (r->Next(&line)) {
    EXPECT_GE(line.capacity, line.size + kLinePadding);
    out.push_back({std::string(line.data, line.size), line.offset, line.end_offset, line.overlong, line.terminated});
  }
  EXPECT_STATUS_OK(r->status());
  return out;
}

// NextInBuffer, tried before each Next as ParseAhead does, hands out the
// lines Next alone would, with the same offsets and flags: across the
// reader's 4 MiB blocks, after a byte order mark, with CRLF and empty lines,
// a line of exactly 1 MiB plus its '\r', an overlong one, and a last line
// without '\n'. Lines it gives back to back lie back to back.
TEST(LineReaderTest, NextInBufferGivesTheLinesNextWould) {
  TempDir d;
  std::string in = "\xef\xbb\xbf";
  for (int i = 0; i < 120000; ++i) {
    if (i % 1000 == 7) {
      in += "\n";
    } else if (i == 50000) {
      in.append(kMaxLineBytes, 'm');
      in += "\r\n";  // within the limit: the '\r' does not count
    } else if (i == 90000) {
      in.append(kMaxLineBytes + 5, 'o');
      in += "\n";
    } else {
      in += "{\"line\":" + std::to_string(i) + "}" + (i % 3 == 0 ? "\r\n" : "\n");
    }
  }
  in += "tail";
  WriteFile(d / "in", in);
  const std::vector<Got> expected = ReadAll(d / "in");
  std::unique_ptr<LineReader> r;
  ASSERT_STATUS_OK(LineReader::Open(d / "in", &r));
  std::vector<Got> got;
  size_t in_buffer = 0;
  const char* after_last = nullptr;  // just past the '\n' of the last line NextInBuffer gave
  Line line;
  for (;;) {
    if (r->NextInBuffer(&line)) {
      ++in_buffer;
      if (after_last != nullptr) {
        EXPECT_EQ(line.data, after_last) << "line " << got.size();
      }
      after_last = line.data + line.size + 1;
    } else if (r->Next(&line)) {
      after_last = line.terminated && !line.overlong ? line.data + line.size + 1 : nullptr;
    } else {
      break;
    }
    EXPECT_GE(line.capacity, line.size + kLinePadding);
    got.push_back({std::string(line.data, line.size), line.offset, line.end_offset, line.overlong, line.terminated});
  }
  EXPECT_STATUS_OK(r->status());
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].text, expected[i].text) << "line " << i;
    EXPECT_EQ(got[i].offset, expected[i].offset) << "line " << i;
    EXPECT_EQ(got[i].end_offset, expected[i].end_offset) << "line " << i;
    EXPECT_EQ(got[i].overlong, expected[i].overlong) << "line " << i;
    EXPECT_EQ(got[i].terminated, expected[i].terminated) << "line " << i;
  }
  EXPECT_GT(in_buffer, got.size() * 9 / 10);  // most lines come from the buffer
  EXPECT_TRUE(expected[90000].overlong);
  EXPECT_FALSE(expected[50000].overlong);
  EXPECT_FALSE(expected.back().terminated);
}

// A pinned block keeps its bytes where they are: the reader goes on in
// another block, the history and unconsumed bytes copied there, and reuses
// the first one once it is unpinned. Unpinned, the reader keeps one block.
TEST(LineReaderTest, APinnedBlockIsNeverMovedOrOverwritten) {
  TempDir d;
  std::string in;
  for (int i = 0; i < 400000; ++i) in += "{\"line\":" + std::to_string(i) + ",\"pad\":\"" + std::string(i % 17, 'p') + "\"}\n";
  ASSERT_GT(in.size(), 3 * (size_t{4} << 20));  // lines in at least four blocks
  WriteFile(d / "in", in);
  const std::vector<Got> expected = ReadAll(d / "in");
  for (const bool pin : {true, false}) {
    std::unique_ptr<LineReader> r;
    ASSERT_STATUS_OK(LineReader::Open(d / "in", &r));
    Line line;
    ASSERT_TRUE(r->Next(&line));
    LineReader::Block* first = r->block();
    if (pin) LineReader::Pin(first);
    const Line kept = line;  // a line of the pinned block
    size_t n = 1;
    while (r->Next(&line)) {
      ASSERT_EQ(std::string(line.data, line.size), expected[n].text) << "line " << n;
      ++n;
      if (pin && n == expected.size() / 2) {
        // Still the bytes read first, at the same address, half the input later.
        EXPECT_EQ(std::string(kept.data, kept.size), expected[0].text);
        LineReader::Unpin(first);
      }
    }
    EXPECT_EQ(n, expected.size());
    // Pinned: a second block while the first was pinned, the first reused after.
    EXPECT_EQ(r->blocks_made(), pin ? 2u : 1u);
  }
}

TEST(LineReaderTest, LinesAndOffsets) {
  TempDir d;
  WriteFile(d / "in", "ab\n\ncde\nlast");
  const auto got = ReadAll(d / "in");
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].text, "ab");
  EXPECT_EQ(got[0].offset, 0u);
  EXPECT_EQ(got[0].end_offset, 3u);
  EXPECT_EQ(got[1].text, "");
  EXPECT_EQ(got[2].text, "cde");
  EXPECT_EQ(got[2].offset, 4u);
  EXPECT_TRUE(got[2].terminated);
  EXPECT_EQ(got[3].text, "last");  // no trailing newline
  EXPECT_FALSE(got[3].terminated);
  EXPECT_EQ(got[3].end_offset, 12u);
}

TEST(LineReaderTest, MissingFileIsAnError) {
  TempDir d;
  std::unique_ptr<LineReader> r;
  EXPECT_FALSE(LineReader::Open(d / "missing", &r).ok());
}

TEST(LineReaderTest, OverlongLineIsFlaggedAndSkipped) {
  TempDir d;
  WriteFile(d / "in", "a\n" + std::string(kMaxLineBytes + 10, 'x') + "\nb\n");
  const auto got = ReadAll(d / "in");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got[0].overlong);
  EXPECT_TRUE(got[1].overlong);
  EXPECT_EQ(got[2].text, "b");
  EXPECT_FALSE(got[2].overlong);
  EXPECT_EQ(got[2].offset, 2 + kMaxLineBytes + 10 + 1);
}

}  // namespace
}  // namespace snapsink::testing
