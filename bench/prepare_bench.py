#!/usr/bin/python3
"""prepare_bench.py - small /v1/embeddings requests alone, then beside clients posting 1 MB texts.

    /usr/bin/python3 bench/prepare_bench.py --port P [--requests 1000] [--big-clients 4]
                                            [--big-bytes 1000000] [--min-big 10]
                                            [--big-batch N] [--tag T]
    /usr/bin/python3 bench/prepare_bench.py --port P --beside-busy N [--big-bytes B] [--tag T]

attnd on 127.0.0.1:P serves a model with a tokenizer and cuts long texts
(--auto-truncate), so a 1 MB text is tokenized whole, cut to the token
limit and embedded.  One client sends --requests small POST /v1/embeddings
requests (one sentence) one after the other on a keep-alive connection,
after 10 untimed ones: first alone, then while --big-clients clients each
post --big-bytes texts back to back on their own connections, until at
least --min-big of those were answered during the phase (so that the
small requests meet the long texts' forwards, not only their
tokenization).  With --big-batch N, the big clients post N texts of 120
words each instead (a long forward's worth of tokens, little to
tokenize).  With --beside-busy N, instead: three --big-bytes texts posted
one at a time alone, then beside N busy processes (a tokenizer's share of
a full host; RESULT T_big_alone_s T_big_busy_s, the middle of the three).
Every
answer must be a 200 with one embedding.  Prints p50 and p99 of the small
requests' wall times in both phases, the p99s of their time in the
daemon's queue and forward (X-Queue-Ms, X-Compute-Ms), the ratio of the wall
times' p99s, and how many big requests were answered meanwhile.
and the big requests answered per second meanwhile.  --tag T names the
figures T_alone_p50_ms ... (default prep):
  RESULT prep_alone_p50_ms prep_alone_p99_ms prep_busy_p50_ms prep_busy_p99_ms
         prep_p99_ratio prep_big_per_s prep_big_done

Python's standard library only.
"""
import argparse
import http.client
import json
import subprocess
import sys
import threading
import time

SMALL = "The river runs through the capital of the northern province."
WORDS = ("the committee will review every proposal before the end of the "
         "month and publish its findings in a short report ").split()


def post(conn, body, server_ms=None, want=1):
    """Wall ms of one POST /v1/embeddings; raises unless a 200 with want embeddings.
    server_ms: a list the daemon's (X-Queue-Ms, X-Compute-Ms) is appended to."""
    t0 = time.perf_counter()
    conn.request("POST", "/v1/embeddings", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    ms = (time.perf_counter() - t0) * 1e3
    if server_ms is not None:
        server_ms.append((float(resp.getheader("X-Queue-Ms", "0")),
                          float(resp.getheader("X-Compute-Ms", "0"))))
    if resp.status != 200:
        raise RuntimeError("status %d: %s" % (resp.status, data[:200]))
    if len(json.loads(data)["data"]) != want:
        raise RuntimeError("not %d embeddings" % want)
    return ms


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def small_run(port, n, server_ms, more=lambda: False):
    """n timed small requests, and more while more() says so."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = json.dumps({"input": SMALL})
    for _ in range(10):
        post(conn, body)
    ms = []
    while len(ms) < n or more():
        ms.append(post(conn, body, server_ms))
    conn.close()
    return ms


def big_text(nbytes, seed):
    out, i = [], seed
    size = 0
    while size < nbytes:
        w = WORDS[i % len(WORDS)]
        out.append(w)
        size += len(w) + 1
        i += 7
    return " ".join(out)[:nbytes]


def beside_busy(a):
    """--beside-busy N: three --big-bytes texts posted one after another,
    alone, then beside N busy processes (each a Python loop at nice 0)."""
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    body = json.dumps({"input": big_text(a.big_bytes, 0)})
    quiet = [post(conn, body) / 1e3 for _ in range(3)]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(a.beside_busy)]
    try:
        time.sleep(0.5)
        busy = [post(conn, body) / 1e3 for _ in range(3)]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    conn.close()
    t = a.tag
    print("one %d-byte text at a time: %s s alone, %s s beside %d busy processes"
          % (a.big_bytes, " ".join("%.2f" % x for x in quiet), " ".join("%.2f" % x for x in busy),
             a.beside_busy))
    print("RESULT %s_big_alone_s=%.3f %s_big_busy_s=%.3f"
          % (t, sorted(quiet)[1], t, sorted(busy)[1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--big-clients", type=int, default=4)
    ap.add_argument("--big-bytes", type=int, default=1000000)
    ap.add_argument("--min-big", type=int, default=10)
    ap.add_argument("--big-batch", type=int, default=0)
    ap.add_argument("--tag", default="prep")
    ap.add_argument("--beside-busy", type=int, default=0)
    a = ap.parse_args()
    if a.beside_busy:
        beside_busy(a)
        return

    alone_srv, busy_srv = [], []
    alone = small_run(a.port, a.requests, alone_srv)
    stop = threading.Event()
    done = [0] * a.big_clients
    errors = []

    def big(k):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=120)
            body = json.dumps({"input": [big_text(720, k + 11 * i) for i in range(a.big_batch)]}
                              if a.big_batch else {"input": big_text(a.big_bytes, k)})
            while not stop.is_set():
                post(conn, body, want=max(1, a.big_batch))
                done[k] += 1
            conn.close()
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=big, args=(k,)) for k in range(a.big_clients)]
    for t in threads:
        t.start()
    while sum(done) < a.big_clients and not errors:  # every big client has had an answer
        time.sleep(0.05)
    before, t0 = sum(done), time.perf_counter()
    busy = small_run(a.port, a.requests, busy_srv,
                     lambda: sum(done) - before < a.min_big and not errors)
    big_during, busy_s = sum(done) - before, time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("big client failed: " + errors[0])
    t = a.tag
    r = {t + "_alone_p50_ms": percentile(alone, 0.5), t + "_alone_p99_ms": percentile(alone, 0.99),
         t + "_busy_p50_ms": percentile(busy, 0.5), t + "_busy_p99_ms": percentile(busy, 0.99)}
    r[t + "_p99_ratio"] = r[t + "_busy_p99_ms"] / r[t + "_alone_p99_ms"]
    r[t + "_big_per_s"] = big_during / busy_s
    big = ("batches of %d 120-word texts" % a.big_batch if a.big_batch
           else "%d-byte texts" % a.big_bytes)
    print("small /v1/embeddings, %d requests alone, %d beside:" % (len(alone), len(busy)))
    print("  alone:                       p50 %.2f ms  p99 %.2f ms"
          % (r[t + "_alone_p50_ms"], r[t + "_alone_p99_ms"]))
    print("  beside %d clients of %s: p50 %.2f ms  p99 %.2f ms (%d big answered in %.1f s)"
          % (a.big_clients, big, r[t + "_busy_p50_ms"], r[t + "_busy_p99_ms"], big_during, busy_s))
    for what, k in (("queue (X-Queue-Ms)", 0), ("forward (X-Compute-Ms)", 1)):
        print("  %s p99: alone %.2f ms, beside %.2f ms"
              % (what, percentile([x[k] for x in alone_srv], 0.99),
                 percentile([x[k] for x in busy_srv], 0.99)))
    print("  p99 beside / p99 alone = %.2fx" % r[t + "_p99_ratio"])
    print("RESULT " + " ".join("%s=%.4f" % kv for kv in r.items())
          + " %s_big_done=%d" % (t, big_during))


if __name__ == "__main__":
    main()
