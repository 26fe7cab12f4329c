// Generations made of parts (publish/generation_manifest.h, docs/FORMAT.md
// section 4), through the binary: a publish writes only the parts on the
// paths to the windows it changes, a rollback's generation names the old
// parts, gc removes a part once no kept or pinned generation names it, and
// a point read reads the top manifest and one part per level; a reader
// written from docs/FORMAT.md alone finds what the library finds.
//
// The root has 1-hour windows: a leaf spans 32 hours, a level 1 part 1,024
// hours (42.7 days), a level 2 part 32,768 hours. Window A (2026-10-21) and
// window B (50 days later) have their own leaf and level 1 part and share
// the level 2 part, the top manifest's only one.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <boost/filesystem.hpp>

#include "engine/env.h"
#include "engine/filenames.h"
#include "snapshot/checked_json.h"
#include "publish/generation_manifest.h"
#include "publish/generation_reader.h"
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

// Every part of generation g's tree, by level (0 = leaves), each level in
// order.
std::vector<std::vector<std::string>> TreeOf(const std::string& root, uint64_t g) {
  const std::string path = filenames::GenerationManifest(root, g);
  GenerationManifest top;
  EXPECT_STATUS_OK(GenerationManifest::Decode(ReadFile(path), path, &top));
  EXPECT_EQ(top.depth, kPartDepth);
  std::vector<std::vector<std::string>> out(top.depth);
  std::vector<GenerationPartRef> level = top.parts;
  for (uint32_t l = top.depth; l-- > 0;) {
    std::vector<GenerationPartRef> below;
    for (const GenerationPartRef& p : level) {
      out[l].push_back(Hex64(p.xxh64));
      if (l == 0) continue;
      GenerationIndexPart index;
      const std::string ppath = filenames::GenerationPart(root, p.xxh64);
      EXPECT_STATUS_OK(GenerationIndexPart::Decode(ReadFile(ppath), ppath, &index));
      below.insert(below.end(), index.parts.begin(), index.parts.end());
    }
    level = std::move(below);
  }
  return out;
}

