// The spelling of S3 names on the wire and in snapsink paths: RFC 3986
// percent-encoding as SigV4 signs it, the sorted query string curl's signer
// needs, and `s3://BUCKET/KEY` paths.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/status.h"

namespace snapsink {

// Every byte but A-Z a-z 0-9 - . _ ~ as %XX (and '/' kept when keep_slash).
std::string UriEncode(std::string_view s, bool keep_slash);

// name=value pairs, each side encoded, sorted by name then value, joined by
// '&' ("a=&b=x"): curl's SigV4 signs the query string as given, so it must
// already be in canonical form or the server answers 403.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> params);

// True when path is a bucket path (starts with "s3://").
bool IsBucketPath(std::string_view path);

// "s3://BUCKET/KEY" -> bucket and key ("" for "s3://BUCKET" or
// "s3://BUCKET/"). InvalidArgument naming the path when it is not one.
Status ParseBucketPath(std::string_view path, std::string* bucket, std::string* key);

}  // namespace snapsink
