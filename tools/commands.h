// The arguments of the tool's commands, as their flags fill them (the flag
// groups of tools/flag_groups.h bind to these), and the few helpers more than
// one command file calls. Each command's own code is file-local in
// tools/cmd_<command>.cc; main() wires them through tools/command.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "snapsink/utilities/serve.h"
#include "snapsink/status.h"
#include "tools/table.h"

namespace snapsink {

struct InitArgs {
  std::string root;
  std::string window = "1h";
  std::string lateness;  // empty: one window
  std::string on_gap = "accept";
  std::string id_horizon = "7d";
  std::string producer_retention;  // empty: never
  std::string retain;              // empty: keep every window
  std::string max_ahead;           // 0: no limit; empty: 1d with --retain, else no limit
  std::vector<std::string> metrics;  // --metric NAME:KIND[:ACCURACY], each
};

struct IngestArgs {
  std::string root;
  std::vector<std::string> files;
  std::string source;
  uint64_t commit_every = api::kDefaultCommitEvery;
  std::string on_error = "skip";
  bool quiet = false;
  bool id_from_content = false;
  bool final = false;  // run --final: the inputs will not grow (a last line without '\n' is taken or rejected)
};

struct InspectArgs {
  std::string root;
  std::string what;
  bool json = false;
  bool all = false;  // gaps: also the accepted-gap records
};

struct SealArgs {
  std::string root;
  std::string state;  // --state DIR: a root in a bucket's local state
  std::vector<std::string> windows;
  bool all = false;
};

// run --kafka BROKERS --topic T --group G: a topic as run's source
// (tools/cmd_run_kafka.cc); its flag group is AddKafkaFlags.
struct KafkaArgs {
  std::string brokers, topic, group;
  std::string start = "earliest";
  std::vector<std::string> config;    // KEY=VALUE, as kcat -X
  std::string state;                  // --state DIR: per-partition states, shared ROOT (SPEC 12)
  uint64_t checkpoint_every = 100000; // --checkpoint-every N: offsets between a partition's checkpoints
  std::string timeout = "30s";        // --kafka-timeout D: how long to wait for a first broker
  std::string on_split_producer;      // --on-split-producer stop|warn ("": not given, stop)
};

// run's arguments: what every source shares (the follow cadence, --final)
// and each source's own flag group (files and standard input: ingest's
// FILE... and input flags; Kafka: kafka). tools/cmd_run.cc picks the
// source from a table.
struct RunArgs {
  IngestArgs ingest;
  bool final = false;
  bool follow = false;                 // run --follow: keep reading (api::Sink::Follow)
  std::string publish_every = "10s";   // --follow: publish at most this often
  std::string poll = "1s";             // --follow: longest sleep between passes
  std::string serve;                   // --follow --serve HOST:PORT: also serve HTTP
  uint64_t keep_generations = api::kDefaultKeepGenerations;  // --follow: gc after each publish keeps this many
  bool keep_generations_given = false;
  KafkaArgs kafka;
};
// run --kafka: utilities/kafka/ (kafka::Run) with the tool's printing and signals.
Status CmdRunKafka(const RunArgs& a);

struct QueryArgs {
  std::string root;
  std::string window, metric, key;
  bool has_key = false;
  std::string from, to;                    // windows, both inclusive ("" = open)
  std::string metric_prefix, key_prefix;   // "" = every one
  std::string rollup;                      // "all" or a duration, if has_rollup
  bool has_rollup = false;
  std::string quantile;                    // "0.5,0.9,0.99" ("" = none)
  uint64_t generation = 0;
  OutputFormat format = OutputFormat::kTable;
};

// "0" or a duration (>= 0) for --retain and --max-ahead; their display.
bool ParseHistoryDuration(const std::string& text, int64_t* ms);
std::string RetainText(int64_t ms);    // "every window" for 0
std::string MaxAheadText(int64_t ms);  // "no limit" for 0

struct BackfillArgs {
  std::string root;
  uint64_t version = 0;
  std::vector<std::string> files;
  std::string source;
  std::string from, to;
  uint64_t commit_every = api::kDefaultCommitEvery;
  bool quiet = false;
  bool dry_run = false;  // print the per-window impact, change nothing
  std::string state;     // --state DIR: a root in a bucket's local state
};

struct ServeArgs {
  std::string root;
  api::ServeOptions options;  // listen, threads, max_connections, max_request_bytes
  std::string read_timeout = "5s", write_timeout = "5s", keep_alive_timeout = "5s";
  std::string header_timeout = "10s", body_timeout = "10s";
  std::string access_log;  // empty: stderr
  bool quiet = false;      // no access log
  std::string poll = "500ms";  // --poll: how often CURRENT is read again
};
// The server's errors with the flags of serve (and run --serve) for the
// ServeOptions fields they name: "--listen x: ...", not "ServeOptions::listen x: ...".
Status ServeFlagNames(const Status& s);
// ServeOptions::on_note of the CLI: "snapsink serve: NOTE" on stderr, the
// options named by their flags.
void PrintServeNote(const std::string& note);

// gaps ROOT accept --producer P [--epoch E] [--range LO..HI]: see api::Sink::AcceptGaps.
struct GapsArgs {
  std::string root;
  std::string action;
  std::string producer;
  std::string source;  // instead of producer: accept lost positions of a source (Sink::AcceptSourceGap)
  std::optional<uint32_t> epoch;
  std::string range;
  std::string state;  // --state DIR: a root in a bucket's local state
};

}  // namespace snapsink
