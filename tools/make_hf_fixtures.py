#!/usr/bin/python3
"""make_hf_fixtures - Hugging Face encoder directories with expected outputs.

    /usr/bin/python3 tools/make_hf_fixtures.py tests/fixtures/hf [CASE ...]

For every case in CASES it writes OUTDIR/<case>/ holding

    config.json                   a Hugging Face model directory, as
    model.safetensors             transformers' save_pretrained() writes it for
      (or model-0000N-of-00002.safetensors + model.safetensors.index.json)
                                  the case's class, at small sizes
    torch.safetensors             the same encoder-stack weights under
                                  nn.TransformerEncoder's names, written by
                                  export_safetensors.export()
    case.safetensors              input, expected output and attention weights,
                                  laid out as tests/fixtures/torch's
    ids.safetensors               the same model from token ids: a padded batch
                                  of input_ids (token_type_ids, position_ids
                                  where the case has them), the embedding
                                  module's output, the stack's output and
                                  attention weights

and OUTDIR/README.md, which lists the cases and the layout.  No transformers
is needed (nor installable here): the directories are written from what
transformers' modeling code and the public checkpoints' config.json files
say, and the expected values come from torch's nn.TransformerEncoderLayer,
checked against a functional reference written after transformers' modeling
code (BertSelfAttention / BertSelfOutput / BertIntermediate / BertOutput and
DistilBERT's MultiHeadSelfAttention / FFN / TransformerBlock).  The embedding
module is written out after transformers' BertEmbeddings, RobertaEmbeddings
(with create_position_ids_from_input_ids), ElectraEmbeddings and ElectraModel's
embeddings_project, and DistilBERT's Embeddings (learned or sinusoidal
positions); from its output the stack runs as above, with the batch's padding
as a key padding mask (and transformers' extended attention mask in the
functional reference).

What the directories copy from transformers:

  - config.json: the field set of the named public checkpoint's config.json
    (bert-base-uncased, roberta-base, xlm-roberta-base, camembert-base,
    google/electra-small-discriminator, distilbert-base-uncased) with the
    sizes shrunk and "architectures" naming the case's class; written as
    PretrainedConfig.to_json_string() does (indent 2, sorted keys, newline).
  - tensor names: model.state_dict() of the class minus what save_pretrained
    drops: non-persistent buffers (embeddings.position_ids and token_type_ids,
    non-persistent since transformers 4.31) and tied weights, which
    safetensors cannot alias, keeping the one _tied_weights_keys does not
    name: cls.predictions.decoder.{weight,bias}, lm_head.decoder.{weight,bias}
    and vocab_projector.weight are not written (they are
    word_embeddings.weight, cls.predictions.bias / lm_head.bias).
  - each safetensors file carries __metadata__ {"format": "pt"}; the sharded
    index is {"metadata": {"total_size": N}, "weight_map": {...}} with sorted
    keys and indent 2, N the bytes of tensor data in all shards.

Determinism follows make_fixtures.py: torch.manual_seed(crc32(case name)),
one thread, every file written from sorted data, so a rerun on the same
machine gives the same bytes (the expected floats differ in the last bits
from CPU to CPU, as tests/fixtures/torch's do: to add a case or a file, copy
only the new files from a run into a scratch directory).  ids.safetensors
draws from its own generator, seeded with crc32(case name + ":ids"), so the
other files do not depend on it.  Expected values: torch's own modules in eval mode with gradients
enabled (torch 1.13's Python path, not the C++ fast path), run layer by layer
for the attention weights; the HF-style functional reference must agree within
1e-5.  The activations, Linear / LayerNorm, masks, sinusoidal table, id
batches and file helpers are tools/reference.py's.
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
from reference import (check_saved, extended_attention_mask, gelu_new, gelu_tanh,  # noqa: E402
                       ids_generator, layer_norm, linear, linear_names, norm_names,
                       random_ids, sinusoidal_table, write_json)
from safetensors_io import load_file, read_header, save_file  # noqa: E402

ATOL_MODULE = 1e-6       # layer-by-layer run vs the module's forward
ATOL_FUNCTIONAL = 1e-5   # transformers-style functional reference vs the modules

B, L = 2, 5              # every sequence full length: no masks, no lengths
HF_FORMAT_METADATA = {"format": "pt"}   # what save_pretrained puts in every file
ROUND = {"F32": torch.float32, "F16": torch.float16}
TORCH_DTYPE_NAME = {"F16": "float16"}   # config.json "torch_dtype" of a half model

# ---- the public checkpoints' config.json (full size) --------------------------
#
# Field sets as the files on the hub have them.  shrink() replaces the sizes.

CHECKPOINT_CONFIGS = {
    "bert-base-uncased": {
        "architectures": ["BertForMaskedLM"],
        "attention_probs_dropout_prob": 0.1,
        "gradient_checkpointing": False,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 768,
        "initializer_range": 0.02,
        "intermediate_size": 3072,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512,
        "model_type": "bert",
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "transformers_version": "4.6.0.dev0",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": 30522,
    },
    "roberta-base": {
        "architectures": ["RobertaForMaskedLM"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 768,
        "initializer_range": 0.02,
        "intermediate_size": 3072,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 514,
        "model_type": "roberta",
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "pad_token_id": 1,
        "type_vocab_size": 1,
        "vocab_size": 50265,
    },
    "xlm-roberta-base": {
        "architectures": ["XLMRobertaForMaskedLM"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 0,
        "eos_token_id": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 768,
        "initializer_range": 0.02,
        "intermediate_size": 3072,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 514,
        "model_type": "xlm-roberta",
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "output_past": True,
        "pad_token_id": 1,
        "position_embedding_type": "absolute",
        "transformers_version": "4.17.0.dev0",
        "type_vocab_size": 1,
        "use_cache": True,
        "vocab_size": 250002,
    },
    "camembert-base": {
        "architectures": ["CamembertForMaskedLM"],
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": 5,
        "eos_token_id": 6,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 768,
        "initializer_range": 0.02,
        "intermediate_size": 3072,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 514,
        "model_type": "camembert",
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "output_past": True,
        "pad_token_id": 1,
        "type_vocab_size": 1,
        "vocab_size": 32005,
    },
    "google/electra-small-discriminator": {
        "architectures": ["ElectraForPreTraining"],
        "attention_probs_dropout_prob": 0.1,
        "embedding_size": 128,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 256,
        "initializer_range": 0.02,
        "intermediate_size": 1024,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512,
        "model_type": "electra",
        "num_attention_heads": 4,
        "num_hidden_layers": 12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "summary_activation": "gelu",
        "summary_last_dropout": 0.1,
        "summary_type": "first",
        "summary_use_proj": True,
        "transformers_version": "4.6.0.dev0",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": 30522,
    },
    "distilbert-base-uncased": {
        "activation": "gelu",
        "architectures": ["DistilBertForMaskedLM"],
        "attention_dropout": 0.1,
        "dim": 768,
        "dropout": 0.1,
        "hidden_dim": 3072,
        "initializer_range": 0.02,
        "max_position_embeddings": 512,
        "model_type": "distilbert",
        "n_heads": 12,
        "n_layers": 6,
        "pad_token_id": 0,
        "qa_dropout": 0.1,
        "seq_classif_dropout": 0.2,
        "sinusoidal_pos_embds": False,
        "tie_weights_": True,
        "transformers_version": "4.10.0.dev0",
        "vocab_size": 30522,
    },
}

# The small sizes.
D, H, FF, VOCAB, MAX_POS, ELECTRA_EMB = 16, 4, 32, 50, 24, 8
DISTILBERT_EPS = 1e-12   # DistilBERT's LayerNorms: nn.LayerNorm(dim, eps=1e-12), not in its config

# Which prefix each class's state_dict puts before the base model's names
# (its base_model_prefix), and the family the encoder-layer names follow.
CLASSES = {
    "BertModel": ("", "bert"),
    "BertForMaskedLM": ("bert.", "bert"),
    "RobertaForMaskedLM": ("roberta.", "bert"),
    "XLMRobertaForMaskedLM": ("roberta.", "bert"),
    "CamembertForMaskedLM": ("roberta.", "bert"),
    "ElectraForPreTraining": ("electra.", "bert"),
    "DistilBertForMaskedLM": ("distilbert.", "distilbert"),
}

# Each case: name, checkpoint, class, what it covers, overrides.
CASES = [
    ("bert_mlm", "bert-base-uncased", "BertForMaskedLM",
     "BERT masked LM: bert. prefix, cls.predictions.* head, no pooler", {}),
    ("bert_base", "bert-base-uncased", "BertModel",
     "bare BertModel: no prefix, pooler.dense.*; hidden_act gelu_new (tanh gelu); "
     "ids.safetensors with position_ids",
     dict(hidden_act="gelu_new", ids_positions=True)),
    ("roberta_mlm", "roberta-base", "RobertaForMaskedLM",
     "RoBERTa masked LM: roberta. prefix, lm_head.*, type_vocab_size 1, eps 1e-5", {}),
    ("xlm_roberta", "xlm-roberta-base", "XLMRobertaForMaskedLM",
     "XLM-RoBERTa masked LM: model_type xlm-roberta, roberta. prefix, lm_head.*", {}),
    ("camembert", "camembert-base", "CamembertForMaskedLM",
     "CamemBERT masked LM: model_type camembert, roberta. prefix, lm_head.*; "
     "ids.safetensors with a pad_token_id among the real tokens (position padding_idx)",
     dict(pad_inside=True)),
    ("electra_disc", "google/electra-small-discriminator", "ElectraForPreTraining",
     "ELECTRA discriminator: electra. prefix, embedding_size 8 != hidden 16 "
     "(electra.embeddings_project.*), discriminator_predictions.*", {}),
    ("distilbert_mlm", "distilbert-base-uncased", "DistilBertForMaskedLM",
     "DistilBERT masked LM: distilbert.transformer.layer.* names, dim / n_heads / "
     "hidden_dim / n_layers / activation, eps fixed at 1e-12, vocab_* head", {}),
    ("bert_sharded", "bert-base-uncased", "BertForMaskedLM",
     "bert_mlm in two shards with model.safetensors.index.json (embeddings and layer 0 "
     "in shard 1, layer 1 and the head in shard 2)", dict(sharded=True)),
    ("bert_f16", "bert-base-uncased", "BertModel",
     "BertModel with every tensor F16 (expected values and torch.safetensors use the "
     "F16-rounded weights); config.json has torch_dtype float16", dict(dtype="F16")),
    ("bert_stack4", "bert-base-uncased", "BertModel",
     "BertModel with 4 layers", dict(n_layers=4)),
    ("distilbert_sinusoidal", "distilbert-base-uncased", "DistilBertForMaskedLM",
     "DistilBERT with sinusoidal_pos_embds true: position_embeddings.weight holds "
     "create_sinusoidal_embeddings' table, as save_pretrained writes it",
     dict(sinusoidal=True)),
]


class Case:
    def __init__(self, name, checkpoint, cls, doc, overrides):
        self.name, self.checkpoint, self.cls, self.doc = name, checkpoint, cls, doc
        settings = dict(n_layers=2, hidden_act=None, sharded=False, dtype="F32",
                        sinusoidal=False, ids_positions=False, pad_inside=False)
        unknown = set(overrides) - set(settings)
        assert not unknown, f"{name}: unknown settings {unknown}"
        settings.update(overrides)
        for k, v in settings.items():
            setattr(self, k, v)
        self.prefix, self.family = CLASSES[cls]
        self.hf_config = shrink(CHECKPOINT_CONFIGS[checkpoint], self)
        self.model_type = self.hf_config["model_type"]
        cfg = self.hf_config
        if self.family == "distilbert":
            self.act_hf, self.eps = cfg["activation"], DISTILBERT_EPS
        else:
            self.act_hf, self.eps = cfg["hidden_act"], cfg["layer_norm_eps"]
        # transformers' ACT2FN: "gelu" is the exact (erf) gelu, "gelu_new" the
        # tanh approximation (NewGELUActivation).
        self.act = {"gelu": "gelu", "gelu_new": "gelu_tanh"}[self.act_hf]

    def config(self):
        """attnd's "model" config for this case."""
        return {"d_model": D, "n_heads": H, "n_kv_heads": H, "d_ff": FF,
                "n_layers": self.n_layers, "activation": self.act, "norm_first": False,
                "layer_norm_eps": self.eps, "bias": True}


