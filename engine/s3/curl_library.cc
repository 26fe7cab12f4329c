#include "engine/s3/curl_library.h"

#include <dlfcn.h>

namespace snapsink {

namespace {

// The soname of libcurl's ABI 4 (every libcurl since 7.16); Debian's
// libcurl4 package installs it.
constexpr const char* kSoname = "libcurl.so.4";

struct Loaded {
  CurlLibrary lib{};
  std::string error;  // "" when lib is usable
};

template <typename F>
bool Resolve(void* handle, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(::dlsym(handle, name));
  if (*out == nullptr && error->empty()) {
    *error = std::string("a bucket root needs libcurl, but the ") + kSoname + " loaded has no symbol " + name +
             ": install libcurl4 (7.86 or later)";
  }
  return *out != nullptr;
}

Loaded Load() {
  Loaded l;
  // RTLD_LOCAL: libcurl's symbols do not take part in later lookups.
  void* handle = ::dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    l.error = std::string("a bucket root needs libcurl, which could not be loaded (") + (why ? why : kSoname) +
              "): install libcurl4";
    return l;
  }
  CurlLibrary& c = l.lib;
  std::string& e = l.error;
  Resolve(handle, "curl_global_init", &c.global_init, &e);
  Resolve(handle, "curl_easy_init", &c.easy_init, &e);
  Resolve(handle, "curl_easy_reset", &c.easy_reset, &e);
  Resolve(handle, "curl_easy_cleanup", &c.easy_cleanup, &e);
  Resolve(handle, "curl_easy_perform", &c.easy_perform, &e);
  Resolve(handle, "curl_easy_strerror", &c.easy_strerror, &e);
  Resolve(handle, "curl_easy_setopt", &c.easy_setopt, &e);
  Resolve(handle, "curl_easy_getinfo", &c.easy_getinfo, &e);
  Resolve(handle, "curl_slist_append", &c.slist_append, &e);
  Resolve(handle, "curl_slist_free_all", &c.slist_free_all, &e);
  Resolve(handle, "curl_version_info", &c.version_info, &e);
  if (!e.empty()) return l;
  const CURLcode rc = c.global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) e = std::string("libcurl failed to initialize: ") + c.easy_strerror(rc);
  return l;
}

}  // namespace

const CurlLibrary* Curl(std::string* error) {
  static const Loaded loaded = Load();  // once, thread-safe (C++11 statics)
  if (!loaded.error.empty()) {
    if (error != nullptr) *error = loaded.error;
    return nullptr;
  }
  return &loaded.lib;
}

}  // namespace snapsink
