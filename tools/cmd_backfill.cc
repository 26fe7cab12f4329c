// backfill: see ReadOnlySink::Backfill (include/snapsink/sink.h).
#include <cstdio>
#include <memory>
#include <tuple>

#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/query_text.h"
#include "tools/batch_interrupt.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/progress.h"
#include "tools/write_results.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// backfill: commit points in RunBackfill (publish/backfill.cc).
Status CmdBackfill(const BackfillArgs& a) {
  api::BackfillOptions o;
  o.version = a.version;
  o.files = a.files;
  o.source = a.source;
  o.commit_every = a.commit_every;
  o.dry_run = a.dry_run;
  for (auto [opt, text, out] : {std::tuple{"--from", &a.from, &o.from}, std::tuple{"--to", &a.to, &o.to}}) {
    if (text->empty()) continue;
    int64_t ms;
    SNAPSINK_RETURN_IF_ERROR(api::ParseInstant(opt, *text, &ms));  // names the window holding it
    *out = ms;
  }
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.root, a.state));  // --state: a root in a bucket
  BatchInterrupt interrupt;  // before any thread starts
  auto root = api::Sink::OpenReadOnly(a.root);
  if (!root.ok()) return root.status();
  SNAPSINK_RETURN_IF_ERROR(api::CheckOneKindOfSource(**root, ""));
  // The library names BackfillOptions' fields; here each came from its flag.
  auto backfill = [&](api::BackfillResult* r) {
    return NameFlags(api::Backfill(**root, o, r),
                     {{"BackfillOptions::source names one input; BackfillOptions::files must hold exactly one",
                       "--source names one input; give one FILE with it"},
                      {"BackfillOptions::version", "--version"},
                      {"BackfillOptions::from", "--from"},
                      {"BackfillOptions::to", "--to"}});
  };
  const auto v = static_cast<unsigned long long>(a.version);
  api::BackfillResult r;
  if (a.dry_run) {
    SNAPSINK_RETURN_IF_ERROR(backfill(&r));
    if (r.already_done) {
      std::printf("backfill v%llu is already published; nothing to do\n", v);
      return Status::OK();
    }
    std::printf("dry run: backfill v%llu would replace %zu window(s); nothing changed\n", v, r.impact.size());
    PrintImpact(r.impact);
    return Status::OK();
  }
  Progress progress("backfill v" + std::to_string(a.version), a.quiet);
  // The callback names no input: the one given, else the one being read.
  const std::string input = "backfill v" + std::to_string(a.version) + " " +
                            (!a.source.empty() ? a.source : a.files.size() == 1 ? a.files[0] : "input");
  o.on_progress = [&](uint64_t bytes, int64_t total, uint64_t lines) {
    progress.Update(bytes, total, lines);
    interrupt.Committed(input, bytes, &progress);
  };
  Status s = backfill(&r);
  progress.Done();  // what follows starts a line of its own
  SNAPSINK_RETURN_IF_ERROR(s);
  if (r.already_done) {
    std::printf("backfill v%llu is already published; nothing to do\n", v);
    return Status::OK();
  }
  // The same counts, in the same order, as ingest's summary; then where rejected lines went.
  std::string text = "backfill v" + std::to_string(a.version) + ": lines " + std::to_string(r.lines) + ", applied " +
                     std::to_string(r.applied) + ", duplicates " + std::to_string(r.duplicates) + ", fenced " +
                     std::to_string(r.fenced) + ", rejected " + std::to_string(r.rejected) +
                     ", ignored (outside --from/--to) " + std::to_string(r.ignored);
  if (r.rejected > 0) {
    text += "; rejected lines in";
    for (size_t i = 0; i < r.rejects_files.size(); ++i) text += (i == 0 ? " " : ", ") + r.rejects_files[i];
  }
  std::fprintf(stderr, "%s\n", text.c_str());
  PrintSealed(r.sealed);
  if (r.generation > 0) {
    std::printf("published generation %llu: %zu window(s) at v%llu\n", static_cast<unsigned long long>(r.generation),
                r.published_windows, v);
    PrintImpact(r.impact);
  } else {
    std::printf("backfill v%llu: no window in range; nothing published (v%llu stays unused)\n", v, v);
  }
  interrupt.Finish();
  return Status::OK();
}

}  // namespace

Command RegisterBackfill(CLI::App& app) {
  auto a = std::make_shared<BackfillArgs>();
  auto* c = app.add_subcommand(
      "backfill",
      "Rebuild historical windows from archived input into version V, apart from live state, and publish them "
      "in one generation. --from/--to bound the windows, both inclusive; events outside are "
      "counted and ignored. Default: every window the input touches.");
  AddRoot(c, &a->root);
  c->add_option("--version", a->version, "The version to build; above every version of its windows")
      ->required()
      ->check(AtLeast(1));
  c->add_option("FILE", a->files, "Archived NDJSON files; - is standard input, first copied into the backfill's state")
      ->required();
  AddSource(c, &a->source);
  c->add_option("--from", a->from, WindowHelp("First window (inclusive)."));
  c->add_option("--to", a->to, WindowHelp("Last window (inclusive)."));
  AddCommitEvery(c, &a->commit_every);
  AddQuietProgress(c, &a->quiet);
  AddBucketState(c, &a->state);
  c->add_flag("--dry-run", a->dry_run, "Print per window the current and the new events, count and sum; change nothing");
  c->footer(Footer("After publishing, backfill prints the same per-window table as --dry-run.\n" + CommonExitLine(),
                   "snapsink backfill /data/orders --version 5 --from 20261021T100000Z archive.ndjson"));
  return {c, [a] { return CmdBackfill(*a); }};
}

}  // namespace snapsink
