#!/usr/bin/python3
"""make_fixtures - numeric fixtures for attnd's forward pass, made with PyTorch.

    /usr/bin/python3 tools/make_fixtures.py tests/fixtures/torch [CASE ...]

(only the named cases when given: their floats differ in the last bits from
CPU to CPU, so adding a case leaves the others as they are.)  For every case in CASES it writes

    OUTDIR/<case>/model.safetensors   the weights (through export_safetensors.export,
                                      or export_own for what export() refuses)
    OUTDIR/<case>/case.safetensors    inputs, masks and the expected results

and OUTDIR/README.md, which lists the cases and the file layout.  The C tests
read these files (no Python at test time) and compare with 1e-4 absolute
tolerance.  Output is deterministic: torch.manual_seed per case, one thread,
and the same bytes on every run.
The activations, RoPE and ALiBi tables, rotations and the file round-trip
check are tools/reference.py's, shared with the other fixture scripts.

How expected values are made (docs/contract.md sections 2 and 3):

  - The primary reference is torch's own modules in eval mode:
    nn.TransformerEncoderLayer / nn.TransformerEncoder(enable_nested_tensor=
    False), dropout 0, batch_first.  Gradients stay enabled so torch 1.13
    takes the ordinary Python path, not the C++ fast path (which only runs
    under no_grad and zeroes padded rows through nested tensors).
  - Attention weights come from layer.self_attn(h, h, h, attn_mask,
    key_padding_mask, need_weights=True, average_attn_weights=False / True),
    running the stack layer by layer; that run must reproduce the module's
    own output (atol 1e-6).
  - Grouped-query attention is run through the same modules with each key /
    value head's projection repeated for the query heads that share it, and
    bias=False through the same modules with every bias zero; both are exactly
    the models attnd runs.
  - An independent functional reference (F.linear, F.layer_norm, softmax,
    activations; grouped-query attention with repeat_interleave; its own
    implementation of the allowed-key rule) runs on every case and must match
    the modules (atol 1e-5).  It is the primary reference only where modules
    cannot be: a query row with no allowed key, which torch turns into NaN and
    attnd's contract into zero weights and a zero attention output.

Position encodings inside attention (the `position` setting):

  - ALiBi (Press et al., "Train Short, Test Long", bidirectional as encoders
    use it): a bias -m_h * |p_i - p_j| added to the scaled scores.  torch's
    modules take it as part of a float src_mask [B * n_heads, L, L] (-inf
    where not allowed), so they remain the primary reference; the functional
    reference adds it itself.  The slopes are cross-checked against the
    paper's code, MPT's and BLOOM's formulations.
  - RoPE (rotary embeddings, GPT-NeoX / LLaMA "neox" style or GPT-J /
    RoFormer "gptj" style, optionally partial): torch's modules cannot rotate
    queries and keys, so the functional reference with RoPE is the primary
    reference there.  The modules still run on the same parameters, inputs
    and masks and must agree (1e-5) with the functional reference run without
    RoPE, and the rotation itself is checked against a complex-multiplication
    formulation (torch.polar, float64) within 1e-6.

Gated feed-forward layers (the `ffn` setting, "mlp" by default):

  - "geglu" / "swiglu": linear1 has 2F rows (weight [2F, D], bias [2F]);
    input, gate = linear1(t).chunk(2, dim=-1), the first F columns the input
    and the last F the gate, as transformers' ModernBertMLP
    (models/modernbert/modeling_modernbert.py: `input, gate =
    self.Wi(hidden_states).chunk(2, dim=-1); return self.Wo(self.drop(
    self.act(input) * gate))`); then linear2(act(input) * gate).  act is the
    case's activation (gelu or gelu_tanh) for geglu and SiLU for swiglu
    (whose `activation` is set to "gelu" and unused).  torch's modules cannot
    compute a gated feed-forward, so the functional reference with the gate
    is the primary reference.  The modules run on the same parameters with
    linear1 cut to its first F rows (a plain feed-forward on the input half)
    and must agree (1e-5) with the functional reference run the same way;
    without RoPE, the gated block also agrees (1e-5) with a layer-by-layer
    run of the modules' attention and LayerNorms with a ModernBertMLP-style
    module (nn.Linear(D, 2F), chunk, activation module, nn.Linear(F, D)) as
    the feed-forward; and each gated feed-forward agrees with a second
    formulation (separate F.linear calls on linear1's two row halves, the
    activation written out, float64) within 1e-6.

Block options (the settings norm, final_norm, first_attn_norm, global_every,
local_window, rope_theta_local; ModernBERT's combination):

  - norm "layernorm_nobias": every LayerNorm has a weight and no bias (as
    ModernBERT's norm_bias=False, torch >= 2.1's LayerNorm(bias=False)).
    torch 1.13 has no such LayerNorm, so the modules' LayerNorm biases are
    fixed at zero and the files have no norm bias tensors.
  - final_norm: a LayerNorm (the same eps and kind) after the last layer, as
    nn.TransformerEncoder(norm=nn.LayerNorm(D)), named norm.weight / norm.bias.
  - first_attn_norm false (pre-norm only): layer 0's norm1 is the identity
    (layer 0 computes x + SA(x)); the modules run it with norm1 replaced by
    nn.Identity() and the files have no layers.0.norm1.* (norm1.* for one
    layer).  torch 1.13's layer forward reads norm1.eps, and without a
    src_mask norm1.weight / norm1.bias, to decide on its C++ fast path, so
    that nn.Identity carries the layer's eps and, when the case has no mask,
    the layers get an all-false boolean src_mask (which changes nothing).
  - global_every N / local_window W: layer l is global when l % N == 0 and
    otherwise local, where query i may attend to key j only if |i - j| <= W
    (token indices in the padded sequence) and the case's own mask allows it.
    The allowed-key rule is per layer (layer_allowed), and so are torch's
    src_mask (the case's mask AND the band) and the ALiBi src_mask.  The
    modules then run layer by layer, each nn.TransformerEncoderLayer on its
    own src_mask, with the final LayerNorm (if any) after them.  A padded
    query with no key inside its band gets NaN from torch; that row is zeroed
    after the layer (as a padded key it is masked in every later layer, so no
    other row depends on it), it is zero in the files, and the modules and
    the functional reference are compared on the rows that are never dead.
  - rope_theta_local T: with RoPE, the local layers use theta T instead of
    rope_theta.
"""

import copy
import json
import math
import os
import sys
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_safetensors import DTYPES, collect, export  # noqa: E402
from fixture_cli import fixture_main  # noqa: E402
from reference import (ACT_FN, alibi_bias, apply_rotary, check_saved, cos_sin_full,  # noqa: E402
                       gelu_tanh, rope_by_complex, rope_tables)
from safetensors_io import load_file, save_file  # noqa: E402

ATOL_MODULE = 1e-6       # layer-by-layer run vs the module's forward
ATOL_FUNCTIONAL = 1e-5   # functional reference vs the modules

BIAS_NAMES = ("self_attn.in_proj_bias", "self_attn.out_proj.bias", "linear1.bias",
              "linear2.bias", "norm1.bias", "norm2.bias")
ROUND = {"F16": torch.float16, "BF16": torch.bfloat16}

# Each case: name, what it covers, and what differs from the defaults below.
DEFAULTS = dict(D=16, H=4, G=None, F=32, eps=1e-5, B=2, L=6, n_layers=1, norm_first=False,
                act="relu", bias=True, causal=False, window=None, global_=(), lengths=None,
                key_padding=None, attn_bool=None, attn_add=None, dtype="F32",
                separate_qkv=False, prefixed=False, strided=None, fixed=None, blocks=None,
                position="none", rope_theta=10000.0, rope_dim=None, rope_style="neox",
                position_ids=None, ffn="mlp", norm="layernorm", final_norm=False,
                first_attn_norm=True, global_every=None, local_window=None,
                rope_theta_local=None)
