// libcurl, loaded when a bucket root is first used rather than when the
// process starts.
//
// Linked the usual way, libcurl brings about 25 shared libraries into every
// process (GnuTLS, Kerberos, LDAP, SSH, IDN, ...), and the dynamic loader
// relocates and initializes all of them before main: about 10 ms of a
// 20 ms start, for every `snapsink` run that never touches a bucket (most
// of them). So the S3 client calls libcurl through the function table
// below, filled by dlopen on first use; the headers are libcurl's own, so
// the types and constants are checked as before.
#pragma once

#include <curl/curl.h>

#include <string>

namespace snapsink {

struct CurlLibrary {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_reset) easy_reset;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_easy_setopt) easy_setopt;    // variadic, as declared
  decltype(&::curl_easy_getinfo) easy_getinfo;  // variadic, as declared
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_version_info) version_info;
};

// The loaded library (loaded and curl_global_init'ed once per process, on
// the first call, and never unloaded), or nullptr with *error saying what
// failed and what to install. Thread-safe.
const CurlLibrary* Curl(std::string* error);

}  // namespace snapsink
