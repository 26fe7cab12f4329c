// gaps ROOT accept: record a gap as accepted (api::Sink::AcceptGaps).
#include <cstdio>

#include "snapsink/sink.h"
#include "tools/commands.h"

namespace snapsink {

namespace {

Status AcceptSourceGap(const GapsArgs& a) {
  if (a.epoch) return Status::InvalidArgument("--epoch goes with --producer, not --source");
  api::SeqRange range;
  if (a.range.empty() || !api::ParseSeqRange(a.range, &range)) {
    return Status::InvalidArgument("--source needs --range LO..HI (positions, both inclusive, LO <= HI) or one number");
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::Open(a.root));
  SNAPSINK_ASSIGN_OR_RETURN(auto rec, sink->AcceptSourceGap({a.source, range.first, range.last}));
  std::printf("accepted the loss of positions %llu..%llu of source %s: its reader goes on from %llu\n",
              static_cast<unsigned long long>(rec.gap.first), static_cast<unsigned long long>(rec.gap.last),
              rec.gap.source.c_str(), static_cast<unsigned long long>(rec.gap.last + 1));
  return Status::OK();
}

}  // namespace

Status CmdGaps(const GapsArgs& a) {
  if (a.producer.empty() && a.source.empty()) return Status::InvalidArgument("--producer is required");
  if (!a.producer.empty() && !a.source.empty()) {
    return Status::InvalidArgument("gaps accept: give one of --producer and --source, not both");
  }
  if (!a.source.empty()) return AcceptSourceGap(a);
  api::GapAcceptance acceptance;
  acceptance.producer = a.producer;
  acceptance.epoch = a.epoch;
  if (!a.range.empty() && !api::ParseSeqRange(a.range, &acceptance.range)) {
    return Status::InvalidArgument("--range '" + a.range +
                                   "': expected LO..HI (sequence numbers, both inclusive, LO <= HI) or one number");
  }
  SNAPSINK_ASSIGN_OR_RETURN(auto sink, api::Sink::Open(a.root));
  SNAPSINK_ASSIGN_OR_RETURN(auto rec, sink->AcceptGaps(acceptance));
  const std::string epoch = rec.gap.epoch ? "epoch " + std::to_string(*rec.gap.epoch) : "every epoch";
  const std::string range = a.range.empty() ? "every missing seq"
                                            : "seq " + std::to_string(rec.gap.range.first) + ".." +
                                                  std::to_string(rec.gap.range.last);
  std::printf("accepted gaps of producer %s, %s, %s: ingest under --on-gap stop goes on past them\n",
              rec.gap.producer.c_str(), epoch.c_str(), range.c_str());
  return Status::OK();
}

}  // namespace snapsink
