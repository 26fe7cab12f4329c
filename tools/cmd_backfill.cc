// backfill: see publish/backfill.h.
#include "tools/commands.h"

namespace snapsink {

Status CmdBackfill(const BackfillArgs&) { return Status::InvalidArgument("backfill is not built yet"); }

}  // namespace snapsink
