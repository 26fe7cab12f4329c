# The bucket tests of kafka_scale_test (tests/kafka_bucket_test.cc) need the
# local S3 server: ctest starts it first (the fixture Rgw.Start / Rgw.Stop of
# CMakeLists.txt), as for snapsink_tests' bucket tests (tests/labels.cmake).
foreach(t IN LISTS kafka_scale_test_TESTS)
  if(t MATCHES [=[^([A-Za-z]+/)?KafkaBucket[A-Za-z]*\.]=])
    set_tests_properties("${t}" PROPERTIES FIXTURES_REQUIRED rgw)
  endif()
endforeach()
