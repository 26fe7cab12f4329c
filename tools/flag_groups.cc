#include "tools/flag_groups.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "snapsink/bucket_access.h"
#include "snapsink/sink.h"
#include "snapsink/utilities/parse.h"
#include "snapsink/utilities/query_text.h"

#include "tools/cli_errors.h"
#include "utilities/status_macros.h"

namespace snapsink {

CLI::Option* AddRoot(CLI::App* c, std::string* root) {
  CLI::Option* o = c->add_option("ROOT", *root, "The root directory (made by snapsink init)")->required();
  AddBucketAccess(c, root);
  return o;
}

namespace {

struct BucketFlags {
  const std::string* root = nullptr;
  std::string endpoint, region, access_key_id, secret_file;
  bool cache = false;
  std::string cache_dir, cache_size;
  std::string min_age;
};

// The flags of each command, by its subcommand (the commands live as long as main).
std::map<const CLI::App*, std::unique_ptr<BucketFlags>>& AllBucketFlags() {
  static auto* all = new std::map<const CLI::App*, std::unique_ptr<BucketFlags>>;
  return *all;
}

// The secret, from its file: one line (a trailing newline is not part of it).
Status ReadSecretFile(const std::string& path, std::string* secret) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    return Status::InvalidArgument("--secret-access-key-file " + path + ": cannot be read (" + std::strerror(errno) +
                                   ")");
  }
  *secret = text.str();
  while (!secret->empty() && (secret->back() == '\n' || secret->back() == '\r')) secret->pop_back();
  if (secret->empty()) return Status::InvalidArgument("--secret-access-key-file " + path + ": empty");
  return Status::OK();
}

}  // namespace

void AddBucketAccess(CLI::App* c, const std::string* root) {
  auto& f = AllBucketFlags()[c];
  f = std::make_unique<BucketFlags>();
  f->root = root;
  const char* group = "A root in a bucket (s3://BUCKET/PREFIX)";
  c->add_option("--endpoint", f->endpoint, "The S3 endpoint, e.g. http://s3.example:7480 (default AWS_ENDPOINT_URL)")
      ->group(group);
  c->add_option("--region", f->region, "The region requests are signed for (default AWS_REGION, else us-east-1)")
      ->group(group);
  c->add_option("--access-key-id", f->access_key_id, "The access key (default AWS_ACCESS_KEY_ID)")->group(group);
  c->add_option("--secret-access-key-file", f->secret_file,
                "A file holding the secret key (default AWS_SECRET_ACCESS_KEY); never printed")
      ->group(group);
}

void AddBucketCache(CLI::App* c) {
  BucketFlags* f = AllBucketFlags().at(c).get();
  f->cache = true;
  const char* group = "A root in a bucket (s3://BUCKET/PREFIX)";
  c->add_option("--cache-dir", f->cache_dir,
                "A local cache of the objects read (default $TMPDIR/snapsink-cache-<uid>); shared by processes")
      ->group(group);
  c->add_option("--cache-size", f->cache_size,
                "Most bytes the cache holds, least recently used out first (default 1G; K, M, G, T)")
      ->group(group);
}

void AddBucketGcMinAge(CLI::App* c) {
  c->add_option("--min-age", AllBucketFlags().at(c)->min_age,
                "A root in a bucket: also keep every generation replaced, and every object written, less than this "
                "long ago (default 1h; 0: none), for readers on other machines and uploads in flight")
      ->group("A root in a bucket (s3://BUCKET/PREFIX)");
}

bool ParseByteSize(const std::string& text, uint64_t* bytes) {
  size_t end = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  if (end == 0 || end > 18) return false;
  uint64_t v = std::stoull(text.substr(0, end));
  std::string unit = text.substr(end);
  if (unit.size() == 3 && unit.substr(1) == "iB") unit = unit.substr(0, 1);
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else {
    return false;
  }
  if (v > (UINT64_MAX >> shift)) return false;
  *bytes = v << shift;
  return true;
}