CASES = [
    ("layer_post_relu", "one post-norm block, relu", {}),
    ("layer_pre_gelu", "one pre-norm block, exact (erf) gelu",
     dict(norm_first=True, act="gelu")),
    ("layer_post_gelu_tanh", "one post-norm block, tanh-approximated gelu",
     dict(act="gelu_tanh")),
    ("layer_pre_relu_eps1e-3", "pre-norm, relu, layer_norm_eps 1e-3",
     dict(norm_first=True, eps=1e-3)),
    ("stack3_post_gelu", "3 post-norm blocks (layers.{i}. names), gelu",
     dict(n_layers=3, act="gelu")),
    ("stack3_pre_relu", "3 pre-norm blocks, relu", dict(n_layers=3, norm_first=True)),
    ("layer_nobias", "bias false: no Linear or LayerNorm biases in the file; post-norm, gelu",
     dict(bias=False, act="gelu")),
    ("stack3_nobias_pre_gelu_tanh", "bias false, 3 pre-norm blocks, gelu_tanh",
     dict(bias=False, n_layers=3, norm_first=True, act="gelu_tanh")),
    ("mask_causal", "causal mask", dict(causal=True)),
    ("mask_window_int", "window 1 (the integer form: left = right = 1)", dict(window=(1, 1))),
    ("mask_window_lr", "window left 2, right 0", dict(window=(2, 0))),
    ("mask_window_global", "window left 1 right 1 with global positions [0, 4]",
     dict(window=(1, 1), global_=(0, 4))),
    ("mask_key_padding", "key_padding not at the end: seq 0 pads 2 and 5, seq 1 pads 0 and 3",
     dict(key_padding=((2, 5), (0, 3)))),
    ("mask_lengths", "lengths [6, 3]: padded rows zero in out and attention",
     dict(lengths=(6, 3))),
    ("mask_attn_bool_2d", "random boolean attn [L, L] (true = not allowed)",
     dict(attn_bool="2d")),
    ("mask_attn_bool_3d", "random boolean attn [B, L, L]", dict(attn_bool="3d")),
    ("mask_attn_add_2d", "random float attn [L, L] added to the scaled scores",
     dict(attn_add="2d")),
    ("mask_attn_add_3d", "random float attn [B, L, L] added to the scaled scores",
     dict(attn_add="3d")),
    ("mask_fully_masked_row", "boolean attn [L, L] with row 2 all true: that query gets zero "
     "weights and zero attention output (torch gives NaN); other rows random",
     dict(attn_bool="row2")),
    ("mask_combined", "3 pre-norm blocks, gelu: causal + lengths [6, 4] + key_padding "
     "(seq 0 pads 3, seq 1 pads 1) + window left 2 right 1 + global [1] + float attn [B, L, L]",
     dict(n_layers=3, norm_first=True, act="gelu", causal=True, lengths=(6, 4),
          key_padding=((3,), (1,)), window=(2, 1), global_=(1,), attn_add="3d")),
    ("gqa_kv2", "grouped-query attention: 4 query heads, 2 key/value heads "
     "(q/k/v_proj_weight, in_proj_bias of D + 2*G*head)", dict(G=2)),
    ("mqa_kv1", "multi-query attention (1 key/value head), pre-norm, gelu, causal",
     dict(G=1, norm_first=True, act="gelu", causal=True)),
    ("gqa_stack2", "2 post-norm blocks with 2 key/value heads", dict(G=2, n_layers=2)),
    ("weights_f16", "weights stored as F16 (expected values use the F16-rounded weights); "
     "pre-norm, gelu", dict(dtype="F16", norm_first=True, act="gelu")),
    ("weights_bf16", "weights stored as BF16 (expected values use the BF16-rounded weights)",
     dict(dtype="BF16")),
    ("single_token", "B 1, L 1", dict(B=1, L=1)),
    ("layer_separate_qkv", "n_kv_heads = n_heads but weights as q_proj_weight / k_proj_weight "
     "/ v_proj_weight instead of in_proj_weight", dict(separate_qkv=True)),
    ("layer_prefixed", "one block whose names carry the stack prefix layers.0.",
     dict(prefixed=True)),
    ("odd_sizes", "D 12, H 3, F 20, B 3, L 7, lengths [7, 1, 4]",
     dict(D=12, H=3, F=20, B=3, L=7, lengths=(7, 1, 4))),
    ("long_tiled", "D 64, H 4, F 512, gelu, B 2, L 130, lengths [130, 97]: attention in "
     "tiles of 64 query rows, 227 tokens (past one 192-row chunk of the packed GEMM), K = 512 "
     "in linear2 (its rows copied into strips)",
     dict(D=64, H=4, F=512, act="gelu", B=2, L=130, lengths=(130, 97))),
    ("long_masked", "as long_tiled, pre-norm, with causal + window left 50 right 10 + "
     "global [0, 100]: masks across tile edges",
     dict(D=64, H=4, F=512, act="gelu", B=2, L=130, lengths=(130, 97), norm_first=True,
          causal=True, window=(50, 10), global_=(0, 100))),
    # The sparse patterns (docs/model.md): each given to torch as the dense
    # boolean mask this script computes from the definitions.  L > 64 so
    # query tiles of 64 and key tiles of 32 are cut by the pattern's edges.
    ("sparse_window_tiles", "window 20 at L 150 (tiles cut by the window's edge), lengths "
     "[150, 140]", dict(B=2, L=150, lengths=(150, 140), window=(20, 20))),
    ("sparse_strided", "strided 16 at L 131, odd L, lengths [131, 77]",
     dict(B=2, L=131, lengths=(131, 77), strided=16)),
    ("sparse_strided_causal", "strided 8 with causal: Sparse Transformer's strided pattern; "
     "pre-norm, gelu", dict(B=1, L=97, strided=8, causal=True, norm_first=True, act="gelu")),
    ("sparse_fixed", "fixed block 32 summary 4 at L 140, key padding",
     dict(B=2, L=140, fixed=(32, 4), key_padding=((7, 100), (0, 33, 34)))),
    ("sparse_fixed_odd", "fixed block 7 summary 2 at L 71, causal, 2 layers",
     dict(B=1, L=71, fixed=(7, 2), causal=True, n_layers=2)),
    ("sparse_blocks", "BigBird blocks size 16, window 1, global 1, random 2, seed 1234 at "
     "L 160, lengths [160, 90]",
     dict(B=2, L=160, lengths=(160, 90), blocks=(16, 1, 1, 2, 1234))),
    ("sparse_blocks_seed", "the same blocks with seed 99 and 3 random blocks, GQA (2 key/value "
     "heads)", dict(B=1, L=160, G=2, blocks=(16, 1, 1, 3, 99))),
    ("sparse_union_global", "union: window 3 + strided 24 + global [5, 70] at L 129, "
     "lengths [129, 80]; global rows and columns over every key",
     dict(B=2, L=129, lengths=(129, 80), window=(3, 3), strided=24, global_=(5, 70))),
    ("sparse_union_attn", "union: fixed 16/2 + blocks size 8 window 0 random 1 seed 5, with a "
     "random boolean attn [L, L] on top and a stack of 3 pre-norm blocks",
     dict(B=2, L=90, fixed=(16, 2), blocks=(8, 0, 0, 1, 5), attn_bool="2d", n_layers=3,
          norm_first=True, act="gelu")),
    ("sparse_fully_masked_row", "window 2 with key padding that hides every key of query 40's "
     "window in sequence 0 (zero weights and output for that row)",
     dict(B=1, L=100, window=(2, 2), key_padding=((38, 39, 40, 41, 42),))),
    # Position encodings inside attention: RoPE on the projected queries and
    # keys, ALiBi as a bias on the scaled scores (see the module docstring).
    ("rope_neox", "RoPE, neox style (rotate_half: dims k and k + E/2 rotate together), theta "
     "10000, every head dim rotated; post-norm, relu",
     dict(position="rope", rope_style="neox", rope_theta=10000.0)),
    ("rope_gptj", "RoPE, gptj style (rotate_every_two: dims 2k and 2k + 1 rotate together), "
     "theta 10000", dict(position="rope", rope_style="gptj", rope_theta=10000.0)),
    ("rope_partial", "partial RoPE, neox style: rope_dim 4 of head dim 8 (dims 4..7 pass "
     "through), theta 500",
     dict(D=32, H=4, position="rope", rope_style="neox", rope_theta=500.0, rope_dim=4)),
    ("rope_theta", "RoPE, gptj style, theta 1e6, rope_dim 8 of head dim 16; 2 pre-norm "
     "blocks, gelu",
     dict(D=32, H=2, position="rope", rope_style="gptj", rope_theta=1e6, rope_dim=8,
          norm_first=True, act="gelu", n_layers=2)),
    ("rope_gqa", "RoPE, neox style, with 2 key/value heads (rotated before they are shared "
     "by the query heads), causal", dict(position="rope", G=2, causal=True)),
    ("rope_stack_lengths", "RoPE, neox style, 3 post-norm blocks, lengths [6, 4] and key "
     "padding (seq 0 pads 2 and 5, seq 1 pads 0 and 3); positions stay 0..L-1",
     dict(position="rope", n_layers=3, lengths=(6, 4), key_padding=((2, 5), (0, 3)))),
    ("rope_position_ids", "RoPE, neox style, explicit position_ids: seq 0 [0, 1, 2, 0, 1, 2] "
     "(two packed documents) with a block-diagonal boolean attn [B, L, L] (queries 0-2 see "
     "keys 0-2, queries 3-5 keys 3-5), seq 1 [5, 6, 7, 8, 9, 10] unrestricted (scores "
     "depend on p_i - p_j only, so these ids give the values of 0..L-1 up to rounding)",
     dict(position="rope", position_ids=((0, 1, 2, 0, 1, 2), (5, 6, 7, 8, 9, 10)),
          attn_bool=(((0, 3), (3, 6)), ((0, 6),)))),
    ("rope_position_ids_gaps", "RoPE, gptj style, position_ids that are no shift of 0..L-1: "
     "seq 0 [0, 2, 4, 6, 8, 10], seq 1 [9, 3, 0, 1, 100, 4] (ignoring them changes the "
     "values)", dict(position="rope", rope_style="gptj",
                     position_ids=((0, 2, 4, 6, 8, 10), (9, 3, 0, 1, 100, 4)))),
    ("rope_long", "RoPE, neox style, D 64, H 4, F 128, B 2, L 130, lengths [130, 97], window "
     "left 20 right 20: crosses tiles of 64 queries x 32 keys and skips tiles outside the "
     "window", dict(position="rope", D=64, H=4, F=128, B=2, L=130, lengths=(130, 97),
                    window=(20, 20))),
    ("alibi_h8", "ALiBi, 8 heads (a power of two: slopes 2^-1 .. 2^-8), D 32, L 7",
     dict(position="alibi", D=32, H=8, B=2, L=7)),
    ("alibi_h12", "ALiBi, 12 heads (not a power of two: the 8 slopes 2^-1 .. 2^-8, then "
     "2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5, every other slope of 16 heads), D 48, L 7",
     dict(position="alibi", D=48, H=12, B=2, L=7)),
    ("alibi_causal", "ALiBi with a causal mask, 2 post-norm blocks",
     dict(position="alibi", causal=True, n_layers=2)),
    ("alibi_position_ids", "ALiBi with explicit position_ids: seq 0 [0, 1, 2, 3, 0, 1], seq 1 "
     "[3, 2, 1, 0, 1, 2] (not monotone; the bias uses the absolute distance), lengths [6, 5]",
     dict(position="alibi", position_ids=((0, 1, 2, 3, 0, 1), (3, 2, 1, 0, 1, 2)),
          lengths=(6, 5))),
    ("alibi_long", "ALiBi, D 64, H 4, F 128, B 1, L 150, lengths [150], window left 30 right "
     "30: tiles outside the window skipped",
     dict(position="alibi", D=64, H=4, F=128, B=1, L=150, lengths=(150,), window=(30, 30))),
    ("alibi_gqa_rope_none", "ALiBi with 2 key/value heads (slopes per query head), gelu_tanh",
     dict(position="alibi", G=2, act="gelu_tanh")),
    ("alibi_attn_add", "ALiBi together with a float attn [B, L, L] (both added to the scaled "
     "scores) and key padding (seq 0 pads 1, seq 1 pads 4); pre-norm, gelu",
     dict(position="alibi", attn_add="3d", key_padding=((1,), (4,)), norm_first=True,
          act="gelu")),
    # Gated feed-forward layers: linear1 [2F, D] gives (input, gate) halves,
    # linear2(act(input) * gate) (see the module docstring).
    ("ffn_geglu", "GeGLU feed-forward (linear1 [2F, D]: first F rows the input, last F the "
     "gate; gelu(input) * gate), post-norm", dict(ffn="geglu", act="gelu")),
    ("ffn_geglu_tanh_pre", "GeGLU with tanh-approximated gelu, 2 pre-norm blocks",
     dict(ffn="geglu", act="gelu_tanh", norm_first=True, n_layers=2)),
    ("ffn_swiglu", "SwiGLU feed-forward (silu(input) * gate; activation unused), post-norm, "
     "bias false", dict(ffn="swiglu", act="gelu", bias=False)),
    ("ffn_swiglu_stack_mask", "SwiGLU, 3 pre-norm blocks, causal, lengths [6, 4], 2 key/value "
     "heads", dict(ffn="swiglu", act="gelu", n_layers=3, norm_first=True, causal=True,
                   lengths=(6, 4), G=2)),
    ("ffn_geglu_long", "GeGLU (gelu), D 64, H 4, F 96, B 2, L 130, lengths [130, 97], window "
     "left 20 right 20", dict(ffn="geglu", act="gelu", D=64, H=4, F=96, B=2, L=130,
                              lengths=(130, 97), window=(20, 20))),
    ("ffn_geglu_rope", "GeGLU (gelu) with RoPE as rope_neox (neox style, theta 10000, every "
     "head dim rotated)", dict(ffn="geglu", act="gelu", position="rope", rope_style="neox",
                               rope_theta=10000.0)),
    # Block options (see the module docstring): LayerNorms without bias, a
    # final LayerNorm, no attention norm in layer 0, local / global layers.
    ("norm_nobias", "norm layernorm_nobias: LayerNorms with a weight and no bias (no norm1.bias "
     "/ norm2.bias in the file; Linear biases kept), post-norm", dict(norm="layernorm_nobias")),
    ("norm_nobias_prenorm", "norm layernorm_nobias, 2 pre-norm blocks, gelu",
     dict(norm="layernorm_nobias", norm_first=True, n_layers=2, act="gelu")),
    ("final_norm", "final_norm: a LayerNorm (norm.weight, norm.bias) after the last of 2 "
     "pre-norm blocks", dict(final_norm=True, norm_first=True, n_layers=2)),
    ("final_norm_nobias", "final_norm with norm layernorm_nobias (norm.weight only), 2 pre-norm "
     "blocks, lengths [6, 4]", dict(final_norm=True, norm="layernorm_nobias", norm_first=True,
                                    n_layers=2, lengths=(6, 4))),
    ("first_attn_norm_off", "first_attn_norm false: layer 0 computes x + SA(x) (no "
     "layers.0.norm1.*), 3 pre-norm blocks, final_norm",
     dict(first_attn_norm=False, final_norm=True, norm_first=True, n_layers=3)),
    ("local_global", "global_every 2, local_window 2: layers 1 and 3 of 4 post-norm blocks are "
     "local (abs(i - j) <= 2), L 12, lengths [12, 9] (a padded query with no key in its band)",
     dict(global_every=2, local_window=2, n_layers=4, B=2, L=12, lengths=(12, 9))),
    ("local_global_prenorm_gqa", "global_every 3, local_window 1, 3 pre-norm blocks (layers 1 "
     "and 2 local), 4 query heads and 2 key/value heads, L 10",
     dict(global_every=3, local_window=1, n_layers=3, norm_first=True, H=4, G=2, L=10)),
    ("local_global_causal", "global_every 2, local_window 3 with causal (local layers: "
     "i - 3 <= j <= i), 3 post-norm blocks, L 12",
     dict(global_every=2, local_window=3, causal=True, n_layers=3, L=12)),
    ("local_global_window", "global_every 2, local_window 4 with the request window left 1 right "
     "6 (local layers: i - 1 <= j <= i + 4), 3 post-norm blocks, L 12",
     dict(global_every=2, local_window=4, window=(1, 6), n_layers=3, L=12)),
    ("local_global_rope", "ModernBERT's combination: RoPE (neox) theta 160000 in global layers "
     "and rope_theta_local 10000 in local ones, global_every 3, local_window 2, GeGLU (gelu), "
     "3 pre-norm blocks, L 14",
     dict(position="rope", rope_theta=160000.0, rope_theta_local=10000.0, global_every=3,
          local_window=2, ffn="geglu", act="gelu", norm_first=True, n_layers=3, L=14)),
    ("local_global_alibi", "ALiBi with global_every 2, local_window 2 (layer 1 local), 2 "
     "post-norm blocks, L 10",
     dict(position="alibi", global_every=2, local_window=2, n_layers=2, L=10)),
]


