#!/usr/bin/python3
"""text_bench.py - text in against token ids in, and /v1/embeddings, on a running attnd.

    /usr/bin/python3 bench/text_bench.py --port P --texts FILE [--rounds 5] [--per-round 2]

FILE holds B texts, one a line (bench/tok_bench.c batch writes them: each
the same number of tokens, so the batch is B x L without padding).  Sends,
one request at a time on one keep-alive connection, to attnd on
127.0.0.1:P (serving a directory with a tokenizer.json):

  text        POST /v1/encode {"text": [the B texts], "attention": "none",
              "encoding": "base64"}
  ids         POST /v1/encode {"input_ids": the ids the first text response
              gave (checked: B rows of L), "attention": "none",
              "encoding": "base64"}: the same batch, tokenized by the client
  embeddings  POST /v1/embeddings {"input": [the B texts]} (OpenAI's shape,
              encoding_format float, its default)

in interleaved rounds (the order rotates each round), --per-round requests of
each kind per round, after one untimed request of each.  Each request's wall
time (request written to response read, on the client) and the daemon's
X-Compute-Ms (the forward alone: tokenizing, parsing and the response are
outside it) are recorded.  Prints, per kind, the p50 of the wall times and
the median X-Compute-Ms, then the RESULT line for bench/run.sh, each key
prefixed with txt_: text_p50_ms, ids_p50_ms, text_ids_ratio (text / ids
p50), text_ids_paired (the median of each round's ratio of medians),
text_extra_ms (text p50 - ids p50), ids_compute_ms (the ids requests'
compute median), text_compute_ms, emb_p50_ms, emb_compute_ms (of the same
embeddings responses), emb_ratio (emb_p50 / emb_compute), and per kind the
median of each request's wall time less its X-Compute-Ms (text_over_ms,
ids_over_ms, emb_over_ms: what a request costs beyond the forward, free of
the forward's swings), B, L.  Python's standard library only.
"""
import argparse
import http.client
import json
import statistics
import time


def post(conn, path, body):
    """(wall ms, X-Compute-Ms, parsed JSON) of one request, which must succeed."""
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    wall = (time.perf_counter() - t0) * 1e3
    if r.status != 200:
        raise SystemExit(f"POST {path}: {r.status}: {data[:400].decode(errors='replace')}")
    return wall, float(r.getheader("X-Compute-Ms")), data


def p50(v):
    return statistics.median(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=2)
    a = ap.parse_args()
    with open(a.texts, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f if line.strip()]
    B = len(texts)
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    text_body = json.dumps({"text": texts, "attention": "none", "encoding": "base64"})
    _, _, data = post(conn, "/v1/encode", text_body)  # warm-up, and the ids
    ids = json.loads(data)["input_ids"]
    L = len(ids[0])
    if len(ids) != B or any(len(r) != L for r in ids):
        raise SystemExit(f"the texts gave rows of {[len(r) for r in ids]} tokens: not one length")
    ids_body = json.dumps({"input_ids": ids, "attention": "none", "encoding": "base64"})
    emb_body = json.dumps({"input": texts})
    bodies = {"text": ("/v1/encode", text_body), "ids": ("/v1/encode", ids_body),
              "embeddings": ("/v1/embeddings", emb_body)}
    _, _, data = post(conn, *bodies["ids"])
    _, _, data = post(conn, *bodies["embeddings"])
    if len(json.loads(data)["data"]) != B:
        raise SystemExit("/v1/embeddings: not one embedding per text")
    kinds = list(bodies)
    wall = {k: [] for k in kinds}
    comp = {k: [] for k in kinds}
    paired = []
    for r in range(a.rounds):
        order = kinds[r % 3:] + kinds[:r % 3]
        this = {k: [] for k in kinds}
        for k in order:
            for _ in range(a.per_round):
                w, c, _ = post(conn, *bodies[k])
                this[k].append(w)
                wall[k].append(w)
                comp[k].append(c)
        paired.append(p50(this["text"]) / p50(this["ids"]))
        print(f"round {r + 1} ({' '.join(order)}): " + "; ".join(
            f"{k} {', '.join(f'{v:.1f}' for v in this[k])} ms" for k in kinds))
    conn.close()
    n = len(wall["text"])
    for k in kinds:
        print(f"{k:>10}: p50 {p50(wall[k]):.2f} ms (min {min(wall[k]):.2f}, max "
              f"{max(wall[k]):.2f}), the daemon's compute median {p50(comp[k]):.2f} ms, "
              f"{n} requests")
    over = {k: [w - c for w, c in zip(wall[k], comp[k])] for k in kinds}
    for k in kinds:
        print(f"{k:>10}: wall - X-Compute-Ms per request (all but the forward): median "
              f"{p50(over[k]):.2f} ms")
    tp, ip = p50(wall["text"]), p50(wall["ids"])
    ep, ec = p50(wall["embeddings"]), p50(comp["embeddings"])
    print(f"B={B} L={L} (the texts' tokens with [CLS] and [SEP]), attention none: text p50 / ids "
          f"p50 = {tp / ip:.4f} ({tp - ip:+.2f} ms; median of the rounds' ratios "
          f"{p50(paired):.4f}); /v1/embeddings p50 / its compute median = {ep / ec:.4f}")
    res = {"text_p50_ms": f"{tp:.3f}", "ids_p50_ms": f"{ip:.3f}",
           "text_ids_ratio": f"{tp / ip:.4f}", "text_ids_paired": f"{p50(paired):.4f}",
           "text_extra_ms": f"{tp - ip:.3f}", "ids_compute_ms": f"{p50(comp['ids']):.3f}",
           "text_compute_ms": f"{p50(comp['text']):.3f}", "emb_p50_ms": f"{ep:.3f}",
           "emb_compute_ms": f"{ec:.3f}", "emb_ratio": f"{ep / ec:.4f}",
           "text_over_ms": f"{p50(over['text']):.3f}", "ids_over_ms": f"{p50(over['ids']):.3f}",
           "emb_over_ms": f"{p50(over['embeddings']):.3f}", "B": B, "L": L}
    print("RESULT " + " ".join(f"txt_{k}={v}" for k, v in res.items()))


if __name__ == "__main__":
    main()
