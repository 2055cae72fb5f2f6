#!/usr/bin/python3
"""make_pipeline_fixtures - transformers pipelines' answers for small task models with a tokenizer.

    /usr/bin/python3 tools/make_pipeline_fixtures.py tests/fixtures/pipelines [CASE ...]

For every case in CASES it writes OUTDIR/<case>/ holding

    config.json            a Hugging Face task-model directory, made as
    model.safetensors      tools/make_head_fixtures.py makes its own (the same
                           Case, the same draw), at the vocabulary size of
    tokenizer.json         the tokenizer, copied byte for byte from
    tokenizer_config.json  tests/fixtures/tokenizers/<tokenizer>/
    pipeline.json          texts, their encodings, and what transformers'
                           pipeline ("fill-mask", "token-classification",
                           "text-classification") answers for each

and OUTDIR/README.md (the layout, the cases).  No transformers is needed (nor
installable here): the model's logits come from make_head_fixtures' float32
torch forward, the tokens, offsets and decodes from Hugging Face's own Rust
tokenizers (the npm package's Node binding, through tools/
pipeline_tokenizer.mjs), and the pipelines' postprocessing, written out
below, is transcribed from huggingface/transformers:

  - src/transformers/pipelines/fill_mask.py: FillMaskPipeline.postprocess
    (top_k default 5, no targets): masked_index = torch.nonzero(input_ids ==
    mask_token_id).squeeze(-1); probs = outputs[0, masked_index,
    :].softmax(dim=-1) (float32 torch); values, predictions =
    probs.topk(top_k); single_mask = values.shape[0] == 1; for each mask i
    and each (v, p): tokens = input_ids with tokens[masked_index[i]] = p,
    every pad_token_id dropped; {"score": v, "token": p, "token_str":
    tokenizer.decode([p]), "sequence": tokenizer.decode(tokens,
    skip_special_tokens=single_mask)}; one mask: the flat list, several: a
    list per mask.
  - src/transformers/pipelines/token_classification.py:
    TokenClassificationPipeline.preprocess (return_special_tokens_mask,
    return_offsets_mapping), postprocess (scores = numpy float32 softmax,
    shifted by the row's max), gather_pre_entities (special tokens skipped;
    word = convert_ids_to_tokens(id), or sentence[start:end] for
    unk_token_id), aggregate (NONE / SIMPLE: per token the argmax label and
    its score, with "index"), group_entities, get_tag, group_sub_entities
    (entity_group = the first's entity .split("-", 1)[-1], score =
    np.mean(np.nanmean(scores)), word = convert_tokens_to_string(words),
    start of the first, end of the last); ignore_labels ["O"] dropped last.
    is_subword, which gather_pre_entities also computes, is read only by the
    "first" / "average" / "max" strategies: not transcribed.
  - src/transformers/pipelines/text_classification.py:
    TextClassificationPipeline.postprocess with top_k=None (every label,
    sorted by score, descending, Python's stable sort): the function from
    problem_type / num_labels (make_head_fixtures.head_function: regression
    none; multi_label_classification or one label sigmoid; else softmax),
    numpy float32 softmax / sigmoid; [{"label", "score"}, ...].  A pair is
    the input {"text": a, "text_pair": b} (preprocess: tokenizer(text=a,
    text_pair=b)).
  - The tokenizer side (src/transformers/tokenization_utils_fast.py,
    tokenization_utils_base.py): PreTrainedTokenizerFast.decode = the Rust
    tokenizer's decode(ids, skip_special_tokens), then, when
    clean_up_tokenization_spaces (tokenizer_config.json; absent: false),
    clean_up_tokenization (the ten .replace() calls in clean_up() below);
    convert_ids_to_tokens = id_to_token; convert_tokens_to_string = the
    backend tokenizer's decoder on the tokens; mask / pad / unk token =
    tokenizer_config.json's mask_token / pad_token / unk_token (a string or
    an AddedToken dict's "content"), their ids the tokenizer's.

What is reused, not copied: tools/make_head_fixtures.py's Case (the
config.json and the state_dict's names), model_tensors() (the draw: seeded
with crc32 of the case name), expected() (last_hidden_state + head_forward,
checked there against nn.TransformerEncoder and a float64 formulation of the
head within 1e-5) and head_function(); tools/make_hf_fixtures.py's shrink()
with its module globals VOCAB (set here to the tokenizer's id count, the
largest id + 1, added tokens included) and MAX_POS (64 here, so every text
fits: RoBERTa's positions run from pad_token_id + 1); tools/reference.py's
write_json / md_row; tools/safetensors_io.py; tools/fixture_cli.py.

Each text is a batch of one: input_ids from the tokenizer (special tokens
added), lengths = its length, token_type_ids the tokenizer's type ids for
BERT (type_vocab_size 2; the RoBERTa family's are all 0, which the script
asserts, and its model uses zeros).

Self-checks: the tokenizer's ids are 0 .. size - 1 without a gap and the
config's vocab_size is that size; the config's pad / bos / eos ids are the
tokenizer's; every fill-mask text holds its mask token(s); the logits leave
a margin (MARGIN) between the ranks the output depends on (the top_k + 1
best of each mask, each token's best two labels, the sorted labels), so a
float32 forward elsewhere, equal within 1e-5, gives the same order; the NER
cases have an [UNK]-mapped character where the tokenizer has one, and their
"simple" outputs hold a group of several tokens and drop an "O" group;
finally every file is read back: model.safetensors' tensors, config.json,
the tokenizer files byte for byte, pipeline.json, the texts encoded again
from the written tokenizer.json, and the logits and outputs computed again
from the written files, equal to what was stored.

Determinism: one torch thread and one OpenBLAS thread, tokenizers
deterministic, files written from ordered data: a rerun gives the same bytes
on one machine (the floats may differ in the last bits from CPU to CPU).
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_head_fixtures as head  # noqa: E402
import make_hf_fixtures as hfx  # noqa: E402
import make_modernbert_fixtures as mbx  # noqa: E402
from fixture_cli import fixture_main  # noqa: E402
from reference import md_row, write_json  # noqa: E402
from safetensors_io import load_file, read_header, save_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOKENIZERS = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
NODE_HELPER = os.path.join(HERE, "pipeline_tokenizer.mjs")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
FILES = ("config.json", "model.safetensors") + TOKENIZER_FILES + ("pipeline.json",)

MAX_POS = 64        # max_position_embeddings of every case (texts stay below MAX_POS - 2)
MARGIN = 2e-4       # least logit gap between the ranks an output depends on

NER = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
SENTIMENT = ["NEGATIVE", "NEUTRAL", "POSITIVE"]
TASK_OF_KIND = {"masked_lm": "fill-mask", "token": "token-classification",
                "sequence": "text-classification"}

# Fill-mask texts: (text with "{mask}" where the tokenizer's mask token goes, top_k).
FILL_MASK_TEXTS = [
    ("The capital of France is {mask}.", 5),
    ("{mask} is the best thing that happened to me.", 1),
    ("I don't think it's {mask}, he said.", 10),
    ("Paris is the {mask} city of {mask}.", 5),
    ("She's sure they've seen what we're {mask} about!", 5),
    ("Hello{mask} world?", 3),
]

# NER texts: each is a case with aggregation_strategy "simple" and one with "none".
NER_TEXTS = [
    "My name is Wolfgang and I live in Berlin.",
    "Zoë and José flew from São Paulo to Zürich yesterday.",
    "The snowman ☃ waved at Angela Merkel.",
    "Unbelievably, Schwarzenegger reorganized Kalamazoo's overwhelming bureaucracy.",
    "Sarah  Connor   met  John in  Los Angeles.",
    "Hello!!! (Mr. O'Neil) said: \"wait...\" - really?",
]

# Text classification: a text, or (text, text_pair).
TEXT_CLS_TEXTS = [
    "I love this movie, it is wonderful!",
    "The service was terrible and the food was cold.",
    "It's okay, I guess.",
    "Nothing to see here.",
    ("How old are you?", "I am six years old."),
    ("The weather is nice today.", "It's raining cats and dogs."),
]

# A cross-encoder's (query, passage) pairs: one label, sigmoid (a reranker).
RERANK_TEXTS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("What is the capital of France?", "The Eiffel Tower is in Paris."),
    ("What is the capital of France?", "Berlin is the capital of Germany."),
    ("What is the capital of France?", "Bananas are rich in potassium."),
    ("How do I bake bread?", "Mix flour, water, yeast and salt, then bake it."),
    ("How do I bake bread?", "It's raining cats and dogs."),
]

# name, class, labels (None: masked LM), tokenizer (tests/fixtures/tokenizers/<name>),
# texts, what the case covers.
CASES = [
    ("bert_fill_mask", "BertForMaskedLM", None, "bert-uncased", FILL_MASK_TEXTS,
     "WordPiece, lowercased; clean_up_tokenization_spaces true, and it matters: the "
     "WordPiece decoder cleans token by token, so only transformers' clean-up makes \"don ' t\" "
     "\"don't\"; two masks (sequence keeps [CLS], [SEP], the other [MASK]); top_k 1, 3, 5, 10"),
    ("roberta_fill_mask", "RobertaForMaskedLM", None, "roberta", FILL_MASK_TEXTS,
     "byte-level BPE; <mask> with lstrip: its token takes the space before it (its offsets "
     "do not), so the sequence loses that space; byte tokens decode to U+FFFD; clean-up "
     "false"),
    ("bert_ner", "BertForTokenClassification", NER, "bert-cased", NER_TEXTS,
     "WordPiece, cased; ☃ -> [UNK] (word = the text's characters)"),
    ("roberta_ner", "RobertaForTokenClassification", NER, "roberta", NER_TEXTS,
     "byte-level BPE: Ġ words, a character as several byte tokens; no unknown token"),
    ("xlmr_ner", "XLMRobertaForTokenClassification", NER, "xlmr", NER_TEXTS,
     "Unigram (Metaspace ▁); characters outside the vocabulary -> <unk>"),
    ("bert_text_cls", "BertForSequenceClassification", SENTIMENT, "bert-uncased", TEXT_CLS_TEXTS,
     "BertPooler, softmax over three labels, sorted; two text pairs (token_type_ids 1)"),
    ("bert_rerank", "BertForSequenceClassification", ["LABEL_0"], "bert-uncased", RERANK_TEXTS,
     "a cross-encoder (ms-marco MiniLM's shape): one label, so sigmoid; (query, passage) "
     "pairs"),
]

# Cases whose texts must hit the unknown token.
EXPECT_UNK = {"bert_ner", "xlmr_ner"}

# The draw's seed, crc32 of this name, where it is not the case's name: with
# the name's own weights bert_ner labels no token B-PER, I-PER or I-LOC and
# one token "O", xlmr_ner none "O" (with these: every label, and "O" in every
# text), and bert_text_cls ranks the labels alike for every text (with this:
# five orders over the six texts).
SEEDS = {"bert_ner": "bert_ner:1", "xlmr_ner": "xlmr_ner:4", "bert_text_cls": "bert_text_cls:7"}


# ---- the tokenizer: tokenizers through node, as transformers' fast tokenizer ------------

def special_content(value):
    """tokenizer_config.json's special token: a string or an AddedToken dict."""
    if isinstance(value, dict):
        return value["content"]
    return value


