// snapsink: the command line tool over the engine. The contract is
// docs/CONTRACT.md (commands, exit codes) and docs/EVENTS.md (the input); the
// map of the code is README.md ("How it works").
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/cli_errors.h"
#include "tools/commands.h"
#include "tools/window_arg.h"

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

namespace {

constexpr char kRootHelp[] = "The root directory (made by snapsink init)";
constexpr char kExitCommon[] = "Exit status: 0 ok; 1 usage or failure; 5 root locked by another writer.";
std::string Footer(const std::string& exits, const std::string& example) {
  return std::string(exits.empty() ? kExitCommon : exits) + "\nExample: " + example;
}
const std::string kWindowHelp = std::string("A window: ") + kWindowForms;
// The input format in brief; docs/EVENTS.md has it in full.
constexpr char kEventFields[] =
    "Input: NDJSON, one event object per line; fields (docs/EVENTS.md):\n"
    "  producer  string 1..128 bytes; required with seq\n"
    "  epoch     integer 0..2^32-1; default 0 (a higher epoch fences lower ones)\n"
    "  seq       integer 0..2^63-1; required unless id (or --id-from-content) dedups the event\n"
    "  id        string 1..128 bytes; dedup key of an event without seq\n"
    "  ts        RFC 3339 string or integer ms since the Unix epoch; required\n"
    "  metric    string 1..128 bytes; required\n"
    "  key       string 0..256 bytes; default \"\"\n"
    "  value     JSON number, at most 6 decimal places; default 1\n"
    "  op        \"add\" or \"retract\"; default \"add\"\n"
    "Each line counts once: lines = applied + duplicates + fenced + rejected + ignored; bad lines go to "
    "ROOT/rejects/<source>.ndjson.\n";

}  // namespace
}  // namespace snapsink

