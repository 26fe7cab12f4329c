// docs/FORMAT.md's size bounds, as the reader enforces them: the smallest
// snapshot file (no rows) is 193 bytes, and anything shorter is refused
// before its footer is read.
#include <gtest/gtest.h>

#include "engine/env.h"
#include "snapshot/snapshot_file.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

TEST(FormatBounds, SmallestSnapshotFileIs193BytesAndShorterIsRefused) {
  TempDir dir;
  const std::string path = dir / "empty";
  std::unique_ptr<SnapshotWriter> w;
  ASSERT_STATUS_OK(SnapshotWriter::Open(Env::Default(), path, &w));
  SnapshotFileInfo info;
  ASSERT_STATUS_OK(w->Finish(&info));
  EXPECT_EQ(info.bytes, 193u);
  std::unique_ptr<SnapshotReader> r;
  ASSERT_STATUS_OK(SnapshotReader::Open(Env::Default(), path, &r));
  EXPECT_EQ(r->rows(), 0u);
  const std::string bytes = ReadFile(path);
  WriteFile(path, bytes.substr(1));  // 192 bytes, footer intact
  Status s = SnapshotReader::Open(Env::Default(), path, &r);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("file too short (192 bytes)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace snapsink::testing
