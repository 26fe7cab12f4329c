// engine/line_reader, through its public interface only (it is being
// rewritten): lines, offsets, a start offset, the last line without '\n',
// overlong lines and padding.
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
};

std::vector<Got> ReadAll(const std::string& path, uint64_t start = 0) {
  std::unique_ptr<LineReader> r;
  Status s = LineReader::Open(path, start, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::vector<Got> out;
  if (!s.ok()) return out;
  Line line;
  while (r->Next(&line)) {
    EXPECT_GE(line.capacity, line.size + kLinePadding);
    out.push_back({std::string(line.data, line.size), line.offset, line.end_offset, line.overlong});
  }
  EXPECT_TRUE(r->status().ok()) << r->status().ToString();
  return out;
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
  EXPECT_EQ(got[3].text, "last");  // no trailing newline
  EXPECT_EQ(got[3].end_offset, 12u);
}

TEST(LineReaderTest, StartsAtOffset) {
  TempDir d;
  WriteFile(d / "in", "one\ntwo\nthree\n");
  const auto got = ReadAll(d / "in", 4);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].text, "two");
  EXPECT_EQ(got[0].offset, 4u);
}

TEST(LineReaderTest, StartBeyondTheEndIsAnError) {
  TempDir d;
  WriteFile(d / "in", "one\n");
  std::unique_ptr<LineReader> r;
  EXPECT_FALSE(LineReader::Open(d / "in", 100, &r).ok());
}

TEST(LineReaderTest, MissingFileIsAnError) {
  TempDir d;
  std::unique_ptr<LineReader> r;
  EXPECT_FALSE(LineReader::Open(d / "missing", 0, &r).ok());
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
