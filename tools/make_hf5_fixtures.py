#!/usr/bin/python3
"""make_hf5_fixtures - the Hugging Face fixture directories in transformers 5's config format.

    /usr/bin/python3 tools/make_hf5_fixtures.py tests/fixtures

For every case directory of FIXTURES/hf/ and FIXTURES/modernbert/ (made by
make_hf_fixtures.py and make_modernbert_fixtures.py: run those first) it
writes a sibling FIXTURES/hf5/<case>/ or FIXTURES/modernbert5/<case>/ holding
the same files, byte for byte (the weights, the index and shards, the
PyTorch-named file, case.safetensors and ids.safetensors with their expected
outputs), except config.json, which it rewrites as transformers 5's
save_pretrained() writes the configuration class of that model_type for the
same model, and a README.md in each of the two folders.  Nothing is drawn at
random: the same inputs give the same bytes.  Needs python3 only (the JSON and
README writers are tools/reference.py's, which need no torch).

The model is the same one, so the expected outputs of the 4.x directory hold
for the 5.x one: a test that loads both and compares them with the same
references proves the 5.x form is read as the 4.x one.

What transformers 5 writes (src/transformers/configuration_utils.py,
PreTrainedConfig.save_pretrained -> to_json_file(use_diff=True) ->
to_diff_dict(), json.dumps(indent=2, sort_keys=True) and a newline):

  - every field of the model's configuration class (models/<type>/
    configuration_<type>.py, a dataclass in 5.x): they are not fields of
    PreTrainedConfig, so to_diff_dict() keeps them whatever their value,
    null included (is_decoder false, bos_token_id null, ...);
  - of PreTrainedConfig's own fields, those that differ from its defaults:
    architectures, dtype (the model's, "float32"; 4.x wrote torch_dtype),
    model_type, transformers_version;
  - nothing of 4.x's fields that the 5.x classes no longer have
    (position_embedding_type of the BERT family, absolute in every case
    here; gradient_checkpointing, output_past, tie_weights_ and the like),
    nor ModernBERT's global_rope_theta / local_rope_theta, which
    ModernBertConfig.convert_rope_params_to_dict pops into rope_parameters,
    nor global_attn_every_n_layers, which a 5.x ModernBertConfig only keeps
    when given one (a model made in 5.x has layer_types instead), nor
    reference_compile (to_dict pops it), repad_logits_with_grad and
    layer_norm_eps (not fields of the 5.x class).

ModernBERT's positions become
  "layer_types": ["full_attention" if i % global_attn_every_n_layers == 0
                  else "sliding_attention" for each layer i]   (ModernBertConfig.__post_init__)
  "rope_parameters": {"full_attention": {"rope_theta": global_rope_theta,
                                         "rope_type": "default"},
                      "sliding_attention": {"rope_theta": local_rope_theta,
                                            "rope_type": "default"}}
with local_rope_theta null (4.x: the global theta on local layers) written as
the global theta, the base those layers use.

A field of the 4.x file that is neither a 5.x field nor one of the known
dropped ones stops the script: a new fixture field must be placed here by
hand, never lost.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import md_row, write_json, write_readme  # noqa: E402

TRANSFORMERS_VERSION = "5.0.0"

# The 5.x configuration classes' fields (models/<type>/configuration_<type>.py)
# and their defaults, for the fields a 4.x file lacks.
BERT_FIELDS = {
    "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
    "layer_norm_eps": 1e-12, "pad_token_id": 0, "use_cache": True,
    "classifier_dropout": None, "is_decoder": False, "add_cross_attention": False,
    "bos_token_id": None, "eos_token_id": None, "tie_word_embeddings": True,
}
ROBERTA_FIELDS = dict(BERT_FIELDS, vocab_size=50265, layer_norm_eps=1e-12, pad_token_id=1,
                      bos_token_id=0, eos_token_id=2)
ELECTRA_FIELDS = dict(BERT_FIELDS, embedding_size=128, hidden_size=256, num_attention_heads=4,
                      intermediate_size=1024, summary_type="first", summary_use_proj=True,
                      summary_activation="gelu", summary_last_dropout=0.1)
DISTILBERT_FIELDS = {
    "vocab_size": 30522, "max_position_embeddings": 512, "sinusoidal_pos_embds": False,
    "n_layers": 6, "n_heads": 12, "dim": 768, "hidden_dim": 4 * 768, "dropout": 0.1,
    "attention_dropout": 0.1, "activation": "gelu", "initializer_range": 0.02,
    "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "pad_token_id": 0, "eos_token_id": None,
    "bos_token_id": None, "tie_word_embeddings": True,
}
MODERNBERT_FIELDS = {
    "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152,
    "num_hidden_layers": 22, "num_attention_heads": 12, "hidden_activation": "gelu",
    "max_position_embeddings": 8192, "initializer_range": 0.02,
    "initializer_cutoff_factor": 2.0, "norm_eps": 1e-5, "norm_bias": False,
    "pad_token_id": 50283, "eos_token_id": 50282, "bos_token_id": 50281,
    "cls_token_id": 50281, "sep_token_id": 50282, "attention_bias": False,
    "attention_dropout": 0.0, "layer_types": None, "rope_parameters": None,
    "local_attention": 128, "embedding_dropout": 0.0, "mlp_bias": False, "mlp_dropout": 0.0,
    "decoder_bias": True, "classifier_pooling": "cls", "classifier_dropout": 0.0,
    "classifier_bias": False, "classifier_activation": "gelu",
    "deterministic_flash_attn": False, "sparse_prediction": False,
    "sparse_pred_ignore_index": -100, "tie_word_embeddings": True,
}
CLASS_FIELDS = {
    "bert": BERT_FIELDS, "roberta": ROBERTA_FIELDS, "xlm-roberta": ROBERTA_FIELDS,
    "camembert": ROBERTA_FIELDS, "electra": ELECTRA_FIELDS, "distilbert": DISTILBERT_FIELDS,
    "modernbert": MODERNBERT_FIELDS,
}
CLASS_NAME = {
    "bert": "BertConfig", "roberta": "RobertaConfig", "xlm-roberta": "XLMRobertaConfig",
    "camembert": "CamembertConfig", "electra": "ElectraConfig",
    "distilbert": "DistilBertConfig", "modernbert": "ModernBertConfig",
}

# 4.x fields a 5.x save does not write (see the opening comment); the value
# each must have for the model to stay the same, or None for any.
DROPPED = {
    "transformers_version": None, "torch_dtype": None, "gradient_checkpointing": None,
    "output_past": None, "tie_weights_": None, "position_embedding_type": "absolute",
}
MODERNBERT_DROPPED = {
    "global_rope_theta": None, "local_rope_theta": None, "global_attn_every_n_layers": None,
    "reference_compile": None, "repad_logits_with_grad": None, "layer_norm_eps": None,
    "transformers_version": None, "torch_dtype": None, "gradient_checkpointing": None,
    "position_embedding_type": None,   # ModernBERT's rotary positions ignore it
}
BASE_KEPT = ("architectures", "model_type")


def config5(old):
    """The 5.x config.json dict for the 4.x one."""
    mt = old["model_type"]
    fields = CLASS_FIELDS[mt]
    dropped = MODERNBERT_DROPPED if mt == "modernbert" else DROPPED
    for k, v in old.items():
        if k in fields or k in BASE_KEPT:
            continue
        if k not in dropped:
            raise SystemExit(f"make_hf5_fixtures: {mt}: field '{k}' of the 4.x config.json "
                             f"has no place in {CLASS_NAME[mt]} (5.x): place it in the script")
        if dropped[k] is not None and v != dropped[k]:
            raise SystemExit(f"make_hf5_fixtures: {mt}: '{k}': {v!r} cannot be written in the "
                             f"5.x form (only {dropped[k]!r})")
    new = {k: old.get(k, dflt) for k, dflt in fields.items()}
    for k in BASE_KEPT:
        new[k] = old[k]
    new["dtype"] = old.get("torch_dtype", "float32")
    new["transformers_version"] = TRANSFORMERS_VERSION
    if mt == "modernbert":
        every = old.get("global_attn_every_n_layers", 3)
        n = new["num_hidden_layers"]
        new["layer_types"] = ["sliding_attention" if i % every else "full_attention"
                              for i in range(n)]
        g = old.get("global_rope_theta", 160000.0)
        lo = old.get("local_rope_theta", 10000.0)
        new["rope_parameters"] = {
            "full_attention": {"rope_theta": float(g), "rope_type": "default"},
            "sliding_attention": {"rope_theta": float(g if lo is None else lo),
                                  "rope_type": "default"},
        }
    return new


def describe(old, new):
    """The README row's last cell: what the 5.x file says differently."""
    meta = ("dtype", "torch_dtype", "transformers_version")
    gone = sorted(k for k in old if k not in new and k not in meta)
    added = sorted(k for k in new if k not in old and k not in meta)
    parts = []
    if "layer_types" in new:
        lt = new["layer_types"]
        rp = new["rope_parameters"]
        parts.append("layer_types " + ", ".join("F" if t == "full_attention" else "S" for t in lt)
                     + f"; rope_parameters full {rp['full_attention']['rope_theta']:g} / "
                     f"sliding {rp['sliding_attention']['rope_theta']:g}")
    parts.append(f"dtype {new['dtype']}")
    if added:
        parts.append("added " + ", ".join(f"`{k}`" for k in added))
    if gone:
        parts.append("dropped " + ", ".join(f"`{k}`" for k in gone))
    return "; ".join(parts)