int main(int argc, char** argv) {
  using namespace snapsink;
  CLI::App app{"snapsink: exactly-once windowed aggregates, published as atomic snapshots"};
  app.require_subcommand(1);
  app.allow_extras();
  app.set_help_all_flag("--help-all", "Help for every command");
  app.set_version_flag("--version", VersionText(), "Print the version, build type and library versions");
  app.failure_message(FailureMessage);
  app.footer("Exit status: 0 ok; 1 usage; 2 bad input under --on-error stop; 3 gap under --on-gap stop; "
             "4 reconciliation failed; 5 root locked; 10 corruption found.\n"
             "Run 'snapsink COMMAND --help' for a command's options.");

  InitArgs init;
  auto* c_init = app.add_subcommand("init", "Create a root");
  c_init->add_option("ROOT", init.root, "The root directory to create (new, or empty)")->required();
  c_init->add_option("--window", init.window, "Window size: 1m, 15m, 1h, 1d ... (default 1h)");
  c_init->add_option("--lateness", init.lateness, "How far the watermark trails the newest event (default: one window)");
  c_init->add_option("--on-gap", init.on_gap, "accept (default): record a gap and go on; stop: exit 3 at a gap")
      ->check(OneOf({"accept", "stop"}));
  c_init->footer(Footer("Exit status: 0 ok; 1 usage, or ROOT is not empty, or already a root.",
                        "snapsink init /data/orders --window 1h --lateness 30m"));
  c_init->add_option("--id-horizon", init.id_horizon,
                     "How far behind the watermark event ids are remembered (default 7d)");
  c_init->add_option("--producer-retention", init.producer_retention,
                     "Retire producers idle this long in event time (default: never)");
  c_init->add_option("--retain", init.retain,
                     "Drop windows whose end the watermark passed more than this ago (default: keep every window)");
  c_init->add_option("--max-ahead", init.max_ahead,
                     "Reject events dated more than this after the newest event (0: no limit; default 1d with --retain, "
                     "else no limit)");

  IngestArgs ingest;
  auto* c_ingest = app.add_subcommand("ingest", "Apply events; each source resumes from its committed offset");
  c_ingest->add_option("ROOT", ingest.root, kRootHelp)->required();
  c_ingest->add_option("FILE", ingest.files, "NDJSON files; - is standard input")->required();
  c_ingest->add_option("--source", ingest.source, "Source name (default: the path as given; one FILE only)");
  c_ingest->add_option("--commit-every", ingest.commit_every, "Lines per transaction (default 10000)")
      ->check(AtLeast(1));
  c_ingest->add_option("--on-error", ingest.on_error, "skip (default): reject bad lines to rejects/; stop: exit 2")
      ->check(OneOf({"skip", "stop"}));
  c_ingest->add_flag("--quiet", ingest.quiet, "No progress on stderr");
  c_ingest->add_flag("--id-from-content", ingest.id_from_content,
                     "Events without seq or id are deduplicated by a hash of their content");
  c_ingest->footer(kEventFields + Footer("Exit status: 0 ok; 1 usage or failure; 2 bad input under --on-error stop; "
                          "3 gap under --on-gap stop (see snapsink gaps); 5 root locked.",
                          "snapsink ingest /data/orders events.ndjson"));

  SealArgs seal;
  auto* c_seal = app.add_subcommand("seal", "Stage closed windows with unpublished changes");
  c_seal->add_option("ROOT", seal.root, kRootHelp)->required();
  c_seal->add_option("--window", seal.windows, "Seal this window (repeatable), closed or not. " + kWindowHelp);
  c_seal->add_flag("--all", seal.all, "Seal every window with changes, closed or not");
  c_seal->footer(Footer("", "snapsink seal /data/orders --window 2026-10-21T10:00:00Z"));

  std::string publish_root;
  auto* c_publish = app.add_subcommand("publish", "Reconcile everything staged and switch CURRENT once");
  c_publish->add_option("ROOT", publish_root, kRootHelp)->required();
  c_publish->footer(Footer("Exit status: 0 ok; 1 usage or failure; 4 reconciliation failed; 5 root locked; "
                           "10 corruption found.",
                           "snapsink publish /data/orders"));

  RunArgs run;
  auto* c_run = app.add_subcommand("run", "Ingest, seal closed windows, publish");
  c_run->add_option("ROOT", run.ingest.root, kRootHelp)->required();
  c_run->add_option("FILE", run.ingest.files, "NDJSON files; - is standard input (or --kafka instead)");
  c_run->add_option("--source", run.ingest.source, "Source name (default: the path as given; one FILE only)");
  c_run->add_option("--commit-every", run.ingest.commit_every, "Lines per transaction (default 10000)")
      ->check(AtLeast(1));
  c_run->add_option("--on-error", run.ingest.on_error, "skip (default): reject bad lines to rejects/; stop: exit 2")
      ->check(OneOf({"skip", "stop"}));
  c_run->add_flag("--final", run.final, "Seal every window, for the end of an input");
  c_run->add_flag("--quiet", run.ingest.quiet, "No progress on stderr");
  c_run->add_flag("--follow", run.follow,
                  "Keep reading: appended lines of each FILE (following rotation), every *.ndjson appearing in each "
                  "DIR; seal as the watermark closes windows; stop on SIGTERM/SIGINT");
  c_run->add_option("--publish-every", run.publish_every, "--follow: publish at most this often (default 10s)");
  c_run->add_option("--poll", run.poll, "--follow: longest sleep between reads when inotify says nothing (default 1s)");
  auto* run_keep = c_run->add_option("--keep-generations", run.keep_generations,
                                     "--follow: gc after each publish keeps this many newest generations, the current "
                                     "one and every one a reader holds (default 2)")
                       ->check(AtLeast(1));
  c_run->add_option("--serve", run.serve,
                    "--follow: also serve HTTP on a loopback HOST:PORT, or PORT (loopback), as snapsink serve but "
                    "without TLS, tokens or access log: use snapsink serve for those");
  c_run->add_flag("--id-from-content", run.ingest.id_from_content,
                  "Events without seq or id are deduplicated by a hash of their content");
  c_run->add_option("--kafka", run.kafka,
                    "Instead of FILE: consume a Kafka topic from these bootstrap brokers (host:port,...); each "
                    "partition P is the source kafka:T/P, its offset kept in the root (README, Kafka)");
  c_run->add_option("--topic", run.topic, "--kafka: the topic T");
  c_run->add_option("--group", run.group, "--kafka: the consumer group G");
  c_run->add_option("--kafka-start", run.kafka_start,
                    "--kafka: where a partition the root has never seen starts: earliest (default) or latest")
      ->check(OneOf({"earliest", "latest"}));
  c_run->add_option("--kafka-config", run.kafka_config,
                    "--kafka: a librdkafka property KEY=VALUE (repeatable, as kcat -X); those that would let Kafka "
                    "decide a position (enable.auto.commit, auto.offset.reset, ...) are refused");
  c_run->add_option("--state", run.state,
                    "--kafka: many processes share the topic (README, Running many processes): each partition's "
                    "state lives in its own LMDB environment under this local DIR, fenced by owner epochs in ROOT");
  c_run->add_option("--checkpoint-every", run.checkpoint_every,
                    "--state: a checkpoint of a partition's state into ROOT once its position has moved N offsets "
                    "past the last one (default 100000; 0: only when the partition is closed), and always when "
                    "it is closed cleanly")
      ->check(CLI::NonNegativeNumber);
  c_run->footer(kEventFields + Footer("Exit status: 0 ok; 1 usage or failure; 2 bad input under --on-error stop; "
                       "3 gap under --on-gap stop, or a Kafka position deleted by retention (see snapsink gaps "
                       "accept --source); 4 reconciliation failed; 5 root locked.",
                       "snapsink run /data/orders events.ndjson --final\n"
                       "         snapsink run /data/orders --kafka broker1:9092 --topic orders --group snapsink "
                       "--follow"));

  BackfillArgs backfill;
  auto* c_backfill = app.add_subcommand(
      "backfill",
      "Rebuild historical windows from archived input into version V, apart from live state, and publish them "
      "in one generation. --from/--to bound the windows, both inclusive; events outside are "
      "counted and ignored. Default: every window the input touches.");
  c_backfill->add_option("ROOT", backfill.root, kRootHelp)->required();
  c_backfill->add_option("--version", backfill.version, "The version to build; above every version of its windows")
      ->required()->check(AtLeast(1));
  c_backfill->add_option("FILE", backfill.files,
                         "Archived NDJSON files; - is standard input, first copied into the backfill's state")
      ->required();
  c_backfill->add_option("--source", backfill.source, "Source name (default: the path as given; one FILE only)");
  c_backfill->add_option("--from", backfill.from, "First window (inclusive). " + kWindowHelp);
  c_backfill->add_option("--to", backfill.to, "Last window (inclusive). " + kWindowHelp);
  c_backfill->add_option("--commit-every", backfill.commit_every, "Lines per transaction (default 10000)")
      ->check(AtLeast(1));
  c_backfill->add_flag("--quiet", backfill.quiet, "No progress on stderr");
  c_backfill->add_flag("--dry-run", backfill.dry_run,
                       "Print per window the current and the new events, count and sum; change nothing");
  c_backfill->footer(Footer("After publishing, backfill prints the same per-window table as --dry-run.\n" +
                                std::string(kExitCommon), "snapsink backfill /data/orders --version 5 --from 20261021T100000Z archive.ndjson"));

  QueryArgs query;
  std::string query_format = "table";
  auto* c_query = app.add_subcommand("query", "Read the current (or a given) generation");
  c_query->add_option("ROOT", query.root, kRootHelp)->required();
  c_query->add_option("--window", query.window, "Only this window. " + kWindowHelp);
  c_query->add_option("--metric", query.metric, "Only this metric");
  auto* key_opt = c_query->add_option("--key", query.key, "Only this key");
  c_query->add_option("--from", query.from, "Only windows from this one on (inclusive). " + kWindowHelp);
  c_query->add_option("--to", query.to, "Only windows up to this one (inclusive). " + kWindowHelp);
  c_query->add_option("--metric-prefix", query.metric_prefix, "Only metrics starting with this (a range scan)");
  c_query->add_option("--key-prefix", query.key_prefix, "Only keys starting with this (a range scan)");
  auto* rollup_opt = c_query->add_option("--rollup", query.rollup,
                      "Add the rows into buckets of this duration (a multiple of the window size, aligned to the "
                      "Unix epoch; e.g. 1d), or all: bucket, metric, key, count, sum, windows, generation");
  c_query->add_option("--generation", query.generation, "Read this generation (1 or more) instead of the current one")
      ->check(AtLeast(1));
  c_query->add_option("--format", query_format, "table (default), json (one object per line) or csv")
      ->check(OneOf({"table", "json", "csv"}));
  c_query->footer(Footer("Exit status: 0 ok (a filter that matches nothing says so on stderr); 1 usage or failure; "
                         "10 corruption found.",
                         "snapsink query /data/orders --window 2026-10-21T10:30:00Z --format json"));

  InspectArgs inspect;
  bool inspect_all = false;
  auto* c_inspect = app.add_subcommand("inspect", "Show state");
  c_inspect->add_option("ROOT", inspect.root, kRootHelp)->required();
  c_inspect->add_option("WHAT", inspect.what, "producers, gaps, sources, windows, ids, snapshots or generations")
      ->required()
      ->check(OneOf({"producers", "gaps", "sources", "windows", "ids", "snapshots", "generations"}));
  c_inspect->add_flag("--json", inspect.json, "One JSON object per line");
  c_inspect->add_flag("--all", inspect_all, "gaps: also the accepted-gap records (snapsink gaps accept)");
  c_inspect->footer(Footer(
      "windows columns: window (start), version (highest sealed, 0 = none), dirty (events applied since the last "
      "seal), closed (the watermark has passed its end), events (adds and retracts applied), count (net rows: adds "
      "minus retracts).\nsources columns: offset (bytes committed), lines = applied + duplicates + fenced + "
      "rejected + ignored (ignored: backfill events outside --from/--to).\n" + std::string(kExitCommon),
      "snapsink inspect /data/orders windows --json"));

  std::string verify_root;
  auto* c_verify = app.add_subcommand("verify", "Re-check every published snapshot; exit 10 on corruption");
  c_verify->add_option("ROOT", verify_root, kRootHelp)->required();
  c_verify->footer(Footer("Exit status: 0 ok; 1 usage or failure; 10 corruption found.", "snapsink verify /data/orders"));

  std::string gc_root;
  uint64_t keep = 2;
  auto* c_gc = app.add_subcommand("gc", "Remove what no kept generation and no open reader uses");
  c_gc->add_option("ROOT", gc_root, kRootHelp)->required();
  c_gc->add_option("--keep-generations", keep, "Newest generations to keep, the current one always (default 2)")
      ->check(AtLeast(1));
  c_gc->footer(Footer("", "snapsink gc /data/orders --keep-generations 3"));
  std::string producers_idle;
  c_gc->add_option("--producers-idle", producers_idle, "Also retire producers idle this long in event time");
  std::string gc_retain, gc_max_ahead;
  c_gc->add_option("--retain", gc_retain, "Change the retention (0: keep every window); the next publish applies it");
  c_gc->add_option("--max-ahead", gc_max_ahead, "Change the max-ahead limit (0: no limit)");

  std::string rollback_root;
  uint64_t rollback_gen = 0;
  bool rollback_dry_run = false;
  auto* c_rollback = app.add_subcommand(
      "rollback",
      "Publish a new generation with generation G's windows and versions, and rewind the window state to match. "
      "Prints, per window, the events that leave the live view.");
  c_rollback->add_option("ROOT", rollback_root, kRootHelp)->required();
  c_rollback->add_option("--generation", rollback_gen, "The generation to copy (1 or more)")
      ->required()->check(AtLeast(1));
  c_rollback->add_flag("--dry-run", rollback_dry_run, "Print what would change; change nothing");
  c_rollback->footer(Footer("", "snapsink rollback /data/orders --generation 3"));

  std::string upgrade_root;
  bool upgrade_dry_run = false;
  auto* c_upgrade = app.add_subcommand(
      "upgrade",
      "Convert a root written by an earlier snapsink to this build's format, in place, keeping every published "
      "generation. Crash-safe: run it again after a crash and it finishes.");
  c_upgrade->add_option("ROOT", upgrade_root, kRootHelp)->required();
  c_upgrade->add_flag("--dry-run", upgrade_dry_run, "Print what would change; change nothing (takes no lock)");
  c_upgrade->footer(Footer("", "snapsink upgrade /data/orders --dry-run"));

  std::string status_root;
  bool status_json = false;
  auto* c_status = app.add_subcommand(
      "status", "Settings, watermark, current generation, windows by state, open and staged windows, sources, gaps, disk use");
  c_status->add_option("ROOT", status_root, kRootHelp)->required();
  c_status->add_flag("--json", status_json, "One JSON object");
  std::string status_html;
  c_status->add_option("--html", status_html,
                       "Write the status page (what `serve` answers GET / with) to FILE: windows, generations, gaps, "
                       "sources, health and disk use")
      ->type_name("FILE");
  c_status->footer(Footer("Exit status: 0 ok; 1 usage or failure.", "snapsink status /data/orders --json"));

  std::string metrics_root;
  auto* c_metrics = app.add_subcommand("metrics", "Print the root's metrics in the Prometheus text format 0.0.4");
  c_metrics->add_option("ROOT", metrics_root, kRootHelp)->required();
  c_metrics->footer(Footer("Exit status: 0 ok; 1 usage or failure.", "snapsink metrics /data/orders > snapsink.prom"));

  GapsArgs gaps;
  uint32_t gaps_epoch = 0;
  auto* c_gaps = app.add_subcommand(
      "gaps", "accept: let ingest under --on-gap stop go on past a producer's gaps (recorded for audit; "
              "shown by inspect gaps --all); accepted gaps still fill if their events arrive. "
              "With --source: let a Kafka partition go on past offsets retention deleted (run exits 3 naming them)");
  c_gaps->add_option("ROOT", gaps.root, kRootHelp)->required();
  c_gaps->add_option("ACTION", gaps.action, "accept: record the producer's gaps as accepted")
      ->required()->check(OneOf({"accept"}));
  c_gaps->add_option("--producer", gaps.producer, "The producer whose gap to accept");
  c_gaps->add_option("--source", gaps.source,
                     "Instead of --producer: a source whose positions LO..HI (--range) are lost for good, "
                     "e.g. kafka:T/P offsets deleted by retention; its reader goes on from HI+1");
  auto* epoch_opt = c_gaps->add_option("--epoch", gaps_epoch, "Only gaps in this epoch (default: every epoch)")
      ->check(AtLeast(0));
  c_gaps->add_option("--range", gaps.range,
                     "Only missing sequence numbers inside LO..HI, both inclusive (default: every gap)");
  c_gaps->footer(Footer("", "snapsink gaps /data/orders accept --producer p1 --epoch 2 --range 100..199\n"
                            "         snapsink gaps /data/orders accept --source kafka:orders/3 --range 1042..5999"));

  ServeArgs serve;
  auto* c_serve = app.add_subcommand("serve", "Serve the published generations over HTTP (read-only)");
  c_serve->add_option("ROOT", serve.root, kRootHelp)->required();
  c_serve->add_option("--listen", serve.options.listen,
                      "HOST:PORT to listen on (default 127.0.0.1:8080); :PORT listens on every interface (0.0.0.0), "
                      "PORT alone on loopback (127.0.0.1); port 0: any free");
  c_serve->add_option("--threads", serve.options.threads, "Worker threads, one connection each at a time (default 8)")
      ->check(CLI::Range(1, 256));
  c_serve->add_option("--max-connections", serve.options.max_connections,
                      "Connections in service at once; beyond: 503 and closed (default 64)")
      ->check(CLI::Range(1, 65536));
  c_serve->add_option("--read-timeout", serve.read_timeout,
                      "A client silent this long mid-request is answered 400, then closed after the keep-alive timeout (default 5s)");
  c_serve->add_option("--write-timeout", serve.write_timeout,
                      "A client not taking the answer for this long is disconnected (default 5s)");
  c_serve->add_option("--keep-alive-timeout", serve.keep_alive_timeout,
                      "An idle keep-alive connection is closed after this, whole seconds (default 5s)");
  c_serve->add_option("--max-request-bytes", serve.options.max_request_bytes,
                      "Largest request body; beyond: 413 (default 65536; request line: 8 KiB, beyond: 414)")
      ->check(AtLeast(1));
  c_serve->add_option("--tls-cert", serve.options.tls_cert_file,
                      "PEM certificate (chain) file: serve HTTPS (TLS 1.2+); re-read on SIGHUP");
  c_serve->add_option("--tls-key", serve.options.tls_key_file, "PEM private key file of --tls-cert; re-read on SIGHUP");
  c_serve->add_option("--token-file", serve.options.token_file,
                      "Access tokens, one a line (name:token); every request but /healthz needs "
                      "'Authorization: Bearer TOKEN'; mode 600; re-read on SIGHUP");
  c_serve->add_flag("--insecure", serve.options.insecure,
                    "Allow a non-loopback --listen without --tls-cert/--tls-key and --token-file (warns)");
  c_serve->add_option("--access-log", serve.access_log,
                      "Append the access log (one line a request) to this file instead of stderr; reopened on SIGHUP");
  c_serve->add_flag("--quiet", serve.quiet, "No access log");
  c_serve->footer(Footer("Endpoints: /v1/query /v1/windows /v1/generations /v1/status /metrics /healthz. "
                         "Beyond loopback: --tls-cert, --tls-key and --token-file, or --insecure. SIGHUP re-reads them. "
                         "Exit status: 0 after SIGTERM/SIGINT; 1 usage or failure.",
                         "snapsink serve /data/orders --listen 127.0.0.1:8080"));

  if (auto msg = CheckCommand(app, argc, argv)) {
    std::fprintf(stderr, "snapsink: %s\n", msg->c_str());
    return 1;
  }
  for (CLI::App* sub : app.get_subcommands({})) sub->allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 1;
  }
  for (const CLI::App* command : app.get_subcommands()) {
    if (auto msg = CheckExtras(*command)) {
      std::fprintf(stderr, "snapsink: %s\nRun 'snapsink %s --help' for usage.\n", msg->c_str(),
                   command->get_name().c_str());
      return 1;
    }
  }

  Status s;
  if (*c_init) s = CmdInit(init);
  else if (*c_ingest) s = CmdIngest(ingest);
  else if (*c_seal) s = CmdSeal(seal);
  else if (*c_publish) s = CmdPublish(publish_root);
  else if (*c_run) {
    run.keep_generations_given = run_keep->count() > 0;
    s = CmdRun(run);
  }
  else if (*c_backfill) s = CmdBackfill(backfill);
  else if (*c_query) {
    query.has_key = key_opt->count() > 0;
    query.has_rollup = rollup_opt->count() > 0;
    query.format = query_format == "json" ? OutputFormat::kJson
                   : query_format == "csv" ? OutputFormat::kCsv : OutputFormat::kTable;
    s = CmdQuery(query);
  } else if (*c_inspect) {
    if (inspect_all && inspect.what != "gaps") {
      s = Status::InvalidArgument("--all goes with inspect gaps only");
    } else {
      inspect.all = inspect_all;
      s = CmdInspect(inspect);
    }
  } else if (*c_verify) s = CmdVerify(verify_root);
  else if (*c_gc) {
    if (!gc_retain.empty() || !gc_max_ahead.empty()) s = CmdSetHistory(gc_root, gc_retain, gc_max_ahead);
    if (s.ok() && !producers_idle.empty()) s = CmdRetireProducers(gc_root, producers_idle);
    if (s.ok()) s = CmdGc(gc_root, keep);
  } else if (*c_rollback) s = CmdRollback(rollback_root, rollback_gen, rollback_dry_run);
  else if (*c_upgrade) s = CmdUpgrade(upgrade_root, upgrade_dry_run);
  else if (*c_serve) s = CmdServe(serve);
  else if (*c_status) s = CmdStatus(status_root, status_json, status_html);
  else if (*c_metrics) s = CmdMetrics(metrics_root);
  else if (*c_gaps) {
    if (epoch_opt->count() > 0) gaps.epoch = gaps_epoch;
    s = CmdGaps(gaps);
  }
  // Commands print their own findings; this is the one line for the failure.
  if (!s.ok()) std::fprintf(stderr, "snapsink: %s\n", s.message().c_str());
  if (s.code() == Status::Code::kInvalidArgument && s.message().rfind("--", 0) == 0) {
    // A usage error found by the command itself (it names the option): the
    // same second line as those CLI11 finds.
    for (const CLI::App* command : app.get_subcommands()) {
      std::fprintf(stderr, "Run 'snapsink %s --help' for usage.\n", command->get_name().c_str());
    }
  }
  return ExitCodeFor(s);
}
