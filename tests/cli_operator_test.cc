// The operator's tool, through the binary: errors in one voice,
// one window syntax, status, metrics, accepting a gap, backfill's dry run,
// and the small fixes.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "engine/timeutil.h"
#include "tests/test_util.h"

namespace snapsink::testing {
namespace {

namespace fs = boost::filesystem;

std::string Event(const std::string& producer, uint64_t seq, int64_t ts, const std::string& key = "k",
                  const std::string& value = "1", uint32_t epoch = 0) {
  return EventLine().Producer(producer).Epoch(epoch).Seq(seq).Ts(ts).Key(key).Value(value).Line();
}

// n events of producer p from seq 0, one every 10 minutes from kBase.
std::string Events(const std::string& p, int n, const std::string& value = "1") {
  std::string out;
  for (int i = 0; i < n; ++i) out += Event(p, i, kBase + i * 10 * kMinute, i % 2 ? "a" : "b", value);
  return out;
}

// A new root at r with Events("p", 3) run --final into it: one window, one
// generation.
void PublishThreeEvents(const std::string& r, const std::string& in) {
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(in, Events("p", 3));
  ASSERT_EQ(Snapsink({"run", r, in, "--final"}).exit_code, 0);
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// Every regular file under dir, state/ included, except LMDB's lock.mdb (its
// reader table changes whenever anyone reads, by design).
std::map<std::string, std::string> AllFiles(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (fs::is_directory(it->path())) {
      out[rel + "/"] = "";
    } else if (it->path().filename() != "lock.mdb") {
      out[rel] = ReadFile(it->path().string());
    }
  }
  return out;
}

// ---- 1. Errors in one voice -------------------------------------------------

// Messages testers found misleading, each through the binary: what it says
// now names what to do.
TEST(CliErrors, MessagesNameWhatToDo) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  fs::create_directories(d / "dir");
  WriteFile(d / "file", "x");
  struct Case {
    std::vector<std::string> args;
    std::string first_line;
  };
  const std::vector<Case> cases = {
      {{"run", r, d / "dir"},
       "snapsink: " + d / "dir" + ": a directory; run reads one with --follow (every *.ndjson in it, as they "
       "appear), or give its files"},
      {{"query", d / "missing"},
       "snapsink: root " + d / "missing" + " does not exist (snapsink init " + d / "missing" + " creates one)"},
      {{"init", d / "file"},
       "snapsink: " + d / "file" + " exists and is not a directory; init needs a new or empty directory"},
      {{"query", r, "--generation", "18446744073709551616"},
       "snapsink: --generation: must be at most 18446744073709551615, got 18446744073709551616"},
      {{"run", r, "--follow", "--serve", "0.0.0.0:1", d / "dir"},
       "snapsink: --serve 0.0.0.0:1: not a loopback address; run --follow --serve serves this host only "
       "(127.0.0.1:PORT); to serve beyond it, run snapsink serve " + r +
       " --listen 0.0.0.0:1 --tls-cert FILE --tls-key FILE --token-file FILE beside it"},
  };
  for (const Case& c : cases) {
    RunResult res = Snapsink(c.args);
    EXPECT_EQ(res.exit_code, 1) << c.args[0] << "\n" << res.err;
    EXPECT_EQ(FirstLine(res.err), c.first_line) << c.args[0];
  }
  // --final given, the input stopped by --on-error stop: nothing to seal
  // says why --final did not seal (it said "--final seals open windows too").
  WriteFile(d / "in.ndjson", EventLine().Seq(1).Ts(1792576800000).Line() + "bad\n");
  RunResult stop = Snapsink({"run", r, d / "in.ndjson", "--final", "--on-error", "stop"});
  EXPECT_EQ(stop.exit_code, 2) << stop.err;
  EXPECT_EQ(stop.out.find("--final seals open windows too"), std::string::npos) << stop.out;
  EXPECT_NE(stop.out.find("--final seals them once the input is read to its end"), std::string::npos) << stop.out;
}

// A bad --kafka-config is a usage error before any record: no run summary
// ("kafka t: 0 records, ...") before it.
TEST(CliErrors, BadKafkaConfigPrintsNoRunSummary) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  RunResult res = Snapsink({"run", r, "--kafka", "127.0.0.1:1", "--topic", "t", "--group", "g", "--kafka-config",
                            "bad.prop=1"});
  EXPECT_EQ(res.exit_code, 1) << res.err;
  EXPECT_EQ(res.err.rfind("snapsink: --kafka-config bad.prop=1: ", 0), 0u) << res.err;
  EXPECT_EQ(res.err.find("records"), std::string::npos) << res.err;
}

