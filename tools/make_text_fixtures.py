#!/usr/bin/python3
"""make_text_fixtures - Hugging Face / sentence-transformers directories with a tokenizer.

    /usr/bin/python3 tools/make_text_fixtures.py tests/fixtures/hf [CASE ...]

For every case in CASES (bert_text, roberta_text) it writes OUTDIR/<case>/, a
directory that transformers' AutoModel / AutoTokenizer and
sentence-transformers' SentenceTransformer would load, holding

    config.json, model.safetensors   a small BertModel / RobertaModel, written by
                                     make_hf_fixtures.py (the checkpoint's field
                                     set, BertModel's tensor names: no prefix,
                                     pooler.dense.*), its vocabulary the
                                     tokenizer's (largest id + 1)
    tokenizer.json,                  copied byte for byte from
    tokenizer_config.json            tests/fixtures/tokenizers/<tokenizer>/
    modules.json                     sentence-transformers' module list
    sentence_bert_config.json        its Transformer module's config
    1_Pooling/config.json            its Pooling module's config
    text.json                        the texts, the pair, their tokens and ids
    text.safetensors                 the texts run end to end (below)

so that text -> ids (Hugging Face's own tokenizer: the ids come from
reference.json, Hugging Face's Rust tokenizers through its Node binding, never from a Python tokenizer) -> transformers' BERT / RoBERTa
math -> last_hidden_state -> sentence-transformers' pooling can be checked
against the daemon's C tokenizer and encoder.

text.safetensors (B texts padded to the longest, L tokens; D = 32):

    input_ids         I64 [B, L]  reference.json's "with_special" ids, pad_token_id
                                  past each text's end
    attention_mask    I64 [B, L]  1 on the text's tokens, 0 on padding
    token_type_ids    I64 [B, L]  0 (one segment)
    last_hidden_state F32 [B, L, D]  the embedding module + encoder with that
                                  attention mask; padded rows 0
    mean_pooled       F32 [B, D]  sentence-transformers' Pooling, mean mode:
                                  sum(h * mask) / clamp(sum(mask), 1e-9)
    cls_pooled        F32 [B, D]  Pooling's CLS mode: token 0
    mean_normalized   F32 [B, D]  Normalize: mean_pooled / max(||mean_pooled||_2, 1e-12)
                                  (torch.nn.functional.normalize)
    pair_input_ids    I64 [1, P]  the pair, reference.json's "pairs" entry
    pair_token_type_ids I64 [1, P]  its token_type_ids (BERT: 0 then 1;
                                  RoBERTa: all 0, as the Rust library gives)
    pair_last_hidden_state F32 [1, P, D]  every token attended

Both pooled forms are written for both cases; the sentence-transformers files
say which one each directory's model uses (bert_text: mean, then Normalize;
roberta_text: CLS, no Normalize).

The expected values come from make_hf_fixtures.py's functional reference
(written after transformers' BertEmbeddings / RobertaEmbeddings with
create_position_ids_from_input_ids, BertSelfAttention with the extended
attention mask, BertSelfOutput / BertIntermediate / BertOutput) run in float64
on the weights, pooled in float64, then cast to float32; torch's
nn.TransformerEncoder in float32 with the key padding mask must agree within
1e-5.

What comes from sentence-transformers (v3.0.1 .. v5.x, SentenceTransformer.save):

  - modules.json: json.dump(indent=2) of [{"idx", "name", "path", "type"}],
    path "" for the Transformer saved in the root, "<idx>_<Class>" for the
    others, type the module's Python module;
  - sentence_bert_config.json: Transformer's {"max_seq_length", "do_lower_case"};
  - 1_Pooling/config.json: json.dump(indent=2) of Pooling's config_keys, no
    trailing newline.  bert_text has sentence-transformers 3+'s form (eight
    keys, include_prompt among them), roberta_text the older five-key form
    (word_embedding_dimension, cls, mean, max, mean_sqrt_len) that older
    checkpoints on the hub still carry (BAAI/bge-*'s, for instance);
  - 2_Normalize/: SentenceTransformer.save makes the folder and Normalize.save
    writes nothing into it; git keeps no empty folder (nor does the hub: the
    public checkpoints with a Normalize module have no 2_Normalize/), and
    sentence-transformers' loader does not look for it ("Normalize does not
    require any files to be loaded"), so it is not written here: a loader must
    not need it.
  - config_sentence_transformers.json (versions, prompts) and README.md (the
    model card) are optional to the loader and not written.

Not written by make_hf_fixtures.py's README.md (it lists its own cases); the
directories hold no case.safetensors / ids.safetensors.  Deterministic:
torch.manual_seed(crc32(case name)), one thread, sorted files; the floats can
differ in the last bits from CPU to CPU, as the other fixtures' do.  The JSON
writing and the file round-trip check are tools/reference.py's.
"""

