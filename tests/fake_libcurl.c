/* A stand-in libcurl.so.4 that has none of libcurl's functions, for
   tests/curl_loading_test.cc: the snapsink binary must name what to
   install instead of crashing when the library it loads is not libcurl. */
int snapsink_fake_libcurl(void) { return 0; }
