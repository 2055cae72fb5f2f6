#!/usr/bin/python3
"""ids_bench.py - the daemon's compute with token ids in against embeddings in.

    /usr/bin/python3 bench/ids_bench.py --port P --dir DIR [--batch 8] [--len 128]
                                        [--rounds 5] [--per-round 3]

Sends POST /v1/encode to a running attnd serving DIR (a directory with an
embedding module) on 127.0.0.1:P, one request at a time on one keep-alive
connection: B x L random token ids (`input_ids`), and B x L x hidden_size
random embeddings (`embeddings_b64`), both with "attention": "none" and
"encoding": "base64", so the two differ only in what goes in.  Interleaved
rounds (ids first in even rounds, embeddings first in odd ones), --per-round
requests of each kind per round, after one untimed request of each; each
request's X-Compute-Ms, the daemon's own time for the forward (the
embedding module's lookups included with ids), is recorded.  Prints the
medians and RESULT ids_compute_ms, emb_compute_ms, ids_ratio (ids / embeddings,
the medians) and ids_paired_ratio (the median of each round's ratio of
medians) for bench/run.sh.  Python's standard library only.
"""
import argparse
import base64
import http.client
import json
import os
import random
import statistics
import struct


def post(conn, body):
    """X-Compute-Ms of one request, which must succeed."""
    conn.request("POST", "/v1/encode", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"POST /v1/encode: {r.status}: {data[:400].decode(errors='replace')}")
    return float(r.getheader("X-Compute-Ms"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=3)
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    V, D = cfg["vocab_size"], cfg["hidden_size"]
    B, L = a.batch, a.len
    rng = random.Random(0)
    # ids from 3 on: clear of BERT's and RoBERTa's special and pad ids
    ids = [[rng.randrange(3, V) for _ in range(L)] for _ in range(B)]
    ids_body = json.dumps({"input_ids": ids, "attention": "none", "encoding": "base64"})
    x = struct.pack(f"<{B * L * D}f", *(rng.gauss(0.0, 1.0) for _ in range(B * L * D)))
    emb_body = json.dumps({"embeddings_b64": base64.b64encode(x).decode(), "shape": [B, L, D],
                           "attention": "none", "encoding": "base64"})
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=300)
    post(conn, ids_body)  # warm-up: the workspace grows to the shape once
    post(conn, emb_body)
    got = {"ids": [], "emb": []}
    paired = []
    for r in range(a.rounds):
        order = ("ids", "emb") if r % 2 == 0 else ("emb", "ids")
        this = {"ids": [], "emb": []}
        for kind in order:
            for _ in range(a.per_round):
                this[kind].append(post(conn, ids_body if kind == "ids" else emb_body))
        for kind in this:
            got[kind] += this[kind]
        paired.append(statistics.median(this["ids"]) / statistics.median(this["emb"]))
        print(f"round {r + 1}: ids {', '.join(f'{v:.1f}' for v in this['ids'])} ms; "
              f"embeddings {', '.join(f'{v:.1f}' for v in this['emb'])} ms")
    conn.close()
    mi, me = statistics.median(got["ids"]), statistics.median(got["emb"])
    pr = statistics.median(paired)
    print(f"B={B} L={L}, {cfg.get('model_type', '?')} D={D} vocab {V}, attention none: "
          f"compute median with ids in {mi:.2f} ms, with embeddings in {me:.2f} ms "
          f"({len(got['ids'])} requests each) -> ids / embeddings {mi / me:.4f} "
          f"(median of the rounds' ratios {pr:.4f})")
    print(f"RESULT ids_compute_ms={mi:.3f} emb_compute_ms={me:.3f} ids_ratio={mi / me:.4f} "
          f"ids_paired_ratio={pr:.4f}")


if __name__ == "__main__":
    main()
