// What a new user hit, through the binary: the event format in
// the docs and in --help, a backfill's sources stay visible, sources found
// from any directory, window states that do not overlap, the smaller
// inconsistencies, and what a newcomer looks for (man page, completion,
// install, install-deps.sh). The server items are in serve_test.cc.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

const std::string kSource = SNAPSINK_SOURCE_DIR;

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// Hours after 2026-10-21T10:00:00Z, plus ms.
std::string Ev(int seq, int hour, int value = 1) {
  return EventLine().Seq(seq).Ts(Ms("2026-10-21T10:00:00Z") + hour * 3600000LL + seq).Metric("orders").Key("eu")
      .Value(value).Line();
}

// The command names `snapsink --help` lists.
std::vector<std::string> HelpCommands() {
  RunResult r = Snapsink({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  std::vector<std::string> out;
  const size_t at = r.out.find("Subcommands:\n");
  EXPECT_NE(at, std::string::npos) << r.out;
  const std::regex line(R"(^  ([a-z]+)\s)");
  std::istringstream in(r.out.substr(at == std::string::npos ? 0 : at));
  std::string l;
  while (std::getline(in, l) && !(l.empty() && !out.empty())) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out.push_back(m[1]);
  }
  EXPECT_GE(out.size(), 15u) << r.out;
  return out;
}

// The long options `snapsink COMMAND --help` lists.
std::set<std::string> HelpOptions(const std::string& command) {
  RunResult r = Snapsink({command, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  std::set<std::string> out;
  const std::regex opt(R"(^\s+(--[a-z][a-z-]*))");
  std::istringstream in(r.out);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (std::regex_search(l, m, opt)) out.insert(m[1]);
  }
  out.erase("--help");
  out.erase("--help-all");
  return out;
}

// ---- 3. The event format, documented ----------------------------------------

TEST(Newcomer, EventFormatIsDocumentedAndListedInHelp) {
  const std::string events = ReadFile(kSource + "/docs/EVENTS.md");
  for (const char* field : {"producer", "epoch", "seq", "id", "ts", "metric", "key", "value", "op"}) {
    EXPECT_NE(events.find(std::string("| `") + field + "` |"), std::string::npos) << field << " in docs/EVENTS.md";
  }
  for (const char* part : {"lines = applied + duplicates + fenced + rejected + ignored", "rejects/<source>.ndjson",
                           "\"truncated\"", "sample_events.ndjson.ndjson", "`fenced`", "`duplicates`", "`ignored`"}) {
    EXPECT_NE(events.find(part), std::string::npos) << part;
  }
  EXPECT_NE(ReadFile(kSource + "/README.md").find("docs/EVENTS.md"), std::string::npos);
  for (const char* command : {"ingest", "run"}) {
    RunResult r = Snapsink({command, "--help"});
    ASSERT_EQ(r.exit_code, 0);
    for (const char* field : {"producer", "epoch", "seq", "id", "ts", "metric", "key", "value", "op"}) {
      EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string("\n  ") + field + " +[a-zA-Z\"]")))
          << command << " --help lacks " << field << ":\n" << r.out;
    }
    EXPECT_NE(r.out.find("docs/EVENTS.md"), std::string::npos);
  }
}

// A clone is all a user has: no file may cite a contract or spec kept
// beside the repository (a shared directory next to the clone). Every file of the
// tree is read, .git and build trees (a directory holding CMakeCache.txt)
// aside; the needles are assembled so that this file does not match itself.
TEST(Newcomer, NothingPointsAtTheSharedSpecOutsideTheClone) {
  const std::vector<std::string> needles = {std::string("..") + "/shared", std::string("SPEC") + ".md",
                                            std::string("shared/") + "SPEC"};
  std::vector<std::string> hits;
  size_t files = 0;
  for (fs::recursive_directory_iterator it(kSource), end; it != end; ++it) {
    const fs::path& path = it->path();
    if (fs::is_directory(path)) {
      if (path.filename() == ".git" || fs::exists(path / "CMakeCache.txt")) it.disable_recursion_pending();
      continue;
    }
    if (!fs::is_regular_file(path)) continue;
    ++files;
    const std::string text = ReadFile(path.string());
    for (const std::string& needle : needles) {
      if (text.find(needle) != std::string::npos) hits.push_back(path.string() + " cites " + needle);
    }
  }
  EXPECT_GT(files, 100u);  // the walk did reach the tree
  EXPECT_TRUE(hits.empty()) << hits.size() << " file(s), the first: " << hits.front();
  EXPECT_TRUE(fs::exists(kSource + "/docs/CONTRACT.md"));
}

