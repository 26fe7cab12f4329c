// snapsink: the command line tool over the engine. See ../SPEC.md section 6.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/commands.h"

namespace snapsink {

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return 0;
    case Status::Code::kBadInput: return 2;
    case Status::Code::kGap: return 3;
    case Status::Code::kReconcile: return 4;
    case Status::Code::kLocked: return 5;
    case Status::Code::kCorruption: return 10;
    default: return 1;
  }
}

}  // namespace snapsink

int main(int argc, char** argv) {
  using namespace snapsink;
  CLI::App app{"snapsink: exactly-once windowed aggregates, published as atomic snapshots"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  InitArgs init;
  auto* c_init = app.add_subcommand("init", "Create a root");
  c_init->add_option("ROOT", init.root)->required();
  c_init->add_option("--window", init.window, "Window size: 1m, 15m, 1h, 1d ... (default 1h)");
  c_init->add_option("--lateness", init.lateness, "How far the watermark trails the newest event (default: one window)");
  c_init->add_option("--on-gap", init.on_gap, "accept (default) or stop")->check(CLI::IsMember({"accept", "stop"}));

  IngestArgs ingest;
  auto* c_ingest = app.add_subcommand("ingest", "Apply events; each source resumes from its committed offset");
  c_ingest->add_option("ROOT", ingest.root)->required();
  c_ingest->add_option("FILE", ingest.files, "NDJSON files; - is standard input")->required();
  c_ingest->add_option("--source", ingest.source, "Source name (default: the path as given; one FILE only)");
  c_ingest->add_option("--commit-every", ingest.commit_every, "Lines per transaction (default 10000)")
      ->check(CLI::PositiveNumber);
  c_ingest->add_option("--on-error", ingest.on_error, "skip (default) or stop")->check(CLI::IsMember({"skip", "stop"}));
  c_ingest->add_flag("--quiet", ingest.quiet, "No progress on stderr");

  SealArgs seal;
  auto* c_seal = app.add_subcommand("seal", "Stage closed windows with unpublished changes");
  c_seal->add_option("ROOT", seal.root)->required();
  c_seal->add_option("--window", seal.windows, "Seal this window (repeatable), closed or not");
  c_seal->add_flag("--all", seal.all, "Seal every window with changes, closed or not");

  std::string publish_root;
  auto* c_publish = app.add_subcommand("publish", "Reconcile everything staged and switch CURRENT once");
  c_publish->add_option("ROOT", publish_root)->required();

  RunArgs run;
  auto* c_run = app.add_subcommand("run", "Ingest, seal closed windows, publish");
  c_run->add_option("ROOT", run.ingest.root)->required();
  c_run->add_option("FILE", run.ingest.files, "NDJSON files; - is standard input")->required();
  c_run->add_option("--source", run.ingest.source, "Source name (default: the path as given; one FILE only)");
  c_run->add_option("--commit-every", run.ingest.commit_every, "Lines per transaction (default 10000)")
      ->check(CLI::PositiveNumber);
  c_run->add_option("--on-error", run.ingest.on_error, "skip (default) or stop")->check(CLI::IsMember({"skip", "stop"}));
  c_run->add_flag("--final", run.final, "Seal every window, for the end of an input");
  c_run->add_flag("--quiet", run.ingest.quiet, "No progress on stderr");
  c_run->add_flag("--follow", run.follow,
                  "Keep reading: appended lines of each FILE (following rotation), every *.ndjson appearing in each "
                  "DIR; seal as the watermark closes windows; stop on SIGTERM/SIGINT");
  c_run->add_option("--publish-every", run.publish_every, "--follow: publish at most this often (default 10s)");
  c_run->add_option("--poll", run.poll, "--follow: longest sleep between reads when inotify says nothing (default 1s)");
  c_run->add_option("--serve", run.serve, "--follow: also serve HTTP on HOST:PORT (as snapsink serve)");

  BackfillArgs backfill;
  auto* c_backfill = app.add_subcommand(
      "backfill",
      "Rebuild historical windows from archived input into version V, apart from live state, and publish them "
      "in one generation. --from/--to bound the windows, both inclusive, by window start; events outside are "
      "counted and ignored. Default: every window the input touches.");
  c_backfill->add_option("ROOT", backfill.root)->required();
  c_backfill->add_option("--version", backfill.version, "The version to build; above every version of its windows")
      ->required()->check(CLI::PositiveNumber);
  c_backfill->add_option("FILE", backfill.files, "Archived NDJSON files")->required();
  c_backfill->add_option("--from", backfill.from, "First window (inclusive)");
  c_backfill->add_option("--to", backfill.to, "Last window (inclusive)");
  c_backfill->add_option("--commit-every", backfill.commit_every, "Lines per transaction (default 10000)")
      ->check(CLI::PositiveNumber);
  c_backfill->add_flag("--quiet", backfill.quiet, "No progress on stderr");

  QueryArgs query;
  std::string query_format = "table";
  auto* c_query = app.add_subcommand("query", "Read the current (or a given) generation");
  c_query->add_option("ROOT", query.root)->required();
  c_query->add_option("--window", query.window, "Only this window");
  c_query->add_option("--metric", query.metric, "Only this metric");
  auto* key_opt = c_query->add_option("--key", query.key, "Only this key");
  c_query->add_option("--generation", query.generation, "Read this generation instead of the current one");
  c_query->add_option("--format", query_format, "table (default), json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}));

  InspectArgs inspect;
  auto* c_inspect = app.add_subcommand("inspect", "Show state");
  c_inspect->add_option("ROOT", inspect.root)->required();
  c_inspect->add_option("WHAT", inspect.what, "producers, gaps, sources, windows, snapshots or generations")
      ->required()
      ->check(CLI::IsMember({"producers", "gaps", "sources", "windows", "snapshots", "generations"}));
  c_inspect->add_flag("--json", inspect.json, "One JSON object per line");

  std::string verify_root;
  auto* c_verify = app.add_subcommand("verify", "Re-check every published snapshot; exit 10 on corruption");
  c_verify->add_option("ROOT", verify_root)->required();

  std::string gc_root;
  uint64_t keep = 2;
  auto* c_gc = app.add_subcommand("gc", "Remove what no kept generation and no open reader uses");
  c_gc->add_option("ROOT", gc_root)->required();
  c_gc->add_option("--keep-generations", keep, "Newest generations to keep, the current one always (default 2)")
      ->check(CLI::PositiveNumber);

  std::string rollback_root;
  uint64_t rollback_gen = 0;
  auto* c_rollback = app.add_subcommand("rollback", "Make an earlier generation current again");
  c_rollback->add_option("ROOT", rollback_root)->required();
  c_rollback->add_option("--generation", rollback_gen)->required();

  ServeArgs serve;
  auto* c_serve = app.add_subcommand("serve", "Serve the published generations over HTTP (read-only)");
  c_serve->add_option("ROOT", serve.root)->required();
  c_serve->add_option("--listen", serve.listen, "HOST:PORT to listen on (default 127.0.0.1:8080; port 0: any free)");
  c_serve->add_option("--threads", serve.threads, "Worker threads (default 8)")->check(CLI::Range(1, 256));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 1;
  }

  Status s;
  if (*c_init) s = CmdInit(init);
  else if (*c_ingest) s = CmdIngest(ingest);
  else if (*c_seal) s = CmdSeal(seal);
  else if (*c_publish) s = CmdPublish(publish_root);
  else if (*c_run) s = CmdRun(run);
  else if (*c_backfill) s = CmdBackfill(backfill);
  else if (*c_query) {
    query.has_key = key_opt->count() > 0;
    query.format = query_format == "json" ? OutputFormat::kJson
                   : query_format == "csv" ? OutputFormat::kCsv : OutputFormat::kTable;
    s = CmdQuery(query);
  } else if (*c_inspect) s = CmdInspect(inspect);
  else if (*c_verify) s = CmdVerify(verify_root);
  else if (*c_gc) s = CmdGc(gc_root, keep);
  else if (*c_rollback) s = CmdRollback(rollback_root, rollback_gen);
  else if (*c_serve) s = CmdServe(serve);
  if (!s.ok()) std::fprintf(stderr, "snapsink: %s\n", s.message().c_str());
  return ExitCodeFor(s);
}
