#!/usr/bin/env bash
# The whole test suite: dependencies, a warnings-fatal build, the benchmark
# smoke test, ctest, and ctest again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAPSINK_WERROR=ON >/dev/null
cmake --build build -j2
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAPSINK_SANITIZE=ON -DSNAPSINK_WERROR=ON >/dev/null
cmake --build build-asan -j2
echo "== benchmark smoke test"
./build/snapsink_bench --quick
echo "== tests under AddressSanitizer + UBSan"
(cd build-asan && ctest -j2 --output-on-failure)
echo "== tests"
(cd build && ctest -j2 --output-on-failure)
