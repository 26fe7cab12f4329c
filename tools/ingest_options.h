// The ingest options of `ingest` and `run`: one translation of their
// arguments into api::IngestOptions, with progress and the per-source
// summary on stderr.
#pragma once

#include <memory>

#include "snapsink/options.h"
#include "tools/commands.h"
#include "tools/progress.h"

namespace snapsink {

// Usage errors of the ingest arguments that need no root (--source with
// several files).
Status CheckIngestArgs(const IngestArgs& a);

// The options for a; *progress holds the progress line of the file being
// read (it must outlive the ingest).
api::IngestOptions IngestOptionsFor(const IngestArgs& a, std::unique_ptr<Progress>* progress);

}  // namespace snapsink