Status UseBucketAccess(const CLI::App* c) {
  auto it = AllBucketFlags().find(c);
  if (it == AllBucketFlags().end()) return Status::OK();
  const BucketFlags& f = *it->second;
  const bool in_bucket = f.root->rfind("s3://", 0) == 0;
  if (!in_bucket) {
    const std::pair<const char*, const std::string*> given[] = {
        {"--endpoint", &f.endpoint},   {"--region", &f.region},         {"--access-key-id", &f.access_key_id},
        {"--secret-access-key-file", &f.secret_file}, {"--cache-dir", &f.cache_dir}, {"--cache-size", &f.cache_size},
        {"--min-age", &f.min_age}};
    for (const auto& [flag, value] : given) {
      if (!value->empty()) {
        return Status::InvalidArgument(std::string(flag) + ": goes with a root in a bucket (s3://BUCKET/PREFIX), not " +
                                       *f.root);
      }
    }
    return Status::OK();
  }
  api::BucketAccess access;
  access.endpoint = f.endpoint;
  access.region = f.region;
  access.access_key_id = f.access_key_id;
  if (!f.secret_file.empty()) SNAPSINK_RETURN_IF_ERROR(ReadSecretFile(f.secret_file, &access.secret_access_key));
  access.cache = f.cache;
  access.cache_dir = f.cache_dir;
  if (!f.cache_size.empty() && (!ParseByteSize(f.cache_size, &access.cache_bytes) || access.cache_bytes == 0)) {
    return Status::InvalidArgument("--cache-size " + f.cache_size + ": expected a size such as 512M or 1G");
  }
  if (!f.min_age.empty()) {
    int64_t ms = 0;
    if (f.min_age == "0") {
      ms = 0;
    } else if (!api::ParseDuration(f.min_age, &ms) || ms < 0) {
      return Status::InvalidArgument("--min-age " + f.min_age + ": expected a duration such as 1h, 30m (0: none)");
    }
    access.gc_min_age_ms = ms;
  }
  return api::UseBucketAccess(*f.root, access);
}

void AddBucketState(CLI::App* c, std::string* state) {
  c->add_option("--state", *state,
                "A root in a bucket (s3://BUCKET/PREFIX): the local directory of its LMDB state, the same on "
                "every run of its writer (README, A root in a bucket)");
}

Status UseBucketState(const std::string& root, const std::string& state) {
  if (state.empty()) return Status::OK();
  if (root.rfind("s3://", 0) != 0) {
    return Status::InvalidArgument("--state " + state + ": goes with a root in a bucket (s3://BUCKET/PREFIX)" +
                                   " or with run --kafka");
  }
  return api::Sink::UseStateDir(root, state);
}

std::string WindowHelp(const std::string& what) {
  return (what.empty() ? "" : what + " ") + "A window: " + api::kWindowForms;
}

std::string Footer(const std::string& exit_line, const std::string& example) {
  return exit_line + "\nExample: " + example;
}

std::string CommonExitLine() {
  return ExitStatusLine({Exit::kOk, Exit::kFailure, {Exit::kLocked, "root locked by another writer"}});
}

const char kEventFields[] =
    "Input: NDJSON, one event object per line; fields (docs/EVENTS.md):\n"
    "  producer  string 1..128 bytes; required with seq\n"
    "  epoch     integer 0..2^32-1; default 0 (a higher epoch fences lower ones)\n"
    "  seq       integer 0..2^63-1; required unless id (or --id-from-content) dedups the event\n"
    "  id        string 1..128 bytes; dedup key of an event without seq\n"
    "  ts        RFC 3339 string or integer ms since the Unix epoch; required\n"
    "  metric    string 1..128 bytes; required\n"
    "  key       string 0..256 bytes; default \"\"\n"
    "  value     JSON number, at most 6 decimal places; default 1\n"
    "  op        \"add\" or \"retract\"; default \"add\"\n"
    "Each line counts once: lines = applied + duplicates + fenced + rejected + ignored; bad lines go to "
    "ROOT/rejects/<source>.ndjson.\n";

void AddSource(CLI::App* c, std::string* source) {
  c->add_option("--source", *source, "Source name (default: the path as given; one FILE only)");
}

void AddCommitEvery(CLI::App* c, uint64_t* commit_every) {
  c->add_option("--commit-every", *commit_every, "Lines per transaction (default " + std::to_string(api::kDefaultCommitEvery) + ")")->check(AtLeast(1));
}

void AddInputFlags(CLI::App* c, IngestArgs* a) {
  AddSource(c, &a->source);
  AddCommitEvery(c, &a->commit_every);
  c->add_option("--on-error", a->on_error,
                "skip (default): reject bad lines to rejects/; stop: " + ExitText(Exit::kBadInput))
      ->check(OneOf({"skip", "stop"}));
}

void AddQuietProgress(CLI::App* c, bool* quiet) { c->add_flag("--quiet", *quiet, "No progress on stderr"); }

void AddIdFromContent(CLI::App* c, bool* id_from_content) {
  c->add_flag("--id-from-content", *id_from_content,
              "Events without seq or id are deduplicated by a hash of their content");
}