def clean_up(out_string):
    """transformers' PreTrainedTokenizerBase.clean_up_tokenization."""
    return (out_string.replace(" .", ".").replace(" ?", "?").replace(" !", "!")
            .replace(" ,", ",").replace(" ' ", "'").replace(" n't", "n't")
            .replace(" 'm", "'m").replace(" 's", "'s").replace(" 've", "'ve")
            .replace(" 're", "'re"))


def run_node(request):
    proc = subprocess.run(["node", NODE_HELPER], input=json.dumps(request).encode("utf-8"),
                          capture_output=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{NODE_HELPER} failed:\n{proc.stderr.decode('utf-8', 'replace')}")
    return json.loads(proc.stdout.decode("utf-8"))


class Tokenizer:
    """The parts of transformers' PreTrainedTokenizerFast the pipelines call,
    answered by tokenizers (tools/pipeline_tokenizer.mjs).  Questions are
    asked in rounds: a postprocess run records what it needs (answered ""
    meanwhile), resolve() asks node, and the run is made again (answered())."""

    def __init__(self, directory):
        self.directory = directory
        self.path = os.path.join(directory, "tokenizer.json")
        with open(self.path, encoding="utf-8") as f:
            tj = json.load(f)
        with open(os.path.join(directory, "tokenizer_config.json"), encoding="utf-8") as f:
            self.config = json.load(f)
        vocab = tj["model"]["vocab"]
        if isinstance(vocab, dict):         # WordPiece, BPE: token -> id
            token_to_id = dict(vocab)
        else:                               # Unigram: [[piece, score], ...], id = position
            token_to_id = {piece: i for i, (piece, _) in enumerate(vocab)}
        for a in tj.get("added_tokens", []):
            token_to_id[a["content"]] = a["id"]
        ids = set(token_to_id.values())
        self.size = max(ids) + 1
        assert ids == set(range(self.size)), f"{self.path}: the ids are not 0 .. {self.size - 1}"
        self.token_to_id = token_to_id
        self.mask_token = special_content(self.config.get("mask_token"))
        self.pad_token = special_content(self.config.get("pad_token"))
        self.unk_token = special_content(self.config.get("unk_token"))
        self.clean_up_tokenization_spaces = bool(self.config.get("clean_up_tokenization_spaces",
                                                                 False))
        self.mask_token_id = token_to_id.get(self.mask_token)
        self.pad_token_id = token_to_id.get(self.pad_token)
        self.unk_token_id = token_to_id.get(self.unk_token)
        self.version = None
        self.answers = {}
        self.pending = []
        self.cleaned = 0            # decodes that clean_up() changed

    def _ask(self, kind, arg):
        key = (kind, arg)
        if key in self.answers:
            return self.answers[key]
        if key not in self.pending:
            self.pending.append(key)
        return ""

    def resolve(self):
        """Asks node what is pending; False when nothing was."""
        if not self.pending:
            return False
        request = {"tokenizer": self.path, "encode": [], "decode": [], "decode_tokens": [],
                   "id_to_token": []}
        for kind, arg in self.pending:
            if kind == "encode":
                request["encode"].append(list(arg))
            elif kind == "decode":
                request["decode"].append([list(arg[0]), arg[1]])
            elif kind == "decode_tokens":
                request["decode_tokens"].append(list(arg))
            else:
                request["id_to_token"].append(arg)
        answer = run_node(request)
        version = answer["library"]["version"]
        assert self.version in (None, version)
        self.version = version
        got = {k: iter(answer[k]) for k in ("encode", "decode", "decode_tokens", "id_to_token")}
        for key in self.pending:
            self.answers[key] = next(got[key[0]])
        for it in got.values():
            assert next(it, None) is None
        self.pending = []
        return True

    def encode(self, text, pair=None):
        """{"ids", "tokens", "offsets", "special_tokens_mask", "type_ids"} (special
        tokens added, no truncation or padding)."""
        return self._ask("encode", (text, pair))

    def decode(self, token_ids, skip_special_tokens=False):
        text = self._ask("decode", (tuple(int(i) for i in token_ids), bool(skip_special_tokens)))
        if self.clean_up_tokenization_spaces:
            cleaned = clean_up(text)
            self.cleaned += cleaned != text
            return cleaned
        return text

    def convert_ids_to_tokens(self, index):
        return self._ask("id_to_token", int(index))

    def convert_tokens_to_string(self, tokens):
        return self._ask("decode_tokens", tuple(tokens))


def answered(tok, fn):
    """fn() run until the tokenizer has answered everything it asks (a
    question may depend on an earlier answer: the words of a group on the
    tokens' strings)."""
    for _ in range(4):
        out = fn()
        if not tok.resolve():
            return out
    raise AssertionError(f"still asking after 4 rounds: {tok.pending}")


# ---- transformers' pipelines' postprocess, transcribed ---------------------------------

def fill_mask_postprocess(tokenizer, model_outputs, top_k=5):
    """FillMaskPipeline.postprocess (pt, no target_ids)."""
    input_ids = model_outputs["input_ids"][0]
    outputs = model_outputs["logits"]
    masked_index = torch.nonzero(input_ids == tokenizer.mask_token_id, as_tuple=False).squeeze(-1)
    # Fill mask pipeline supports only one ${mask_token} per sample
    logits = outputs[0, masked_index, :]
    probs = logits.softmax(dim=-1)
    values, predictions = probs.topk(top_k)

    result = []
    single_mask = values.shape[0] == 1
    for i, (_values, _predictions) in enumerate(zip(values.tolist(), predictions.tolist())):
        row = []
        for v, p in zip(_values, _predictions):
            # Copy is important since we're going to modify this array in place
            tokens = input_ids.numpy().copy()
            tokens[masked_index[i]] = p
            # Filter padding out:
            tokens = tokens[np.where(tokens != tokenizer.pad_token_id)]
            # Originally we skip special tokens to give readable output.
            # For multi masks though, the other [MASK] would be removed otherwise
            # making the output look odd, so we add them back
            sequence = tokenizer.decode(tokens, skip_special_tokens=single_mask)
            proposition = {"score": v, "token": p, "token_str": tokenizer.decode([p]),
                           "sequence": sequence}
            row.append(proposition)
        result.append(row)
    if single_mask:
        return result[0]
    return result


def get_tag(entity_name):
    """TokenClassificationPipeline.get_tag."""
    if entity_name.startswith("B-"):
        bi = "B"
        tag = entity_name[2:]
    elif entity_name.startswith("I-"):
        bi = "I"
        tag = entity_name[2:]
    else:
        # It's not in B-, I- format
        # Default to I- for continuation.
        bi = "I"
        tag = entity_name
    return bi, tag


class TokenClassification:
    """TokenClassificationPipeline's postprocess for aggregation_strategy
    "none" and "simple" (one chunk, offsets from a fast tokenizer)."""

    def __init__(self, tokenizer, id2label):
        self.tokenizer = tokenizer
        self.id2label = id2label        # {int: label}, as PretrainedConfig holds it

    def postprocess(self, model_outputs, aggregation_strategy="none", ignore_labels=None):
        if ignore_labels is None:
            ignore_labels = ["O"]
        grouped_entities = self.grouped(model_outputs, aggregation_strategy)
        entities = [
            entity
            for entity in grouped_entities
            if entity.get("entity", None) not in ignore_labels
            and entity.get("entity_group", None) not in ignore_labels
        ]
        return entities

    def grouped(self, model_outputs, aggregation_strategy):
        """postprocess up to the filter of ignore_labels."""
        logits = model_outputs["logits"][0].numpy()
        sentence = model_outputs["sentence"]
        input_ids = model_outputs["input_ids"][0]
        offset_mapping = model_outputs["offset_mapping"][0].numpy()
        special_tokens_mask = model_outputs["special_tokens_mask"][0].numpy()
        maxes = np.max(logits, axis=-1, keepdims=True)
        shifted_exp = np.exp(logits - maxes)
        scores = shifted_exp / shifted_exp.sum(axis=-1, keepdims=True)
        pre_entities = self.gather_pre_entities(sentence, input_ids, scores, offset_mapping,
                                                special_tokens_mask)
        return self.aggregate(pre_entities, aggregation_strategy)

    def gather_pre_entities(self, sentence, input_ids, scores, offset_mapping,
                            special_tokens_mask):
        """gather_pre_entities, less is_subword (see the module's docstring)."""
        pre_entities = []
        for idx, token_scores in enumerate(scores):
            # Filter special_tokens
            if special_tokens_mask[idx]:
                continue
            word = self.tokenizer.convert_ids_to_tokens(int(input_ids[idx]))
            start_ind, end_ind = offset_mapping[idx]
            if not isinstance(start_ind, int):
                start_ind = start_ind.item()
                end_ind = end_ind.item()
            word_ref = sentence[start_ind:end_ind]
            if int(input_ids[idx]) == self.tokenizer.unk_token_id:
                word = word_ref
            pre_entity = {
                "word": word,
                "scores": token_scores,
                "start": start_ind,
                "end": end_ind,
                "index": idx,
            }
            pre_entities.append(pre_entity)
        return pre_entities

    def aggregate(self, pre_entities, aggregation_strategy):
        assert aggregation_strategy in ("none", "simple"), aggregation_strategy
        entities = []
        for pre_entity in pre_entities:
            entity_idx = pre_entity["scores"].argmax()
            score = pre_entity["scores"][entity_idx]
            entity = {
                "entity": self.id2label[entity_idx],
                "score": score,
                "index": pre_entity["index"],
                "word": pre_entity["word"],
                "start": pre_entity["start"],
                "end": pre_entity["end"],
            }
            entities.append(entity)
        if aggregation_strategy == "none":
            return entities
        return self.group_entities(entities)

    def group_sub_entities(self, entities):
        # Get the first entity in the entity group
        entity = entities[0]["entity"].split("-", 1)[-1]
        scores = np.nanmean([entity["score"] for entity in entities])
        tokens = [entity["word"] for entity in entities]

        entity_group = {
            "entity_group": entity,
            "score": np.mean(scores),
            "word": self.tokenizer.convert_tokens_to_string(tokens),
            "start": entities[0]["start"],
            "end": entities[-1]["end"],
        }
        return entity_group

    def group_entities(self, entities):
        entity_groups = []
        entity_group_disagg = []

        for entity in entities:
            if not entity_group_disagg:
                entity_group_disagg.append(entity)
                continue

            # If the current entity is similar and adjacent to the previous entity,
            # append it to the disaggregated entity group
            # The split is meant to account for the "B" and "I" prefixes
            # Shouldn't merge if both entities are B-type
            bi, tag = get_tag(entity["entity"])
            last_bi, last_tag = get_tag(entity_group_disagg[-1]["entity"])

            if tag == last_tag and bi != "B":
                # Modify subword type to be previous_type
                entity_group_disagg.append(entity)
            else:
                # If the current entity is different from the previous entity
                # aggregate the disaggregated entity group
                entity_groups.append(self.group_sub_entities(entity_group_disagg))
                entity_group_disagg = [entity]
        if entity_group_disagg:
            # it's the last entity, add it to the entity groups
            entity_groups.append(self.group_sub_entities(entity_group_disagg))

        return entity_groups


def softmax(_outputs):
    """text_classification.softmax (numpy)."""
    maxes = np.max(_outputs, axis=-1, keepdims=True)
    shifted_exp = np.exp(_outputs - maxes)
    return shifted_exp / shifted_exp.sum(axis=-1, keepdims=True)


def sigmoid(_outputs):
    """text_classification.sigmoid (numpy)."""
    return 1.0 / (1.0 + np.exp(-_outputs))


def text_classification_postprocess(model_outputs, id2label, function_to_apply, top_k=None):
    """TextClassificationPipeline.postprocess(top_k=None, _legacy=False)."""
    outputs = model_outputs["logits"][0]
    outputs = outputs.float().numpy()
    if function_to_apply == "sigmoid":
        scores = sigmoid(outputs)
    elif function_to_apply == "softmax":
        scores = softmax(outputs)
    elif function_to_apply == "none":
        scores = outputs
    else:
        raise ValueError(f"Unrecognized `function_to_apply` argument: {function_to_apply}")
    dict_scores = [
        {"label": id2label[i], "score": score.item()} for i, score in enumerate(scores)
    ]
    dict_scores.sort(key=lambda x: x["score"], reverse=True)
    if top_k is not None:
        dict_scores = dict_scores[:top_k]
    return dict_scores


# ---- JSON ------------------------------------------------------------------------------

def plain(x):
    """The pipeline's output as JSON takes it: numpy scalars to Python numbers."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.integer):
        return int(x)
    assert x is None or isinstance(x, (str, int, float)), type(x)
    return x


# ---- the cases -------------------------------------------------------------------------

@contextlib.contextmanager
def sizes(vocab):
    """make_hf_fixtures' VOCAB and MAX_POS for one case (its shrink(),
    hf_names() and the embeddings read them)."""
    saved = hfx.VOCAB, hfx.MAX_POS
    hfx.VOCAB, hfx.MAX_POS = vocab, MAX_POS
    try:
        yield
    finally:
        hfx.VOCAB, hfx.MAX_POS = saved


class Case:
    def __init__(self, name, cls, labels, tokenizer, texts, doc):
        self.name, self.cls, self.labels, self.tokenizer, self.texts, self.doc = \
            name, cls, labels, tokenizer, texts, doc
        self.source = os.path.join(TOKENIZERS, tokenizer)
        kind = head.KINDS["For" + cls.split("For", 1)[1]]
        self.task = TASK_OF_KIND[kind]

    def head_case(self, tok):
        """make_head_fixtures' Case at the tokenizer's vocabulary size (inside sizes())."""
        # one label: a reranker, sigmoid (transformers' pipeline rule)
        settings = dict(function="sigmoid" if self.labels and len(self.labels) == 1
                        else "softmax")
        if self.task == "text-classification":
            settings["pooling"] = "cls"
        c = head.Case(self.name, self.cls, self.labels, settings, self.doc)
        c.seed_name = SEEDS.get(self.name, self.name)     # model_tensors' seed
        cfg = c.hf_config
        assert cfg["vocab_size"] == tok.size == c.vocab, (self.name, cfg["vocab_size"], tok.size)
        assert cfg["max_position_embeddings"] == MAX_POS
        assert cfg["pad_token_id"] == tok.pad_token_id, self.name
        for key, token in (("bos_token_id", "bos_token"), ("eos_token_id", "eos_token")):
            if key in cfg:
                assert cfg[key] == tok.token_to_id[special_content(tok.config[token])], \
                    (self.name, key)
        assert head.head_function(c.config_json, c.kind) == settings["function"], self.name
        return c


def requests(case, tok):
    """[(text, text_pair or None, {"top_k": k} | {"aggregation_strategy": s} | {})]."""
    out = []
    for t in case.texts:
        if case.task == "fill-mask":
            text, top_k = t
            out.append((text.replace("{mask}", tok.mask_token), None, {"top_k": top_k}))
        elif case.task == "token-classification":
            for strategy in ("simple", "none"):
                out.append((t, None, {"aggregation_strategy": strategy}))
        else:
            text, pair = (t, None) if isinstance(t, str) else t
            out.append((text, pair, {}))
    return out


def forward(c, hf, enc, check=True):
    """The model's logits for one encoded text (a batch of one), [1, ...]."""
    ids = torch.tensor([enc["ids"]], dtype=torch.long)
    L = ids.shape[1]
    assert L <= MAX_POS - 2, (c.name, L)
    batch = {"input_ids": ids, "lengths": torch.tensor([L], dtype=torch.int32)}
    if c.hf_config.get("type_vocab_size", 0) >= 2:
        batch["token_type_ids"] = torch.tensor([enc["type_ids"]], dtype=torch.long)
    else:
        assert not any(enc["type_ids"]), c.name     # RoBERTa family: zeros, as the model uses
    valid = torch.ones(1, L, dtype=torch.bool)
    out, diff = head.expected(c, hf, batch, valid, check)
    return out["logits"], diff