def shrink(full, c):
    """The checkpoint's config.json with the case's sizes and class."""
    cfg = dict(full)
    cfg["architectures"] = [c.cls]
    cfg["vocab_size"] = VOCAB
    cfg["max_position_embeddings"] = MAX_POS
    if cfg["model_type"] == "distilbert":
        cfg.update(dim=D, n_heads=H, hidden_dim=FF, n_layers=c.n_layers)
        if c.hidden_act is not None:
            cfg["activation"] = c.hidden_act
    else:
        cfg.update(hidden_size=D, num_attention_heads=H, intermediate_size=FF,
                   num_hidden_layers=c.n_layers)
        if "embedding_size" in cfg:
            cfg["embedding_size"] = ELECTRA_EMB
        if c.hidden_act is not None:
            cfg["hidden_act"] = c.hidden_act
    if c.sinusoidal:
        cfg["sinusoidal_pos_embds"] = True
    if c.dtype in TORCH_DTYPE_NAME:
        # save_pretrained of a half-precision model records its dtype.
        cfg["torch_dtype"] = TORCH_DTYPE_NAME[c.dtype]
    assert set(cfg) == set(full) | ({"torch_dtype"} if c.dtype in TORCH_DTYPE_NAME else set())
    return cfg


# ---- the HF state_dict -----------------------------------------------------------
#
# (name, shape) in the order the class's modules register them (the order the
# random values are drawn in).

