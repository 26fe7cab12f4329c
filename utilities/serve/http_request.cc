#include "utilities/serve/http_request.h"

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

// A query string's '+' decodes to a space: a space where an RFC 3339 offset
// sign belongs (after the time's ':' and before a digit, as in
// "2026-10-21T12:30:00+02:00" sent unescaped) is read as '+'.
std::string OffsetSignFromQuery(std::string text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return text;
  for (size_t i = colon + 1; i + 1 < text.size(); ++i) {
    if (text[i] == ' ' && text[i + 1] >= '0' && text[i + 1] <= '9') text[i] = '+';
  }
  return text;
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
    if (name != "window" && name != "metric" && name != "key" && name != "generation" && name != "format" &&
        name != "from" && name != "to" && name != "metric-prefix" && name != "key-prefix" && name != "rollup" &&
        name != "quantile") {
      *error = "unknown parameter: " + name;
      return false;
    }
  }
  for (const auto& [name, value] : params) {
    if (params.count(name) > 1) {
      *error = name + ": given more than once (one value per parameter)";
      return false;
    }
  }
  auto first = [&](const char* name) -> const std::string* {
    auto it = params.find(name);
    return it == params.end() ? nullptr : &it->second;
  };
  api::QueryText& t = out->text;
  if (const std::string* w = first("window")) t.window = OffsetSignFromQuery(*w);
  if (const std::string* v = first("from")) t.from = OffsetSignFromQuery(*v);
  if (const std::string* v = first("to")) t.to = OffsetSignFromQuery(*v);
  if (const std::string* m = first("metric")) t.metric = *m;
  if (const std::string* k = first("key")) t.key = *k;
  if (const std::string* v = first("metric-prefix")) t.metric_prefix = *v;
  if (const std::string* v = first("key-prefix")) t.key_prefix = *v;
  if (const std::string* v = first("rollup")) t.rollup = *v;
  if (const std::string* v = first("quantile")) t.quantile = *v;
  if (const std::string* g = first("generation")) {
    // The words of `query --generation` (tools/cli_errors.cc AtLeast(1)).
    if (!ParseU64(*g, &out->generation)) {
      *error = "generation: expected a whole number of at least 1, got '" + *g + "'";
      return false;
    }
    if (out->generation == 0) {
      *error = "generation: must be at least 1, got " + *g;
      return false;
    }
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
