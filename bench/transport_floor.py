#!/usr/bin/env python3
"""transport_floor.py - the HTTP transport floor under attnd's base64 figure.

A keep-alive HTTP/1.1 server on 127.0.0.1 that reads each request (any
route, Content-Length bodies only) and answers 200 with a fixed body of
--bytes bytes, doing no other work.  Timed with the same client as attnd:

    /usr/bin/python3 bench/transport_floor.py --port 18250 &   # --port 0: any free port
    build/bench/http_bench latency --port 18250 --format b64 --batch 1 --len 128 \
        --seconds 3 --max-requests 300 --warmup 3
    kill %1

http_bench then sends attnd's B=1 L=128 base64 request (512 KiB) and reads a
response as large as attnd's with per-head attention (1.5 MiB by default):
its p50 is what moving those bytes through loopback TCP and libcurl costs on
this machine, with no decoding, computing or encoding (docs/performance.md).

--busy-ms T keeps a CPU busy for T ms between reading a request and
answering it, as attnd's forward does: caches and the scheduler then see
what they see around a forward, and the p50 minus T is the floor under
attnd's p50 minus its compute time (back to back, with no gap, the same
bytes move faster: docs/performance.md).
"""
import argparse
import socket
import sys
import time


def serve(conn, response, busy_s):
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            data = conn.recv(1 << 20)
            if not data:
                return
            buf += data
        head, _, rest = buf.partition(b"\r\n\r\n")
        need = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                need = int(value)
        while len(rest) < need:
            data = conn.recv(1 << 20)
            if not data:
                return
            rest += data
        buf = rest[need:]
        end = time.perf_counter() + busy_s
        while time.perf_counter() < end:
            pass
        conn.sendall(response)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True, help="0: any free port")
    ap.add_argument("--bytes", type=int, default=1536 * 1024 + 200,
                    help="response body size (default: attnd's B=1 L=128 base64 answer)")
    ap.add_argument("--busy-ms", type=float, default=0.0,
                    help="ms to keep a CPU busy before each answer (default 0)")
    args = ap.parse_args()
    body = b"A" * args.bytes
    response = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body)) + body
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.port))
    srv.listen(8)
    print("listening on http://127.0.0.1:%d" % srv.getsockname()[1], flush=True)
    while True:
        conn, _ = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            serve(conn, response, args.busy_ms / 1e3)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
