// The public API (include/snapsink/), as an embedder uses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "snapsink/reader.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace api = snapsink::api;

// Two 1h windows: 10:00 (orders eu 1.5 + 2, us 3) and 11:00 (orders eu 4).
std::string Input() {
  return EventLine().Seq(0).Ts("2026-10-21T10:00:00Z").Metric("orders").Key("eu").Value("1.5").Line() +
         EventLine().Seq(1).Ts("2026-10-21T10:10:00Z").Metric("orders").Key("eu").Value("2").Line() +
         EventLine().Seq(2).Ts("2026-10-21T10:20:00Z").Metric("orders").Key("us").Value("3").Line() +
         EventLine().Seq(1).Ts("2026-10-21T10:10:00Z").Metric("orders").Key("eu").Value("2").Line() +  // duplicate
         EventLine().Seq(3).Ts("2026-10-21T11:00:00Z").Metric("orders").Key("eu").Value("4").Line();
}

api::RunOptions RunFinal(const std::string& file) {
  api::RunOptions run;
  run.ingest.files = {file};
  run.final = true;
  return run;
}

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_ / "root";
    in_ = dir_ / "in.ndjson";
    WriteFile(in_, Input());
    ASSERT_STATUS_OK(api::Sink::Create(root_, api::InitOptions{}));
  }
  TempDir dir_;
  std::string root_, in_;
};

TEST_F(ApiTest, RunThenReadBack) {
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    api::RunOptions run;
    run.ingest.files = {in_};
    run.final = true;
    api::RunResult r;
    ASSERT_STATUS_OK((*sink)->Run(run, &r));
    ASSERT_EQ(r.ingest.sources.size(), 1u);
    EXPECT_EQ(r.ingest.sources[0].lines, 5u);
    EXPECT_EQ(r.ingest.sources[0].applied, 4u);
    EXPECT_EQ(r.ingest.sources[0].duplicates, 1u);
    ASSERT_EQ(r.ingest.this_run.size(), 1u);
    EXPECT_EQ(r.ingest.this_run[0].applied, 4u);
    EXPECT_EQ(r.sealed.size(), 2u);
    EXPECT_EQ(r.publish.generation, 1u);
    EXPECT_EQ(r.publish.windows, 2u);
  }
  auto reader = api::Reader::Open(root_);
  ASSERT_STATUS_OK(reader);
  EXPECT_EQ((*reader)->generation(), 1u);
  ASSERT_EQ((*reader)->windows().size(), 2u);
  const int64_t w10 = Ms("2026-10-21T10:00:00Z");
  EXPECT_EQ((*reader)->windows()[0].window_start_ms, w10);
  EXPECT_EQ((*reader)->Find(w10), std::optional<uint64_t>(1));
  auto eu = (*reader)->Get(w10, "orders", "eu");
  ASSERT_STATUS_OK(eu);
  EXPECT_EQ(eu->count, 2);
  EXPECT_EQ(eu->sum_micros, 3500000);
  EXPECT_EQ(api::FormatMicros(eu->sum_micros), "3.5");
  EXPECT_TRUE((*reader)->Get(w10, "orders", "apac").status().IsNotFound());
  std::vector<std::string> keys;
  ASSERT_STATUS_OK((*reader)->Scan(w10, std::string("orders"), [&](const api::Row& r) { keys.push_back(r.key); }));
  EXPECT_EQ(keys, (std::vector<std::string>{"eu", "us"}));
}

