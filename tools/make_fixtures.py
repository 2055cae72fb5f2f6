#!/usr/bin/python3
"""make_fixtures - numeric fixtures for attnd's forward pass, made with PyTorch.

    /usr/bin/python3 tools/make_fixtures.py tests/fixtures/torch

For every case in CASES it writes

    OUTDIR/<case>/model.safetensors   the weights (through export_safetensors.export)
    OUTDIR/<case>/case.safetensors    inputs, masks and the expected results

and OUTDIR/README.md, which lists the cases and the file layout.  The C tests
read these files (no Python at test time) and compare with 1e-4 absolute
tolerance.  Output is deterministic: torch.manual_seed per case, one thread,
and the same bytes on every run.

How expected values are made (API.md sections 2 and 3):

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
"""

import json
import math
import os
import sys
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_safetensors import export  # noqa: E402
from fixture_cli import fixture_main  # noqa: E402
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
                separate_qkv=False, prefixed=False, strided=None, fixed=None, blocks=None)
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

    def config(self):
        return {"d_model": self.D, "n_heads": self.H, "n_kv_heads": self.G, "d_ff": self.F,
                "n_layers": self.n_layers, "activation": self.act,
                "norm_first": self.norm_first, "layer_norm_eps": self.eps, "bias": self.bias}

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

def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


