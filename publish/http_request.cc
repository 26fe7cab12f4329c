#include "publish/http_request.h"

#include <charconv>

namespace snapsink {

namespace {

constexpr std::pair<Endpoint, const char*> kEndpoints[] = {
    {Endpoint::kQuery, "/v1/query"},     {Endpoint::kWindows, "/v1/windows"}, {Endpoint::kGenerations, "/v1/generations"},
    {Endpoint::kStatus, "/v1/status"},   {Endpoint::kMetrics, "/metrics"},    {Endpoint::kHealthz, "/healthz"},
};

bool ParseU64(const std::string& s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Endpoint RouteOf(std::string_view path) {
  for (const auto& [e, p] : kEndpoints) {
    if (path == p) return e;
  }
  return Endpoint::kNone;
}

const char* EndpointPath(Endpoint e) {
  for (const auto& [x, p] : kEndpoints) {
    if (x == e) return p;
  }
  return "";
}

bool ParseQueryParams(const std::multimap<std::string, std::string>& params, QueryParams* out, std::string* error) {
  *out = QueryParams();
  for (const auto& [name, value] : params) {
    if (name != "window" && name != "metric" && name != "key" && name != "generation" && name != "format") {
      *error = "unknown parameter: " + name;
      return false;
    }
  }
  auto first = [&](const char* name) -> const std::string* {
    auto it = params.find(name);
    // find may return any of equal keys: take the first, as httplib's get_param_value.
    if (it == params.end()) return nullptr;
    return &params.equal_range(name).first->second;
  };
  if (const std::string* w = first("window")) out->window = *w;
  if (const std::string* m = first("metric")) out->metric = *m;
  if (const std::string* k = first("key")) out->key = *k;
  if (const std::string* g = first("generation"); g != nullptr && !ParseU64(*g, &out->generation)) {
    *error = "generation: " + *g + ": not a generation number";
    return false;
  }
  if (const std::string* f = first("format")) {
    if (*f == "csv") {
      out->csv = true;
    } else if (*f != "json") {
      *error = "format: " + *f + ": not json or csv";
      return false;
    }
  }
  return true;
}

}  // namespace snapsink
