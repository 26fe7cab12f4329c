// S3Client's operations on single objects and buckets (List is in s3_list.cc).
#include "engine/s3/s3_client.h"

#include "engine/s3/s3_request.h"

namespace snapsink {

namespace {

S3Client::Request Make(std::string method, const std::string& bucket, const std::string& key) {
  S3Client::Request req;
  req.method = std::move(method);
  req.bucket = bucket;
  req.key = key;
  return req;
}

}  // namespace

Status S3Client::CreateBucket(const std::string& bucket) {
  Request req = Make("PUT", bucket, "");
  Response resp;
  Call(req, &resp);
  if (resp.curl_code == 0 && resp.status == 200) return Status::OK();
  if (resp.curl_code == 0 && resp.status == 409 && S3ErrorCode(resp.body) == "BucketAlreadyOwnedByYou") {
    return Status::OK();
  }
  return ErrorOf(req, resp);
}

Status S3Client::Get(const std::string& bucket, const std::string& key, std::string* body, std::string* etag) {
  Request req = Make("GET", bucket, key);
  Response resp;
  Call(req, &resp);
  if (resp.curl_code != 0 || resp.status != 200) return ErrorOf(req, resp);
  *body = std::move(resp.body);
  if (etag != nullptr) *etag = resp.etag;
  return Status::OK();
}

Status S3Client::GetRange(const std::string& bucket, const std::string& key, uint64_t offset, size_t n,
                          std::string* out) {
  out->clear();
  if (n == 0) return Status::OK();
  Request req = Make("GET", bucket, key);
  req.headers.push_back("Range: bytes=" + std::to_string(offset) + "-" + std::to_string(offset + n - 1));
  Response resp;
  Call(req, &resp);
  if (resp.curl_code != 0 || (resp.status != 206 && resp.status != 200)) return ErrorOf(req, resp);
  if (resp.status == 200) {  // the whole object: the server ignored the range
    if (resp.body.size() < offset) resp.body.clear();
    resp.body = resp.body.substr(std::min<uint64_t>(offset, resp.body.size()), n);
  }
  if (resp.body.size() != n) {
    return Status::Corruption(req.Path() + ": read " + std::to_string(resp.body.size()) + " bytes at offset " +
                              std::to_string(offset) + ", wanted " + std::to_string(n) + " (the object is shorter)");
  }
  *out = std::move(resp.body);
  return Status::OK();
}

Status S3Client::GetIfNoneMatch(const std::string& bucket, const std::string& key, const std::string& etag,
                                bool* modified, std::string* body, std::string* new_etag) {
  Request req = Make("GET", bucket, key);
  req.headers.push_back("If-None-Match: \"" + StripEtagQuotes(etag) + "\"");
  Response resp;
  Call(req, &resp);
  if (resp.curl_code == 0 && resp.status == 304) {
    *modified = false;
    return Status::OK();
  }
  if (resp.curl_code != 0 || resp.status != 200) return ErrorOf(req, resp);
  *modified = true;
  *body = std::move(resp.body);
  *new_etag = resp.etag;
  return Status::OK();
}

Status S3Client::Head(const std::string& bucket, const std::string& key, uint64_t* size, std::string* etag,
                      bool name_missing_bucket) {
  Request req = Make("HEAD", bucket, key);
  Response resp;
  Call(req, &resp);
  if (resp.curl_code != 0 || resp.status != 200) {
    // A HEAD answer has no body: a 404 cannot say whether the bucket is
    // missing, so it is asked once more by a listing of the bucket.
    if (name_missing_bucket && resp.curl_code == 0 && resp.status == 404) {
      Request probe = Make("GET", bucket, "");
      probe.query = "list-type=2&max-keys=0";
      Response presp;
      Call(probe, &presp);
      if (presp.curl_code == 0 && presp.status == 404) return ErrorOf(probe, presp);
    }
    return ErrorOf(req, resp);
  }
  if (size != nullptr) *size = resp.content_length;
  if (etag != nullptr) *etag = resp.etag;
  return Status::OK();
}

Status S3Client::PutCreateOnly(const std::string& bucket, const std::string& key, std::string_view data,
                               S3PutOutcome* outcome, std::string* etag) {
  Request req = Make("PUT", bucket, key);
  req.body = data;
  req.conditional_put = true;
  req.headers.push_back("If-None-Match: *");
  Response resp;
  Call(req, &resp);
  // 409: a conflicting conditional write ran at the same time (AWS): re-read.
  if (resp.unknown || (resp.curl_code == 0 && resp.status == 409)) {
    *outcome = S3PutOutcome::kUnknown;
    return Status::OK();
  }
  if (resp.curl_code == 0 && resp.status == 200) {
    *outcome = S3PutOutcome::kStored;
    if (etag != nullptr) *etag = resp.etag;
    return Status::OK();
  }
  if (resp.curl_code == 0 && resp.status == 412) {
    *outcome = S3PutOutcome::kPreconditionFailed;
    return Status::OK();
  }
  return ErrorOf(req, resp);
}

Status S3Client::PutIfMatch(const std::string& bucket, const std::string& key, std::string_view data,
                            const std::string& etag, S3PutOutcome* outcome, std::string* new_etag) {
  Request req = Make("PUT", bucket, key);
  req.body = data;
  req.conditional_put = true;
  req.headers.push_back("If-Match: " + StripEtagQuotes(etag));
  Response resp;
  Call(req, &resp);
  // 409: a conflicting conditional write ran at the same time (AWS): re-read.
  if (resp.unknown || (resp.curl_code == 0 && resp.status == 409)) {
    *outcome = S3PutOutcome::kUnknown;
    return Status::OK();
  }
  if (resp.curl_code == 0 && resp.status == 200) {
    *outcome = S3PutOutcome::kStored;
    if (new_etag != nullptr) *new_etag = resp.etag;
    return Status::OK();
  }
  // 412 on a changed ETag; RGW also answers 412 (AWS: 404) for a missing key.
  if (resp.curl_code == 0 && resp.status == 412) {
    *outcome = S3PutOutcome::kPreconditionFailed;
    return Status::OK();
  }
  if (resp.curl_code == 0 && resp.status == 404 && S3ErrorCode(resp.body) != "NoSuchBucket") {
    *outcome = S3PutOutcome::kPreconditionFailed;  // AWS: If-Match on a missing key
    return Status::OK();
  }
  return ErrorOf(req, resp);
}

Status S3Client::Delete(const std::string& bucket, const std::string& key) {
  Request req = Make("DELETE", bucket, key);
  Response resp;
  Call(req, &resp);
  if (resp.curl_code == 0 && (resp.status == 204 || resp.status == 200)) return Status::OK();
  if (resp.curl_code == 0 && resp.status == 404 && S3ErrorCode(resp.body) != "NoSuchBucket") return Status::OK();
  return ErrorOf(req, resp);
}

}  // namespace snapsink
