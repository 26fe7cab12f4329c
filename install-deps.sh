#!/usr/bin/env bash
# Installs the Debian packages snapsink needs to build, test and benchmark.
# Idempotent; prints nothing when everything is already installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  liblmdb-dev libboost-filesystem-dev libzstd-dev libfmt-dev libsimdjson-dev
  libcli11-dev libxxhash-dev prometheus-cpp-dev python3-prometheus-client libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev
  libcpp-httplib-dev librdkafka-dev libssl-dev openssl curl zlib1g-dev
  libcurl4-openssl-dev libpugixml-dev  # the S3 client (engine/s3/): libcurl signs SigV4, pugixml reads ListObjectsV2
  radosgw ceph-mon ceph-osd ceph-common  # the local S3 server of the bucket tests (tests/rgw.sh)
  chromium  # the status page browser test (tests/status_page_test.cc) and docs/status-page.png
  clang libclang-rt-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps.sh: not root and no sudo: cannot install the missing packages." >&2
    echo "As root, run: apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