def model_outputs(enc, logits, text):
    return {"input_ids": torch.tensor([enc["ids"]], dtype=torch.long), "logits": logits,
            "offset_mapping": torch.tensor([enc["offsets"]], dtype=torch.long).reshape(1, -1, 2),
            "special_tokens_mask": torch.tensor([enc["special_tokens_mask"]], dtype=torch.long),
            "sentence": text}


def check_margin(what, values, n):
    """The n + 1 largest values (n: the ranks that matter) are MARGIN apart."""
    top = torch.sort(values.to(torch.float64), descending=True).values[:n + 1]
    gaps = top[:-1] - top[1:]
    assert len(gaps) == 0 or gaps.min().item() >= MARGIN, \
        f"{what}: logits {gaps.min().item():.3g} apart (under MARGIN {MARGIN})"


def outputs_for(case, c, tok, hf, reqs, encs, check=True):
    """(per request: the pipeline's output, the logits) and the largest
    difference of the independent formulations."""
    id2label = {int(k): v for k, v in c.config_json.get("id2label", {}).items()}
    function = head.head_function(c.config_json, c.kind)
    ner = TokenClassification(tok, id2label)
    results, worst = [], 0.0
    for (text, pair, params), enc in zip(reqs, encs):
        logits, diff = forward(c, hf, enc, check)
        worst = max(worst, diff)
        mo = model_outputs(enc, logits, text)
        if case.task == "fill-mask":
            out = answered(tok, lambda: fill_mask_postprocess(tok, mo, params["top_k"]))
        elif case.task == "token-classification":
            out = answered(tok, lambda: ner.postprocess(mo, params["aggregation_strategy"]))
        else:
            out = text_classification_postprocess(mo, id2label, function)
        results.append((plain(out), logits))
    return results, worst


