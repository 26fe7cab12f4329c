# The Kafka tests' properties, read when ctest reads the test list.
#
# The bucket tests of kafka_scale_test (tests/kafka_bucket_test.cc) need a
# local S3 server: ctest starts one first (the fixture Rgw.StartKafka /
# Rgw.StopKafka of CMakeLists.txt, in BUILD/rgw-kafka), not the one of
# snapsink_tests' bucket tests (tests/labels.cmake): tests/run.sh runs the
# two sets in two ctest runs at once, and some of the others stop and
# restart their gateway.
foreach(t IN LISTS kafka_scale_test_TESTS)
  if(t MATCHES [=[^([A-Za-z]+/)?KafkaBucket[A-Za-z]*\.]=])
    set_tests_properties("${t}" PROPERTIES FIXTURES_REQUIRED rgw_kafka)
  endif()
endforeach()

# The Kafka tests mostly wait (session timeouts, the mock cluster's
# rebalances: about a tenth of their wall time is CPU): in one ctest run
# with the others, they start first, so that they overlap the sanitizer
# build that tests/run.sh runs in the background (run last, they left the
# cores idle at the end). tests/run.sh runs them in a ctest of their own.
foreach(t IN LISTS kafka_mock_harness_TESTS kafka_scale_test_TESTS)
  set_tests_properties("${t}" PROPERTIES COST 1000)
endforeach()