def bert_layer_names(stem):
    """BertLayer's parameters (also RobertaLayer, XLMRobertaLayer,
    CamembertLayer, ElectraLayer: copies of it)."""
    return (linear_names(f"{stem}attention.self.query", D, D) +
            linear_names(f"{stem}attention.self.key", D, D) +
            linear_names(f"{stem}attention.self.value", D, D) +
            linear_names(f"{stem}attention.output.dense", D, D) +
            norm_names(f"{stem}attention.output.LayerNorm", D) +
            linear_names(f"{stem}intermediate.dense", FF, D) +
            linear_names(f"{stem}output.dense", D, FF) +
            norm_names(f"{stem}output.LayerNorm", D))


def distilbert_layer_names(stem):
    """DistilBERT's TransformerBlock parameters."""
    return (linear_names(f"{stem}attention.q_lin", D, D) +
            linear_names(f"{stem}attention.k_lin", D, D) +
            linear_names(f"{stem}attention.v_lin", D, D) +
            linear_names(f"{stem}attention.out_lin", D, D) +
            norm_names(f"{stem}sa_layer_norm", D) +
            linear_names(f"{stem}ffn.lin1", FF, D) +
            linear_names(f"{stem}ffn.lin2", D, FF) +
            norm_names(f"{stem}output_layer_norm", D))


def layer_stem(c, i):
    """The prefix of layer i's names in the HF files."""
    if c.family == "distilbert":
        return f"{c.prefix}transformer.layer.{i}."
    return f"{c.prefix}encoder.layer.{i}."


def hf_names(c):
    """[(name, shape)] of everything save_pretrained writes for case c, and
    the set of names that belong to encoder layers."""
    p, cfg = c.prefix, c.hf_config
    layers = []
    for i in range(c.n_layers):
        stem = layer_stem(c, i)
        layers += (distilbert_layer_names if c.family == "distilbert" else bert_layer_names)(stem)
    if c.model_type == "distilbert":
        # DistilBertForMaskedLM: distilbert (Embeddings, Transformer), then
        # vocab_transform, vocab_layer_norm, vocab_projector (its weight tied
        # to the word embeddings: only the bias is written).
        names = ([(f"{p}embeddings.word_embeddings.weight", (VOCAB, D)),
                  (f"{p}embeddings.position_embeddings.weight", (MAX_POS, D))] +
                 norm_names(f"{p}embeddings.LayerNorm", D) + layers +
                 linear_names("vocab_transform", D, D) + norm_names("vocab_layer_norm", D) +
                 [("vocab_projector.bias", (VOCAB,))])
    else:
        E = cfg.get("embedding_size", D)
        T = cfg["type_vocab_size"]
        names = [(f"{p}embeddings.word_embeddings.weight", (VOCAB, E)),
                 (f"{p}embeddings.position_embeddings.weight", (MAX_POS, E)),
                 (f"{p}embeddings.token_type_embeddings.weight", (T, E))]
        names += norm_names(f"{p}embeddings.LayerNorm", E)
        if c.model_type == "electra":
            # ElectraModel: embeddings_project when embedding_size != hidden_size.
            names += linear_names(f"{p}embeddings_project", D, E)
        names += layers
        if c.cls == "BertModel":
            names += linear_names("pooler.dense", D, D)       # BertPooler
        elif c.cls == "BertForMaskedLM":
            # BertOnlyMLMHead -> BertLMPredictionHead: its own bias first, then
            # transform (dense, LayerNorm); decoder.weight (tied to the word
            # embeddings) and decoder.bias (= cls.predictions.bias) not written.
            names += [("cls.predictions.bias", (VOCAB,))]
            names += linear_names("cls.predictions.transform.dense", D, D)
            names += norm_names("cls.predictions.transform.LayerNorm", D)
        elif c.cls in ("RobertaForMaskedLM", "XLMRobertaForMaskedLM", "CamembertForMaskedLM"):
            # RobertaLMHead: bias, dense, layer_norm; decoder tied.
            names += [("lm_head.bias", (VOCAB,))]
            names += linear_names("lm_head.dense", D, D)
            names += norm_names("lm_head.layer_norm", D)
        elif c.cls == "ElectraForPreTraining":
            # ElectraDiscriminatorPredictions.
            names += linear_names("discriminator_predictions.dense", D, D)
            names += linear_names("discriminator_predictions.dense_prediction", 1, D)
        else:
            raise AssertionError(c.cls)
    layer_names = {n for n, _ in layers}
    assert len(layer_names) == 16 * c.n_layers
    assert len({n for n, _ in names}) == len(names), c.name
    return names, layer_names


def is_norm_weight(name):
    return name.endswith(".weight") and name.split(".")[-2] in (
        "LayerNorm", "layer_norm", "sa_layer_norm", "output_layer_norm", "vocab_layer_norm")


def make_hf_tensors(c):
    """{name: tensor} in the stored dtype: normal * 0.1, LayerNorm weights
    1 + normal * 0.1."""
    names, layer_names = hf_names(c)
    out = {}
    for name, shape in names:
        t = torch.randn(shape) * 0.1
        if is_norm_weight(name):
            t = t + 1.0
        out[name] = t.to(ROUND[c.dtype])
    if c.sinusoidal:
        # DistilBERT's Embeddings.__init__ (and _init_weights) write the
        # sinusoidal table into position_embeddings.weight, a parameter
        # save_pretrained writes like the others.
        out[f"{c.prefix}embeddings.position_embeddings.weight"] = \
            sinusoidal_table(MAX_POS, D).to(ROUND[c.dtype])
    return out, layer_names


# ---- HF names -> nn.TransformerEncoderLayer names ----------------------------------

