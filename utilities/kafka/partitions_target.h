// `run ROOT --kafka ... --state DIR` on api::Drive (snapsink/drive.h): the
// consumer and the partitions' own states as a DriveTarget. A poll is one
// consumer round, whose Writes go to the states of the partitions this
// process owns (Consumer::Create without a Sink). The states seal at
// publish points only, not after each poll, and a publish point is the
// merged publish's (utilities/kafka/merged_publish.h): each owned
// partition seals and records its round in ROOT, then ROOT publishes the
// windows every partition is past. So the cadence differs from a Sink's in
// what the target says, not in the loop:
// - no step holds anything (PublishMerged takes ROOT's LOCK for its own
//   step; each state's LOCK is its owner's);
// - AfterPoll seals nothing and is always pending: the merged publish is
//   the group's, tried at every publish point, and says nothing when it
//   finds nothing; no gc (ROOT's generations are the group's);
// - following (--follow), the first publish point comes publish_every_ms
//   after the start, and the last step (a stop) reads nothing more: its
//   publish point seals the closed windows and publishes;
// - to its end (no --follow: HasEnd), the rounds go on until every owned
//   partition is read up to the end offsets seen at start (or a stop). The
//   end seals the closed windows and publishes, after a note naming the
//   partitions another process held throughout. Under --final the end of
//   this process's partitions is a publish point that seals every window
//   (WantsPublish), and the source goes on until the whole topic is done:
//   it stays in the group, polling, and when the group gives it a
//   partition (a dead owner's, after that owner's session timeout) it reads
//   it to its end and asks for a publish point again. Done (ROOT says every
//   partition is sealed up to the end offsets seen at start): the end is
//   one more merged publish (whoever recorded the last round may have died
//   before publishing it). IOError naming the partitions left when nothing
//   moved them (their progress, claims, checkpoints and the group's
//   committed offsets) for three times the session timeout (at least
//   45 s), or
//   when stopped first.
//
// Built on the public API only. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "snapsink/drive.h"
#include "utilities/kafka/kafka_consumer.h"
#include "utilities/kafka/kafka_run.h"
#include "utilities/kafka/merged_publish.h"

namespace snapsink::kafka {

class PartitionsTarget : public api::DriveTarget {
 public:
  // o: the run (follow, final, the consumer's topic, group, on_note and
  // session timeout); ends: every partition's end offset as of the start
  // (final only). stop: the run's (not null); api::Drive is given its
  // drive_stop(), so Drive hears of a stop from it, and Wait sleeps in it
  // until the stop or the timeout. consumer, merged, stop and totals
  // outlive the target (totals may be null).
  PartitionsTarget(const RunOptions& o, Consumer* consumer, MergedPublisher* merged, std::vector<int64_t> ends,
                   RunStop* stop, RunTotals* totals);

  // Errors: what Consumer::Round returns; under final, IOError when the
  //   topic cannot be finished (above), and what FinishOfTopic returns.
  Status Poll(bool last, bool* more) override;
  void Wait(int64_t timeout_ms) override;
  void Wake() override {}  // Drive wakes at a stop only, and RunStop::Stop ended the wait already
  bool HasEnd() const override { return !o_.follow; }
  // Errors: none.
  Status AfterPoll(const api::DriveOptions&, bool* pending) override {
    *pending = true;  // the merged publish is tried at every publish point
    return Status::OK();
  }
  // Errors: what MergedPublisher's SealOwned and Publish return.
  Status Publish(bool all, const api::DriveOptions& options) override;
  // Errors: what MergedPublisher's SealOwned and Publish return.
  Status AtEnd(const api::DriveOptions& options) override;
  bool WantsPublish() override;
  bool FirstPublishAfterEvery() const override { return true; }

 private:
  Status PollToEnd(bool* more);
  Status PollFinish(bool* more);
  Status LookAtTheTopic(bool settled, bool* done);
  Status PublishMerged(const api::DriveOptions& options);
  bool OwnedReadToEnds() const;
  bool Stopped() const;
  void Note(const std::string& m) const;

  const RunOptions& o_;
  Consumer* consumer_;
  MergedPublisher* merged_;
  std::vector<int64_t> ends_;
  RunStop* stop_;
  RunTotals* totals_;
  bool wants_publish_ = false;
  bool finishing_ = false;  // final: this process's partitions are done; the topic's wait
  // The topic's wait: ROOT's fingerprint and the group's offsets last seen,
  // the partitions left, the owned partitions (with epochs) at the last
  // publish point, when something last moved and when ROOT was last looked at.
  std::string seen_, seen_offsets_, owned_;
  std::vector<int32_t> undone_;
  int64_t moved_ = 0, looked_ = 0, bound_ms_ = 0;
  bool read_ = false, noted_ = false;
};

}  // namespace snapsink::kafka
