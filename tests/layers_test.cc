// The layers, one row per folder: which of the project's headers a file in
// that folder may include (`#include "..."`). A layer reaches only down:
//
//   include/snapsink/  the public API: its own headers only
//   engine/            state, ingest, Env: engine/ (+ the public Status, and
//                      the public options and bucket access, whose
//                      defaults it takes)
//   snapshot/          the snapshot file (format, filter, reader, writer,
//                      cached block, table cache), the snapshot manifest and
//                      the checked JSON of every manifest: engine/, snapshot/,
//                      and the public row a snapshot file's row is
//                      (snapsink/reader.h)
//   partitions/        the seal records of a topic's partitions and their gc:
//                      engine/, snapshot/, partitions/
//   publish/           seal, publish, generations (and their reader), gc,
//                      rollback, backfill, upgrade, the merged publish:
//                      engine/, snapshot/, partitions/, publish/, and the
//                      public records it fills (snapsink/options.h, views.h),
//                      never sink/ nor a public handle (Sink, Reader, Server)
//   sink/              the one implementer of include/snapsink/ (but for
//                      snapsink/utilities/, save partitions.h): handles,
//                      views, status, metrics, follow
//   utilities/         built on the public API only, as a user's program is;
//                      utilities/serve/ (the HTTP server, the status page)
//                      on the public API, its own files and the status
//                      macros of utilities/ only
//   tools/             the CLI: the public API and utilities/
//   examples/          a user's program: the public API, as <snapsink/...>
//
// tests/ and bench/ link the internal target and may include anything. The
// build enforces the same for utilities/ and tools/ (their include path has
// no engine/, snapshot/, partitions/, publish/ or sink/: ctest Layers.PublicLayersCannotIncludeTheInternals);
// this test also names the file and keeps layers apart within a path.
// Angle-bracket includes (system and third-party headers) are not checked,
// except that examples/ must reach snapsink through them.
#include <gtest/gtest.h>

#include <fnmatch.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>
#include <iterator>
#include <sstream>
#include <map>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

struct Layer {
  std::string folder;                  // relative to the source tree
  std::vector<std::string> may_include;  // prefixes of "..." includes
  size_t min_files;                    // the scan must see at least these
};

const std::vector<Layer>& Layers() {
  static const std::vector<Layer> layers = {
      {"include/snapsink", {"snapsink/"}, 9},
      {"engine", {"engine/", "snapsink/status.h", "snapsink/options.h", "snapsink/bucket_access.h"}, 50},
      {"snapshot", {"engine/", "snapshot/", "snapsink/status.h", "snapsink/reader.h"}, 14},
      {"partitions", {"engine/", "snapshot/", "partitions/", "snapsink/status.h", "snapsink/options.h"}, 3},
      {"publish", {"engine/", "snapshot/", "partitions/", "publish/", "snapsink/status.h", "snapsink/options.h", "snapsink/views.h"}, 28},
      {"sink", {"engine/", "snapshot/", "partitions/", "publish/", "sink/", "snapsink/"}, 25},
      {"utilities", {"utilities/", "snapsink/"}, 23},
      {"utilities/serve", {"utilities/serve/", "utilities/status_macros.h", "snapsink/"}, 11},
      {"tools", {"tools/", "utilities/", "snapsink/"}, 25},
      {"examples", {}, 2},
  };
  return layers;
}

bool SourceFile(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".c";
}

// gtest names a parameter by this (its bytes otherwise).
void PrintTo(const Layer& layer, std::ostream* os) { *os << layer.folder << "/"; }