def torch_layer(c, hf, i):
    """Layer i's parameters under nn.TransformerEncoderLayer's state_dict
    names, float32, from the HF tensors (after any F16 rounding)."""
    s = layer_stem(c, i)
    g = {k: v.float() for k, v in hf.items() if k.startswith(s)}
    if c.family == "distilbert":
        q, k, v = (f"{s}attention.{n}_lin" for n in "qkv")
        o, l1, l2 = f"{s}attention.out_lin", f"{s}ffn.lin1", f"{s}ffn.lin2"
        n1, n2 = f"{s}sa_layer_norm", f"{s}output_layer_norm"
    else:
        q, k, v = (f"{s}attention.self.{n}" for n in ("query", "key", "value"))
        o, l1, l2 = f"{s}attention.output.dense", f"{s}intermediate.dense", f"{s}output.dense"
        n1, n2 = f"{s}attention.output.LayerNorm", f"{s}output.LayerNorm"
    p = {
        "self_attn.in_proj_weight": torch.cat([g[f"{q}.weight"], g[f"{k}.weight"],
                                               g[f"{v}.weight"]]),
        "self_attn.in_proj_bias": torch.cat([g[f"{q}.bias"], g[f"{k}.bias"], g[f"{v}.bias"]]),
        "self_attn.out_proj.weight": g[f"{o}.weight"], "self_attn.out_proj.bias": g[f"{o}.bias"],
        "linear1.weight": g[f"{l1}.weight"], "linear1.bias": g[f"{l1}.bias"],
        "linear2.weight": g[f"{l2}.weight"], "linear2.bias": g[f"{l2}.bias"],
        "norm1.weight": g[f"{n1}.weight"], "norm1.bias": g[f"{n1}.bias"],
        "norm2.weight": g[f"{n2}.weight"], "norm2.bias": g[f"{n2}.bias"],
    }
    used = {f"{m}.{w}" for m in (q, k, v, o, l1, l2, n1, n2) for w in ("weight", "bias")}
    assert used == set(g), f"{c.name}: layer {i}: {sorted(set(g) ^ used)}"
    return {name: t.clone().contiguous() for name, t in p.items()}


ACT_MODULE = {"gelu": "gelu", "gelu_tanh": gelu_tanh}


def torch_model(c, params):
    """(nn.TransformerEncoder in eval mode, its layers) holding params."""
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=ACT_MODULE[c.act],
                                       layer_norm_eps=c.eps, batch_first=True, norm_first=False)
    model = nn.TransformerEncoder(layer, num_layers=c.n_layers, enable_nested_tensor=False)
    mods = list(model.layers)
    for m, p in zip(mods, params):
        m.load_state_dict(p, strict=True)
    model.eval()
    return model, mods


def module_reference(c, model, mods, x):
    """Runs the modules.  Returns (out, [weights per layer], [mean weights per
    layer]); checks the layer-by-layer run against model(x)."""
    out = model(x).detach()
    h = x
    heads, means = [], []
    for m in mods:
        a, w = m.self_attn(h, h, h, need_weights=True, average_attn_weights=False)
        _, wm = m.self_attn(h, h, h, need_weights=True, average_attn_weights=True)
        h = m.norm1(h + a)
        h = m.norm2(h + m.linear2(m.activation(m.linear1(h))))
        heads.append(w.detach())
        means.append(wm.detach())
    assert torch.allclose(out, h.detach(), rtol=0, atol=ATOL_MODULE), \
        f"{c.name}: layer-by-layer run differs from the module's forward"
    return out, heads, means


# ---- the transformers-style functional reference -------------------------------------
#
# Plain torch ops on the HF tensors by their HF names, following transformers'
# modeling code (eval mode: dropout is the identity; every token attended, so
# the extended attention mask is all zeros).

# ACT2FN["gelu"] is GELUActivation: nn.functional.gelu (exact, erf).
HF_ACT = {"gelu": F.gelu, "gelu_new": gelu_new}


def bert_self_attention(hf, stem, h, attention_mask=None):
    """BertSelfAttention.forward (eager attention, self-attention, no cache):
    query / key / value Linear, transpose_for_scores, scores = q k^T /
    sqrt(attention_head_size) + extended attention mask, softmax, dropout,
    context = probs v, permute back.  attention_mask [B, L] of 1 / 0, None:
    every token.  Returns (context, attention_probs)."""
    n_heads, head = H, D // H

    def transpose_for_scores(t):
        return t.view(t.shape[:-1] + (n_heads, head)).permute(0, 2, 1, 3)

    query = transpose_for_scores(linear(hf, f"{stem}attention.self.query", h))
    key = transpose_for_scores(linear(hf, f"{stem}attention.self.key", h))
    value = transpose_for_scores(linear(hf, f"{stem}attention.self.value", h))
    scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(head)
    if attention_mask is None:
        extended_mask = torch.zeros(h.shape[0], 1, 1, h.shape[1])   # attention_mask all ones
    else:
        # ModuleUtilsMixin.get_extended_attention_mask: (1 - mask) * finfo.min
        extended_mask = extended_attention_mask(attention_mask, h.dtype)
    probs = torch.softmax(scores + extended_mask, dim=-1)
    context = torch.matmul(probs, value).permute(0, 2, 1, 3).contiguous()
    return context.view(context.shape[:-2] + (n_heads * head,)), probs


def bert_self_output(hf, stem, hidden, input_tensor, eps):
    """BertSelfOutput.forward: LayerNorm(dropout(dense(hidden)) + input)."""
    return layer_norm(hf, f"{stem}attention.output.LayerNorm",
                      linear(hf, f"{stem}attention.output.dense", hidden) + input_tensor,
                      eps)


def bert_intermediate(hf, stem, hidden, act):
    """BertIntermediate.forward: ACT2FN[hidden_act](dense(hidden))."""
    return HF_ACT[act](linear(hf, f"{stem}intermediate.dense", hidden))


def bert_output(hf, stem, hidden, input_tensor, eps):
    """BertOutput.forward: LayerNorm(dropout(dense(hidden)) + input)."""
    return layer_norm(hf, f"{stem}output.LayerNorm",
                      linear(hf, f"{stem}output.dense", hidden) + input_tensor, eps)


def bert_layer(hf, stem, h, act, eps, attention_mask=None):
    """BertLayer.forward: BertAttention (BertSelfAttention + BertSelfOutput),
    then feed_forward_chunk (BertIntermediate + BertOutput)."""
    context, probs = bert_self_attention(hf, stem, h, attention_mask)
    attention_output = bert_self_output(hf, stem, context, h, eps)
    intermediate = bert_intermediate(hf, stem, attention_output, act)
    return bert_output(hf, stem, intermediate, attention_output, eps), probs


def distilbert_attention(hf, stem, x, attention_mask=None):
    """DistilBERT MultiHeadSelfAttention.forward: q / k / v_lin, shape(),
    q / sqrt(dim_per_head), scores = q k^T, masked_fill where mask == 0 (none
    here), softmax, dropout, context = weights v, unshape(), out_lin.
    Returns (output, weights)."""
    bs = x.shape[0]
    dim_per_head = D // H

    def shape(t):
        return t.view(bs, -1, H, dim_per_head).transpose(1, 2)

    def unshape(t):
        return t.transpose(1, 2).contiguous().view(bs, -1, H * dim_per_head)

    q = shape(linear(hf, f"{stem}attention.q_lin", x))
    k = shape(linear(hf, f"{stem}attention.k_lin", x))
    v = shape(linear(hf, f"{stem}attention.v_lin", x))
    q = q / math.sqrt(dim_per_head)
    scores = torch.matmul(q, k.transpose(2, 3))
    mask = torch.ones(bs, x.shape[1]) if attention_mask is None else attention_mask
    scores = scores.masked_fill((mask == 0).view(bs, 1, 1, -1).expand_as(scores),
                                torch.tensor(torch.finfo(scores.dtype).min))
    weights = F.softmax(scores, dim=-1)
    context = unshape(torch.matmul(weights, v))
    return linear(hf, f"{stem}attention.out_lin", context), weights


