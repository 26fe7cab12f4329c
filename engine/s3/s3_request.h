// One HTTP exchange of S3Client (its .cc files only): what is sent and what
// came back, before it becomes a Status.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/s3/s3_client.h"

namespace snapsink {

struct S3Client::Request {
  std::string method;  // GET HEAD PUT DELETE
  std::string bucket;
  std::string key;                   // "" for the bucket itself
  std::string query;                 // canonical (CanonicalQuery), "" for none
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;             // PUT only
  bool conditional_put = false;      // a lost answer is an unknown outcome, not retried

  std::string Path() const;  // s3://BUCKET/KEY, for messages
};

struct S3Client::Response {
  long status = 0;     // HTTP status; 0 when no answer arrived
  int curl_code = 0;   // CURLcode; 0 = an answer arrived
  std::string curl_error;
  bool dropped = false;  // the test hook discarded the answer
  bool no_library = false;  // libcurl could not be loaded: nothing was sent
  bool unknown = false;  // a conditional PUT may have been acted on: re-read
  int attempts = 0;
  long elapsed_ms = 0;  // from the first attempt to the end of the last
  std::string body;
  std::string etag;  // without quotes
  uint64_t content_length = 0;
};

// "\"abc\"" -> "abc" (S3 quotes ETags in headers and listings).
std::string StripEtagQuotes(std::string_view etag);

// The S3 error code of an error body (<Error><Code>NoSuchKey</Code>...), or "".
std::string S3ErrorCode(const std::string& body);

}  // namespace snapsink