TEST_F(ApiTest, TheWriterHoldsTheLockReadOnlyHandlesDoNot) {
  auto writer = api::Sink::Open(root_);
  ASSERT_STATUS_OK(writer);
  // A second writer, here in another process, is refused while this one lives.
  RunResult other = Snapsink({"ingest", root_, in_});
  EXPECT_EQ(other.exit_code, 5) << other.err;
  api::IngestOptions o;
  o.files = {in_};
  ASSERT_STATUS_OK((*writer)->Ingest(o));
  writer->reset();
  RunResult after = Snapsink({"ingest", root_, in_});
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

TEST_F(ApiTest, InspectViewsAreTypedRecords) {
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    api::IngestOptions o;
    o.files = {in_};
    ASSERT_STATUS_OK((*sink)->Ingest(o));
    auto sealed = (*sink)->Seal(api::SealOptions{{Ms("2026-10-21T10:00:00Z")}, false});
    ASSERT_STATUS_OK(sealed);
    ASSERT_EQ(sealed->size(), 1u);
    EXPECT_EQ((*sealed)[0].version, 1u);
    EXPECT_EQ((*sealed)[0].rows, 2u);
    ASSERT_STATUS_OK((*sink)->Publish());
  }
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  auto producers = (*ro)->Producers();
  ASSERT_STATUS_OK(producers);
  ASSERT_EQ(producers->size(), 1u);
  EXPECT_EQ((*producers)[0].producer, "p");
  EXPECT_EQ((*producers)[0].next_seq, 4u);
  auto sources = (*ro)->Sources();
  ASSERT_STATUS_OK(sources);
  ASSERT_EQ(sources->size(), 1u);
  EXPECT_EQ((*sources)[0].source, in_);
  EXPECT_EQ((*sources)[0].duplicates, 1u);
  auto windows = (*ro)->Windows();
  ASSERT_STATUS_OK(windows);
  ASSERT_EQ(windows->size(), 2u);
  EXPECT_EQ((*windows)[0].version, 1u);
  EXPECT_FALSE((*windows)[0].dirty);
  EXPECT_EQ((*windows)[0].events, 3);
  EXPECT_TRUE((*windows)[1].dirty);
  auto gens = (*ro)->Generations();
  ASSERT_STATUS_OK(gens);
  ASSERT_EQ(gens->size(), 1u);
  EXPECT_TRUE((*gens)[0].current);
  auto snaps = (*ro)->Snapshots();
  ASSERT_STATUS_OK(snaps);
  ASSERT_EQ(snaps->size(), 1u);
  EXPECT_EQ((*snaps)[0].rows, 2u);
  EXPECT_GT((*snaps)[0].bytes, 0u);
  EXPECT_TRUE((*snaps)[0].current);
  auto gaps = (*ro)->Gaps();
  ASSERT_STATUS_OK(gaps);
  EXPECT_TRUE(gaps->empty());
}

TEST_F(ApiTest, SealRefusesATimeThatIsNotAWindowStart) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  auto r = (*sink)->Seal(api::SealOptions{{Ms("2026-10-21T10:30:00Z")}, false});
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not the start of a 1h window"), std::string::npos) << r.status().message();
}

// docs/CONTRACT.md 7: every input is checked before any changes state.
TEST_F(ApiTest, IngestChecksEveryInputFirst) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::IngestOptions o;
  o.files = {in_, dir_ / "missing.ndjson"};
  EXPECT_FALSE((*sink)->Ingest(o).ok());
  auto sources = (*sink)->Sources();
  ASSERT_STATUS_OK(sources);
  EXPECT_TRUE(sources->empty()) << "the first file was ingested before the second was checked";
}

TEST_F(ApiTest, IngestStopReportsWhatWasCommitted) {
  WriteFile(in_, Input() + "{\"producer\":\"p\"\n" + EventLine().Seq(9).Ts(0).Line());
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  api::IngestOptions o;
  o.files = {in_};
  o.stop_on_error = true;
  api::IngestResult r;
  EXPECT_EQ((*sink)->Ingest(o, &r).code(), Status::Code::kBadInput);
  ASSERT_EQ(r.sources.size(), 1u);
  EXPECT_EQ(r.sources[0].lines, 5u);
}

TEST_F(ApiTest, VerifyWarnsAboutUnknownFilesWithoutFailing) {
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->Run(RunFinal(in_)));
  }
  WriteFile(root_ + "/notes.txt", "x");
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  api::VerifyReport report;
  ASSERT_STATUS_OK((*ro)->Verify(&report));
  EXPECT_EQ(report.snapshots_checked, 2u);
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(report.warnings, std::vector<std::string>{"unknown file in root: notes.txt"});
}

