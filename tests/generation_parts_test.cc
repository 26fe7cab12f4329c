// Generations made of parts (publish/generation_manifest.h, docs/FORMAT.md
// section 4), through the binary: a publish writes only the parts of the
// windows it changes, a rollback's generation names the old parts, gc
// removes a part once no kept or pinned generation names it, and a point
// read reads the top manifest and one part; a reader written from
// docs/FORMAT.md alone finds what the library finds.
//
// The root has 1-hour windows, so a part spans 1,024 hours (42.7 days):
// window A (2026-10-21) and window B (50 days later) are in two parts.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <optional>
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

// An independent reader, written from docs/FORMAT.md sections 2, 4 and 5
// only (simdjson and XXH64, none of snapsink's decoders): CURRENT, its top
// manifest, the part holding a window, and that window's snapshot manifest
// checksum. It must find every window the library's reader finds.
namespace independent {

uint64_t Hash(const std::string& s) { return XXH64(s.data(), s.size(), 0); }
std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Section 2: the checksum member is last; XXH64 of every byte before the
// comma that precedes it. Returns the object text.
simdjson::dom::object OpenChecked(simdjson::dom::parser* parser, const std::string& text) {
  const size_t at = text.rfind(",\"checksum\":\"");
  EXPECT_NE(at, std::string::npos);
  EXPECT_EQ(text.substr(at + 13, 16), Hex(XXH64(text.data(), at, 0)));
  EXPECT_EQ(text.substr(text.size() - 3), "\"}\n");
  simdjson::dom::object o;
  EXPECT_EQ(parser->parse(text.data(), text.size() - 1).get_object().get(o), simdjson::SUCCESS);
  return o;
}

// (version, manifest_xxh64) of window_ms in the current generation, or none.
std::optional<std::pair<uint64_t, std::string>> Find(const std::string& root, int64_t window_ms) {
  // Section 5: "<G> <16 hex>\n", the hex being XXH64 of manifests/<G>.
  const std::string current = ReadFile(root + "/CURRENT");
  const size_t space = current.find(' ');
  const std::string g = current.substr(0, space);
  const std::string top_text = ReadFile(root + "/manifests/" + g);
  EXPECT_EQ(current.substr(space + 1), Hex(Hash(top_text)) + "\n");
  simdjson::dom::parser top_parser;
  simdjson::dom::object top = OpenChecked(&top_parser, top_text);
  EXPECT_EQ(std::string_view(top["format"].get_string().value()), "snapsink.generation");
  EXPECT_EQ(top["format_version"].get_uint64().value(), 3u);
  // Section 4: parts sorted by first window, disjoint: [first, last, windows, xxh64].
  simdjson::dom::array parts = top["parts"].get_array().value();
  for (simdjson::dom::element p : parts) {
    simdjson::dom::array t = p.get_array().value();
    const int64_t first = t.at(0).get_int64().value(), last = t.at(1).get_int64().value();
    if (window_ms < first || window_ms > last) continue;
    const std::string name(t.at(3).get_string().value());
    const std::string part_text = ReadFile(root + "/manifests/parts/" + name);
    EXPECT_EQ(Hex(Hash(part_text)), name);
    simdjson::dom::parser part_parser;
    simdjson::dom::object part = OpenChecked(&part_parser, part_text);
    EXPECT_EQ(std::string_view(part["format"].get_string().value()), "snapsink.generation_part");
    simdjson::dom::array windows = part["windows"].get_array().value();
    EXPECT_EQ(windows.size(), t.at(2).get_uint64().value());
    for (simdjson::dom::element w : windows) {
      simdjson::dom::array e = w.get_array().value();
      if (e.at(0).get_int64().value() == window_ms) {
        return std::make_pair(e.at(1).get_uint64().value(), std::string(e.at(2).get_string().value()));
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace independent

TEST_F(GenerationPartsTest, IndependentReaderFollowsDocsFormat) {
  std::unique_ptr<Reader> r;
  ASSERT_STATUS_OK(Reader::Open(Env::Default(), root_, 0, &r));
  ASSERT_EQ(r->windows().size(), 2u);
  for (const GenerationEntry& e : r->windows()) {
    auto found = independent::Find(root_, e.window_ms);
    ASSERT_TRUE(found.has_value()) << e.window_ms;
    EXPECT_EQ(found->first, e.version);
    EXPECT_EQ(found->second, independent::Hex(e.manifest_xxh64));
    // The snapshot manifest it names hashes to that checksum (section 3's path).
    const std::string snapshot = filenames::Join(filenames::SnapshotDir(root_, e.window_ms, e.version), "manifest.json");
    EXPECT_EQ(independent::Hex(independent::Hash(ReadFile(snapshot))), found->second);
  }
  EXPECT_FALSE(independent::Find(root_, Ms(kA) + 3600 * 1000).has_value());
}

}  // namespace
}  // namespace snapsink::testing