std::set<std::string> AllPartsOf(const std::string& root, uint64_t g) {
  std::set<std::string> out;
  for (const auto& level : TreeOf(root, g)) out.insert(level.begin(), level.end());
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
  const auto g1 = TreeOf(root_, 1), g2 = TreeOf(root_, 2);
  ASSERT_EQ(g1[0].size(), 2u);
  ASSERT_EQ(g1[1].size(), 2u);
  ASSERT_EQ(g1[2].size(), 1u);
  ASSERT_EQ(g2[0].size(), 2u);
  EXPECT_EQ(g2[0][0], g1[0][0]) << "A's leaf is named again, not rewritten";
  EXPECT_EQ(g2[1][0], g1[1][0]) << "A's level 1 part is named again";
  EXPECT_NE(g2[0][1], g1[0][1]) << "B has a new version";
  EXPECT_NE(g2[1][1], g1[1][1]);
  EXPECT_NE(g2[2][0], g1[2][0]);
  // The publish of B wrote one part per level: B's leaf and the two above it.
  std::set<std::string> all = AllPartsOf(root_, 1);
  EXPECT_EQ(all.size(), 5u);
  all.insert(g2[0][1]);
  all.insert(g2[1][1]);
  all.insert(g2[2][0]);
  EXPECT_EQ(PartFiles(root_), all);
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
  EXPECT_EQ(PartFiles(root_).size(), 8u) << "the rollback wrote no part";

  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed 3 manifest part(s) no kept generation names\n"), std::string::npos) << gc.out;
  EXPECT_FALSE(boost::filesystem::exists(filenames::GenerationManifest(root_, 1)));
  EXPECT_FALSE(boost::filesystem::exists(filenames::GenerationManifest(root_, 2)));
  EXPECT_EQ(PartFiles(root_), AllPartsOf(root_, 3));
  EXPECT_EQ(PartFiles(root_).size(), 5u);
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
  std::set<std::string> both = AllPartsOf(root_, 1);
  const std::set<std::string> g2 = AllPartsOf(root_, 2);
  both.insert(g2.begin(), g2.end());
  {
    std::unique_ptr<Reader> pinned;
    ASSERT_STATUS_OK(Reader::OpenTop(Env::Default(), root_, 1, &pinned));
    RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
    ASSERT_EQ(gc.exit_code, 0) << gc.err;
    EXPECT_EQ(PartFiles(root_), both);
    Row row;
    ASSERT_STATUS_OK(pinned->Get(Ms(kB), "m", "us", &row));  // reads B's part of generation 1 only now
    EXPECT_EQ(row.count, 1);
  }
  RunResult gc = Snapsink({"gc", root_, "--keep-generations", "1"});
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(PartFiles(root_), g2);
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

TEST_F(GenerationPartsTest, PointReadReadsTheTopManifestAndOnePartPerLevel) {
  const auto g2 = TreeOf(root_, 2);
  ManifestReadsEnv env(filenames::ManifestsDir(root_) + "/");
  std::unique_ptr<Reader> r;
  ASSERT_STATUS_OK(Reader::OpenTop(&env, root_, 0, &r));
  Row row;
  ASSERT_STATUS_OK(r->Get(Ms(kA), "m", "eu", &row));
  EXPECT_EQ(row.count, 1);
  EXPECT_TRUE(r->Get(Ms(kA) + 3600 * 1000, "m", "eu", &row).IsNotFound());  // no such window, same part
  EXPECT_EQ(env.files, (std::vector<std::string>{"2", "parts/" + g2[2][0], "parts/" + g2[1][0], "parts/" + g2[0][0]}));
  EXPECT_EQ(r->parts_read(), 3u);
}

// `query --window W` reads the top manifest and the parts on W's path only:
// with window A's leaf gone, a query of B still answers (and reads 3
// parts), while a query of every window and verify report the damage.
TEST_F(GenerationPartsTest, QueryOfOneWindowReadsOnlyItsParts) {
  const auto g2 = TreeOf(root_, 2);
  {
    std::unique_ptr<Reader> r;
    ASSERT_STATUS_OK(Reader::OpenTop(Env::Default(), root_, 0, &r));
    std::vector<GenerationEntry> got;
    ASSERT_STATUS_OK(r->Entries(Ms(kB), Ms(kB), &got));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].version, 2u);
    EXPECT_EQ(r->parts_read(), 3u) << "the level 2 part, B's level 1 part and B's leaf";
    ASSERT_STATUS_OK(r->Entries(Ms(kA), Ms(kB), &got));
    EXPECT_EQ(got.size(), 2u);
    EXPECT_EQ(r->parts_read(), 5u);
  }
  const std::string leaf_a = filenames::GenerationPart(root_, std::stoull(g2[0][0], nullptr, 16));
  ASSERT_EQ(std::remove(leaf_a.c_str()), 0);
  RunResult q = Snapsink({"query", root_, "--window", kB, "--format", "json"});
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\"key\":\"us\",\"count\":2"), std::string::npos) << q.out;
  RunResult all = Snapsink({"query", root_, "--format", "json"});
  EXPECT_NE(all.exit_code, 0) << all.out;
  EXPECT_NE(all.err.find(g2[0][0]), std::string::npos) << all.err;
  RunResult v = Snapsink({"verify", root_});
  EXPECT_EQ(v.exit_code, 10) << v.out << v.err;
  EXPECT_NE((v.out + v.err).find(g2[0][0]), std::string::npos) << v.out << v.err;
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
  EXPECT_EQ(top["format_version"].get_uint64().value(), 4u);
  // Section 4: depth levels of parts under the top; each list of parts is
  // sorted by first window, disjoint: [first, last, windows, xxh64].
  uint64_t level = top["depth"].get_uint64().value() - 1;
  simdjson::dom::array parts = top["parts"].get_array().value();
  std::vector<std::unique_ptr<simdjson::dom::parser>> parsers;  // each keeps its document alive
  for (;;) {
    std::optional<simdjson::dom::array> hit;
    for (simdjson::dom::element p : parts) {
      simdjson::dom::array t = p.get_array().value();
      const int64_t first = t.at(0).get_int64().value(), last = t.at(1).get_int64().value();
      if (window_ms >= first && window_ms <= last) hit = t;
    }
    if (!hit) return std::nullopt;
    const std::string name(hit->at(3).get_string().value());
    const std::string part_text = ReadFile(root + "/manifests/parts/" + name);
    EXPECT_EQ(Hex(Hash(part_text)), name);
    parsers.push_back(std::make_unique<simdjson::dom::parser>());
    simdjson::dom::object part = OpenChecked(parsers.back().get(), part_text);
    if (level > 0) {
      EXPECT_EQ(std::string_view(part["format"].get_string().value()), "snapsink.generation_index");
      EXPECT_EQ(part["level"].get_uint64().value(), level);
      parts = part["parts"].get_array().value();
      --level;
      continue;
    }
    EXPECT_EQ(std::string_view(part["format"].get_string().value()), "snapsink.generation_part");
    simdjson::dom::array windows = part["windows"].get_array().value();
    EXPECT_EQ(windows.size(), hit->at(2).get_uint64().value());
    for (simdjson::dom::element w : windows) {
      simdjson::dom::array e = w.get_array().value();
      if (e.at(0).get_int64().value() == window_ms) {
        return std::make_pair(e.at(1).get_uint64().value(), std::string(e.at(2).get_string().value()));
      }
    }
    return std::nullopt;
  }
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
