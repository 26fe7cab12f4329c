// Flags and --help texts more than one command shares, each defined once:
// ROOT, the window syntax, the input flags of ingest/run/backfill, the
// follow and Kafka flags of run, the serve limits, and a command's footer.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "tools/commands.h"
#include "tools/exit_codes.h"

namespace snapsink {

// The required ROOT argument of every command but init.
CLI::Option* AddRoot(CLI::App* c, std::string* root);

// --state DIR of the commands that take a root in a bucket
// (s3://BUCKET/PREFIX): the local directory of its LMDB state.
void AddBucketState(CLI::App* c, std::string* state);
// Names state (if given) as the local state directory of the bucket root
// root (api::Sink::UseStateDir); InvalidArgument when root is not in a bucket.
Status UseBucketState(const std::string& root, const std::string& state);

// --endpoint, --region, --access-key-id, --secret-access-key-file of every
// command that takes a root (AddRoot adds them; init calls this): where a
// root in a bucket is, in place of the AWS_* variables. root is where the
// command's ROOT is parsed to.
void AddBucketAccess(CLI::App* c, const std::string* root);
// --cache-dir, --cache-size of the readers that cache a bucket's objects
// (query, serve); they also turn the cache on (default dir and size).
void AddBucketCache(CLI::App* c);
// --min-age D of gc (a root in a bucket: default 1h).
void AddBucketGcMinAge(CLI::App* c);
// Applies the flags above of the parsed command c (api::Sink::UseBucketAccess)
// before it runs; InvalidArgument naming a flag given with a local root,
// a size that does not parse or a key file that cannot be read.
Status UseBucketAccess(const CLI::App* c);
// "1073741824", "512M", "1G", "64KiB" -> bytes (K, M, G, T: powers of 1024).
bool ParseByteSize(const std::string& text, uint64_t* bytes);

// "<what> A window: <the forms of snapsink/utilities/query_text.h>" (what may be "").
std::string WindowHelp(const std::string& what);

// A command's footer: its "Exit status: ..." line, then an example.
std::string Footer(const std::string& exit_line, const std::string& example);
// The exit line of commands that take ROOT's lock and say nothing more.
std::string CommonExitLine();

// The input format in brief (ingest and run); docs/EVENTS.md has it in full.
extern const char kEventFields[];

// --source, --commit-every and --on-error of ingest and run.
void AddInputFlags(CLI::App* c, IngestArgs* a);
// --source NAME (ingest, run, backfill).
void AddSource(CLI::App* c, std::string* source);
// --commit-every N (ingest, run, backfill).
void AddCommitEvery(CLI::App* c, uint64_t* commit_every);
// --quiet: no progress on stderr (ingest, run, backfill).
void AddQuietProgress(CLI::App* c, bool* quiet);
// --id-from-content (ingest, run).
void AddIdFromContent(CLI::App* c, bool* id_from_content);

// run --follow and what goes with it: --publish-every, --poll,
// --keep-generations (its option, to tell given from default), --serve.
CLI::Option* AddFollowFlags(CLI::App* c, RunArgs* a);
// run --kafka and what goes with it: --topic, --group, --kafka-start,
// --kafka-config, --kafka-timeout, --state, --checkpoint-every (Kafka's
// flag group of run's source table, tools/cmd_run.cc).
void AddKafkaFlags(CLI::App* c, KafkaArgs* a);

// serve's limits: --threads, --max-connections, the timeouts, --max-request-bytes.
void AddServeLimits(CLI::App* c, ServeArgs* a);

}  // namespace snapsink
