// gaps ROOT accept: record a gap as accepted (api::Sink::AcceptGaps).
#include <cstdio>
#include <memory>

#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tools/cli_errors.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "utilities/status_macros.h"

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

Status CmdGaps(const GapsArgs& a) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.root, a.state));  // --state: a root in a bucket
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

}  // namespace

Command RegisterGaps(CLI::App& app) {
  struct Flags {
    GapsArgs args;
    uint32_t epoch = 0;
  };
  auto f = std::make_shared<Flags>();
  GapsArgs* a = &f->args;
  auto* c = app.add_subcommand(
      "gaps", "accept: let ingest under --on-gap stop go on past a producer's gaps (recorded for audit; "
              "shown by inspect gaps --all); accepted gaps still fill if their events arrive. "
              "With --source: let a Kafka partition go on past offsets retention deleted (run exits " +
                  std::to_string(ExitStatus(Exit::kGap)) + " naming them)");
  AddRoot(c, &a->root);
  c->add_option("ACTION", a->action, "accept: record the producer's gaps as accepted")
      ->required()
      ->check(OneOf({"accept"}));
  c->add_option("--producer", a->producer, "The producer whose gap to accept");
  c->add_option("--source", a->source,
                "Instead of --producer: a source whose positions LO..HI (--range) are lost for good, "
                "e.g. kafka:T/P offsets deleted by retention; its reader goes on from HI+1");
  CLI::Option* epoch =
      c->add_option("--epoch", f->epoch, "Only gaps in this epoch (default: every epoch)")->check(AtLeast(0));
  c->add_option("--range", a->range, "Only missing sequence numbers inside LO..HI, both inclusive (default: every gap)");
  AddBucketState(c, &a->state);
  c->footer(Footer(CommonExitLine(), "snapsink gaps /data/orders accept --producer p1 --epoch 2 --range 100..199\n"
                                     "         snapsink gaps /data/orders accept --source kafka:orders/3 --range "
                                     "1042..5999"));
  return {c, [f, epoch] {
            if (epoch->count() > 0) f->args.epoch = f->epoch;
            return CmdGaps(f->args);
          }};
}

}  // namespace snapsink