class Case:
    def __init__(self, name, doc, overrides):
        self.name, self.doc = name, doc
        unknown = set(overrides) - set(DEFAULTS)
        assert not unknown, f"{name}: unknown settings {unknown}"
        for k, v in {**DEFAULTS, **overrides}.items():
            setattr(self, k, v)
        if self.G is None:
            self.G = self.H
        self.E = self.D // self.H
        assert self.position in ("none", "rope", "alibi"), name
        assert self.rope_style in ("neox", "gptj"), name
        assert self.ffn in ("mlp", "geglu", "swiglu"), name
        self.R = self.E if self.rope_dim is None else self.rope_dim   # rotated dims per head
        assert self.R % 2 == 0 and 0 < self.R <= self.E, name
        if self.position_ids is not None:
            assert len(self.position_ids) == self.B, name
            assert all(len(r) == self.L and min(r) >= 0 for r in self.position_ids), name
        assert self.norm in ("layernorm", "layernorm_nobias"), name
        assert self.first_attn_norm or self.norm_first, f"{name}: first_attn_norm needs pre-norm"
        assert (self.global_every is None) == (self.local_window is None), name
        assert self.global_every is None or \
            (self.global_every >= 1 and self.local_window >= 0), name
        assert self.rope_theta_local is None or \
            (self.position == "rope" and self.global_every is not None), name

    def config(self):
        return {"d_model": self.D, "n_heads": self.H, "n_kv_heads": self.G, "d_ff": self.F,
                "n_layers": self.n_layers, "activation": self.act,
                "norm_first": self.norm_first, "layer_norm_eps": self.eps, "bias": self.bias}

    def position_config(self):
        """The config keys of the position encoding, appended to config() in
        the fixture's metadata; none for position "none" (the keys of the
        older cases stay exactly as they were)."""
        if self.position == "none":
            return {}
        if self.position == "alibi":
            return {"position": "alibi"}
        return {"position": "rope", "rope_theta": float(self.rope_theta), "rope_dim": self.R,
                "rope_style": self.rope_style}

    def ffn_config(self):
        """The config key of a gated feed-forward, appended after the position
        keys in the fixture's metadata; none for ffn "mlp"."""
        return {} if self.ffn == "mlp" else {"ffn": self.ffn}

    def block_config(self):
        """The config keys of the block options, appended after the position
        and ffn keys in the fixture's metadata, in this order and each only
        where the case uses it: norm, final_norm, first_attn_norm,
        global_every, local_window, rope_theta_local."""
        out = {}
        if self.norm != "layernorm":
            out["norm"] = self.norm
        if self.final_norm:
            out["final_norm"] = True
        if not self.first_attn_norm:
            out["first_attn_norm"] = False
        if self.global_every is not None:
            out["global_every"] = self.global_every
            out["local_window"] = self.local_window
        if self.rope_theta_local is not None:
            out["rope_theta_local"] = float(self.rope_theta_local)
        return out

    def norm_bias(self):
        """Do the LayerNorms (norm1, norm2, the final norm) have a bias?"""
        return self.bias and self.norm == "layernorm"

    def is_local(self, l):
        """Is layer l (0-based) a local layer (attention within local_window)?"""
        return self.global_every is not None and l % self.global_every != 0

    def has_local(self):
        return any(self.is_local(l) for l in range(self.n_layers))

    def layer_theta(self, l):
        """RoPE's theta in layer l: rope_theta_local in a local layer when
        given, rope_theta otherwise."""
        if self.is_local(l) and self.rope_theta_local is not None:
            return self.rope_theta_local
        return self.rope_theta

    def has_norm1(self, l):
        """Does layer l have its attention-sublayer LayerNorm (norm1)?"""
        return self.first_attn_norm or l != 0

    def mask_meta(self):
        win = None if self.window is None else {"left": self.window[0], "right": self.window[1]}
        meta = {"causal": self.causal, "window": win, "global": list(self.global_)}
        if self.strided is not None:
            meta["strided"] = {"stride": self.strided}
        if self.fixed is not None:
            meta["fixed"] = {"block": self.fixed[0], "summary": self.fixed[1]}
        if self.blocks is not None:
            size, window, glob, rnd, seed = self.blocks
            meta["blocks"] = {"size": size, "window": window, "global": glob, "random": rnd,
                              "seed": seed}
        return meta

    def has_pattern(self):
        return any(v is not None for v in (self.window, self.strided, self.fixed, self.blocks))


# ---- parameters ------------------------------------------------------------

# ACT_FN (reference.py): attnd's activation names -> the functional form.
# What the modules get: torch's own strings, and for gelu_tanh a function
# (torch 1.13 has no string for it).
ACT_MODULE = {"relu": "relu", "gelu": "gelu", "gelu_tanh": gelu_tanh}


def gated_act(c):
    """The activation applied to the input half of a gated feed-forward:
    the case's own for geglu, SiLU for swiglu."""
    return F.silu if c.ffn == "swiglu" else ACT_FN[c.act]


def gated_act_module(c):
    """The same as an nn module (for the ModernBertMLP-style run)."""
    if c.ffn == "swiglu":
        return nn.SiLU()
    return nn.GELU(approximate="tanh" if c.act == "gelu_tanh" else "none")


def make_params(c):
    """attnd's parameters for case c: a list (one per layer) of {name: float32
    tensor} under PyTorch's layer-relative state_dict names."""
    layers = []
    for l in range(c.n_layers):
        m = nn.TransformerEncoderLayer(c.D, c.H, c.F, dropout=0.0, batch_first=True)
        with torch.no_grad():
            # Every parameter should matter: replace torch's zero biases and
            # unit LayerNorms with small random values.
            m.self_attn.in_proj_bias.normal_(0.0, 0.1)
            m.self_attn.out_proj.bias.normal_(0.0, 0.1)
            for norm in (m.norm1, m.norm2):
                norm.weight.normal_(1.0, 0.1)
                norm.bias.normal_(0.0, 0.1)
        p = {k: v.detach().clone() for k, v in m.state_dict().items()}
        if c.G != c.H:
            # Grouped-query attention, initialised as torch does separate
            # projections: xavier-uniform each; biases small and random.
            del p["self_attn.in_proj_weight"]
            for k, rows in (("q", c.D), ("k", c.G * c.E), ("v", c.G * c.E)):
                p[f"self_attn.{k}_proj_weight"] = nn.init.xavier_uniform_(torch.empty(rows, c.D))
            p["self_attn.in_proj_bias"] = torch.randn(c.D + 2 * c.G * c.E) * 0.1
        if c.ffn != "mlp":
            # A gated feed-forward: linear1 has 2F rows (input half, then gate
            # half), initialised as nn.Linear(D, 2F) does (as torch's linear1).
            lin = nn.Linear(c.D, 2 * c.F)
            p["linear1.weight"] = lin.weight.detach().clone()
            p["linear1.bias"] = lin.bias.detach().clone()
        if not c.bias:
            for k in BIAS_NAMES:
                del p[k]
        # The block options drop tensors the random stream has already drawn
        # (so it stays that of the plain model): the LayerNorm biases for
        # layernorm_nobias, layer 0's norm1 for first_attn_norm false.
        for k in ("norm1.bias", "norm2.bias"):
            if not c.norm_bias():
                p.pop(k, None)
        if not c.has_norm1(l):
            for k in ("norm1.weight", "norm1.bias"):
                p.pop(k, None)
        if c.dtype in ROUND:
            p = {k: v.to(ROUND[c.dtype]).float() for k, v in p.items()}
        layers.append(p)
    return layers


def make_final_norm(c):
    """{name: float32 tensor}: the final LayerNorm's parameters under
    nn.TransformerEncoder's names (norm.weight, norm.bias; no norm.bias when
    the norms have none), random as the other norms'; {} without
    final_norm.  Drawn after make_params, so a case without it draws nothing."""
    if not c.final_norm:
        return {}
    norm = nn.LayerNorm(c.D, eps=c.eps)
    with torch.no_grad():
        norm.weight.normal_(1.0, 0.1)
        norm.bias.normal_(0.0, 0.1)
    p = {"norm.weight": norm.weight.detach().clone()}
    if c.norm_bias():
        p["norm.bias"] = norm.bias.detach().clone()
    if c.dtype in ROUND:
        p = {k: v.to(ROUND[c.dtype]).float() for k, v in p.items()}
    return p


def model_names(c, params, final):
    """{file name: tensor} of the whole model as the weights file holds it:
    layer names (layers.{i}. for a stack or a prefixed case, q/k/v_proj_weight
    for separate_qkv), then the final norm's."""
    prefixed = c.n_layers > 1 or c.prefixed
    out = {}
    for l, p in enumerate(params):
        prefix = f"layers.{l}." if prefixed else ""
        for k, v in p.items():
            if c.separate_qkv and k == "self_attn.in_proj_weight":
                for name, part in zip("qkv", v.split(c.D)):
                    out[f"{prefix}self_attn.{name}_proj_weight"] = part
            else:
                out[prefix + k] = v
    out.update(final)
    return out


def expected_names(c):
    """The weights file's tensor names for case c, from its settings alone
    (independent of make_params): checks that every option writes the names
    it should."""
    prefixed = c.n_layers > 1 or c.prefixed
    names = set()
    for l in range(c.n_layers):
        prefix = f"layers.{l}." if prefixed else ""
        if c.separate_qkv or c.G != c.H:
            layer = ["self_attn.q_proj_weight", "self_attn.k_proj_weight",
                     "self_attn.v_proj_weight"]
        else:
            layer = ["self_attn.in_proj_weight"]
        layer += ["self_attn.out_proj.weight", "linear1.weight", "linear2.weight",
                  "norm2.weight"]
        if c.bias:
            layer += ["self_attn.in_proj_bias", "self_attn.out_proj.bias", "linear1.bias",
                      "linear2.bias"]
        if c.norm_bias():
            layer += ["norm2.bias"]
        if c.has_norm1(l):
            layer += ["norm1.weight"] + (["norm1.bias"] if c.norm_bias() else [])
        names |= {prefix + k for k in layer}
    if c.final_norm:
        names |= {"norm.weight"} | ({"norm.bias"} if c.norm_bias() else set())
    return names


