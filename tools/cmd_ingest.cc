// ingest ROOT FILE...: applies events, each source resuming from its
// committed offset (api::Sink::Ingest).
#include <cstdio>
#include <memory>

#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "tools/batch_interrupt.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/ingest_options.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

// ingest: commit point is each batch's LMDB commit (engine Ingester).
Status CmdIngest(const IngestArgs& a, const std::string& state) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.root, state));
  BatchInterrupt interrupt;  // before any thread starts
  auto sink = api::Sink::Open(a.root);
  if (!sink.ok()) return sink.status();
  SNAPSINK_RETURN_IF_ERROR(api::CheckOneKindOfSource(**sink, ""));
  SNAPSINK_RETURN_IF_ERROR(CheckIngestArgs(a));
  std::unique_ptr<Progress> progress;
  api::IngestOptions o = IngestOptionsFor(a, &progress);
  o.on_progress = [&, shown = o.on_progress](const std::string& source, uint64_t offset, int64_t size,
                                             uint64_t lines) {
    shown(source, offset, size, lines);
    interrupt.Committed(source, offset, progress.get());
  };
  Status s = (*sink)->Ingest(o);
  interrupt.Finish();
  return s;
}

}  // namespace

Command RegisterIngest(CLI::App& app) {
  auto a = std::make_shared<IngestArgs>();
  auto state = std::make_shared<std::string>();
  auto* c = app.add_subcommand("ingest", "Apply events; each source resumes from its committed offset");
  AddRoot(c, &a->root);
  c->add_option("FILE", a->files, "NDJSON files; - is standard input")->required();
  AddInputFlags(c, a.get());
  AddQuietProgress(c, &a->quiet);
  AddIdFromContent(c, &a->id_from_content);
  AddBucketState(c, state.get());
  c->footer(kEventFields + Footer(ExitStatusLine({Exit::kOk, Exit::kFailure, Exit::kBadInput,
                                                  {Exit::kGap, "gap under --on-gap stop (see snapsink gaps)"},
                                                  Exit::kLocked}),
                                  "snapsink ingest /data/orders events.ndjson"));
  return {c, [a, state] { return CmdIngest(*a, *state); }};
}

}  // namespace snapsink
