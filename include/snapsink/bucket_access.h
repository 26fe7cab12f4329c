// How this process reaches a root in an S3 bucket ("s3://BUCKET/PREFIX";
// docs/BUCKET.md), in place of the AWS_* variables, and a bounded local
// cache of the objects its reads fetch.
#pragma once

#include <cstdint>
#include <string>

#include "snapsink/status.h"

namespace snapsink::api {

struct BucketAccess {
  // An empty field keeps its variable's: AWS_ENDPOINT_URL, AWS_REGION,
  // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (a key pair given here drops
  // AWS_SESSION_TOKEN, which goes with the variables' pair).
  std::string endpoint;
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;  // never in a message
  // A cache of every object read but CURRENT (those are written once, so a
  // cached one never goes stale): whole objects, ranges of snapshot blocks,
  // sizes. Shared by the processes naming the same directory.
  bool cache = false;
  std::string cache_dir;     // "" = $TMPDIR (else /tmp)/snapsink-cache-<uid>
  uint64_t cache_bytes = 0;  // 0 = 1 GiB; least recently used entries go past it
  // Gc (and a follower's gc) in a bucket cannot see readers on other
  // machines: it keeps every generation replaced, and every object written,
  // less than this long ago (by the objects' Last-Modified and this
  // machine's clock). -1 = 1 hour; 0 = no age rule.
  int64_t gc_min_age_ms = -1;

  // Every field equal (a root opened twice in one process must be given the same access).
  bool operator==(const BucketAccess&) const = default;
};

// Named once per root, before it is first opened in this process (Sink,
// Reader, Server). Errors: InvalidArgument (path is not s3://BUCKET/PREFIX,
// or it was opened already with other access).
Status UseBucketAccess(const std::string& path, const BucketAccess& access);

}  // namespace snapsink::api
