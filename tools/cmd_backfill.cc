// backfill: see publish/backfill.h.
#include <cstdio>

#include "engine/filenames.h"
#include "engine/timeutil.h"
#include "publish/backfill.h"
#include "tools/commands.h"
#include "tools/progress.h"

namespace snapsink {

void PrintSealed(const std::vector<SealedWindow>& sealed);  // cmd_publish.cc

Status CmdBackfill(const BackfillArgs& a) {
  BackfillOptions o;
  o.version = a.version;
  o.files = a.files;
  o.commit_every = a.commit_every;
  for (auto [text, out] : {std::pair{&a.from, &o.from}, std::pair{&a.to, &o.to}}) {
    if (text->empty()) continue;
    int64_t ms;
    if (!ParseWindowName(*text, &ms)) return Status::InvalidArgument("not a window or time: " + *text);
    *out = ms;
  }
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/false, &root));
  Progress progress("backfill v" + std::to_string(a.version), a.quiet);
  o.on_progress = [&](uint64_t bytes, int64_t total, uint64_t lines) { progress.Update(bytes, total, lines); };
  BackfillResult r;
  SNAPSINK_RETURN_IF_ERROR(RunBackfill(root.get(), o, &r));
  if (r.already_done) {
    std::printf("backfill v%u is already published; nothing to do\n", a.version);
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
      text += (i == 0 ? " " : ", ") + filenames::BackfillRejectsFile(a.root, a.version, a.files[i]);
    }
  }
  std::fprintf(stderr, "%s\n", text.c_str());
  PrintSealed(r.sealed);
  if (r.generation > 0) {
    std::printf("published generation %llu: %zu window(s) at v%u\n", static_cast<unsigned long long>(r.generation),
                r.published_windows, a.version);
  } else {
    std::printf("backfill v%u: no window in range; nothing published\n", a.version);
  }
  return Status::OK();
}

}  // namespace snapsink