import contextlib
import json
import os
import shutil
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_fixtures as hfx  # noqa: E402
from reference import check_saved, write_json  # noqa: E402
from safetensors_io import save_file  # noqa: E402

TOKENIZERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "tests", "fixtures", "tokenizers")

D, H, FF, N_LAYERS = 32, 4, 64, 2
MAX_SEQ = 64                      # sentence_bert_config.json's max_seq_length
ATOL_MODULES = 1e-5               # float32 torch modules vs the float64 reference
MEAN_CLAMP, NORM_EPS = 1e-9, 1e-12  # Pooling's clamp of the token count; F.normalize's eps

# The texts (reference.json items, by text) and the pair (a reference.json pairs
# entry): different lengths, at most 40 tokens with specials in both
# tokenizers, one with accents, punctuation in several.
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "I don't think it's right; we'll see, they've gone, I'm here, you'd know.",
    "crème brûlée à la française",
    "Hello world!",
]
PAIR = ("The quick brown fox.", "Jumps over the lazy dog!")
MAX_TOKENS = 40

# sentence-transformers' Pooling config.json, newer (3.0+: pooling_mode_weightedmean_tokens,
# pooling_mode_lasttoken, include_prompt) and older (the first five keys).
POOLING_KEYS_OLD = ["word_embedding_dimension", "pooling_mode_cls_token",
                    "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                    "pooling_mode_mean_sqrt_len_tokens"]
POOLING_KEYS_NEW = POOLING_KEYS_OLD + ["pooling_mode_weightedmean_tokens",
                                       "pooling_mode_lasttoken", "include_prompt"]


class TextCase:
    def __init__(self, name, checkpoint, arch, tokenizer, max_pos, pooling, normalize,
                 pooling_form, doc):
        self.name, self.checkpoint, self.arch, self.tokenizer = name, checkpoint, arch, tokenizer
        self.max_pos, self.pooling, self.normalize = max_pos, pooling, normalize
        self.pooling_form, self.doc = pooling_form, doc


CASES = [
    TextCase("bert_text", "bert-base-uncased", "BertModel", "bert-uncased", 64, "mean", True,
             "new", "BertModel (hidden 32, 4 heads, 2 layers, intermediate 64, gelu, eps 1e-12, "
             "type_vocab_size 2) with the bert-uncased WordPiece tokenizer; mean pooling, "
             "Normalize"),
    TextCase("roberta_text", "roberta-base", "RobertaModel", "roberta", 66, "cls", False,
             "old", "RobertaModel (positions from padding_idx 1, max_position_embeddings 66, "
             "type_vocab_size 1, eps 1e-5) with the roberta byte-level BPE tokenizer; CLS "
             "pooling, no Normalize, the older Pooling config"),
]


@contextlib.contextmanager
def sizes(vocab, max_pos):
    """make_hf_fixtures.py's functions read the model's sizes from its module
    globals (D, H, FF, VOCAB, MAX_POS): set ours for the duration, restore
    theirs after."""
    names = ("D", "H", "FF", "VOCAB", "MAX_POS")
    saved = {n: getattr(hfx, n) for n in names}
    for n, v in zip(names, (D, H, FF, vocab, max_pos)):
        setattr(hfx, n, v)
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(hfx, n, v)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def vocab_size(tokenizer_json):
    """The largest id in the tokenizer (model vocabulary and added tokens) + 1."""
    model = tokenizer_json["model"]
    vocab = model["vocab"]
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
    ids += [t["id"] for t in tokenizer_json.get("added_tokens", [])]
    return max(ids) + 1


def reference_entries(golden):
    """The TEXTS' items and the PAIR's entry of a reference.json."""
    by_text = {}
    for it in golden["items"]:
        by_text.setdefault(it["text"], it)
    items = [by_text[t] for t in TEXTS]
    pairs = [p for p in golden["pairs"] if (p["text"], p["text_pair"]) == PAIR]
    assert len(pairs) == 1, PAIR
    return items, pairs[0]


def text_batch(items, pad):
    """input_ids, attention_mask, token_type_ids [B, L] (I64) of the items'
    with_special ids, padded with pad to the longest."""
    seqs = [it["with_special"]["ids"] for it in items]
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)
    mask = torch.zeros(len(seqs), L, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids, mask, torch.zeros_like(ids)


def forward(c, hf, input_ids, attention_mask, token_type_ids, dtype):
    """transformers' BertModel / RobertaModel up to last_hidden_state, in dtype:
    the embedding module (make_hf_fixtures.EMBEDDINGS: positions from
    arange, or create_position_ids_from_input_ids for RoBERTa), then the
    encoder with the extended attention mask."""
    w = {k: v.to(dtype) for k, v in hf.items()}
    with torch.no_grad():
        x = hfx.EMBEDDINGS[c.model_type](c, w, input_ids, token_type_ids, None)
        h = x
        for i in range(c.n_layers):
            h, _ = hfx.bert_layer(w, hfx.layer_stem(c, i), h, c.act_hf, c.eps, attention_mask)
    return x, h


def check_modules(c, hf, x64, h64, attention_mask):
    """torch's nn.TransformerEncoder (float32, key padding mask) on the same
    embeddings against the float64 reference, on the real tokens."""
    params = [hfx.torch_layer(c, hf, i) for i in range(c.n_layers)]
    model, mods = hfx.torch_model(c, params)
    valid = attention_mask.bool()
    with torch.no_grad():
        out, _ = hfx.module_reference_masked(c, model, mods, x64.float(), ~valid)
    diff = (out.double() - h64).abs()[valid].max().item()
    assert diff <= ATOL_MODULES, f"{c.name}: modules differ from the float64 reference by {diff:.3g}"
    return diff


def pool(h64, attention_mask):
    """sentence-transformers' Pooling (mean and CLS modes) and Normalize, in float64."""
    m = attention_mask.unsqueeze(-1).expand(h64.size()).to(h64.dtype)
    mean = torch.sum(h64 * m, 1) / torch.clamp(m.sum(1), min=MEAN_CLAMP)
    cls = h64[:, 0]
    normalized = F.normalize(mean, p=2, dim=1, eps=NORM_EPS)
    return mean, cls, normalized


def write_st_json(obj, path):
    """As sentence-transformers writes its files: json.dump(indent=2), no newline."""
    write_json(obj, path, sort_keys=False, newline=False)


def write_sentence_transformers(tc, d):
    """modules.json, sentence_bert_config.json, 1_Pooling/config.json.
    Returns the paths written, relative to d."""
    modules = [{"idx": 0, "name": "0", "path": "",
                "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    if tc.normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    write_st_json(modules, os.path.join(d, "modules.json"))
    write_st_json({"max_seq_length": MAX_SEQ, "do_lower_case": False},
                  os.path.join(d, "sentence_bert_config.json"))
    values = {"word_embedding_dimension": D,
              "pooling_mode_cls_token": tc.pooling == "cls",
              "pooling_mode_mean_tokens": tc.pooling == "mean",
              "pooling_mode_max_tokens": False,
              "pooling_mode_mean_sqrt_len_tokens": False,
              "pooling_mode_weightedmean_tokens": False,
              "pooling_mode_lasttoken": False,
              "include_prompt": True}
    keys = POOLING_KEYS_NEW if tc.pooling_form == "new" else POOLING_KEYS_OLD
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    write_st_json({k: values[k] for k in keys}, os.path.join(d, "1_Pooling", "config.json"))
    return ["modules.json", "sentence_bert_config.json", os.path.join("1_Pooling", "config.json")]


def make_case(tc, outdir):
    tokdir = os.path.join(TOKENIZERS, tc.tokenizer)
    vocab = vocab_size(read_json(os.path.join(tokdir, "tokenizer.json")))
    golden = read_json(os.path.join(tokdir, "reference.json"))
    items, pair = reference_entries(golden)

    torch.manual_seed(zlib.crc32(tc.name.encode()))
    with sizes(vocab, tc.max_pos):
        # BertModel's names (no prefix, pooler.dense) are RobertaModel's too.
        c = hfx.Case(tc.name, tc.checkpoint, "BertModel", tc.doc, dict(n_layers=N_LAYERS))
        c.hf_config["architectures"] = [tc.arch]
        hf, layer_names = hfx.make_hf_tensors(c)
        pad = c.hf_config["pad_token_id"]

        input_ids, attention_mask, token_type_ids = text_batch(items, pad)
        lengths = attention_mask.sum(1)
        assert lengths.max() <= MAX_TOKENS and len(set(lengths.tolist())) == len(TEXTS), lengths
        x64, h64 = forward(c, hf, input_ids, attention_mask, token_type_ids, torch.float64)
        diff = check_modules(c, hf, x64, h64, attention_mask)

        p_ids = torch.tensor([pair["with_special"]["ids"]], dtype=torch.long)
        p_tt = torch.tensor([pair["with_special"]["type_ids"]], dtype=torch.long)
        assert p_tt.max() < c.hf_config["type_vocab_size"], f"{tc.name}: pair token types"
        p_mask = torch.ones_like(p_ids)
        px64, ph64 = forward(c, hf, p_ids, p_mask, p_tt, torch.float64)
        diff = max(diff, check_modules(c, hf, px64, ph64, p_mask))

    assert input_ids.max() < vocab and p_ids.max() < vocab
    assert c.hf_config["vocab_size"] == vocab and c.hf_config["max_position_embeddings"] == tc.max_pos
    mean, cls, normalized = pool(h64, attention_mask)
    valid = attention_mask.unsqueeze(-1).to(h64.dtype)
    tensors = {
        "input_ids": input_ids, "attention_mask": attention_mask,
        "token_type_ids": token_type_ids,
        "last_hidden_state": (h64 * valid).float().contiguous(),
        "mean_pooled": mean.float().contiguous(), "cls_pooled": cls.float().contiguous(),
        "mean_normalized": normalized.float().contiguous(),
        "pair_input_ids": p_ids, "pair_token_type_ids": p_tt,
        "pair_last_hidden_state": ph64.float().contiguous(),
    }
    for k, v in tensors.items():
        assert torch.isfinite(v.double()).all(), f"{tc.name}: {k}"

    d = os.path.join(outdir, tc.name)
    os.makedirs(d, exist_ok=True)
    files = hfx.write_hf_dir(c, d, hf, layer_names)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokdir, name), os.path.join(d, name))
        files.append(name)
    files += write_sentence_transformers(tc, d)

    meta = {"reference": reference_phrase(c), "texts": "text.json"}
    save_file(tensors, os.path.join(d, "text.safetensors"), meta)
    text = {
        "golden": f"tests/fixtures/tokenizers/{tc.tokenizer}/reference.json",
        "texts": TEXTS,
        "tokens": [it["with_special"]["tokens"] for it in items],
        "pair": {"text": PAIR[0], "text_pair": PAIR[1],
                 "tokens": pair["with_special"]["tokens"]},
        "pad_token_id": pad,
        "pooling": tc.pooling, "normalize": tc.normalize,
        "tensors": {k: f"{'I64' if v.dtype == torch.long else 'F32'} {list(v.shape)}"
                    for k, v in sorted(tensors.items())},
    }
    write_json(text, os.path.join(d, "text.json"), ensure_ascii=False)
    files += ["text.json", "text.safetensors"]

    remove_stale(d, set(files))
    check_round_trip(tc, c, d, hf, tensors, meta, h64, attention_mask)
    print(f"{tc.name}: vocab {vocab}, batch {list(input_ids.shape)}, pair {list(p_ids.shape)}; "
          f"float32 modules vs float64 reference max |diff| {diff:.3g}", file=sys.stderr)


def reference_phrase(c):
    return ("make_hf_fixtures.py's functional reference after transformers' " +
            ("RobertaEmbeddings (create_position_ids_from_input_ids)" if c.model_type == "roberta"
             else "BertEmbeddings") +
            " and BertLayer (extended attention mask) in float64, torch " +
            torch.__version__.split("+")[0] + ", cast to float32; padded rows 0; "
            "sentence-transformers' Pooling (mean: masked sum / clamp(count, 1e-9); cls: "
            "token 0) and Normalize (F.normalize, eps 1e-12) in float64; torch's "
            "nn.TransformerEncoder in float32 with the key padding mask agrees within 1e-5.")


def remove_stale(d, keep):
    """Removes what an older layout left in d (keep: paths relative to d)."""
    dirs = {os.path.dirname(p) for p in keep} - {""}
    for root, subdirs, names in os.walk(d, topdown=False):
        rel = os.path.relpath(root, d)
        for n in names:
            p = os.path.normpath(os.path.join(rel, n))
            if p not in keep:
                os.remove(os.path.join(root, n))
                print(f"{os.path.basename(d)}: removed stale {p}", file=sys.stderr)
        for n in subdirs:
            p = os.path.normpath(os.path.join(rel, n))
            if p not in dirs:
                shutil.rmtree(os.path.join(root, n))
                print(f"{os.path.basename(d)}: removed stale {p}/", file=sys.stderr)


def check_round_trip(tc, c, d, hf, tensors, meta, h64, attention_mask):
    got, _ = check_saved(os.path.join(d, "text.safetensors"), tensors, meta, tc.name)
    back = hfx.read_hf_dir(d)
    assert set(back) == set(hf) and all(torch.equal(back[k], v) for k, v in hf.items())
    assert read_json(os.path.join(d, "config.json")) == c.hf_config
    # Mean pooling leaves padding out: a plain mean over all L rows of the
    # encoder's output (the padded rows as transformers computes them) differs
    # for every padded text.
    padded = attention_mask.eq(0).any(1)
    plain = h64.mean(1)
    gap = (plain.float() - got["mean_pooled"]).abs().amax(1)
    assert padded.any() and (gap[padded] > 1e-3).all() and (gap[~padded] < 1e-6).all(), gap
    assert torch.allclose(got["mean_normalized"].norm(dim=1), torch.ones(len(TEXTS)), atol=1e-6)
    assert torch.equal(got["cls_pooled"], got["last_hidden_state"][:, 0])
    for name in ("modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        read_json(os.path.join(d, name))


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print("usage: /usr/bin/python3 tools/make_text_fixtures.py OUTDIR [CASE ...]\n"
              "Writes OUTDIR/<case>/ (a Hugging Face / sentence-transformers directory with a\n"
              "tokenizer, text.json and text.safetensors) for every case, or those named.",
              file=sys.stderr)
        return 2
    outdir, names = argv[1], set(argv[2:])
    unknown = names - {c.name for c in CASES}
    if unknown:
        print(f"make_text_fixtures: unknown cases {sorted(unknown)}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    for tc in CASES:
        if not names or tc.name in names:
            make_case(tc, outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
