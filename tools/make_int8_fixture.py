#!/usr/bin/python3
"""make_int8_fixture - PyTorch's own int8 error, the yardstick of model.dtype
int8 (docs/model.md, "int8").

    /usr/bin/python3 tools/make_int8_fixture.py tests/fixtures/int8

Writes OUTDIR/bert_block.safetensors: the BERT-base-sized block of
tools/make_autocast_fixture.py (d_model 768, 12 heads, d_ff 3072, GELU,
post-norm, eps 1e-5; attnd's seeded weights for seed 7, so the file holds
no weights), its four Linears as nn.Linear modules, and

    x          F32 [2, 24, 768]  the input, N(0, 1) from torch.manual_seed(0)
    y_f32      F32 [2, 24, 768]  the block in float32
    y_int8     F32 [2, 24, 768]  the block after
                                 torch.ao.quantization.quantize_dynamic(block,
                                 {nn.Linear}, dtype=torch.qint8): the
                                 quantized engine's dynamic int8 Linears
                                 (weights per tensor, symmetric; activations
                                 per tensor, u8 asymmetric)
    y_int8_pc  F32 [2, 24, 768]  the same with per_channel_dynamic_qconfig
                                 (weights per output channel, as attnd's)

The engine is PyTorch's default (metadata "engine": onednn for Debian's
torch 1.13, which has no fbgemm; fbgemm computes the same scheme).
OUTDIR/bert_block_outliers.safetensors holds the same for the same block
with outlier dimensions as trained BERTs have (dimension 308 of bert-base;
Dettmers et al. 2022, LLM.int8()): the input's channels OUTLIERS (metadata
"outliers", "outlier_scales") multiplied by 40 and 60, and both LayerNorms'
weights for those channels set to the same factors, so that the outliers
persist into the feed-forward's input and the block's output.  The C test
applies the same change to attnd's seeded model.

Attention's matmuls, softmax, GELU and LayerNorm stay float32 in all three,
as in attnd.  The metadata records PyTorch's per-token cosines to y_f32 of
both.  tests/check_dtype.c runs attnd on x in float32 (against y_f32: the
same model) and in int8, and requires attnd's mean per-token cosine
distance to its float32 to be at most PyTorch's (y_int8's to y_f32) and its
smallest per-token cosine at least 0.99.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_seed_fixture import seeded_state_dict  # noqa: E402
from safetensors_io import save_file  # noqa: E402

SEED = 7
HP = {"d_model": 768, "n_heads": 12, "n_kv_heads": 12, "d_ff": 3072, "n_layers": 1, "bias": True}
B, L = 2, 24
EPS = 1e-5
OUTLIERS = (308, 581)
OUTLIER_SCALES = (40.0, 60.0)


class Block(nn.Module):
    """nn.TransformerEncoderLayer (post-norm, GELU, no dropout) written out,
    its Linears nn.Linear modules so that quantize_dynamic swaps them."""

    def __init__(self, p):
        super().__init__()
        D, F_ = HP["d_model"], HP["d_ff"]
        self.in_proj = nn.Linear(D, 3 * D)
        self.out_proj = nn.Linear(D, D)
        self.linear1 = nn.Linear(D, F_)
        self.linear2 = nn.Linear(F_, D)
        self.norm1 = nn.LayerNorm(D, eps=EPS)
        self.norm2 = nn.LayerNorm(D, eps=EPS)
        names = {"in_proj": "self_attn.in_proj_", "out_proj": "self_attn.out_proj.",
                 "linear1": "linear1.", "linear2": "linear2.", "norm1": "norm1.",
                 "norm2": "norm2."}
        with torch.no_grad():
            for mod, prefix in names.items():
                getattr(self, mod).weight.copy_(p[prefix + "weight"])
                getattr(self, mod).bias.copy_(p[prefix + "bias"])

    def forward(self, x):
        D, H = HP["d_model"], HP["n_heads"]
        E = D // H
        q, k, v = self.in_proj(x).split(D, dim=-1)
        q = q.reshape(B, L, H, E).transpose(1, 2)
        k = k.reshape(B, L, H, E).transpose(1, 2)
        v = v.reshape(B, L, H, E).transpose(1, 2)
        a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(E), dim=-1)
        z = self.out_proj(torch.matmul(a, v).transpose(1, 2).reshape(B, L, D))
        h = self.norm1(x + z)
        return self.norm2(h + self.linear2(F.gelu(self.linear1(h))))


def cosines(y, ref):
    """Per-token cosines of y to ref, in double."""
    return F.cosine_similarity(y.double(), ref.double(), dim=-1).flatten()


def write_case(path, p, x, extra):
    """Runs the block of parameters p on x in float32 and as quantize_dynamic
    (per-tensor and per-channel weights); writes the file and prints."""
    block = Block(p).eval()
    q = torch.ao.quantization.quantize_dynamic(block, {nn.Linear}, dtype=torch.qint8)
    qpc = torch.ao.quantization.quantize_dynamic(
        block, {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}, dtype=torch.qint8)
    with torch.no_grad():
        y32, y8, y8pc = block(x), q(x), qpc(x)
    c8, c8pc = cosines(y8, y32), cosines(y8pc, y32)
    meta = {"generator": "tools/make_int8_fixture.py", "torch": torch.__version__,
            "seed": str(SEED), "engine": torch.backends.quantized.engine,
            "torch_int8_min_cos": repr(float(c8.min())),
            "torch_int8_mean_cos_dist": repr(float((1 - c8).mean())),
            "torch_int8_pc_min_cos": repr(float(c8pc.min())),
            "torch_int8_pc_mean_cos_dist": repr(float((1 - c8pc).mean()))}
    meta.update(extra)
    save_file({"x": x, "y_f32": y32, "y_int8": y8, "y_int8_pc": y8pc}, path, meta)
    for name, c in (("per tensor", c8), ("per channel", c8pc)):
        print(f"{os.path.basename(path)}: PyTorch {torch.__version__} quantize_dynamic qint8 "
              f"({name} weights) against float32: per-token cosine min {float(c.min()):.6f}, "
              f"mean distance {float((1 - c).mean()):.3g}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/int8"
    os.makedirs(out_dir, exist_ok=True)
    D, F_ = HP["d_model"], HP["d_ff"]
    shapes = {"self_attn.in_proj_weight": (3 * D, D), "self_attn.out_proj.weight": (D, D),
              "linear1.weight": (F_, D), "linear2.weight": (D, F_)}
    sd = seeded_state_dict(HP, SEED)
    p = {k: torch.from_numpy(np.asarray(v, np.float32).reshape(shapes.get(k, (-1,))))
         for k, v in sd.items()}
    torch.manual_seed(0)
    x = torch.randn(B, L, D)
    write_case(os.path.join(out_dir, "bert_block.safetensors"), p, x, {})
    po = {k: v.clone() for k, v in p.items()}
    xo = x.clone()
    for c, s in zip(OUTLIERS, OUTLIER_SCALES):
        xo[:, :, c] *= s
        po["norm1.weight"][c] = s
        po["norm2.weight"][c] = s
    write_case(os.path.join(out_dir, "bert_block_outliers.safetensors"), po, xo,
               {"outliers": " ".join(str(c) for c in OUTLIERS),
                "outlier_scales": " ".join(repr(s) for s in OUTLIER_SCALES)})


if __name__ == "__main__":
    main()