README_HEAD = """# {title}: the {src} fixtures in transformers 5's config format

Generated by `tools/make_hf5_fixtures.py` from `tests/fixtures/{src}/`; do not
edit.  Regenerate (after `tools/make_hf_fixtures.py` and
`tools/make_modernbert_fixtures.py`) with

    /usr/bin/python3 tools/make_hf5_fixtures.py tests/fixtures

Each `<case>/` holds the files of `tests/fixtures/{src}/<case>/` byte for
byte (weights, expected outputs: see that folder's README.md) except
`config.json`, written as transformers 5's `save_pretrained()` writes the
configuration class of its `model_type` for the same model: every field of
the 5.x class (`configuration_<type>.py`), null ones included, then
`architectures`, `dtype` (4.x's `torch_dtype`), `model_type` and
`transformers_version` "{version}", indent 2, sorted keys, a newline.  4.x
fields the 5.x classes do not have are not written.{extra}  The model is the
same, so the expected outputs of `tests/fixtures/{src}/<case>/` are this
directory's too: `tests/check_{suite}.c` runs both through the same
comparisons.

| case | 4.x `config.json` → 5.x |
| --- | --- |
"""

MODERNBERT_EXTRA = """  ModernBERT's
`global_attn_every_n_layers`, `global_rope_theta` and `local_rope_theta`
become `layer_types` (layer `i` `full_attention` when `i %
global_attn_every_n_layers == 0`, else `sliding_attention`) and
`rope_parameters` (`full_attention` / `sliding_attention`, each `{"rope_theta":
..., "rope_type": "default"}`; a null `local_rope_theta`, 4.x's "the global
one", is written as the global theta); attnd must take everything from
those."""


