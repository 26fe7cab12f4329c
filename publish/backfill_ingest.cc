// Steps 2 and 3 of a backfill (publish/backfill.h): the windows its inputs
// touch and the version rule over them, then the ingest of the inputs into
// the backfill's own state.
#include <algorithm>
#include <string>

#include "engine/metric_kinds.h"
#include "engine/event_parser.h"
#include "engine/filenames.h"
#include "engine/ingest.h"
#include "engine/line_reader.h"
#include "engine/timeutil.h"
#include "publish/backfill_steps.h"

namespace snapsink::backfill_steps {

Status CheckOptions(const BackfillOptions& o, int64_t window_ms, int64_t* first, int64_t* last) {
  *first = o.from ? WindowStart(*o.from, window_ms) : INT64_MIN;
  *last = o.to ? WindowStart(*o.to, window_ms) : INT64_MAX;
  if (*first > *last) return Status::InvalidArgument("BackfillOptions::from is after BackfillOptions::to");
  if (std::count(o.files.begin(), o.files.end(), "-") > 1) {
    return Status::InvalidArgument("- (standard input) can be given once");
  }
  if (!o.source.empty() && o.files.size() != 1) {
    return Status::InvalidArgument(
        "BackfillOptions::source names one input; BackfillOptions::files must hold exactly one");
  }
  return Status::OK();
}

Status CheckVersion(Store* live, const std::set<int64_t>& windows, uint64_t version) {
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(live->BeginRead(&txn));
  for (int64_t w : windows) {
    WindowState ws;
    SNAPSINK_RETURN_IF_ERROR(ReadWindowState(txn.get(), w, &ws));
    if (ws.last_version >= version) {
      return Status::InvalidArgument("BackfillOptions::version " + std::to_string(version) +
                                     " must exceed the versions of its windows: window " + FormatIso(w) + " is already at v" + std::to_string(ws.last_version));
    }
  }
  return Status::OK();
}

Status TouchedWindows(const std::vector<std::string>& files, int64_t window_ms, int64_t first, int64_t last,
                      std::set<int64_t>* out) {
  EventParser parser;
  Event ev;
  std::string reason;
  for (const std::string& f : files) {
    std::unique_ptr<LineReader> reader;
    SNAPSINK_RETURN_IF_ERROR(LineReader::Open(f, &reader));
    Line line;
    while (reader->Next(&line)) {
      if (line.overlong || !parser.Parse(line.data, line.size, line.capacity, &ev, &reason)) continue;
      const int64_t w = WindowStart(ev.ts_ms, window_ms);
      if (w >= first && w <= last) out->insert(w);
    }
    SNAPSINK_RETURN_IF_ERROR(reader->status());
  }
  return Status::OK();
}

// Archived input may span more than the retention: a backfill retires no
// producer, and rejects nothing for its own watermark (its history may
// jump); the publish leaves out what is beyond the live root's retention.
Status IngestInputs(Root* root, Store* bf, const BackfillOptions& o, const std::vector<std::string>& inputs,
                    int64_t first, int64_t last, BackfillResult* result) {
  const std::string& path = root->path();
  RootConfig config = root->config();
  config.producer_retention_ms = 0;
  config.retain_ms = 0;
  config.max_ahead_ms = 0;
  // The live root's metric kinds hold for the backfill's events too: its
  // state is a root of its own, so they are declared in it first (again on
  // a rerun, where that is a no-op).
  {
    MetricKinds kinds;
    std::unique_ptr<Txn> live, txn;
    SNAPSINK_RETURN_IF_ERROR(root->store()->BeginRead(&live));
    SNAPSINK_RETURN_IF_ERROR(ReadMetricKinds(live.get(), &kinds));
    live.reset();
    if (!kinds.empty()) {
      SNAPSINK_RETURN_IF_ERROR(bf->BeginWrite(&txn));
      for (const auto& [metric, kind] : kinds) SNAPSINK_RETURN_IF_ERROR(SetMetricKind(txn.get(), metric, kind));
      SNAPSINK_RETURN_IF_ERROR(txn->Commit());
    }
  }
  Ingester ingester(root->env(), bf, config);
  ingester.SetWindowRange(first, last);
  for (size_t i = 0; i < inputs.size(); ++i) {
    IngestOptions io;
    io.path = inputs[i];
    io.source = o.source.empty() ? o.files[i] : o.source;  // "-" for the spool of standard input
    io.commit_every = o.commit_every;
    io.rejects_file = filenames::BackfillRejectsFile(path, o.version, io.source);
    io.input_final = true;  // an archive: a last line without its newline is taken or rejected
    if (o.on_progress) {
      io.on_commit = [&](const SourceState& st, int64_t size) { o.on_progress(st.offset, size, st.lines); };
    }
    SourceState st;
    SNAPSINK_RETURN_IF_ERROR(ingester.Run(io, &st));
    *result += st;
  }
  return Status::OK();
}

}  // namespace snapsink::backfill_steps
