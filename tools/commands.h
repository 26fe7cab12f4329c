// The commands of the snapsink tool (SPEC 6). Each returns a Status; main()
// turns it into the exit status with ExitCodeFor and prints its message.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "snapsink/serve.h"
#include "snapsink/status.h"
#include "tools/table.h"

namespace snapsink {

int ExitCodeFor(const Status& s);

struct InitArgs {
  std::string root;
  std::string window = "1h";
  std::string lateness;  // empty: one window
  std::string on_gap = "accept";
  std::string id_horizon = "7d";
  std::string producer_retention;  // empty: never
  std::string retain;              // empty: keep every window
  std::string max_ahead;           // 0: no limit; empty: 1d with --retain, else no limit
};
Status CmdInit(const InitArgs& a);

struct IngestArgs {
  std::string root;
  std::vector<std::string> files;
  std::string source;
  uint64_t commit_every = 10000;
  std::string on_error = "skip";
  bool quiet = false;
  bool id_from_content = false;
  bool final = false;  // run --final: the inputs will not grow (a last line without '\n' is taken or rejected)
};
Status CmdIngest(const IngestArgs& a);

struct InspectArgs {
  std::string root;
  std::string what;
  bool json = false;
  bool all = false;  // gaps: also the accepted-gap records
};
Status CmdInspect(const InspectArgs& a);

struct SealArgs {
  std::string root;
  std::vector<std::string> windows;
  bool all = false;
};
Status CmdSeal(const SealArgs& a);
Status CmdPublish(const std::string& root);

struct RunArgs {
  IngestArgs ingest;
  bool final = false;
  bool follow = false;                 // run --follow: keep reading (api::Sink::Follow)
  std::string publish_every = "10s";   // --follow: publish at most this often
  std::string poll = "1s";             // --follow: longest sleep between passes
  std::string serve;                   // --follow --serve HOST:PORT: also serve HTTP
  uint64_t keep_generations = 2;       // --follow: gc after each publish keeps this many
  bool keep_generations_given = false;
  // run --kafka BROKERS --topic T --group G: consume a topic (tools/cmd_kafka.cc)
  std::string kafka, topic, group;
  std::string kafka_start = "earliest";
  std::vector<std::string> kafka_config;  // KEY=VALUE, as kcat -X
  std::string state;                      // --state DIR: per-partition states, shared ROOT (SPEC 12)
  uint64_t checkpoint_every = 100000;     // --checkpoint-every N: offsets between a partition's checkpoints
};
Status CmdRun(const RunArgs& a);
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
  uint64_t generation = 0;
  OutputFormat format = OutputFormat::kTable;
};
Status CmdQuery(const QueryArgs& a);

Status CmdVerify(const std::string& root);
Status CmdGc(const std::string& root, uint64_t keep_generations);
// gc --producers-idle D: retires producers idle for D of event time.
Status CmdRetireProducers(const std::string& root, const std::string& idle);
// "0" or a duration (>= 0) for --retain and --max-ahead; their display.
bool ParseHistoryDuration(const std::string& text, int64_t* ms);
std::string RetainText(int64_t ms);    // "every window" for 0
std::string MaxAheadText(int64_t ms);  // "no limit" for 0
// gc --retain D / --max-ahead D: changes the history settings (empty: unchanged).
Status CmdSetHistory(const std::string& root, const std::string& retain, const std::string& max_ahead);
Status CmdRollback(const std::string& root, uint64_t generation, bool dry_run);
Status CmdUpgrade(const std::string& root, bool dry_run);

struct BackfillArgs {
  std::string root;
  uint64_t version = 0;
  std::vector<std::string> files;
  std::string source;
  std::string from, to;
  uint64_t commit_every = 10000;
  bool quiet = false;
  bool dry_run = false;  // print the per-window impact, change nothing
};
Status CmdBackfill(const BackfillArgs& a);

struct ServeArgs {
  std::string root;
  api::ServeOptions options;  // listen, threads, max_connections, max_request_bytes
  std::string read_timeout = "5s", write_timeout = "5s", keep_alive_timeout = "5s";
  std::string access_log;  // empty: stderr
  bool quiet = false;      // no access log
};
Status CmdServe(const ServeArgs& a);
// Gives a server the tool's window syntax (tools/window_arg.h) for ?window=.
void UseToolWindowSyntax(api::ServeOptions* o);

// SIGTERM/SIGINT as an event: construct before starting threads (it blocks
// the signals in this thread, which they inherit); OnSignal runs fn on a
// thread of its own at the first signal.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  void OnSignal(std::function<void()> fn);
  // Joins the signal thread (after fn, if a signal came): call it before
  // what fn uses is destroyed.
  void Finish();

 private:
  sigset_t set_;
  std::thread thread_;
  std::atomic<bool> done_{false};
};

}  // namespace snapsink

namespace snapsink {

// status ROOT [--json]: see api::ReadOnlySink::GetStatus.
// html: also write the status page (sink/status_page.h) to this file ("": none).
Status CmdStatus(const std::string& root, bool json, const std::string& html = "");
// metrics ROOT: see api::ReadOnlySink::MetricsText.
Status CmdMetrics(const std::string& root);

// gaps ROOT accept --producer P [--epoch E] [--range LO..HI]: see api::Sink::AcceptGaps.
struct GapsArgs {
  std::string root;
  std::string action;
  std::string producer;
  std::string source;  // instead of producer: accept lost positions of a source (Sink::AcceptSourceGap)
  std::optional<uint32_t> epoch;
  std::string range;
};
Status CmdGaps(const GapsArgs& a);

}  // namespace snapsink
