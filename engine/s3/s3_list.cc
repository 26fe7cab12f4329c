// S3Client::List: ListObjectsV2, page after page, read with pugixml.
#include <pugixml.hpp>

#include "engine/s3/s3_client.h"
#include "engine/timeutil.h"
#include "engine/s3/s3_request.h"
#include "engine/s3/s3_uri.h"

namespace snapsink {

Status S3Client::List(const std::string& bucket, const std::string& prefix, const std::string& delimiter,
                      std::vector<S3ObjectInfo>* objects, std::vector<std::string>* common_prefixes,
                      int page_size, bool first_page_only) {
  objects->clear();
  if (common_prefixes != nullptr) common_prefixes->clear();
  std::string token;
  for (;;) {
    std::vector<std::pair<std::string, std::string>> params = {
        {"list-type", "2"}, {"prefix", prefix}, {"max-keys", std::to_string(page_size)}};
    if (!delimiter.empty()) params.emplace_back("delimiter", delimiter);
    if (!token.empty()) params.emplace_back("continuation-token", token);
    Request req;
    req.method = "GET";
    req.bucket = bucket;
    req.query = CanonicalQuery(std::move(params));
    Response resp;
    Call(req, &resp);
    if (resp.curl_code != 0 || resp.status != 200) return ErrorOf(req, resp);
    pugi::xml_document doc;
    const pugi::xml_parse_result parsed = doc.load_buffer(resp.body.data(), resp.body.size());
    const pugi::xml_node result = doc.child("ListBucketResult");
    if (!parsed || !result) {
      return Status::IOError("s3://" + bucket + "/" + prefix + ": the listing is not a ListBucketResult (" +
                             std::string(parsed.description()) + ")");
    }
    for (pugi::xml_node c = result.child("Contents"); c; c = c.next_sibling("Contents")) {
      int64_t modified = 0;
      if (!ParseRfc3339Ms(c.child_value("LastModified"), &modified)) modified = 0;
      objects->push_back(S3ObjectInfo{c.child_value("Key"), c.child("Size").text().as_ullong(),
                                      StripEtagQuotes(c.child_value("ETag")), modified});
    }
    if (common_prefixes != nullptr) {
      for (pugi::xml_node p = result.child("CommonPrefixes"); p; p = p.next_sibling("CommonPrefixes")) {
        common_prefixes->push_back(p.child_value("Prefix"));
      }
    }
    if (first_page_only || !result.child("IsTruncated").text().as_bool()) return Status::OK();
    token = result.child_value("NextContinuationToken");
    if (token.empty()) {
      return Status::IOError("s3://" + bucket + "/" + prefix + ": a truncated listing without a continuation token");
    }
  }
}

}  // namespace snapsink