def write_set(root, src, dst, title, suite, extra):
    srcdir, dstdir = os.path.join(root, src), os.path.join(root, dst)
    # the text cases (tools/make_text_fixtures.py: text.json) are 4.x only
    cases = sorted(d for d in os.listdir(srcdir) if os.path.isdir(os.path.join(srcdir, d))
                   and not os.path.exists(os.path.join(srcdir, d, "text.json")))
    if not cases:
        raise SystemExit(f"make_hf5_fixtures: no case under {srcdir}")
    os.makedirs(dstdir, exist_ok=True)
    rows = []
    for case in cases:
        sdir, ddir = os.path.join(srcdir, case), os.path.join(dstdir, case)
        if os.path.isdir(ddir):
            shutil.rmtree(ddir)
        os.makedirs(ddir)
        with open(os.path.join(sdir, "config.json"), encoding="utf-8") as f:
            old = json.load(f)
        new = config5(old)
        write_json(new, os.path.join(ddir, "config.json"))
        for name in sorted(os.listdir(sdir)):
            if name != "config.json":
                shutil.copyfile(os.path.join(sdir, name), os.path.join(ddir, name))
        rows.append(md_row(f"`{case}`", describe(old, new)))
        print(f"{dst}/{case}", file=sys.stderr)
    for stale in sorted(os.listdir(dstdir)):
        if os.path.isdir(os.path.join(dstdir, stale)) and stale not in cases:
            shutil.rmtree(os.path.join(dstdir, stale))
    write_readme(os.path.join(dstdir, "README.md"),
                 README_HEAD.format(title=dst, src=src, version=TRANSFORMERS_VERSION,
                                    suite=suite, extra=extra), rows)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: /usr/bin/python3 tools/make_hf5_fixtures.py FIXTURES  (tests/fixtures)",
              file=sys.stderr)
        return 2
    root = argv[1]
    write_set(root, "hf", "hf5", "hf5", "checkpoint", "")
    write_set(root, "modernbert", "modernbert5", "modernbert5", "modernbert", MODERNBERT_EXTRA)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
