#!/usr/bin/python3
"""int8_bench.py - attnd's model.dtype int8 over HTTP against PyTorch's quantize_dynamic.

    /usr/bin/python3 bench/int8_bench.py warm --port P --dir DIR [--batch 8] [--len 128]
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/int8_bench.py http --port P --dir DIR
        --threads T [--batch 8] [--len 128] [--rounds 3] [--per-round 3]

Both send B x L random token ids (seed 0, ids 1000 .. vocab - 1: no special
tokens) in POST /v1/encode {"input_ids", "attention": "none", "encoding":
"base64"} to attnd on 127.0.0.1:P serving DIR (a BERT directory, F32
weights: bench/parts/int8.sh's BERT-base-sized one), one request at a time
on a keep-alive connection.

warm: two such requests, so that every weight has been used by a forward
(bench/parts/int8.sh reads the daemon's resident memory before and after).
Prints each one's X-Compute-Ms.

http: the same BERT in PyTorch (Debian's python3-torch): DIR's
model.safetensors read with numpy, the embeddings and the encoder stack as
transformers' BertModel computes them (erf GELU, LayerNorm eps from
config.json, no attention mask: every token real), eval, torch.no_grad(),
its last hidden state; torch.set_num_threads(T), then
torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8).
Run it with OPENBLAS_NUM_THREADS=1: Debian's torch does the attention's
float32 matmuls in the system OpenBLAS, whose own threads would come on top
of ATen's T (and were measured slower on a 2-CPU host), so PyTorch runs on
T threads as attnd's forward does.
First the three outputs are compared once against PyTorch's float32 (per
token cosine): attnd int8's and quantize_dynamic's, so that both are the
same model.  Then --rounds interleaved rounds (the order alternates each
round), --per-round of each per round: attnd's wall time per request (the
client's: request written to response read, the ids' JSON parsed and the
base64 outputs sent included; a new connection, made before the timing,
for each round's turn) against PyTorch's forward (the ids already a
tensor).  Prints the medians, their ratio PyTorch / attnd (above 1: attnd
faster) and the median of the rounds' ratios of medians.
  RESULT i8_http_ms i8_torch_ms i8_http_ratio i8_http_paired i8_http_cos_min
         i8_torch_cos_min
"""
import argparse
import base64
import http.client
import json
import math
import os
import random
import statistics
import struct
import sys
import time