def distilbert_ffn(hf, stem, x, act):
    """DistilBERT FFN.ff_chunk: lin2(activation(lin1(x))), dropout."""
    return linear(hf, f"{stem}ffn.lin2", HF_ACT[act](linear(hf, f"{stem}ffn.lin1", x)))


def distilbert_block(hf, stem, x, act, eps, attention_mask=None):
    """DistilBERT TransformerBlock.forward: sa_layer_norm(attention + x), then
    output_layer_norm(ffn + sa_output)."""
    sa_output, weights = distilbert_attention(hf, stem, x, attention_mask)
    sa_output = layer_norm(hf, f"{stem}sa_layer_norm", sa_output + x, eps)
    ffn_output = distilbert_ffn(hf, stem, sa_output, act)
    return layer_norm(hf, f"{stem}output_layer_norm", ffn_output + sa_output, eps), weights


def hf_reference(c, hf, x, attention_mask=None):
    """The encoder stack (BertEncoder / DistilBERT Transformer) on x, the
    embeddings' output; attention_mask [B, L] of 1 / 0, or None: every token.
    Returns (out, [attention probs per layer])."""
    hf = {k: v.float() for k, v in hf.items()}
    block = distilbert_block if c.family == "distilbert" else bert_layer
    h, probs = x, []
    for i in range(c.n_layers):
        h, p = block(hf, layer_stem(c, i), h, c.act_hf, c.eps, attention_mask)
        probs.append(p)
    return h.detach(), [p.detach() for p in probs]


# ---- the embedding module, from token ids ------------------------------------------
#
# Each module written out after transformers' modeling code (eval mode:
# dropout is the identity), on the HF tensors by their HF names.

IDS_B, IDS_L, IDS_LENGTHS = 2, 7, (7, 4)   # sequence 1 padded: pad_token_id past 4


def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    """modeling_roberta.create_position_ids_from_input_ids: non-padding
    symbols numbered from padding_idx + 1, padding symbols padding_idx."""
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


def bert_embeddings(c, hf, input_ids, token_type_ids, position_ids):
    """BertEmbeddings.forward (also ElectraEmbeddings', at embedding_size, and
    RobertaEmbeddings' once its position_ids are made): position_ids default
    to the registered buffer arange(max_position_embeddings)[:, :seq_length],
    token_type_ids to zeros; embeddings = word_embeddings(input_ids) +
    token_type_embeddings(token_type_ids), += position_embeddings(position_ids)
    (position_embedding_type "absolute"), LayerNorm(eps=layer_norm_eps)."""
    e = f"{c.prefix}embeddings."
    seq_length = input_ids.shape[1]
    if position_ids is None:
        position_ids = torch.arange(MAX_POS).expand((1, -1))[:, :seq_length]
    if token_type_ids is None:
        token_type_ids = torch.zeros(input_ids.shape, dtype=torch.long)
    inputs_embeds = F.embedding(input_ids, hf[f"{e}word_embeddings.weight"])
    token_type_embeddings = F.embedding(token_type_ids, hf[f"{e}token_type_embeddings.weight"])
    embeddings = inputs_embeds + token_type_embeddings
    embeddings += F.embedding(position_ids, hf[f"{e}position_embeddings.weight"])
    return layer_norm(hf, f"{e}LayerNorm", embeddings, c.eps)


def roberta_embeddings(c, hf, input_ids, token_type_ids, position_ids):
    """RobertaEmbeddings.forward (XLM-R's and CamemBERT's are copies): with no
    position_ids, create_position_ids_from_input_ids(input_ids, padding_idx =
    pad_token_id); then as BertEmbeddings."""
    if position_ids is None:
        position_ids = create_position_ids_from_input_ids(input_ids,
                                                          c.hf_config["pad_token_id"])
    return bert_embeddings(c, hf, input_ids, token_type_ids, position_ids)


def electra_embeddings(c, hf, input_ids, token_type_ids, position_ids):
    """ElectraEmbeddings.forward (BertEmbeddings' math at embedding_size), then
    ElectraModel.forward's embeddings_project (Linear embedding_size ->
    hidden_size, there when they differ)."""
    h = bert_embeddings(c, hf, input_ids, token_type_ids, position_ids)
    if f"{c.prefix}embeddings_project.weight" in hf:
        h = linear(hf, f"{c.prefix}embeddings_project", h)
    return h


def distilbert_embeddings(c, hf, input_ids, token_type_ids, position_ids):
    """DistilBERT Embeddings.forward: position_ids = the buffer
    arange(max_position_embeddings)[:, :seq_length] (it takes none);
    word_embeddings + position_embeddings (the learned table, or the
    sinusoidal one written into it), LayerNorm(eps=1e-12); no token types."""
    assert token_type_ids is None
    e = f"{c.prefix}embeddings."
    seq_length = input_ids.shape[1]
    if position_ids is None:
        position_ids = torch.arange(MAX_POS).expand((1, -1))[:, :seq_length]
    embeddings = (F.embedding(input_ids, hf[f"{e}word_embeddings.weight"]) +
                  F.embedding(position_ids, hf[f"{e}position_embeddings.weight"]))
    return layer_norm(hf, f"{e}LayerNorm", embeddings, DISTILBERT_EPS)


EMBEDDINGS = {"bert": bert_embeddings, "roberta": roberta_embeddings,
              "xlm-roberta": roberta_embeddings, "camembert": roberta_embeddings,
              "electra": electra_embeddings, "distilbert": distilbert_embeddings}
POSITION_KIND = {"bert": "absolute", "electra": "absolute", "distilbert": "absolute",
                 "roberta": "roberta", "xlm-roberta": "roberta", "camembert": "roberta"}


def embedding_names(c, hf):
    """The embedding module's tensors in the HF files (what it reads)."""
    return sorted(n for n in hf if n.startswith(f"{c.prefix}embeddings.") or
                  n.startswith(f"{c.prefix}embeddings_project."))