CLI::Option* AddFollowFlags(CLI::App* c, RunArgs* a) {
  c->add_flag("--follow", a->follow,
              "Keep reading: appended lines of each FILE (following rotation), every *.ndjson appearing in each "
              "DIR; seal as the watermark closes windows; stop on SIGTERM/SIGINT");
  c->add_option("--publish-every", a->publish_every, "--follow: publish at most this often (default 10s)");
  c->add_option("--poll", a->poll, "--follow: longest sleep between reads when inotify says nothing (default 1s)");
  CLI::Option* keep = c->add_option("--keep-generations", a->keep_generations,
                                    "--follow: gc after each publish keeps this many newest generations, the "
                                    "current one and every one a reader holds (default 2)")
                          ->check(AtLeast(1));
  c->add_option("--serve", a->serve,
                "--follow: also serve HTTP on a loopback HOST:PORT, or PORT (loopback), as snapsink serve but "
                "without TLS, tokens or access log: use snapsink serve for those");
  return keep;
}

void AddKafkaFlags(CLI::App* c, KafkaArgs* a) {
  c->add_option("--kafka", a->brokers,
                "Instead of FILE: consume a Kafka topic from these bootstrap brokers (host:port,...); each "
                "partition P is the source kafka:T/P, its offset kept in the root (README, Kafka)");
  c->add_option("--topic", a->topic, "--kafka: the topic T");
  c->add_option("--group", a->group, "--kafka: the consumer group G");
  c->add_option("--kafka-start", a->start,
                "--kafka: where a partition the root has never seen starts: earliest (default) or latest")
      ->check(OneOf({"earliest", "latest"}));
  c->add_option("--kafka-config", a->config,
                "--kafka: a librdkafka property KEY=VALUE (repeatable, as kcat -X); those that would let Kafka "
                "decide a position (enable.auto.commit, auto.offset.reset, ...) are refused");
  c->add_option("--kafka-timeout", a->timeout,
                "--kafka: with no broker answering this long after the start, exit 1 (\"no broker reachable at "
                "BROKERS\"; default 30s; 0: wait as long as it takes)");
  c->add_option("--on-split-producer", a->on_split_producer,
                "--kafka: a producer split over partitions (its seqs on two overlap: records not keyed by "
                "producer; a key that moved when partitions were added is not split): stop "
                "(default; " + ExitText(Exit::kGap) + " naming the producer and partitions, nothing of that "
                "partition's batch applied) or warn (go on; status and metrics list it)")
      ->check(OneOf({"stop", "warn"}));
  c->add_option("--state", a->state,
                "--kafka: many processes share the topic (README, Running many processes): each partition's "
                "state lives in its own LMDB environment under this local DIR, fenced by owner epochs in ROOT");
  c->add_option("--checkpoint-every", a->checkpoint_every,
                "--state: a checkpoint of a partition's state into ROOT once its position has moved N offsets "
                "past the last one (default 100000; 0: only when the partition is closed), and always when "
                "it is closed cleanly")
      ->check(CLI::NonNegativeNumber);
}

void AddServeLimits(CLI::App* c, ServeArgs* a) {
  c->add_option("--threads", a->options.threads,
                "Answers (queries, the status page) worked on at once (default 8)")
      ->check(CLI::Range(1, 256));
  c->add_option("--max-connections", a->options.max_connections,
                "Connections in service at once, a thread each; beyond: 503 and closed unread (default 512)")
      ->check(CLI::Range(1, 65536));
  c->add_option("--header-timeout", a->header_timeout,
                "A request head (line and headers) must be complete this long after its first byte; else 408 and "
                "closed (default 10s)");
  c->add_option("--body-timeout", a->body_timeout,
                "Accepted for compatibility, no effect: no endpoint reads a request body (one declared is refused "
                "at once, unread)");
  c->add_option("--read-timeout", a->read_timeout,
                "A client silent this long mid-request is answered 400, then closed after the keep-alive timeout "
                "(default 5s)");
  c->add_option("--write-timeout", a->write_timeout,
                "A client not taking the answer for this long is disconnected (default 5s)");
  c->add_option("--keep-alive-timeout", a->keep_alive_timeout,
                "An idle keep-alive connection is closed after this, whole seconds (default 5s)");
  c->add_option("--max-request-bytes", a->options.max_request_bytes,
                "Largest request body; beyond: 413 (default 65536; request line: 8 KiB, beyond: 414)")
      ->check(AtLeast(1));
  c->add_option("--max-header-bytes", a->options.max_header_bytes,
                "Largest request head (request line and headers); beyond: 431 and closed, before the token is "
                "checked (default 65536, 64 KiB)")
      ->check(AtLeast(1));
  c->add_option("--max-answer-bytes", a->options.max_answer_bytes,
                "Largest answer of /v1/query; beyond: 413 naming the limit and how to narrow the query "
                "(default 33554432, 32 MiB)")
      ->check(AtLeast(1));
  c->add_option("--max-rows", a->options.max_rows,
                "Most rows in an answer of /v1/query; beyond: 413 naming the limit and how to narrow the query "
                "(default 1000000)")
      ->check(AtLeast(1));
}

}  // namespace snapsink
