#!/usr/bin/python3
"""make_bert_dir - a BERT-base-sized Hugging Face directory for the start-up bench.

    /usr/bin/python3 tools/make_bert_dir.py OUTDIR TORCH_FILE

OUTDIR gets config.json (bert-base-uncased's fields and sizes: 12 layers,
hidden 768, 12 heads, intermediate 3072, vocabulary 30522) and
model.safetensors with every tensor BertForMaskedLM saves, F32, random
values (numpy, seed 0): about 440 MB.  TORCH_FILE gets the same encoder stack
under nn.TransformerEncoder's names (layers.{i}.self_attn.in_proj_weight ...),
as attnd's --weights takes it.  Made once: existing files of the right size
are kept.  numpy only (no torch).  bench/run.sh part 9 times attnd loading
both (bench/startup.py).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import save_file  # noqa: E402

D, H, F, LAYERS, VOCAB, POSITIONS = 768, 12, 3072, 12, 30522, 512

CONFIG = {
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
    "gradient_checkpointing": False, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": D, "initializer_range": 0.02, "intermediate_size": F,
    "layer_norm_eps": 1e-12, "max_position_embeddings": POSITIONS, "model_type": "bert",
    "num_attention_heads": H, "num_hidden_layers": LAYERS, "pad_token_id": 0,
    "position_embedding_type": "absolute", "transformers_version": "4.31.0",
    "type_vocab_size": 2, "use_cache": True, "vocab_size": VOCAB,
}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    outdir, torch_file = argv[1], argv[2]
    model = os.path.join(outdir, "model.safetensors")
    want = 4 * (VOCAB * D + POSITIONS * D + 2 * D + 2 * D + LAYERS * (4 * D * D + 4 * D + 2 * D * F
                + F + D + 4 * D) + D * D + D + D * D + D + 2 * D + VOCAB)
    if (os.path.exists(model) and os.path.getsize(model) > want and os.path.exists(torch_file)
            and os.path.exists(os.path.join(outdir, "config.json"))):
        print(f"{outdir}: kept ({os.path.getsize(model) >> 20} MiB)")
        return 0
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    t = {
        "bert.embeddings.word_embeddings.weight": w(VOCAB, D),
        "bert.embeddings.position_embeddings.weight": w(POSITIONS, D),
        "bert.embeddings.token_type_embeddings.weight": w(2, D),
        "bert.embeddings.LayerNorm.weight": ones(D), "bert.embeddings.LayerNorm.bias": w(D),
        "cls.predictions.bias": w(VOCAB),
        "cls.predictions.transform.dense.weight": w(D, D),
        "cls.predictions.transform.dense.bias": w(D),
        "cls.predictions.transform.LayerNorm.weight": ones(D),
        "cls.predictions.transform.LayerNorm.bias": w(D),
    }
    torch_named = {}
    for i in range(LAYERS):
        s = f"bert.encoder.layer.{i}."
        q, k, v, o = w(D, D), w(D, D), w(D, D), w(D, D)
        bq, bk, bv, bo = w(D), w(D), w(D), w(D)
        w1, b1, w2, b2 = w(F, D), w(F), w(D, F), w(D)
        n1w, n1b, n2w, n2b = ones(D), w(D), ones(D), w(D)
        t.update({
            s + "attention.self.query.weight": q, s + "attention.self.query.bias": bq,
            s + "attention.self.key.weight": k, s + "attention.self.key.bias": bk,
            s + "attention.self.value.weight": v, s + "attention.self.value.bias": bv,
            s + "attention.output.dense.weight": o, s + "attention.output.dense.bias": bo,
            s + "attention.output.LayerNorm.weight": n1w,
            s + "attention.output.LayerNorm.bias": n1b,
            s + "intermediate.dense.weight": w1, s + "intermediate.dense.bias": b1,
            s + "output.dense.weight": w2, s + "output.dense.bias": b2,
            s + "output.LayerNorm.weight": n2w, s + "output.LayerNorm.bias": n2b,
        })
        p = f"layers.{i}."
        torch_named.update({
            p + "self_attn.in_proj_weight": np.concatenate([q, k, v]),
            p + "self_attn.in_proj_bias": np.concatenate([bq, bk, bv]),
            p + "self_attn.out_proj.weight": o, p + "self_attn.out_proj.bias": bo,
            p + "linear1.weight": w1, p + "linear1.bias": b1,
            p + "linear2.weight": w2, p + "linear2.bias": b2,
            p + "norm1.weight": n1w, p + "norm1.bias": n1b,
            p + "norm2.weight": n2w, p + "norm2.bias": n2b,
        })
    with open(os.path.join(outdir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
        f.write("\n")
    save_file(t, model, metadata={"format": "pt"})
    save_file(torch_named, torch_file)
    print(f"{outdir}: {os.path.getsize(model) >> 20} MiB; {torch_file}: "
          f"{os.path.getsize(torch_file) >> 20} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
