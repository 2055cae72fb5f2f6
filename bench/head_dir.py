#!/usr/bin/python3
"""head_dir - a BERT-base-sized BertForSequenceClassification directory for the heads bench.

    /usr/bin/python3 bench/head_dir.py MLM_DIR OUTDIR

MLM_DIR is tools/make_bert_dir.py's BERT-base-sized BertForMaskedLM
directory.  OUTDIR gets its config.json with "architectures"
["BertForSequenceClassification"] and two labels, and the weights as a
sharded directory: model-00001-of-00002.safetensors, a symbolic link to
MLM_DIR's model.safetensors (the encoder and embeddings; its cls.predictions.*
tensors are then listed as ignored), model-00002-of-00002.safetensors with
what the sequence head reads (bert.pooler.dense.weight [768, 768] and
.bias, classifier.weight [2, 768] and .bias: normal * 0.02, numpy seed 1)
and model.safetensors.index.json naming every tensor's shard.  Made once:
an OUTDIR with its index is kept.  numpy only (the safetensors writer is
tools/safetensors_io.py's).
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import save_file  # noqa: E402


def header_names(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return [k for k in json.loads(f.read(n)) if k != "__metadata__"]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    src, out = os.path.abspath(argv[1]), argv[2]
    index = os.path.join(out, "model.safetensors.index.json")
    if os.path.exists(index):
        return
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    cfg["architectures"] = ["BertForSequenceClassification"]
    cfg["id2label"] = {"0": "NEGATIVE", "1": "POSITIVE"}
    cfg["label2id"] = {"NEGATIVE": 0, "POSITIVE": 1}
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
            "classifier.weight": rng.standard_normal((2, D)) * 0.02,
            "classifier.bias": rng.standard_normal(2) * 0.02}
    head = {k: v.astype(np.float32) for k, v in head.items()}
    save_file(head, os.path.join(out, second), metadata={"format": "pt"})
    weight_map = {name: first for name in header_names(link)}
    weight_map.update({name: second for name in head})
    total = sum(os.path.getsize(os.path.join(out, s)) for s in (first, second))
    with open(index, "w") as f:
        f.write(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                           indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv)
