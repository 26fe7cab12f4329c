#!/usr/bin/env bash
# The whole test suite: a warnings-fatal build, the benchmark smoke test, the
# normal ctest suite, the embedding example built against an install of the
# library, the libFuzzer targets (clang, a bounded number of inputs each, from
# the seed corpus in fuzz/corpus/), and, in the background from the end of
# the normal build, a build under AddressSanitizer + UBSan and ctest again
# with it. Every part runs even when an earlier one failed; the exit status
# is non-zero if any did.
# ctest runs a failed test once more; the summary line names every test that
# failed, and every test that failed once and then passed.
# The normal build is the same `build` directory, with the same flags, as
# README command 1. The bucket tests' local S3 server (tests/rgw.sh) is
# started and stopped by ctest itself, once per ctest run (fixture rgw).
set -uo pipefail
cd "$(dirname "$0")/.."
./install-deps.sh || exit 1

results=()
failed=0
# Each part's line in the summary ends with its wall time.
part() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  if "$@"; then
    results+=("PASS  $name [$((SECONDS - start)) s]")
  else
    results+=("FAIL  $name [$((SECONDS - start)) s]")
    failed=1
  fi
}

# ctest in build dir $2, as part $1; the summary line also says how many
# tests were skipped (GTEST_SKIP) and which, so a skip is never silent.
ctest_part() {
  local name=$1 dir=$2 log rc start=$SECONDS
  shift 2
  log=$(mktemp)
  echo "== $name"
  (cd "$dir" && ctest -j2 --output-on-failure --no-tests=error --repeat until-pass:2 "$@") 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  ctest_result "$name" "$log" "$rc" "$((SECONDS - start))"
}

# The summary line of a ctest part from its log, exit status and wall time.
ctest_result() {
  local name=$1 log=$2 rc=$3 seconds=$4 skipped names note=""
  skipped=$(grep -c '(Skipped)$' "$log" || true)
  if [ "$skipped" -gt 0 ]; then
    names=$(grep '(Skipped)$' "$log" | sed -E 's/^[[:space:]]*[0-9]+ - //; s/ \(Skipped\)$//' | paste -sd, - | sed 's/,/, /g')
    note=" ($skipped skipped: $names)"
  else
    note=" (0 skipped)"
  fi
  # A failure names its tests on the summary line, which is what a CI log's
  # tail shows.
  if [ "$rc" -ne 0 ]; then
    names=$(sed -n '/The following tests FAILED:/,$p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ' |
      sed -E 's/^[[:space:]]*[0-9]+ - //; s/ \([^)]*\)$//' | paste -sd, - | sed 's/,/, /g')
    [ -n "$names" ] && note="$note (failed: $names)"
  fi
  # A test that failed once and passed when ctest ran it again is named too:
  # a flaky test is a bug to find, never a silent pass.
  names=$(grep -E 'Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception)' "$log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' |
    sort -u | while read -r t; do
      sed -n '/The following tests FAILED:/,$p' "$log" | grep -qF " - $t " || echo "$t"
    done | paste -sd, - | sed 's/,/, /g')
  [ -n "$names" ] && note="$note (failed once, passed when run again: $names)"
  rm -f "$log"
  note="$note [$seconds s]"
  if [ "$rc" -eq 0 ]; then
    results+=("PASS  $name$note")
  else
    results+=("FAIL  $name$note")
    failed=1
  fi
}

build_normal() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAPSINK_WERROR=ON >/dev/null &&
    cmake --build build -j2
}

# Installs into a temporary prefix, builds examples/embed against it with
# find_package(snapsink), and runs it on the bundled sample.
embed_example() {
  local tmp
  tmp=$(mktemp -d) || return 1
  local rc=0
  cmake --install build --prefix "$tmp/prefix" >/dev/null &&
    cmake -S examples/embed -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null &&
    cmake --build "$tmp/build" &&
    "$tmp/build/embed" "$tmp/root" sample/events.ndjson | tail -n 1 &&
    "$tmp/build/embed" "$tmp/root" sample/events.ndjson >/dev/null &&
    echo "embed: run again, it goes on with the root it made" &&
    "$tmp/build/embed_serve" "$tmp/root" || rc=1
  # The same program built with pkg-config alone: snapsink.pc must name
  # everything the static library needs (the server needs cpp-httplib).
  if [ $rc -eq 0 ]; then
    local pcdir
    pcdir=$(dirname "$(find "$tmp/prefix" -name snapsink.pc | head -n 1)")
    # shellcheck disable=SC2046 # pkg-config's output is a list of flags
    g++ -O1 examples/embed/serve.cc -o "$tmp/serve_pc" $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs snapsink) &&
      "$tmp/serve_pc" "$tmp/root" >/dev/null &&
      echo "embed_serve: built with pkg-config snapsink alone" || { echo "embed_serve: pkg-config build failed"; rc=1; }
  fi
  # The write path: a crash at a commit point, a restart from the stored
  # position, and the same published rows as a clean run.
  if [ $rc -eq 0 ]; then
    "$tmp/build/embed_write" "$tmp/clean" sample/events.ndjson >"$tmp/clean.out" || rc=1
    SNAPSINK_CRASH_AT=ingest.after_commit SNAPSINK_CRASH_HIT=3 "$tmp/build/embed_write" "$tmp/crashed" \
      sample/events.ndjson >/dev/null 2>&1
    [ $? -eq 99 ] || { echo "embed_write: expected the crash point to end it (99)"; rc=1; }
    "$tmp/build/embed_write" "$tmp/crashed" sample/events.ndjson >"$tmp/crashed.out" || rc=1
    cmp "$tmp/clean.out" "$tmp/crashed.out" && [ -s "$tmp/clean.out" ] &&
      echo "embed_write: crashed and resumed from its position: $(wc -l <"$tmp/clean.out") rows equal a clean run" || rc=1
  fi
  rm -rf "$tmp"
  return $rc
}

