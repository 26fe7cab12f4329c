// snapsink --version: what this binary is built from.
#include <CLI/Version.hpp>

#include "snapsink/version.h"
#include "tools/cli_errors.h"

#ifndef SNAPSINK_VERSION
#define SNAPSINK_VERSION "unknown"
#endif
#ifndef SNAPSINK_BUILD_TYPE
#define SNAPSINK_BUILD_TYPE "unknown"
#endif

namespace snapsink {

std::string VersionText() {
  return std::string("snapsink ") + SNAPSINK_VERSION + " (" + SNAPSINK_BUILD_TYPE + " build)\n" +
         api::LibraryVersions() + ", CLI11 " + CLI11_VERSION;
}

}  // namespace snapsink
