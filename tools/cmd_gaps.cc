// gaps ROOT accept: record a gap as accepted (engine/gap_acceptance.h).
#include <chrono>
#include <cstdio>

#include "engine/gap_acceptance.h"
#include "engine/root.h"
#include "engine/timeutil.h"
#include "tools/commands.h"

namespace snapsink {

Status CmdGaps(const GapsArgs& a) {
  AcceptedGap rec;
  rec.producer = a.producer;
  if (a.epoch) {
    rec.any_epoch = false;
    rec.epoch = *a.epoch;
  }
  if (!a.range.empty() && !ParseSeqRange(a.range, &rec.range)) {
    return Status::InvalidArgument("--range '" + a.range +
                                   "': expected LO..HI (sequence numbers, both inclusive, LO <= HI) or one number");
  }
  // Wall clock: for the audit record only, never for an output's identity.
  rec.accepted_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  std::unique_ptr<Root> root;
  SNAPSINK_RETURN_IF_ERROR(Root::Open(Env::Default(), a.root, /*writer=*/true, &root));
  std::unique_ptr<Txn> txn;
  SNAPSINK_RETURN_IF_ERROR(root->store()->BeginWrite(&txn));
  SNAPSINK_RETURN_IF_ERROR(RecordAcceptedGap(txn.get(), rec));
  SNAPSINK_RETURN_IF_ERROR(txn->Commit());
  const std::string epoch = rec.any_epoch ? "every epoch" : "epoch " + std::to_string(rec.epoch);
  const std::string range = a.range.empty() ? "every missing seq"
                                            : "seq " + std::to_string(rec.range.lo) + ".." +
                                                  std::to_string(rec.range.hi - 1);
  std::printf("accepted gaps of producer %s, %s, %s: ingest under --on-gap stop goes on past them\n",
              rec.producer.c_str(), epoch.c_str(), range.c_str());
  return Status::OK();
}

}  // namespace snapsink
