// S3Client's HTTP layer: a pool of curl handles, one signed attempt, the
// retry loop and the Status of a failed answer.
#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <pugixml.hpp>
#include <random>
#include <thread>

#include "engine/s3/curl_library.h"
#include "engine/s3/s3_request.h"
#include "engine/s3/s3_uri.h"

namespace snapsink {

std::string StripEtagQuotes(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return std::string(etag);
}

std::string S3Client::Request::Path() const { return "s3://" + bucket + (key.empty() ? "" : "/" + key); }

// Handles exist only once libcurl is loaded (Call checks it first).
struct S3Client::Pool {
  std::mutex mu;
  std::vector<CURL*> idle;
  ~Pool() {
    for (CURL* h : idle) Curl(nullptr)->easy_cleanup(h);
  }
  CURL* Take() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        Curl(nullptr)->easy_reset(h);  // keeps the connection cache
        return h;
      }
    }
    return Curl(nullptr)->easy_init();
  }
  void Give(CURL* h) {
    std::lock_guard<std::mutex> lock(mu);
    idle.push_back(h);
  }
};

namespace {

// Bodies above this go through a larger upload buffer (libcurl allows up
// to 2 MB).
constexpr size_t kSmallBody = 256 * 1024;
constexpr long kUploadBuffer = 2 * 1024 * 1024;

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

struct Upload {
  std::string_view data;
  size_t pos = 0;
};

size_t ReadBody(char* buf, size_t size, size_t n, void* arg) {
  auto* up = static_cast<Upload*>(arg);
  const size_t len = std::min(size * n, up->data.size() - up->pos);
  std::memcpy(buf, up->data.data() + up->pos, len);
  up->pos += len;
  return len;
}

size_t WriteBody(char* buf, size_t size, size_t n, void* arg) {
  static_cast<std::string*>(arg)->append(buf, size * n);
  return size * n;
}

size_t Header(char* buf, size_t size, size_t n, void* arg) {
  auto* resp = static_cast<S3Client::Response*>(arg);
  std::string_view line(buf, size * n);
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
  if (name == "etag") resp->etag = StripEtagQuotes(value);
  if (name == "content-length") resp->content_length = std::strtoull(std::string(value).c_str(), nullptr, 10);
  return size * n;
}

// Nothing reached the server: any request may be sent again.
bool NothingSent(int code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY;
}

bool TransientStatus(long status) { return status == 429 || status >= 500; }

// One line of SNAPSINK_S3_REQUEST_LOG, in one write (O_APPEND: lines of
// processes sharing the file do not interleave).
void LogRequest(const S3Config& config, const S3Client::Request& req, const S3Client::Response& resp, long ms) {
  std::string line = req.method + " " + req.Path() + (req.query.empty() ? "" : "?" + req.query);
  for (const std::string& h : req.headers) {
    if (h.rfind("Range: ", 0) == 0) line += " " + h.substr(7);
    if (h.rfind("If-None-Match: \"", 0) == 0) line += " if-none-match";
  }
  if (req.method == "PUT") line += " sent=" + std::to_string(req.body.size());
  line += " " + std::to_string(ms) + "ms";
  line += " " + (resp.curl_code != 0 ? std::string("failed") : std::to_string(resp.status)) + "\n";
  line = config.Scrub(std::move(line));
  const int fd = ::open(config.request_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace

std::string S3ErrorCode(const std::string& body) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return "";
  return doc.child("Error").child_value("Code");
}

S3Client::S3Client(S3Config config) : config_(std::move(config)), pool_(std::make_unique<Pool>()) {}

S3Client::~S3Client() = default;

void S3Client::Perform(const Request& req, long time_left_ms, Response* resp) {
  const int attempts = resp->attempts;
  *resp = Response();
  resp->attempts = attempts;
  const CurlLibrary& curl = *Curl(nullptr);
  CURL* h = pool_->Take();
  std::string url = config_.endpoint + "/" + UriEncode(req.bucket, false);
  if (!req.key.empty()) url += "/" + UriEncode(req.key, true);
  if (!req.query.empty()) url += "?" + req.query;
  const std::string sigv4 = "aws:amz:" + config_.region + ":s3";
  curl_slist* headers = nullptr;
  const std::string payload_hash =
      "x-amz-content-sha256: " + Sha256Hex(req.method == "PUT" ? req.body : std::string_view());
  headers = curl.slist_append(headers, payload_hash.c_str());
  if (!config_.session_token.empty()) {
    headers = curl.slist_append(headers, ("x-amz-security-token: " + config_.session_token).c_str());
  }
  // No "Expect:" to turn 100-continue off: curl's signer would sign the
  // empty header it then does not send, and the server answers 403.
  for (const std::string& hd : req.headers) headers = curl.slist_append(headers, hd.c_str());
  char errbuf[CURL_ERROR_SIZE] = {0};
  Upload up{req.body, 0};

  curl.easy_setopt(h, CURLOPT_URL, url.c_str());
  curl.easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl.easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl.easy_setopt(h, CURLOPT_USERNAME, config_.access_key_id.c_str());
  curl.easy_setopt(h, CURLOPT_PASSWORD, config_.secret_access_key.c_str());
  curl.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl.easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // A dead or black-holed endpoint ends the attempt: no connection in
  // connect_timeout_ms, or no byte moving for stall_timeout_ms (an upload
  // that moves, however slowly, is not cut), both within the time left.
  const long left = std::max<long>(time_left_ms, 1000);
  curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, std::min(config_.connect_timeout_ms, left));
  curl.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, std::max<long>(1, std::min(config_.stall_timeout_ms, left) / 1000));
  curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl.easy_setopt(h, CURLOPT_WRITEDATA, &resp->body);
  curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, Header);
  curl.easy_setopt(h, CURLOPT_HEADERDATA, resp);
  if (req.method == "PUT") {
    curl.easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl.easy_setopt(h, CURLOPT_READFUNCTION, ReadBody);
    curl.easy_setopt(h, CURLOPT_READDATA, &up);
    curl.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    // A snapshot's megabytes go out in large sends: 64 KB (curl's default)
    // costs a read callback and a send per 64 KB.
    if (req.body.size() > kSmallBody) curl.easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, kUploadBuffer);
  } else if (req.method == "HEAD") {
    curl.easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method != "GET") {
    curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  const auto started = std::chrono::steady_clock::now();
  const CURLcode rc = curl.easy_perform(h);
  const long ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  ++resp->attempts;
  if (rc == CURLE_OK) {
    curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    if (config_.drop_answer && config_.drop_answer(req.method, req.key)) {
      const int n = resp->attempts;
      *resp = Response();
      resp->curl_code = CURLE_RECV_ERROR;
      resp->curl_error = "the answer was dropped (test fault hook)";
      resp->dropped = true;
      resp->attempts = n;
    }
  } else {
    resp->curl_code = rc;
    resp->curl_error = errbuf[0] != 0 ? errbuf : curl.easy_strerror(rc);
  }
  curl.easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl.slist_free_all(headers);
  if (!config_.request_log.empty()) LogRequest(config_, req, *resp, ms);
  if (rc == CURLE_OK) {
    pool_->Give(h);
  } else {
    curl.easy_cleanup(h);  // its connection may be half used
  }
}

