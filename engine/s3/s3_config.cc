#include "engine/s3/s3_config.h"

#include <cstdlib>

namespace snapsink {

namespace {

std::string Var(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

void ReplaceAll(std::string* text, const std::string& what) {
  if (what.empty()) return;
  for (size_t at = text->find(what); at != std::string::npos; at = text->find(what, at + 3)) {
    text->replace(at, what.size(), "***");
  }
}

}  // namespace

Status S3Config::FromEnvironment(S3Config* out, const Overrides& overrides) {
  S3Config c;
  c.endpoint = overrides.endpoint.empty() ? Var("AWS_ENDPOINT_URL") : overrides.endpoint;
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  std::string region = Var("AWS_REGION");
  if (region.empty()) region = Var("AWS_DEFAULT_REGION");
  if (!overrides.region.empty()) region = overrides.region;
  if (!region.empty()) c.region = region;
  c.access_key_id = overrides.access_key_id.empty() ? Var("AWS_ACCESS_KEY_ID") : overrides.access_key_id;
  c.secret_access_key = overrides.secret_access_key.empty() ? Var("AWS_SECRET_ACCESS_KEY") : overrides.secret_access_key;
  // A session token goes with the variables' key pair, not with one given in their place.
  c.session_token = Var("AWS_SESSION_TOKEN");
  if (!overrides.access_key_id.empty() || !overrides.secret_access_key.empty()) c.session_token.clear();
  c.request_log = Var("SNAPSINK_S3_REQUEST_LOG");
  if (c.endpoint.empty()) {
    return Status::InvalidArgument("AWS_ENDPOINT_URL is not set: set it (or --endpoint) to the S3 endpoint (e.g. http://127.0.0.1:7480)");
  }
  if (c.endpoint.rfind("http://", 0) != 0 && c.endpoint.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("endpoint " + c.endpoint + ": must start with http:// or https://");
  }
  if (c.access_key_id.empty()) return Status::InvalidArgument("AWS_ACCESS_KEY_ID is not set: set the access key (or --access-key-id)");
  if (c.secret_access_key.empty()) {
    return Status::InvalidArgument("AWS_SECRET_ACCESS_KEY is not set: set the secret key (or --secret-access-key-file)");
  }
  const std::string retry = Var("SNAPSINK_S3_RETRY_SECONDS");
  if (!retry.empty()) {
    char* end = nullptr;
    const double seconds = std::strtod(retry.c_str(), &end);
    if (end == retry.c_str() || *end != 0 || !(seconds >= 0) || seconds > 86400) {
      return Status::InvalidArgument("SNAPSINK_S3_RETRY_SECONDS " + retry +
                                     ": expected a number of seconds (0 to 86400), how long a failing S3 request "
                                     "is retried");
    }
    c.retry_for_ms = static_cast<long>(seconds * 1000);
  }
  *out = std::move(c);
  return Status::OK();
}

std::string S3Config::Scrub(std::string text) const {
  ReplaceAll(&text, secret_access_key);
  ReplaceAll(&text, session_token);
  return text;
}

}  // namespace snapsink