TEST(CliErrors, EachUsageErrorIsOneClearLineNamingWhatIsWrong) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string first_line;
  };
  const std::vector<Case> cases = {
      {{"ingset", r, "f"}, 1, "snapsink: unknown command 'ingset' (did you mean 'ingest'?)"},
      {{"querry", r}, 1, "snapsink: unknown command 'querry' (did you mean 'query'?)"},
      {{"frobnicate", r}, 1,
       "snapsink: unknown command 'frobnicate'; the commands are init, ingest, seal, publish, run, backfill, query, "
       "inspect, verify, gc, rollback, upgrade, status, metrics, gaps, metric, serve"},
      {{}, 1,
       "snapsink: a command is required: init, ingest, seal, publish, run, backfill, query, inspect, verify, gc, "
       "rollback, upgrade, status, metrics, gaps, metric, serve (snapsink --help)"},
      {{"--formt", "json"}, 1,
       "snapsink: unknown option '--formt'; options of a command go after it: snapsink COMMAND ROOT [OPTIONS]"},
      {{"--verison"}, 1,
       "snapsink: unknown option '--verison' (did you mean '--version'?); options of a command go after it: "
       "snapsink COMMAND ROOT [OPTIONS]"},
      {{"query", r, "--formt", "json"}, 1, "snapsink: query: unknown option '--formt' (did you mean '--format'?)"},
      {{"query", r, "--format", "jsn"}, 1, "snapsink: --format: expected table, json or csv, got 'jsn' (did you mean 'json'?)"},
      {{"query", r, "extra"}, 1, "snapsink: query: unexpected argument 'extra'"},
      {{"ingest", r, "f", "--commit-every", "0"}, 1, "snapsink: --commit-every: must be at least 1, got 0"},
      {{"ingest", r, "f", "--commit-every", "many"}, 1,
       "snapsink: --commit-every: expected a whole number of at least 1, got 'many'"},
      {{"query", r, "--generation", "-1"}, 1, "snapsink: --generation: expected a whole number of at least 1, got '-1'"},
      {{"query", r, "--generation", "0"}, 1, "snapsink: --generation: must be at least 1, got 0"},
      {{"rollback", r, "--generation", "0"}, 1, "snapsink: --generation: must be at least 1, got 0"},
      {{"gc", r, "--keep-generations", "0"}, 1, "snapsink: --keep-generations: must be at least 1, got 0"},
      {{"init", d / "x", "--on-gap", "halt"}, 1, "snapsink: --on-gap: expected accept or stop, got 'halt'"},
      {{"inspect", r, "windowz"}, 1,
       "snapsink: WHAT: expected producers, gaps, sources, windows, ids, snapshots, generations or metrics, got 'windowz' "
       "(did you mean 'windows'?)"},
      {{"query"}, 1, "snapsink: ROOT is required"},
      {{"gaps", r, "accept"}, 1, "snapsink: --producer is required"},
      {{"gaps", r, "accept", "--producer", "p", "--range", "9..3"}, 1,
       "snapsink: --range '9..3': expected LO..HI (sequence numbers, both inclusive, LO <= HI) or one number"},
      {{"inspect", r, "windows", "--all"}, 1, "snapsink: --all goes with inspect gaps only"},
  };
  for (const Case& c : cases) {
    RunResult res = Snapsink(c.args);
    std::string cmd;
    for (const std::string& a : c.args) cmd += a + " ";
    EXPECT_EQ(res.exit_code, c.exit_code) << cmd << "\n" << res.err;
    EXPECT_EQ(FirstLine(res.err), c.first_line) << cmd;
    EXPECT_EQ(res.out, "") << cmd;
  }
}

TEST(CliErrors, VersionNamesTheBuildAndLibraries) {
  RunResult r = Snapsink({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("snapsink ", 0), 0u) << r.out;
  for (const char* part : {" build)", "LMDB 0.", "zstd 1.", "simdjson "}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " in " << r.out;
  }
}

TEST(CliErrors, EveryCommandsHelpListsExitCodesAnExampleAndDescribesEveryArgument) {
  for (const char* cmd : {"init", "ingest", "seal", "publish", "run", "backfill", "query", "inspect", "verify", "gc",
                          "rollback", "status", "metrics", "gaps"}) {
    RunResult r = Snapsink({cmd, "--help"});
    ASSERT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("Exit status: 0 ok"), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("Example: snapsink " + std::string(cmd)), std::string::npos) << cmd << "\n" << r.out;
    // Each positional and option line carries a description after its name.
    const size_t root = r.out.find("\n  ROOT");
    ASSERT_NE(root, std::string::npos) << cmd << "\n" << r.out;
    const std::string root_line = FirstLine(r.out.substr(root + 1));
    EXPECT_NE(root_line.find("root"), std::string::npos) << cmd << ": " << root_line;
  }
  RunResult w = Snapsink({"inspect", "--help"});
  for (const char* col : {"dirty (events applied since the last seal)", "closed (the watermark has passed its end)",
                          "events (adds and retracts applied)", "count (net rows"}) {
    EXPECT_NE(w.out.find(col), std::string::npos) << col;
  }
}

// The exit codes --help names are those of docs/CONTRACT.md's table, in its
// order (the tool reads them from one table, tools/exit_codes.*); a
// command's "Exit status:" line names no code outside it.
std::vector<std::string> ExitCodesOf(const std::string& exit_line) {
  std::vector<std::string> codes;
  std::istringstream parts(exit_line.substr(exit_line.find(':') + 1));
  std::string part;
  while (std::getline(parts, part, ';')) {
    std::istringstream words(part);
    std::string code;
    words >> code;
    codes.push_back(code);
  }
  return codes;
}

