// init and ingest.
#include <cstdio>

#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/line_reader.h"
#include "engine/root.h"
#include "engine/state_codec.h"
#include "engine/timeutil.h"
#include "tools/commands.h"
#include "tools/progress.h"

namespace snapsink {

// init: commit point is the rename of state.init-tmp/ to state/ (Root::Init).
Status CmdInit(const InitArgs& a) {
  RootConfig config;
  if (!ParseDuration(a.window, &config.window_ms) || config.window_ms <= 0) {
    return Status::InvalidArgument("--window " + a.window + ": expected a duration such as 1m, 15m, 1h, 1d");
  }
  if (a.lateness.empty()) {
    config.lateness_ms = config.window_ms;
  } else if (!ParseDuration(a.lateness, &config.lateness_ms) || config.lateness_ms < 0) {
    return Status::InvalidArgument("--lateness " + a.lateness + ": expected a duration such as 0s, 30m, 1h");
  }
  config.on_gap = a.on_gap == "stop" ? OnGap::kStop : OnGap::kAccept;
  if (!ParseDuration(a.id_horizon, &config.id_horizon_ms) || config.id_horizon_ms <= 0) {
    return Status::InvalidArgument("--id-horizon " + a.id_horizon + ": expected a duration such as 1h, 7d");
  }
  if (!a.producer_retention.empty() &&
      (!ParseDuration(a.producer_retention, &config.producer_retention_ms) || config.producer_retention_ms <= 0)) {
    return Status::InvalidArgument("--producer-retention " + a.producer_retention +
                                   ": expected a duration such as 1d, 30d");
  }
  SNAPSINK_RETURN_IF_ERROR(Root::Init(Env::Default(), a.root, config));
  std::printf("initialized %s: window %s, lateness %s, on-gap %s, id horizon %s, producer retention %s\n",
              a.root.c_str(), FormatDuration(config.window_ms).c_str(), FormatDuration(config.lateness_ms).c_str(),
              a.on_gap.c_str(), FormatDuration(config.id_horizon_ms).c_str(),
              config.producer_retention_ms == 0 ? "never" : FormatDuration(config.producer_retention_ms).c_str());
  return Status::OK();
}

namespace {

// Every input must be readable before any of them changes state. A file
// that is not the one its position was taken in is no error: it is read
// from its start (SPEC 5).
Status CheckInputs(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    if (f == "-") continue;
    std::unique_ptr<LineReader> r;
    SNAPSINK_RETURN_IF_ERROR(LineReader::Open(f, &r));
  }
  return Status::OK();
}

std::string Counts(const SourceState& s) {
  auto u = [](uint64_t v) { return std::to_string(v); };
  return "lines " + u(s.lines) + ", applied " + u(s.applied) + ", duplicates " + u(s.duplicates) + ", fenced " +
         u(s.fenced) + ", rejected " + u(s.rejected) + ", ignored " + u(s.ignored);
}

SourceState Minus(const SourceState& a, const SourceState& b) {
  SourceState d;
  d.lines = a.lines - b.lines;
  d.applied = a.applied - b.applied;
  d.duplicates = a.duplicates - b.duplicates;
  d.fenced = a.fenced - b.fenced;
  d.rejected = a.rejected - b.rejected;
  d.ignored = a.ignored - b.ignored;
  return d;
}

}  // namespace

Status IngestInto(Root* root, const IngestArgs& a) {
  if (!a.source.empty() && a.files.size() > 1) {
    return Status::InvalidArgument("--source names one input; give one FILE with it");
  }
  SNAPSINK_RETURN_IF_ERROR(CheckInputs(a.files));
  Ingester ingester(root->env(), root->store(), root->config());
  for (const std::string& file : a.files) {
    IngestOptions opt;
    opt.path = file;
    opt.source = a.source.empty() ? file : a.source;
    opt.commit_every = a.commit_every;
    opt.stop_on_error = a.on_error == "stop";
    opt.id_from_content = a.id_from_content;
    opt.rejects_file = filenames::RejectsFile(root->path(), opt.source);
    Progress progress("ingest " + opt.source, a.quiet);
    opt.on_commit = [&](const SourceState& s, int64_t size) { progress.Update(s.offset, size, s.lines); };
    opt.input_final = a.final;
    SourceState before, st;
    Status s = ingester.Run(opt, &st, &before);
    progress.Done();  // the summary starts its own line
    if (s.ok() || s.code() == Status::Code::kGap || s.code() == Status::Code::kBadInput) {
      // What this run did, then the totals over every read of the source.
      std::string text = opt.source + ": this run: " + Counts(Minus(st, before)) + "; source totals: " + Counts(st) +
                         " (offset " + std::to_string(st.offset) + ")";
      if (st.rejected > 0) text += "; rejected lines in " + opt.rejects_file;
      std::fprintf(stderr, "%s\n", text.c_str());
    }
    SNAPSINK_RETURN_IF_ERROR(s);
  }
  return Status::OK();
}

// ingest: commit point is each batch's LMDB commit (Ingester::RunSource).
Status CmdIngest(const IngestArgs& a) {
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/true, &root));
  return IngestInto(root.get(), a);
}

}  // namespace snapsink
