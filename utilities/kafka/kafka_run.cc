#include "utilities/kafka/kafka_run.h"

#include <chrono>

#include "utilities/kafka/merged_publish.h"

namespace snapsink::kafka {
namespace {

int64_t NowMs() {  // steady: only how often to publish, never what
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status SealAndReport(api::Sink* sink, const RunOptions& o, bool all, bool report_nothing) {
  api::SealOptions so;
  so.all = all;
  SNAPSINK_ASSIGN_OR_RETURN(auto sealed, sink->Seal(so));
  if (!sealed.empty() && o.on_sealed) o.on_sealed(sealed);
  if (sealed.empty() && report_nothing && o.on_nothing_sealed) {
    SNAPSINK_ASSIGN_OR_RETURN(auto why, sink->Unsealed());
    o.on_nothing_sealed(why);
  }
  return Status::OK();
}

Status PublishAndReport(api::Sink* sink, const RunOptions& o, bool always_report) {
  SNAPSINK_ASSIGN_OR_RETURN(auto published, sink->Publish());
  if ((published.generation != 0 || always_report) && o.on_published) o.on_published(published);
  if (o.follow && published.generation != 0) {
    auto gc = sink->Gc(o.keep_generations);
    if (!gc.ok() && o.on_gc_failed) o.on_gc_failed(gc.status());
  }
  return Status::OK();
}

void Add(const RoundResult& r, RunTotals* totals) {
  if (!totals) return;
  totals->records += r.records;
  totals->lines.lines += r.lines.lines;
  totals->lines.applied += r.lines.applied;
  totals->lines.duplicates += r.lines.duplicates;
  totals->lines.fenced += r.lines.fenced;
  totals->lines.rejected += r.lines.rejected;
  totals->lines.ignored += r.lines.ignored;
}

// --state: the partitions' own states take the records; at each publish
// point (every publish_every_ms with follow, and at the end, before leaving
// the group) each owned partition seals and records its round in ROOT, and
// the windows every partition is past are published merged
// (utilities/kafka/merged_publish.h).
Status RunStates(const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(nullptr, o.consumer));
  MergedPublisher merged(o.consumer.states->root(), o.consumer.topic);
  if (o.consumer.on_note) merged.set_on_note(o.consumer.on_note);
  auto publish_point = [&](bool all) -> Status {
    std::vector<api::SealedWindow> sealed;
    SNAPSINK_RETURN_IF_ERROR(merged.SealOwned(consumer.get(), all, &sealed));
    if (!sealed.empty() && o.on_sealed) o.on_sealed(sealed);
    SNAPSINK_ASSIGN_OR_RETURN(auto r, merged.Publish(consumer.get()));
    if (r.generation != 0 && o.on_published) o.on_published(api::PublishResult{r.generation, r.windows.size(), {}});
    return Status::OK();
  };
  int64_t last_publish = NowMs();
  while (!stop || !stop->load()) {
    RoundResult r;
    Status s = consumer->Round(&r);
    Add(r, totals);
    if (!s.ok()) {
      (void)consumer->Close();
      return s;
    }
    if (!o.follow && consumer->CaughtUp()) break;
    if (o.follow && NowMs() - last_publish >= o.publish_every_ms) {
      if (Status p = publish_point(false); !p.ok()) {
        (void)consumer->Close();
        return p;
      }
      last_publish = NowMs();
    }
  }
  if (Status p = publish_point(o.final); !p.ok()) {
    (void)consumer->Close();
    return p;
  }
  return consumer->Close();
}

}  // namespace

Status Run(api::Sink* sink, const RunOptions& o, const std::atomic<bool>* stop, RunTotals* totals) {
  if (o.follow && o.final) return Status::InvalidArgument("--final and --follow exclude each other");
  if (o.consumer.states != nullptr) return RunStates(o, stop, totals);
  // What a crashed run staged is published first (as file run --follow does).
  if (o.follow) SNAPSINK_RETURN_IF_ERROR(PublishAndReport(sink, o, false));
  SNAPSINK_ASSIGN_OR_RETURN(auto consumer, Consumer::Create(sink, o.consumer));
  int64_t last_publish = NowMs();
  while (!stop || !stop->load()) {
    RoundResult r;
    Status s = consumer->Round(&r);
    Add(r, totals);
    if (!s.ok()) {
      (void)consumer->Close();
      return s;
    }
    if (!o.follow) {
      if (consumer->CaughtUp()) break;
      continue;
    }
    if (r.lines.lines > 0) SNAPSINK_RETURN_IF_ERROR(SealAndReport(sink, o, false, false));
    if (NowMs() - last_publish >= o.publish_every_ms) {
      SNAPSINK_RETURN_IF_ERROR(PublishAndReport(sink, o, false));
      last_publish = NowMs();
    }
  }
  SNAPSINK_RETURN_IF_ERROR(consumer->Close());  // leaves the group; every round was committed
  SNAPSINK_RETURN_IF_ERROR(SealAndReport(sink, o, o.final, !o.follow));
  return PublishAndReport(sink, o, !o.follow);
}

}  // namespace snapsink::kafka