TEST(CliErrors, HelpListsTheExitCodesOfTheContract) {
  std::ifstream contract(std::string(SNAPSINK_SOURCE_DIR) + "/docs/CONTRACT.md");
  ASSERT_TRUE(contract.good());
  std::vector<std::string> documented;
  std::string line;
  bool in_table = false;
  while (std::getline(contract, line)) {
    if (line == "### Exit status") in_table = true;
    else if (in_table && line.rfind("## ", 0) == 0) break;
    else if (in_table && line.rfind("| ", 0) == 0 && line.find("| status") != 0) {
      documented.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  ASSERT_EQ(documented.size(), 7u) << "docs/CONTRACT.md's exit status table";
  RunResult root = Snapsink({"--help"});
  ASSERT_EQ(root.exit_code, 0);
  const size_t at = root.out.find("Exit status:");
  ASSERT_NE(at, std::string::npos) << root.out;
  EXPECT_EQ(ExitCodesOf(FirstLine(root.out.substr(at))), documented) << root.out;
  for (const char* cmd : {"init", "ingest", "seal", "publish", "run", "backfill", "query", "inspect", "verify", "gc",
                          "rollback", "upgrade", "status", "metrics", "gaps", "serve"}) {
    RunResult r = Snapsink({cmd, "--help"});
    const size_t exits = r.out.find("Exit status:");
    ASSERT_NE(exits, std::string::npos) << cmd;
    for (const std::string& code : ExitCodesOf(FirstLine(r.out.substr(exits)))) {
      EXPECT_NE(std::find(documented.begin(), documented.end(), code), documented.end()) << cmd << ": " << code;
    }
  }
}

// ---- 2. One window syntax ----------------------------------------------------

TEST(WindowSyntax, EveryFormNamesTheWindowHoldingItAcrossCommands) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", r, "--lateness", "0s"}).exit_code, 0);
  WriteFile(in, Events("p", 12));  // 10:00 .. 11:50
  ASSERT_EQ(Snapsink({"ingest", r, in}).exit_code, 0);
  // Every way to name the 10:00 window.
  const std::vector<std::string> names = {"2026-10-21T10:00:00Z", "20261021T100000Z", "2026-10-21T10:30:00Z",
                                          "2026-10-21T12:59:59.999+02:00", std::to_string(kBase + 45 * kMinute),
                                          "2026-10-21 10:00:00z"};
  for (const std::string& n : names) {
    // query: the window's rows.
    RunResult q = Snapsink({"query", r, "--window", n, "--format", "csv"});
    EXPECT_EQ(q.exit_code, 0) << n << q.err;
    // seal: that window (re-sealing an already sealed, unchanged window is a no-op after the first).
    RunResult s = Snapsink({"seal", r, "--window", n});
    EXPECT_EQ(s.exit_code, 0) << n << s.err;
    if (n == names.front()) {
      EXPECT_NE(s.out.find("sealed 2026-10-21T10:00:00Z v1"), std::string::npos) << n << s.out;
    } else {
      EXPECT_EQ(s.out.find("sealed 2026-10-21T11"), std::string::npos) << n << s.out;
    }
    // backfill --dry-run --from/--to: exactly that window.
    RunResult b = Snapsink({"backfill", r, "--version", "9", in, "--from", n, "--to", n, "--dry-run"});
    EXPECT_EQ(b.exit_code, 0) << n << b.err;
    EXPECT_NE(b.out.find("would replace 1 window(s)"), std::string::npos) << n << b.out;
    EXPECT_NE(b.out.find("\n2026-10-21T10:00:00Z "), std::string::npos) << n << b.out;
  }
  ASSERT_EQ(Snapsink({"publish", r}).exit_code, 0);
  RunResult q = Snapsink({"query", r, "--window", "2026-10-21T10:30:00Z", "--format", "csv"});
  EXPECT_NE(q.out.find("2026-10-21T10:00:00Z,m,a,3,3"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("11:00:00Z"), std::string::npos) << q.out;

  const std::string forms =
      "expected a window start (2026-10-21T10:00:00Z or 20261021T100000Z), an RFC 3339 time inside the window "
      "(2026-10-21T10:30:00+02:00) or integer milliseconds since the Unix epoch";
  for (const std::string& bad : {std::string("bogus"), std::string("2026-10-21"), std::string("11:30")}) {
    for (const auto& [args, option] :
         {std::pair{std::vector<std::string>{"query", r, "--window", bad}, "--window"},
          std::pair{std::vector<std::string>{"seal", r, "--window", bad}, "--window"},
          std::pair{std::vector<std::string>{"backfill", r, "--version", "9", in, "--from", bad}, "--from"},
          std::pair{std::vector<std::string>{"backfill", r, "--version", "9", in, "--to", bad}, "--to"}}) {
      RunResult e = Snapsink(args);
      EXPECT_EQ(e.exit_code, 1) << args[0] << " " << bad;
      EXPECT_EQ(FirstLine(e.err), "snapsink: " + std::string(option) + " '" + bad + "': " + forms) << args[0];
    }
  }
}

TEST(WindowSyntax, QuerySaysOnStderrWhenAFilterMatchesNothing) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_NO_FATAL_FAILURE(PublishThreeEvents(r, d / "in.ndjson"));
  RunResult q = Snapsink({"query", r, "--window", "2026-10-22T10:00:00Z", "--metric", "zz"});
  EXPECT_EQ(q.exit_code, 0);
  EXPECT_EQ(q.err, "snapsink: no rows in generation 1 match --window 2026-10-22T10:00:00Z --metric zz\n");
  RunResult all = Snapsink({"query", r, "--metric", "m"});
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_EQ(all.err, "");
}

// ---- 3. status ---------------------------------------------------------------

simdjson::dom::element Parse(simdjson::dom::parser& p, const std::string& text) {
  simdjson::dom::element e;
  EXPECT_EQ(p.parse(text).get(e), simdjson::SUCCESS) << text;
  return e;
}

std::vector<std::string> JsonLines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    out.push_back(text.substr(pos, nl - pos));
  }
  return out;
}

