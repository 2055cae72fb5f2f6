#!/usr/bin/python3
"""long_memory - the daemon's peak memory serving long-context attention weights.

    bench/long_memory.py --port P --pid PID [--len 16384] [--d-model 768] [--window 64]

Sends one /v1/encode request of one sequence of LEN tokens (base64 in), with
mask {"window": W}, "attention": "heads", "attention_format": "csr" and
"encoding": "base64", reads the whole response, checks its CSR shape (LEN + 1
row pointers, as many indices as a window allows) and prints the daemon's peak
resident memory (VmHWM of PID) and a RESULT line for bench/run.sh.  Standard
library only.
"""

import argparse
import array
import base64
import http.client
import json
import math
import sys
import time


def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--len", type=int, default=16384)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--name", default="http_long_csr")
    a = ap.parse_args()

    # Embeddings: any finite values will do for memory; a row of sines, scaled
    # a little differently for every token so rows differ.
    base = array.array("f", (math.sin(0.1 * k) for k in range(a.d_model)))
    emb = array.array("f")
    for i in range(a.len):
        s = 1.0 + (i % 97) * 1e-3
        emb.extend(x * s for x in base)
    if sys.byteorder != "little":
        emb.byteswap()
    body = json.dumps({
        "embeddings_b64": base64.b64encode(emb.tobytes()).decode(),
        "shape": [a.len, a.d_model],
        "mask": {"window": a.window},
        "attention": "heads",
        "attention_format": "csr",
        "encoding": "base64",
    }).encode()

    idle = vm_kib(a.pid, "VmRSS")
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    conn.request("POST", "/v1/encode", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    ms = (time.monotonic() - t0) * 1e3
    if resp.status != 200:
        print(f"long_memory: HTTP {resp.status}: {data[:300]!r}", file=sys.stderr)
        return 1
    r = json.loads(data)
    att = r["attention"]
    n = a.len
    w = a.window
    want_nnz = sum(min(n - 1, i + w) - max(0, i - w) + 1 for i in range(n))
    if att["indptr_shape"] != [n + 1] or att["indices_shape"] != [want_nnz]:
        print(f"long_memory: unexpected CSR shapes {att['indptr_shape']} {att['indices_shape']}"
              f" (want [{n + 1}] [{want_nnz}])", file=sys.stderr)
        return 1
    peak = vm_kib(a.pid, "VmHWM")
    print(f"one sequence of {n} tokens, window {w}, per-head CSR weights ({want_nnz} allowed "
          f"pairs x {att['values_shape'][0]} heads), base64: {len(body) / 2**20:.0f} MiB in, "
          f"{len(data) / 2**20:.0f} MiB out, {ms:.0f} ms; attnd resident {idle / 1024:.0f} MiB "
          f"before, peak {peak / 1024:.0f} MiB (VmHWM)")
    print(f"RESULT {a.name}_peak_rss_mib={peak / 1024:.0f} {a.name}_ms={ms:.1f} "
          f"{a.name}_nnz={want_nnz}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