def check_margins(case, tok, reqs, encs, results):
    for (text, _, params), enc, (_, logits) in zip(reqs, encs, results):
        what = f"{case.name}: {text!r}"
        if case.task == "fill-mask":
            ids = torch.tensor(enc["ids"])
            for pos in torch.nonzero(ids == tok.mask_token_id).flatten().tolist():
                check_margin(f"{what} mask at {pos}", logits[0, pos], params["top_k"])
        elif case.task == "token-classification":
            for pos in range(logits.shape[1]):
                if not enc["special_tokens_mask"][pos]:
                    check_margin(f"{what} token {pos}", logits[0, pos], 1)
        else:
            check_margin(what, logits[0], logits.shape[1] - 1)


def check_ner(case, tok, reqs, encs, results, id2label):
    """Across the texts: a "simple" group of several tokens, an "O" group
    dropped; the unknown token hit where EXPECT_UNK says so."""
    ner = TokenClassification(tok, id2label)
    multi = dropped = 0
    for (text, _, params), enc, (_, logits) in zip(reqs, encs, results):
        if params["aggregation_strategy"] != "simple":
            continue
        mo = model_outputs(enc, logits, text)
        groups = answered(tok, lambda: ner.grouped(mo, "simple"))
        tokens = answered(tok, lambda: ner.grouped(mo, "none"))
        assert len(tokens) == len(enc["ids"]) - sum(enc["special_tokens_mask"])
        # a group of several tokens: fewer groups than tokens
        multi += len(groups) < len(tokens)
        dropped += any(g["entity_group"] == "O" for g in groups)
    assert multi and dropped, f"{case.name}: no multi-token group ({multi}) or no O group " \
        f"dropped ({dropped}): change the texts"
    unk = sum(enc["ids"].count(tok.unk_token_id) for enc in encs) if tok.unk_token_id is not None \
        else 0
    assert (unk > 0) == (case.name in EXPECT_UNK), (case.name, unk)