// Every `#include "x"` of a file that its layer does not allow, as
// "file includes "x"" lines. Counts the files scanned and, so that a regex
// that stopped matching cannot pass for a clean layer, every include seen.
std::vector<std::string> Violations(const std::string& source_dir, const Layer& layer, size_t* files_seen,
                                    size_t* includes_seen) {
  static const std::regex quoted(R"(^\s*#\s*include\s*"([^"]+)\")");
  static const std::regex any(R"(^\s*#\s*include\s*[<"])");
  std::vector<std::string> out;
  *files_seen = 0;
  *includes_seen = 0;
  for (fs::recursive_directory_iterator it(source_dir + "/" + layer.folder), end; it != end; ++it) {
    if (!fs::is_regular_file(it->path()) || !SourceFile(it->path())) continue;
    ++*files_seen;
    const std::string name = fs::relative(it->path(), source_dir).string();
    std::ifstream f(it->path().string());
    std::string line;
    while (std::getline(f, line)) {
      if (std::regex_search(line, any)) ++*includes_seen;
      std::smatch m;
      if (!std::regex_search(line, m, quoted)) continue;
      const std::string header = m[1];
      bool ok = false;
      for (const std::string& prefix : layer.may_include) ok = ok || header.rfind(prefix, 0) == 0;
      if (!ok) out.push_back(name + " includes \"" + header + "\"");
    }
  }
  return out;
}

class LayersTest : public ::testing::TestWithParam<Layer> {};

TEST_P(LayersTest, EveryFileIncludesOnlyWhatItsLayerMay) {
  const Layer& layer = GetParam();
  size_t files = 0, includes = 0;
  const std::vector<std::string> bad = Violations(SNAPSINK_SOURCE_DIR, layer, &files, &includes);
  EXPECT_GE(files, layer.min_files) << "the scan of " << layer.folder << " found too few files";
  EXPECT_GE(includes, files) << "the scan of " << layer.folder << " recognised too few includes";
  for (const std::string& b : bad) ADD_FAILURE() << b;
}

INSTANTIATE_TEST_SUITE_P(Folders, LayersTest, ::testing::ValuesIn(Layers()),
                         [](const ::testing::TestParamInfo<Layer>& info) {
                           std::string name = info.param.folder;
                           for (char& c : name) c = c == '/' ? '_' : c;
                           return name;
                         });

// The check itself catches a wrong-way include: a publish/ file that reaches
// up into sink/, planted in a copy of the layer's folder.
TEST(LayersCheck, APlantedUpwardIncludeIsReported) {
  TempDir dir;
  fs::create_directories(dir.path() + "/publish");
  {
    std::ofstream f(dir.path() + "/publish/planted.cc");
    f << "#include \"publish/generation_reader.h\"\n#include \"sink/sink_impl.h\"\n#include <string>\n";
  }
  Layer publish;
  for (const Layer& l : Layers()) {
    if (l.folder == "publish") publish = l;
  }
  ASSERT_EQ(publish.folder, "publish");
  size_t files = 0, includes = 0;
  const std::vector<std::string> bad = Violations(dir.path(), publish, &files, &includes);
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(includes, 3u);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0], "publish/planted.cc includes \"sink/sink_impl.h\"");
}

// The new folders' rows: a snapshot/ file that reaches up into publish/ or
// partitions/, and a partitions/ file that reaches up into publish/, are
// reported; what each may include is not.
TEST(LayersCheck, TheSnapshotAndPartitionsRowsReportUpwardIncludes) {
  TempDir dir;
  fs::create_directories(dir.path() + "/snapshot");
  fs::create_directories(dir.path() + "/partitions");
  std::ofstream(dir.path() + "/snapshot/planted.cc")
      << "#include \"snapshot/snapshot_file.h\"\n#include \"engine/env.h\"\n"
         "#include \"publish/publisher.h\"\n#include \"partitions/partition_seals.h\"\n";
  std::ofstream(dir.path() + "/partitions/planted.cc")
      << "#include \"partitions/partition_seals.h\"\n#include \"snapshot/checked_json.h\"\n"
         "#include \"publish/partition_merge.h\"\n";
  std::map<std::string, Layer> rows;
  for (const Layer& l : Layers()) rows[l.folder] = l;
  ASSERT_EQ(rows.count("snapshot"), 1u);
  ASSERT_EQ(rows.count("partitions"), 1u);
  size_t files = 0, includes = 0;
  EXPECT_EQ(Violations(dir.path(), rows["snapshot"], &files, &includes),
            (std::vector<std::string>{"snapshot/planted.cc includes \"publish/publisher.h\"",
                                      "snapshot/planted.cc includes \"partitions/partition_seals.h\""}));
  EXPECT_EQ(includes, 4u);
  EXPECT_EQ(Violations(dir.path(), rows["partitions"], &files, &includes),
            std::vector<std::string>{"partitions/planted.cc includes \"publish/partition_merge.h\""});
  EXPECT_EQ(includes, 3u);
}

