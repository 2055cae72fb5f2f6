#!/usr/bin/python3
"""Writes tests/fixtures/seed/expected.json: every parameter of a few seeded
models, computed by an independent Python implementation of the scheme that
attnd uses for models built without a weights file (core/model/model.c):

  stream(seed, layer, tensor): splitmix64 with state
      seed XOR (0x9E3779B97F4A7C15 * (layer * 16 + tensor + 1))  (mod 2^64)
  uniform(bound): u = (next() >> 40) / 2^24;  float32((2u - 1) * bound)
  tensors: 0 = in_proj (or q), 1 = k, 2 = v, 3 = out_proj.weight,
           4 = linear1.weight, 5 = linear1.bias, 6 = linear2.weight, 7 = linear2.bias
  bounds, as PyTorch: xavier_uniform sqrt(6 / (fan_in + fan_out)) for the
  in-projection ((3D, D) as one, or q/k/v each when n_kv_heads < n_heads),
  1/sqrt(fan_in) for the other Linear weights and the FFN biases; in/out
  projection biases 0, LayerNorm weight 1 and bias 0.

Each case also has "embedding": the embedding module
enc_model_seed_embedding gives a seeded model (the built-in model's, which
takes text), for vocab_size V and max_positions P:

  word row id (E = d_model floats): numbers id * E .. id * E + E - 1 of the
      stream (seed, layer -1, tensor 0), uniform(sqrt(3))
  token type rows (2, E): the stream (seed, -1, 1), uniform(sqrt(3))
  positions: transformers' _create_sinusoidal_embeddings (DistilBERT)
  out = LayerNorm(word[id] + type[tt] + pos[p]), weight 1, bias 0, eps 1e-5

written as "rows" (a few ids' word rows, float32 as drawn) and "embedded"
(a sequence's ids and token types, and the module's output, in float64 from
the float32 tables).

It also checks, with PyTorch when it is installed, that those bounds are the
ones torch's own initialisation uses for nn.TransformerEncoderLayer.

Usage: /usr/bin/python3 tools/make_seed_fixture.py tests/fixtures/seed
"""
import json
import math
import os
import sys

import numpy as np

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


class Stream:
    def __init__(self, seed, layer, tensor):
        self.state = (seed ^ ((GOLDEN * (layer * 16 + tensor + 1)) & MASK)) & MASK

    def next(self):
        self.state = (self.state + GOLDEN) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def skip(self, n):
        self.state = (self.state + n * GOLDEN) & MASK

    def uniform(self, n, bound):
        out = np.empty(n, dtype=np.float32)
        for i in range(n):
            u = (self.next() >> 40) * (1.0 / 16777216.0)
            out[i] = np.float32((2.0 * u - 1.0) * bound)
        return out