def ids_batch(c, gen):
    """input_ids [B, L] (I64): random ids of the small vocabulary, none
    pad_token_id among the real tokens (but one in a pad_inside case),
    pad_token_id past each sequence's length; token_type_ids where the family
    has two types (not all zero, 0 on padding); lengths (I32); position_ids
    in an ids_positions case."""
    pad = c.hf_config.get("pad_token_id", 0)
    lengths = torch.tensor(IDS_LENGTHS, dtype=torch.int32)
    assert len(lengths) == IDS_B, c.name
    ids, valid = random_ids(gen, lengths, IDS_L, VOCAB, pad, (0, 3) if c.pad_inside else None)
    out = {"input_ids": ids, "lengths": lengths}
    if c.hf_config.get("type_vocab_size", 0) >= 2:
        tt = torch.zeros(IDS_B, IDS_L, dtype=torch.long)
        tt[0, 3:] = 1
        tt[1, 2:] = 1
        out["token_type_ids"] = torch.where(valid, tt, torch.zeros_like(tt))
    if c.ids_positions:
        pos = torch.tensor([[3, 4, 5, 6, 7, 8, 9], [9, 0, 2, 1, 0, 0, 0]], dtype=torch.long)
        assert pos.shape == (IDS_B, IDS_L) and pos.max() < MAX_POS
        out["position_ids"] = pos
    return out


def module_reference_masked(c, model, mods, x, key_padding):
    """module_reference with a key padding mask ([B, L], True = padding): the
    modules' forward and, layer by layer, per-head attention weights."""
    out = model(x, src_key_padding_mask=key_padding).detach()
    h, heads = x, []
    for m in mods:
        a, w = m.self_attn(h, h, h, key_padding_mask=key_padding, need_weights=True,
                           average_attn_weights=False)
        h = m.norm1(h + a)
        h = m.norm2(h + m.linear2(m.activation(m.linear1(h))))
        heads.append(w.detach())
    valid = ~key_padding
    assert torch.allclose(out[valid], h.detach()[valid], rtol=0, atol=ATOL_MODULE), \
        f"{c.name}: masked layer-by-layer run differs from the module's forward"
    return out, heads


def make_ids(c, hf, model, mods):
    """ids.safetensors' tensors: the batch, the embedding module's output x
    (after transformers' modules), the stack's out and attn.{l} (torch's
    modules with the key padding mask, checked against the functional
    reference with transformers' extended attention mask); padding rows and
    entries 0.  Returns (tensors, max |functional - modules|)."""
    gen = ids_generator(c.name)
    batch = ids_batch(c, gen)
    hf32 = {k: v.float() for k, v in hf.items()}
    with torch.no_grad():
        x = EMBEDDINGS[c.model_type](c, hf32, batch["input_ids"], batch.get("token_type_ids"),
                                     batch.get("position_ids"))
    lengths = batch["lengths"].long()
    valid = torch.arange(IDS_L)[None, :] < lengths[:, None]                 # [B, L]
    pair = (valid[:, None, :, None] & valid[:, None, None, :]).float()      # [B, 1, L, L]
    out, heads = module_reference_masked(c, model, mods, x, ~valid)
    f_out, f_probs = hf_reference(c, hf, x, valid.long())
    diff = (out - f_out).abs()[valid].max().item()
    for w, fw in zip(heads, f_probs):
        diff = max(diff, ((w - fw).abs() * pair).max().item())
    assert diff <= ATOL_FUNCTIONAL, f"{c.name}: ids: functional reference differs by {diff:.3g}"
    tensors = dict(batch)
    tensors["x"] = (x * valid[..., None]).contiguous()
    tensors["out"] = (out * valid[..., None]).contiguous()
    for l, w in enumerate(heads):
        tensors[f"attn.{l}"] = (w * pair).contiguous()
    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), f"{c.name}: ids {k} is not finite"
    return tensors, diff


def ids_phrase(c):
    return ("the embedding module written out in torch " + torch.__version__.split('+')[0] +
            " after transformers' " +
            {"bert": "BertEmbeddings", "roberta": "RobertaEmbeddings",
             "xlm-roberta": "XLMRobertaEmbeddings (RobertaEmbeddings)",
             "camembert": "CamembertEmbeddings (RobertaEmbeddings)",
             "electra": "ElectraEmbeddings + ElectraModel's embeddings_project",
             "distilbert": "DistilBERT Embeddings"}[c.model_type] +
            (" with create_position_ids_from_input_ids" if POSITION_KIND[c.model_type] == "roberta"
             else "") +
            ", then the stack as case.safetensors' reference with src_key_padding_mask; the "
            "functional reference with transformers' extended attention mask agrees within 1e-5.")


# ---- files ---------------------------------------------------------------------------

def nbytes(t):
    return t.numel() * t.element_size()


def write_hf_dir(c, d, hf, layer_names):
    """Writes config.json and the weights; returns the sorted file names."""
    write_json(c.hf_config, os.path.join(d, "config.json"))
    if not c.sharded:
        save_file(hf, os.path.join(d, "model.safetensors"), HF_FORMAT_METADATA)
        return sorted(["config.json", "model.safetensors"])
    # Shard 1: the embeddings and layer 0; shard 2: the other layers and the head.
    shards = [{}, {}]
    for n, t in hf.items():
        first = n.startswith(f"{c.prefix}embeddings.") or n.startswith(layer_stem(c, 0))
        shards[0 if first else 1][n] = t
    assert all(shards) and not any(n.startswith(layer_stem(c, 0)) for n in shards[1])
    files = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    weight_map = {}
    for fname, shard in zip(files, shards):
        save_file(shard, os.path.join(d, fname), HF_FORMAT_METADATA)
        weight_map.update({n: fname for n in shard})
    index = {"metadata": {"total_size": sum(nbytes(t) for t in hf.values())},
             "weight_map": weight_map}
    write_json(index, os.path.join(d, "model.safetensors.index.json"))
    return sorted(["config.json", "model.safetensors.index.json"] + files)


def read_hf_dir(d):
    """Reads an HF directory back the way a loader would: the index if there
    is one, else model.safetensors.  Returns {name: tensor}."""
    index_path = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path, encoding="utf-8") as f:
            index = json.load(f)
        out, total = {}, 0
        for fname in sorted(set(index["weight_map"].values())):
            tensors, meta = load_file(os.path.join(d, fname), "pt")
            assert meta == HF_FORMAT_METADATA, fname
            for n, t in tensors.items():
                assert index["weight_map"][n] == fname and n not in out, n
                total += nbytes(t)
            out.update(tensors)
        assert set(out) == set(index["weight_map"])
        assert index["metadata"] == {"total_size": total}
        return out
    tensors, meta = load_file(os.path.join(d, "model.safetensors"), "pt")
    assert meta == HF_FORMAT_METADATA
    return tensors


