#!/usr/bin/env bash
# The whole test suite: a warnings-fatal build, the benchmark smoke test, the
# normal ctest suite, the embedding example built against an install of the
# library, the libFuzzer targets (clang, a bounded number of inputs each, from
# the seed corpus in fuzz/corpus/), then ctest again under AddressSanitizer + UBSan. Every part runs
# even when an earlier one failed; the exit status is non-zero if any did.
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
  ctest_result "$name" "$log" "$rc" "$start"
}

# The summary line of a ctest part from its log and exit status (and the
# time it ended, when that was before now).
ctest_result() {
  local name=$1 log=$2 rc=$3 start=$4 end=${5:-$SECONDS} skipped names note=""
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
  note="$note [$((end - start)) s]"
  if [ "$rc" -eq 0 ]; then
    results+=("PASS  $name$note")
  else
    results+=("FAIL  $name$note")
    failed=1
  fi
}

# ctest parts in the background (their tests mostly wait, so they overlap
# other parts): ctest_bg_start starts one; ctest_bg_wait waits for each in
# the order they started, prints its log and adds its summary line.
bg_names=() bg_logs=() bg_pids=() bg_starts=()
ctest_bg_start() {
  local name=$1 dir=$2 jobs=$3 log
  shift 3
  log=$(mktemp)
  # The part's wall time ends when its ctest does ($log.end), not when the
  # run gets round to waiting for it.
  (
    rc=0
    (cd "$dir" && ctest "-j$jobs" --output-on-failure --no-tests=error --repeat until-pass:2 "$@") >"$log" 2>&1 || rc=$?
    echo "$SECONDS" >"$log.end"
    exit $rc
  ) &
  bg_names+=("$name") bg_logs+=("$log") bg_pids+=($!) bg_starts+=("$SECONDS")
}
ctest_bg_wait() {
  local i rc
  for i in "${!bg_pids[@]}"; do
    rc=0
    wait "${bg_pids[$i]}" || rc=$?
    echo "== ${bg_names[$i]} (ran in the background)"
    cat "${bg_logs[$i]}"
    ctest_result "${bg_names[$i]}" "${bg_logs[$i]}" "$rc" "${bg_starts[$i]}" "$(cat "${bg_logs[$i]}.end")"
    rm -f "${bg_logs[$i]}.end"
  done
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

# The sanitizer build is CPU-bound; the normal tests mostly wait (fsyncs,
# child processes, Kafka session timeouts: about a quarter of their wall time
# is CPU). So the sanitizer build runs in the background from the end of the
# normal build, beside the benchmark smoke test, the normal tests, the
# embedding example and the fuzzers; its output goes to build-asan/build.log, whose
# tail is printed if it fails. The tests are meant to pass with both cores
# busy, and this is where CI checks it.
asan_log=build-asan/build.log
asan_pid=""
asan_start=0
start_asan_build() {
  asan_start=$SECONDS
  mkdir -p build-asan
  build_asan >"$asan_log" 2>&1 &
  asan_pid=$!
}
wait_asan_build() {
  local rc=0
  wait "$asan_pid" || rc=$?
  echo "build under AddressSanitizer + UBSan: $((SECONDS - asan_start)) s since it started (log: $asan_log)"
  if [ $rc -ne 0 ]; then
    tail -n 60 "$asan_log"
  fi
  return $rc
}

# The Kafka tests (about a tenth of their wall time is CPU: they wait out
# session timeouts and rebalances) run in a ctest of their own, one at a
# time, from the end of the normal build to the end of the run, with a
# local S3 server of their own (fixture rgw_kafka).
if part "build" build_normal; then
  start_asan_build
  ctest_bg_start "Kafka tests" build 1 -L kafka
  part "benchmark smoke test (it runs; targets are informational)" ./build/snapsink_bench --quick
  part "whole-process benchmark smoke test" ./build/snapsink_bench --process --quick
  ctest_part "tests" build -LE kafka
  part "embedding example (install + find_package)" embed_example
else
  start_asan_build
fi
part "fuzz" fuzz
if part "build under AddressSanitizer + UBSan (waited for)" wait_asan_build; then
  # Every test but the Kafka ones, which mostly wait out session timeouts
  # (the same wait instrumented or not): of those, the three that drive
  # every Kafka code path (consume and publish, crash and restart, many
  # owners with merged publish) run under the sanitizers too.
  # The three run beside the others, in the background: they mostly wait.
  ctest_bg_start "Kafka tests under AddressSanitizer + UBSan (three)" build-asan 1 -L kafka \
    -R '^(KafkaMock[.]RunFinalPublishesWhatAFileRunPublishes|KafkaMock[.]KilledAtIngestCrashPointsThenRestartedSameResult|KafkaStates[.]ThreeProcessesMergedPublishEqualsRunFinalFromAFile)$'
  ctest_part "tests under AddressSanitizer + UBSan" build-asan -LE kafka
fi
ctest_bg_wait

echo "== summary ($SECONDS s in all)"
printf '%s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
  echo "run.sh: FAILED"
  exit 1
fi
echo "run.sh: all parts passed"
