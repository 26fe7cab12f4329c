// run ROOT --kafka BROKERS --topic T --group G: kafka::Run (utilities/kafka/)
// with the tool's printing and SIGTERM/SIGINT handling.
#include <malloc.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>

#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tools/cli_errors.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/stop_signals.h"
#include "tools/write_results.h"
#include "utilities/kafka/kafka_run.h"
#include "utilities/kafka/partition_states.h"
#include "utilities/kafka/split_producers.h"
#include "utilities/status_macros.h"

namespace snapsink {
namespace {

// librdkafka's broker threads allocate each fetch's buffers and one message
// per record; the consuming thread frees them a round later. With glibc's
// defaults each broker thread has an arena of its own whose freed top goes
// back to the kernel after each round, to be faulted in (and zeroed) again
// by the next fetch: a third of the Kafka path's CPU went to those page
// faults. One arena, its free top kept up to 64 MB and blocks up to 32 MB
// taken from it (not mmap'd each time), cut page faults about 3x, CPU
// about 10% and peak RSS about 10% (bench/RESULTS.md, "The Kafka path
// against the file path"). The process's own choice: not when the
// environment tunes glibc's malloc itself.
void KeepFetchMemory() {
  for (const char* env : {"GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"}) {
    if (getenv(env) != nullptr) return;
  }
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace

Status CmdRunKafka(const RunArgs& a) {
  if (!a.ingest.files.empty()) return Status::InvalidArgument("--kafka reads a topic, not FILE...");
  if (!a.ingest.source.empty()) return Status::InvalidArgument("--source does not go with --kafka (sources are kafka:T/P)");
  if (!a.serve.empty()) return Status::InvalidArgument("--serve does not go with --kafka");
  if (a.kafka.topic.empty() || a.kafka.group.empty()) return Status::InvalidArgument("--kafka needs --topic and --group");
  if (a.follow && a.final) return Status::InvalidArgument("--final and --follow exclude each other");
  kafka::RunOptions o;
  o.consumer.brokers = a.kafka.brokers;
  o.consumer.topic = a.kafka.topic;
  o.consumer.group = a.kafka.group;
  o.consumer.start_latest = a.kafka.start == "latest";
  SNAPSINK_RETURN_IF_ERROR(kafka::ParseUserConfig(a.kafka.config, &o.consumer.user_config));
  o.consumer.write.stop_on_error = a.ingest.on_error == "stop";
  o.consumer.write.id_from_content = a.ingest.id_from_content;
  kafka::SplitProducers split(a.kafka.topic, a.kafka.on_split_producer == "warn" ? kafka::OnSplitProducer::kWarn
                                                                                  : kafka::OnSplitProducer::kStop);
  o.consumer.split_producers = &split;
  o.follow = a.follow;
  o.final = a.final;
  if (!api::ParseDuration(a.publish_every, &o.drive.publish_every_ms) || o.drive.publish_every_ms < 0) {
    return Status::InvalidArgument("--publish-every " + a.publish_every + ": expected a duration such as 10s");
  }
  if (!api::ParseDuration(a.kafka.timeout, &o.consumer.connect_timeout_ms) || o.consumer.connect_timeout_ms < 0) {
    return Status::InvalidArgument("--kafka-timeout " + a.kafka.timeout + ": expected a duration such as 30s");
  }
  // A follower writes each partition's progress at least every publish, so that its age (status) tells
  // an idle partition from a stopped consumer.
  o.consumer.progress_every_ms = a.follow ? o.drive.publish_every_ms : 0;
  // The library's notes (partitions taken, broker errors retried, librdkafka's log lines "kafka: ...").
  o.consumer.on_note = [](const std::string& note) { std::fprintf(stderr, "%s\n", note.c_str()); };
  o.drive.on_sealed = [](const std::vector<api::SealedWindow>& sealed) {
    PrintSealed(sealed);
    std::fflush(stdout);
  };
  o.drive.on_published = [](const api::PublishResult& r) {
    if (r.generation == 0) {
      std::printf("nothing to publish\n");
    } else {
      PrintPublished(r);
    }
    std::fflush(stdout);
  };
  o.drive.keep_generations = a.keep_generations;
  o.drive.on_unsealed = [](const api::UnsealedWindows& why) { PrintNothingToSeal(why, "--final"); };
  StopSignals signals;  // before librdkafka starts its threads: they inherit the blocked signals
  KeepFetchMemory();    // before any thread has an arena
  std::unique_ptr<api::ReadOnlySink> shared;  // --state: ROOT without its LOCK (many processes share it)
  std::unique_ptr<api::Sink> sink;
  std::unique_ptr<kafka::PartitionStates> states;
  if (!a.kafka.state.empty()) {
    // A root in a bucket: ROOT's own local state (what this process last
    // published from) lives in DIR too, beside the partitions' DIR/T/P.
    if (a.ingest.root.rfind("s3://", 0) == 0) {
      for (const char* taken : {"state", "state.init-tmp", "staging", "rejects"}) {
        if (a.kafka.topic == taken) {
          return Status::InvalidArgument("--topic " + a.kafka.topic + ": into a root in a bucket, --state DIR/" +
                                         taken + " holds the root's own state; use a root on a local disk");
        }
      }
      SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.ingest.root, a.kafka.state));
      SNAPSINK_RETURN_IF_ERROR(api::SharePublishing(a.ingest.root));  // every process publishes
    }
    auto root = api::Sink::OpenReadOnly(a.ingest.root);
    if (!root.ok()) return root.status();
    shared = std::move(*root);
    SNAPSINK_RETURN_IF_ERROR(api::CheckOneKindOfSource(*shared, a.kafka.topic));  // before the first claim
    std::error_code ec;
    const std::string state = std::filesystem::absolute(a.kafka.state, ec).lexically_normal().string();
    if (ec) return Status::InvalidArgument("--state " + a.kafka.state + ": " + ec.message());
    // Who took a partition, as ROOT's claims (and status) name it: client id and state directory.
    states = std::make_unique<kafka::PartitionStates>(shared.get(), state, a.kafka.topic,
                                                      kafka::UniqueClientId() + " " + state);
    states->set_checkpoint_every(a.kafka.checkpoint_every);
    o.consumer.states = states.get();
  } else {
    // --follow holds LOCK one step at a time: maintenance runs beside it.
    auto opened = a.follow ? api::Sink::OpenFollower(a.ingest.root) : api::Sink::Open(a.ingest.root);
    if (!opened.ok()) return opened.status();
    sink = std::move(*opened);
    SNAPSINK_RETURN_IF_ERROR(api::CheckOneKindOfSource(*sink, ""));
  }
  kafka::RunStop stop;
  signals.OnSignal([&] { stop.Stop(); });  // the signal's own thread (sigwait), not a handler
  kafka::RunTotals totals;
  // The library names the options' fields; kafka_config's items came from --kafka-config.
  Status s = NameFlags(kafka::Run(sink.get(), o, &stop, &totals), {{"ConsumerOptions::user_config", "--kafka-config"},
                                                                   {"ConsumerOptions::connect_timeout_ms", "--kafka-timeout"},
                                                                   {"OnSplitProducer::kWarn", "--on-split-producer warn"}});
  signals.Finish();
  // A usage error found before anything was read (a bad --kafka-config) has no run to sum up.
  const bool usage_error = s.IsInvalidArgument() && totals.records == 0;
  if (!a.ingest.quiet && !usage_error) {
    std::fprintf(stderr, "kafka %s: %llu records, %llu lines: %llu applied, %llu duplicates, %llu fenced, %llu rejected\n",
                 a.kafka.topic.c_str(), static_cast<unsigned long long>(totals.records),
                 static_cast<unsigned long long>(totals.lines.lines),
                 static_cast<unsigned long long>(totals.lines.applied),
                 static_cast<unsigned long long>(totals.lines.duplicates),
                 static_cast<unsigned long long>(totals.lines.fenced),
                 static_cast<unsigned long long>(totals.lines.rejected));
    if (split.count() > 0) {
      std::fprintf(stderr,
                   "kafka %s: %llu producers split over partitions (--on-split-producer warn): key the records by "
                   "producer (docs/KAFKA.md)\n",
                   a.kafka.topic.c_str(), static_cast<unsigned long long>(split.count()));
    }
  }
  return s;
}

}  // namespace snapsink