def reference_phrase(case, c, tok):
    torch_version = torch.__version__.split("+")[0]
    post = {
        "fill-mask": "FillMaskPipeline.postprocess (top_k; softmax in float32 torch, topk, "
                     "decode with skip_special_tokens for a single mask)",
        "token-classification": "TokenClassificationPipeline.postprocess with "
                                "gather_pre_entities, aggregate, group_entities, "
                                "group_sub_entities (numpy float32 softmax; ignore_labels "
                                "[\"O\"])",
        "text-classification": "TextClassificationPipeline.postprocess with top_k=None "
                               f"(function {head.head_function(c.config_json, c.kind)}, "
                               "every label sorted by score)",
    }[case.task]
    return (f"transformers' {post} and PreTrainedTokenizerFast's decode / "
            "clean_up_tokenization / convert_ids_to_tokens / convert_tokens_to_string, "
            "transcribed in tools/make_pipeline_fixtures.py; logits from a float32 forward "
            f"in plain torch {torch_version} (tools/make_head_fixtures.py's model_tensors and "
            f"expected(): {c.cls} after transformers' modeling code, eval mode, one text a "
            f"batch); tokens, offsets and decodes from Hugging Face's tokenizers {tok.version} "
            "(Node binding, tools/pipeline_tokenizer.mjs; offsets in code points).")