// What a user reads (the installed headers, README, docs/) cites the
// contract's sections as docs/CONTRACT.md N, not by the spec's old name.
TEST(Newcomer, UserFacingFilesCiteTheContractInTheRepository) {
  const std::regex old_cite(std::string("\\bSP") + "EC [0-9]");
  std::vector<std::string> files = {kSource + "/README.md"};
  for (const char* dir : {"/include/snapsink", "/docs"}) {
    for (fs::recursive_directory_iterator it(kSource + dir), end; it != end; ++it) {
      if (fs::is_regular_file(it->path())) files.push_back(it->path().string());
    }
  }
  ASSERT_GT(files.size(), 10u);
  for (const std::string& f : files) {
    std::smatch m;
    const std::string text = ReadFile(f);
    EXPECT_FALSE(std::regex_search(text, m, old_cite)) << f << " cites \"" << m.str() << "\"";
  }
}

// ---- 4. A backfill's sources and counts stay visible ------------------------

TEST(Newcomer, BackfillSourcesAreListedWithTheirCounts) {
  TempDir d;
  const std::string r = d / "r", live = d / "live.ndjson", archive = d / "archive.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(live, Ev(0, 0) + Ev(1, 1) + Ev(2, 2));
  ASSERT_EQ(Snapsink({"run", r, live, "--final", "--quiet"}).exit_code, 0);
  // 2 events in 10:00, 3 outside it.
  WriteFile(archive, Ev(0, 0, 5) + Ev(1, 0, 5) + Ev(2, 1) + Ev(3, 2) + Ev(4, 2));
  RunResult b = Snapsink({"backfill", r, "--version", "2", "--from", "2026-10-21T10:00:00Z", "--to",
                          "2026-10-21T10:00:00Z", "--source", "archive", archive, "--quiet"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.err.find("ignored (outside --from/--to) 3"), std::string::npos) << b.err;

  RunResult sources = Snapsink({"inspect", r, "sources", "--json"});
  ASSERT_EQ(sources.exit_code, 0) << sources.err;
  EXPECT_NE(sources.out.find("\"source\":\"backfill v2: archive\""), std::string::npos) << sources.out;
  EXPECT_NE(sources.out.find("\"lines\":5,\"applied\":2,\"duplicates\":0,\"fenced\":0,\"rejected\":0,\"ignored\":3"),
            std::string::npos)
      << sources.out;
  RunResult st = Snapsink({"status", r, "--json"});
  EXPECT_NE(st.out.find("{\"source\":\"backfill v2: archive\",\"path\":null,\"backfill\":true"), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("\"ignored\":3"), std::string::npos) << st.out;
  RunResult text = Snapsink({"status", r});
  EXPECT_NE(text.out.find("  backfill v2: archive  offset "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(an archive, read once)"), std::string::npos) << text.out;
  RunResult m = Snapsink({"metrics", r});
  EXPECT_NE(m.out.find("snapsink_lines_ignored_total{source=\"backfill v2: archive\"} 3"), std::string::npos) << m.out;
  // Live ingest goes on under its own name.
  AppendFile(live, Ev(3, 2));
  RunResult again = Snapsink({"ingest", r, live, "--quiet"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(FirstLine(again.err).rfind(live + ": this run: lines 1,", 0), 0u) << again.err;
}

// ---- 6. Sources found wherever status runs ----------------------------------

TEST(Newcomer, StatusFindsASourceGivenAsARelativePathFromAnyDirectory) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(d / "in.ndjson", Ev(0, 0) + Ev(1, 0));
  const std::string size = std::to_string(ReadFile(d / "in.ndjson").size());
  char old_cwd[4096];
  ASSERT_NE(::getcwd(old_cwd, sizeof(old_cwd)), nullptr);
  ASSERT_EQ(::chdir(d.path().c_str()), 0);
  RunResult in = Snapsink({"ingest", r, "in.ndjson", "--quiet"});
  ASSERT_EQ(::chdir("/"), 0);
  RunResult st = Snapsink({"status", r});
  RunResult js = Snapsink({"status", r, "--json"});
  RunResult sources = Snapsink({"inspect", r, "sources", "--json"});
  ASSERT_EQ(::chdir(old_cwd), 0);
  ASSERT_EQ(in.exit_code, 0) << in.err;
  const std::string abs = fs::canonical(d / "in.ndjson").string();
  // The name stays as given; the file is found by its recorded absolute path.
  EXPECT_NE(st.out.find("  in.ndjson  offset " + size + " (size " + size + ", lag 0 bytes, file " + abs + ")"),
            std::string::npos)
      << st.out;
  EXPECT_EQ(st.out.find("file not found"), std::string::npos) << st.out;
  EXPECT_NE(js.out.find("{\"source\":\"in.ndjson\",\"path\":\"" + abs + "\",\"backfill\":false,\"offset\":" + size +
                        ",\"size\":" + size + ",\"lag\":0"),
            std::string::npos)
      << js.out;
  EXPECT_NE(sources.out.find("\"source\":\"in.ndjson\""), std::string::npos) << sources.out;
}

// ---- 7. Window states that do not overlap -----------------------------------

TEST(Newcomer, AfterRunFinalEveryWindowIsPublishedAndNoneOpen) {
  TempDir d;
  const std::string r = d / "r", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(in, Ev(0, 0) + Ev(1, 1) + Ev(2, 2) + Ev(3, 3));
  ASSERT_EQ(Snapsink({"run", r, in, "--final", "--quiet"}).exit_code, 0);
  RunResult st = Snapsink({"status", r});
  EXPECT_NE(st.out.find("windows     4: open 0, closed_unsealed 0, staged 0, published 4, unpublished 0\n"
                        "            (open: unsealed changes, the watermark has not passed its end;"),
            std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("open windows (unsealed changes, not yet closed by the watermark; each closes once an "
                        "event at or after its closing event time is applied):\n  none\n"),
            std::string::npos)
      << st.out;
  RunResult m = Snapsink({"metrics", r});
  for (const char* want : {"snapsink_windows{state=\"open\"} 0", "snapsink_windows{state=\"closed_unsealed\"} 0",
                           "snapsink_windows{state=\"staged\"} 0", "snapsink_windows{state=\"published\"} 4",
                           "snapsink_windows{state=\"unpublished\"} 0"}) {
    EXPECT_NE(m.out.find(want), std::string::npos) << want << "\n" << m.out;
  }
  // A new event for the last window: it is open (changes), no longer counted as published.
  AppendFile(in, Ev(4, 3));
  ASSERT_EQ(Snapsink({"ingest", r, in, "--quiet"}).exit_code, 0);
  st = Snapsink({"status", r});
  EXPECT_NE(st.out.find("windows     4: open 1, closed_unsealed 0, staged 0, published 3, unpublished 0\n"),
            std::string::npos)
      << st.out;
}

// ---- 9. Smaller ------------------------------------------------------------

TEST(Newcomer, VersionNamesEveryLinkedLibrary) {
  RunResult r = Snapsink({"--version"});
  ASSERT_EQ(r.exit_code, 0);
  for (const char* lib : {"LMDB ", "zstd ", "simdjson ", "xxHash ", "fmt ", "Boost.Filesystem ", "prometheus-cpp ",
                          "cpp-httplib ", "libcurl ", "pugixml ", "CLI11 "}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string(lib) + "[0-9]+\\.[0-9]+"))) << lib << " in " << r.out;
  }
}

TEST(Newcomer, SmallInconsistencies) {
  TempDir d;
  const std::string r = d / "r", in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(in, Ev(0, 0) + "not json\n");
  RunResult first = Snapsink({"ingest", r, in, "--quiet"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("; rejected lines in "), std::string::npos) << first.err;
  // A run that read nothing says nothing about rejects.
  RunResult again = Snapsink({"ingest", r, in, "--quiet"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("this run: lines 0,"), std::string::npos) << again.err;
  EXPECT_EQ(again.err.find("rejected lines in"), std::string::npos) << again.err;

  // inspect ids says none as status does.
  TempDir e;
  ASSERT_EQ(Snapsink({"init", e / "r"}).exit_code, 0);
  RunResult ids = Snapsink({"inspect", e / "r", "ids"});
  EXPECT_EQ(ids.out.find("null"), std::string::npos) << ids.out;
  EXPECT_NE(ids.out.find("none"), std::string::npos) << ids.out;
  EXPECT_NE(Snapsink({"status", e / "r"}).out.find("oldest none"), std::string::npos);

  // One message for a missing root, whatever reads it.
  const std::string missing = d / "missing";
  const std::string want = "snapsink: root " + missing + " does not exist (snapsink init " + missing + " creates one)\n";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"status", missing}, {"serve", missing, "--listen", "127.0.0.1:0"}, {"query", missing}, {"metrics", missing}}) {
    RunResult res = Snapsink(args);
    EXPECT_EQ(res.exit_code, 1) << args[0];
    EXPECT_EQ(res.err, want) << args[0];
  }

  // A usage error a command finds itself ends as CLI11's do.
  RunResult w = Snapsink({"query", r, "--window", "2026-10-21"});
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_EQ(w.err.substr(w.err.find('\n') + 1), "Run 'snapsink query --help' for usage.\n") << w.err;

  // inspect --help: a clean list of what to inspect.
  RunResult h = Snapsink({"inspect", "--help"});
  EXPECT_NE(h.out.find("{producers|gaps|sources|windows|ids|snapshots|generations}"), std::string::npos) << h.out;
  EXPECT_EQ(h.out.find("snapshots or generations}"), std::string::npos) << h.out;
}

