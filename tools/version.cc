// snapsink --version: what this binary is built from.
#include <lmdb.h>
#include <zstd.h>

#include <simdjson.h>

#include "tools/cli_errors.h"

#ifndef SNAPSINK_VERSION
#define SNAPSINK_VERSION "unknown"
#endif
#ifndef SNAPSINK_BUILD_TYPE
#define SNAPSINK_BUILD_TYPE "unknown"
#endif

#define SNAPSINK_STR2(x) #x
#define SNAPSINK_STR(x) SNAPSINK_STR2(x)  // SIMDJSON_VERSION is a bare 3.0.1

namespace snapsink {

std::string VersionText() {
  int major = 0, minor = 0, patch = 0;
  mdb_version(&major, &minor, &patch);  // the library linked, not the header
  return std::string("snapsink ") + SNAPSINK_VERSION + " (" + SNAPSINK_BUILD_TYPE + " build)\n" + "LMDB " +
         std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) + ", zstd " + ZSTD_versionString() + ", simdjson " + SNAPSINK_STR(SIMDJSON_VERSION);
}

}  // namespace snapsink