def module_phrase(c):
    return (f"torch {torch.__version__.split('+')[0]} nn.TransformerEncoder({c.n_layers} x "
            "nn.TransformerEncoderLayer, enable_nested_tensor=False, post-norm, "
            f"activation {c.act}, layer_norm_eps {c.eps:g}) in eval mode with grad enabled "
            "(Python path, not the fast path), weights mapped from the Hugging Face tensors "
            "(in_proj = cat(q, k, v)); attention weights from layer.self_attn("
            "need_weights=True, average_attn_weights=False / True) run layer by layer; "
            "a functional reference after transformers' " +
            ("DistilBERT MultiHeadSelfAttention / FFN / TransformerBlock"
             if c.family == "distilbert" else
             "BertSelfAttention / BertSelfOutput / BertIntermediate / BertOutput") +
            " on the HF tensors agrees within 1e-5.")


def make_case(c, outdir):
    torch.manual_seed(zlib.crc32(c.name.encode()))
    hf, layer_names = make_hf_tensors(c)
    x = torch.randn(B, L, D)   # the encoder's input: what the embeddings module gives

    params = [torch_layer(c, hf, i) for i in range(c.n_layers)]
    model, mods = torch_model(c, params)
    out, heads, means = module_reference(c, model, mods, x)
    f_out, f_probs = hf_reference(c, hf, x)
    assert torch.allclose(out, f_out, rtol=0, atol=ATOL_FUNCTIONAL), \
        f"{c.name}: HF reference differs from the modules (max {(out - f_out).abs().max():.3g})"
    for l, (w, fw, wm) in enumerate(zip(heads, f_probs, means)):
        assert torch.allclose(w, fw, rtol=0, atol=ATOL_FUNCTIONAL), f"{c.name}: weights, layer {l}"
        assert torch.allclose(wm, w.mean(1), rtol=0, atol=1e-6), c.name
    tensors = {"x": x, "out": out}
    for l, (w, wm) in enumerate(zip(heads, means)):
        tensors[f"attn.{l}"] = w.contiguous()
        tensors[f"attn_mean.{l}"] = wm.contiguous()
    for k, v in tensors.items():
        assert torch.isfinite(v).all(), f"{c.name}: {k} is not finite"

    d = os.path.join(outdir, c.name)
    os.makedirs(d, exist_ok=True)
    files = write_hf_dir(c, d, hf, layer_names)
    torch_path = os.path.join(d, "torch.safetensors")
    config = export(model, torch_path, "F32")
    assert config == c.config(), f"{c.name}: export inferred {config}, expected {c.config()}"
    hf_meta = {"model_type": c.model_type, "prefix": c.prefix,
               "ignored": sorted(set(hf) - layer_names), "files": files}
    meta = {"config": json.dumps(config), "mask": json.dumps(
        {"causal": False, "window": None, "global": []}), "reference": module_phrase(c),
        "hf": json.dumps(hf_meta)}
    case_path = os.path.join(d, "case.safetensors")
    save_file(tensors, case_path, meta)

    # The same model from token ids.
    ids, ids_diff = make_ids(c, hf, model, mods)
    emb_names = embedding_names(c, hf)
    ids_meta = {"reference": ids_phrase(c), "embedding": json.dumps(
        {"position": "sinusoidal" if c.sinusoidal else POSITION_KIND[c.model_type],
         "tensors": emb_names,
         "ignored": sorted(set(hf) - layer_names - set(emb_names))})}
    save_file(ids, os.path.join(d, "ids.safetensors"), ids_meta)
    check_saved(os.path.join(d, "ids.safetensors"), ids, ids_meta, f"{c.name}: ids")
    print(f"{c.name}: ids: functional vs modules max |diff| {ids_diff:.3g}", file=sys.stderr)

    # Nothing else in the directory (a stale file from an older layout would
    # contradict "files").
    expected = set(files) | {"torch.safetensors", "case.safetensors", "ids.safetensors"}
    for stale in sorted(set(os.listdir(d)) - expected):
        os.remove(os.path.join(d, stale))
        print(f"{c.name}: removed stale {stale}", file=sys.stderr)
    check_round_trip(c, d, hf, params, tensors, meta)
    return hf_meta


def check_round_trip(c, d, hf, params, tensors, meta):
    """Reads every file back and compares with what was meant."""
    check_saved(os.path.join(d, "case.safetensors"), tensors, meta, c.name,
                lambda k: torch.float32)
    back = read_hf_dir(d)
    assert set(back) == set(hf), c.name
    for k, v in hf.items():
        assert back[k].dtype == ROUND[c.dtype] and torch.equal(back[k], v), f"{c.name}: {k}"
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        assert json.load(f) == c.hf_config, c.name
    # torch.safetensors holds exactly the HF values, F32, under layers.{i}. names.
    tt, tmeta = load_file(os.path.join(d, "torch.safetensors"), "pt")
    assert tmeta == {}, c.name
    want = {f"layers.{i}.{k}": v for i, p in enumerate(params) for k, v in p.items()}
    assert set(tt) == set(want), f"{c.name}: {sorted(set(tt) ^ set(want))}"
    for k, v in want.items():
        assert tt[k].dtype == torch.float32 and torch.equal(tt[k], v), f"{c.name}: {k}"
    for i in range(c.n_layers):
        assert torch.equal(torch_layer(c, back, i)["self_attn.in_proj_weight"],
                           tt[f"layers.{i}.self_attn.in_proj_weight"]), c.name
    # Headers: every HF tensor in the stored dtype.
    hf_meta = json.loads(meta["hf"])
    for fname in hf_meta["files"]:
        if fname.endswith(".safetensors"):
            header, _, _ = read_header(os.path.join(d, fname))
            assert {v["dtype"] for v in header.values()} == {c.dtype}, (c.name, fname)


# ---- README ---------------------------------------------------------------------------