TEST(Status, JsonFieldsMatchInspect) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  const std::string gap = d / "gap.ndjson";
  ASSERT_EQ(Snapsink({"init", r, "--window", "1h", "--lateness", "30m", "--on-gap", "accept"}).exit_code, 0);
  WriteFile(in, Events("p", 15));  // 10:00 .. 12:20
  WriteFile(gap, Event("q", 0, kBase) + Event("q", 4, kBase + 1) + Event("q", 9, kBase + 2));
  ASSERT_EQ(Snapsink({"run", r, in}).exit_code, 0);  // seals and publishes 10:00 (11:00 still open)
  ASSERT_EQ(Snapsink({"ingest", r, gap}).exit_code, 0);
  ASSERT_EQ(Snapsink({"seal", r, "--window", "2026-10-21T11:00:00Z"}).exit_code, 0);
  AppendFile(in, "not json\n");  // lag: the source's file grew past its offset

  RunResult st = Snapsink({"status", r, "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  simdjson::dom::parser p1, p2;
  simdjson::dom::element s = Parse(p1, st.out);
  EXPECT_EQ(std::string(s["window"].get_string().value()), "1h");
  EXPECT_EQ(std::string(s["lateness"].get_string().value()), "30m");
  EXPECT_EQ(std::string(s["on_gap"].get_string().value()), "accept");
  EXPECT_EQ(std::string(s["max_event_ts"].get_string().value()), "2026-10-21T12:20:00Z");
  EXPECT_EQ(std::string(s["watermark"].get_string().value()), "2026-10-21T11:50:00Z");
  EXPECT_EQ(s["current_generation"].get_uint64().value(), 1u);
  EXPECT_TRUE(s["published_at"].is_string());

  // Windows: open ones (unsealed changes, not closed: a
  // staged or published window is not also open) against inspect windows,
  // with when they close.
  std::set<std::string> open_inspect, open_status;
  for (const std::string& line : JsonLines(Snapsink({"inspect", r, "windows", "--json"}).out)) {
    simdjson::dom::element w = Parse(p2, line);
    if (!w["closed"].get_bool().value() && w["dirty"].get_bool().value()) {
      open_inspect.insert(std::string(w["window"].get_string().value()));
    }
  }
  for (simdjson::dom::element w : s["open_windows"].get_array()) {
    open_status.insert(std::string(w["window"].get_string().value()));
  }
  EXPECT_EQ(open_status, open_inspect);
  EXPECT_EQ(open_status, (std::set<std::string>{"2026-10-21T12:00:00Z"}));  // 11:00 is staged
  EXPECT_EQ(std::string(s["open_windows"].at(0)["closes_at"].get_string().value()), "2026-10-21T13:30:00Z");
  EXPECT_EQ(s["window_states"]["open"].get_uint64().value(), 1u);
  EXPECT_EQ(s["window_states"]["staged"].get_uint64().value(), 1u);
  // 10:00 was published, then got q's events: closed, with unsealed changes.
  EXPECT_EQ(s["window_states"]["closed_unsealed"].get_uint64().value(), 1u);
  EXPECT_EQ(s["window_states"]["published"].get_uint64().value(), 0u);
  EXPECT_EQ(std::string(s["staged_windows"].at(0)["window"].get_string().value()), "2026-10-21T11:00:00Z");
  EXPECT_EQ(s["staged_windows"].get_array().size(), 1u);

  // Sources: every counter equals inspect sources; lag against the file size.
  std::map<std::string, std::string> inspect_sources, status_sources;
  for (const std::string& line : JsonLines(Snapsink({"inspect", r, "sources", "--json"}).out)) {
    simdjson::dom::element e = Parse(p2, line);
    std::string v;
    for (const char* f : {"offset", "lines", "applied", "duplicates", "fenced", "rejected", "ignored",
                          "duplicates_id", "rejected_horizon", "rejected_retired"}) {
      v += std::string(f) + "=" + std::to_string(e[f].get_uint64().value()) + " ";
    }
    inspect_sources[std::string(e["source"].get_string().value())] = v;
  }
  for (simdjson::dom::element e : s["sources"].get_array()) {
    std::string v;
    for (const char* f : {"offset", "lines", "applied", "duplicates", "fenced", "rejected", "ignored",
                          "duplicates_id", "rejected_horizon", "rejected_retired"}) {
      v += std::string(f) + "=" + std::to_string(e[f].get_uint64().value()) + " ";
    }
    status_sources[std::string(e["source"].get_string().value())] = v;
    if (std::string(e["source"].get_string().value()) == in) {
      EXPECT_EQ(e["size"].get_uint64().value(), fs::file_size(in));
      EXPECT_EQ(e["lag"].get_uint64().value(), 9u);  // "not json\n"
    }
  }
  EXPECT_EQ(status_sources, inspect_sources);
  EXPECT_EQ(status_sources.size(), 2u);

  // Producers: the count, and those with gaps as inspect producers has them.
  EXPECT_EQ(s["producers"].get_uint64().value(), JsonLines(Snapsink({"inspect", r, "producers", "--json"}).out).size());
  ASSERT_EQ(s["producers_with_gaps"].get_array().size(), 1u);
  EXPECT_EQ(std::string(s["producers_with_gaps"].at(0)["producer"].get_string().value()), "q");
  EXPECT_EQ(s["producers_with_gaps"].at(0)["open_gaps"].get_uint64().value(), 2u);
  EXPECT_EQ(s["producers_with_gaps"].at(0)["missing"].get_uint64().value(), 7u);
  EXPECT_EQ(JsonLines(Snapsink({"inspect", r, "gaps", "--json"}).out).size(), 2u);

  // Id dedup and retention: the settings, and the ids held as inspect ids has them.
  EXPECT_EQ(std::string(s["id_horizon"].get_string().value()), "7d");
  EXPECT_TRUE(s["producer_retention"].is_null());
  EXPECT_EQ(s["retired_producers"].get_uint64().value(), 0u);
  simdjson::dom::element ids = Parse(p2, Snapsink({"inspect", r, "ids", "--json"}).out);
  EXPECT_EQ(s["ids"]["held"].get_uint64().value(), ids["ids"].get_uint64().value());
  EXPECT_EQ(s["ids"]["table_bytes"].get_uint64().value(), ids["table_bytes"].get_uint64().value());

  // Disk use per directory.
  for (const char* dir : {"state", "staging", "snapshots", "manifests", "rejects"}) {
    EXPECT_TRUE(s["disk"][dir].is_uint64()) << dir;
  }
  EXPECT_GT(s["disk"]["snapshots"].get_uint64().value(), 0u);
  EXPECT_GT(s["disk"]["staging"].get_uint64().value(), 0u);

  // The table form names the same things.
  RunResult text = Snapsink({"status", r});
  ASSERT_EQ(text.exit_code, 0);
  for (const char* part : {"window 1h, lateness 30m, on-gap accept", "watermark   2026-10-21T11:50:00Z",
                           "current     generation 1", "2026-10-21T12:00:00Z  closes at event time 2026-10-21T13:30:00Z",
                           "lag 9 bytes", "q  epoch 0  missing seq 1..3, 5..8"}) {
    EXPECT_NE(text.out.find(part), std::string::npos) << part << "\n" << text.out;
  }
}

TEST(Status, NothingToSealNamesTheOpenWindowsTheWatermarkAndFinal) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(in, Events("p", 4));  // 10:00 .. 10:30: one open window
  RunResult run = Snapsink({"run", r, in});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("nothing to seal: no closed window has unsealed changes; open: 2026-10-21T10:00:00Z "
                         "(closes at event time 2026-10-21T12:00:00Z); watermark 2026-10-21T09:30:00Z; --final seals "
                         "open windows too"),
            std::string::npos)
      << run.out;
  RunResult seal = Snapsink({"seal", r});
  EXPECT_NE(seal.out.find("--all seals open windows too"), std::string::npos) << seal.out;
}