TEST_F(ApiTest, GcRemovesTempFilesAndRollbackPublishesACopy) {
  auto sink = api::Sink::Open(root_);
  ASSERT_STATUS_OK(sink);
  ASSERT_STATUS_OK((*sink)->Run(RunFinal(in_)));
  WriteFile(dir_ / "more.ndjson", EventLine().Seq(4).Ts("2026-10-21T10:00:00Z").Metric("orders").Key("eu").Line());
  ASSERT_STATUS_OK((*sink)->Run(RunFinal(dir_ / "more.ndjson")));
  // A manifest's temp file left by a crash (a stray CURRENT.tmp is the
  // pending switch's, handled before gc looks for temp files).
  WriteFile(root_ + "/manifests/3.tmp", "3\n");
  // Temps under partitions/ belong to the partitions' owners, which write
  // there under their claim locks, not LOCK: a seal record's temp is a
  // directory, a checkpoint's a file, and either may be another process's
  // write in progress. gc leaves both and still succeeds.
  const std::string seal_tmp = root_ + "/partitions/kafka_orders_3/seals/20261021T100000Z-v1-e2.tmp";
  const std::string ckpt_tmp =
      root_ + "/partitions/kafka_orders_3/checkpoints/e00000000000000000002-o00000000000000000042.tmp";
  boost::filesystem::create_directories(seal_tmp);
  boost::filesystem::create_directories(boost::filesystem::path(ckpt_tmp).parent_path());
  WriteFile(seal_tmp + "/data", "rows");
  WriteFile(ckpt_tmp, "half a checkpoint");
  auto gc = (*sink)->Gc(5);
  ASSERT_STATUS_OK(gc);
  EXPECT_EQ(gc->removed_temp_files, std::vector<std::string>{"manifests/3.tmp"});
  EXPECT_TRUE(boost::filesystem::exists(seal_tmp + "/data"));
  EXPECT_TRUE(boost::filesystem::exists(ckpt_tmp));
  // A rollback publishes a new generation with generation 1's windows (docs/CONTRACT.md 10).
  auto rolled = (*sink)->Rollback(1);
  ASSERT_STATUS_OK(rolled);
  EXPECT_EQ(rolled->generation, 3u);
  EXPECT_EQ(rolled->rollback_of, 1u);
  auto reader = (*sink)->NewReader();
  ASSERT_STATUS_OK(reader);
  EXPECT_EQ((*reader)->generation(), 3u);
}

// api::Backfill takes a ReadOnlySink&, and its overload for a Sink& is
// deleted: passing a Sink (which holds LOCK, which backfill takes itself)
// fails to compile instead of failing at run time.
template <typename Handle>
constexpr bool kBackfillAccepts = requires(Handle& h, const api::BackfillOptions& o, api::BackfillResult* r) {
  api::Backfill(h, o, r);
};
static_assert(kBackfillAccepts<api::ReadOnlySink>, "api::Backfill takes a ReadOnlySink");
static_assert(!kBackfillAccepts<api::Sink>, "api::Backfill(Sink&, ...) must not compile");

TEST_F(ApiTest, BackfillRunsFromAReadOnlyHandle) {
  {
    auto sink = api::Sink::Open(root_);
    ASSERT_STATUS_OK(sink);
    ASSERT_STATUS_OK((*sink)->Run(RunFinal(in_)));
    api::BackfillResult r;
    api::BackfillOptions b;
    b.version = 2;
    b.files = {in_};
    // The writer already holds LOCK, which backfill takes for its last step:
    // a Sink does not compile (BackfillRefusesASinkAtCompileTime), and one
    // reached through a ReadOnlySink& is refused by its own state.
    api::ReadOnlySink& as_read_only = **sink;
    Status refused = api::Backfill(as_read_only, b, &r);
    EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument) << refused.ToString();
    EXPECT_EQ(refused.ToString(), "backfill runs from a ReadOnlySink: it takes the root's LOCK itself to publish");
  }
  auto ro = api::Sink::OpenReadOnly(root_);
  ASSERT_STATUS_OK(ro);
  api::BackfillOptions b;
  b.version = 2;
  b.files = {in_};
  api::BackfillResult r;
  ASSERT_STATUS_OK(api::Backfill(**ro, b, &r));
  EXPECT_EQ(r.published_windows, 2u);
  EXPECT_EQ(r.generation, 2u);
}