def post(conn, body):
    """(wall ms, X-Compute-Ms, parsed answer) of one request, which must succeed."""
    t0 = time.perf_counter()
    conn.request("POST", "/v1/encode", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    wall = (time.perf_counter() - t0) * 1e3
    if r.status != 200:
        raise SystemExit(f"POST /v1/encode: {r.status}: {data[:400].decode(errors='replace')}")
    return wall, float(r.getheader("X-Compute-Ms")), data


def make_ids(cfg, B, L):
    rng = random.Random(0)
    return [[rng.randrange(1000, cfg["vocab_size"]) for _ in range(L)] for _ in range(B)]


def body_of(ids):
    return json.dumps({"input_ids": ids, "attention": "none", "encoding": "base64"})


def warm(a, cfg):
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    body = body_of(make_ids(cfg, a.batch, a.len))
    for i in range(2):
        _, c, _ = post(conn, body)
        print(f"request {i + 1}: B={a.batch} L={a.len} token ids, X-Compute-Ms {c:.1f}")
    conn.close()


def read_safetensors(path):
    """name -> float32 numpy array (F32 tensors only), read in place."""
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {t['dtype']}; F32 expected")
        b0, b1 = t["data_offsets"]
        out[name] = np.frombuffer(mm[8 + n + b0:8 + n + b1], dtype="<f4").reshape(t["shape"])
    return out


def torch_bert(cfg, w):
    """A BertModel's embeddings and encoder stack on w's tensors (bert. prefix or none)."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    D, H, FF = cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    pre = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

    def t(name):
        return torch.from_numpy(w[pre + name].copy())

    def linear(name, n_in, n_out):
        lin = nn.Linear(n_in, n_out)
        lin.weight.data, lin.bias.data = t(name + ".weight"), t(name + ".bias")
        return lin

    def norm(name):
        ln = nn.LayerNorm(D, eps=eps)
        ln.weight.data, ln.bias.data = t(name + ".weight"), t(name + ".bias")
        return ln

    class Layer(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.q = linear(p + "attention.self.query", D, D)
            self.k = linear(p + "attention.self.key", D, D)
            self.v = linear(p + "attention.self.value", D, D)
            self.o = linear(p + "attention.output.dense", D, D)
            self.ln1 = norm(p + "attention.output.LayerNorm")
            self.ff1 = linear(p + "intermediate.dense", D, FF)
            self.ff2 = linear(p + "output.dense", FF, D)
            self.ln2 = norm(p + "output.LayerNorm")

        def forward(self, x):
            B, L, _ = x.shape
            heads = [f(x).view(B, L, H, D // H).transpose(1, 2) for f in (self.q, self.k, self.v)]
            s = torch.matmul(heads[0], heads[1].transpose(-1, -2)) / math.sqrt(D // H)
            z = torch.matmul(torch.softmax(s, dim=-1), heads[2]).transpose(1, 2).reshape(B, L, D)
            x = self.ln1(x + self.o(z))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding.from_pretrained(t("embeddings.word_embeddings.weight"))
            self.pos = nn.Embedding.from_pretrained(t("embeddings.position_embeddings.weight"))
            self.typ = nn.Embedding.from_pretrained(t("embeddings.token_type_embeddings.weight"))
            self.ln = norm("embeddings.LayerNorm")
            self.layers = nn.ModuleList(Layer(f"encoder.layer.{i}.")
                                        for i in range(cfg["num_hidden_layers"]))

        def forward(self, ids):
            L = ids.shape[1]
            pos = torch.arange(L).unsqueeze(0)
            x = self.ln(self.word(ids) + self.pos(pos) + self.typ(torch.zeros_like(ids)))
            for layer in self.layers:
                x = layer(x)
            return x

    return Bert().eval()


def cos_min(a, b):
    """The smallest per-token cosine between two (B, L, D) tensors."""
    import torch
    return torch.nn.functional.cosine_similarity(a.flatten(0, 1), b.flatten(0, 1), dim=-1).min().item()


def http_vs_torch(a, cfg):
    try:
        import numpy  # noqa: F401
        import torch
        from torch import nn
    except Exception as e:  # ImportError, or a broken install
        print(f"SKIP: {sys.executable} cannot import torch and numpy ({type(e).__name__}: {e})")
        sys.exit(3)
    torch.set_num_threads(a.threads)
    B, L, D = a.batch, a.len, cfg["hidden_size"]
    ids = make_ids(cfg, B, L)
    body = body_of(ids)
    tids = torch.tensor(ids, dtype=torch.long)
    with torch.no_grad():
        f32 = torch_bert(cfg, read_safetensors(os.path.join(a.dir, "model.safetensors")))
        ref = f32(tids)
        q8 = torch.quantization.quantize_dynamic(f32, {nn.Linear}, dtype=torch.qint8)
        del f32
        y8 = q8(tids)
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=600)
    _, _, data = post(conn, body)  # warm-up, and the answer's check
    ans = json.loads(data)
    if ans.get("outputs_shape") != [B, L, D]:
        raise SystemExit(f"attnd answered outputs_shape {ans.get('outputs_shape')}; {[B, L, D]} expected")
    raw = base64.b64decode(ans["outputs"])
    got = torch.tensor(struct.unpack(f"<{B * L * D}f", raw)).view(B, L, D)
    cos_attnd, cos_torch = cos_min(got, ref), cos_min(y8, ref)
    print(f"against PyTorch's float32, per-token cosine min: attnd int8 {cos_attnd:.6f}, "
          f"quantize_dynamic ({torch.backends.quantized.engine}) {cos_torch:.6f}")
    if cos_attnd < 0.99 or cos_torch < 0.99:
        raise SystemExit("attnd and PyTorch do not compute the same model")
    with torch.no_grad():
        q8(tids)  # warm-up
    wall = {"attnd": [], "torch": []}
    paired = []
    for r in range(a.rounds):
        order = ("attnd", "torch") if r % 2 == 0 else ("torch", "attnd")
        this = {"attnd": [], "torch": []}
        for kind in order:
            if kind == "attnd":  # a fresh connection: PyTorch's turn may outlast the idle timeout
                conn.close()
                conn.connect()
            for _ in range(a.per_round):
                if kind == "attnd":
                    this[kind].append(post(conn, body)[0])
                else:
                    t0 = time.perf_counter()
                    with torch.no_grad():
                        q8(tids)
                    this[kind].append((time.perf_counter() - t0) * 1e3)
        for kind in this:
            wall[kind] += this[kind]
        paired.append(statistics.median(this["torch"]) / statistics.median(this["attnd"]))
        print(f"round {r + 1} ({' '.join(order)}): attnd " +
              ", ".join(f"{v:.1f}" for v in this["attnd"]) + " ms; PyTorch " +
              ", ".join(f"{v:.1f}" for v in this["torch"]) + " ms")
    conn.close()
    ma, mt = statistics.median(wall["attnd"]), statistics.median(wall["torch"])
    pr = statistics.median(paired)
    print(f"B={B} L={L} token ids, {cfg['num_hidden_layers']} layers D={D}, {a.threads} threads: "
          f"attnd int8 over HTTP median {ma:.1f} ms, PyTorch quantize_dynamic median {mt:.1f} ms "
          f"({len(wall['attnd'])} each) -> PyTorch / attnd {mt / ma:.3f} (median of the rounds' "
          f"ratios {pr:.3f})")
    res = {"http_ms": f"{ma:.3f}", "torch_ms": f"{mt:.3f}", "http_ratio": f"{mt / ma:.4f}",
           "http_paired": f"{pr:.4f}", "http_cos_min": f"{cos_attnd:.6f}",
           "torch_cos_min": f"{cos_torch:.6f}"}
    print("RESULT " + " ".join(f"i8_{k}={v}" for k, v in res.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("warm", "http"))
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-round", type=int, default=3)
    a = ap.parse_args()
    with open(os.path.join(a.dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if a.mode == "warm":
        warm(a, cfg)
    else:
        http_vs_torch(a, cfg)


if __name__ == "__main__":
    main()
