// A small S3 client over libcurl: path-style addressing, requests signed by
// libcurl's own SigV4 (CURLOPT_AWS_SIGV4), the few operations a root in a
// bucket needs. Thread-safe: each request takes a curl handle from a pool
// (so connections are reused).
//
// Every write is conditional: PutCreateOnly (If-None-Match: *) or PutIfMatch
// (If-Match on an ETag). A conditional PUT whose answer is lost (timeout,
// reset, 5xx: RGW answers 500 to many losers of an If-Match race) has an
// unknown outcome: it returns OK with S3PutOutcome::kUnknown and the caller
// re-reads the object before deciding, never assumes. Idempotent requests
// (GET, HEAD, DELETE, LIST), and a PUT that never reached the server, are
// retried on transient failures with backoff, a bounded number of times in a
// bounded time (S3Config::max_attempts, retry_for_ms).
//
// Errors: NotFound (a missing object, named), InvalidArgument (a missing
// bucket, refused credentials or a bad request, naming what to check), Locked (a
// precondition failed: a lost race), Corruption (a short ranged read),
// IOError (the server stayed unreachable or failing; how many attempts).
// No message holds the secret key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/s3/s3_config.h"
#include "engine/status.h"

namespace snapsink {

struct S3ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes
  int64_t last_modified_ms = 0;  // the listing's LastModified (the server's clock), Unix ms; 0 if absent
};

enum class S3PutOutcome {
  kStored,              // the server answered 200: this body is the object now
  kPreconditionFailed,  // 412: the object exists (create-only) or has another ETag (If-Match)
  kUnknown,             // the answer was lost or was a 5xx: re-read to know
};

class S3Client {
 public:
  explicit S3Client(S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Config& config() const { return config_; }

  // PUT /BUCKET: OK when created or already ours.
  Status CreateBucket(const std::string& bucket);

  Status Get(const std::string& bucket, const std::string& key, std::string* body, std::string* etag);
  // Exactly n bytes at offset, or Corruption when the object is shorter.
  Status GetRange(const std::string& bucket, const std::string& key, uint64_t offset, size_t n, std::string* out);
  // GET with If-None-Match: etag. *modified = false on 304 (body and
  // new_etag untouched); otherwise the object and its ETag.
  Status GetIfNoneMatch(const std::string& bucket, const std::string& key, const std::string& etag, bool* modified,
                        std::string* body, std::string* new_etag);
  // A 404 is asked once more by a listing of the bucket, to name a missing
  // bucket, unless !name_missing_bucket (whether the object exists is all
  // the caller asks).
  Status Head(const std::string& bucket, const std::string& key, uint64_t* size, std::string* etag,
              bool name_missing_bucket = true);

  // PUT with If-None-Match: *. OK with *outcome for every answer that says
  // something about the object (stored, exists, unknown); etag set when stored.
  Status PutCreateOnly(const std::string& bucket, const std::string& key, std::string_view data,
                       S3PutOutcome* outcome, std::string* etag);
  // PUT with If-Match: etag (quotes stripped: RGW never matches a quoted one).
  Status PutIfMatch(const std::string& bucket, const std::string& key, std::string_view data,
                    const std::string& etag, S3PutOutcome* outcome, std::string* new_etag);

  // DELETE: OK when deleted or missing.
  Status Delete(const std::string& bucket, const std::string& key);

  // ListObjectsV2 under prefix, every page (continuation tokens). With a
  // delimiter, keys holding it past the prefix are rolled up into
  // *common_prefixes (may be null without a delimiter). page_size is max-keys.
  // first_page_only: one request, whether the listing goes on or not (does
  // anything exist under prefix?).
  Status List(const std::string& bucket, const std::string& prefix, const std::string& delimiter,
              std::vector<S3ObjectInfo>* objects, std::vector<std::string>* common_prefixes, int page_size = 1000,
              bool first_page_only = false);

  struct Request;
  struct Response;

 private:
  struct Pool;
  // One attempt, its timeouts cut to time_left_ms; never fails (the
  // outcome is in *resp).
  void Perform(const Request& req, long time_left_ms, Response* resp);
  // Perform with retries of transient failures (S3Config: attempts, time);
  // a conditional PUT stops at the first answer that may follow the server
  // acting (resp->unknown).
  void Call(const Request& req, Response* resp);
  // The Status of a final answer that is not the expected one.
  Status ErrorOf(const Request& req, const Response& resp) const;

  S3Config config_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace snapsink
