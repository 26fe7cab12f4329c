# Labels for the tests of snapsink_tests, read by ctest after the discovered
# test list (CMakeLists.txt adds this file to TEST_INCLUDE_FILES). Each test
# gets one label:
#   crash  it crashes the binary at a crash point (SNAPSINK_CRASH_AT), cuts
#          power under a fault-injecting Env, or fills a disk, then reruns;
#   slow   it takes more than about a second on an idle machine (many runs
#          of the binary, thousands of windows, concurrency);
#   unit   everything else: `ctest --test-dir build -L unit` runs in seconds.
# (kafka_mock_harness's tests carry `kafka`, set where they are discovered.)
# A test is matched by its full name, Suite.Test (with a parameterized
# suite's prefix and /N suffix). A new test is `unit` unless named below:
# if it is slow, add it to SNAPSINK_SLOW_TESTS.

set(SNAPSINK_CRASH_TESTS
  "Crash"             # IngestCrashTest, PublishCrashTest, InitCrash, ...CrashTest
  "PowerCut"          # PowerCutSweep, PowerCutLmdb, PowerCutTest, RollbackPowerCutTest
  "^FullDisk\\."
  "^HalfRenamedSnapshot\\."
  "^NeverCommittedBackfillEnv\\."
)

set(SNAPSINK_SLOW_TESTS
  "^CliGolden\\."
)

function(snapsink_label_tests tests)
  string(JOIN "|" crash ${SNAPSINK_CRASH_TESTS})
  string(JOIN "|" slow ${SNAPSINK_SLOW_TESTS})
  foreach(t IN LISTS tests)
    if(t MATCHES "${crash}")
      set(label crash)
    elseif(t MATCHES "${slow}")
      set(label slow)
    else()
      set(label unit)
    endif()
    set_tests_properties("${t}" PROPERTIES LABELS ${label})
  endforeach()
endfunction()

snapsink_label_tests("${snapsink_tests_TESTS}")
