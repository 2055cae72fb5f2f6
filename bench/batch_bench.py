#!/usr/bin/python3
"""batch_bench.py - sequences of mixed lengths: each sent alone and batched by
the daemon (its compute pool merges waiting requests up to compute.batch_tokens
and the forward runs their real tokens only), against the same sequences padded
to the longest of each group of --batch, as a server that pads computes them.

    /usr/bin/python3 bench/batch_bench.py --port P [--sequences 64] [--batch 8]
                                          [--clients 8] [--rounds 3] [--vocab 30522]

A running attnd on 127.0.0.1:P serves a directory with an embedding module.
The lengths are drawn once (seed 1) from a log-normal mix of 8..256 tokens, as
sentences and short paragraphs come; the ids are random.  Each round, in
alternating order:
  alone   --clients keep-alive connections send the sequences one per request
          ("input_ids" [L], "attention": "none", base64 out);
  padded  one connection sends them in groups of --batch, each group padded to
          its longest with real ids (no lengths: every position computed).
Prints the padding fraction of each form as the daemon counted it (its
/metrics: the positions its forwards computed, attnd_tokens_total, against
the real tokens sent; and its forwards, attnd_forwards_total, so requests
merged per forward), real tokens/s of each (wall time), the medians over
rounds, and RESULT lines for bench/run.sh.  Python's standard library only.
"""
import argparse
import http.client
import json
import math
import random
import statistics
import threading
import time


def post(conn, body):
    conn.request("POST", "/v1/encode", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"POST /v1/encode: {r.status}: {data[:300].decode(errors='replace')}")


def counters(port):
    """The daemon's attnd_tokens_total (positions its forwards computed) and
    attnd_forwards_total, from /metrics."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    got = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("attnd_tokens_total", "attnd_forwards_total"):
            got[name] = float(value)
    return got["attnd_tokens_total"], got["attnd_forwards_total"]


def counted(port, run):
    """run()'s result, the positions the daemon computed and its forwards
    meanwhile."""
    t0, f0 = counters(port)
    out = run()
    t1, f1 = counters(port)
    return out, t1 - t0, f1 - f0


def lengths_mix(n, rng):
    """n lengths, log-normal around 40 tokens, within 8..256."""
    return [max(8, min(256, int(round(math.exp(rng.gauss(math.log(40), 0.8)))))) for _ in range(n)]


def body(ids):
    return json.dumps({"input_ids": ids, "attention": "none", "encoding": "base64"})


def run_alone(port, seqs, clients):
    work = list(range(len(seqs)))
    lock = threading.Lock()

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                if not work:
                    break
                k = work.pop()
            post(conn, body(seqs[k]))
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def run_padded(port, seqs, batch, rng):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    computed = 0
    t0 = time.perf_counter()
    for g in range(0, len(seqs), batch):
        group = seqs[g:g + batch]
        longest = max(len(s) for s in group)
        padded = [s + [rng.randrange(1000, 2000) for _ in range(longest - len(s))] for s in group]
        computed += longest * len(group)
        post(conn, body(padded))
    wall = time.perf_counter() - t0
    conn.close()
    return wall, computed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--sequences", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=30522)
    a = ap.parse_args()
    rng = random.Random(1)
    lens = lengths_mix(a.sequences, rng)
    seqs = [[101] + [rng.randrange(1000, a.vocab) for _ in range(n - 2)] + [102] for n in lens]
    real = sum(lens)
    print(f"{a.sequences} sequences, lengths {min(lens)}..{max(lens)} (median "
          f"{statistics.median(lens)}), {real} real tokens; padded groups of {a.batch}")
    run_alone(a.port, seqs[:4], 2)  # untimed
    alone, padded, fraction = [], [], 0.0
    seen = {"alone": [], "padded": []}  # (positions computed, forwards) per round
    groups = (len(seqs) + a.batch - 1) // a.batch
    for r in range(a.rounds):
        order = ["alone", "padded"] if r % 2 == 0 else ["padded", "alone"]
        for kind in order:
            if kind == "alone":
                wall, computed, forwards = counted(a.port, lambda: run_alone(a.port, seqs, a.clients))
                alone.append(real / wall)
            else:
                (wall, sent), computed, forwards = counted(
                    a.port, lambda: run_padded(a.port, seqs, a.batch, random.Random(2)))
                padded.append(real / wall)
                fraction = 1 - real / sent
            seen[kind].append((computed, forwards))
        print(f"round {r}: alone {alone[-1]:.0f} tok/s, padded {padded[-1]:.0f} tok/s")
    ma, mp = statistics.median(alone), statistics.median(padded)
    for kind, requests in (("alone", len(seqs)), ("padded", groups)):
        computed = statistics.median(c for c, _ in seen[kind])
        forwards = statistics.median(f for _, f in seen[kind])
        print(f"{kind}: the daemon computed {computed:.0f} positions for {real} real tokens "
              f"(padding {1 - real / computed:.3f}), {requests} requests in {forwards:.0f} "
              f"forwards ({requests / forwards:.2f} a forward), medians over rounds")
    alone_pad = 1 - real / statistics.median(c for c, _ in seen["alone"])
    padded_pad = 1 - real / statistics.median(c for c, _ in seen["padded"])
    print(f"padding fraction of the padded form: {fraction:.3f} sent, {padded_pad:.3f} computed")
    print(f"median real tokens/s: alone (batched by the daemon) {ma:.0f}, padded to the longest "
          f"{mp:.0f}: {ma / mp:.3f}x")
    print(f"RESULT batch_pad_fraction={fraction:.4f} batch_alone_pad={alone_pad:.4f} "
          f"batch_padded_pad={padded_pad:.4f} batch_alone_tps={ma:.1f} "
          f"batch_padded_tps={mp:.1f} batch_ratio={ma / mp:.4f}")


if __name__ == "__main__":
    main()
