// backfill: see publish/backfill.h.
#include <cstdio>

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
    std::printf("backfill v%llu is already published; nothing to do\n", static_cast<unsigned long long>(a.version));
    return Status::OK();
  }
  std::fprintf(stderr, "backfill v%llu: lines %llu, applied %llu, duplicates %llu, fenced %llu, rejected %llu, ignored (outside --from/--to) %llu\n",
               static_cast<unsigned long long>(a.version), static_cast<unsigned long long>(r.lines), static_cast<unsigned long long>(r.applied),
               static_cast<unsigned long long>(r.duplicates), static_cast<unsigned long long>(r.fenced),
               static_cast<unsigned long long>(r.rejected), static_cast<unsigned long long>(r.ignored));
  PrintSealed(r.sealed);
  if (r.generation > 0) {
    std::printf("published generation %llu: %zu window(s) at v%llu\n", static_cast<unsigned long long>(r.generation),
                r.published_windows, static_cast<unsigned long long>(a.version));
  } else {
    std::printf("backfill v%llu: no window in range; nothing published\n", static_cast<unsigned long long>(a.version));
  }
  return Status::OK();
}

}  // namespace snapsink
