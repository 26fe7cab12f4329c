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