// Every public header, include/snapsink/ and its utilities/, by path.
std::vector<std::string> PublicHeaders() {
  std::vector<std::string> out;
  for (boost::filesystem::recursive_directory_iterator it(std::string(SNAPSINK_SOURCE_DIR) + "/include/snapsink"), end;
       it != end; ++it) {
    if (boost::filesystem::is_regular_file(it->path())) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ApiHeaders, IncludeOnlyTheStandardLibraryAndEachOther) {
  const std::regex include_line(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  int headers = 0;
  for (const std::string& path : PublicHeaders()) {
    ++headers;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string name = m[2];
      const bool ok = m[1] == "\"" ? name.rfind("snapsink/", 0) == 0 : name.find('.') == std::string::npos;
      EXPECT_TRUE(ok) << path << " includes " << name;
      // The core stands alone: no core header needs a utility.
      const bool core = path.find("/include/snapsink/utilities/") == std::string::npos;
      EXPECT_FALSE(core && name.rfind("snapsink/utilities/", 0) == 0) << path << " includes " << name;
    }
  }
  EXPECT_EQ(headers, 14);  // the core's nine (bucket_access.h the ninth) and utilities/ parse.h, partitions.h, query_text.h, serve.h, table.h
}

// The lines of text that name the command-line tool: a flag, the tool or
// one of its commands, its exit statuses, its source folder.
std::vector<std::string> CommandLineMentions(const std::string& text) {
  static const std::regex mention(
      R"((--[a-z])|\bCLI\b|command[- ]line|\bexit (status|code|[0-9])|tools/|)"
      R"(\bsnapsink (init|ingest|seal|publish|run|query|inspect|status|gc|rollback|backfill|gaps|verify|serve|metrics|upgrade)\b)",
      std::regex::icase);
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (std::regex_search(line, mention)) out.push_back(std::to_string(n) + ": " + line);
  }
  return out;
}

// A public header is the library's, for any program: it names no flag,
// command or exit status of the snapsink tool (tools/ documents those).
TEST(ApiHeaders, NameNoCommandLineTool) {
  size_t lines = 0;
  for (const std::string& path : PublicHeaders()) {
    std::ifstream f(path);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    lines += static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    for (const std::string& m : CommandLineMentions(text)) ADD_FAILURE() << path << ":" << m;
  }
  EXPECT_GT(lines, 1000u) << "the scan read too little of the headers";
}

// The check itself: each kind of mention is caught, and the words a header
// does use (a "---- section ----" rule, "snapsink public API") are not.
TEST(ApiHeaders, TheCommandLineCheckCatchesEachKindOfMention) {
  for (const char* line : {"// as `run --follow` does", "// prints as the CLI does", "// what the command line prints",
                           "// they exit 5", "// the exit status", "// see tools/exit_codes.h",
                           "// what `snapsink query` prints", "// (snapsink gaps accept)"}) {
    EXPECT_EQ(CommandLineMentions(line).size(), 1u) << line;
  }
  for (const char* line : {"// ---- Read-side views ----", "// snapsink public API: a handle per open root.",
                           "// --- Times ---", "// a root written by an earlier snapsink to this"}) {
    EXPECT_TRUE(CommandLineMentions(line).empty()) << line;
  }
}

// The lines of a header's code (comments cut) that declare something named
// exactly window_ms: a name that said a window's size in some records and
// its start in others. Fields and parameters say which: window_size_ms or
// window_start_ms.
std::vector<std::string> AmbiguousWindowNames(const std::string& text) {
  static const std::regex name(R"(\bwindow_ms\b)");
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string code = line.substr(0, line.find("//"));
    if (std::regex_search(code, name)) out.push_back(std::to_string(n) + ": " + line);
  }
  return out;
}