// --- One set of records ------------------------------------------------------
//
// A record the embedder sees (a top-level struct or class of
// include/snapsink/) is declared there only: engine/, snapshot/, partitions/,
// publish/ and sink/ fill it directly (publish/ names it with `using api::X;`)
// and declare no struct or class of the same name, so no mirror and no field
// copy can come back.
// The exceptions are types that are not mirrors, each with why:
const std::map<std::string, std::string>& NotMirrors() {
  static const std::map<std::string, std::string> names = {
      // snapshot/snapshot_file.h: a snapshot file's row, the public api::Row
      // (its base) plus the quantile sketch the file holds.
      {"Row", "snapshot/snapshot_file.h"},
      // publish/generation_reader.h: the handle over one generation's files;
      // engine/state_codec.cc: a byte decoder. api::Reader is the public
      // handle built on the first (sink/reader.cc).
      {"Reader", "engine/state_codec.cc publish/generation_reader.h"},
      // engine/ingest.h: the options of one file's ingest (path, rejects file,
      // parse-ahead, on_commit), which Sink::Ingest makes per file of
      // api::IngestOptions.
      {"IngestOptions", "engine/ingest.h"},
      // sink/sink_impl.h: the one friend of the public handles, which
      // sink.h declares by name only; its definition is sink/'s, not a record.
      {"SinkAccess", "sink/sink_impl.h"},
  };
  return names;
}

// "struct X {", "class X;", "struct X final : Base {" at the start of a line,
// not "struct X::Impl {": the names a folder declares, with "file:line".
std::map<std::string, std::vector<std::string>> DeclaredNames(const std::string& dir, const std::string& folder) {
  static const std::regex decl(R"(^(?:struct|class)\s+(\w+)\s*(?:final\s*)?(?:\{|;|:(?!:)))");
  std::map<std::string, std::vector<std::string>> out;
  for (fs::recursive_directory_iterator it(dir + "/" + folder), end; it != end; ++it) {
    if (!fs::is_regular_file(it->path()) || !SourceFile(it->path())) continue;
    std::ifstream f(it->path().string());
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) {
      std::smatch m;
      if (std::regex_search(line, m, decl)) {
        out[m[1]].push_back(fs::relative(it->path(), dir).string() + ":" + std::to_string(n));
      }
    }
  }
  return out;
}

// Every public record name also declared in engine/, publish/ or sink/
// (beyond NotMirrors), one "Name: file:line" line each.
std::vector<std::string> Mirrors(const std::string& dir, size_t* public_names) {
  const auto pub = DeclaredNames(dir, "include/snapsink");
  *public_names = pub.size();
  std::vector<std::string> out;
  for (const char* folder : {"engine", "snapshot", "partitions", "publish", "sink"}) {
    for (const auto& [name, where] : DeclaredNames(dir, folder)) {
      if (pub.count(name) == 0) continue;
      for (const std::string& w : where) {
        auto ok = NotMirrors().find(name);
        if (ok != NotMirrors().end() && ok->second.find(w.substr(0, w.find(':'))) != std::string::npos) continue;
        out.push_back(name + ": " + w);
      }
    }
  }
  return out;
}

TEST(OneSetOfRecords, NoPublicRecordIsDeclaredAgainBelowIt) {
  size_t names = 0;
  for (const std::string& m : Mirrors(SNAPSINK_SOURCE_DIR, &names)) {
    ADD_FAILURE() << m << " declares a public record's name again: use the public one (api::)";
  }
  EXPECT_GE(names, 40u) << "the scan of include/snapsink/ found too few records";
}