// ---- 10. What a newcomer looks for -----------------------------------------

TEST(Newcomer, LicenseChangelogManPageAndCompletionNameEveryCommand) {
  EXPECT_NE(ReadFile(kSource + "/LICENSE").find("MIT License"), std::string::npos);
  EXPECT_NE(ReadFile(kSource + "/LICENSE").find("snapsink authors"), std::string::npos);
  EXPECT_NE(ReadFile(kSource + "/CHANGELOG.md").find("# Changelog"), std::string::npos);
  const std::string man = ReadFile(kSource + "/docs/snapsink.1");
  const std::string completion = ReadFile(kSource + "/docs/snapsink.bash");
  EXPECT_NE(man.find(".SH EXIT STATUS"), std::string::npos);
  for (const std::string& command : HelpCommands()) {
    EXPECT_NE(man.find(".B " + command + " "), std::string::npos) << command << " in docs/snapsink.1";
    EXPECT_TRUE(std::regex_search(completion, std::regex("commands=\"[^\"]*\\b" + command + "\\b")))
        << command << " in docs/snapsink.bash";
    // Every option of the command, in the man page and in its completion line.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(completion, m, std::regex("\n    " + command + "\\) opts=\"([^\"]*)\"")))
        << command;
    std::smatch common;  // the options every command takes (a root in a bucket)
    ASSERT_TRUE(std::regex_search(completion, common, std::regex("\n  local bucket_opts=\"([^\"]*)\"")));
    const std::string opts = " " + m[1].str() + " " + common[1].str() + " ";
    for (const std::string& o : HelpOptions(command)) {
      EXPECT_NE(opts.find(" " + o + " "), std::string::npos) << command << " " << o << " in docs/snapsink.bash";
      std::string escaped;
      for (char c : o) escaped += c == '-' ? std::string("\\-") : std::string(1, c);
      EXPECT_NE(man.find(escaped), std::string::npos) << command << " " << o << " in docs/snapsink.1";
    }
  }
  for (int code : {0, 1, 2, 3, 4, 5, 10}) {
    EXPECT_NE(man.find(".B " + std::to_string(code) + "\n"), std::string::npos) << code;
  }
}