// The declarations in text that return a Status or a Result (every one
// that can fail) without an "Errors:" line in the comment right above them,
// by line number and name. A deleted overload cannot be called: it needs none.
std::vector<std::string> FallibleWithoutErrors(const std::string& text, size_t* checked) {
  static const std::regex fallible(R"(^\s*(static\s+)?(Status|Result<.*>)\s+(\w+)\()");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, fallible) || lines[i].find("= delete") != std::string::npos) continue;
    ++*checked;
    bool listed = false;
    for (size_t j = i; j > 0; --j) {
      const std::string& above = lines[j - 1];
      const size_t first = above.find_first_not_of(' ');
      if (first == std::string::npos || above.compare(first, 2, "//") != 0) break;
      listed = listed || above.find("Errors:") != std::string::npos;
    }
    if (!listed) out.push_back(std::to_string(i + 1) + ": " + std::string(m[3]));
  }
  return out;
}

TEST(ApiHeaders, NameAWindowBySizeOrStart) {
  for (const std::string& path : PublicHeaders()) {
    std::ifstream f(path);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (const std::string& m : AmbiguousWindowNames(text)) ADD_FAILURE() << path << ":" << m;
  }
  // The check itself: a field and a parameter are caught; the two names
  // that say what they hold, and the JSON key in a comment, are not.
  EXPECT_EQ(AmbiguousWindowNames("  int64_t window_ms = 0;\n  Status Scan(int64_t window_ms, int x);\n").size(), 2u);
  EXPECT_TRUE(AmbiguousWindowNames("  int64_t window_size_ms = 0;\n  int64_t window_start_ms = 0;  // \"window_ms\"\n"
                                   "  std::optional<int64_t> last_seal_window_start_ms;\n")
                  .empty());
}

// Each method of the handles and the Reader, and each function of drive.h and utilities/partitions.h,
// says which Status codes it returns, as lmdb.h does per function.
TEST(ApiHeaders, EveryFallibleMethodListsItsErrors) {
  size_t checked = 0;
  for (const char* name : {"sink.h", "reader.h", "drive.h", "utilities/partitions.h"}) {
    const std::string path = std::string(SNAPSINK_SOURCE_DIR) + "/include/snapsink/" + name;
    std::ifstream f(path);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (const std::string& m : FallibleWithoutErrors(text, &checked)) ADD_FAILURE() << path << ":" << m << " has no Errors: line";
  }
  EXPECT_GE(checked, 50u) << "the scan found too few declarations";
}

// The check itself: a declaration with the line above its comment passes,
// one without it (or with it only above a blank line) does not.
TEST(ApiHeaders, TheErrorsCheckCatchesAMissingLine) {
  size_t checked = 0;
  const std::string text =
      "  // Opens it.\n  // Errors: NotFound.\n  static Result<std::unique_ptr<Sink>> Open(const std::string& p);\n"
      "  // Errors: IOError.\n\n  // Seals.\n  Status Seal(int w);\n"
      "  Result<uint64_t> Epoch() const;\n"
      "  Status Backfill(Sink& s) = delete;\n";
  EXPECT_EQ(FallibleWithoutErrors(text, &checked), (std::vector<std::string>{"7: Seal", "8: Epoch"}));
  EXPECT_EQ(checked, 3u);
}

TEST(ApiDurations, ParseAndFormat) {
  int64_t ms = 0;
  ASSERT_TRUE(api::ParseDuration("15m", &ms));
  EXPECT_EQ(ms, 15 * 60 * 1000);
  EXPECT_EQ(api::FormatDuration(ms), "15m");
  EXPECT_FALSE(api::ParseDuration("fast", &ms));
  EXPECT_EQ(api::FormatTime(Ms("20261021T100000Z")), "2026-10-21T10:00:00Z");
}

}  // namespace
}  // namespace snapsink::testing