ACT_FN = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": gelu_tanh}
# What the modules get: torch's own strings, and for gelu_tanh the lambda
# torch's documentation suggests (torch 1.13 has no string for it).
ACT_MODULE = {"relu": "relu", "gelu": "gelu",
              "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


def make_params(c):
    """attnd's parameters for case c: a list (one per layer) of {name: float32
    tensor} under PyTorch's layer-relative state_dict names."""
    layers = []
    for _ in range(c.n_layers):
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
        if not c.bias:
            for k in BIAS_NAMES:
                del p[k]
        if c.dtype in ROUND:
            p = {k: v.to(ROUND[c.dtype]).float() for k, v in p.items()}
        layers.append(p)
    return layers


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
            sd[k] = torch.zeros(sizes.get(k, c.D))
    return sd


def torch_model(c, params):
    """(model, layers): the nn module for case c, in eval mode."""
    layer = nn.TransformerEncoderLayer(c.D, c.H, c.F, dropout=0.0, activation=ACT_MODULE[c.act],
                                       layer_norm_eps=c.eps, batch_first=True,
                                       norm_first=c.norm_first)
    if c.n_layers == 1:
        model, mods = layer, [layer]
    else:
        model = nn.TransformerEncoder(layer, num_layers=c.n_layers, enable_nested_tensor=False)
        mods = list(model.layers)
    for m, p in zip(mods, params):
        m.load_state_dict(torch_state_dict(p, c), strict=True)
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
    if c.attn_bool is not None:
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


def allowed_keys(c, lengths, key_padding, attn_bool, ignore_bool=False):
    """[B, L, L] bool: may query i of sequence b attend to key j?  The mask
    rule of docs/model.md, written out condition by condition."""
    B, L = c.B, c.L
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
                allowed[b, i, j] = ok
    return allowed


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


def torch_masks(c, lengths, key_padding, attn_bool, attn_add):
    """The masks handed to torch: (src_mask, src_key_padding_mask).

    src_key_padding_mask carries lengths and key_padding; src_mask carries
    causal, window / global, attn_bool and attn_add: bool when there is no
    attn_add, else float with -inf where not allowed; [L, L] when nothing is
    per-sequence, else [B * n_heads, L, L] (torch's batch-major head layout)."""
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
    if attn_add is not None:
        mask = torch.where(block, torch.tensor(float("-inf")), attn_add)
    elif block.any():
        mask = block
    else:
        mask = None
    if mask is not None and per_seq:
        mask = mask.repeat_interleave(c.H, dim=0)
    return mask, kpm


# ---- references ----------------------------------------------------------------

def module_reference(c, model, mods, x, src_mask, kpm):
    """Runs the modules.  Returns (out, [weights per layer], [mean weights per
    layer]); checks the layer-by-layer run against model(x)."""
    if c.n_layers == 1:
        out = model(x, src_mask=src_mask, src_key_padding_mask=kpm)
    else:
        out = model(x, mask=src_mask, src_key_padding_mask=kpm)
    h = x
    heads, means = [], []
    for m in mods:
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
        heads.append(w.detach())
        means.append(wm.detach())
    out = out.detach()
    both = torch.isfinite(out) & torch.isfinite(h.detach())
    assert torch.equal(torch.isfinite(out), torch.isfinite(h.detach())), c.name
    assert torch.allclose(out[both], h.detach()[both], rtol=0, atol=ATOL_MODULE), \
        f"{c.name}: layer-by-layer run differs from the module's forward"
    return out, heads, means


def functional_reference(c, params, x, allowed, add):
    """attnd's computation in plain torch ops.  Returns (out, [weights per
    layer]); a query row with no allowed key gets zero weights."""
    H, G, E, D = c.H, c.G, c.E, c.D
    act = ACT_FN[c.act]
    any_allowed = allowed.any(-1)[:, None, :, None]  # [B, 1, L, 1]

    def ln(t, p, k):
        return F.layer_norm(t, (D,), p[f"{k}.weight"], p.get(f"{k}.bias"), c.eps)

    def mha(t, p):
        B, L, _ = t.shape
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
        k = k.repeat_interleave(H // G, dim=1)                      # head h -> kv h // (H/G)
        v = v.repeat_interleave(H // G, dim=1)
        s = (q / math.sqrt(E)) @ k.transpose(-2, -1) + add[:, None]
        s = s.masked_fill(~allowed[:, None], float("-inf"))
        w = torch.where(any_allowed, torch.softmax(s, dim=-1), torch.zeros(()))
        z = (w @ v).transpose(1, 2).reshape(B, L, D)
        return F.linear(z, p["self_attn.out_proj.weight"], p.get("self_attn.out_proj.bias")), w

    def ffn(t, p):
        return F.linear(act(F.linear(t, p["linear1.weight"], p.get("linear1.bias"))),
                        p["linear2.weight"], p.get("linear2.bias"))

    heads = []
    for p in params:
        if c.norm_first:
            a, w = mha(ln(x, p, "norm1"), p)
            x = x + a
            x = x + ffn(ln(x, p, "norm2"), p)
        else:
            a, w = mha(x, p)
            x = ln(x + a, p, "norm1")
            x = ln(x + ffn(x, p), p, "norm2")
        heads.append(w)
    return x.detach(), [w.detach() for w in heads]


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
    return s + ", masks passed as src_mask / src_key_padding_mask; attention weights from " \
        "layer.self_attn(need_weights=True, average_attn_weights=False / True) run layer " \
        "by layer; an independent functional reference agrees within 1e-5."


def make_case(c, outdir):
    torch.manual_seed(zlib.crc32(c.name.encode()))
    params = make_params(c)
    x, lengths, key_padding, attn_bool, attn_add = make_inputs(c)
    keep_rows_alive(c, lengths, key_padding, attn_bool)
    allowed = allowed_keys(c, lengths, key_padding, attn_bool)
    add = torch.zeros(c.B, c.L, c.L)
    if attn_add is not None:
        add = add + attn_add
    dead = ~allowed.any(-1)                                   # [B, L] rows with no key
    if c.attn_bool == "row2":
        assert dead[:, 2].all() and dead.sum() == c.B, c.name
    else:
        assert not dead.any() or c.name == "sparse_fully_masked_row", \
            f"{c.name}: a query row has no allowed key"

    # Both references; the masks torch sees must say exactly what allowed says.
    model, mods = torch_model(c, params)
    src_mask, kpm = torch_masks(c, lengths, key_padding, attn_bool, attn_add)
    m_out, m_heads, m_means = module_reference(c, model, mods, x, src_mask, kpm)
    f_out, f_heads = functional_reference(c, params, x, allowed, add)
    alive = ~dead
    for l, (mw, fw, mm) in enumerate(zip(m_heads, f_heads, m_means)):
        assert torch.equal(mw[:, 0] > 0, allowed & alive[..., None]), \
            f"{c.name}: torch's masks disagree with the allowed-key rule (layer {l})"
        assert torch.allclose(mm, mw.mean(1), rtol=0, atol=1e-6, equal_nan=True), c.name
        assert torch.allclose(mw.transpose(1, 2)[alive], fw.transpose(1, 2)[alive], rtol=0,
                              atol=ATOL_FUNCTIONAL), f"{c.name}: weights differ (layer {l})"
    if dead.any():
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
    assert torch.allclose(m_out[alive], f_out[alive], rtol=0, atol=ATOL_FUNCTIONAL), \
        f"{c.name}: functional reference differs from the modules " \
        f"(max {(m_out[alive] - f_out[alive]).abs().max():.3g})"

    # The contract's view: padded rows and columns zero, dead rows zero.
    n = torch.full((c.B,), c.L) if lengths is None else lengths.long()
    pad = torch.arange(c.L)[None, :] >= n[:, None]              # [B, L]
    out = out.masked_fill(pad[..., None], 0.0)
    tensors = {"x": x, "out": out}
    for l, w in enumerate(heads):
        w = torch.nan_to_num(w, nan=0.0) if dead.any() else w
        w = w.masked_fill(pad[:, None, :, None] | pad[:, None, None, :], 0.0)
        w = w.masked_fill(dead[:, None, :, None], 0.0)
        tensors[f"attn.{l}"] = w.contiguous()
        tensors[f"attn_mean.{l}"] = w.mean(1) if dead.any() else \
            m_means[l].masked_fill(pad[:, :, None] | pad[:, None, :], 0.0)
    for k, v in (("lengths", lengths), ("key_padding", key_padding),
                 ("attn_bool", attn_bool), ("attn_add", attn_add)):
        if v is not None:
            tensors[k] = v
    if c.name.startswith("sparse_"):
        # The allowed pairs (for the CSR lists) and BigBird's random blocks
        # of sequence 0 ([n_blocks, random], -1 where fewer exist).
        tensors["allowed"] = allowed & ~pad[:, :, None]
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
    if c.G == c.H and c.bias:
        config = export(model, model_path, c.dtype, separate_qkv=c.separate_qkv,
                        prefixed=c.prefixed)
    else:
        sd = {(f"layers.{l}." if c.n_layers > 1 or c.prefixed else "") + k: v
              for l, p in enumerate(params) for k, v in p.items()}
        config = export(sd, model_path, c.dtype, n_heads=c.H, activation=c.act,
                        norm_first=c.norm_first, layer_norm_eps=c.eps,
                        separate_qkv=c.separate_qkv)
    assert config == c.config(), f"{c.name}: export inferred {config}, expected {c.config()}"
    meta = {"config": json.dumps(config), "mask": json.dumps(c.mask_meta()),
            "reference": reference}
    case_path = os.path.join(d, "case.safetensors")
    save_file(tensors, case_path, meta)
    check_round_trip(c, model_path, case_path, params, tensors, meta)
    return reference


def check_round_trip(c, model_path, case_path, params, tensors, meta):
    """Reads both files back and compares them with what was meant."""
    got, got_meta = load_file(case_path, "pt")
    assert got_meta == meta and set(got) == set(tensors), c.name
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and torch.equal(got[k], v), f"{c.name}: {k}"
    got, _ = load_file(model_path, "pt")
    want = {}
    for l, p in enumerate(params):
        prefix = f"layers.{l}." if c.n_layers > 1 or c.prefixed else ""
        for k, v in p.items():
            if c.separate_qkv and k == "self_attn.in_proj_weight":
                for name, part in zip("qkv", v.split(c.D)):
                    want[f"{prefix}self_attn.{name}_proj_weight"] = part
            else:
                want[prefix + k] = v
    assert set(got) == set(want), f"{c.name}: {sorted(set(got) ^ set(want))}"
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
  `export()` under PyTorch's state_dict names.
- `case.safetensors`:
  - `x` F32 `[B, L, D]`: the input;
  - `lengths` I32 `[B]`, `key_padding` BOOL `[B, L]` (true = padding),
    `attn_bool` BOOL `[L, L]` or `[B, L, L]` (true = not allowed), `attn_add`
    F32 `[L, L]` or `[B, L, L]` (added to the scaled scores): only where the
    case uses them;
  - `out` F32 `[B, L, D]`: the expected output, rows at positions
    `>= lengths[b]` set to 0;
  - `attn.{l}` F32 `[B, H, L, L]` and `attn_mean.{l}` F32 `[B, L, L]` for
    every layer `l`: the expected attention weights per head and averaged over
    heads, with entries for query or key positions `>= lengths[b]` set to 0
    and all-zero rows for a query with no allowed key;
  - `__metadata__`: `config` (JSON, attnd's `"model"` config), `mask` (JSON
    `{"causal": bool, "window": null | {"left", "right"}, "global": [int]}`)
    and `reference` (which torch code produced the expected values).

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
reference only for `mask_fully_masked_row`, where torch gives NaN.

| case | covers | model |
| --- | --- | --- |
"""


def readme_row(c):
    model = (f"D {c.D}, H {c.H}, kv {c.G}, F {c.F}, {c.n_layers} layer"
             f"{'s' if c.n_layers > 1 else ''}, {'pre' if c.norm_first else 'post'}-norm, "
             f"{c.act}, eps {c.eps:g}, bias {str(c.bias).lower()}, {c.dtype}, B {c.B}, L {c.L}")
    return f"| `{c.name}` | {c.doc} | {model} |\n"


def main(argv):
    return fixture_main(argv, "make_fixtures",
                        "Writes OUTDIR/<case>/{model,case}.safetensors (every case, or those named) and\n"
                        "OUTDIR/README.md.",
                        [Case(*spec) for spec in CASES], make_case, README_HEAD, readme_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