// ---- 4. backfill --dry-run -----------------------------------------------------

TEST(BackfillDryRun, PrintsCurrentAndNewPerWindowAndLeavesTheRootByteIdentical) {
  TempDir d;
  const std::string r = d / "r";
  const std::string live = d / "live.ndjson";
  const std::string archive = d / "archive.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(live, Events("p", 12, "2"));  // 10:00 and 11:00, 6 events each, value 2
  ASSERT_EQ(Snapsink({"run", r, live, "--final"}).exit_code, 0);
  // The archive: 4 events in 10:00 (one a retraction), value 5.
  std::string a;
  for (int i = 0; i < 4; ++i) a += Event("arch", i, kBase + i * kMinute, "k", "5");
  a += EventLine().Producer("arch").Seq(4).Ts(kBase + 5 * kMinute).Metric("m").Key("k").Value(5).Retract().Line();
  a += Event("arch", 2, kBase, "k", "5");  // a repeat: dropped
  WriteFile(archive, a);

  const auto before = AllFiles(r);
  RunResult dry = Snapsink({"backfill", r, "--version", "5", archive, "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const std::string table =
      "window                current_events  current_count  current_sum  new_events  new_count  new_sum\n"
      "2026-10-21T10:00:00Z  6               6              12           5           3          15\n";
  EXPECT_EQ(dry.out, "dry run: backfill v5 would replace 1 window(s); nothing changed\n" + table);
  EXPECT_EQ(TreeDiff(AllFiles(r), before), "");

  // The real backfill prints the same table after it publishes.
  RunResult real = Snapsink({"backfill", r, "--version", "5", archive, "--quiet"});
  ASSERT_EQ(real.exit_code, 0) << real.err;
  EXPECT_NE(real.out.find("published generation 2: 1 window(s) at v5\n" + table), std::string::npos) << real.out;
  // A dry run of a published backfill says so and changes nothing.
  const auto after = AllFiles(r);
  RunResult again = Snapsink({"backfill", r, "--version", "5", archive, "--dry-run"});
  EXPECT_EQ(again.out, "backfill v5 is already published; nothing to do\n");
  EXPECT_EQ(TreeDiff(AllFiles(r), after), "");
  // The version rule holds in a dry run too.
  RunResult low = Snapsink({"backfill", r, "--version", "1", archive, "--dry-run"});
  EXPECT_EQ(low.exit_code, 1);
  EXPECT_NE(low.err.find("--version 1 must exceed"), std::string::npos) << low.err;
}

// ---- 5. a way past a gap -------------------------------------------------------

TEST(GapAccept, IngestUnderStopGoesOnPastAnAcceptedGapWhichStillFills) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  const std::string late = d / "late.ndjson";
  ASSERT_EQ(Snapsink({"init", r, "--on-gap", "stop"}).exit_code, 0);
  WriteFile(in, Event("p", 0, kBase) + Event("p", 1, kBase) + Event("p", 5, kBase) + Event("p", 6, kBase) +
                    Event("p", 9, kBase) + Event("p", 10, kBase));
  RunResult first = Snapsink({"ingest", r, in});
  EXPECT_EQ(first.exit_code, 3);
  EXPECT_NE(first.err.find("producer p epoch 0: seq 2..4 missing"), std::string::npos) << first.err;
  // Every rerun stops at the same gap until it is accepted.
  EXPECT_EQ(Snapsink({"ingest", r, in}).exit_code, 3);

  RunResult acc = Snapsink({"gaps", r, "accept", "--producer", "p", "--epoch", "0", "--range", "2..4"});
  ASSERT_EQ(acc.exit_code, 0) << acc.err;
  EXPECT_EQ(acc.out, "accepted gaps of producer p, epoch 0, seq 2..4: ingest under --on-gap stop goes on past them\n");
  // Past the accepted gap, then stopped by the next one, which is not accepted.
  RunResult second = Snapsink({"ingest", r, in});
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_NE(second.err.find("seq 7..8 missing"), std::string::npos) << second.err;
  // An acceptance of another epoch or a narrower range does not let it through.
  ASSERT_EQ(Snapsink({"gaps", r, "accept", "--producer", "p", "--epoch", "1"}).exit_code, 0);
  ASSERT_EQ(Snapsink({"gaps", r, "accept", "--producer", "p", "--range", "7"}).exit_code, 0);
  EXPECT_EQ(Snapsink({"ingest", r, in}).exit_code, 3);
  ASSERT_EQ(Snapsink({"gaps", r, "accept", "--producer", "p"}).exit_code, 0);  // every gap of p
  RunResult third = Snapsink({"ingest", r, in});
  EXPECT_EQ(third.exit_code, 0) << third.err;

  // inspect gaps: the open gaps; --all adds the audit records.
  RunResult gaps = Snapsink({"inspect", r, "gaps", "--json"});
  EXPECT_EQ(gaps.out,
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":2,\"to_seq\":4,\"missing\":3}\n"
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":7,\"to_seq\":8,\"missing\":2}\n");
  RunResult all = Snapsink({"inspect", r, "gaps", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const std::vector<std::string> lines = JsonLines(all.out);
  ASSERT_EQ(lines.size(), 7u) << all.out;  // header, 2 open, 4 accepted
  auto words = [](const std::string& line) {
    std::vector<std::string> w;
    std::istringstream in(line);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  EXPECT_EQ(words(lines[0]), (std::vector<std::string>{"producer", "epoch", "from_seq", "to_seq", "missing", "state",
                                                       "accepted_at"}));
  EXPECT_EQ(words(lines[1]), (std::vector<std::string>{"p", "0", "2", "4", "3", "open"}));
  std::vector<std::string> rec = words(lines[3]);
  ASSERT_EQ(rec.size(), 6u) << lines[3];
  EXPECT_EQ(std::vector<std::string>(rec.begin(), rec.begin() + 5),
            (std::vector<std::string>{"p", "0", "2", "4", "accepted"}));
  // When: the wall clock. Broke once a thousand runs: a time on a whole
  // second prints without ".mmm" (2026-11-30T15:13:13Z), as every time does.
  int64_t accepted_at;
  EXPECT_TRUE(ParseRfc3339Ms(rec[5], &accepted_at)) << rec[5];
  EXPECT_EQ(rec[5].back(), 'Z') << rec[5];
  rec = words(lines[6]);
  ASSERT_EQ(rec.size(), 6u) << lines[6];
  EXPECT_EQ(std::vector<std::string>(rec.begin(), rec.begin() + 5),
            (std::vector<std::string>{"p", "any", "0", "18446744073709551614", "accepted"}));

  // An accepted gap still fills when its events arrive.
  WriteFile(late, Event("p", 3, kBase) + Event("p", 7, kBase) + Event("p", 8, kBase));
  ASSERT_EQ(Snapsink({"ingest", r, late}).exit_code, 0);
  EXPECT_EQ(Snapsink({"inspect", r, "gaps", "--json"}).out,
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":2,\"to_seq\":2,\"missing\":1}\n"
            "{\"producer\":\"p\",\"epoch\":0,\"from_seq\":4,\"to_seq\":4,\"missing\":1}\n");
  RunResult src = Snapsink({"inspect", r, "sources", "--json"});
  EXPECT_NE(src.out.find("\"lines\":3,\"applied\":3,\"duplicates\":0"), std::string::npos) << src.out;
}

// ---- 6. metrics ----------------------------------------------------------------

// Runs Python's prometheus_client text parser over text; prints one
// "name{label=value,...} value" line per sample, sorted.
std::string ParsedByPrometheus(const std::string& dir, const std::string& text) {
  const std::string file = dir + "/metrics.prom";
  WriteFile(file, text);
  const std::string script =
      "import sys\n"
      "from prometheus_client.parser import text_string_to_metric_families\n"
      "out = []\n"
      "for fam in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
      "    assert fam.documentation, fam.name\n"
      "    for s in fam.samples:\n"
      "        labels = ','.join(k + '=' + v for k, v in sorted(s.labels.items()))\n"
      "        out.append('%s %s{%s} %d' % (fam.type, s.name, labels, int(s.value)))\n"
      "print('\\n'.join(sorted(out)))\n";
  WriteFile(dir + "/parse.py", script);
  // Debian's interpreter: python3-prometheus-client installs for it (install-deps.sh).
  const std::string cmd = "/usr/bin/python3 " + dir + "/parse.py " + file + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  return rc == 0 ? out : "parser failed: " + out;
}

TEST(Metrics, ParsedByAPrometheusParserAndEqualToInspect) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  const std::string other = d / "other.ndjson";
  ASSERT_EQ(Snapsink({"init", r, "--lateness", "0s"}).exit_code, 0);
  WriteFile(in, Events("p", 9) + "bad line\n" + Event("p", 3, kBase) + Event("z", 0, kBase, "k", "1", 2));
  WriteFile(other, Event("z", 0, kBase, "k", "1", 1) + Event("q", 0, kBase) + Event("q", 3, kBase + 61 * kMinute));
  ASSERT_EQ(Snapsink({"run", r, in}).exit_code, 0);
  ASSERT_EQ(Snapsink({"ingest", r, other}).exit_code, 0);
  // Id dedup and retention: z (last seen 10:00) is retired, its next event at
  // epoch 2 refused; an id repeated; an id older than the 7d horizon.
  ASSERT_EQ(Snapsink({"gc", r, "--producers-idle", "30m"}).exit_code, 0);
  const std::string ids = d / "ids.ndjson";
  const auto id_event = [](const std::string& id, int64_t ts) {
    return "{\"id\":\"" + id + "\",\"ts\":" + std::to_string(ts) + ",\"metric\":\"m\",\"key\":\"k\",\"value\":1}\n";
  };
  WriteFile(ids, id_event("x", kBase + 70 * kMinute) + id_event("x", kBase + 70 * kMinute) +
                     id_event("old", kBase - 8 * 24 * 60 * kMinute) + Event("z", 1, kBase + 70 * kMinute, "k", "1", 2));
  ASSERT_EQ(Snapsink({"ingest", r, ids}).exit_code, 0);
  ASSERT_EQ(Snapsink({"seal", r, "--all"}).exit_code, 0);

  RunResult m = Snapsink({"metrics", r});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  for (const char* family : {"snapsink_lines_total", "snapsink_events_applied_total",
                             "snapsink_duplicates_suppressed_total", "snapsink_events_fenced_total",
                             "snapsink_lines_rejected_total", "snapsink_open_gaps", "snapsink_producers",
                             "snapsink_producers_retired", "snapsink_ids_held",
                             "snapsink_watermark_seconds", "snapsink_current_generation", "snapsink_windows",
                             "snapsink_state_bytes"}) {
    EXPECT_NE(m.out.find("# HELP " + std::string(family) + " "), std::string::npos) << family;
    EXPECT_NE(m.out.find("# TYPE " + std::string(family) + " "), std::string::npos) << family;
  }

  // What the numbers must be: from inspect --json and status --json.
  simdjson::dom::parser parser;
  std::vector<std::string> want;
  for (const std::string& line : JsonLines(Snapsink({"inspect", r, "sources", "--json"}).out)) {
    simdjson::dom::element e = Parse(parser, line);
    const std::string src = std::string(e["source"].get_string().value());
    for (const auto& [name, field] : {std::pair{"snapsink_lines_total", "lines"},
                                      std::pair{"snapsink_events_applied_total", "applied"},
                                      std::pair{"snapsink_events_fenced_total", "fenced"},
                                      std::pair{"snapsink_lines_ignored_total", "ignored"}}) {
      want.push_back(std::string("counter ") + name + "{source=" + src + "} " +
                     std::to_string(e[field].get_uint64().value()));
    }
    // The split: its parts sum to inspect's duplicates and rejected.
    const auto u = [&](const char* f) { return e[f].get_uint64().value(); };
    const auto counter = [&](const std::string& name, const std::string& label, uint64_t v) {
      want.push_back("counter " + name + "{" + label + ",source=" + src + "} " + std::to_string(v));
    };
    counter("snapsink_duplicates_suppressed_total", "kind=id", u("duplicates_id"));
    counter("snapsink_duplicates_suppressed_total", "kind=seq", u("duplicates") - u("duplicates_id"));
    counter("snapsink_lines_rejected_total", "reason=bad_input",
            u("rejected") - u("rejected_horizon") - u("rejected_retired"));
    counter("snapsink_lines_rejected_total", "reason=horizon", u("rejected_horizon"));
    counter("snapsink_lines_rejected_total", "reason=retired", u("rejected_retired"));
  }
  uint64_t producers = 0, retired = 0;
  for (const std::string& line : JsonLines(Snapsink({"inspect", r, "producers", "--json"}).out)) {
    simdjson::dom::element e = Parse(parser, line);
    if (e["retired"].get_bool().value()) {
      ++retired;
      continue;
    }
    ++producers;
    if (e["open_gaps"].get_uint64().value() > 0) {
      want.push_back("gauge snapsink_open_gaps{producer=" + std::string(e["producer"].get_string().value()) + "} " +
                     std::to_string(e["open_gaps"].get_uint64().value()));
    }
  }
  want.push_back("gauge snapsink_producers{} " + std::to_string(producers));
  want.push_back("gauge snapsink_producers_retired{} " + std::to_string(retired));
  simdjson::dom::parser ip;
  want.push_back("gauge snapsink_ids_held{} " +
                 std::to_string(Parse(ip, Snapsink({"inspect", r, "ids", "--json"}).out)["ids"].get_uint64().value()));
  uint64_t windows = 0, open = 0;
  for (const std::string& line : JsonLines(Snapsink({"inspect", r, "windows", "--json"}).out)) {
    simdjson::dom::element e = Parse(parser, line);
    ++windows;
    open += !e["closed"].get_bool().value() && e["dirty"].get_bool().value();
  }
  uint64_t current = 0;
  for (const std::string& line : JsonLines(Snapsink({"inspect", r, "generations", "--json"}).out)) {
    simdjson::dom::element e = Parse(parser, line);
    if (e["current"].get_bool().value()) current = e["generation"].get_uint64().value();
  }
  simdjson::dom::parser sp;
  simdjson::dom::element st = Parse(sp, Snapsink({"status", r, "--json"}).out);
  want.push_back("gauge snapsink_current_generation{} " + std::to_string(current));
  // Each window in exactly one state: the states add up to the windows.
  uint64_t in_states = 0;
  for (const char* state : {"open", "closed_unsealed", "staged", "published", "unpublished"}) {
    const uint64_t n = st["window_states"][state].get_uint64().value();
    in_states += n;
    want.push_back(std::string("gauge snapsink_windows{state=") + state + "} " + std::to_string(n));
  }
  EXPECT_EQ(in_states, windows);
  EXPECT_EQ(st["window_states"]["open"].get_uint64().value(), open);
  EXPECT_EQ(st["window_states"]["staged"].get_uint64().value(), st["staged_windows"].get_array().size());
  want.push_back("gauge snapsink_state_bytes{} " + std::to_string(st["disk"]["state"].get_uint64().value()));
  want.push_back("gauge snapsink_split_producers{} " + std::to_string(st["split_producers"].get_array().size()));
  want.push_back("gauge snapsink_watermark_seconds{} " + std::to_string((kBase + 80 * kMinute) / 1000));  // lateness 0
  // Retention and max-ahead (SPEC 13): this root keeps every window, no max-ahead limit.
  EXPECT_TRUE(st["retain"].is_null());
  EXPECT_TRUE(st["oldest_kept_window"].is_null());
  EXPECT_TRUE(st["max_ahead"].is_null());
  want.push_back("gauge snapsink_retain_seconds{} 0");
  want.push_back("gauge snapsink_max_ahead_seconds{} 0");
  std::sort(want.begin(), want.end());
  std::string want_text;
  for (const std::string& w : want) want_text += w + "\n";

  // The state is as the scenario meant: gaps, a fenced and a duplicate, a reject, staged windows.
  EXPECT_NE(want_text.find("snapsink_open_gaps{producer=q} 1"), std::string::npos) << want_text;
  EXPECT_NE(want_text.find("snapsink_events_fenced_total{source=" + other + "} 1"), std::string::npos) << want_text;
  EXPECT_NE(want_text.find("snapsink_duplicates_suppressed_total{kind=seq,source=" + in + "} 1"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_lines_rejected_total{reason=bad_input,source=" + in + "} 1"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_duplicates_suppressed_total{kind=id,source=" + ids + "} 1"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_duplicates_suppressed_total{kind=seq,source=" + ids + "} 0"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_lines_rejected_total{reason=horizon,source=" + ids + "} 1"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_lines_rejected_total{reason=retired,source=" + ids + "} 1"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_lines_rejected_total{reason=bad_input,source=" + ids + "} 0"), std::string::npos);
  EXPECT_NE(want_text.find("snapsink_producers_retired{} 1"), std::string::npos) << want_text;
  EXPECT_NE(want_text.find("snapsink_ids_held{} 1"), std::string::npos) << want_text;
  EXPECT_NE(want_text.find("snapsink_windows{state=staged} 2"), std::string::npos) << want_text;  // 10:00 v2, 11:00
  EXPECT_NE(want_text.find("snapsink_current_generation{} 1"), std::string::npos) << want_text;

  EXPECT_EQ(ParsedByPrometheus(d.path(), m.out), want_text);
}

// ---- 7. the small items ---------------------------------------------------------

// Regression: init into a non-empty unrelated directory succeeded and spread
// a root over someone else's files.
TEST(SmallFixes, InitRefusesANonEmptyUnrelatedDirectory) {
  TempDir d;
  const std::string dir = d / "data";
  fs::create_directories(dir);
  WriteFile(dir + "/notes.txt", "mine\n");
  RunResult r = Snapsink({"init", dir});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "snapsink: " + dir +
                       " is not empty (it holds notes.txt) and is not a snapsink root; init needs a new or empty "
                       "directory\n");
  EXPECT_FALSE(fs::exists(dir + "/state"));
  // An empty directory, or what an interrupted init left, is fine.
  fs::create_directories(d / "empty");
  EXPECT_EQ(Snapsink({"init", d / "empty"}).exit_code, 0);
  fs::create_directories(d / "half/staging");
  WriteFile(d / "half/LOCK", "");
  EXPECT_EQ(Snapsink({"init", d / "half"}).exit_code, 0);
}

// Regression: gc with nothing to do printed nothing at all.
TEST(SmallFixes, GcWithNothingToDoSaysSo) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  RunResult gc = Snapsink({"gc", r});
  EXPECT_EQ(gc.exit_code, 0);
  EXPECT_EQ(gc.out, "nothing to remove (keeping the newest 2 generation(s) and what they use)\n");
}

// Regression: gc removed the temporary files a crash left and still said
// "nothing to remove".
TEST(SmallFixes, GcNamesTheTemporaryFilesItRemoves) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(r + "/manifests/3.tmp", "half a manifest");
  RunResult gc = Snapsink({"gc", r});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.out, "removed manifests/3.tmp (a temporary file a crash left)\n");
  EXPECT_FALSE(fs::exists(r + "/manifests/3.tmp"));
}

