// snapsink public API: what the library was built with.
#pragma once

#include <string>

namespace snapsink::api {

// The versions of the libraries the engine is linked with, as loaded at run
// time where they say so: "LMDB 0.9.31, zstd 1.5.5, simdjson 3.6.0".
std::string LibraryVersions();

}  // namespace snapsink::api
