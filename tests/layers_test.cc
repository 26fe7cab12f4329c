// The layers, one row per folder: which of the project's headers a file in
// that folder may include (`#include "..."`). A layer reaches only down:
//
//   include/snapsink/  the public API: its own headers only
//   engine/            state, ingest, Env: engine/ (+ the public Status)
//   publish/           seal, snapshot files, publisher, reader, maintenance,
//                      rollback, backfill: engine/, publish/, and the public
//                      records it fills (snapsink/views.h), never sink/ nor a
//                      public handle (Sink, Reader, Server)
//   sink/              the one implementer of include/snapsink/ (but for
//                      snapsink/utilities/): handles, views, status,
//                      metrics, follow
//   utilities/         built on the public API only, as a user's program is;
//                      utilities/serve/ (the HTTP server, the status page)
//                      on the public API and its own files only
//   tools/             the CLI: the public API and utilities/
//   examples/          a user's program: the public API, as <snapsink/...>
//
// tests/ and bench/ link the internal target and may include anything. The
// build enforces the same for utilities/ and tools/ (their include path has
// no engine/, publish/ or sink/: ctest Layers.PublicLayersCannotIncludeTheInternals);
// this test also names the file and keeps layers apart within a path.
// Angle-bracket includes (system and third-party headers) are not checked,
// except that examples/ must reach snapsink through them.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <ostream>
#include <regex>
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
      {"engine", {"engine/", "snapsink/status.h"}, 50},
      {"publish", {"engine/", "publish/", "snapsink/status.h", "snapsink/views.h"}, 40},
      {"sink", {"engine/", "publish/", "sink/", "snapsink/"}, 15},
      {"utilities", {"utilities/", "snapsink/"}, 23},
      {"utilities/serve", {"utilities/serve/", "snapsink/"}, 11},
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
    f << "#include \"publish/reader.h\"\n#include \"sink/sink_impl.h\"\n#include <string>\n";
  }
  const Layer publish = Layers()[2];
  ASSERT_EQ(publish.folder, "publish");
  size_t files = 0, includes = 0;
  const std::vector<std::string> bad = Violations(dir.path(), publish, &files, &includes);
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(includes, 3u);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0], "publish/planted.cc includes \"sink/sink_impl.h\"");
}

}  // namespace
}  // namespace snapsink::testing
