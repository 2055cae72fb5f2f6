#!/usr/bin/python3
"""make_autocast_fixture - PyTorch's own bfloat16 error, the yardstick of
model.dtype bfloat16 (docs/model.md, "bfloat16").

    /usr/bin/python3 tools/make_autocast_fixture.py tests/fixtures/autocast

Writes OUTDIR/bert_block.safetensors: a BERT-base-sized block (d_model 768,
12 heads, d_ff 3072, GELU, post-norm, eps 1e-5) whose weights are attnd's
seeded model for seed 7 (tools/make_seed_fixture.py's independent Python
implementation of the generator, so the file holds no weights), and

    x        F32 [2, 24, 768]  the input, N(0, 1) from torch.manual_seed(0)
    y_f32    F32 [2, 24, 768]  the block in float32
    y_bf16   F32 [2, 24, 768]  the same block under
                               torch.autocast(device_type="cpu", dtype=torch.bfloat16),
                               its outputs widened back to float32

The block is nn.TransformerEncoderLayer's math written out with torch.nn.
functional (F.linear, matmul, softmax, gelu, layer_norm), so that autocast
treats every op as its own lists say (the Linears and attention's matmuls
in bfloat16, softmax and layer_norm in float32) and no fused fast path
decides instead (the Linears and LayerNorms through tools/reference.py's
linear / layer_norm, thin wrappers of F.linear / F.layer_norm).  The metadata records PyTorch's errors: the largest
|y_bf16 - y_f32| and the smallest per-token cosine.  tests/check_dtype.c
runs attnd on x in float32 (against y_f32: the same model) and in bfloat16,
and requires attnd's errors to be at most 1.5x PyTorch's.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_seed_fixture import seeded_state_dict  # noqa: E402
from reference import layer_norm, linear  # noqa: E402
from safetensors_io import save_file  # noqa: E402

SEED = 7
HP = {"d_model": 768, "n_heads": 12, "n_kv_heads": 12, "d_ff": 3072, "n_layers": 1, "bias": True}
B, L = 2, 24
EPS = 1e-5


def block(x, p):
    """nn.TransformerEncoderLayer (post-norm, GELU, no dropout) on x (B, L, D)."""
    D, H = HP["d_model"], HP["n_heads"]
    E = D // H
    qkv = F.linear(x, p["self_attn.in_proj_weight"], p["self_attn.in_proj_bias"])
    q, k, v = qkv.split(D, dim=-1)
    q = q.reshape(B, L, H, E).transpose(1, 2)
    k = k.reshape(B, L, H, E).transpose(1, 2)
    v = v.reshape(B, L, H, E).transpose(1, 2)
    a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(E), dim=-1)
    z = torch.matmul(a, v).transpose(1, 2).reshape(B, L, D)
    z = linear(p, "self_attn.out_proj", z)
    h = layer_norm(p, "norm1", x + z, EPS)
    f = linear(p, "linear2", F.gelu(linear(p, "linear1", h)))
    return layer_norm(p, "norm2", h + f, EPS)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/autocast"
    os.makedirs(out_dir, exist_ok=True)
    D, F_ = HP["d_model"], HP["d_ff"]
    shapes = {"self_attn.in_proj_weight": (3 * D, D), "self_attn.out_proj.weight": (D, D),
              "linear1.weight": (F_, D), "linear2.weight": (D, F_)}
    sd = seeded_state_dict(HP, SEED)
    p = {k: torch.from_numpy(np.asarray(v, np.float32).reshape(shapes.get(k, (-1,))))
         for k, v in sd.items()}
    torch.manual_seed(0)
    x = torch.randn(B, L, D)
    with torch.no_grad():
        y32 = block(x, p)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            y16 = block(x, p).float()
    max_abs = float((y16 - y32).abs().max())
    cos = F.cosine_similarity(y16.double(), y32.double(), dim=-1)
    meta = {"generator": "tools/make_autocast_fixture.py", "torch": torch.__version__,
            "seed": str(SEED), "torch_bf16_max_abs": repr(max_abs),
            "torch_bf16_min_cos": repr(float(cos.min()))}
    save_file({"x": x, "y_f32": y32, "y_bf16": y16},
              os.path.join(out_dir, "bert_block.safetensors"), meta)
    print(f"PyTorch {torch.__version__} autocast bfloat16 against float32: max abs {max_abs:.4g}, "
          f"min cosine {float(cos.min()):.7f}")


if __name__ == "__main__":
    main()
