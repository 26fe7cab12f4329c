// api::LibraryVersions: the third-party headers stay here, behind the API.
#include "snapsink/version.h"

#include <lmdb.h>
#include <zstd.h>

#include <simdjson.h>

#define SNAPSINK_STR2(x) #x
#define SNAPSINK_STR(x) SNAPSINK_STR2(x)  // SIMDJSON_VERSION is a bare 3.0.1

namespace snapsink::api {

std::string LibraryVersions() {
  int major = 0, minor = 0, patch = 0;
  mdb_version(&major, &minor, &patch);  // the library linked, not the header
  return "LMDB " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) + ", zstd " +
         ZSTD_versionString() + ", simdjson " + SNAPSINK_STR(SIMDJSON_VERSION);
}

}  // namespace snapsink::api
