#!/usr/bin/python3
"""make_modernbert_fixtures - ModernBERT model directories with expected outputs.

    /usr/bin/python3 tools/make_modernbert_fixtures.py tests/fixtures/modernbert [CASE ...]

For every case in CASES it writes OUTDIR/<case>/ holding

    config.json          a Hugging Face ModernBERT model directory, as
    model.safetensors    transformers' save_pretrained() writes it for the
                         case's class (ModernBertForMaskedLM or
                         ModernBertModel), at small sizes
    case.safetensors     input, expected output and attention weights, laid
                         out as tests/fixtures/torch's (not part of the model)
    ids.safetensors      the same model from token ids: a padded batch of
                         input_ids, ModernBertEmbeddings' output, the stack's
                         output and attention weights (not part of the model)

and OUTDIR/README.md, which lists the cases and the layout.  No transformers
is needed (nor installable here): the directories are written from what
transformers' modeling code and answerdotai/ModernBERT-base's config.json
say, and the expected values come from a functional float32 forward in plain
torch written after transformers' modeling_modernbert.py, checked against an
independent float64 formulation.

The transformers code followed is a 4.48-era src/transformers/models/
modernbert/modeling_modernbert.py (huggingface/transformers, the stored
snapshot at commit 1ae3d1e0c46618caf8bbe15c404293d0d1f8b8ee: global_rope_theta /
local_rope_theta / global_attn_every_n_layers in the config, before
layer_types / rope_parameters), function by function:

  - ModernBertEmbeddings: drop(norm(tok_embeddings(input_ids))).  The encoder
    input x of case.safetensors is what this module outputs (after its norm);
    ids.safetensors runs it on input_ids.
  - ModernBertModel._update_attention_mask: global_attention_mask =
    _prepare_4d_attention_mask(attention_mask, float32) ([B, 1, L, L]: 0, or
    finfo(float32).min where the key is padding); sliding_window_mask = the
    same with finfo.min also where |i - j| > local_attention // 2.
  - ModernBertRotaryEmbedding (one per layer, base global_rope_theta, or
    local_rope_theta on local layers when it is not null): inv_freq = 1 /
    (base ** (arange(0, E, 2).float() / E)), freqs = inv_freq @ position_ids
    in float32, emb = cat(freqs, freqs), cos / sin of emb; position_ids =
    arange(L) in every sequence (ModernBertModel.forward's default).
  - rotate_half / apply_rotary_pos_emb: q * cos + rotate_half(q) * sin (the
    neox pairing: dims k and k + E/2), on the whole head dim E.
  - ModernBertAttention.forward / eager_attention_forward (the attention the
    sdpa path computes too, which only swaps in F.scaled_dot_product_attention
    for the same mask): qkv = Wqkv(t).view(B, L, 3, H, E), q, k, v =
    qkv.transpose(3, 1).unbind(2), RoPE on q and k, scores = q k^T *
    E ** -0.5 + (global_attention_mask on a global layer, sliding_window_mask
    on a local one), softmax in float32, @ v, heads concatenated, Wo.  Layer i
    is global when i % global_attn_every_n_layers == 0.
  - ModernBertMLP: input, gate = Wi(t).chunk(2, dim=-1); Wo(act(input) * gate)
    with act = ACT2FN[hidden_activation].
  - ModernBertEncoderLayer.forward: h = x + attn(attn_norm(x)) (attn_norm is
    nn.Identity on layer 0), x = h + mlp(mlp_norm(h)); every norm is
    nn.LayerNorm(hidden_size, eps=norm_eps, bias=norm_bias).
  - ModernBertModel.forward: the layers, then final_norm.

What the directories copy from transformers and the checkpoint:

  - config.json: the field set of answerdotai/ModernBERT-base's config.json
    (which carries norm_eps and its older spelling layer_norm_eps, and
    "position_embedding_type": "absolute", unused by the code) with the
    sizes shrunk, the special token ids moved inside the shrunk vocabulary
    (ModernBertEmbeddings' padding_idx must be < vocab_size) and
    "architectures" naming the case's class; written as
    PretrainedConfig.to_json_string() does (indent 2, sorted keys, newline).
  - tensor names: the state_dict of the class (base_model_prefix "model":
    ModernBertForMaskedLM's names start with "model.", ModernBertModel's have
    no prefix) minus what save_pretrained drops: the rotary inv_freq buffers
    (registered persistent=False) and the tied decoder.weight
    (ModernBertForMaskedLM._tied_weights_keys = ["decoder.weight"], tied to
    model.embeddings.tok_embeddings.weight).  Linear and LayerNorm biases
    exist only where attention_bias / mlp_bias / norm_bias / classifier_bias
    / decoder_bias say; layer 0 has no attn_norm.
  - model.safetensors carries __metadata__ {"format": "pt"}.

Determinism follows make_hf_fixtures.py: torch.manual_seed(crc32(case name)),
the tensors drawn in the order the modules register them, then x, one torch
thread and one OpenBLAS thread (its thread count changes the last bits of
the larger GEMMs), every file written from sorted data, so a rerun on the
same machine gives the same bytes (the expected floats differ in the last
bits from CPU to CPU: to add a case or a file, copy only the new files from
a run into a scratch directory).  ids.safetensors draws its ids from its own
generator, seeded with crc32(case name + ":ids").

The float32 forward is importable (bench/modernbert_torch.py times it at
ModernBERT-base sizes): modernbert_layers(cfg, tensors, x, lengths) runs the
encoder stack and final_norm, with cfg a config.json dict; random_tensors(cfg,
seed) draws a model's tensors for any such config.  The activations, Linear /
LayerNorm, attention mask, RoPE tables and rotation, id batch and file
helpers are tools/reference.py's.
"""

import json
import math
import os
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_cli import fixture_main  # noqa: E402
from make_hf_fixtures import HF_FORMAT_METADATA  # noqa: E402
from reference import (apply_rotary, check_saved, gelu_new, gelu_tanh, ids_generator,  # noqa: E402
                       layer_norm, linear, linear_names, norm_names,
                       prepare_4d_attention_mask, random_ids, rope_by_complex,
                       rope_cos_sin, rope_inv_freq, write_json)
from safetensors_io import load_file, read_header, save_file  # noqa: E402

ATOL_FLOAT64 = 1e-5     # independent float64 formulation vs the float32 forward
ATOL_ROPE = 1e-6        # the rotation vs a complex multiplication
RTOL_ANGLE = 5e-7       # float32 RoPE angles vs float64 theta ** (-2k / E) * p
VALUE_SCALE = 0.1       # Linear / embedding weights and every bias: normal * 0.1

