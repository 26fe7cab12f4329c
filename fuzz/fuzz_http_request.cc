// libFuzzer: the request path of `serve` up to the root: the request target
// (path?query) decoded by httplib as the server does (decode_url of the
// path, parse_query_text of the query), routed (RouteOf), and for
// /v1/query its parameters (ParseQueryParams) and window (ParseWindowName).
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/timeutil.h"
#include "utilities/serve/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string target(reinterpret_cast<const char*>(data), size);
  const size_t q = target.find('?');
  const std::string path = httplib::detail::decode_url(target.substr(0, q), false);
  httplib::Params params;
  if (q != std::string::npos) httplib::detail::parse_query_text(target.substr(q + 1), params);
  const snapsink::Endpoint e = snapsink::RouteOf(path);
  if (e != snapsink::Endpoint::kNone && snapsink::RouteOf(snapsink::EndpointPath(e)) != e) std::abort();
  snapsink::QueryParams p;
  std::string error;
  if (snapsink::ParseQueryParams(params, &p, &error)) {
    int64_t ms;
    if (p.text.window) (void)snapsink::ParseWindowName(*p.text.window, &ms);
  } else if (error.empty()) {
    std::abort();  // a refusal always says why (the 400's message)
  }
  return 0;
}