// Regression: verify printed its first problem twice (as CORRUPT on stdout
// and again in the error line on stderr).
TEST(SmallFixes, VerifyPrintsEachProblemOnce) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_NO_FATAL_FAILURE(PublishThreeEvents(r, d / "in.ndjson"));
  const std::string data = r + "/snapshots/20261021T100000Z/v1/data";
  std::string bytes = ReadFile(data);
  bytes[bytes.size() / 2] ^= 0x55;
  WriteFile(data, bytes);
  RunResult v = Snapsink({"verify", r});
  EXPECT_EQ(v.exit_code, 10);
  ASSERT_NE(v.out.find("CORRUPT "), std::string::npos) << v.out;
  const std::string problem = FirstLine(v.out.substr(v.out.find("CORRUPT ") + 8));
  EXPECT_EQ(v.err.find(problem), std::string::npos) << v.err;
  EXPECT_EQ(v.err, "snapsink: 1 problem(s) found\n");
}

// Files in the root that snapsink does not know are
// reported by verify as warnings, one line each, and are no corruption.
TEST(SmallFixes, VerifyWarnsAboutUnknownFilesInTheRoot) {
  TempDir d;
  const std::string r = d / "r";
  ASSERT_NO_FATAL_FAILURE(PublishThreeEvents(r, d / "in.ndjson"));
  RunResult clean = Snapsink({"verify", r});
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(clean.out, "ok: 1 snapshot(s) verified\n");
  WriteFile(r + "/notes.txt", "mine\n");
  fs::create_directories(r + "/snapshots/backup");
  RunResult v = Snapsink({"verify", r});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.out,
            "warning: unknown file in root: notes.txt\n"
            "warning: unknown file in root: snapshots/backup\n"
            "ok: 1 snapshot(s) verified\n");
  EXPECT_EQ(v.err, "");
}