def plain_params(c, params):
    """params with linear1 cut to its first F rows (the input half of a gated
    feed-forward): the plain feed-forward torch's modules can run."""
    if c.ffn == "mlp":
        return params
    return [{k: v[:c.F] if k in ("linear1.weight", "linear1.bias") else v
             for k, v in p.items()} for p in params]


def _repeat_kv(w, c):
    """[G*E, ...] -> [H*E, ...]: each key/value head once per query head using it."""
    return w.reshape(c.G, c.E, *w.shape[1:]).repeat_interleave(c.H // c.G, dim=0) \
        .reshape(c.H * c.E, *w.shape[1:])


def torch_state_dict(p, c):
    """A standard nn.TransformerEncoderLayer state_dict computing the same
    function as attnd's parameters p (kv heads repeated, absent biases zero)."""
    sd = {k: v for k, v in p.items()
          if k not in ("self_attn.q_proj_weight", "self_attn.k_proj_weight",
                       "self_attn.v_proj_weight")}
    if "self_attn.in_proj_weight" not in p:
        sd["self_attn.in_proj_weight"] = torch.cat([
            p["self_attn.q_proj_weight"], _repeat_kv(p["self_attn.k_proj_weight"], c),
            _repeat_kv(p["self_attn.v_proj_weight"], c)])
    if c.bias:
        bq, bk, bv = p["self_attn.in_proj_bias"].split([c.D, c.G * c.E, c.G * c.E])
        sd["self_attn.in_proj_bias"] = torch.cat([bq, _repeat_kv(bk, c), _repeat_kv(bv, c)])
    else:
        sizes = {"self_attn.in_proj_bias": 3 * c.D, "linear1.bias": c.F}
        for k in BIAS_NAMES:
            if not k.startswith("norm"):
                sd[k] = torch.zeros(sizes.get(k, c.D))
    # LayerNorms without bias (bias false, layernorm_nobias): bias fixed at
    # zero.  A layer without norm1 (first_attn_norm false) has an nn.Identity
    # there, with no parameters.
    for n in ("norm1", "norm2"):
        if f"{n}.weight" in p and f"{n}.bias" not in p:
            sd[f"{n}.bias"] = torch.zeros(c.D)
    return sd


def torch_model(c, params, final):
    """(model, layers): the nn module for case c, in eval mode: an
    nn.TransformerEncoderLayer, or an nn.TransformerEncoder for a stack or a
    final norm (norm=nn.LayerNorm(D), its bias zero when the norms have none).
    Layer 0 without its attention norm has norm1 = nn.Identity(), which
    carries the layer's eps for torch 1.13's fast-path check (see the module
    docstring)."""
    layer = nn.TransformerEncoderLayer(c.D, c.H, c.F, dropout=0.0, activation=ACT_MODULE[c.act],
                                       layer_norm_eps=c.eps, batch_first=True,
                                       norm_first=c.norm_first)
    if c.n_layers == 1 and not c.final_norm:
        model, mods = layer, [layer]
    else:
        norm = nn.LayerNorm(c.D, eps=c.eps) if c.final_norm else None
        model = nn.TransformerEncoder(layer, num_layers=c.n_layers, norm=norm,
                                      enable_nested_tensor=False)
        mods = list(model.layers)
    for l, (m, p) in enumerate(zip(mods, params)):
        if not c.has_norm1(l):
            m.norm1 = nn.Identity()
            m.norm1.eps = c.eps
        m.load_state_dict(torch_state_dict(p, c), strict=True)
    if c.final_norm:
        model.norm.load_state_dict({"weight": final["norm.weight"],
                                    "bias": final.get("norm.bias", torch.zeros(c.D))},
                                   strict=True)
    model.eval()
    return model, mods


# ---- inputs and masks --------------------------------------------------------

def make_inputs(c):
    """x and the mask tensors of case c (None where the case has none)."""
    B, L = c.B, c.L
    x = torch.randn(B, L, c.D)
    lengths = None if c.lengths is None else torch.tensor(c.lengths, dtype=torch.int32)
    key_padding = None
    if c.key_padding is not None:
        key_padding = torch.zeros(B, L, dtype=torch.bool)
        for b, pos in enumerate(c.key_padding):
            key_padding[b, list(pos)] = True
    attn_bool = attn_add = None
    if isinstance(c.attn_bool, tuple):
        # Documents per sequence as [start, end) segments: a query sees the
        # keys of its own segment only (true = not allowed elsewhere).
        attn_bool = torch.ones(B, L, L, dtype=torch.bool)
        for b, segments in enumerate(c.attn_bool):
            for start, end in segments:
                attn_bool[b, start:end, start:end] = False
    elif c.attn_bool is not None:
        shape = (B, L, L) if c.attn_bool == "3d" else (L, L)
        attn_bool = torch.rand(shape) < 0.35
        if c.attn_bool == "row2":
            attn_bool[2, :] = True
    if c.attn_add is not None:
        attn_add = torch.randn((B, L, L) if c.attn_add == "3d" else (L, L))
    return x, lengths, key_padding, attn_bool, attn_add


MASK64 = (1 << 64) - 1


def splitmix64(state):
    """(new state, output) of splitmix64, in Python integers mod 2**64."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def random_blocks(size, window, glob, rnd, seed, n, qb):
    """BigBird's random key blocks of query block qb for a sequence of n
    tokens, as docs/model.md gives the generator."""
    nb = (n + size - 1) // size
    if qb < glob or rnd == 0:
        return set()
    cand = [kb for kb in range(glob, nb) if abs(qb - kb) > window]
    x = (seed ^ (0x9E3779B97F4A7C15 * (qb + 1))) & MASK64
    k = min(rnd, len(cand))
    for t in range(k):
        x, r = splitmix64(x)
        u = t + r % (len(cand) - t)
        cand[t], cand[u] = cand[u], cand[t]
    return set(cand[:k])


def in_pattern(c, n, i, j):
    """The pattern options, a union; their absence allows every pair."""
    if not c.has_pattern():
        return True
    if i in c.global_ or j in c.global_:
        return True
    if c.window is not None and i - c.window[0] <= j <= i + c.window[1]:
        return True
    if c.strided is not None and (abs(i - j) < c.strided or (i - j) % c.strided == 0):
        return True
    if c.fixed is not None:
        l, s = c.fixed
        if i // l == j // l or j % l >= l - s:
            return True
    if c.blocks is not None:
        size, window, glob, rnd, seed = c.blocks
        qb, kb = i // size, j // size
        if abs(qb - kb) <= window or qb < glob or kb < glob or \
                kb in random_blocks(size, window, glob, rnd, seed, n, qb):
            return True
    return False


def allowed_keys(c, lengths, key_padding, attn_bool, ignore_bool=False, layer=None):
    """[B, L, L] bool: may query i of sequence b attend to key j?  The mask
    rule of docs/model.md, written out condition by condition.  With layer
    l, the rule of that layer: in a local layer also |i - j| <= local_window
    (token indices in the padded sequence), on top of everything else."""
    B, L = c.B, c.L
    local = layer is not None and c.is_local(layer)
    allowed = torch.zeros(B, L, L, dtype=torch.bool)
    for b in range(B):
        n = L if lengths is None else int(lengths[b])
        for i in range(L):
            for j in range(L):
                ok = j < n
                ok = ok and not (key_padding is not None and bool(key_padding[b, j]))
                ok = ok and (not c.causal or j <= i)
                ok = ok and in_pattern(c, n, i, j)
                if attn_bool is not None and not ignore_bool:
                    m = attn_bool[b] if attn_bool.dim() == 3 else attn_bool
                    ok = ok and not bool(m[i, j])
                ok = ok and (not local or abs(i - j) <= c.local_window)
                allowed[b, i, j] = ok
    return allowed


def layer_allowed(c, lengths, key_padding, attn_bool):
    """[allowed_keys of layer l for every layer l]: the same tensor for
    every layer unless the case has local layers."""
    if not c.has_local():
        return [allowed_keys(c, lengths, key_padding, attn_bool)] * c.n_layers
    return [allowed_keys(c, lengths, key_padding, attn_bool, layer=l)
            for l in range(c.n_layers)]


def keep_rows_alive(c, lengths, key_padding, attn_bool):
    """Clears attn_bool entries so that every query row keeps an allowed key
    (except row 2 of the fully masked case); modifies attn_bool in place."""
    if attn_bool is None:
        return
    others = allowed_keys(c, lengths, key_padding, attn_bool, ignore_bool=True)
    for b in range(c.B):
        for i in range(c.L):
            if c.attn_bool == "row2" and i == 2:
                continue
            m = attn_bool[b] if attn_bool.dim() == 3 else attn_bool
            if not (others[b, i] & ~m[i]).any():
                cand = [j for j in range(c.L) if others[b, i, j]]
                m[i, i if i in cand else cand[0]] = False


def torch_masks(c, lengths, key_padding, attn_bool, attn_add, layer=None):
    """The masks handed to torch: (src_mask, src_key_padding_mask).

    src_key_padding_mask carries lengths and key_padding; src_mask carries
    causal, window / global, attn_bool and attn_add (and, for a local layer,
    the band |i - j| <= local_window): bool when there is no attn_add, else
    float with -inf where not allowed; [L, L] when nothing is per-sequence,
    else [B * n_heads, L, L] (torch's batch-major head layout)."""
    B, L = c.B, c.L
    kpm = None
    if lengths is not None or key_padding is not None:
        kpm = torch.zeros(B, L, dtype=torch.bool)
        if lengths is not None:
            kpm |= torch.arange(L)[None, :] >= lengths[:, None].long()
        if key_padding is not None:
            kpm |= key_padding
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    block = torch.zeros(L, L, dtype=torch.bool)
    if c.causal:
        block |= j > i
    sparse = c.strided is not None or c.fixed is not None or c.blocks is not None
    if c.window is not None and not sparse:
        left, right = c.window
        in_win = (j >= i - left) & (j <= i + right)
        for g in c.global_:
            in_win |= (i == g) | (j == g)
        block |= ~in_win
    per_seq = (attn_bool is not None and attn_bool.dim() == 3) or \
              (attn_add is not None and attn_add.dim() == 3) or (sparse and lengths is not None)
    if per_seq:
        block = block.expand(B, L, L).clone()
    if sparse:
        # The sparse patterns as the dense boolean mask of the equivalent
        # pairs, per sequence (the blocks count over its own length).
        for b in range(B):
            n = L if lengths is None else int(lengths[b])
            pat = torch.tensor([[not in_pattern(c, n, ii, jj) for jj in range(L)]
                                for ii in range(L)])
            if per_seq:
                block[b] |= pat
            else:
                block |= pat
    if attn_bool is not None:
        block = block | attn_bool
    if layer is not None and c.is_local(layer):
        block = block | ((i - j).abs() > c.local_window)
    if attn_add is not None:
        mask = torch.where(block, torch.tensor(float("-inf")), attn_add)
    elif block.any():
        mask = block
    else:
        mask = None
    if mask is not None and per_seq:
        mask = mask.repeat_interleave(c.H, dim=0)
    return mask, kpm


# ---- position encodings ------------------------------------------------------------

def positions(c):
    """int64 [B, L]: every token's position, 0..L-1 in each sequence unless
    the case gives position_ids.  Padded positions keep theirs (they are
    masked, not renumbered)."""
    if c.position_ids is None:
        return torch.arange(c.L, dtype=torch.int64).expand(c.B, c.L).clone()
    return torch.tensor(c.position_ids, dtype=torch.int64)


def apply_rope(c, x, cos, sin, pos, theta):
    """x [B, heads, L, E] float32 with RoPE on the first R dims of every head;
    dims R..E-1 pass through (partial rotary: GPT-NeoX's rotary_ndims,
    GPT-J's rotary_dim).  neox: modeling_llama.py apply_rotary_pos_emb,
    q * cos + rotate_half(q) * sin with cos = cat(cos_k, cos_k), so
    out[k] = x[k] cos_k - x[k + R/2] sin_k, out[k + R/2] = x[k + R/2] cos_k +
    x[k] sin_k.  gptj: modeling_gptj.py apply_rotary_pos_emb, tensor * cos +
    rotate_every_two(tensor) * sin with cos, sin repeat_interleave'd by 2, so
    out[2k] = x[2k] cos_k - x[2k+1] sin_k, out[2k+1] = x[2k+1] cos_k +
    x[2k] sin_k.  Float32 products, each rounded, then one float32 sum."""
    R = c.R
    cos_r, sin_r = cos_sin_full(cos, sin, c.rope_style)                # [B, L, R]
    x_rot, x_pass = x[..., :R], x[..., R:]
    x_rot = apply_rotary(x_rot, cos_r[:, None], sin_r[:, None], c.rope_style)
    out = torch.cat((x_rot, x_pass), dim=-1)
    check_rope(c, x, out, pos, theta)
    return out


def check_rope(c, x, out, pos, theta):
    """The rotation again, independently: each rotated pair as a complex
    number times torch.polar(1, angle), all in float64 (angles from torch's
    own arange / pow, theta the layer's), within 1e-6; the unrotated dims
    unchanged."""
    R = c.R
    inv_freq = torch.tensor(float(theta), dtype=torch.float64) ** \
        (-torch.arange(0, R, 2, dtype=torch.float64) / R)
    angle = pos.to(torch.float64)[..., None] * inv_freq                  # [B, L, R/2]
    want = rope_by_complex(x[..., :R], angle[:, None], c.rope_style)     # [B, heads, L, R]
    got = out[..., :R].detach().to(torch.float64)
    assert torch.allclose(got, want, rtol=0, atol=1e-6), \
        f"{c.name}: RoPE differs from the complex formulation " \
        f"(max {(got - want).abs().max():.3g})"
    assert torch.equal(out[..., R:], x[..., R:]), c.name


def alibi_src_mask(c, src_mask, pos):
    """torch's float src_mask [B * n_heads, L, L] for an ALiBi case: the ALiBi
    bias (batch-major heads, as torch lays them out) plus what src_mask says:
    -inf where a boolean mask is true, its values where it is float."""
    B, H, L = c.B, c.H, c.L
    bias = alibi_bias(pos, c.H).reshape(B * H, L, L)
    if src_mask is None:
        return bias
    if src_mask.dtype == torch.bool:
        src_mask = torch.zeros(src_mask.shape).masked_fill(src_mask, float("-inf"))
    return src_mask + bias


def layer_src_masks(c, lengths, key_padding, attn_bool, attn_add, pos):
    """([src_mask of layer l for every layer l], src_key_padding_mask): one
    object for every layer unless the case has local layers, whose src_mask
    adds the band (torch_masks(layer=l)); for ALiBi as alibi_src_mask.  With
    norm1 an nn.Identity (first_attn_norm false) a missing src_mask becomes an
    all-false boolean [L, L], so torch 1.13's fast-path check stops before it
    reads norm1.weight (see the module docstring)."""
    layers = range(c.n_layers) if c.has_local() else [None]
    masks = []
    for layer in layers:
        src_mask, kpm = torch_masks(c, lengths, key_padding, attn_bool, attn_add, layer)
        if c.position == "alibi":
            src_mask = alibi_src_mask(c, src_mask, pos)
        if src_mask is None and not c.first_attn_norm:
            src_mask = torch.zeros(c.L, c.L, dtype=torch.bool)
        masks.append(src_mask)
    if not c.has_local():
        masks = masks * c.n_layers
    return masks, kpm


# ---- references ----------------------------------------------------------------

def module_reference(c, model, mods, x, masks, kpm, dead):
    """Runs the modules, layer l with src_mask masks[l].  Returns (out,
    [weights per layer], [mean weights per layer]); checks the layer-by-layer
    run of self_attn, norms and feed-forward against the modules' forward:
    model(x) when every layer has the same mask (and a stack has no dead
    row), else each layer's own forward in turn, then the final norm.  In
    that second form a row dead in layer l (dead[l], padded queries only) is
    zeroed after the layer in both runs (torch gives NaN there)."""
    chained = any(m is not masks[0] for m in masks) or \
        (c.n_layers > 1 and any(d.any() for d in dead))
    if not chained:
        if c.n_layers == 1 and not c.final_norm:
            out = model(x, src_mask=masks[0], src_key_padding_mask=kpm)
        else:
            out = model(x, mask=masks[0], src_key_padding_mask=kpm)
    else:
        out = x
        for m, src_mask, d in zip(mods, masks, dead):
            out = m(out, src_mask=src_mask, src_key_padding_mask=kpm)
            out = out.masked_fill(d[..., None], 0.0)
        if c.final_norm:
            out = model.norm(out)
    h = x
    heads, means = [], []
    for m, src_mask, d in zip(mods, masks, dead):
        a_in = m.norm1(h) if m.norm_first else h
        a, w = m.self_attn(a_in, a_in, a_in, attn_mask=src_mask, key_padding_mask=kpm,
                           need_weights=True, average_attn_weights=False)
        _, wm = m.self_attn(a_in, a_in, a_in, attn_mask=src_mask, key_padding_mask=kpm,
                            need_weights=True, average_attn_weights=True)
        if m.norm_first:
            h = h + a
            h = h + m.linear2(m.activation(m.linear1(m.norm2(h))))
        else:
            h = m.norm1(h + a)
            h = m.norm2(h + m.linear2(m.activation(m.linear1(h))))
        if chained:
            h = h.masked_fill(d[..., None], 0.0)
        heads.append(w.detach())
        means.append(wm.detach())
    if c.final_norm:
        h = model.norm(h)
    out = out.detach()
    both = torch.isfinite(out) & torch.isfinite(h.detach())
    assert torch.equal(torch.isfinite(out), torch.isfinite(h.detach())), c.name
    assert torch.allclose(out[both], h.detach()[both], rtol=0, atol=ATOL_MODULE), \
        f"{c.name}: layer-by-layer run differs from the module's forward"
    return out, heads, means


def functional_reference(c, params, final, x, allowed, add, pos=None, position=None,
                         ffn=None):
    """attnd's computation in plain torch ops.  Returns (out, [weights per
    layer]); a query row with no allowed key gets zero weights.  allowed is
    the allowed-key rule per layer (layer_allowed).  position (default
    c.position): "rope" rotates the projected queries and keys (the G key
    heads before they are shared) with the layer's theta, "alibi" adds
    ALiBi's bias to the scaled scores after add.  ffn (default c.ffn):
    "geglu" / "swiglu" run the gated feed-forward (checked again in
    check_gated), "mlp" the plain one.  A LayerNorm without bias is
    F.layer_norm with bias None; layer 0 without norm1 (first_attn_norm
    false) attends to x itself; final (the final norm's parameters, or {})
    is applied after the last layer."""
    H, G, E, D = c.H, c.G, c.E, c.D
    act = ACT_FN[c.act]
    ffn_kind = c.ffn if ffn is None else ffn
    assert len(allowed) == len(params) == c.n_layers, c.name
    position = c.position if position is None else position
    tables = {}
    if position == "rope":
        for l in range(c.n_layers):
            theta = c.layer_theta(l)
            if theta not in tables:
                tables[theta] = rope_tables(pos, theta, c.R)
    elif position == "alibi":
        bias = alibi_bias(pos, c.H)                  # [B, H, L, L]

    def ln(t, p, k):
        return F.layer_norm(t, (D,), p[f"{k}.weight"], p.get(f"{k}.bias"), c.eps)

    def mha(t, p, l):
        B, L, _ = t.shape
        any_allowed = allowed[l].any(-1)[:, None, :, None]  # [B, 1, L, 1]
        if "self_attn.in_proj_weight" in p:
            wq, wk, wv = p["self_attn.in_proj_weight"].split([D, D, D])
        else:
            wq, wk, wv = (p[f"self_attn.{k}_proj_weight"] for k in "qkv")
        bq = bk = bv = None
        if c.bias:
            bq, bk, bv = p["self_attn.in_proj_bias"].split([D, G * E, G * E])
        q = F.linear(t, wq, bq).view(B, L, H, E).transpose(1, 2)   # [B, H, L, E]
        k = F.linear(t, wk, bk).view(B, L, G, E).transpose(1, 2)   # [B, G, L, E]
        v = F.linear(t, wv, bv).view(B, L, G, E).transpose(1, 2)
        if position == "rope":
            theta = c.layer_theta(l)
            cos, sin = tables[theta]
            q = apply_rope(c, q, cos, sin, pos, theta)
            k = apply_rope(c, k, cos, sin, pos, theta)
        k = k.repeat_interleave(H // G, dim=1)                      # head h -> kv h // (H/G)
        v = v.repeat_interleave(H // G, dim=1)
        s = (q / math.sqrt(E)) @ k.transpose(-2, -1) + add[:, None]
        if position == "alibi":
            s = s + bias
        s = s.masked_fill(~allowed[l][:, None], float("-inf"))
        w = torch.where(any_allowed, torch.softmax(s, dim=-1), torch.zeros(()))
        z = (w @ v).transpose(1, 2).reshape(B, L, D)
        return F.linear(z, p["self_attn.out_proj.weight"], p.get("self_attn.out_proj.bias")), w

    def ffn(t, p):
        if ffn_kind != "mlp":
            # ModernBertMLP's order: the first F columns the input, the last F
            # the gate.
            inp, gate = F.linear(t, p["linear1.weight"], p.get("linear1.bias")).chunk(2, dim=-1)
            out = F.linear(gated_act(c)(inp) * gate, p["linear2.weight"], p.get("linear2.bias"))
            check_gated(c, t, p, out)
            return out
        return F.linear(act(F.linear(t, p["linear1.weight"], p.get("linear1.bias"))),
                        p["linear2.weight"], p.get("linear2.bias"))

    heads = []
    for l, p in enumerate(params):
        if c.norm_first:
            if c.has_norm1(l):
                a, w = mha(ln(x, p, "norm1"), p, l)
            else:
                assert "norm1.weight" not in p and "norm1.bias" not in p, c.name
                a, w = mha(x, p, l)
            x = x + a
            x = x + ffn(ln(x, p, "norm2"), p)
        else:
            a, w = mha(x, p, l)
            x = ln(x + a, p, "norm1")
            x = ln(x + ffn(x, p), p, "norm2")
        heads.append(w)
    if final:
        x = F.layer_norm(x, (D,), final["norm.weight"], final.get("norm.bias"), c.eps)
    return x.detach(), [w.detach() for w in heads]


def check_gated(c, t, p, out):
    """A gated feed-forward again, independently: the input and the gate from
    two separate F.linear calls on linear1's row halves [:F] and [F:], the
    activation written out (0.5 x (1 + erf(x / sqrt 2)), the tanh formula,
    x * sigmoid(x)), all in float64; within 1e-6 of out."""
    d = torch.float64
    w1 = p["linear1.weight"].to(d)
    assert w1.shape == (2 * c.F, c.D), c.name
    b1 = p["linear1.bias"].to(d) if "linear1.bias" in p else None
    t64 = t.detach().to(d)
    inp = F.linear(t64, w1[:c.F], None if b1 is None else b1[:c.F])
    gate = F.linear(t64, w1[c.F:], None if b1 is None else b1[c.F:])
    if c.ffn == "swiglu":
        a = inp * torch.sigmoid(inp)
    elif c.act == "gelu":
        a = 0.5 * inp * (1.0 + torch.erf(inp / math.sqrt(2.0)))
    else:
        assert c.act == "gelu_tanh", c.name
        a = 0.5 * inp * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                          (inp + 0.044715 * inp ** 3)))
    want = F.linear(a * gate, p["linear2.weight"].to(d),
                    p["linear2.bias"].to(d) if "linear2.bias" in p else None)
    got = out.detach().to(d)
    assert torch.allclose(got, want, rtol=0, atol=1e-6), \
        f"{c.name}: the gated feed-forward differs from the split formulation " \
        f"(max {(got - want).abs().max():.3g})"


class GatedMLP(nn.Module):
    """transformers' ModernBertMLP (models/modernbert/modeling_modernbert.py)
    without dropout: Wi = nn.Linear(D, 2F), Wo = nn.Linear(F, D)."""

    def __init__(self, c, p):
        super().__init__()
        self.Wi = nn.Linear(c.D, 2 * c.F, bias=c.bias)
        self.act = gated_act_module(c)
        self.Wo = nn.Linear(c.F, c.D, bias=c.bias)
        sd = {"Wi.weight": p["linear1.weight"], "Wo.weight": p["linear2.weight"]}
        if c.bias:
            sd.update({"Wi.bias": p["linear1.bias"], "Wo.bias": p["linear2.bias"]})
        self.load_state_dict(sd, strict=True)

    def forward(self, hidden_states):
        input, gate = self.Wi(hidden_states).chunk(2, dim=-1)
        return self.Wo(self.act(input) * gate)


def module_gated_run(c, model, mods, params, x, masks, kpm, dead):
    """The gated block from torch's modules: each layer's self_attn, norm1
    and norm2 (loaded from plain_params, which leaves them as they are) with
    a GatedMLP on the full parameters as the feed-forward, layer by layer,
    layer l on src_mask masks[l] with its dead rows (dead[l]) zeroed after
    it, then the final norm (model.norm) if any.  Returns out."""
    h = x
    for m, p, src_mask, d in zip(mods, params, masks, dead):
        mlp = GatedMLP(c, p).eval()
        a_in = m.norm1(h) if m.norm_first else h
        a, _ = m.self_attn(a_in, a_in, a_in, attn_mask=src_mask, key_padding_mask=kpm,
                           need_weights=False)
        if m.norm_first:
            h = h + a
            h = h + mlp(m.norm2(h))
        else:
            h = m.norm1(h + a)
            h = m.norm2(h + mlp(h))
        h = h.masked_fill(d[..., None], 0.0)
    if c.final_norm:
        h = model.norm(h)
    return h.detach()


# ---- one case --------------------------------------------------------------------

def module_phrase(c):
    core = ("nn.TransformerEncoderLayer" if c.n_layers == 1 else
            f"nn.TransformerEncoder({c.n_layers} x nn.TransformerEncoderLayer, "
            "enable_nested_tensor=False)")
    extra = []
    if c.G != c.H:
        extra.append(f"each of the {c.G} key/value heads' projection rows repeated for the "
                     f"{c.H // c.G} query heads sharing it")
    if not c.bias:
        extra.append("every bias zero (the bias=False model)")
    s = f"torch {torch.__version__.split('+')[0]} {core} in eval mode with grad enabled " \
        "(Python path, not the fast path)"
    if extra:
        s += ", " + " and ".join(extra)
    masks = "masks passed as src_mask / src_key_padding_mask"
    if c.position == "alibi":
        masks = ("the ALiBi bias -m_h * |p_i - p_j| (float32 slopes) and the masks passed as a "
                 "float src_mask [B * n_heads, L, L] (-inf where not allowed) / "
                 "src_key_padding_mask")
    return s + f", {masks}; attention weights from " \
        "layer.self_attn(need_weights=True, average_attn_weights=False / True) run layer " \
        "by layer; an independent functional reference agrees within 1e-5."


def rope_phrase(c):
    style = {"neox": "neox style (rotate_half, as transformers' modeling_llama.py / "
                     "modeling_gpt_neox.py apply_rotary_pos_emb)",
             "gptj": "gptj style (rotate_every_two, as transformers' modeling_gptj.py "
                     "apply_rotary_pos_emb)"}[c.rope_style]
    act = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu tanh"}[c.act]
    return (f"functional torch reference (F.linear, F.layer_norm, softmax, F.{act}"
            + (", key/value heads shared by repeat_interleave" if c.G != c.H else "")
            + f") with RoPE, {style}, theta {float(c.rope_theta):g}, rope_dim {c.R} of "
            f"head dim {c.E}, on the projected queries and keys (after their biases, before "
            "the scores); cos / sin from float64 angles rounded to float32.  The rotation "
            "agrees with a complex-multiplication formulation (torch.polar, float64) within "
            f"1e-6.  torch {torch.__version__.split('+')[0]}'s nn.TransformerEncoderLayer "
            "cannot apply RoPE and is not the reference here; run on the same parameters, "
            "inputs and masks without RoPE it agrees with this functional reference (RoPE "
            "off) within 1e-5.")


def gated_phrase(c):
    kind = {"geglu": "GeGLU", "swiglu": "SwiGLU"}[c.ffn]
    act = "F.silu" if c.ffn == "swiglu" else \
        {"gelu": "F.gelu", "gelu_tanh": "F.gelu(approximate='tanh')"}[c.act]
    written = "x * sigmoid(x)" if c.ffn == "swiglu" else \
        {"gelu": "0.5 x (1 + erf(x / sqrt 2))",
         "gelu_tanh": "0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))"}[c.act]
    torch_v = torch.__version__.split("+")[0]
    s = ("functional torch reference (F.linear, F.layer_norm, softmax"
         + (", key/value heads shared by repeat_interleave" if c.G != c.H else "")
         + f") with a gated feed-forward, {kind}: h2 = F.linear(x, linear1.weight [2F, D]"
         + (", linear1.bias [2F])" if c.bias else ")")
         + "; input, gate = h2.chunk(2, dim=-1), the first F columns the input and the last "
         "F the gate (the order of transformers' ModernBertMLP, models/modernbert/"
         f"modeling_modernbert.py); out = F.linear({act}(input) * gate, linear2.weight"
         + (", linear2.bias)" if c.bias else ")") + ".")
    if c.position == "rope":
        style = {"neox": "neox style (rotate_half)", "gptj": "gptj style (rotate_every_two)"}
        s += (f"  With RoPE, {style[c.rope_style]}, theta {float(c.rope_theta):g}, rope_dim "
              f"{c.R} of head dim {c.E}, on the projected queries and keys (after their "
              "biases, before the scores); cos / sin from float64 angles rounded to float32; "
              "the rotation agrees with a complex-multiplication formulation (torch.polar, "
              "float64) within 1e-6.")
    s += ("  The gated feed-forward agrees with a second formulation (two separate F.linear "
          f"calls on linear1's row halves [:F] and [F:], activation {written}, float64) "
          "within 1e-6.")
    if c.position != "rope":
        s += ("  The block agrees within 1e-5 with torch's modules run layer by layer "
              "(self_attn, norm1, norm2 of an nn.TransformerEncoderLayer"
              + (", key/value projection rows repeated per query head" if c.G != c.H else "")
              + (", zero biases" if not c.bias else "")
              + ") with a ModernBertMLP-style module (nn.Linear(D, 2F), chunk, "
              + ("nn.SiLU" if c.ffn == "swiglu" else
                 "nn.GELU(approximate='tanh')" if c.act == "gelu_tanh" else "nn.GELU()")
              + ", nn.Linear(F, D)) as the feed-forward.")
    s += (f"  torch {torch_v}'s nn.TransformerEncoderLayer cannot compute a gated "
          "feed-forward" + (" or apply RoPE" if c.position == "rope" else "")
          + " and is not the reference here; run on the same parameters (linear1 cut to its "
          "first F rows, a plain feed-forward), inputs and masks"
          + (" without RoPE" if c.position == "rope" else "")
          + " it agrees with this functional reference run the same way within 1e-5.")
    return s


def block_phrase(c, filled_mask):
    """What the reference does for the block options, appended to the
    reference phrase; "" for a case without them.  filled_mask: the layers
    got an all-false src_mask in place of none (layer_src_masks)."""
    s = ""
    if c.norm == "layernorm_nobias":
        s += ("  LayerNorms without bias (layernorm_nobias): in the modules their bias is "
              "fixed at zero, in the functional reference F.layer_norm gets bias None.")
    if c.final_norm:
        s += ("  A final LayerNorm after the last layer: nn.TransformerEncoder(norm="
              f"nn.LayerNorm({c.D}, eps={c.eps:g}))"
              + (" with its bias zero" if not c.norm_bias() else "")
              + " in the modules, F.layer_norm in the functional reference.")
    if not c.first_attn_norm:
        s += ("  Layer 0 has no attention norm (first_attn_norm false): it computes x + "
              "SA(x); in the modules its norm1 is nn.Identity()"
              + (" carrying the layer's eps, and as the case has no src_mask every layer "
                 "gets an all-false boolean one (which changes nothing), so that torch's "
                 "fast-path check does not read norm1's parameters" if filled_mask else "")
              + ".")
    if c.global_every is not None:
        local = [l for l in range(c.n_layers) if c.is_local(l)]
        s += (f"  Local and global layers (global_every {c.global_every}, local_window "
              f"{c.local_window}): layer{'s' if len(local) > 1 else ''} "
              f"{', '.join(map(str, local))} (l % {c.global_every} != 0) may attend only "
              f"where |i - j| <= {c.local_window}, intersected with the case's mask: each "
              "layer has its own allowed-key rule in the functional reference and its own "
              "src_mask (the case's mask AND the band) in the modules, which run layer by "
              "layer (each nn.TransformerEncoderLayer's forward in turn"
              + (", then the final norm" if c.final_norm else "") + ").")
        if c.lengths is not None:
            s += ("  A padded query with no key inside its band (torch: NaN) is zeroed "
                  "after that layer; it is zero in the files, and no other row depends on it.")
    if c.rope_theta_local is not None:
        s += (f"  RoPE theta {float(c.rope_theta_local):g} (rope_theta_local) in the local "
              f"layers, {float(c.rope_theta):g} in the global ones.")
    return s


def make_case(c, outdir):
    torch.manual_seed(zlib.crc32(c.name.encode()))
    params = make_params(c)
    final = make_final_norm(c)
    x, lengths, key_padding, attn_bool, attn_add = make_inputs(c)
    keep_rows_alive(c, lengths, key_padding, attn_bool)
    # The allowed-key rule per layer (local layers add their band), and the
    # rows with no allowed key per layer and in any layer.
    allowed = layer_allowed(c, lengths, key_padding, attn_bool)
    add = torch.zeros(c.B, c.L, c.L)
    if attn_add is not None:
        add = add + attn_add
    dead_l = [~a.any(-1) for a in allowed]                    # [B, L] per layer
    dead = torch.stack(dead_l).any(0)                         # [B, L] rows with no key
    n = torch.full((c.B,), c.L) if lengths is None else lengths.long()
    pad = torch.arange(c.L)[None, :] >= n[:, None]              # [B, L]
    if c.attn_bool == "row2":
        assert dead[:, 2].all() and dead.sum() == c.B, c.name
    elif c.position != "none" or c.ffn != "mlp" or c.has_local():
        # A padded query may lose every key to a window (rope_long,
        # ffn_geglu_long) or a local band (local_global); its row is zero in
        # the files anyway.
        assert not (dead & ~pad).any(), f"{c.name}: a query row has no allowed key"
    else:
        assert not dead.any() or c.name == "sparse_fully_masked_row", \
            f"{c.name}: a query row has no allowed key"
    assert c.n_layers == 1 or not (dead & ~pad).any(), c.name
    if c.has_local():
        whole = allowed_keys(c, lengths, key_padding, attn_bool)
        for l in range(c.n_layers):
            narrowed = (whole & ~allowed[l])[~pad]
            assert narrowed.any() == c.is_local(l), \
                f"{c.name}: layer {l}'s band {'changes nothing' if c.is_local(l) else 'leaks'}"

    # Both references; the masks torch sees must say exactly what allowed says.
    # ALiBi reaches the modules inside a float src_mask.  RoPE cannot: with
    # RoPE the modules check the functional reference run without it, and the
    # functional reference with RoPE (checked again in check_rope) gives the
    # expected values.  A gated feed-forward cannot either: the modules run on
    # plain_params (linear1's input half as a plain feed-forward) against the
    # functional reference run the same way, and the functional reference
    # with the gate gives the expected values.
    gated = c.ffn != "mlp"
    mparams = plain_params(c, params)
    pos = positions(c)
    model, mods = torch_model(c, mparams, final)
    masks, kpm = layer_src_masks(c, lengths, key_padding, attn_bool, attn_add, pos)
    m_out, m_heads, m_means = module_reference(c, model, mods, x, masks, kpm, dead_l)
    f_out, f_heads = functional_reference(c, mparams, final, x, allowed, add, pos,
                                          "none" if c.position == "rope" else None, "mlp")
    alive = ~dead
    for l, (mw, fw, mm) in enumerate(zip(m_heads, f_heads, m_means)):
        assert torch.equal(mw[:, 0] > 0, allowed[l] & ~dead_l[l][..., None]), \
            f"{c.name}: torch's masks disagree with the allowed-key rule (layer {l})"
        assert torch.allclose(mm, mw.mean(1), rtol=0, atol=1e-6, equal_nan=True), c.name
        assert torch.allclose(mw.transpose(1, 2)[alive], fw.transpose(1, 2)[alive], rtol=0,
                              atol=ATOL_FUNCTIONAL), f"{c.name}: weights differ (layer {l})"
    if c.position == "rope" or gated:
        # (dead rows here are padded queries only, checked above)
        r_out, r_heads = functional_reference(c, params, final, x, allowed, add, pos)
        for l, rw in enumerate(r_heads):
            alive_l = ~dead_l[l]
            assert torch.equal(rw > 0,
                               (allowed[l] & alive_l[..., None])[:, None].expand_as(rw)), \
                f"{c.name}: RoPE weights disagree with the allowed-key rule (layer {l})"
            assert torch.allclose(rw.transpose(1, 2)[alive_l].sum(-1), torch.ones(()), rtol=0,
                                  atol=1e-5), c.name
        if c.position == "rope":
            no_rope = functional_reference(c, params, final, x, allowed, add, pos,
                                           "none")[0] if gated else f_out
            assert (r_out - no_rope)[alive].abs().max() > 1e-2, \
                f"{c.name}: RoPE changes nothing"
            if c.rope_theta_local is not None:
                one_theta = copy.copy(c)
                one_theta.rope_theta_local = None
                same = functional_reference(one_theta, params, final, x, allowed, add, pos)[0]
                assert (r_out - same)[alive].abs().max() > 1e-3, \
                    f"{c.name}: rope_theta_local changes nothing"
        if gated:
            no_gate = functional_reference(c, mparams, final, x, allowed, add, pos, None,
                                           "mlp")[0] if c.position == "rope" else f_out
            assert (r_out - no_gate)[alive].abs().max() > 1e-2, \
                f"{c.name}: the gate changes nothing"
            if c.position != "rope":
                g_out = module_gated_run(c, model, mods, params, x, masks, kpm, dead_l)
                assert torch.allclose(g_out[alive], r_out[alive], rtol=0,
                                      atol=ATOL_FUNCTIONAL), \
                    f"{c.name}: the modules with a ModernBertMLP-style feed-forward differ " \
                    f"(max {(g_out[alive] - r_out[alive]).abs().max():.3g})"
        out, heads = r_out, r_heads
        reference = gated_phrase(c) if gated else rope_phrase(c)
    elif (dead & ~pad).any():
        # torch gives NaN for a query row with no allowed key.
        assert torch.isnan(m_heads[0].transpose(1, 2)[dead]).all(), c.name
        assert c.n_layers == 1 and torch.isnan(m_out[dead]).all(), c.name
        out, heads = f_out, f_heads
        reference = ("functional torch reference (F.linear, F.layer_norm, softmax, F." +
                     {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu tanh"}[c.act] +
                     ") with zero weights and zero attention output for the query row that "
                     "has no allowed key (nn.TransformerEncoderLayer gives NaN there and "
                     "agrees within 1e-5 on every other row).")
    else:
        out, heads = m_out, m_heads
        reference = module_phrase(c)
    filled_mask = not c.first_attn_norm and \
        torch_masks(c, lengths, key_padding, attn_bool, attn_add)[0] is None and \
        c.position != "alibi" and not c.has_local()
    reference += block_phrase(c, filled_mask)
    diff = (m_out[alive] - f_out[alive]).abs().max()
    assert torch.allclose(m_out[alive], f_out[alive], rtol=0, atol=ATOL_FUNCTIONAL), \
        f"{c.name}: functional reference differs from the modules (max {diff:.3g})"
    if os.environ.get("MAKE_FIXTURES_REPORT"):
        print(f"{c.name}: modules vs functional max abs diff {float(diff):.3g}",
              file=sys.stderr)

    # The contract's view: padded rows and columns zero, dead rows zero.
    out = out.masked_fill(pad[..., None], 0.0)
    tensors = {"x": x, "out": out}
    for l, w in enumerate(heads):
        dl = dead_l[l]
        w = torch.nan_to_num(w, nan=0.0) if dl.any() else w
        w = w.masked_fill(pad[:, None, :, None] | pad[:, None, None, :], 0.0)
        w = w.masked_fill(dl[:, None, :, None], 0.0)
        tensors[f"attn.{l}"] = w.contiguous()
        tensors[f"attn_mean.{l}"] = w.mean(1) if dl.any() or c.position == "rope" or gated else \
            m_means[l].masked_fill(pad[:, :, None] | pad[:, None, :], 0.0)
    for k, v in (("lengths", lengths), ("key_padding", key_padding),
                 ("attn_bool", attn_bool), ("attn_add", attn_add)):
        if v is not None:
            tensors[k] = v
    if c.position_ids is not None:
        tensors["position_ids"] = pos.to(torch.int32)
    if c.name.startswith("sparse_"):
        # The allowed pairs (for the CSR lists) and BigBird's random blocks
        # of sequence 0 ([n_blocks, random], -1 where fewer exist).
        assert not c.has_local(), c.name
        tensors["allowed"] = allowed[0] & ~pad[:, :, None]
        if c.blocks is not None:
            size, window, glob, rnd, seed = c.blocks
            n0 = c.L if lengths is None else int(lengths[0])
            nb = (n0 + size - 1) // size
            table = torch.full((nb, rnd), -1, dtype=torch.int32)
            for qb in range(nb):
                for r, kb in enumerate(sorted(random_blocks(size, window, glob, rnd, seed, n0,
                                                            qb))):
                    table[qb, r] = kb
            tensors["random_blocks"] = table
    for k, v in tensors.items():
        assert torch.isfinite(v.float()).all(), f"{c.name}: {k} is not finite"

    # Files.
    d = os.path.join(outdir, c.name)
    os.makedirs(d, exist_ok=True)
    model_path = os.path.join(d, "model.safetensors")
    if gated or c.norm != "layernorm" or c.final_norm or not c.first_attn_norm:
        config = export_own(c, params, final, model_path)
    elif c.G == c.H and c.bias:
        config = export(model, model_path, c.dtype, separate_qkv=c.separate_qkv,
                        prefixed=c.prefixed)
    else:
        sd = {(f"layers.{l}." if c.n_layers > 1 or c.prefixed else "") + k: v
              for l, p in enumerate(params) for k, v in p.items()}
        config = export(sd, model_path, c.dtype, n_heads=c.H, activation=c.act,
                        norm_first=c.norm_first, layer_norm_eps=c.eps,
                        separate_qkv=c.separate_qkv)
    assert config == c.config(), f"{c.name}: export inferred {config}, expected {c.config()}"
    config = {**config, **c.position_config(), **c.ffn_config(), **c.block_config()}
    meta = {"config": json.dumps(config), "mask": json.dumps(c.mask_meta()),
            "reference": reference}
    case_path = os.path.join(d, "case.safetensors")
    save_file(tensors, case_path, meta)
    check_round_trip(c, model_path, case_path, params, final, tensors, meta)
    return reference


def export_own(c, params, final, path):
    """Writes the weights of a model export() refuses as export() would
    (PyTorch's names, layers.{i}. for a stack, q/k/v_proj_weight for
    separate_qkv, c.dtype, sorted and contiguous, no metadata): a gated
    feed-forward (linear1 [2F, D] / linear1.bias [2F]; linear2 [D, F] would
    have to be [D, 2F]), LayerNorms without bias (norm1.bias / norm2.bias
    absent while the Linear biases are there), a final norm (norm.weight /
    norm.bias) and a layer 0 without norm1.  Returns the config export()'s own
    checks (collect) infer from the state_dict export() accepts for the same
    model otherwise: linear1 cut to its first F rows (d_ff is F), missing
    LayerNorm biases zero, a missing norm1 a unit LayerNorm, no final norm."""
    prefixed = c.n_layers > 1 or c.prefixed
    sd = {}
    for l, p in enumerate(plain_params(c, params)):
        p = dict(p)
        p.setdefault("norm1.weight", torch.ones(c.D))
        if c.bias:
            for k in ("norm1.bias", "norm2.bias"):
                p.setdefault(k, torch.zeros(c.D))
        sd.update({(f"layers.{l}." if prefixed else "") + k: v for k, v in p.items()})
    _, _, config = collect(sd, n_heads=c.H, activation=c.act, norm_first=c.norm_first,
                           layer_norm_eps=c.eps)
    out = {k: v.to(DTYPES[c.dtype]).contiguous()
           for k, v in model_names(c, params, final).items()}
    for k, v in out.items():
        assert torch.isfinite(v).all(), f"{c.name}: {k} is not finite in {c.dtype}"
    if c.ffn != "mlp":
        assert out[("layers.0." if prefixed else "") + "linear1.weight"].shape == \
            (2 * c.F, c.D)
    save_file(out, path, None)
    return config


def check_round_trip(c, model_path, case_path, params, final, tensors, meta):
    """Reads both files back and compares them with what was meant: the case
    file exactly; the weights file's names with those the case's settings
    call for (expected_names: no norm biases for layernorm_nobias, norm.* for
    final_norm, no layers.0.norm1.* for first_attn_norm false) and its values
    with the parameters."""
    _, got_meta = check_saved(case_path, tensors, meta, c.name)
    want = {**c.config(), **c.position_config(), **c.ffn_config(), **c.block_config()}
    assert list(json.loads(got_meta["config"]).items()) == list(want.items()), c.name
    got, _ = load_file(model_path, "pt")
    want = model_names(c, params, final)
    assert set(got) == set(want), f"{c.name}: {sorted(set(got) ^ set(want))}"
    assert set(got) == expected_names(c), \
        f"{c.name}: {sorted(set(got) ^ expected_names(c))}"
    for k, v in want.items():
        assert got[k].dtype == {"F32": torch.float32, **ROUND}[c.dtype], f"{c.name}: {k}"
        assert torch.equal(got[k].float(), v), f"{c.name}: {k} does not round-trip"


# ---- README ------------------------------------------------------------------------

README_HEAD = """\
# PyTorch fixtures for the forward pass

Generated by `tools/make_fixtures.py`; do not edit.  Regenerate with

    /usr/bin/python3 tools/make_fixtures.py tests/fixtures/torch

(or `make fixtures`; needs Debian's python3-torch and python3-numpy).  The
script is deterministic: running it twice gives byte-identical files.

Each case is a directory with two safetensors files:

- `model.safetensors`: the weights, written by `tools/export_safetensors.py`'s
  `export()` under PyTorch's state_dict names (for the models `export()`
  refuses, the gated feed-forward and block-option cases below, by
  `make_fixtures.py`'s `export_own` with the same names, order and dtypes).
- `case.safetensors`:
  - `x` F32 `[B, L, D]`: the input;
  - `lengths` I32 `[B]`, `key_padding` BOOL `[B, L]` (true = padding),
    `attn_bool` BOOL `[L, L]` or `[B, L, L]` (true = not allowed), `attn_add`
    F32 `[L, L]` or `[B, L, L]` (added to the scaled scores): only where the
    case uses them;
  - `position_ids` I32 `[B, L]`: the token positions RoPE and ALiBi use, only
    where the case gives them (otherwise positions are 0..L-1 in every
    sequence; padded positions keep theirs and are masked);
  - `out` F32 `[B, L, D]`: the expected output, rows at positions
    `>= lengths[b]` set to 0;
  - `attn.{l}` F32 `[B, H, L, L]` and `attn_mean.{l}` F32 `[B, L, L]` for
    every layer `l`: the expected attention weights per head and averaged over
    heads, with entries for query or key positions `>= lengths[b]` set to 0
    and all-zero rows for a query with no allowed key;
  - `__metadata__`: `config` (JSON, attnd's `"model"` config), `mask` (JSON
    `{"causal": bool, "window": null | {"left", "right"}, "global": [int]}`)
    and `reference` (which torch code produced the expected values).  In the
    RoPE and ALiBi cases only, `config` ends with `"position": "rope"` or
    `"position": "alibi"` and, for RoPE, `"rope_theta"` (a number, e.g.
    `10000.0`), `"rope_dim"` (rotated dims per head, an even integer; the head
    dim when the case does not say) and `"rope_style"` (`"neox"` or
    `"gptj"`); every other case's `config` has none of these keys.  In the
    gated feed-forward cases (`ffn_*`) only, `config` ends (after any
    position keys) with `"ffn": "geglu"` or `"ffn": "swiglu"`; `d_ff` stays
    F (linear1 has 2F rows there).  In the block-option cases (`norm_*`,
    `final_norm*`, `first_attn_norm_off`, `local_global*`) only, `config`
    ends (after any position and ffn keys) with each of these keys the case
    uses, in this order: `"norm": "layernorm_nobias"` (every LayerNorm has a
    weight but no bias, as ModernBERT's norm_bias=False / torch 2.1's
    LayerNorm(bias=False); Linear biases stay as `bias` says), `"final_norm":
    true` (a LayerNorm, with the same eps and of the same kind, with bias
    unless norm is layernorm_nobias, after the last layer, as
    nn.TransformerEncoder(norm=LayerNorm)), `"first_attn_norm": false`
    (pre-norm only, i.e. norm_first true: layer 0's attention-sublayer norm,
    norm1, is the identity, so layer 0 computes x + SA(x) instead of x +
    SA(norm1(x)), ModernBERT's first layer), `"global_every": N` (>= 1) and
    `"local_window": W` (>= 0) (layer l, 0-based, is global when l % N == 0;
    otherwise it is local: query i may see key j only if |i - j| <= W, token
    indices in the padded sequence, intersected with everything the case's
    own mask allows: lengths, key padding, causal, window, attn masks, global
    positions), `"rope_theta_local": T` (with position rope, local layers use
    theta T instead of rope_theta).  A key appears only where the case uses
    it (`norm` only for layernorm_nobias, `final_norm` only when true,
    `first_attn_norm` only when false, `global_every` and `local_window`
    together); every other case's `config` has none of these keys.

Compare with 1e-4 absolute tolerance.  Defaults unless the table says
otherwise: D 16, H 4 (n_kv_heads 4), F 32, eps 1e-5, B 2, L 6, one post-norm
block, relu, bias true, F32 weights, inputs `torch.randn`.  In-projection and
out-projection biases and LayerNorm parameters are random (normal * 0.1 and
1 + normal * 0.1), so every parameter matters.

Expected values come from torch's own `nn.TransformerEncoderLayer` /
`nn.TransformerEncoder` (eval mode, grad enabled so torch 1.13 runs its Python
path rather than the C++ fast path), with grouped-query attention expressed by
repeating key/value projection rows per query head and bias false by zero
biases.  An independent functional reference (plain torch ops, its own
allowed-key rule) must agree within 1e-5 on every case and is the primary
reference only for `mask_fully_masked_row`, where torch gives NaN, and for the
RoPE cases, which torch's modules cannot compute (there the modules agree with
the functional reference run without RoPE, and the rotation agrees with a
complex-multiplication formulation within 1e-6).  ALiBi reaches the modules
as part of a float `src_mask` `[B * n_heads, L, L]`.

Position encodings (`rope_*` and `alibi_*` cases; p_i is token i's position):

- RoPE rotates every query head and every key/value head (with grouped-query
  attention the G key heads, before they are shared) after the in-projection
  and its bias, before the scores; values are not rotated.  For
  k < rope_dim/2: inv_freq_k = theta^(-2k/rope_dim) and angle_k = p *
  inv_freq_k in float64, cos and sin rounded to float32 once, the rotation in
  float32.  `neox` (transformers' `rotate_half`) pairs dims (k, k +
  rope_dim/2), `gptj` (`rotate_every_two`) pairs (2k, 2k+1); a pair (a, b)
  becomes (a cos_k - b sin_k, b cos_k + a sin_k).  Dims rope_dim..E-1 pass
  through unchanged.
- ALiBi adds float32(-m_h) * float32(|p_i - p_j|) to the scaled scores
  (after any `attn_add`), bidirectionally; masked pairs stay masked.  Slopes
  for n query heads: m_h = 2^(-8(h+1)/n) when n is a power of two, otherwise
  the m = 2^floor(log2 n) slopes of m heads followed by the first n - m of
  every other slope of 2m heads, each computed in float64 and rounded to
  float32 (8 heads: 2^-1 .. 2^-8; 12 heads: 2^-1 .. 2^-8, 2^-0.5, 2^-1.5,
  2^-2.5, 2^-3.5).

Gated feed-forward layers (`ffn_*` cases): `linear1.weight` is `[2F, D]` and
`linear1.bias` `[2F]` (absent when bias is false), `linear2.weight` `[D, F]`.
h2 = t linear1.weight^T + linear1.bias; `input, gate = h2.chunk(2, dim=-1)`:
the first F columns (linear1's rows 0..F-1) are the input, the last F (rows
F..2F-1) the gate, the order of transformers' `ModernBertMLP` (`input, gate =
self.Wi(hidden_states).chunk(2, dim=-1); return self.Wo(self.drop(self.act(input)
* gate))`).  The feed-forward's output is linear2(act(input) * gate), with act
the case's `activation` (exact gelu or gelu_tanh) for `geglu` and SiLU (x *
sigmoid(x)) for `swiglu`, whose `activation` is `"gelu"` and unused.  torch's
modules cannot compute this, so the functional reference with the gate gives
the expected values; the modules agree with it when both run linear1's first
F rows as a plain feed-forward, the gated block (without RoPE) agrees with the
modules' attention and LayerNorms around a ModernBertMLP-style module, and the
gated feed-forward agrees with separate F.linear calls on the two row halves
(float64) within 1e-6.

Block options (`norm_*`, `final_norm*`, `first_attn_norm_off`,
`local_global*` cases), in the weights file:

- `norm` `layernorm_nobias`: `norm1.weight` and `norm2.weight` (with
  `layers.{i}.` in a stack) and no `norm1.bias` / `norm2.bias`; the Linear
  biases (`self_attn.in_proj_bias`, `self_attn.out_proj.bias`,
  `linear1.bias`, `linear2.bias`) are there as `bias` says.
- `final_norm` true: `norm.weight` `[D]` and `norm.bias` `[D]`
  (nn.TransformerEncoder's names, no `layers.` prefix; no `norm.bias` with
  layernorm_nobias or bias false), weights 1 + normal * 0.1 and bias normal *
  0.1 like the other norms; out = LayerNorm(last layer's output) with the
  model's layer_norm_eps.
- `first_attn_norm` false: no `layers.0.norm1.weight` /
  `layers.0.norm1.bias` (no `norm1.*` for a one-layer model); the other
  layers keep theirs.
- `global_every`, `local_window`, `rope_theta_local`: no tensors.

torch 1.13 has neither a LayerNorm without bias nor per-layer masks in
`nn.TransformerEncoder`, so: the modules' LayerNorm biases are fixed at zero
for layernorm_nobias (the functional reference calls F.layer_norm with bias
None); the final norm is nn.TransformerEncoder's `norm`; layer 0 without its
attention norm runs with norm1 replaced by `nn.Identity()` (which carries the
layer's eps, and the layers get an all-false boolean `src_mask` when the case
has none: torch 1.13's fast-path check reads norm1's eps and parameters);
with local layers the modules run layer by layer, each
nn.TransformerEncoderLayer's forward with its own `src_mask` (the case's mask
AND the layer's band `|i - j| <= W`, bool or float, and for ALiBi with the
bias), then the final norm, and the functional reference uses a per-layer
allowed-key rule.  A padded query with no key inside its band (`local_global`,
sequence 1, query 11) gets NaN from torch; that row is zeroed after the layer
(as a padded key it is masked in every later layer, so no other row depends on
it) and is zero in the files.  With RoPE (`local_global_rope`), the functional
reference is the primary one as in the other RoPE cases, with theta
`rope_theta_local` in the local layers and `rope_theta` in the global ones.
`attn.{l}` of a local layer is zero outside the band.

| case | covers | model |
| --- | --- | --- |
"""


def readme_row(c):
    model = (f"D {c.D}, H {c.H}, kv {c.G}, F {c.F}, {c.n_layers} layer"
             f"{'s' if c.n_layers > 1 else ''}, {'pre' if c.norm_first else 'post'}-norm, "
             f"{c.act}, eps {c.eps:g}, bias {str(c.bias).lower()}, {c.dtype}, B {c.B}, L {c.L}")
    if c.position == "rope":
        model += f", RoPE {c.rope_style} theta {float(c.rope_theta):g} rope_dim {c.R}"
    elif c.position == "alibi":
        model += ", ALiBi"
    if c.ffn == "geglu":
        model += f", GeGLU ({c.act}(input) * gate, linear1 [{2 * c.F}, {c.D}])"
    elif c.ffn == "swiglu":
        model += (f", SwiGLU (silu(input) * gate, linear1 [{2 * c.F}, {c.D}]; "
                  "activation unused)")
    if c.norm == "layernorm_nobias":
        model += ", LayerNorms without bias"
    if c.final_norm:
        model += ", final LayerNorm"
    if not c.first_attn_norm:
        model += ", no attention norm in layer 0"
    if c.global_every is not None:
        local = [str(l) for l in range(c.n_layers) if c.is_local(l)]
        model += (f", global_every {c.global_every} local_window {c.local_window} (local "
                  f"layer{'s' if len(local) > 1 else ''} {', '.join(local)})")
    if c.rope_theta_local is not None:
        model += f", rope_theta_local {float(c.rope_theta_local):g}"
    return f"| `{c.name}` | {c.doc} | {model} |\n"


def main(argv):
    return fixture_main(argv, "make_fixtures",
                        "Writes OUTDIR/<case>/{model,case}.safetensors (every case, or those named) and\n"
                        "OUTDIR/README.md.",
                        [Case(*spec) for spec in CASES], make_case, README_HEAD, readme_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