def seeded_state_dict(hp, seed):
    """state_dict-named float32 arrays for hp, built from seed."""
    D, H, G, F = hp["d_model"], hp["n_heads"], hp["n_kv_heads"], hp["d_ff"]
    KV = G * (D // H)
    sd = {}
    for l in range(hp["n_layers"]):
        p = f"layers.{l}." if hp["n_layers"] > 1 else ""
        if G == H:
            w = Stream(seed, l, 0).uniform(3 * D * D, math.sqrt(6.0 / (D + 3 * D)))
            sd[p + "self_attn.in_proj_weight"] = w
        else:
            sd[p + "self_attn.q_proj_weight"] = Stream(seed, l, 0).uniform(D * D, math.sqrt(6.0 / (D + D)))
            sd[p + "self_attn.k_proj_weight"] = Stream(seed, l, 1).uniform(KV * D, math.sqrt(6.0 / (D + KV)))
            sd[p + "self_attn.v_proj_weight"] = Stream(seed, l, 2).uniform(KV * D, math.sqrt(6.0 / (D + KV)))
        sd[p + "self_attn.out_proj.weight"] = Stream(seed, l, 3).uniform(D * D, 1.0 / math.sqrt(D))
        sd[p + "linear1.weight"] = Stream(seed, l, 4).uniform(F * D, 1.0 / math.sqrt(D))
        sd[p + "linear2.weight"] = Stream(seed, l, 6).uniform(D * F, 1.0 / math.sqrt(F))
        sd[p + "norm1.weight"] = np.ones(D, np.float32)
        sd[p + "norm2.weight"] = np.ones(D, np.float32)
        if hp["bias"]:
            sd[p + "self_attn.in_proj_bias"] = np.zeros(D + 2 * KV, np.float32)
            sd[p + "self_attn.out_proj.bias"] = np.zeros(D, np.float32)
            sd[p + "linear1.bias"] = Stream(seed, l, 5).uniform(F, 1.0 / math.sqrt(D))
            sd[p + "linear2.bias"] = Stream(seed, l, 7).uniform(D, 1.0 / math.sqrt(F))
            sd[p + "norm1.bias"] = np.zeros(D, np.float32)
            sd[p + "norm2.bias"] = np.zeros(D, np.float32)
    return sd


def seeded_embedding(hp, seed, case):
    """The seeded embedding module's word rows and output for case's ids."""
    E, P = hp["d_model"], case["max_positions"]
    bound = math.sqrt(3.0)

    def word(i):
        s = Stream(seed, -1, 0)
        s.skip(i * E)
        return s.uniform(E, bound)

    types = Stream(seed, -1, 1).uniform(2 * E, bound).reshape(2, E)
    pos = np.empty((P, E), np.float32)  # _create_sinusoidal_embeddings, float64 angles
    for p in range(P):
        for j in range(E):
            a = p / math.pow(10000.0, 2.0 * (j // 2) / E)
            pos[p, j] = np.float32(math.sin(a) if j % 2 == 0 else math.cos(a))
    ids, tts = case["ids"], case["token_type_ids"]
    x = np.stack([word(i).astype(np.float64) + types[t] + pos[p]
                  for p, (i, t) in enumerate(zip(ids, tts))])
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    out = (x - mean) / np.sqrt(var + 1e-5)
    return {"vocab_size": case["vocab_size"], "max_positions": P,
            "rows": {str(i): [float(v) for v in word(i)] for i in case["rows"]},
            "ids": ids, "token_type_ids": tts,
            "embedded": [[float(v) for v in row] for row in out]}


def check_bounds_against_torch():
    """torch's own init of a TransformerEncoderLayer stays inside our bounds
    and comes close to them (so the bounds are neither too wide nor too narrow)."""
    try:
        import torch
    except ImportError:
        print("torch not installed: bounds not cross-checked", file=sys.stderr)
        return
    D, F = 64, 256
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D, 4, F)
    sd = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    bounds = {
        "self_attn.in_proj_weight": math.sqrt(6.0 / (D + 3 * D)),
        "self_attn.out_proj.weight": 1.0 / math.sqrt(D),
        "linear1.weight": 1.0 / math.sqrt(D),
        "linear1.bias": 1.0 / math.sqrt(D),
        "linear2.weight": 1.0 / math.sqrt(F),
        "linear2.bias": 1.0 / math.sqrt(F),
    }
    for name, b in bounds.items():
        m = float(np.abs(sd[name]).max())
        assert m <= b and m > 0.9 * b, (name, m, b)
    for name in ("self_attn.in_proj_bias", "self_attn.out_proj.bias", "norm1.bias", "norm2.bias"):
        assert not sd[name].any(), name
    assert (sd["norm1.weight"] == 1).all() and (sd["norm2.weight"] == 1).all()


# "embedding": enc_model_seed_embedding(m, vocab_size, max_positions, seed);
# rows: the word rows written out; ids / token_type_ids: one sequence.
CASES = [
    {"seed": 42, "hp": {"d_model": 8, "n_heads": 4, "n_kv_heads": 4, "d_ff": 12, "n_layers": 2, "bias": True},
     "embedding": {"vocab_size": 73820, "max_positions": 12, "rows": [0, 1, 2, 73819],
                   "ids": [2, 65652, 9057, 73819, 0, 3], "token_type_ids": [0, 0, 0, 1, 1, 1]}},
    {"seed": 0, "hp": {"d_model": 8, "n_heads": 4, "n_kv_heads": 2, "d_ff": 6, "n_layers": 1, "bias": True},
     "embedding": {"vocab_size": 30522, "max_positions": 4096, "rows": [0, 101, 30521],
                   "ids": [101, 7592, 2088, 102], "token_type_ids": [0, 0, 0, 0]}},
    {"seed": 18446744073709551615, "hp": {"d_model": 6, "n_heads": 2, "n_kv_heads": 1, "d_ff": 5, "n_layers": 1, "bias": False},
     "embedding": {"vocab_size": 2000000, "max_positions": 5, "rows": [1999999, 5],
                   "ids": [1999999, 5, 7, 5, 0], "token_type_ids": [1, 0, 1, 0, 1]}},
]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/seed"
    check_bounds_against_torch()
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for c in CASES:
        sd = seeded_state_dict(c["hp"], c["seed"])
        cases.append({"seed": str(c["seed"]), "hp": c["hp"],
                      "params": sum(v.size for v in sd.values()),
                      "tensors": {k: [float(x) for x in v] for k, v in sorted(sd.items())},
                      "embedding": seeded_embedding(c["hp"], c["seed"], c["embedding"])})
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"generator": "tools/make_seed_fixture.py", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