void S3Client::Call(const Request& req, Response* resp) {
  resp->attempts = 0;
  std::string why;
  if (Curl(&why) == nullptr) {  // permanent: nothing to retry
    *resp = Response();
    resp->curl_code = CURLE_FAILED_INIT;
    resp->curl_error = why;
    resp->no_library = true;
    return;
  }
  thread_local std::mt19937 rng(std::random_device{}());
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto elapsed_ms = [&] {
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  };
  for (;;) {
    Perform(req, config_.retry_for_ms - elapsed_ms(), resp);
    resp->elapsed_ms = elapsed_ms();
    const bool failed_transport = resp->curl_code != 0;
    const bool transient = failed_transport || TransientStatus(resp->status);
    if (!transient) return;
    if (req.conditional_put && !(failed_transport && NothingSent(resp->curl_code))) {
      resp->unknown = true;  // the server may have stored it: the caller re-reads
      return;
    }
    if (resp->attempts >= config_.max_attempts) return;
    const int shift = std::min(resp->attempts - 1, 10);
    const int cap = std::min(config_.retry_base_ms << shift, 2000);
    std::uniform_int_distribution<int> jitter(cap / 2, cap);
    const long pause = jitter(rng);
    if (resp->elapsed_ms + pause >= config_.retry_for_ms) return;  // out of time: the last failure stands
    std::this_thread::sleep_for(std::chrono::milliseconds(pause));
  }
}

Status S3Client::ErrorOf(const Request& req, const Response& resp) const {
  const std::string what = req.Path() + ": " + req.method;
  const std::string tries = resp.attempts > 1 ? " (after " + std::to_string(resp.attempts) + " attempts in " +
                                                    std::to_string((resp.elapsed_ms + 500) / 1000) + " s)"
                                              : "";
  if (resp.no_library) return Status::IOError(what + ": " + resp.curl_error);
  if (resp.curl_code != 0) {
    return Status::IOError(
        config_.Scrub(what + " to " + config_.endpoint + " failed: " + resp.curl_error + tries +
                      ": is the S3 endpoint (AWS_ENDPOINT_URL) up and reachable?"));
  }
  const std::string code = S3ErrorCode(resp.body);
  const std::string answered =
      what + " answered HTTP " + std::to_string(resp.status) + (code.empty() ? "" : " " + code);
  switch (resp.status) {
    case 301:
    case 400:
      return Status::InvalidArgument(config_.Scrub(answered + ": check the bucket name, AWS_REGION and AWS_ENDPOINT_URL"));
    case 401:
    case 403:
      return Status::InvalidArgument(config_.Scrub(
          answered + ": the credentials were refused: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION"));
    case 404:
      if (code == "NoSuchBucket") {
        return Status::InvalidArgument(
            config_.Scrub("s3://" + req.bucket + ": no such bucket at " + config_.endpoint + ": create it or fix the root"));
      }
      return Status::NotFound(config_.Scrub(req.Path() + ": no such object"));
    case 412:
      return Status::Locked(config_.Scrub(answered + ": precondition failed"));
    case 416:
      return Status::Corruption(config_.Scrub(answered + ": the range is past the object's end"));
    default:
      return Status::IOError(config_.Scrub(answered + tries));
  }
}

}  // namespace snapsink
