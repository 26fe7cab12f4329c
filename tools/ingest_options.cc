#include "tools/ingest_options.h"

#include <cstdio>

#include "tools/write_results.h"

namespace snapsink {

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
  o.on_note = PrintNote;
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
    // Only when this run rejected something: a run that read nothing new says nothing of rejects.
    if (r.this_run.back().rejected > 0) text += "; rejected lines in " + r.rejects_files.back();
    std::fprintf(stderr, "%s\n", text.c_str());
  };
  return o;
}

}  // namespace snapsink
