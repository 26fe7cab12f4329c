// Where an S3 client sends its requests and how it signs them: the standard
// AWS variables, read once. The secret is kept here and handed to libcurl
// only (CURLOPT_PASSWORD); no message of the client or the bucket Env holds
// it (S3Config::Scrub removes it from any text that might).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace snapsink {

struct S3Config {
  std::string endpoint;           // AWS_ENDPOINT_URL, e.g. http://127.0.0.1:7480 (path-style addressing)
  std::string region = "us-east-1";  // AWS_REGION (else AWS_DEFAULT_REGION)
  std::string access_key_id;      // AWS_ACCESS_KEY_ID
  std::string secret_access_key;  // AWS_SECRET_ACCESS_KEY
  std::string session_token;      // AWS_SESSION_TOKEN (optional)

  // Transient failures (refused, reset or stalled connections, timeouts,
  // 5xx, 429) are retried with exponential backoff from retry_base_ms
  // (doubled each time, capped at 2 s, with jitter) until max_attempts
  // attempts or retry_for_ms since the first attempt, whichever comes first
  // (SNAPSINK_S3_RETRY_SECONDS sets retry_for_ms): a gateway restarting for
  // a few seconds is waited for, one that stays away ends the request in
  // bounded time. An attempt is abandoned when it cannot connect in
  // connect_timeout_ms or when nothing moves for stall_timeout_ms (both cut
  // to what is left of retry_for_ms); a slow but moving upload is not.
  int max_attempts = 40;
  int retry_base_ms = 50;
  long retry_for_ms = 60000;
  long connect_timeout_ms = 5000;
  long stall_timeout_ms = 30000;

  // SNAPSINK_S3_REQUEST_LOG: a file each request is appended to, one line
  // "METHOD s3://BUCKET/KEY[?QUERY] [bytes=A-B] STATUS" (no header, no
  // key); "" = none. How the tests count requests, and an operator's view
  // of what a command asks of the bucket.
  std::string request_log;

  // Test-only fault hook: called after the server answered a request
  // ("PUT", "GET", ...; the object's key); returning true discards that
  // answer, as if the connection was reset after the server acted.
  std::function<bool(std::string_view method, std::string_view key)> drop_answer;

  // What a command line gives in place of the AWS_* variables ("" = the variable's).
  struct Overrides {
    std::string endpoint;           // --endpoint
    std::string region;             // --region
    std::string access_key_id;      // --access-key-id
    std::string secret_access_key;  // --secret-access-key-file's contents
  };

  // Reads the AWS_* variables (and SNAPSINK_S3_RETRY_SECONDS), each AWS_*
  // overridden by a non-empty field of overrides. InvalidArgument naming the
  // missing variable (and its flag) when the endpoint or the key pair is not
  // set, or a value is malformed.
  static Status FromEnvironment(S3Config* out, const Overrides& overrides = {});

  // text with every occurrence of the secret (and the session token)
  // replaced by "***": applied to every message built from a server's or
  // libcurl's words before it leaves the client.
  std::string Scrub(std::string text) const;
};

}  // namespace snapsink
