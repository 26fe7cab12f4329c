// init and ingest.
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "tools/ingest_options.h"

namespace snapsink {

// init: commit point is the rename of state.init-tmp/ to state/ (Sink::Create).
Status CmdInit(const InitArgs& a) {
  api::InitOptions o;
  if (!api::ParseDuration(a.window, &o.window_ms) || o.window_ms <= 0) {
    return Status::InvalidArgument("--window " + a.window + ": expected a duration such as 1m, 15m, 1h, 1d");
  }
  int64_t lateness = o.window_ms;
  if (!a.lateness.empty() && (!api::ParseDuration(a.lateness, &lateness) || lateness < 0)) {
    return Status::InvalidArgument("--lateness " + a.lateness + ": expected a duration such as 0s, 30m, 1h");
  }
  o.lateness_ms = lateness;
  o.on_gap = a.on_gap == "stop" ? api::GapPolicy::kStop : api::GapPolicy::kAccept;
  if (!api::ParseDuration(a.id_horizon, &o.id_horizon_ms) || o.id_horizon_ms <= 0) {
    return Status::InvalidArgument("--id-horizon " + a.id_horizon + ": expected a duration such as 1h, 7d");
  }
  if (!a.producer_retention.empty() &&
      (!api::ParseDuration(a.producer_retention, &o.producer_retention_ms) || o.producer_retention_ms <= 0)) {
    return Status::InvalidArgument("--producer-retention " + a.producer_retention +
                                   ": expected a duration such as 1d, 30d");
  }
  SNAPSINK_RETURN_IF_ERROR(api::Sink::Create(a.root, o));
  std::printf("initialized %s: window %s, lateness %s, on-gap %s, id horizon %s, producer retention %s\n",
              a.root.c_str(), api::FormatDuration(o.window_ms).c_str(), api::FormatDuration(lateness).c_str(),
              a.on_gap.c_str(), api::FormatDuration(o.id_horizon_ms).c_str(),
              o.producer_retention_ms == 0 ? "never" : api::FormatDuration(o.producer_retention_ms).c_str());
  return Status::OK();
}

namespace {

std::string Counts(const api::SourceInfo& s) {
  auto u = [](uint64_t v) { return std::to_string(v); };
  return "lines " + u(s.lines) + ", applied " + u(s.applied) + ", duplicates " + u(s.duplicates) + ", fenced " +
         u(s.fenced) + ", rejected " + u(s.rejected) + ", ignored " + u(s.ignored);
}

}  // namespace

Status CheckIngestArgs(const IngestArgs& a) {
  if (!a.source.empty() && a.files.size() > 1) {
    return Status::InvalidArgument("--source names one input; give one FILE with it");
  }
  return Status::OK();
}

api::IngestOptions IngestOptionsFor(const IngestArgs& a, std::unique_ptr<Progress>* progress) {
  api::IngestOptions o;
  o.files = a.files;
  o.source = a.source;
  o.commit_every = a.commit_every;
  o.stop_on_error = a.on_error == "stop";
  o.id_from_content = a.id_from_content;
  o.final = a.final;
  o.on_progress = [progress, quiet = a.quiet](const std::string& source, uint64_t offset, int64_t size,
                                              uint64_t lines) {
    if (*progress == nullptr) *progress = std::make_unique<Progress>("ingest " + source, quiet);
    (*progress)->Update(offset, size, lines);
  };
  o.on_source_done = [progress](const api::IngestResult& r) {
    progress->reset();  // ends its line: the summary starts its own
    // What this run did, then the totals over every read of the source.
    const api::SourceInfo& st = r.sources.back();
    std::string text = st.source + ": this run: " + Counts(r.this_run.back()) + "; source totals: " + Counts(st) +
                       " (offset " + std::to_string(st.offset) + ")";
    if (st.rejected > 0) text += "; rejected lines in " + r.rejects_files.back();
    std::fprintf(stderr, "%s\n", text.c_str());
  };
  return o;
}

// ingest: commit point is each batch's LMDB commit (engine Ingester).
Status CmdIngest(const IngestArgs& a) {
  auto sink = api::Sink::Open(a.root);
  if (!sink.ok()) return sink.status();
  SNAPSINK_RETURN_IF_ERROR(CheckIngestArgs(a));
  std::unique_ptr<Progress> progress;
  return (*sink)->Ingest(IngestOptionsFor(a, &progress));
}

}  // namespace snapsink