TEST(Newcomer, CmakeInstallPutsTheManPageAndCompletionInPlace) {
  TempDir d;
  const std::string build = fs::path(SNAPSINK_BINARY).parent_path().string();
  const std::string cmd = "cmake --install '" + build + "' --prefix '" + d.path() + "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(ReadFile(d / "share/man/man1/snapsink.1"), ReadFile(kSource + "/docs/snapsink.1"));
  EXPECT_EQ(ReadFile(d / "share/bash-completion/completions/snapsink"), ReadFile(kSource + "/docs/snapsink.bash"));
  EXPECT_TRUE(fs::exists(d / "bin/snapsink"));
}

TEST(Newcomer, InstallDepsWithoutRootOrSudoSaysWhatToInstall) {
  // A PATH where id says "not root", dpkg-query finds nothing installed and
  // there is no sudo.
  TempDir d;
  WriteFile(d / "id", "#!/bin/sh\necho 1000\n");
  WriteFile(d / "dpkg-query", "#!/bin/sh\nexit 1\n");
  ::chmod((d / "id").c_str(), 0755);
  ::chmod((d / "dpkg-query").c_str(), 0755);
  for (const char* tool : {"grep", "cat"}) {
    const std::string real = (fs::path("/usr/bin") / tool).string();
    const std::string alt = (fs::path("/bin") / tool).string();
    ASSERT_EQ(::symlink(fs::exists(real) ? real.c_str() : alt.c_str(), (d / tool).c_str()), 0);
  }
  const std::string out = d / "out";
  const std::string cmd = "env PATH='" + d.path() + "' /bin/bash '" + kSource + "/install-deps.sh' >'" + out +
                          "' 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  const std::string text = ReadFile(out);
  EXPECT_NE(text.find("not root and no sudo"), std::string::npos) << text;
  EXPECT_NE(text.find("apt-get install -y --no-install-recommends build-essential cmake"), std::string::npos) << text;
}

}  // namespace
}  // namespace snapsink::testing