// The check itself: a GcResult declared again in publish/ (as before the
// records were one) is reported; a using-declaration is not.
TEST(OneSetOfRecords, APlantedMirrorIsReported) {
  TempDir dir;
  for (const char* d : {"include/snapsink", "engine", "snapshot", "partitions", "publish", "sink"}) fs::create_directories(dir.path() + "/" + d);
  std::ofstream(dir.path() + "/include/snapsink/options.h")
      << "namespace snapsink::api {\nstruct GcResult {\n};\nstruct Row {};\nclass Sink;\n}\n";
  std::ofstream(dir.path() + "/publish/maintenance.h")
      << "namespace snapsink {\nusing api::GcResult;\nstruct GcResult {\n  int removed = 0;\n};\n}\n";
  std::ofstream(dir.path() + "/snapshot/snapshot_file.h") << "struct Row {\n};\n";
  std::ofstream(dir.path() + "/sink/sink_impl.h") << "struct Sink::Impl {\n};\n";
  size_t names = 0;
  const std::vector<std::string> found = Mirrors(dir.path(), &names);
  EXPECT_EQ(names, 3u);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "GcResult: publish/maintenance.h:3");
}

// --- No record copied under another name -----------------------------------
//
// A rename passes the check above (GatheredStatus beside RootStatus,
// UpgradeReport beside UpgradeResult), so the records are also compared by
// their fields: a struct or class of engine/, publish/ or sink/ that shares
// at least three field names with a public record, and at least three in
// four of the smaller one's, mirrors it. The exceptions, each with why:
const std::map<std::string, std::string>& NotFieldMirrors() {
  static const std::map<std::string, std::string> names = {
      // Forms of a file or a state record, each with its own encoding; the
      // public record is made from each in one function:
      // a row decoded in place, its metric and key string_views into the
      // reader's block, valid during one callback (a snapshot file's owned
      // row, snapshot::Row, is an api::Row plus its sketch);
      {"RowView snapshot/snapshot_file.h", "a row viewing a snapshot block"},
      {"MetricStats snapshot/snapshot_file.h", "a snapshot file's stats section"},
      {"SnapshotManifest snapshot/snapshot_manifest.h", "a snapshot manifest file"},
      {"GenerationManifest publish/generation_manifest.h", "a generation manifest file"},
      {"PartitionProgress partitions/partition_seals.h", "a partition's seal record file"},
      {"ManifestSums publish/upgrade.cc", "sums read back from an old manifest"},
      {"VerifyRun publish/maintenance.cc", "verify's working state"},
      {"AcceptedGap engine/gap_acceptance.h", "the stored acceptance (api::GapAcceptance is the request)"},
      {"SourceIdCounts engine/id_dedup.h", "a source's id-dedup counters, a record of their own"},
      {"Header sink/checkpoint.cc", "a checkpoint file's header"},
      // The engine's configuration as Root::Create and Open keep it in the
      // meta table, converted in one function (ToRootSettings): its
      // on_gap is the stored byte (OnGap, values fixed on disk) where
      // api::RootSettings has GapPolicy, its lateness_ms is -1 until Create
      // makes it one window, and its window_ms is read at about 170 places
      // of engine/, publish/ and sink/ where the public record says
      // window_size_ms. Folding it is that rename and nothing else: a diff
      // through every layer, for a tree no other branch is changing.
      {"RootConfig engine/root.h", "the stored configuration"},
  };
  return names;
}

// The field names a struct body declares at its own depth: "T a = 1, b;"
// gives a and b; member functions, types and using-declarations give none.
std::set<std::string> FieldNames(const std::vector<std::string>& body) {
  static const std::regex ident(R"((\w+)\s*$)");
  std::set<std::string> out;
  for (std::string line : body) {
    line = line.substr(0, line.find("//"));
    const size_t semi = line.find(';');
    if (semi == std::string::npos || line.find('(') != std::string::npos) continue;
    line = line.substr(0, semi);
    if (std::regex_search(line, std::regex(R"(^\s*(using|static|friend|typedef|struct|class|enum|return)\b)"))) continue;
    // Split at commas outside <...>, cut each piece at its initializer.
    std::vector<std::string> pieces(1);
    int angle = 0;
    for (char c : line) {
      angle += c == '<' ? 1 : c == '>' ? -1 : 0;
      if (c == ',' && angle == 0) {
        pieces.emplace_back();
      } else {
        pieces.back() += c;
      }
    }
    for (std::string& piece : pieces) {
      piece = piece.substr(0, std::min(piece.find('='), piece.find('{')));
      std::smatch m;
      if (std::regex_search(piece, m, ident)) out.insert(m[1]);
    }
  }
  return out;
}

