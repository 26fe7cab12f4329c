#!/usr/bin/env bash
# The whole test suite: a warnings-fatal build, the benchmark smoke test, the
# normal ctest suite, the embedding example built against an install of the
# library, then ctest again under AddressSanitizer + UBSan. Every part runs
# even when an earlier one failed; the exit status is non-zero if any did.
# The normal build is the same `build` directory, with the same flags, as
# README command 1.
set -uo pipefail
cd "$(dirname "$0")/.."
./install-deps.sh || exit 1

results=()
failed=0
part() {
  local name=$1
  shift
  echo "== $name"
  if "$@"; then
    results+=("PASS  $name")
  else
    results+=("FAIL  $name")
    failed=1
  fi
}

# ctest in build dir $2, as part $1; the summary line also says how many
# tests were skipped (GTEST_SKIP) and which, so a skip is never silent.
ctest_part() {
  local name=$1 dir=$2 log rc skipped names note=""
  log=$(mktemp)
  echo "== $name"
  (cd "$dir" && ctest -j2 --output-on-failure) 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  skipped=$(grep -c '(Skipped)$' "$log" || true)
  if [ "$skipped" -gt 0 ]; then
    names=$(grep '(Skipped)$' "$log" | sed -E 's/^ *[0-9]+ - //; s/ \(Skipped\)$//' | paste -sd, - | sed 's/,/, /g')
    note=" ($skipped skipped: $names)"
  else
    note=" (0 skipped)"
  fi
  rm -f "$log"
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
    "$tmp/build/embed" "$tmp/root" sample/events.ndjson | tail -n 1 || rc=1
  rm -rf "$tmp"
  return $rc
}

build_asan() {
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAPSINK_SANITIZE=ON \
    -DSNAPSINK_WERROR=ON -DSNAPSINK_BUILD_BENCH=OFF >/dev/null &&
    cmake --build build-asan -j2
}

if part "build" build_normal; then
  part "benchmark smoke test (it runs; targets are informational)" ./build/snapsink_bench --quick
  ctest_part "tests" build
  part "embedding example (install + find_package)" embed_example
fi
if part "build under AddressSanitizer + UBSan" build_asan; then
  ctest_part "tests under AddressSanitizer + UBSan" build-asan
fi

echo "== summary"
printf '%s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
  echo "run.sh: FAILED"
  exit 1
fi
echo "run.sh: all parts passed"
