#!/usr/bin/env python3
"""Latency of a well-behaved client while slow clients hold connections.

  bench/serve_slowloris.py SNAPSINK ROOT [--slow 200] [--seconds 20] [--query TARGET]

Starts `SNAPSINK serve ROOT` on a free loopback port (--max-connections
above --slow), opens --slow connections that each send a request head one
byte a second (they start over when the server closes them), and meanwhile
times /healthz and --query (a point query) on a new connection every 100 ms.
Prints the latency percentiles of each in ms and how many slow connections
the server closed. ServeHostileTest checks the same with generous bounds; this
measures the 100 ms claim.
"""
import argparse
import http.client
import socket
import subprocess
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def timed_get(port, target):
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", target)
    r = c.getresponse()
    r.read()
    c.close()
    return (time.monotonic() - t0) * 1000, r.status


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("snapsink")
    ap.add_argument("root")
    ap.add_argument("--slow", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--query", default="/v1/query?metric=orders&key=eu&format=csv")
    ap.add_argument("--extra", default="", help="more serve flags, space separated")
    a = ap.parse_args()
    port = free_port()
    args = [a.snapsink, "serve", a.root, "--listen", "127.0.0.1:%d" % port, "--quiet",
            "--max-connections", str(a.slow + 50)] + a.extra.split()
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                timed_get(port, "/healthz")
                break
            except OSError:
                time.sleep(0.1)
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
        slow = []
        for _ in range(a.slow):
            s = socket.create_connection(("127.0.0.1", port))
            s.setblocking(False)
            slow.append([s, 0])
        closed = 0
        lat = {"healthz": [], "query": []}
        failed = 0
        end = time.monotonic() + a.seconds
        next_byte = time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() >= next_byte:
                next_byte += 1.0
                for i, (s, sent) in enumerate(slow):
                    try:
                        try:
                            if s.recv(4096) == b"":
                                raise ConnectionResetError
                        except BlockingIOError:
                            pass
                        s.send(head[sent % (len(head) - 4):][:1])
                        slow[i][1] += 1
                    except OSError:
                        closed += 1
                        s.close()
                        ns = socket.create_connection(("127.0.0.1", port))
                        ns.setblocking(False)
                        slow[i] = [ns, 0]
            for name, target in (("healthz", "/healthz"), ("query", a.query)):
                try:
                    ms, status = timed_get(port, target)
                    lat[name].append(ms)
                    if status != 200:
                        failed += 1
                except OSError:
                    failed += 1
            time.sleep(0.1)
        for name, v in lat.items():
            print("%-8s n=%d p50=%.2f ms p99=%.2f ms max=%.2f ms" % (name, len(v), pct(v, 50), pct(v, 99), max(v) if v else float("nan")))
        print("failed requests: %d; slow connections closed by the server: %d" % (failed, closed))
        for s, _ in slow:
            s.close()
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