# Warnings are errors in the normal build above; the sanitizer build (-O1,
# instrumented) looks for what happens at run time, so its warnings do not
# stop it. It is compiled by Clang: the same instrumentation in about 30%
# less CPU than GCC 12 (and the normal build stays GCC's, so both compilers
# see the code).
build_asan() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAPSINK_SANITIZE=ON \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DSNAPSINK_WERROR=OFF -DSNAPSINK_BUILD_BENCH=OFF >/dev/null &&
    cmake --build build-asan -j2
}

# The libFuzzer targets of fuzz/ in their own build directory (clang++, only
# the library sources they need), each run for a fixed number of inputs from
# its seed corpus (new inputs go to a temporary directory, not the repository).
FUZZ_RUNS=${FUZZ_RUNS:-100000}
fuzz() {
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DSNAPSINK_FUZZ=ON -DSNAPSINK_BUILD_TESTS=OFF -DSNAPSINK_BUILD_BENCH=OFF >/dev/null &&
    cmake --build build-fuzz -j2 --target fuzz_all || return 1
  local t tmp rc=0
  for t in fuzz_event_parser fuzz_decimal_time fuzz_snapshot_file fuzz_manifest fuzz_current fuzz_http_request; do
    tmp=$(mktemp -d) || return 1
    if ./build-fuzz/fuzz/$t -runs="$FUZZ_RUNS" -seed=1 -max_len=65536 "$tmp" "fuzz/corpus/$t" >"$tmp.log" 2>&1; then
      echo "$t: $(grep -E '^#[0-9]+.*DONE' "$tmp.log" | tail -n 1)"
    else
      echo "$t: FAILED"; tail -n 40 "$tmp.log"; rc=1
    fi
    rm -rf "$tmp" "$tmp.log"
  done
  return $rc
}

# The sanitizer build and then its tests run in the background from the end
# of the normal build, beside the benchmark smoke tests, the normal tests, the
# embedding example and the fuzzers: the normal tests leave a core idle for
# much of their time (Kafka session timeouts, fsyncs, child processes that
# wait for each other), and the instrumented tests are CPU-bound. The build's
# output goes to build-asan/build.log, whose tail is printed if it fails; the
# tests' logs are printed when they are waited for. The tests are meant to
# pass with both cores busy, and this is where CI checks it.
#   Of the Kafka tests, which mostly wait out session timeouts (the same wait
# instrumented or not), the three that drive every Kafka code path (consume
# and publish, crash and restart, many owners with merged publish) run under
# the sanitizers too, beside the others.
asan_kafka_tests='^(KafkaMock[.]RunFinalPublishesWhatAFileRunPublishes|KafkaMock[.]KilledAtIngestCrashPointsThenRestartedSameResult|KafkaStates[.]ThreeProcessesMergedPublishEqualsRunFinalFromAFile)$'
asan_out=""
asan_pid=""
asan_start=0
# Each step writes "RC SECONDS" to $asan_out/NAME.rc and its output to
# $asan_out/NAME.log.
asan_step() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" >"$asan_out/$name.log" 2>&1 || rc=$?
  echo "$rc $(($(date +%s) - start))" >"$asan_out/$name.rc"
  return $rc
}
asan_ctest() {
  (cd build-asan && ctest "$@" --output-on-failure --no-tests=error --repeat until-pass:2)
}
start_asan() {
  asan_start=$SECONDS
  mkdir -p build-asan
  asan_out=$(mktemp -d)
  (
    asan_step build build_asan || exit 0
    asan_step kafka asan_ctest -j1 -L kafka -R "$asan_kafka_tests" &
    asan_step tests asan_ctest -j2 -LE kafka
    wait
  ) &
  asan_pid=$!
}
# Waits for the background job and adds its parts to the summary.
wait_asan() {
  local rc seconds
  wait "$asan_pid"
  echo "== build under AddressSanitizer + UBSan (ran in the background; log: build-asan/build.log)"
  cp "$asan_out/build.log" build-asan/build.log
  read -r rc seconds <"$asan_out/build.rc" || { rc=1 seconds=$((SECONDS - asan_start)); }
  if [ "$rc" -eq 0 ]; then
    results+=("PASS  build under AddressSanitizer + UBSan (in the background) [$seconds s]")
  else
    tail -n 60 "$asan_out/build.log"
    results+=("FAIL  build under AddressSanitizer + UBSan (in the background) [$seconds s]")
    failed=1
    return
  fi
  local name step
  for step in tests kafka; do
    if [ "$step" = tests ]; then
      name="tests under AddressSanitizer + UBSan"
    else
      name="Kafka tests under AddressSanitizer + UBSan (three)"
    fi
    echo "== $name (ran in the background)"
    cat "$asan_out/$step.log"
    read -r rc seconds <"$asan_out/$step.rc" || { rc=1 seconds=0; }
    ctest_result "$name" "$asan_out/$step.log" "$rc" "$seconds"
  done
  rm -rf "$asan_out"
}

if part "build" build_normal; then
  start_asan
  part "benchmark smoke test (it runs; targets are informational)" ./build/snapsink_bench --quick
  part "whole-process benchmark smoke test" ./build/snapsink_bench --process --quick
  ctest_part "tests" build
  part "embedding example (install + find_package)" embed_example
else
  start_asan
fi
part "fuzz" fuzz
wait_asan

echo "== summary ($SECONDS s in all)"
printf '%s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
  echo "run.sh: FAILED"
  exit 1
fi
echo "run.sh: all parts passed"
