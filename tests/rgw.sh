#!/usr/bin/env bash
# A local S3 server for the bucket tests: Ceph's RADOS Gateway from Debian's
# own packages (install-deps.sh installs them), started from nothing in DIR.
#
#   tests/rgw.sh start DIR   one ceph-mon, one in-memory (memstore) ceph-osd
#                            and one radosgw (beast, 127.0.0.1, a free port);
#                            a user with a known key; waits until a signed
#                            ListBuckets answers 200; writes DIR/env and
#                            prints it (AWS_ENDPOINT_URL, AWS_REGION, ...).
#   tests/rgw.sh env DIR     prints DIR/env again (eval "$(tests/rgw.sh env DIR)").
#   tests/rgw.sh stop DIR    stops the three daemons by the pids it started
#                            (DIR/pids) and removes DIR's data.
#   tests/rgw.sh stop-gateway DIR   kills the radosgw alone (kill -9, by the
#                            pid in DIR/rgw.pid); the objects stay in the OSD.
#   tests/rgw.sh start-gateway DIR  starts radosgw again on the same port and
#                            waits until a signed ListBuckets answers 200
#                            (a test of a gateway that dies mid-run).
#
# The settings that matter (each cost time to find): the monitor map is
# given a v1 address only and msgr2 is off (a v2 address is never answered);
# no cephx; pool size one; fast paxos (start-up of seconds, not 14 s); the
# monitor does not stop itself when the host disk is nearly full; the
# gateway sends with TCP_NODELAY (else each answer with a body waits 40 ms
# on a kept-alive connection: Nagle against the client's delayed ACK).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: tests/rgw.sh start|stop|env|stop-gateway|start-gateway DIR" >&2
  exit 2
fi

