#!/bin/bash
# Makes one small root with an old snapsink build, and the rows that build's
# query printed, for tests/upgrade_test.cc. Run once per earlier format (see
# README.md in this directory); the output is checked in.
#
#   make_old_root.sh OLD_SNAPSINK OUT_DIR
#
# The root: windows 10:00..12:00 published over three runs (two versions of
# 11:00), a backfill (version 5) of 10:00, a rollback to generation 2, a live
# event applied after it and published, and one window (14:00) sealed but not
# published, so that staging and LMDB hold unpublished state too.
set -euo pipefail
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
root=$out/root
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ev() { # producer seq ts metric key value
  printf '{"producer":"%s","seq":%s,"ts":"%s","metric":"%s","key":"%s","value":%s}\n' "$@"
}
{
  ev p1 0 2026-10-21T10:05:00Z orders eu 10.5
  ev p1 1 2026-10-21T10:06:00Z orders us 2.25
  ev p2 0 2026-10-21T10:07:00Z visits eu 1
  ev p1 2 2026-10-21T11:01:00Z orders eu 7
  ev p2 1 2026-10-21T11:30:00Z visits us 1
  ev p1 3 2026-10-21T12:10:00Z orders eu -3.5
  ev p2 2 2026-10-21T13:10:00Z visits eu 1
} >"$work/a.ndjson"
{
  ev p1 4 2026-10-21T11:59:00Z orders us 100
  ev p1 5 2026-10-21T13:20:00Z orders eu 1.75
} >"$work/b.ndjson"
{
  ev archive 0 2026-10-21T10:01:00Z orders eu 1000
  ev archive 1 2026-10-21T10:02:00Z refunds eu 5.5
} >"$work/archive.ndjson"
{
  ev p1 6 2026-10-21T11:45:00Z orders eu 0.25
  ev p2 3 2026-10-21T13:40:00Z visits us 1
} >"$work/c.ndjson"
{
  ev p2 4 2026-10-21T14:05:00Z visits eu 1
} >"$work/d.ndjson"
cd "$work"
"$bin" init "$root" --window 1h --lateness 0s
"$bin" run "$root" a.ndjson --quiet            # generation 1: 10:00, 11:00, 12:00
"$bin" run "$root" b.ndjson --quiet            # generation 2: 11:00 v2 (a late event), 12:00 v2? 13:00
"$bin" backfill "$root" --version 5 archive.ndjson --from 2026-10-21T10:00:00Z --to 2026-10-21T10:00:00Z --quiet
"$bin" rollback "$root" --generation 2
"$bin" run "$root" c.ndjson --final --quiet     # a live event after the rollback, published
"$bin" ingest "$root" d.ndjson --quiet
"$bin" seal "$root" --all                        # 14:00 staged, not published
rm -f "$root/state/lock.mdb"
for g in $(ls "$root/manifests" | grep -E '^[0-9]+$' | sort -n); do
  "$bin" query "$root" --generation "$g" --format json >"$out/query-g$g.json"
done
"$bin" query "$root" --format json >"$out/query-current.json"
"$bin" --version >"$out/built-by.txt" 2>&1 || true
find "$root" -type f | sort | sed "s|^$root/||" >"$out/files.txt"
