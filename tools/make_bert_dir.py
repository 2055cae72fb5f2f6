#!/usr/bin/python3
"""make_bert_dir - BERT-base- and XLM-R-base-sized Hugging Face directories for the start-up bench.

    /usr/bin/python3 tools/make_bert_dir.py OUTDIR TORCH_FILE
    /usr/bin/python3 tools/make_bert_dir.py --xlmr [--f16] OUTDIR
    /usr/bin/python3 tools/make_bert_dir.py --tokenizer OUTDIR [TORCH_FILE]

OUTDIR gets config.json (bert-base-uncased's fields and sizes: 12 layers,
hidden 768, 12 heads, intermediate 3072, vocabulary 30522) and
model.safetensors with every tensor BertForMaskedLM saves, F32, random
values (numpy, seed 0): about 440 MB.  TORCH_FILE gets the same encoder stack
under nn.TransformerEncoder's names (layers.{i}.self_attn.in_proj_weight ...),
as attnd's --weights takes it.

With --xlmr, OUTDIR gets xlm-roberta-base's config.json (the same stack,
vocabulary 250,002, max_position_embeddings 514, type_vocab_size 1,
pad_token_id 1) and every tensor XLMRobertaForMaskedLM's save_pretrained
writes (the decoder's weight tied to the word table, so not saved): about
1.1 GB, the word table 768 MB of it; with --f16 as well, every tensor F16
(half that), as a checkpoint saved with torch_dtype float16 is.

With --tokenizer, OUTDIR also gets a tokenizer.json shaped as transformers
writes bert-base-uncased's (BertNormalizer lowercasing, BertPreTokenizer,
WordPiece with "##" pieces, TemplateProcessing [CLS] $A [SEP] / [CLS] $A [SEP]
$B:1 [SEP]:1, the special tokens at bert-base-uncased's ids: [PAD] 0, [UNK]
100, [CLS] 101, [SEP] 102, [MASK] 103, [unusedN] around them) and a
vocabulary of exactly vocab_size (30522) tokens made deterministically from
/usr/share/dict/american-english: every printable ASCII character but the
capitals and its "##" form, the list's words lowercased with their accents
stripped (as the normalizer leaves them), shortest first, and the commonest
2- to 6-letter word endings as "##" pieces.  Without TORCH_FILE only
tokenizer.json is written (into OUTDIR, made if missing); bench/run.sh's text
section serves it with the BERT-base-sized weights.  The tokenizer.json is
rewritten each time (a second or so).

Made once: existing files of the right size are kept.  numpy only (no
torch; the JSON writer is tools/reference.py's, which needs no torch).
bench/parts/startup.sh times attnd loading them (bench/startup.py).
"""
import collections
import os
import sys
import unicodedata

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import write_json  # noqa: E402
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