# ---- answerdotai/ModernBERT-base's config.json (full size) ---------------------------
#
# Its field set as the file on the hub has it (written by transformers
# 4.48.0.dev0).  shrink() replaces the sizes.

MODERNBERT_BASE_CONFIG = {
    "architectures": ["ModernBertForMaskedLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 50281,
    "classifier_activation": "gelu",
    "classifier_bias": False,
    "classifier_dropout": 0.0,
    "classifier_pooling": "mean",
    "cls_token_id": 50281,
    "decoder_bias": True,
    "deterministic_flash_attn": False,
    "embedding_dropout": 0.0,
    "eos_token_id": 50282,
    "global_attn_every_n_layers": 3,
    "global_rope_theta": 160000.0,
    "gradient_checkpointing": False,
    "hidden_activation": "gelu",
    "hidden_size": 768,
    "initializer_cutoff_factor": 2.0,
    "initializer_range": 0.02,
    "intermediate_size": 1152,
    "layer_norm_eps": 1e-05,
    "local_attention": 128,
    "local_rope_theta": 10000.0,
    "max_position_embeddings": 8192,
    "mlp_bias": False,
    "mlp_dropout": 0.0,
    "model_type": "modernbert",
    "norm_bias": False,
    "norm_eps": 1e-05,
    "num_attention_heads": 12,
    "num_hidden_layers": 22,
    "pad_token_id": 50283,
    "position_embedding_type": "absolute",
    "sep_token_id": 50282,
    "sparse_pred_ignore_index": -100,
    "sparse_prediction": False,
    "torch_dtype": "float32",
    "transformers_version": "4.48.0.dev0",
    "vocab_size": 50368,
}

# The small sizes every case shares, and the special token ids moved inside
# the small vocabulary (same roles and order as the checkpoint's 50281 ..
# 50283).
VOCAB, MAX_POS = 64, 512
SPECIAL_IDS = {"bos_token_id": 1, "cls_token_id": 1, "eos_token_id": 2, "sep_token_id": 2,
               "pad_token_id": 3}

# Each class's prefix before the base model's names (base_model_prefix "model").
PREFIX = {"ModernBertModel": "", "ModernBertForMaskedLM": "model."}

# transformers' ACT2FN name -> attnd's "activation" (SwiGLU ignores it).
ATTND_ACT = {"gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
             "silu": "gelu"}

# Each case: name, class, what it covers, config.json overrides, batch.
CASES = [
    ("modernbert_mlm", "ModernBertForMaskedLM",
     "ModernBERT-base's layout at small sizes: model. prefix, head.* and decoder.bias "
     "(decoder.weight tied), no biases; 6 layers, global every 3 (layers 0 and 3), "
     "local window 16 each side at L 300 (tokens outside it and pads masked); thetas "
     "160000 / 10000; exact gelu GeGLU",
     dict(hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=6,
          global_attn_every_n_layers=3, local_attention=32, global_rope_theta=160000.0,
          local_rope_theta=10000.0, hidden_activation="gelu", norm_bias=False,
          attention_bias=False, mlp_bias=False, norm_eps=1e-5),
     dict(B=2, L=300, lengths=(300, 237), attn_layers=(1,), mean_layers=(0, 1),
          ids=(2, 34, (34, 27)))),
    ("modernbert_base_bias", "ModernBertModel",
     "bare ModernBertModel: no prefix, no head; norm_bias / attention_bias / mlp_bias "
     "true; local_rope_theta null (local layers use the global theta 80000); "
     "gelu_pytorch_tanh; 4 layers, global every 2, window 8; eps 1e-6; lengths "
     "[70, 41, 9]",
     dict(hidden_size=32, num_attention_heads=4, intermediate_size=40, num_hidden_layers=4,
          global_attn_every_n_layers=2, local_attention=16, global_rope_theta=80000.0,
          local_rope_theta=None, hidden_activation="gelu_pytorch_tanh", norm_bias=True,
          attention_bias=True, mlp_bias=True, norm_eps=1e-6),
     dict(B=3, L=70, lengths=(70, 41, 9), ids=(3, 20, (20, 13, 5)))),
    ("modernbert_swiglu", "ModernBertForMaskedLM",
     "hidden_activation silu (SwiGLU), every layer global (global_attn_every_n_layers "
     "1), head dim 12, no padding",
     dict(hidden_size=24, num_attention_heads=2, intermediate_size=32, num_hidden_layers=3,
          global_attn_every_n_layers=1, local_attention=8, hidden_activation="silu",
          norm_bias=False, attention_bias=False, mlp_bias=False),
     dict(B=1, L=20, lengths=None, ids=(2, 12, (12, 9)))),
]


def shrink(full, cls, overrides):
    """The checkpoint's config.json with the case's sizes, special ids and class."""
    cfg = dict(full)
    cfg["architectures"] = [cls]
    cfg["vocab_size"] = VOCAB
    cfg["max_position_embeddings"] = MAX_POS
    cfg.update(SPECIAL_IDS)
    unknown = set(overrides) - set(full)
    assert not unknown, f"unknown config fields {unknown}"
    cfg.update(overrides)
    cfg["layer_norm_eps"] = cfg["norm_eps"]    # the checkpoint's two spellings agree
    assert set(cfg) == set(full)
    return cfg


class Case:
    def __init__(self, name, cls, doc, overrides, batch):
        self.name, self.cls, self.doc = name, cls, doc
        self.prefix = PREFIX[cls]
        self.hf_config = shrink(MODERNBERT_BASE_CONFIG, cls, overrides)
        self.B, self.L, self.lengths = batch["B"], batch["L"], batch["lengths"]
        # the layers whose weights (per head, mean) the case keeps: all by
        # default; the L = 300 case a local layer's per head and a global and
        # a local layer's means, to stay a few MiB
        self.attn_layers = batch.get("attn_layers")
        self.mean_layers = batch.get("mean_layers")
        # ids.safetensors' batch: B, L, lengths (one sequence at least padded)
        self.ids_B, self.ids_L, self.ids_lengths = batch["ids"]
        assert len(self.ids_lengths) == self.ids_B >= 2 and min(self.ids_lengths) < self.ids_L
        assert self.lengths is None or (len(self.lengths) == self.B and
                                         all(1 <= n <= self.L for n in self.lengths))

    def config(self):
        """attnd's "model" config for this case."""
        return attnd_config(self.hf_config)


def attnd_config(cfg):
    """attnd's "model" config for a ModernBERT config.json dict."""
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    # attnd has one bias flag for the attention and feed-forward Linears.
    assert cfg["attention_bias"] == cfg["mlp_bias"], "attention_bias != mlp_bias"
    act = cfg["hidden_activation"]
    return {"d_model": D, "n_heads": H, "n_kv_heads": H, "d_ff": cfg["intermediate_size"],
            "n_layers": cfg["num_hidden_layers"], "activation": ATTND_ACT[act],
            "norm_first": True, "layer_norm_eps": cfg["norm_eps"], "bias": cfg["attention_bias"],
            "position": "rope", "rope_theta": float(cfg["global_rope_theta"]),
            "rope_dim": D // H, "rope_style": "neox",
            "ffn": "swiglu" if act == "silu" else "geglu",
            "norm": "layernorm" if cfg["norm_bias"] else "layernorm_nobias",
            "final_norm": True, "first_attn_norm": False,
            "global_every": cfg["global_attn_every_n_layers"],
            # local layers only when some layer is not global
            **({"local_window": cfg["local_attention"] // 2,
                "rope_theta_local": float(local_theta(cfg))}
               if cfg["global_attn_every_n_layers"] > 1 else {})}


def local_theta(cfg):
    """ModernBertAttention.__init__: local layers use local_rope_theta unless it is None."""
    t = cfg["local_rope_theta"]
    return cfg["global_rope_theta"] if t is None else t


def is_global(cfg, i):
    """ModernBertAttention.__init__: local_attention = (-1, -1) (global) when
    layer_id % global_attn_every_n_layers == 0."""
    return i % cfg["global_attn_every_n_layers"] == 0


# ---- the HF state_dict ----------------------------------------------------------------
#
# (name, shape) in the order the class's modules register them (the order the
# random values are drawn in).

def layer_names(cfg, i, stem):
    """ModernBertEncoderLayer(config, layer_id=i)'s parameters: attn_norm (not
    on layer 0, where it is nn.Identity), attn (Wqkv, rotary_emb: no
    persistent tensors, Wo), mlp_norm, mlp (Wi, Wo)."""
    D, Fi = cfg["hidden_size"], cfg["intermediate_size"]
    nb, ab, mb = cfg["norm_bias"], cfg["attention_bias"], cfg["mlp_bias"]
    names = norm_names(f"{stem}attn_norm", D, nb) if i != 0 else []
    names += linear_names(f"{stem}attn.Wqkv", 3 * D, D, ab)
    names += linear_names(f"{stem}attn.Wo", D, D, ab)
    names += norm_names(f"{stem}mlp_norm", D, nb)
    names += linear_names(f"{stem}mlp.Wi", 2 * Fi, D, mb)
    names += linear_names(f"{stem}mlp.Wo", D, Fi, mb)
    return names


def stack_names(cfg, prefix=""):
    """[(name, shape)] of the encoder layers and final_norm: what the stack reads."""
    names = []
    for i in range(cfg["num_hidden_layers"]):
        names += layer_names(cfg, i, f"{prefix}layers.{i}.")
    return names + norm_names(f"{prefix}final_norm", cfg["hidden_size"], cfg["norm_bias"])


def hf_names(cfg, cls):
    """[(name, shape)] of everything save_pretrained writes for class cls,
    and the set of names the encoder stack reads."""
    p, D = PREFIX[cls], cfg["hidden_size"]
    # ModernBertModel: embeddings (tok_embeddings, norm), layers, final_norm.
    names = [(f"{p}embeddings.tok_embeddings.weight", (cfg["vocab_size"], D))]
    names += norm_names(f"{p}embeddings.norm", D, cfg["norm_bias"])
    stack = stack_names(cfg, p)
    names += stack
    if cls == "ModernBertForMaskedLM":
        # head = ModernBertPredictionHead (dense with classifier_bias, act,
        # norm), then decoder = Linear(hidden, vocab, bias=decoder_bias) whose
        # weight is tied to the token embeddings (not written).
        names += linear_names("head.dense", D, D, cfg["classifier_bias"])
        names += norm_names("head.norm", D, cfg["norm_bias"])
        if cfg["decoder_bias"]:
            names += [("decoder.bias", (cfg["vocab_size"],))]
    else:
        assert cls == "ModernBertModel", cls
    assert len({n for n, _ in names}) == len(names)
    return names, {n for n, _ in stack}


def is_norm_weight(name):
    return name.endswith(".weight") and name.split(".")[-2] in (
        "norm", "attn_norm", "mlp_norm", "final_norm")


def random_tensors(cfg, seed, cls="ModernBertModel", stack_only=False):
    """{name: float32 tensor} for a config.json dict: torch.manual_seed(seed),
    then in registration order normal * 0.1 (LayerNorm weights 1 + normal *
    0.1).  stack_only draws only the encoder layers and final_norm (what
    modernbert_layers reads; a different stream than the whole model's)."""
    torch.manual_seed(seed)
    names = stack_names(cfg, PREFIX[cls]) if stack_only else hf_names(cfg, cls)[0]
    out = {}
    for name, shape in names:
        t = torch.randn(shape) * VALUE_SCALE
        if is_norm_weight(name):
            t = t + 1.0
        out[name] = t
    return out


# ---- the transformers-style float32 forward ------------------------------------------

def update_attention_mask(cfg, attention_mask, dtype=torch.float32):
    """ModernBertModel._update_attention_mask: (global_attention_mask,
    sliding_window_mask)."""
    global_attention_mask = prepare_4d_attention_mask(attention_mask, dtype)
    rows = torch.arange(global_attention_mask.shape[2]).unsqueeze(0)
    distance = torch.abs(rows - rows.T)
    window_mask = (distance <= cfg["local_attention"] // 2).unsqueeze(0).unsqueeze(0)
    sliding_window_mask = global_attention_mask.masked_fill(window_mask.logical_not(),
                                                            torch.finfo(dtype).min)
    return global_attention_mask, sliding_window_mask


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """modeling_modernbert.apply_rotary_pos_emb."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = apply_rotary(q, cos, sin)
    k_embed = apply_rotary(k, cos, sin)
    return q_embed, k_embed


def check_rope(x, out, freqs):
    """The rotation again: each pair (x[k], x[k + E/2]) as a complex number
    times exp(i angle_k) in float64, with the float32 angles the rotary
    module computed, within 1e-6; and those angles against float64
    p * theta ** (-2k / E) (checked by the caller)."""
    want = rope_by_complex(x, freqs.to(torch.float64)[:, None])      # angles [1, 1, L, E/2]
    got = out.detach().to(torch.float64)
    diff = (got - want).abs().max().item()
    assert diff <= ATOL_ROPE, f"RoPE differs from the complex formulation (max {diff:.3g})"
    return diff


def _linear_t(t, p, name):
    """nn.Linear as the module holds it (bias absent when the config says so):
    reference.linear, input first."""
    return linear(p, name, t, optional_bias=True)


def _layer_norm_t(t, p, name, eps):
    """nn.LayerNorm(hidden_size, eps=norm_eps, bias=norm_bias): reference.layer_norm,
    input first."""
    return layer_norm(p, name, t, eps, optional_bias=True)


# ACT2FN: "gelu" GELUActivation (exact, erf), "gelu_pytorch_tanh"
# PytorchGELUTanh (F.gelu approximate="tanh"), "gelu_new" NewGELUActivation,
# "silu" SiLU.
HF_ACT = {"gelu": F.gelu, "gelu_pytorch_tanh": gelu_tanh,
          "gelu_new": gelu_new, "silu": F.silu}


def modernbert_attention(cfg, p, stem, t, mask, cos, sin, keep_attn, rope_checks):
    """ModernBertAttention.forward with eager_attention_forward.  Returns
    (Wo(attention output), softmax weights [B, H, L, L] or None)."""
    bs, D, H = t.shape[0], cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = D // H
    qkv = _linear_t(t, p, f"{stem}attn.Wqkv")
    qkv = qkv.view(bs, -1, 3, H, head_dim)
    query, key, value = qkv.transpose(3, 1).unbind(dim=2)
    # query, key, value: [batch_size, heads, seq_len, head_dim]
    if rope_checks is not None:
        q_in, k_in = query, key
    query, key = apply_rotary_pos_emb(query, key, cos, sin)
    if rope_checks is not None:
        rope_checks.append(max(check_rope(q_in, query, rope_checks.freqs),
                               check_rope(k_in, key, rope_checks.freqs)))
    scale = head_dim ** -0.5
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scale
    attn_weights = attn_weights + mask
    # upcast attention to fp32 (a no-op here: everything is float32)
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).contiguous()
    attn_output = attn_output.view(bs, -1, D)
    return _linear_t(attn_output, p, f"{stem}attn.Wo"), (attn_weights if keep_attn else None)


def modernbert_mlp(cfg, p, stem, t):
    """ModernBertMLP.forward: input, gate = Wi(t).chunk(2); Wo(act(input) * gate)."""
    input, gate = _linear_t(t, p, f"{stem}mlp.Wi").chunk(2, dim=-1)
    return _linear_t(HF_ACT[cfg["hidden_activation"]](input) * gate, p, f"{stem}mlp.Wo")


class _RopeChecks(list):
    """Collects the RoPE check's differences; carries the current angles."""
    freqs = None


def modernbert_layers(cfg, tensors, x, lengths=None, prefix="", keep_attn=False,
                      rope_checks=None):
    """ModernBertModel.forward from the embeddings' output x [B, L, D]
    (float32) on: attention masks, every ModernBertEncoderLayer, final_norm.
    cfg is a config.json dict, tensors the model's tensors under prefix +
    their ModernBertModel names, lengths (optional) the valid tokens per
    sequence (attention_mask = position < length).  Returns out [B, L, D], or
    (out, [softmax weights [B, H, L, L] per layer]) with keep_attn.  Padded
    rows hold whatever transformers computes there."""
    B, L, D = x.shape
    H = cfg["num_attention_heads"]
    eps = cfg["norm_eps"]
    if lengths is None:
        attention_mask = torch.ones((B, L), dtype=torch.long)
    else:
        attention_mask = (torch.arange(L)[None, :] < lengths.to(torch.long)[:, None]).long()
    position_ids = torch.arange(L).unsqueeze(0)
    global_attention_mask, sliding_window_mask = update_attention_mask(cfg, attention_mask,
                                                                      x.dtype)
    hidden_states = x
    weights = []
    for i in range(cfg["num_hidden_layers"]):
        stem = f"{prefix}layers.{i}."
        glob = is_global(cfg, i)
        theta = cfg["global_rope_theta"] if glob else local_theta(cfg)
        cos, sin, freqs = rope_cos_sin(rope_inv_freq(D // H, theta), position_ids)
        if rope_checks is not None:
            rope_checks.freqs = freqs
        attn_in = hidden_states if i == 0 else _layer_norm_t(hidden_states, tensors,
                                                             f"{stem}attn_norm", eps)
        attn_out, w = modernbert_attention(
            cfg, tensors, stem, attn_in,
            global_attention_mask if glob else sliding_window_mask, cos, sin, keep_attn,
            rope_checks)
        hidden_states = hidden_states + attn_out
        del attn_out
        hidden_states = hidden_states + modernbert_mlp(
            cfg, tensors, stem, _layer_norm_t(hidden_states, tensors, f"{stem}mlp_norm", eps))
        if keep_attn:
            weights.append(w)
    out = _layer_norm_t(hidden_states, tensors, f"{prefix}final_norm", eps)
    return (out, weights) if keep_attn else out


# ---- the independent float64 formulation ----------------------------------------------
#
# Its own allowed-key rule (-inf outside it, all-zero weights for a query
# with no allowed key), RoPE as explicit pair rotations with float64 angles
# p * theta ** (-2k / E), q / k / v from row blocks of Wqkv, LayerNorm and the
# activations written out.

def allowed_keys(cfg, i, L, lengths):
    """BOOL [B, L, L]: allowed[b][q][k] = k < lengths[b] and (layer i is
    global or |q - k| <= local_attention // 2)."""
    pos = torch.arange(L)
    ok = (pos[None, None, :] < lengths[:, None, None]).expand(len(lengths), L, L)
    if not is_global(cfg, i):
        ok = ok & ((pos[:, None] - pos[None, :]).abs() <= cfg["local_attention"] // 2)[None]
    return ok


def _ln64(t, p, name, eps):
    mean = t.mean(-1, keepdim=True)
    var = ((t - mean) ** 2).mean(-1, keepdim=True)
    y = (t - mean) / torch.sqrt(var + eps) * p[f"{name}.weight"]
    return y + p[f"{name}.bias"] if f"{name}.bias" in p else y


def _lin64(t, p, name, rows=None):
    w, b = p[f"{name}.weight"], p.get(f"{name}.bias")
    if rows is not None:
        w = w[rows]
        b = None if b is None else b[rows]
    y = t @ w.T
    return y if b is None else y + b


ACT64 = {
    "gelu": lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "gelu_pytorch_tanh": lambda x: 0.5 * x * (1.0 + torch.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x))),
    "silu": lambda x: x / (1.0 + torch.exp(-x)),
}
ACT64["gelu_new"] = ACT64["gelu_pytorch_tanh"]


def reference_f64(cfg, tensors, x, lengths, prefix=""):
    """The stack in float64.  Returns (out, [weights [B, H, L, L] per layer])."""
    p = {k: v.to(torch.float64) for k, v in tensors.items()}
    B, L, D = x.shape
    H, Fi, eps = cfg["num_attention_heads"], cfg["intermediate_size"], cfg["norm_eps"]
    E, half = D // H, D // H // 2
    h = x.to(torch.float64)
    probs = []
    for i in range(cfg["num_hidden_layers"]):
        stem = f"{prefix}layers.{i}."
        theta = float(cfg["global_rope_theta"] if is_global(cfg, i) else local_theta(cfg))
        inv_freq = torch.tensor(theta, dtype=torch.float64) ** \
            (-torch.arange(0, E, 2, dtype=torch.float64) / E)
        angle = torch.arange(L, dtype=torch.float64)[:, None] * inv_freq    # [L, E/2]
        c, s = torch.cos(angle), torch.sin(angle)

        def rope(t):
            a, b = t[..., :half], t[..., half:]
            return torch.cat((a * c - b * s, b * c + a * s), dim=-1)

        t = h if i == 0 else _ln64(h, p, f"{stem}attn_norm", eps)
        heads = [_lin64(t, p, f"{stem}attn.Wqkv", slice(j * D, (j + 1) * D))
                 .reshape(B, L, H, E).permute(0, 2, 1, 3) for j in range(3)]
        q, k, v = rope(heads[0]), rope(heads[1]), heads[2]
        scores = torch.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(E)
        ok = allowed_keys(cfg, i, L, lengths)[:, None]
        scores = scores.masked_fill(~ok, float("-inf"))
        w = torch.softmax(scores, dim=-1)
        w = torch.where(ok.any(-1, keepdim=True), w, torch.zeros_like(w))
        ctx = torch.einsum("bhqk,bhke->bhqe", w, v).permute(0, 2, 1, 3).reshape(B, L, D)
        h = h + _lin64(ctx, p, f"{stem}attn.Wo")
        t = _ln64(h, p, f"{stem}mlp_norm", eps)
        u = _lin64(t, p, f"{stem}mlp.Wi", slice(0, Fi))
        g = _lin64(t, p, f"{stem}mlp.Wi", slice(Fi, 2 * Fi))
        h = h + _lin64(ACT64[cfg["hidden_activation"]](u) * g, p, f"{stem}mlp.Wo")
        probs.append(w)
    return _ln64(h, p, f"{prefix}final_norm", eps), probs


# ---- expected values ------------------------------------------------------------------

def expected_values(c, tensors, x, lengths):
    """Runs both formulations.  Returns ({x, out, attn.{l}, attn_mean.{l}}
    with padded rows / entries zeroed, max |float64 - float32| over valid
    entries, max RoPE difference, max angle difference)."""
    cfg = c.hf_config
    B, L, D = x.shape
    H = cfg["num_attention_heads"]
    E = D // H
    checks = _RopeChecks()
    with torch.no_grad():
        out, weights = modernbert_layers(cfg, tensors, x, lengths, c.prefix, keep_attn=True,
                                         rope_checks=checks)
        again = modernbert_layers(cfg, tensors, x, lengths, c.prefix)
    assert torch.equal(out, again), f"{c.name}: keep_attn changes the output"
    assert len(checks) == cfg["num_hidden_layers"]
    # The float32 angles against float64 p * theta ** (-2k / E).
    angle_diff = 0.0
    for theta in sorted({cfg["global_rope_theta"], local_theta(cfg)}):
        _, _, freqs = rope_cos_sin(rope_inv_freq(E, theta), torch.arange(L).unsqueeze(0))
        exact = torch.arange(L, dtype=torch.float64)[:, None] * (
            torch.tensor(float(theta), dtype=torch.float64) **
            (-torch.arange(0, E, 2, dtype=torch.float64) / E))
        d = (freqs[0].to(torch.float64) - exact).abs()
        assert (d <= RTOL_ANGLE * exact + 1e-12).all(), f"{c.name}: RoPE angles, theta {theta}"
        angle_diff = max(angle_diff, d.max().item())

    lens = torch.full((B,), L, dtype=torch.long) if lengths is None else lengths.to(torch.long)
    valid = torch.arange(L)[None, :] < lens[:, None]                     # [B, L]
    pair = valid[:, None, :, None] & valid[:, None, None, :]             # [B, 1, L, L]
    out64, probs64 = reference_f64(cfg, tensors, x, lens, c.prefix)
    diff = (out.to(torch.float64) - out64).abs()[valid].max().item()
    for l, (w, w64) in enumerate(zip(weights, probs64)):
        ok = allowed_keys(cfg, l, L, lens)[:, None]
        rows = valid[:, None, :, None]
        assert (w[((~ok) & rows).expand_as(w)] == 0).all(), \
            f"{c.name}: layer {l}: a masked key got weight"
        diff = max(diff, (w.to(torch.float64) - w64).abs().masked_select(rows).max().item())
    assert diff <= ATOL_FLOAT64, f"{c.name}: float64 formulation differs by {diff:.3g}"

    tensors_out = {"x": x, "out": out * valid[..., None].to(out.dtype)}
    if lengths is not None:
        tensors_out["lengths"] = lengths
    for l, w in enumerate(weights):
        w = w * pair.to(w.dtype)
        if c.attn_layers is None or l in c.attn_layers:
            tensors_out[f"attn.{l}"] = w.contiguous()
        if c.mean_layers is None or l in c.mean_layers:
            tensors_out[f"attn_mean.{l}"] = w.mean(1).contiguous()
    for k, v in tensors_out.items():
        assert torch.isfinite(v.to(torch.float64)).all(), f"{c.name}: {k} is not finite"
    return tensors_out, diff, max(checks), angle_diff


# ---- from token ids -------------------------------------------------------------------

def modernbert_embeddings(cfg, tensors, input_ids, prefix=""):
    """ModernBertEmbeddings.forward from input_ids (eval: drop is the
    identity): norm(tok_embeddings(input_ids)), norm = nn.LayerNorm(hidden_size,
    eps=norm_eps, bias=norm_bias)."""
    e = f"{prefix}embeddings."
    return _layer_norm_t(F.embedding(input_ids, tensors[f"{e}tok_embeddings.weight"]), tensors,
                         f"{e}norm", cfg["norm_eps"])


def make_ids(c, hf):
    """ids.safetensors' tensors: input_ids (random below the vocabulary, none
    pad_token_id among the real tokens, pad_token_id past each length),
    lengths, the embedding module's output x, the stack's out and attn.{l}
    (padding rows and entries 0), the float32 forward checked against the
    float64 formulation (the embedding's LayerNorm too).  Returns (tensors,
    max |float64 - float32|)."""
    cfg = c.hf_config
    pad = cfg["pad_token_id"]
    B, L = c.ids_B, c.ids_L
    gen = ids_generator(c.name)
    lengths = torch.tensor(c.ids_lengths, dtype=torch.int32)
    assert len(lengths) == B, c.name
    ids, valid = random_ids(gen, lengths, L, VOCAB, pad)                   # valid [B, L]
    with torch.no_grad():
        x = modernbert_embeddings(cfg, hf, ids, c.prefix)
        out, weights = modernbert_layers(cfg, hf, x, lengths, c.prefix, keep_attn=True)
    p64 = {k: v.to(torch.float64) for k, v in hf.items()}
    x64 = _ln64(p64[f"{c.prefix}embeddings.tok_embeddings.weight"][ids], p64,
                f"{c.prefix}embeddings.norm", cfg["norm_eps"])
    diff = (x.to(torch.float64) - x64).abs()[valid].max().item()
    out64, probs64 = reference_f64(cfg, hf, x, lengths.to(torch.long), c.prefix)
    diff = max(diff, (out.to(torch.float64) - out64).abs()[valid].max().item())
    pair = valid[:, None, :, None] & valid[:, None, None, :]               # [B, 1, L, L]
    for w, w64 in zip(weights, probs64):
        diff = max(diff, ((w.to(torch.float64) - w64).abs() * pair).max().item())
    assert diff <= ATOL_FLOAT64, f"{c.name}: ids: float64 formulation differs by {diff:.3g}"
    tensors = {"input_ids": ids, "lengths": lengths,
               "x": (x * valid[..., None]).contiguous(),
               "out": (out * valid[..., None]).contiguous()}
    for l, w in enumerate(weights):
        tensors[f"attn.{l}"] = (w * pair.to(w.dtype)).contiguous()
    for k, v in tensors.items():
        assert torch.isfinite(v.to(torch.float64)).all(), f"{c.name}: ids {k} is not finite"
    return tensors, diff


def ids_phrase():
    return ("ModernBertEmbeddings written out in torch " + torch.__version__.split('+')[0] +
            " (norm(tok_embeddings(input_ids))), then the float32 forward of case.safetensors "
            "with attention_mask = position < length; the float64 formulation agrees within "
            "1e-5.")


# ---- files ----------------------------------------------------------------------------

def reference_phrase(c):
    return ("a functional float32 forward in plain torch "
            f"{torch.__version__.split('+')[0]} ops on the model.safetensors tensors, written "
            "after transformers' modeling_modernbert.py (4.48-era: "
            "ModernBertModel._update_attention_mask, ModernBertRotaryEmbedding, rotate_half / "
            "apply_rotary_pos_emb, eager_attention_forward, ModernBertMLP, "
            "ModernBertEncoderLayer, final_norm); an independent float64 formulation (-inf "
            "outside an allowed-key set, RoPE as pair rotations) agrees within 1e-5.")


def make_case(c, outdir):
    cfg = c.hf_config
    seed = zlib.crc32(c.name.encode())
    hf = random_tensors(cfg, seed, c.cls)          # seeds, then draws in registration order
    B, L, D = c.B, c.L, cfg["hidden_size"]
    x = torch.randn(B, L, D)    # the encoder's input: what the embeddings module gives
    lengths = None if c.lengths is None else torch.tensor(c.lengths, dtype=torch.int32)
    names, stack = hf_names(cfg, c.cls)
    assert [n for n, _ in names] == list(hf)
    tensors, diff, rope_diff, angle_diff = expected_values(c, hf, x, lengths)

    d = os.path.join(outdir, c.name)
    os.makedirs(d, exist_ok=True)
    write_json(cfg, os.path.join(d, "config.json"))
    save_file(hf, os.path.join(d, "model.safetensors"), HF_FORMAT_METADATA)
    files = ["config.json", "model.safetensors"]
    hf_meta = {"model_type": cfg["model_type"], "prefix": c.prefix,
               "ignored": sorted(set(hf) - stack), "files": files}
    meta = {"config": json.dumps(c.config()),
            "mask": json.dumps({"causal": False, "window": None, "global": []}),
            "reference": reference_phrase(c), "hf": json.dumps(hf_meta)}
    save_file(tensors, os.path.join(d, "case.safetensors"), meta)

    # The same model from token ids.
    ids, ids_diff = make_ids(c, hf)
    emb_names = sorted(n for n in hf if n.startswith(f"{c.prefix}embeddings."))
    ids_meta = {"reference": ids_phrase(), "embedding": json.dumps(
        {"position": "rope", "tensors": emb_names,
         "ignored": sorted(set(hf) - stack - set(emb_names))})}
    save_file(ids, os.path.join(d, "ids.safetensors"), ids_meta)
    check_saved(os.path.join(d, "ids.safetensors"), ids, ids_meta, f"{c.name}: ids")

    # Nothing else in the directory.
    for stale in sorted(set(os.listdir(d)) - set(files) - {"case.safetensors",
                                                           "ids.safetensors"}):
        os.remove(os.path.join(d, stale))
        print(f"{c.name}: removed stale {stale}", file=sys.stderr)
    check_round_trip(c, d, hf, tensors, meta)
    print(f"{c.name}: float64 vs float32 max |diff| {diff:.3g}, RoPE vs complex "
          f"{rope_diff:.3g}, angles vs float64 {angle_diff:.3g}; ids: float64 vs float32 "
          f"{ids_diff:.3g}", file=sys.stderr)


def check_round_trip(c, d, hf, tensors, meta):
    """Reads every file back, compares with what was meant, and reruns the
    forward from the files alone."""
    got, _ = check_saved(os.path.join(d, "case.safetensors"), tensors, meta, c.name,
                         lambda k: torch.int32 if k == "lengths" else torch.float32)
    back, back_meta = load_file(os.path.join(d, "model.safetensors"), "pt")
    assert back_meta == HF_FORMAT_METADATA and set(back) == set(hf), c.name
    for k, v in hf.items():
        assert back[k].dtype == torch.float32 and torch.equal(back[k], v), f"{c.name}: {k}"
    header, _, _ = read_header(os.path.join(d, "model.safetensors"))
    assert {v["dtype"] for v in header.values()} == {"F32"}, c.name
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        text = f.read()
    cfg = json.loads(text)
    assert cfg == c.hf_config and text.endswith("}\n"), c.name
    # The names against the classes' layout, from the file's own config.
    names, stack = hf_names(cfg, cfg["architectures"][0])
    assert {n for n, _ in names} == set(back), c.name
    for n, shape in names:
        assert tuple(back[n].shape) == shape, f"{c.name}: {n}"
    hf_meta = json.loads(meta["hf"])
    assert hf_meta["ignored"] == sorted(set(back) - stack), c.name
    assert not any(".layers." in n or n.startswith("layers.") or "final_norm" in n
                   for n in hf_meta["ignored"]), c.name
    # attnd's config against config.json.
    ac = json.loads(meta["config"])
    assert ac == attnd_config(cfg) and ac["d_model"] == cfg["hidden_size"], c.name
    # The forward from the files alone gives the stored output.
    lengths = got.get("lengths")
    with torch.no_grad():
        out = modernbert_layers(cfg, back, got["x"], lengths, hf_meta["prefix"])
    L = out.shape[1]
    if lengths is not None:
        out = out * (torch.arange(L)[None, :] < lengths.to(torch.long)[:, None])[..., None]
    assert torch.equal(out, got["out"]), f"{c.name}: the forward from the files differs"


# ---- README ---------------------------------------------------------------------------

README_HEAD = """\
# ModernBERT fixtures

Generated by `tools/make_modernbert_fixtures.py`; do not edit.  Regenerate with

    /usr/bin/python3 tools/make_modernbert_fixtures.py tests/fixtures/modernbert

(needs Debian's python3-torch and python3-numpy; no `transformers`).  The
script is deterministic: running it twice on one machine gives byte-identical
files (the expected floats differ in the last bits from CPU to CPU: to add a
case, run it into a scratch directory and copy only the new files).

Each case is a directory that is at once a Hugging Face ModernBERT model
directory and a test case:

- `config.json`: the field set of answerdotai/ModernBERT-base's config.json
  (`global_rope_theta`, `local_rope_theta`, `global_attn_every_n_layers`,
  `local_attention`, `norm_eps` and its older spelling `layer_norm_eps`,
  `"position_embedding_type": "absolute"`, which the code ignores, ...) with
  the sizes shrunk (vocab 64, max_position_embeddings 512, special token ids
  1 / 2 / 3 for cls = bos / sep = eos / pad), `architectures` naming the
  case's class; indent 2, sorted keys, as transformers writes it.
- `model.safetensors`: every tensor save_pretrained writes for the class, F32,
  `__metadata__` `{"format": "pt"}`.  Values: normal * 0.1 (Linear and
  embedding weights, every bias), LayerNorm weights 1 + normal * 0.1.
- `case.safetensors`, laid out as `tests/fixtures/torch`'s (not part of the
  HF model: a loader must read `model.safetensors`, not every
  `*.safetensors`):
  - `x` F32 `[B, L, D]`: the encoder stack's input, i.e. what
    ModernBertEmbeddings outputs (after its norm), `torch.randn`;
  - `lengths` I32 `[B]`: only in cases that pad (valid tokens per sequence;
    attention_mask = position < length);
  - `out` F32 `[B, L, D]`: the output of the last layer after `final_norm`,
    rows at positions `>= lengths[b]` set to 0;
  - `attn.{l}` F32 `[B, H, L, L]` and `attn_mean.{l}` F32 `[B, L, L]` for
    every layer `l` (`modernbert_mlm`, at L 300, keeps only `attn.1` (a
    local layer) and `attn_mean.0`, `attn_mean.1`, to stay a few MiB):
    softmax weights per head and their mean over heads,
    entries whose query or key is `>= lengths[b]` set to 0 (keys outside a
    local layer's window are 0 after the softmax);
  - `__metadata__`: `config` (JSON, attnd's `"model"` config: `d_model`,
    `n_heads`, `n_kv_heads` (= n_heads), `d_ff` (= intermediate_size),
    `n_layers`, `activation` (`gelu` or `gelu_tanh`; `gelu` and unused for
    SwiGLU), `norm_first` true, `layer_norm_eps` (= norm_eps), `bias`
    (= attention_bias = mlp_bias), `position` `"rope"`, `rope_theta` (global),
    `rope_dim` (= head dim E), `rope_style` `"neox"`, `ffn` (`geglu` or
    `swiglu`), `norm` (`layernorm`, or `layernorm_nobias` when norm_bias is
    false), `final_norm` true, `first_attn_norm` false, `global_every`
    (= global_attn_every_n_layers), `local_window` (= local_attention // 2,
    each side), `rope_theta_local` (the theta local layers use)), `mask`
    (`{"causal": false, "window": null, "global": []}`: the local windows come
    from `config`), `reference`, and `hf` (JSON `{"model_type": "modernbert",
    "prefix", "ignored": [every tensor in model.safetensors that is not an
    encoder-layer or final_norm tensor, sorted], "files": ["config.json",
    "model.safetensors"]}`).

- `ids.safetensors`: the same model from token ids (not part of the HF model
  either):
  - `input_ids` I64 `[B, L]`: random ids below vocab 64, none equal to
    `pad_token_id` (3) among the real tokens, 3 at every padded position;
  - `lengths` I32 `[B]`: at least one sequence padded;
  - `x` F32 `[B, L, D]`: ModernBertEmbeddings' output,
    `norm(tok_embeddings(input_ids))` (LayerNorm, eps norm_eps, bias when
    norm_bias), padded rows 0;
  - `out` F32 `[B, L, D]` and `attn.{l}` F32 `[B, H, L, L]` for every layer:
    the stack from `x`, as for case.safetensors, padding 0;
  - `__metadata__`: `reference`, and `embedding` (JSON `{"position": "rope",
    "tensors": [the embedding module's tensors, sorted], "ignored": [the
    tensors neither the stack nor the embedding module reads: the head,
    sorted]}`).

Names (after the prefix: `model.` for ModernBertForMaskedLM, none for
ModernBertModel), per layer `i`; `.bias` tensors only where the config's flag
is true:

- `embeddings.tok_embeddings.weight` `[vocab, D]`, `embeddings.norm.weight`
  (+ `.bias` if norm_bias): the embedding module (ids.safetensors), not read
  by the stack.
- `layers.{i}.attn_norm.weight` (+ `.bias` if norm_bias) for `i >= 1` only:
  layer 0's attn_norm is nn.Identity.
- `layers.{i}.attn.Wqkv.weight` `[3D, D]` (+ `.bias` if attention_bias): rows
  0..D-1 the query, D..2D-1 the key, 2D..3D-1 the value, each head's E rows
  together (`view(B, L, 3, H, E)`).
- `layers.{i}.attn.Wo.weight` `[D, D]` (+ `.bias` if attention_bias).
- `layers.{i}.mlp_norm.weight` (+ `.bias` if norm_bias).
- `layers.{i}.mlp.Wi.weight` `[2F, D]` (+ `.bias` if mlp_bias): rows 0..F-1
  the input, F..2F-1 the gate (`input, gate = Wi(t).chunk(2, dim=-1)`).
- `layers.{i}.mlp.Wo.weight` `[D, F]` (+ `.bias` if mlp_bias).
- `final_norm.weight` (+ `.bias` if norm_bias).
- ModernBertForMaskedLM only, with no prefix: `head.dense.weight` (+ `.bias`
  if classifier_bias), `head.norm.weight` (+ `.bias` if norm_bias),
  `decoder.bias` (if decoder_bias); `decoder.weight` is tied to
  `model.embeddings.tok_embeddings.weight` and not written.

The math (ModernBertEncoderLayer, pre-norm), for layer `i`, E = D / H:

    h = x + Wo(attn(attn_norm(x)))         attn_norm = identity on layer 0
    x = h + Wo_mlp(act(u) * g)             u, g = Wi(mlp_norm(h)).chunk(2)
    out = final_norm(x)                    after the last layer

with every norm LayerNorm(D, eps=norm_eps, bias=norm_bias) and act =
`hidden_activation`: `gelu` exact (erf), `gelu_pytorch_tanh` / `gelu_new`
tanh-approximated, `silu` SiLU.  Attention: q, k, v from Wqkv, RoPE on q and
k over the whole head dim, neox pairing (dims k and k + E/2: `q * cos +
rotate_half(q) * sin`), inv_freq_k = 1 / theta^(2k/E), positions 0..L-1 in
every sequence, angles and cos / sin in float32 as ModernBertRotaryEmbedding
computes them; scores = q k^T / sqrt(E) + mask, softmax, weights v, heads
concatenated, Wo.  Layer `i` is global when `i % global_attn_every_n_layers
== 0`: theta = `global_rope_theta`, every valid key.  Otherwise local: theta =
`local_rope_theta` (`global_rope_theta` when null), only keys j with
`|i - j| <= local_attention // 2` (ModernBertModel._update_attention_mask's
sliding_window_mask), and valid.  Padding (`j >= lengths[b]`) is masked as a
key in every layer.

Compare with 1e-4 absolute tolerance.  Expected values come from a functional
float32 forward in plain torch written after transformers' (4.48-era)
modeling_modernbert.py: ModernBertModel._update_attention_mask,
ModernBertRotaryEmbedding, rotate_half / apply_rotary_pos_emb,
eager_attention_forward (additive finfo.min masks), ModernBertMLP,
ModernBertEncoderLayer, final_norm.  An independent float64 formulation
(-inf outside a boolean allowed-key set, RoPE as explicit pair rotations with
float64 angles, q / k / v from row blocks of Wqkv) agrees within 1e-5 on
every valid output row and attention weight; the rotation agrees with a
complex multiplication within 1e-6.  Running the forward again from the
written files alone reproduces `out` bit for bit.

| case | class | prefix | D / H / F / layers | global every, window each side | thetas global / local | act (attnd) | biases norm / attn / mlp | eps | B, L, lengths | ids: B, L, lengths | covers |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def readme_row(c):
    cfg = c.hf_config
    prefix = f"`{c.prefix}`" if c.prefix else "(none)"
    yn = {True: "yes", False: "no"}
    lt = cfg["local_rope_theta"]
    thetas = f"{cfg['global_rope_theta']:g} / " + ("null" if lt is None else f"{lt:g}") + \
        f" (uses {local_theta(cfg):g})"
    lengths = "none" if c.lengths is None else "[" + ", ".join(map(str, c.lengths)) + "]"
    return (f"| `{c.name}` | {c.cls} | {prefix} | {cfg['hidden_size']} / "
            f"{cfg['num_attention_heads']} / {cfg['intermediate_size']} / "
            f"{cfg['num_hidden_layers']} | {cfg['global_attn_every_n_layers']}, "
            f"{cfg['local_attention'] // 2} | {thetas} | {cfg['hidden_activation']} "
            f"({c.config()['activation']}, {c.config()['ffn']}) | {yn[cfg['norm_bias']]} / "
            f"{yn[cfg['attention_bias']]} / {yn[cfg['mlp_bias']]} | {cfg['norm_eps']:g} | "
            f"{c.B}, {c.L}, {lengths} | {c.ids_B}, {c.ids_L}, "
            f"[{', '.join(map(str, c.ids_lengths))}] | {c.doc} |\n")


def one_blas_thread():
    """Pins the OpenBLAS torch's GEMMs run in to one thread.  torch.set_num_threads
    (fixture_main's one thread) does not reach it, and its thread count
    changes the last bits of the larger GEMMs here (case 1's L 300), so the
    bytes would depend on the machine's core count / OPENBLAS_NUM_THREADS."""
    import ctypes
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            ctypes.CDLL(name).openblas_set_num_threads(1)
            return
        except (OSError, AttributeError):
            continue


def main(argv):
    one_blas_thread()
    return fixture_main(argv, "make_modernbert_fixtures",
                        "Writes OUTDIR/<case>/ (a Hugging Face ModernBERT directory plus\n"
                        "case.safetensors) for every case, or those named, and OUTDIR/README.md.",
                        [Case(*spec) for spec in CASES], make_case, README_HEAD, readme_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