// Regression: a tab in a key broke the table's alignment.
TEST(SmallFixes, ControlCharactersInKeysAreEscapedInTables) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(in, Event("p", 0, kBase, "a\\tb") + Event("p", 1, kBase, "c\\u0001"));
  ASSERT_EQ(Snapsink({"run", r, in, "--final"}).exit_code, 0);
  RunResult q = Snapsink({"query", r});
  EXPECT_EQ(q.out,
            "window                metric  key    count  sum  version  generation\n"
            "2026-10-21T10:00:00Z  m       a\\tb   1      1    1        1\n"
            "2026-10-21T10:00:00Z  m       c\\x01  1      1    1        1\n");
  // JSON keeps the key as it is.
  EXPECT_NE(Snapsink({"query", r, "--format", "json"}).out.find("\"key\":\"a\\u0009b\""), std::string::npos);
}

// Regression: the inspect sources table dropped the ignored column --json has.
TEST(SmallFixes, InspectSourcesTableHasTheIgnoredColumn) {
  TempDir d;
  const std::string r = d / "r";
  const std::string in = d / "in.ndjson";
  ASSERT_EQ(Snapsink({"init", r}).exit_code, 0);
  WriteFile(in, Events("p", 2));
  ASSERT_EQ(Snapsink({"ingest", r, in}).exit_code, 0);
  RunResult s = Snapsink({"inspect", r, "sources"});
  EXPECT_EQ(FirstLine(s.out).substr(FirstLine(s.out).find("offset")),
            "offset  lines  applied  duplicates  fenced  rejected  ignored");
}

}  // namespace
}  // namespace snapsink::testing