README_HEAD = """\
# Hugging Face encoder fixtures

Generated by `tools/make_hf_fixtures.py`; do not edit.  Regenerate with

    /usr/bin/python3 tools/make_hf_fixtures.py tests/fixtures/hf

(needs Debian's python3-torch and python3-numpy; no `transformers`).  The
script is deterministic: running it twice on one machine gives byte-identical
files (the expected floats differ in the last bits from CPU to CPU: to add a
case, run it into a scratch directory and copy only the new files).

Each case is a directory that is at once a Hugging Face model directory and a
test case:

- `config.json`: the field set of the named public checkpoint's config.json,
  with the sizes shrunk (hidden 16, 4 heads, intermediate 32, vocab 50,
  max_position_embeddings 24; ELECTRA embedding_size 8), `architectures`
  naming the case's class; indent 2, sorted keys, as transformers writes it.
- `model.safetensors`, or for `bert_sharded` `model-00001-of-00002.safetensors`,
  `model-00002-of-00002.safetensors` and `model.safetensors.index.json`
  (`{"metadata": {"total_size": <bytes of tensor data>}, "weight_map":
  {name: file}}`, sorted keys, indent 2): every tensor save_pretrained writes
  for the class (embeddings, encoder layers, pooler, task head; no
  `position_ids` buffer, no tied decoder / projector weights), each file with
  `__metadata__` `{"format": "pt"}`.  Values: normal * 0.1, LayerNorm weights
  1 + normal * 0.1.  F32 except `bert_f16` (every tensor F16).
- `torch.safetensors`: the encoder layers under `nn.TransformerEncoder` names
  (`layers.{i}.self_attn.in_proj_weight` = cat(query, key, value) weights,
  `in_proj_bias`, `self_attn.out_proj.*` = attention output dense, `linear1.*`
  = intermediate dense, `linear2.*` = output dense, `norm1.*` = attention
  output LayerNorm / sa_layer_norm, `norm2.*` = output LayerNorm /
  output_layer_norm), F32, exactly the HF values (after F16 rounding), written
  by `tools/export_safetensors.py`'s `export()`.  Loading it and loading the
  HF directory must give bit-identical outputs.
- `case.safetensors`, laid out as `tests/fixtures/torch`'s:
  - `x` F32 `[B, L, D]` = `[2, 5, 16]`: the encoder's input (what the
    embeddings module would give), `torch.randn`;
  - `out` F32 `[B, L, D]`: the encoder stack's output;
  - `attn.{l}` F32 `[B, H, L, L]` and `attn_mean.{l}` F32 `[B, L, L]` for
    every layer `l`;
  - `__metadata__`: `config` (JSON, attnd's `"model"` config: d_model,
    n_heads, n_kv_heads, d_ff, n_layers, activation, norm_first false,
    layer_norm_eps, bias true), `mask` (`{"causal": false, "window": null,
    "global": []}`: no masks, every sequence full length), `reference`, and
    `hf` (JSON `{"model_type", "prefix", "ignored": [every tensor name in the
    HF files that is not an encoder-layer tensor, sorted], "files": [the HF
    directory's files, config.json included, sorted]}`).

- `ids.safetensors`: the same model run from token ids, through the
  embedding module the HF files carry:
  - `input_ids` I64 `[B, L]` = `[2, 7]`: random ids below vocab 50, none
    equal to `pad_token_id` among the real tokens (but `input_ids[0][3]` in
    `camembert`, which then takes position padding_idx), `pad_token_id` at
    every padded position;
  - `lengths` I32 `[B]` = `[7, 4]`: sequence 1 is padded (attention_mask =
    position < length);
  - `token_type_ids` I64 `[B, L]` where the config has type_vocab_size 2
    (BERT, ELECTRA): `[[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0, 0]]`;
  - `position_ids` I64 `[B, L]` in `bert_base` only:
    `[[3, 4, 5, 6, 7, 8, 9], [9, 0, 2, 1, 0, 0, 0]]`;
  - `x` F32 `[B, L, D]`: the embedding module's output (BertEmbeddings:
    LayerNorm(word + token_type + position); RobertaEmbeddings: positions
    from create_position_ids_from_input_ids, numbered from padding_idx + 1
    over the tokens other than padding_idx, padding_idx for those;
    ELECTRA: at embedding_size 8, then embeddings_project to 16; DistilBERT:
    LayerNorm(word + position), eps 1e-12, no token types, the position table
    the file holds, sinusoidal in `distilbert_sinusoidal`), padded rows 0;
  - `out` F32 `[B, L, D]`: the stack's output from `x` with padded keys
    masked, padded rows 0;
  - `attn.{l}` F32 `[B, H, L, L]` for every layer: per-head weights, entries
    whose query or key is padding 0;
  - `__metadata__`: `reference`, and `embedding` (JSON `{"position":
    "absolute" | "roberta" | "sinusoidal", "tensors": [the embedding module's
    tensors in the HF files, sorted], "ignored": [the tensors neither the stack
    nor the embedding module reads: pooler and heads, sorted]}`).

The case directory also holds `torch.safetensors`, `case.safetensors` and
`ids.safetensors`, which are not part of the HF model (`files` does not list
them): a loader must read `model.safetensors` or the index, not every
`*.safetensors`.

Encoder-layer names (after the prefix), per layer `i`:

- BERT family (bert, roberta, xlm-roberta, camembert, electra):
  `encoder.layer.{i}.attention.self.{query,key,value}.{weight,bias}`,
  `encoder.layer.{i}.attention.output.dense.{weight,bias}`,
  `encoder.layer.{i}.attention.output.LayerNorm.{weight,bias}`,
  `encoder.layer.{i}.intermediate.dense.{weight,bias}`,
  `encoder.layer.{i}.output.dense.{weight,bias}`,
  `encoder.layer.{i}.output.LayerNorm.{weight,bias}`.
- DistilBERT: `transformer.layer.{i}.attention.{q_lin,k_lin,v_lin,out_lin}.{weight,bias}`,
  `transformer.layer.{i}.sa_layer_norm.{weight,bias}`,
  `transformer.layer.{i}.ffn.{lin1,lin2}.{weight,bias}`,
  `transformer.layer.{i}.output_layer_norm.{weight,bias}`.

Hyperparameters: BERT family `hidden_size`, `num_attention_heads`,
`intermediate_size`, `num_hidden_layers`, `hidden_act` ("gelu" = exact erf
gelu, "gelu_new" = tanh gelu), `layer_norm_eps` (1e-12 bert / electra, 1e-5
roberta / xlm-roberta / camembert); DistilBERT `dim`, `n_heads`, `hidden_dim`,
`n_layers`, `activation`, and LayerNorm eps fixed at 1e-12 (not in its
config).  Every model is post-norm with biases.

Compare with 1e-4 absolute tolerance.  Expected values come from torch's own
`nn.TransformerEncoder` (eval mode, grad enabled so torch 1.13 runs its Python
path), weights mapped from the HF tensors; a functional reference written
after transformers' BertSelfAttention / BertSelfOutput / BertIntermediate /
BertOutput and DistilBERT's MultiHeadSelfAttention / FFN / TransformerBlock,
run on the HF tensors by their HF names, agrees within 1e-5 on every case,
padded batches included (with transformers' extended attention mask).

| case | checkpoint's config | class | model_type | prefix | act | eps | layers | dtype | covers |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def readme_row(c):
    prefix = f"`{c.prefix}`" if c.prefix else "(none)"
    return (f"| `{c.name}` | {c.checkpoint} | {c.cls} | `{c.model_type}` | {prefix} | "
            f"{c.act_hf} ({c.act}) | {c.eps:g} | {c.n_layers} | {c.dtype} | {c.doc} |\n")


def main(argv):
    return fixture_main(argv, "make_hf_fixtures",
                        "Writes OUTDIR/<case>/ (a Hugging Face model directory plus torch.safetensors\n"
                        "and case.safetensors) for every case, or those named, and OUTDIR/README.md.",
                        [Case(*spec) for spec in CASES], make_case, README_HEAD, readme_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
