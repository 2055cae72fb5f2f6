#!/usr/bin/python3
"""tei_bench.py - TEI's routes on a running attnd: /rerank; /embed against /v1/embeddings.

    /usr/bin/python3 bench/tei_bench.py rerank --port P --passages FILE [--query Q] [--rounds 5]
    /usr/bin/python3 bench/tei_bench.py embed --port P --texts FILE [--rounds 5] [--per-round 2]

One request at a time on one keep-alive connection to attnd on
127.0.0.1:P, after one untimed request of each kind.  Each request's wall time
(request written to response read, on the client) and the daemon's
X-Compute-Ms (the forward alone) are recorded; the responses are parsed and
checked outside the timing.

rerank (attnd serving a reranker: a directory with a one-label sequence
head and a tokenizer.json): FILE holds the passages, one a line
(bench/tok_bench.c batch writes 32 of 100 tokens).  POST /tokenize gives
each text's tokens (the pairs' length: [CLS] query [SEP] passage [SEP]),
then --rounds rounds of one POST /rerank {"query": Q, "texts": [the
passages]} (Q: QUERY below unless --query), each answer checked: one {"index", "score"} per passage, every
index once.  Prints each request's wall time and X-Compute-Ms, then the p50
of the wall times, the compute median, their ratio, the median of each
request's wall / X-Compute-Ms, and the median of wall - X-Compute-Ms (what
the request costs beyond the forward: parsing, tokenizing the pairs, the
sigmoid and sort, the answer, the transport).
  RESULT tei_rr_p50_ms tei_rr_compute_ms tei_rr_ratio tei_rr_paired
         tei_rr_over_ms tei_rr_pairs tei_rr_len

embed (attnd serving an embedding model with a tokenizer.json): FILE holds
the texts, one a line (bench/tok_bench.c batch: 8 of 126 tokens, as the
text part sends).  Two kinds of request for the same texts:

  embed       POST /embed {"inputs": [the texts]} (TEI's; "normalize" true,
              its default)
  embeddings  POST /v1/embeddings {"input": [the texts]} (OpenAI's,
              encoding_format float, its default)

Both answers are checked once: one vector per text, the same numbers once
each is scaled to unit length (max abs difference < 1e-5; the model's
pooling normalizes or /embed's default does).  Then --rounds interleaved
rounds (the order alternates each round), --per-round requests of each kind
per round.  Prints, per kind, the p50 of the wall times and the compute
median, the ratio embed p50 / embeddings p50, the median of the rounds'
ratios of medians, and per kind the median of wall - X-Compute-Ms.
  RESULT tei_embed_p50_ms tei_v1_p50_ms tei_embed_ratio tei_embed_paired
         tei_embed_compute_ms tei_v1_compute_ms tei_embed_over_ms
         tei_v1_over_ms tei_embed_maxdiff tei_embed_B

Python's standard library only.
"""
import argparse
import http.client
import json
import math
import statistics
import time

QUERY = "Which river runs through the capital of the northern province?"


def post(conn, path, body):
    """(wall ms, X-Compute-Ms, raw body) of one request, which must succeed."""
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    wall = (time.perf_counter() - t0) * 1e3
    if r.status != 200:
        raise SystemExit(f"POST {path}: {r.status}: {data[:400].decode(errors='replace')}")
    cms = r.getheader("X-Compute-Ms")
    if cms is None:
        raise SystemExit(f"POST {path}: no X-Compute-Ms header")
    return wall, float(cms), data


