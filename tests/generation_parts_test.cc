// Generations made of parts (publish/generation_manifest.h, docs/FORMAT.md
// section 4), through the binary: a publish writes only the parts of the
// windows it changes, a rollback's generation names the old parts, gc
// removes a part once no kept or pinned generation names it, and a point
// read reads the top manifest and one part.
//
// The root has 1-hour windows, so a part spans 1,024 hours (42.7 days):
// window A (2026-10-21) and window B (50 days later) are in two parts.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <boost/filesystem.hpp>

#include "engine/env.h"
#include "engine/filenames.h"
#include "publish/checked_json.h"
#include "publish/generation_manifest.h"
#include "publish/reader.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

const char kA[] = "2026-10-21T10:00:00Z";
const char kB[] = "2026-12-10T10:00:00Z";

std::set<std::string> PartFiles(const std::string& root) {
  std::set<std::string> out;
  if (!boost::filesystem::exists(root + "/manifests/parts")) return out;
  for (boost::filesystem::directory_iterator it(root + "/manifests/parts"), end; it != end; ++it) {
    out.insert(it->path().filename().string());
  }
  return out;
}

// The part names generation g's top manifest lists, in order.
std::vector<std::string> PartsOf(const std::string& root, uint64_t g) {
  const std::string path = filenames::GenerationManifest(root, g);
  GenerationManifest top;
  EXPECT_STATUS_OK(GenerationManifest::Decode(ReadFile(path), path, &top));
  std::vector<std::string> out;
  for (const GenerationPartRef& p : top.parts) out.push_back(Hex64(p.xxh64));
  return out;
}

std::string Query(const std::string& root, uint64_t generation = 0) {
  std::vector<std::string> args = {"query", root, "--format", "json"};
  if (generation != 0) {
    args.push_back("--generation");
    args.push_back(std::to_string(generation));
  }
  RunResult q = Snapsink(args);
  EXPECT_EQ(q.exit_code, 0) << q.err;
  return q.out;
}

class GenerationPartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    ASSERT_EQ(Snapsink({"init", root_}).exit_code, 0);
    // Generation 1: A and B. Generation 2: a late event for B only.
    Run(EventLine().Seq(0).Ts(kA).Key("eu").Value("1").Line() + EventLine().Seq(1).Ts(kB).Key("us").Value("2").Line());
    Run(EventLine().Seq(2).Ts(Ms(kB) + 5).Key("us").Value("3").Line());
    ASSERT_EQ(CurrentGeneration(root_), 2u);
  }

  void Run(const std::string& lines) {
    const std::string in = dir_ / ("in" + std::to_string(++inputs_) + ".ndjson");
    WriteFile(in, lines);
    RunResult r = Snapsink({"run", root_, in, "--final"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  TempDir dir_;
  std::string root_;
  int inputs_ = 0;
};

TEST_F(GenerationPartsTest, PublishWritesOnlyTheChangedPart) {
  const std::vector<std::string> g1 = PartsOf(root_, 1), g2 = PartsOf(root_, 2);
  ASSERT_EQ(g1.size(), 2u);
  ASSERT_EQ(g2.size(), 2u);
  EXPECT_EQ(g2[0], g1[0]) << "A's part is named again, not rewritten";
  EXPECT_NE(g2[1], g1[1]) << "B has a new version";
  EXPECT_EQ(PartFiles(root_), (std::set<std::string>{g1[0], g1[1], g2[1]}));
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A rollback's generation names the parts of the generation it copies (the
// same bytes, so the same files); gc keeps them once that one is gone, and
// removes the part only generation 2 named.
TEST_F(GenerationPartsTest, RollbackNamesTheOldPartsAndGcRemovesUnnamedOnes) {
  const std::string rows1 = Query(root_, 1);
  const std::vector<std::string> g1 = PartsOf(root_, 1), g2 = PartsOf(root_, 2);
  RunResult r = Snapsink({"rollback", root_, "--generation", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(CurrentGeneration(root_), 3u);
  EXPECT_EQ(PartsOf(root_, 3), g1);
  EXPECT_EQ(PartFiles(root_).size(), 3u) << "the rollback wrote no part";

  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed 1 manifest part(s) no kept generation names\n"), std::string::npos) << gc.out;
  EXPECT_FALSE(boost::filesystem::exists(filenames::GenerationManifest(root_, 1)));
  EXPECT_FALSE(boost::filesystem::exists(filenames::GenerationManifest(root_, 2)));
  EXPECT_EQ(PartFiles(root_), (std::set<std::string>{g1[0], g1[1]}));
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  // The rows of generation 1, now read through generation 3.
  std::string rows3 = Query(root_);
  EXPECT_NE(rows3.find("\"generation\":3"), std::string::npos) << rows3;
  const std::string g1_text = "\"generation\":1", g3_text = "\"generation\":3";
  for (size_t at; (at = rows3.find(g3_text)) != std::string::npos;) rows3.replace(at, g3_text.size(), g1_text);
  EXPECT_EQ(rows3, rows1);
}

// A reader holding generation 1 keeps its parts through gc; once it closes,
// the next gc removes the part no other generation names.
TEST_F(GenerationPartsTest, PinnedGenerationKeepsItsParts) {
  const std::vector<std::string> g1 = PartsOf(root_, 1), g2 = PartsOf(root_, 2);
  {
    std::unique_ptr<Reader> pinned;
    ASSERT_STATUS_OK(Reader::OpenTop(Env::Default(), root_, 1, &pinned));
    RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
    ASSERT_EQ(gc.exit_code, 0) << gc.err;
    EXPECT_EQ(PartFiles(root_), (std::set<std::string>{g1[0], g1[1], g2[1]}));
    Row row;
    ASSERT_STATUS_OK(pinned->Get(Ms(kB), "m", "us", &row));  // reads B's part of generation 1 only now
    EXPECT_EQ(row.count, 1);
  }
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(PartFiles(root_), (std::set<std::string>{g2[0], g2[1]}));
}

// Counts the bytes read from manifests/ (top manifests and parts).
class ManifestReadsEnv : public EnvWrapper {
 public:
  explicit ManifestReadsEnv(std::string manifests) : EnvWrapper(Env::Default()), manifests_(std::move(manifests)) {}
  Status ReadFileToString(const std::string& p, std::string* o) override {
    Status s = target()->ReadFileToString(p, o);
    if (s.ok() && p.rfind(manifests_, 0) == 0) {
      files.push_back(p.substr(manifests_.size()));
      bytes += o->size();
    }
    return s;
  }
  std::vector<std::string> files;
  size_t bytes = 0;

 private:
  const std::string manifests_;
};

TEST_F(GenerationPartsTest, PointReadReadsTheTopManifestAndOnePart) {
  const std::vector<std::string> g2 = PartsOf(root_, 2);
  ManifestReadsEnv env(filenames::ManifestsDir(root_) + "/");
  std::unique_ptr<Reader> r;
  ASSERT_STATUS_OK(Reader::OpenTop(&env, root_, 0, &r));
  Row row;
  ASSERT_STATUS_OK(r->Get(Ms(kA), "m", "eu", &row));
  EXPECT_EQ(row.count, 1);
  EXPECT_TRUE(r->Get(Ms(kA) + 3600 * 1000, "m", "eu", &row).IsNotFound());  // no such window, same part
  EXPECT_EQ(env.files, (std::vector<std::string>{"2", "parts/" + g2[0]}));
}

}  // namespace
}  // namespace snapsink::testing