def pipeline_json(case, c, tok, reqs, encs, results):
    cases = []
    for (text, pair, params), enc, (out, _) in zip(reqs, encs, results):
        entry = {"text": text}
        if pair is not None:
            entry["text_pair"] = pair
        entry.update(input_ids=enc["ids"], offsets=enc["offsets"],
                     special_tokens_mask=enc["special_tokens_mask"])
        entry.update(params)
        entry["output"] = out
        cases.append(entry)
    return {"reference": reference_phrase(case, c, tok), "task": case.task,
            "mask_token": tok.mask_token, "pad_token": tok.pad_token,
            "unk_token": tok.unk_token,
            "clean_up_tokenization_spaces": tok.clean_up_tokenization_spaces,
            "cases": cases}


def write_pipeline_json(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def make_case(case, outdir):
    tok = Tokenizer(case.source)
    reqs = requests(case, tok)
    for text, pair, params in reqs:
        if case.task == "fill-mask":
            assert tok.mask_token in text
    encs = answered(tok, lambda: [tok.encode(text, pair) for text, pair, _ in reqs])
    for (text, _, _), enc in zip(reqs, encs):
        if case.task == "fill-mask":
            n = enc["ids"].count(tok.mask_token_id)
            assert n >= 1 and n == text.count(tok.mask_token), (case.name, text)
    with sizes(tok.size):
        c = case.head_case(tok)
        hf, _, _, _ = head.model_tensors(c)
        results, diff = outputs_for(case, c, tok, hf, reqs, encs)
        check_margins(case, tok, reqs, encs, results)
        if case.task == "token-classification":
            check_ner(case, tok, reqs, encs, results,
                      {int(k): v for k, v in c.config_json["id2label"].items()})
        if case.task == "text-classification":
            orders = {tuple(x["label"] for x in out) for out, _ in results}
            assert len(orders) > 1 or len(c.labels) == 1, \
                f"{case.name}: every text ranks the labels alike"
        obj = pipeline_json(case, c, tok, reqs, encs, results)

        d = os.path.join(outdir, case.name)
        os.makedirs(d, exist_ok=True)
        write_json(c.config_json, os.path.join(d, "config.json"))
        save_file(hf, os.path.join(d, "model.safetensors"), head.HF_FORMAT_METADATA)
        for fname in TOKENIZER_FILES:
            shutil.copyfile(os.path.join(case.source, fname), os.path.join(d, fname))
        write_pipeline_json(obj, os.path.join(d, "pipeline.json"))
        for stale in sorted(set(os.listdir(d)) - set(FILES)):
            os.remove(os.path.join(d, stale))
            print(f"{case.name}: removed stale {stale}", file=sys.stderr)
        check_round_trip(case, c, d, hf, obj)
    print(f"{case.name}: {len(reqs)} cases, tokenizers {tok.version}, independent formulations "
          f"max |diff| {diff:.3g}, clean-up changed {tok.cleaned} decodes", file=sys.stderr)


def check_round_trip(case, c, d, hf, obj):
    """Reads every file back and computes the outputs again from them alone."""
    back, back_meta = load_file(os.path.join(d, "model.safetensors"), "pt")
    assert back_meta == head.HF_FORMAT_METADATA and set(back) == set(hf), case.name
    for k, v in hf.items():
        assert back[k].dtype == torch.float32 and torch.equal(back[k], v), f"{case.name}: {k}"
    header, _, _ = read_header(os.path.join(d, "model.safetensors"))
    assert {v["dtype"] for v in header.values()} == {"F32"}, case.name
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    assert cfg == c.config_json and cfg["architectures"] == [case.cls], case.name
    for fname in TOKENIZER_FILES:
        with open(os.path.join(d, fname), "rb") as a, \
                open(os.path.join(case.source, fname), "rb") as b:
            assert a.read() == b.read(), f"{case.name}: {fname} is not the source's"
    with open(os.path.join(d, "pipeline.json"), encoding="utf-8") as f:
        got = json.load(f)
    assert got == obj, case.name

    # Again from the written directory: the tokenizer encodes each text as
    # stored, and the model from model.safetensors gives the same outputs.
    tok = Tokenizer(d)
    assert (got["mask_token"], got["pad_token"], got["unk_token"],
            got["clean_up_tokenization_spaces"]) == \
        (tok.mask_token, tok.pad_token, tok.unk_token, tok.clean_up_tokenization_spaces)
    reqs = [(e["text"], e.get("text_pair"),
             {k: e[k] for k in ("top_k", "aggregation_strategy") if k in e})
            for e in got["cases"]]
    encs = answered(tok, lambda: [tok.encode(text, pair) for text, pair, _ in reqs])
    for e, enc in zip(got["cases"], encs):
        assert (enc["ids"], enc["offsets"], enc["special_tokens_mask"]) == \
            (e["input_ids"], e["offsets"], e["special_tokens_mask"]), (case.name, e["text"])
    results, _ = outputs_for(case, c, tok, back, reqs, encs, check=False)
    for e, (out, _) in zip(got["cases"], results):
        assert out == e["output"], (case.name, e["text"])


# ---- README ----------------------------------------------------------------------------

README_HEAD = """\
# Pipeline fixtures

Generated by `tools/make_pipeline_fixtures.py`; do not edit.  Regenerate with

    /usr/bin/python3 tools/make_pipeline_fixtures.py tests/fixtures/pipelines

(needs Debian's python3-torch and python3-numpy, node, and the npm package
`tokenizers` in `node_modules`; no `transformers`).  Deterministic: a rerun on
one machine gives byte-identical files (the floats may differ in the last
bits from CPU to CPU: to add a case, run it into a scratch directory and copy
only the new files).

Each case is a Hugging Face task-model directory with a real tokenizer and
what transformers' pipeline answers for a few texts:

- `config.json`, `model.safetensors`: made as `tools/make_head_fixtures.py`
  makes its cases (the same `Case`, the same draw seeded with crc32 of the
  case's name, or of `bert_ner:1`, `xlmr_ner:4`, `bert_text_cls:7`, chosen
  so that the random labels reach every rule; see
  `tests/fixtures/heads/README.md`), with `vocab_size` the tokenizer's id
  count and `max_position_embeddings` 64.
- `tokenizer.json`, `tokenizer_config.json`: copied byte for byte from
  `tests/fixtures/tokenizers/<tokenizer>/`.
- `pipeline.json`:

      {"reference": how it was made (torch and tokenizers versions, the
                    transformers functions transcribed),
       "task": "fill-mask" | "token-classification" | "text-classification",
       "mask_token", "pad_token", "unk_token": tokenizer_config.json's (strings),
       "clean_up_tokenization_spaces": tokenizer_config.json's (absent: false),
       "cases": [{"text": str, "text_pair": str (text-classification pairs only),
                  "input_ids": [...], "offsets": [[start, end], ...] (code points
                  of the text the token is from: a pair's second part counts
                  from 0 in text_pair; specials [0, 0]), "special_tokens_mask":
                  [...] (special tokens added, no truncation or padding; the
                  token_type_ids, not stored, are the tokenizer's: for a BERT
                  pair 1 after the first [SEP], 0 before and at it),
                  "top_k": int (fill-mask) | "aggregation_strategy": "simple" |
                  "none" (token-classification),
                  "output": the pipeline's answer for this one text}, ...]}

  `output`, as transformers returns it for one input:
  - fill-mask (`pipeline(text, top_k=k)`): one mask: `[{"score", "token",
    "token_str", "sequence"}, ...]` (top_k of them, best first); several
    masks: one such list per mask, in text order (their `sequence` keeps the
    special tokens: `skip_special_tokens` only for a single mask);
  - token-classification (`pipeline(text, aggregation_strategy=s)`): "none":
    `[{"entity", "score", "index", "word", "start", "end"}, ...]` (`index`
    the token's position in `input_ids`); "simple": `[{"entity_group",
    "score", "word", "start", "end"}, ...]`; entities labelled "O" dropped;
  - text-classification (`pipeline(text, top_k=None)`, a pair as
    `{"text": a, "text_pair": b}`): `[{"label", "score"}, ...]`, every label,
    by score, descending.

  Scores are float32 values written as Python floats: compare within 1e-4.
  Every rank an output depends on (the top_k + 1 best tokens of a mask, a
  token's two best labels, the labels' order) is at least 2e-4 apart in the
  logits, so a forward equal within 1e-5 gives the same tokens and labels.

The postprocessing (`src/transformers/pipelines/fill_mask.py`,
`token_classification.py`, `text_classification.py`) and the fast
tokenizer's `decode` (the tokenizer's decode, then `clean_up_tokenization`
when `clean_up_tokenization_spaces`), `convert_ids_to_tokens` and
`convert_tokens_to_string` (the tokenizer's decoder on the tokens) are
transcribed in the script; tokens, offsets and decodes come from Hugging
Face's tokenizers (the Node binding, `tools/pipeline_tokenizer.mjs`), the
logits from `make_head_fixtures.py`'s float32 forward.

| case | class | tokenizer | task | labels | texts | covers |
| --- | --- | --- | --- | --- | --- | --- |
"""


def readme_row(case):
    labels = "(masked LM)" if case.labels is None else ", ".join(case.labels)
    n = len(case.texts)
    texts = f"{n} x simple, none" if case.task == "token-classification" else str(n)
    return md_row(f"`{case.name}`", case.cls, f"`{case.tokenizer}`", case.task, labels, texts,
                  case.doc)


def main(argv):
    mbx.one_blas_thread()
    return fixture_main(argv, "make_pipeline_fixtures",
                        "Writes OUTDIR/<case>/ (a task-model directory with its tokenizer and\n"
                        "pipeline.json) for every case, or those named, and OUTDIR/README.md.",
                        [Case(*spec) for spec in CASES], make_case, README_HEAD, readme_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