// Every top-level "struct X {" ... "};" of folder: "X file:line" -> its fields.
std::map<std::string, std::set<std::string>> DeclaredFields(const std::string& dir, const std::string& folder) {
  static const std::regex decl(R"(^(?:struct|class)\s+(\w+)\s*(?:final\s*)?(?::(?!:)[^{]*)?\{\s*$)");
  std::map<std::string, std::set<std::string>> out;
  for (fs::recursive_directory_iterator it(dir + "/" + folder), end; it != end; ++it) {
    if (!fs::is_regular_file(it->path()) || !SourceFile(it->path())) continue;
    std::ifstream f(it->path().string());
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, decl)) continue;
      const std::string key = std::string(m[1]) + " " + fs::relative(it->path(), dir).string() + ":" + std::to_string(n);
      std::vector<std::string> body;
      int depth = 1;
      while (depth > 0 && std::getline(f, line)) {
        ++n;
        if (depth == 1) body.push_back(line);
        for (char c : line) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      }
      out[key] = FieldNames(body);
    }
  }
  return out;
}

// Every record below the public API whose fields mirror a public record's,
// one "Name file:line mirrors api::Public (a, b, c)" line each.
std::vector<std::string> FieldMirrors(const std::string& dir, size_t* public_records) {
  const auto pub = DeclaredFields(dir, "include/snapsink");
  *public_records = pub.size();
  std::vector<std::string> out;
  for (const char* folder : {"engine", "snapshot", "partitions", "publish", "sink"}) {
    for (const auto& [below, fields] : DeclaredFields(dir, folder)) {
      const std::string file = below.substr(below.find(' ') + 1, below.rfind(':') - below.find(' ') - 1);
      if (NotFieldMirrors().count(below.substr(0, below.find(' ')) + " " + file) > 0) continue;
      for (const auto& [name, theirs] : pub) {
        std::vector<std::string> shared;
        std::set_intersection(fields.begin(), fields.end(), theirs.begin(), theirs.end(), std::back_inserter(shared));
        const size_t smaller = std::min(fields.size(), theirs.size());
        if (shared.size() < 3 || shared.size() * 4 < smaller * 3) continue;
        std::string list;
        for (const std::string& f : shared) list += (list.empty() ? "" : ", ") + f;
        out.push_back(below + " mirrors api::" + name.substr(0, name.find(' ')) + " (" + list + ")");
      }
    }
  }
  return out;
}

TEST(OneSetOfRecords, NoRecordCopiesAPublicRecordsFields) {
  size_t records = 0;
  for (const std::string& m : FieldMirrors(SNAPSINK_SOURCE_DIR, &records)) {
    ADD_FAILURE() << m << ": fill the public record instead";
  }
  EXPECT_GE(records, 40u) << "the scan of include/snapsink/ found too few records";
}

// The check itself: UpgradeResult's fields under another name in publish/
// are reported; a record sharing two fields, and a using-declaration, are not.
TEST(OneSetOfRecords, APlantedRenamedMirrorIsReported) {
  TempDir dir;
  for (const char* d : {"include/snapsink", "engine", "snapshot", "partitions", "publish", "sink"}) fs::create_directories(dir.path() + "/" + d);
  std::ofstream(dir.path() + "/include/snapsink/options.h")
      << "namespace snapsink::api {\nstruct UpgradeResult {\n  uint64_t format_before = 0;  // x\n"
         "  uint64_t format_after = 0;\n  bool nothing_to_do = false;\n  std::vector<std::string> actions;\n};\n}\n";
  std::ofstream(dir.path() + "/publish/upgrade.h")
      << "namespace snapsink {\nusing api::UpgradeResult;\nstruct UpgradeReport {\n  uint64_t format_before = 0, "
         "format_after = 0;\n  bool nothing_to_do = false;\n  void Print() const;\n};\n}\n";
  std::ofstream(dir.path() + "/engine/root.h")
      << "struct Formats {\n  uint64_t format_before = 0;\n  std::map<int, std::string> format_after;\n  int other, "
         "more = 1;\n};\n";
  size_t records = 0;
  const std::vector<std::string> found = FieldMirrors(dir.path(), &records);
  EXPECT_EQ(records, 1u);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "UpgradeReport publish/upgrade.h:3 mirrors api::UpgradeResult (format_after, format_before, "
                      "nothing_to_do)");
}

