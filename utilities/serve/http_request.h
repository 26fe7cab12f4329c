// What `serve` takes from a request before it touches a root: the endpoint a
// path names and the parameters of GET /v1/query, apart from the server so
// that a fuzzer drives them in-process (fuzz/fuzz_http_request.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "snapsink/utilities/query_text.h"

namespace snapsink {

enum class Endpoint { kNone, kQuery, kWindows, kGenerations, kStatus, kMetrics, kHealthz };

// The endpoint of a request path (exact match), kNone for any other path (404).
Endpoint RouteOf(std::string_view path);
// The path of an endpoint (not kNone).
const char* EndpointPath(Endpoint e);

struct QueryParams {
  api::QueryText text;     // window, from, to, metric, key, the prefixes, rollup: as given
  uint64_t generation = 0;  // 0 = the current one
  bool csv = false;         // format=csv (default json)
};

// The decoded query parameters of GET /v1/query (first value of each name):
// false with the 400 message in *error for an unknown parameter, a
// generation that is not a decimal u64, or a format other than json/csv.
bool ParseQueryParams(const std::multimap<std::string, std::string>& params, QueryParams* out, std::string* error);

}  // namespace snapsink
