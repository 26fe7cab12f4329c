// verify names what differs: a snapshot manifest whose window
// count or sum differs from its rows names that field (it used to say
// `events`), and CURRENT whose manifest checksum differs from the one state
// records for the same generation says so (it used to say "names generation
// 1, but state records generation 1"). Through the binary.
#include <xxhash.h>

#include <gtest/gtest.h>

#include <vector>

#include "engine/filenames.h"
#include "snapshot/checked_json.h"
#include "publish/current_file.h"
#include "publish/generation_manifest.h"
#include "snapshot/snapshot_manifest.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

enum class Field { kCount, kSum };

// A root with one published window, whose snapshot manifest then gets
// another window count or sum, with every checksum made valid again (the
// generation's part records the new manifest's XXH64, the top manifest the
// new part's, CURRENT the new top manifest's): only the rows and the seal record still disagree.
void PublishThenTamper(const TempDir& dir, Field field, std::string* root_out) {
  const std::string root = dir / "root";
  ASSERT_EQ(Snapsink({"init", root}).exit_code, 0);
  WriteFile(dir / "in.ndjson", EventLine().Seq(0).Ts("2026-10-21T10:00:01Z").Metric("orders").Key("eu").Value("1.5").Line() +
                                   EventLine().Seq(1).Ts("2026-10-21T10:00:02Z").Metric("orders").Key("us").Value("2").Line());
  RunResult r = Snapsink({"run", root, dir / "in.ndjson", "--final"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Snapsink({"verify", root}).exit_code, 0);

  const std::string gpath = filenames::GenerationManifest(root, 1);
  GenerationManifest g;
  ASSERT_STATUS_OK(GenerationManifest::Decode(ReadFile(gpath), gpath, &g));
  ASSERT_EQ(g.parts.size(), 1u);
  // Down the tree (docs/FORMAT.md section 4) to the window's leaf.
  std::vector<GenerationIndexPart> path;
  GenerationPartRef ref = g.parts[0];
  for (uint32_t level = g.depth - 1; level > 0; --level) {
    const std::string ipath = filenames::GenerationPart(root, ref.xxh64);
    GenerationIndexPart index;
    ASSERT_STATUS_OK(GenerationIndexPart::Decode(ReadFile(ipath), ipath, &index));
    ASSERT_EQ(index.parts.size(), 1u);
    path.push_back(index);
    ref = index.parts[0];
  }
  const std::string ppath = filenames::GenerationPart(root, ref.xxh64);
  GenerationPart part;
  ASSERT_STATUS_OK(GenerationPart::Decode(ReadFile(ppath), ppath, &part));
  ASSERT_EQ(part.windows.size(), 1u);
  const GenerationEntry& w = part.windows[0];
  const std::string mpath = filenames::Join(filenames::SnapshotDir(root, w.window_ms, w.version),
                                            filenames::kSnapshotManifestFile);
  SnapshotManifest m;
  ASSERT_STATUS_OK(SnapshotManifest::Decode(ReadFile(mpath), mpath, &m));
  if (field == Field::kCount) {
    m.count += 1;
  } else {
    m.sum_micros += 250000;
  }
  const std::string mtext = m.Encode();
  WriteFile(mpath, mtext);
  part.windows[0].manifest_xxh64 = XXH64(mtext.data(), mtext.size(), 0);
  // The leaf, then each index part above it, then the top, each naming the
  // new checksum of the one below.
  std::string ptext = part.Encode();
  uint64_t h = XXH64(ptext.data(), ptext.size(), 0);
  WriteFile(filenames::GenerationPart(root, h), ptext);
  for (size_t i = path.size(); i-- > 0;) {
    path[i].parts[0].xxh64 = h;
    ptext = path[i].Encode();
    h = XXH64(ptext.data(), ptext.size(), 0);
    WriteFile(filenames::GenerationPart(root, h), ptext);
  }
  g.parts[0].xxh64 = h;
  const std::string gtext = g.Encode();
  WriteFile(gpath, gtext);
  WriteFile(filenames::Current(root), EncodeCurrent(CurrentPointer{1, XXH64(gtext.data(), gtext.size(), 0)}));
  *root_out = root;
}

TEST(VerifyMessages, WindowCountMismatchNamesCount) {
  TempDir dir;
  std::string root;
  PublishThenTamper(dir, Field::kCount, &root);
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 10) << v.out << v.err;
  EXPECT_NE(v.out.find("window totals: count 2 in the staged files, manifest 3"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("window totals: events"), std::string::npos) << v.out;
}

TEST(VerifyMessages, WindowSumMismatchNamesSum) {
  TempDir dir;
  std::string root;
  PublishThenTamper(dir, Field::kSum, &root);
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 10) << v.out << v.err;
  EXPECT_NE(v.out.find("window totals: sum 3.5 in the staged files, manifest 3.75"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("window totals: events"), std::string::npos) << v.out;
}

TEST(VerifyMessages, CurrentChecksumMismatchSaysTheChecksumDiffers) {
  TempDir dir;
  std::string root;
  PublishThenTamper(dir, Field::kCount, &root);
  RunResult v = Snapsink({"verify", root});
  EXPECT_EQ(v.exit_code, 10) << v.out << v.err;
  EXPECT_EQ(v.out.find("names generation 1, but state records generation 1"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("CURRENT: names generation 1 with manifest checksum "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find(", but state records checksum "), std::string::npos) << v.out;
}

}  // namespace
}  // namespace snapsink::testing