// --- docs/DESIGN.md's "How it works" names every file of the layers ---------
//
// Its second column holds `path` patterns: a file, a glob (`engine/env*`) or
// a folder (`utilities/kafka/`). Every file of the library's folders must
// match one, so the table a newcomer reads follows the folders.

// The patterns of the table's second column, from the document's text.
std::vector<std::string> TablePatterns(const std::string& readme) {
  std::vector<std::string> out;
  const size_t start = readme.find("\n## How it works\n");
  if (start == std::string::npos) return out;
  const size_t end = readme.find("\n#", start + 1);
  std::istringstream rows(readme.substr(start, end == std::string::npos ? std::string::npos : end - start));
  static const std::regex quoted("`([^`]+)`");
  std::string row;
  while (std::getline(rows, row)) {
    if (row.rfind("| ", 0) != 0) continue;
    const size_t a = row.find('|', 1);
    const size_t b = a == std::string::npos ? a : row.find(" | ", a + 1);
    if (b == std::string::npos) continue;
    const std::string where = row.substr(a + 1, b - a);
    for (std::sregex_iterator it(where.begin(), where.end(), quoted), e; it != e; ++it) out.push_back((*it)[1]);
  }
  return out;
}

// The files under dir's library folders that no pattern names.
std::vector<std::string> Unnamed(const std::string& dir, const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const char* folder : {"include/snapsink", "engine", "snapshot", "partitions", "publish", "sink", "utilities", "tools"}) {
    if (!fs::exists(dir + "/" + folder)) continue;
    for (fs::recursive_directory_iterator it(dir + "/" + folder), end; it != end; ++it) {
      if (!fs::is_regular_file(it->path()) || !SourceFile(it->path())) continue;
      const std::string name = fs::relative(it->path(), dir).string();
      bool named = false;
      for (const std::string& p : patterns) {
        named = p.back() == '/' ? name.rfind(p, 0) == 0 : fnmatch(p.c_str(), name.c_str(), 0) == 0;
        if (named) break;
      }
      if (!named) out.push_back(name);
    }
  }
  return out;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

TEST(ReadmeTable, NamesEveryFileOfTheLibrarysFolders) {
  const std::vector<std::string> patterns = TablePatterns(ReadText(std::string(SNAPSINK_SOURCE_DIR) + "/docs/DESIGN.md"));
  EXPECT_GE(patterns.size(), 40u) << "the table's second column was not found";
  for (const std::string& f : Unnamed(SNAPSINK_SOURCE_DIR, patterns)) {
    ADD_FAILURE() << f << ": no row of docs/DESIGN.md's \"How it works\" names it";
  }
}

// The check itself: a file no pattern names is reported; a glob, an exact
// name and a folder each name theirs; only the second column counts.
TEST(ReadmeTable, AFileNoRowNamesIsReported) {
  TempDir dir;
  for (const char* d : {"engine", "utilities/kafka", "publish"}) fs::create_directories(dir.path() + "/" + d);
  for (const char* f : {"engine/env.h", "engine/env_posix.cc", "utilities/kafka/a.cc", "publish/seal.cc", "publish/new.cc"}) {
    std::ofstream(dir.path() + "/" + f) << "\n";
  }
  const std::string readme =
      "# x\n\n## How it works\n\n| piece | where | what |\n|---|---|---|\n"
      "| seam | `engine/env*` | every fsync |\n| kafka | `utilities/kafka/` | consumer |\n"
      "| seal | `publish/seal.cc` | not `publish/new.cc` |\n\n### Next\n| x | `publish/new.cc` | y |\n";
  const std::vector<std::string> patterns = TablePatterns(readme);
  EXPECT_EQ(patterns, (std::vector<std::string>{"engine/env*", "utilities/kafka/", "publish/seal.cc"}));
  EXPECT_EQ(Unnamed(dir.path(), patterns), std::vector<std::string>{"publish/new.cc"});
}

}  // namespace
}  // namespace snapsink::testing
