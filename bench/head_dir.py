#!/usr/bin/python3
"""head_dir - BERT-base-sized BertForSequenceClassification and BertModel directories.

    /usr/bin/python3 bench/head_dir.py [--reranker | --base] [--tokenizer TOK_DIR] MLM_DIR OUTDIR

MLM_DIR is tools/fixtures/make_bert_dir.py's BERT-base-sized BertForMaskedLM
directory.  OUTDIR gets its config.json with "architectures"
["BertForSequenceClassification"] and two labels, and the weights as a
sharded directory: model-00001-of-00002.safetensors, a symbolic link to
MLM_DIR's model.safetensors (the encoder and embeddings; its cls.predictions.*
tensors are then listed as ignored), model-00002-of-00002.safetensors with
what the sequence head reads (bert.pooler.dense.weight [768, 768] and
.bias, classifier.weight [2, 768] and .bias: normal * 0.02, numpy seed 1)
and model.safetensors.index.json naming every tensor's shard.  Made once:
an OUTDIR with its index is kept.

With --reranker, one label instead ("id2label" {"0": "LABEL_0"},
classifier.weight [1, 768] and .bias [1]): a cross-encoder, which attnd
serves as a reranker (TEI's /rerank).  With --base, no head: OUTDIR gets
the config.json with "architectures" ["BertModel"] and model.safetensors, a
symbolic link to MLM_DIR's (its cls.predictions.* tensors listed as
ignored), an embedding model (TEI's /embed); made once: an OUTDIR with its
config.json is kept.  With --tokenizer, OUTDIR also gets
symbolic links to TOK_DIR's tokenizer files (tokenizer.json, and
tokenizer_config.json, special_tokens_map.json, vocab.txt where it has
them), made each time.  numpy only (the safetensors writer is
tools/fixtures/safetensors_io.py's).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "fixtures"))
from safetensors_io import save_file  # noqa: E402


def header_names(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return [k for k in json.loads(f.read(n)) if k != "__metadata__"]


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")


def link_tokenizer(tok_dir, out):
    """Symbolic links in OUT to TOK_DIR's tokenizer files (tokenizer.json required)."""
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
        sys.exit(f"head_dir: {tok_dir} has no tokenizer.json")
    for name in TOKENIZER_FILES:
        target, link = os.path.join(os.path.abspath(tok_dir), name), os.path.join(out, name)
        if not os.path.exists(target):
            continue
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)


def base_dir(src, out, cfg):
    """OUT as the base model of SRC: BertModel's config.json, SRC's weights linked."""
    config = os.path.join(out, "config.json")
    if os.path.exists(config):
        return
    link = os.path.join(out, "model.safetensors")
    if not os.path.lexists(link):
        os.symlink(os.path.join(src, "model.safetensors"), link)
    cfg["architectures"] = ["BertModel"]
    with open(config, "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mlm_dir")
    ap.add_argument("out")
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--reranker", action="store_true",
                      help="one label: a cross-encoder (TEI's reranker)")
    kind.add_argument("--base", action="store_true",
                      help="BertModel, no head: an embedding model")
    ap.add_argument("--tokenizer", metavar="TOK_DIR",
                    help="link TOK_DIR's tokenizer files into OUT")
    a = ap.parse_args()
    src, out = os.path.abspath(a.mlm_dir), a.out
    os.makedirs(out, exist_ok=True)
    if a.tokenizer:
        link_tokenizer(a.tokenizer, out)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    if a.base:
        base_dir(src, out, cfg)
        return
    index = os.path.join(out, "model.safetensors.index.json")
    if os.path.exists(index):
        return
    cfg["architectures"] = ["BertForSequenceClassification"]
    labels = ["LABEL_0"] if a.reranker else ["NEGATIVE", "POSITIVE"]
    cfg["id2label"] = {str(i): name for i, name in enumerate(labels)}
    cfg["label2id"] = {name: i for i, name in enumerate(labels)}
    with open(os.path.join(out, "config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    link = os.path.join(out, first)
    if not os.path.lexists(link):
        os.symlink(os.path.join(src, "model.safetensors"), link)
    D = cfg["hidden_size"]
    rng = np.random.default_rng(1)
    head = {"bert.pooler.dense.weight": rng.standard_normal((D, D)) * 0.02,
            "bert.pooler.dense.bias": rng.standard_normal(D) * 0.02,
            "classifier.weight": rng.standard_normal((len(labels), D)) * 0.02,
            "classifier.bias": rng.standard_normal(len(labels)) * 0.02}
    head = {k: v.astype(np.float32) for k, v in head.items()}
    save_file(head, os.path.join(out, second), metadata={"format": "pt"})
    weight_map = {name: first for name in header_names(link)}
    weight_map.update({name: second for name in head})
    total = sum(os.path.getsize(os.path.join(out, s)) for s in (first, second))
    with open(index, "w") as f:
        f.write(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                           indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
