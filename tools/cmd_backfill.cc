// backfill: see publish/backfill.h.
#include <cstdio>

#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "publish/backfill.h"
#include "publish/backfill_impact.h"
#include "tools/commands.h"
#include "tools/progress.h"
#include "tools/window_arg.h"

namespace snapsink {

void PrintSealed(const std::vector<SealedWindow>& sealed);  // cmd_publish.cc
void PrintImpact(const std::vector<WindowImpact>& impact);  // impact_table.cc

namespace {

Status DryRun(Root* root, const BackfillOptions& o) {
  bool done = false;
  std::vector<WindowImpact> impact;
  SNAPSINK_RETURN_IF_ERROR(PlanBackfill(root, o, &done, &impact));
  if (done) {
    std::printf("backfill v%llu is already published; nothing to do\n", static_cast<unsigned long long>(o.version));
    return Status::OK();
  }
  std::printf("dry run: backfill v%llu would replace %zu window(s); nothing changed\n", static_cast<unsigned long long>(o.version), impact.size());
  PrintImpact(impact);
  return Status::OK();
}

}  // namespace

// backfill: commit points in RunBackfill (publish/backfill.cc).
Status CmdBackfill(const BackfillArgs& a) {
  BackfillOptions o;
  o.version = a.version;
  o.files = a.files;
  o.source = a.source;
  o.commit_every = a.commit_every;
  for (auto [opt, text, out] : {std::tuple{"--from", &a.from, &o.from}, std::tuple{"--to", &a.to, &o.to}}) {
    if (text->empty()) continue;
    int64_t ms;
    SNAPSINK_RETURN_IF_ERROR(ParseInstantArg(opt, *text, &ms));  // names the window holding it
    *out = ms;
  }
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/false, &root));
  if (a.dry_run) return DryRun(root.get(), o);
  Progress progress("backfill v" + std::to_string(a.version), a.quiet);
  o.on_progress = [&](uint64_t bytes, int64_t total, uint64_t lines) { progress.Update(bytes, total, lines); };
  BackfillResult r;
  Status s = RunBackfill(root.get(), o, &r);
  progress.Done();  // what follows starts a line of its own
  SNAPSINK_RETURN_IF_ERROR(s);
  if (r.already_done) {
    std::printf("backfill v%llu is already published; nothing to do\n", static_cast<unsigned long long>(a.version));
    return Status::OK();
  }
  // The same counts, in the same order, as ingest's summary; then where rejected lines went.
  std::string text = "backfill v" + std::to_string(a.version) + ": lines " + std::to_string(r.lines) + ", applied " +
                     std::to_string(r.applied) + ", duplicates " + std::to_string(r.duplicates) + ", fenced " +
                     std::to_string(r.fenced) + ", rejected " + std::to_string(r.rejected) +
                     ", ignored (outside --from/--to) " + std::to_string(r.ignored);
  if (r.rejected > 0) {
    text += "; rejected lines in";
    for (size_t i = 0; i < a.files.size(); ++i) {
      text += (i == 0 ? " " : ", ") + filenames::BackfillRejectsFile(a.root, a.version, a.source.empty() ? a.files[i] : a.source);
    }
  }
  std::fprintf(stderr, "%s\n", text.c_str());
  PrintSealed(r.sealed);
  if (r.generation > 0) {
    std::printf("published generation %llu: %zu window(s) at v%llu\n", static_cast<unsigned long long>(r.generation),
                r.published_windows, static_cast<unsigned long long>(a.version));
    PrintImpact(r.impact);
  } else {
    std::printf("backfill v%llu: no window in range; nothing published (v%llu stays unused)\n",
                static_cast<unsigned long long>(a.version), static_cast<unsigned long long>(a.version));
  }
  return Status::OK();
}

}  // namespace snapsink