stop() {
  [ -f "$dir/pids" ] || return 0
  local pid
  # The data is in memory and thrown away: no clean shutdown to wait for
  # (the daemons take seconds to leave on SIGTERM).
  for pid in $(tac "$dir/pids"); do
    kill -9 "$pid" 2>/dev/null || true
  done
  for pid in $(cat "$dir/pids"); do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -f "$dir/pids" "$dir/rgw.pid"
  rm -rf "$dir/mon" "$dir/osd" "$dir/run" "$dir/env"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Starts a daemon in the foreground of its own session, remembering its pid.
spawn() {
  local name=$1
  shift
  setsid "$@" >>"$dir/log/$name.out" 2>&1 </dev/null &
  echo $! >>"$dir/pids"
}

fail() {
  echo "tests/rgw.sh: $*" >&2
  local f
  for f in "$dir"/log/*; do
    [ -s "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
  done
  stop
  exit 1
}

# Waits (30 s at most) until a signed ListBuckets at ENDPOINT answers 200.
wait_answers() {
  local key=$1 secret=$2 endpoint=$3 code=000 deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
      --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" \
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$endpoint/" || true)
    [ "$code" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}

stop_gateway() {
  [ -f "$dir/rgw.pid" ] || { echo "tests/rgw.sh: no gateway started in $dir" >&2; exit 1; }
  local pid
  pid=$(cat "$dir/rgw.pid")
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
}

start_gateway() {
  [ -f "$dir/env" ] && [ -f "$dir/rgw.pid" ] || { echo "tests/rgw.sh: no gateway started in $dir" >&2; exit 1; }
  dir=$(cd "$dir" && pwd)
  local old
  old=$(cat "$dir/rgw.pid")
  if kill -0 "$old" 2>/dev/null; then return 0; fi
  grep -vx "$old" "$dir/pids" >"$dir/pids.new" || true
  mv "$dir/pids.new" "$dir/pids"
  spawn rgw radosgw -c "$dir/ceph.conf" -n client.rgw -f
  tail -n 1 "$dir/pids" >"$dir/rgw.pid"
  # shellcheck disable=SC1091
  . "$dir/env"
  wait_answers "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL" ||
    { echo "tests/rgw.sh: the gateway started again does not answer at $AWS_ENDPOINT_URL" >&2; exit 1; }
}

start() {
  local missing=()
  for b in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool ceph-authtool curl python3; do
    command -v "$b" >/dev/null 2>&1 || missing+=("$b")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "tests/rgw.sh: missing ${missing[*]}: run ./install-deps.sh (radosgw ceph-mon ceph-osd ceph-common)" >&2
    exit 3
  fi
  [ -f "$dir/pids" ] && stop
  rm -rf "$dir/mon" "$dir/osd" "$dir/run" "$dir/log" "$dir/monmap" "$dir/keyring" "$dir/ceph.conf" "$dir/env"
  mkdir -p "$dir/log" "$dir/run" "$dir/mon" "$dir/osd"
  dir=$(cd "$dir" && pwd)
  local fsid mon_port rgw_port osd_uuid conf t0=$SECONDS
  fsid=$(cat /proc/sys/kernel/random/uuid)
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  mon_port=$(free_port)
  rgw_port=$(free_port)
  conf="$dir/ceph.conf"
  cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
osd crush chooseleaf type = 0
paxos propose interval = 0.05
paxos min wait = 0.01
mon data avail crit = 0
mon data avail warn = 0
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
keyring = $dir/keyring
[mon]
mon data = $dir/mon/\$cluster-\$id
[osd]
osd data = $dir/osd/\$cluster-\$id
osd objectstore = memstore
osd class update on start = false
osd crush update on start = false
memstore device bytes = 1073741824
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
rgw data = $dir/run
rgw dns name = 127.0.0.1
EOF
  ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v1:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring" >"$dir/log/mkfs.out" 2>&1 ||
    fail "ceph-mon --mkfs failed"
  spawn mon ceph-mon -c "$conf" -i a -f
  # The first commands can reach the monitor before it has formed its
  # quorum of one (EPERM, a zero fsid): asked again until it answers.
  local id=""
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    id=$(timeout 10 ceph -c "$conf" osd new "$osd_uuid" 2>>"$dir/log/ceph.out") && break
    id=""
    sleep 0.1
  done
  [ -n "$id" ] || fail "the monitor does not answer"
  # The OSD's own crush commands at start can reach the monitor before it
  # knows the cluster's fsid ("wrong fsid") and then it never boots: its
  # place in the crush map is set here instead (asked again until it answers).
  deadline=$((SECONDS + 30))
  until timeout 10 ceph -c "$conf" osd crush add "osd.$id" 1.0 root=default host=local >>"$dir/log/ceph.out" 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "the monitor refuses osd crush add"
    sleep 0.1
  done
  mkdir -p "$dir/osd/ceph-$id"
  ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$osd_uuid" >>"$dir/log/mkfs.out" 2>&1 || fail "ceph-osd --mkfs failed"
  # Should it hang all the same, it is started again after 15 s.
  local up=0 try
  for try in 1 2; do
    spawn osd ceph-osd -c "$conf" -i "$id" -f
    deadline=$((SECONDS + 15))
    while [ $SECONDS -lt $deadline ]; do
      if timeout 10 ceph -c "$conf" osd dump 2>/dev/null | grep -q "^osd.$id up"; then up=1; break; fi
      sleep 0.1
    done
    [ $up -eq 1 ] && break
    local osd_pid
    osd_pid=$(tail -n 1 "$dir/pids")
    kill -9 "$osd_pid" 2>/dev/null || true
    echo "osd.$id did not boot in 15 s (try $try)" >>"$dir/log/osd.out"
  done
  [ $up -eq 1 ] || fail "osd.$id is not up after two tries of 15 s"
  spawn rgw radosgw -c "$conf" -n client.rgw -f
  tail -n 1 "$dir/pids" >"$dir/rgw.pid"
  local key=snapsinktestkey secret=snapsink-test-secret-0123456789
  deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    radosgw-admin -c "$conf" user info --uid test >/dev/null 2>&1 && break
    radosgw-admin -c "$conf" user create --uid test --display-name test \
      --access-key "$key" --secret "$secret" >/dev/null 2>>"$dir/log/admin.out" && break
    sleep 0.2
  done
  wait_answers "$key" "$secret" "http://127.0.0.1:$rgw_port" || fail "a signed ListBuckets at 127.0.0.1:$rgw_port does not answer 200"
  cat >"$dir/env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$rgw_port
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=$key
export AWS_SECRET_ACCESS_KEY=$secret
export SNAPSINK_RGW_CONF=$conf
EOF
  echo "# started in $((SECONDS - t0)) s" >>"$dir/env"
  cat "$dir/env"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  env) cat "$dir/env" ;;
  stop-gateway) stop_gateway ;;
  start-gateway) start_gateway ;;
  *) echo "usage: tests/rgw.sh start|stop|env|stop-gateway|start-gateway DIR" >&2; exit 2 ;;
esac
