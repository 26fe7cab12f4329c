# The Kafka tests' properties, read when ctest reads the test list.
#
# The bucket tests of kafka_scale_test (tests/kafka_bucket_test.cc) need the
# local S3 server: ctest starts it first (the fixture Rgw.Start / Rgw.Stop of
# CMakeLists.txt), as for snapsink_tests' bucket tests (tests/labels.cmake).
foreach(t IN LISTS kafka_scale_test_TESTS)
  if(t MATCHES [=[^([A-Za-z]+/)?KafkaBucket[A-Za-z]*\.]=])
    set_tests_properties("${t}" PROPERTIES FIXTURES_REQUIRED rgw)
  endif()
endforeach()

# The Kafka tests mostly wait (session timeouts, the mock cluster's
# rebalances): they start before every other test, beside the sanitizer
# build that tests/run.sh runs in the background, which uses the cores they
# leave; run last, they left the cores idle at the end of the normal tests.
foreach(t IN LISTS kafka_mock_harness_TESTS kafka_scale_test_TESTS)
  set_tests_properties("${t}" PROPERTIES COST 1000)
endforeach()
