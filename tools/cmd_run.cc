// run ROOT FILE... [--final] [--follow]: ingest, seal closed windows,
// publish (api::Sink::Run, api::Sink::Follow); run --kafka: cmd_run_kafka.cc.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "snapsink/utilities/serve.h"
#include "snapsink/utilities/partitions.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "tools/command.h"
#include "tools/commands.h"
#include "tools/flag_groups.h"
#include "tools/ingest_options.h"
#include "tools/batch_interrupt.h"
#include "tools/stop_signals.h"
#include "tools/write_results.h"
#include "utilities/status_macros.h"

namespace snapsink {

namespace {

Status RunFollow(const RunArgs& a) {
  if (a.final) return Status::InvalidArgument("--final and --follow exclude each other");
  if (a.ingest.files.empty() || std::find(a.ingest.files.begin(), a.ingest.files.end(), "-") != a.ingest.files.end()) {
    return Status::InvalidArgument("--follow reads files and directories, not standard input");
  }
  if (!a.ingest.source.empty()) return Status::InvalidArgument("--source does not go with --follow");
  api::FollowOptions o;
  o.inputs = a.ingest.files;
  o.commit_every = a.ingest.commit_every;
  o.stop_on_error = a.ingest.on_error == "stop";
  o.id_from_content = a.ingest.id_from_content;
  o.keep_generations = a.keep_generations;
  o.on_note = PrintNote;
  if (!api::ParseDuration(a.publish_every, &o.publish_every_ms) || o.publish_every_ms < 0) {
    return Status::InvalidArgument("--publish-every " + a.publish_every + ": expected a duration such as 10s");
  }
  if (!api::ParseDuration(a.poll, &o.poll_ms) || o.poll_ms <= 0) {
    return Status::InvalidArgument("--poll " + a.poll + ": expected a duration such as 1s");
  }
  o.on_sealed = [](const std::vector<api::SealedWindow>& sealed) {
    PrintSealed(sealed);
    std::fflush(stdout);
  };
  o.on_published = [](const api::PublishResult& r) {
    PrintPublished(r);
    std::fflush(stdout);
  };
  StopSignals signals;  // before any thread starts
  auto sink = api::Sink::Open(a.ingest.root);
  if (!sink.ok()) return sink.status();
  SNAPSINK_RETURN_IF_ERROR(api::CheckOneKindOfSource(**sink, ""));
  api::FollowStop stop;
  std::unique_ptr<api::Server> server;
  if (!a.serve.empty()) {
    api::ServeOptions so;
    so.listen = a.serve;
    so.on_note = PrintServeNote;
    // Through the writer's handle: one LMDB environment per process.
    auto started = api::Server::Start(**sink, so);
    if (!started.ok() && started.status().message().find("ServeOptions::tls_cert_file") != std::string::npos) {
      // run takes none of serve's TLS and token flags.
      return Status::InvalidArgument("--serve " + a.serve + ": not a loopback address; run --follow --serve serves "
                                     "this host only (127.0.0.1:PORT); to serve beyond it, run snapsink serve " +
                                     a.ingest.root + " --listen " + a.serve +
                                     " --tls-cert FILE --tls-key FILE --token-file FILE beside it");
    }
    if (!started.ok()) return ServeFlagNames(started.status());
    server = std::move(*started);
    std::printf("serving %s on http://%s\n", (*sink)->path().c_str(), server->address().c_str());
    std::fflush(stdout);
  }
  signals.OnSignal([&] {
    stop.Stop();
    if (server) server->Stop();
  });
  Status s = (*sink)->Follow(o, &stop);
  Status serve_status;
  if (server) {
    server->Stop();
    serve_status = server->Wait();
  }
  signals.Finish();  // its thread may still be in Stop: join it before those go
  SNAPSINK_RETURN_IF_ERROR(s);
  return serve_status;
}

// FILE... (and - for standard input): api::Sink::Run, or with --follow
// api::Sink::Follow (files and spool directories).
Status RunFiles(const RunArgs& a) {
  SNAPSINK_RETURN_IF_ERROR(UseBucketState(a.ingest.root, a.kafka.state));  // --state: a root in a bucket
  if (a.ingest.files.empty()) return Status::InvalidArgument("run: give FILE... or --kafka BROKERS");
  if (a.follow) return RunFollow(a);
  for (const std::string& f : a.ingest.files) {
    std::error_code ec;
    if (f != "-" && std::filesystem::is_directory(f, ec)) {
      return Status::InvalidArgument(f + ": a directory; run reads one with --follow (every *.ndjson in it, as "
                                     "they appear), or give its files");
    }
  }
  if (!a.serve.empty()) return Status::InvalidArgument("--serve goes with --follow");
  BatchInterrupt interrupt;  // before any thread starts
  auto sink = api::Sink::Open(a.ingest.root);
  if (!sink.ok()) return sink.status();
  SNAPSINK_RETURN_IF_ERROR(api::CheckOneKindOfSource(**sink, ""));
  SNAPSINK_RETURN_IF_ERROR(CheckIngestArgs(a.ingest));
  std::unique_ptr<Progress> progress;
  api::RunOptions o;
  o.ingest = IngestOptionsFor(a.ingest, &progress);
  o.final = a.final;
  o.ingest.on_progress = [&, shown = o.ingest.on_progress](const std::string& source, uint64_t offset, int64_t size,
                                                           uint64_t lines) {
    shown(source, offset, size, lines);
    interrupt.Committed(source, offset, progress.get());
  };
  api::RunResult r;
  Status s = (*sink)->Run(o, &r);
  // Printed as far as the job got: what was sealed (or why nothing was), then the publish.
  PrintSealed(r.sealed);
  if (r.nothing_sealed) PrintNothingToSeal(*r.nothing_sealed, a.final ? nullptr : "--final");
  if (!s.ok() && !s.IsGap() && !s.IsBadInput()) return s;
  PrintPublishResult(r.publish);  // a stop publishes what came before it
  interrupt.Finish();
  return s;
}

// The sources run reads, each with its own flag group: the first one whose
// flags are given runs; one not chosen refuses its flags given alone. A new
// source kind (the bucket root, a socket) is a row here, a flag group in
// tools/flag_groups.h and its arguments in RunArgs.
struct RunSource {
  bool (*chosen)(const RunArgs& a);
  Status (*stray_flags)(const RunArgs& a);  // when not chosen: its other flags given without it
  Status (*run)(const RunArgs& a);
};

const RunSource kRunSources[] = {
    {[](const RunArgs& a) { return !a.kafka.brokers.empty(); },
     [](const RunArgs& a) {
       if (!a.kafka.on_split_producer.empty()) {
         return Status::InvalidArgument("--on-split-producer goes with --kafka");
       }
       if (a.kafka.topic.empty() && a.kafka.group.empty() && a.kafka.config.empty()) return Status::OK();
       return Status::InvalidArgument("--topic, --group and --kafka-config go with --kafka");
     },
     CmdRunKafka},
    {[](const RunArgs&) { return true; }, [](const RunArgs&) { return Status::OK(); }, RunFiles},
};

Status CmdRun(const RunArgs& a) {
  if (a.keep_generations_given && !a.follow) return Status::InvalidArgument("--keep-generations goes with --follow");
  if (!a.kafka.brokers.empty() && a.kafka.state.empty() && a.ingest.root.rfind("s3://", 0) == 0) {
    return Status::InvalidArgument("run --kafka into a root in a bucket (" + a.ingest.root +
                                   ") needs --state DIR: each process keeps its partitions' states there and "
                                   "shares only the bucket (README, A root in a bucket)");
  }
  for (const RunSource& source : kRunSources) {
    if (source.chosen(a)) return source.run(a);
    SNAPSINK_RETURN_IF_ERROR(source.stray_flags(a));
  }
  return Status::InvalidArgument("run: give FILE... or --kafka BROKERS");
}

}  // namespace

Command RegisterRun(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* c = app.add_subcommand("run", "Ingest, seal closed windows, publish");
  AddRoot(c, &a->ingest.root);
  c->add_option("FILE", a->ingest.files, "NDJSON files; - is standard input (or --kafka instead)");
  AddInputFlags(c, &a->ingest);
  c->add_flag("--final", a->final, "Seal every window, for the end of an input");
  AddQuietProgress(c, &a->ingest.quiet);
  CLI::Option* keep = AddFollowFlags(c, a.get());
  AddIdFromContent(c, &a->ingest.id_from_content);
  AddKafkaFlags(c, &a->kafka);
  c->footer(kEventFields +
            Footer(ExitStatusLine({Exit::kOk, Exit::kFailure, Exit::kBadInput,
                                   {Exit::kGap, "gap under --on-gap stop, a Kafka position deleted by retention "
                                                "(see snapsink gaps accept --source), or a producer split over "
                                                "Kafka partitions under --on-split-producer stop"},
                                   Exit::kReconcile, Exit::kLocked}),
                   "snapsink run /data/orders events.ndjson --final\n"
                   "         snapsink run /data/orders --kafka broker1:9092 --topic orders --group snapsink "
                   "--follow"));
  return {c, [a, keep] {
            a->keep_generations_given = keep->count() > 0;
            return CmdRun(*a);
          }};
}

}  // namespace snapsink
