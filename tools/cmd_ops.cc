// gc, rollback and upgrade (verify: cmd_verify.cc).
#include <cstdio>

#include "snapsink/sink.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdGc(const std::string& path, uint64_t keep) {
  auto sink = api::Sink::Open(path);
  if (!sink.ok()) return sink.status();
  auto r = (*sink)->Gc(keep);
  if (!r.ok()) return r.status();
  for (uint64_t g : r->removed_generations) std::printf("removed generation %llu\n", static_cast<unsigned long long>(g));
  for (const std::string& s : r->removed_snapshots) std::printf("removed snapshot %s\n", s.c_str());
  for (const std::string& t : r->removed_temp_files) std::printf("removed %s (a temporary file a crash left)\n", t.c_str());
  if (r->removed_parts > 0) {
    std::printf("removed %llu manifest part(s) no kept generation names\n", static_cast<unsigned long long>(r->removed_parts));
  }
  if (!r->removed_seal_records.empty()) {
    std::printf("removed %zu seal record(s) of partitions a newer seal of the same window replaced\n",
                r->removed_seal_records.size());
  }
  for (uint64_t g : r->pinned) std::printf("kept generation %llu: pinned by a reader\n", static_cast<unsigned long long>(g));
  if (r->removed_generations.empty() && r->removed_snapshots.empty() && r->removed_temp_files.empty() &&
      r->removed_parts == 0 && r->removed_seal_records.empty()) {
    std::printf("nothing to remove (keeping the newest %llu generation(s) and what they use)\n",
                static_cast<unsigned long long>(keep));
  }
  return Status::OK();
}

namespace {

// A dry run reads only: no LOCK, so it never waits for a writer (SPEC 13).
Result<api::RollbackResult> DoRollback(const std::string& path, uint64_t generation, bool dry_run) {
  if (dry_run) {
    auto reader = api::Sink::OpenReadOnly(path);
    if (!reader.ok()) return reader.status();
    return (*reader)->RollbackDryRun(generation);
  }
  auto sink = api::Sink::Open(path);
  if (!sink.ok()) return sink.status();
  return (*sink)->Rollback(generation);
}

}  // namespace

Status CmdRollback(const std::string& path, uint64_t generation, bool dry_run) {
  auto r = DoRollback(path, generation, dry_run);
  if (!r.ok()) return r.status();
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  auto version = [&](uint64_t v) { return v == 0 ? std::string("unpublished") : "v" + std::to_string(v); };
  // Per window, what leaves (or comes back into) the live view.
  for (const api::RollbackChange& c : r->changes) {
    std::printf("window %s: %s -> %s; events %lld -> %lld, count %lld -> %lld, sum %s -> %s%s\n",
                api::FormatTime(c.window_ms).c_str(), version(c.version_before).c_str(),
                version(c.version_after).c_str(), static_cast<long long>(c.events_before),
                static_cast<long long>(c.events_after), static_cast<long long>(c.count_before),
                static_cast<long long>(c.count_after), api::FormatMicros(c.sum_micros_before).c_str(),
                api::FormatMicros(c.sum_micros_after).c_str(), c.version_after == 0 ? " (leaves the live view)" : "");
  }
  for (int64_t w : r->beyond_retention) {
    std::printf("window %s: beyond retention; kept out (its state was dropped)\n", api::FormatTime(w).c_str());
  }
  if (r->nothing_to_do) {
    std::printf("the current generation already holds generation %llu's windows; nothing to do\n", u(generation));
  } else if (dry_run) {
    std::printf("dry run: nothing changed\n");
  } else {
    std::printf("published generation %llu: a copy of generation %llu\n", u(r->generation), u(generation));
  }
  return Status::OK();
}

Status CmdUpgrade(const std::string& path, bool dry_run) {
  auto r = api::Sink::Upgrade(path, dry_run);
  if (!r.ok()) return r.status();
  if (r->nothing_to_do) {
    std::printf("%s is already of format %llu; nothing to do\n", path.c_str(),
                static_cast<unsigned long long>(r->format_after));
    return Status::OK();
  }
  for (const std::string& line : r->actions) std::printf("%s\n", line.c_str());
  if (dry_run) {
    std::printf("dry run: nothing changed (format %llu -> %llu)\n", static_cast<unsigned long long>(r->format_before),
                static_cast<unsigned long long>(r->format_after));
  } else {
    std::printf("upgraded %s from format %llu to %llu\n", path.c_str(),
                static_cast<unsigned long long>(r->format_before), static_cast<unsigned long long>(r->format_after));
  }
  return Status::OK();
}

}  // namespace snapsink
