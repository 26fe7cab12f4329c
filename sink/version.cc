// api::LibraryVersions: the third-party headers stay here, behind the API.
#include "snapsink/version.h"

#include <lmdb.h>
#include <zstd.h>

#include <simdjson.h>
#include <xxhash.h>
#include <fmt/core.h>
#include <boost/version.hpp>
#include <pugixml.hpp>

#include "engine/s3/curl_library.h"

#define SNAPSINK_STR2(x) #x
#define SNAPSINK_STR(x) SNAPSINK_STR2(x)  // SIMDJSON_VERSION is a bare 3.0.1
#ifndef SNAPSINK_HTTPLIB_VERSION
#define SNAPSINK_HTTPLIB_VERSION "unknown"
#endif
#ifndef SNAPSINK_PROMETHEUS_CPP_VERSION
#define SNAPSINK_PROMETHEUS_CPP_VERSION "unknown"
#endif

namespace snapsink::api {

std::string LibraryVersions() {
  int major = 0, minor = 0, patch = 0;
  mdb_version(&major, &minor, &patch);  // the library linked, not the header
  auto dotted = [](unsigned v, unsigned unit) {  // 10203 -> "1.2.3" for unit 100
    return std::to_string(v / (unit * unit)) + "." + std::to_string(v / unit % unit) + "." + std::to_string(v % unit);
  };
  // Every library the library links (CMakeLists.txt, snapsink_core); the
  // linked one where it says (LMDB, zstd, xxHash), else the header's.
  // libcurl is loaded on first use (engine/s3/curl_library.h): asked here,
  // it is loaded to say which one a bucket root would use.
  const CurlLibrary* curl = Curl(nullptr);
  const std::string curl_version = curl != nullptr ? curl->version_info(CURLVERSION_NOW)->version : "not loadable";
  return "LMDB " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) + ", zstd " +
         ZSTD_versionString() + ", simdjson " + SNAPSINK_STR(SIMDJSON_VERSION) + ", xxHash " +
         dotted(XXH_versionNumber(), 100) + ", fmt " + dotted(FMT_VERSION, 100) + ", Boost.Filesystem " +
         std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) + "." +
         std::to_string(BOOST_VERSION % 100) + ", prometheus-cpp " + SNAPSINK_PROMETHEUS_CPP_VERSION +
         ", cpp-httplib " + SNAPSINK_HTTPLIB_VERSION + ", libcurl " + curl_version +
         ", pugixml " + std::to_string(PUGIXML_VERSION / 1000) + "." + std::to_string(PUGIXML_VERSION % 1000 / 10);
}

}  // namespace snapsink::api