XLMR = {
    "architectures": ["XLMRobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1,
    "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": D, "initializer_range": 0.02, "intermediate_size": F,
    "layer_norm_eps": 1e-05, "max_position_embeddings": 514, "model_type": "xlm-roberta",
    "num_attention_heads": H, "num_hidden_layers": LAYERS, "output_past": True,
    "pad_token_id": 1, "position_embedding_type": "absolute",
    "transformers_version": "4.31.0", "type_vocab_size": 1, "use_cache": True,
    "vocab_size": 250002,
}


def layer_tensors(t, s, w, ones):
    """One BertLayer's tensors under prefix s into t; returns them by role."""
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
    return q, k, v, o, bq, bk, bv, bo, w1, b1, w2, b2, n1w, n1b, n2w, n2b


def make_xlmr(outdir, f16):
    """An XLM-R-base-sized directory (XLMRobertaForMaskedLM's tensors)."""
    cfg = dict(XLMR, torch_dtype="float16" if f16 else "float32")
    V, P = cfg["vocab_size"], cfg["max_position_embeddings"]
    model = os.path.join(outdir, "model.safetensors")
    numel = (V * D + P * D + D + 2 * D + LAYERS * (4 * D * D + 4 * D + 2 * D * F + F + D + 4 * D)
             + D * D + D + 2 * D + V)
    if (os.path.exists(model) and os.path.getsize(model) > numel * (2 if f16 else 4)
            and os.path.exists(os.path.join(outdir, "config.json"))):
        print(f"{outdir}: kept ({os.path.getsize(model) >> 20} MiB)")
        return 0
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(1)
    dtype = np.float16 if f16 else np.float32

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(dtype)

    def ones(n):
        return np.ones(n, dtype=dtype)

    t = {
        "roberta.embeddings.word_embeddings.weight": w(V, D),
        "roberta.embeddings.position_embeddings.weight": w(P, D),
        "roberta.embeddings.token_type_embeddings.weight": w(1, D),
        "roberta.embeddings.LayerNorm.weight": ones(D), "roberta.embeddings.LayerNorm.bias": w(D),
        "lm_head.bias": w(V), "lm_head.dense.weight": w(D, D), "lm_head.dense.bias": w(D),
        "lm_head.layer_norm.weight": ones(D), "lm_head.layer_norm.bias": w(D),
    }
    for i in range(LAYERS):
        layer_tensors(t, f"roberta.encoder.layer.{i}.", w, ones)
    write_json(cfg, os.path.join(outdir, "config.json"))
    save_file(t, model, metadata={"format": "pt"})
    print(f"{outdir}: {os.path.getsize(model) >> 20} MiB")
    return 0


WORDS_FILE = "/usr/share/dict/american-english"
N_PIECES = 6000  # "##" word endings in the tokenizer's vocabulary


def _special(id_, content):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": True}


def bert_tokenizer_json():
    """bert-base-uncased's tokenizer.json shape with a word-list vocabulary of VOCAB tokens."""
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [f"[unused{i}]" for i in range(99, 994)]
    seen = set(vocab)

    def add(t):
        if t not in seen and len(vocab) < VOCAB:
            seen.add(t)
            vocab.append(t)

    singles = [chr(c) for c in range(0x21, 0x7F) if not chr(c).isupper()]
    for c in singles:
        add(c)
    for c in singles:
        add("##" + c)
    with open(WORDS_FILE, encoding="utf-8") as f:
        raw = [w.strip() for w in f]
    stems = set()
    for w in raw:
        w = "".join(c for c in unicodedata.normalize("NFD", w.lower())
                    if unicodedata.category(c) != "Mn")
        if w.endswith("'s"):
            w = w[:-2]
        if w.isascii() and w.isalpha():
            stems.add(w)
    ends = collections.Counter(w[-k:] for w in stems for k in range(2, 7) if len(w) > k)
    pieces = sorted(ends.items(), key=lambda kv: (-kv[1], kv[0]))[:N_PIECES]
    words = sorted(stems, key=lambda w: (len(w), w))
    room = VOCAB - len(vocab) - len(pieces)
    for w in words[:room]:
        add(w)
    for p, _ in pieces:
        add("##" + p)
    for w in words[room:]:  # endings that were words already: fill up
        add(w)
    assert len(vocab) == VOCAB, len(vocab)
    ids = {t: i for i, t in enumerate(vocab)}
    cls, sep = ids["[CLS]"], ids["[SEP]"]

    def st(tok, type_id):
        return {"SpecialToken": {"id": tok, "type_id": type_id}}

    def seq(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [_special(ids[t], t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                       "[MASK]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [st("[CLS]", 0), seq("A", 0), st("[SEP]", 0)],
            "pair": [st("[CLS]", 0), seq("A", 0), st("[SEP]", 0), seq("B", 1), st("[SEP]", 1)],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }


def write_tokenizer(outdir):
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "tokenizer.json")
    write_json(bert_tokenizer_json(), path, sort_keys=False, ensure_ascii=False)
    print(f"{path}: WordPiece, {VOCAB} tokens, {os.path.getsize(path) >> 10} KiB")


def main(argv):
    args = argv[1:]
    xlmr, f16, tok = "--xlmr" in args, "--f16" in args, "--tokenizer" in args
    args = [a for a in args if a not in ("--xlmr", "--f16", "--tokenizer")]
    if xlmr and not tok and len(args) == 1:
        return make_xlmr(args[0], f16)
    if tok and not xlmr and not f16 and len(args) == 1:
        write_tokenizer(args[0])
        return 0
    if xlmr or f16 or len(args) != 2:
        print("\n".join(__doc__.strip().splitlines()[2:5]), file=sys.stderr)
        return 2
    outdir, torch_file = args
    if tok:
        write_tokenizer(outdir)
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
        (q, k, v, o, bq, bk, bv, bo, w1, b1, w2, b2,
         n1w, n1b, n2w, n2b) = layer_tensors(t, f"bert.encoder.layer.{i}.", w, ones)
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
    write_json(CONFIG, os.path.join(outdir, "config.json"))
    save_file(t, model, metadata={"format": "pt"})
    save_file(torch_named, torch_file)
    print(f"{outdir}: {os.path.getsize(model) >> 20} MiB; {torch_file}: "
          f"{os.path.getsize(torch_file) >> 20} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