def p50(v):
    return statistics.median(v)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def rerank(a):
    passages = read_lines(a.passages)
    n = len(passages)
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    # The tokens of the query and of each passage, special tokens included.
    t0 = time.perf_counter()
    conn.request("POST", "/tokenize", body=json.dumps({"inputs": [a.query] + passages}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"POST /tokenize: {r.status}: {data[:400].decode(errors='replace')}")
    toks = [len(t) for t in json.loads(data)]
    lens = [toks[0] + t - 1 for t in toks[1:]]  # [CLS] q [SEP] p [SEP]
    print(f"query {toks[0] - 2} tokens, {n} passages of {min(toks[1:]) - 2}..{max(toks[1:]) - 2} "
          f"tokens: pairs of {min(lens)}..{max(lens)} tokens with the special tokens "
          f"(/tokenize {(time.perf_counter() - t0) * 1e3:.1f} ms)")
    body = json.dumps({"query": a.query, "texts": passages})
    w, c, data = post(conn, "/rerank", body)  # warm-up, and the answer's check
    ans = json.loads(data)
    if (len(ans) != n or sorted(x["index"] for x in ans) != list(range(n)) or
            any(not isinstance(x.get("score"), (int, float)) for x in ans)):
        raise SystemExit(f"/rerank: not one {{index, score}} per passage: {data[:400]!r}")
    print(f"warm-up: {w:.1f} ms (X-Compute-Ms {c:.1f}); {n} {{index, score}}, scores "
          f"{ans[-1]['score']:.4f}..{ans[0]['score']:.4f}, highest passage {ans[0]['index']}")
    wall, comp = [], []
    for r_ in range(a.rounds):
        w, c, _ = post(conn, "/rerank", body)
        wall.append(w)
        comp.append(c)
        print(f"round {r_ + 1}: /rerank {w:.1f} ms, X-Compute-Ms {c:.1f}, beyond the forward "
              f"{w - c:.2f} ms")
    conn.close()
    wp, cp = p50(wall), p50(comp)
    paired = p50([w / c for w, c in zip(wall, comp)])
    over = p50([w - c for w, c in zip(wall, comp)])
    print(f"/rerank, 1 query x {n} passages: p50 {wp:.2f} ms (min {min(wall):.2f}, max "
          f"{max(wall):.2f}), the daemon's compute median {cp:.2f} ms, {len(wall)} requests: "
          f"p50 / compute = {wp / cp:.4f} (median of each request's ratio {paired:.4f}); "
          f"wall - X-Compute-Ms median {over:.2f} ms")
    res = {"rr_p50_ms": f"{wp:.3f}", "rr_compute_ms": f"{cp:.3f}", "rr_ratio": f"{wp / cp:.4f}",
           "rr_paired": f"{paired:.4f}", "rr_over_ms": f"{over:.3f}", "rr_pairs": n,
           "rr_len": max(lens)}
    print("RESULT " + " ".join(f"tei_{k}={v}" for k, v in res.items()))


def unit(v):
    s = math.sqrt(sum(x * x for x in v))
    return [x / s for x in v] if s > 0 else v


def embed(a):
    texts = read_lines(a.texts)
    B = len(texts)
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    bodies = {"embed": ("/embed", json.dumps({"inputs": texts})),
              "embeddings": ("/v1/embeddings", json.dumps({"input": texts}))}
    _, _, data = post(conn, *bodies["embed"])  # warm-up, and the answers' check
    tei = json.loads(data)
    _, _, data = post(conn, *bodies["embeddings"])
    oai = [d["embedding"] for d in sorted(json.loads(data)["data"], key=lambda d: d["index"])]
    if len(tei) != B or len(oai) != B:
        raise SystemExit(f"{B} texts: /embed gave {len(tei)} vectors, /v1/embeddings {len(oai)}")
    if any(len(x) != len(y) for x, y in zip(tei, oai)):
        raise SystemExit("/embed and /v1/embeddings: vectors of different lengths")
    diff = max(abs(p - q) for x, y in zip(tei, oai) for p, q in zip(unit(x), unit(y)))
    if diff >= 1e-5:
        raise SystemExit(f"/embed and /v1/embeddings disagree: max abs difference {diff:.3g}")
    print(f"{B} texts: /embed and /v1/embeddings give {B} vectors of {len(tei[0])}, max abs "
          f"difference {diff:.2g} (each scaled to unit length; /embed's norms "
          f"{min(math.sqrt(sum(v * v for v in x)) for x in tei):.6f}.."
          f"{max(math.sqrt(sum(v * v for v in x)) for x in tei):.6f})")
    kinds = list(bodies)
    wall = {k: [] for k in kinds}
    comp = {k: [] for k in kinds}
    paired = []
    for r in range(a.rounds):
        order = kinds[r % 2:] + kinds[:r % 2]
        this = {k: [] for k in kinds}
        for k in order:
            for _ in range(a.per_round):
                w, c, _ = post(conn, *bodies[k])
                this[k].append(w)
                wall[k].append(w)
                comp[k].append(c)
        paired.append(p50(this["embed"]) / p50(this["embeddings"]))
        print(f"round {r + 1} ({' '.join(order)}): " + "; ".join(
            f"{k} {', '.join(f'{v:.1f}' for v in this[k])} ms" for k in kinds))
    conn.close()
    n = len(wall["embed"])
    for k in kinds:
        print(f"{k:>10}: p50 {p50(wall[k]):.2f} ms (min {min(wall[k]):.2f}, max "
              f"{max(wall[k]):.2f}), the daemon's compute median {p50(comp[k]):.2f} ms, "
              f"{n} requests")
    over = {k: p50([w - c for w, c in zip(wall[k], comp[k])]) for k in kinds}
    for k in kinds:
        print(f"{k:>10}: wall - X-Compute-Ms per request (all but the forward): median "
              f"{over[k]:.2f} ms")
    ep, vp = p50(wall["embed"]), p50(wall["embeddings"])
    print(f"B={B}: /embed p50 / /v1/embeddings p50 = {ep / vp:.4f} ({ep - vp:+.2f} ms; median "
          f"of the rounds' ratios {p50(paired):.4f})")
    res = {"embed_p50_ms": f"{ep:.3f}", "v1_p50_ms": f"{vp:.3f}",
           "embed_ratio": f"{ep / vp:.4f}", "embed_paired": f"{p50(paired):.4f}",
           "embed_compute_ms": f"{p50(comp['embed']):.3f}",
           "v1_compute_ms": f"{p50(comp['embeddings']):.3f}",
           "embed_over_ms": f"{over['embed']:.3f}", "v1_over_ms": f"{over['embeddings']:.3f}",
           "embed_maxdiff": f"{diff:.3g}", "embed_B": B}
    print("RESULT " + " ".join(f"tei_{k}={v}" for k, v in res.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    rr = sub.add_parser("rerank")
    rr.add_argument("--port", type=int, required=True)
    rr.add_argument("--passages", required=True)
    rr.add_argument("--query", default=QUERY)
    rr.add_argument("--rounds", type=int, default=5)
    em = sub.add_parser("embed")
    em.add_argument("--port", type=int, required=True)
    em.add_argument("--texts", required=True)
    em.add_argument("--rounds", type=int, default=5)
    em.add_argument("--per-round", type=int, default=2)
    a = ap.parse_args()
    (rerank if a.mode == "rerank" else embed)(a)


if __name__ == "__main__":
    main()
