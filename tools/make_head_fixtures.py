#!/usr/bin/python3
"""make_head_fixtures - task-head model directories with the checkpoint's own answers.

    /usr/bin/python3 tools/make_head_fixtures.py tests/fixtures/heads [CASE ...]

For every case in CASES it writes OUTDIR/<case>/ holding

    config.json          a Hugging Face model directory, as transformers'
    model.safetensors    save_pretrained() writes it for the case's task
                         class (*ForSequenceClassification,
                         *ForTokenClassification, *ForMaskedLM), at small sizes
    head.safetensors     a padded batch of token ids and what the task head
                         answers for it: the logits (and SPLADE's pooling of
                         the masked-LM logits), with the head's description in
                         its metadata (not part of the model)

and OUTDIR/README.md, which lists the cases and the layout.  No transformers
is needed (nor installable here): the directories are written from what
transformers' modeling code and the public checkpoints' config.json files
say, and the expected values come from a functional float32 forward in plain
torch written after transformers' modeling code, eval mode (every dropout the
identity), checked against independent formulations.

What is reused, not copied:

  - tools/make_hf_fixtures.py: the public checkpoints' config.json field sets
    (CHECKPOINT_CONFIGS) and shrink() (hidden 16, 4 heads, intermediate 32,
    2 layers, vocab 50, max_position_embeddings 24, ELECTRA embedding_size
    8); hf_names() for the base model's names (and the masked-LM heads' own);
    the embedding modules bert_embeddings / roberta_embeddings (with
    create_position_ids_from_input_ids) / electra_embeddings (with
    embeddings_project) / distilbert_embeddings; ids_batch() (input_ids,
    lengths, token_type_ids); hf_reference(), the encoder stack after
    BertLayer / DistilBERT's TransformerBlock with transformers' extended
    attention mask, checked here again against torch's nn.TransformerEncoder
    (torch_layer / torch_model / module_reference_masked) within 1e-5.
  - tools/make_modernbert_fixtures.py: MODERNBERT_BASE_CONFIG and shrink()
    (vocab 64, max_position_embeddings 512, special ids 1 / 2 / 3), hf_names()
    and stack_names(), modernbert_embeddings() and modernbert_layers() (the
    4.48-era modeling_modernbert.py forward: ModernBertEmbeddings, the layers,
    final_norm; h is after final_norm), reference_f64() (the independent
    float64 stack) and its float64 helpers _lin64 / _ln64 / ACT64,
    one_blas_thread().
  - tools/make_hf5_fixtures.py: config5(), the transformers-5 form of a
    config.json, for the cases ending in _5.
  - tools/reference.py: linear, layer_norm, linear_names, norm_names,
    random_ids, ids_generator, check_saved, write_json, md_row (README);
    tools/safetensors_io.py; tools/fixture_cli.py (the command line).

The heads, as transformers' modeling code computes them (h = the encoder's
last hidden state, padded keys masked; eval mode).  Read in
huggingface/transformers, src/transformers/models/<family>/modeling_<family>.py
(BERT at a 4.4x commit 8ec58104, DistilBERT 00b326f4, ELECTRA 014873b4,
RoBERTa's 5.x modular_roberta.py 052b1dcd, ModernBERT at the 4.48-era
1ae3d1e0 that make_modernbert_fixtures.py follows and at a 5.x commit
000c33fd, whose heads are the same), src/transformers/pipelines/
text_classification.py (01080c62) and configuration_utils.py (5.x,
008e5743):

  - BertForSequenceClassification: BertModel(config) with its BertPooler:
    pooled = tanh(bert.pooler.dense(h[:, 0])); logits = classifier(pooled).
  - RobertaForSequenceClassification, XLMRobertaForSequenceClassification,
    CamembertForSequenceClassification (RobertaModel(add_pooling_layer=False),
    no pooler): RobertaClassificationHead: x = h[:, 0, :]; x =
    torch.tanh(classifier.dense(x)); logits = classifier.out_proj(x).
  - ElectraForSequenceClassification: ElectraClassificationHead: x =
    h[:, 0, :]; x = classifier.dense(x); x = get_activation("gelu")(x) -- the
    exact (erf) gelu whatever config.hidden_act says (the code's comment:
    "although BERT uses tanh here, it seems Electra authors used gelu here");
    logits = classifier.out_proj(x).  h is after embeddings_project.
  - DistilBertForSequenceClassification: x = h[:, 0]; x =
    nn.ReLU()(pre_classifier(x)); logits = classifier(x).
  - ModernBertForSequenceClassification: pooled = h[:, 0] when
    classifier_pooling == "cls", else (h * attention_mask.unsqueeze(-1)).sum(1)
    / attention_mask.sum(1, keepdim=True) ("mean"); x = head(pooled) with
    head = ModernBertPredictionHead: norm(act(dense(x))), dense =
    nn.Linear(hidden, hidden, bias=classifier_bias), act =
    ACT2FN[classifier_activation], norm = nn.LayerNorm(hidden, eps=norm_eps,
    bias=norm_bias); logits = classifier(x) (nn.Linear with bias).
  - BertForTokenClassification (BertModel(add_pooling_layer=False): no
    pooler), RobertaForTokenClassification (no pooler),
    ElectraForTokenClassification, DistilBertForTokenClassification:
    logits = classifier(h), per token.  ModernBertForTokenClassification:
    logits = classifier(head(h)), head a ModernBertPredictionHead.
  - BertForMaskedLM (BertModel(add_pooling_layer=False)) -> BertOnlyMLMHead ->
    BertLMPredictionHead: t = transform.LayerNorm(ACT2FN[hidden_act](
    transform.dense(h))) (eps layer_norm_eps); logits = decoder(t), decoder =
    nn.Linear(hidden, vocab, bias=False) whose weight is tied to
    bert.embeddings.word_embeddings.weight and whose bias is set to
    cls.predictions.bias (_tied_weights_keys = ["predictions.decoder.bias",
    "cls.predictions.decoder.weight"]): neither is written.
  - RobertaForMaskedLM / XLMRobertaForMaskedLM: RobertaLMHead: t =
    lm_head.layer_norm(gelu(lm_head.dense(h))) (activations.gelu, the exact
    one; eps layer_norm_eps); logits = lm_head.decoder(t), decoder.weight tied
    to the word embeddings, decoder.bias = lm_head.bias (_tied_weights_keys
    ["lm_head.decoder.weight", "lm_head.decoder.bias"]).
  - DistilBertForMaskedLM: t = vocab_layer_norm(get_activation(
    config.activation)(vocab_transform(h))), vocab_layer_norm =
    nn.LayerNorm(dim, eps=1e-12); logits = vocab_projector(t), its weight tied
    to the word embeddings (not written), its bias written.
  - ModernBertForMaskedLM: logits = decoder(head(h)), decoder =
    nn.Linear(hidden, vocab, bias=decoder_bias), decoder.weight tied to
    model.embeddings.tok_embeddings.weight (_tied_weights_keys
    ["decoder.weight"], in 5.x {"decoder.weight":
    "model.embeddings.tok_embeddings.weight"}); sparse_prediction only acts
    with labels.

The score function (head.safetensors' "function"): TextClassificationPipeline
.postprocess with function_to_apply unset: problem_type "regression" ->
none; problem_type "multi_label_classification" or num_labels == 1 ->
sigmoid; problem_type "single_label_classification" or num_labels > 1 ->
softmax (num_labels = len(id2label), 2 when config.json has none).  A
sentence-transformers CrossEncoder config (sentence-transformers >= 4:
CrossEncoder.save sets config.sentence_transformers = {"activation_fn":
fullname(activation_fn), "version": __version__}; get_default_activation_fn
reads sentence_transformers["activation_fn"] first, then the < 4.0
sbert_ce_default_activation_function, and otherwise takes nn.Sigmoid() for
one label and nn.Identity() for more -- not the pipeline's softmax) names
its activation: torch.nn.modules.activation.Sigmoid -> sigmoid,
torch.nn.modules.linear.Identity -> none.  Token classification and masked
LM: softmax over the labels / the vocabulary.

The CrossEncoder code read: UKPLab/sentence-transformers,
sentence_transformers/cross_encoder/CrossEncoder.py (4.x: set_activation_fn,
get_default_activation_fn, set_config_value, save; and a later version whose
get_default_activation_fn reads the same keys).

SPLADE (head.safetensors' "splade", masked-LM cases): SPLADE's max pooling as
naver/splade and TEI's Pool::Splade compute it: max over the sequence's real
tokens of log(1 + relu(logits)), float32, per vocabulary entry.

Where the code says more than (or other than) a short summary of it:

  - BERT's and RoBERTa's token-classification and masked-LM classes build
    their base model with add_pooling_layer=False (ELECTRA and DistilBERT have
    no pooler at all), so save_pretrained writes no pooler for them and their
    "ignored" is empty; of these cases only BertForSequenceClassification
    has (and reads) bert.pooler.*.  A pooler in a token or masked-LM
    checkpoint comes from elsewhere, e.g. bert-base-uncased's own files
    (converted from BertForPreTraining, with cls.seq_relationship.* too):
    bert_mlm_twice.
  - ElectraClassificationHead's activation is get_activation("gelu"), fixed:
    not config.hidden_act (ElectraDiscriminatorPredictions does use
    hidden_act).
  - BertForMaskedLM._tied_weights_keys spells the bias "predictions.decoder.
    bias" (without "cls."); its decoder is nn.Linear(bias=False) whose .bias
    is then set to cls.predictions.bias.  RobertaLMHead's decoder is an
    nn.Linear with a bias that is replaced by lm_head.bias, registered after
    dense and layer_norm (make_hf_fixtures.hf_names lists lm_head.bias first:
    the draw order, not the layout).
  - DistilBertForTokenClassification's classifier is nn.Linear(
    config.hidden_size, ...): hidden_size is DistilBertConfig's attribute_map
    alias of dim.
  - ModernBertForSequenceClassification's mean pooling divides by
    attention_mask.sum(): the 4.48 code passes the caller's mask (None
    fails with mean pooling), 5.x fills in ones first.  With
    flash_attention_2 the logits of padded positions come back as zeros
    (_pad_modernbert_output); eager / sdpa leave values there.  The
    fixtures zero every padded row.
  - A CrossEncoder config without activation_fn scores several labels with
    nn.Identity() (no function), where the pipeline takes softmax.
  - transformers 5's PreTrainedConfig rejects problem_type
    "single_label_classification" with one label.

What the directories copy from transformers:

  - config.json: the field set of the named public checkpoint's config.json
    (bert-base-uncased, roberta-base, xlm-roberta-base, camembert-base,
    google/electra-small-discriminator, distilbert-base-uncased,
    answerdotai/ModernBERT-base) through the existing shrink(),
    "architectures" naming the case's class, plus what a fine-tuned save
    adds: id2label ({"0": label, ...}: JSON keys are strings) and label2id
    for classification heads -- every case's labels differ from
    PretrainedConfig's default {0: "LABEL_0", 1: "LABEL_1"}, so
    to_diff_dict() writes them (a two-label default would not be written);
    masked-LM cases keep that default, unwritten -- problem_type where the
    case sets it, and sentence_transformers in cross_encoder.  Written as
    to_json_string() does (indent 2, sorted keys, newline).  Cases ending in
    _5 are in transformers 5's form: make_hf5_fixtures.config5() of the 4.x
    dict without id2label / label2id / problem_type, which are then added
    back: in 5.x they are fields of PreTrainedConfig itself (default None,
    __post_init__ making the two-label default), written like any field that
    differs from the default.
  - model.safetensors: every tensor save_pretrained writes for the class --
    the base model under its base_model_prefix (bert., roberta., electra.,
    distilbert., model.), then the head's -- minus non-persistent buffers and
    tied weights (as above), each F32, __metadata__ {"format": "pt"}.
    Values (drawn in registration order after torch.manual_seed(crc32(name)))
    normal * 0.1, LayerNorm weights 1 + normal * 0.1, the heads' dense weights
    (HEAD_DENSE) normal * 1.0, so their activations are told apart.  bert_mlm_twice is a
    checkpoint in the form of bert-base-uncased's own files (converted from
    BertForPreTraining): cls.predictions.decoder.weight (equal to the word
    table) and cls.predictions.decoder.bias (equal to cls.predictions.bias)
    are written too, and so are bert.pooler.dense.* and cls.seq_relationship.*,
    which BertForMaskedLM does not read (transformers warns "Some weights of
    the model checkpoint ... were not used"): they are its "ignored".

Each _5 case is its 4.x twin's model (bert_seq_5 = bert_seq, bert_token_5 =
bert_token, bert_mlm_5 = bert_mlm, modernbert_mlm_5 = modernbert_mlm): the
same seed (the twin's name), so model.safetensors and head.safetensors are
byte for byte the twin's and only config.json differs.

Expected values: the float32 forward above (h from the reused stack, then the
head, transformers' op order: F.linear, F.layer_norm, F.gelu / torch.tanh /
F.relu / F.silu); an independent float64 formulation of each head (its own
matmuls, LayerNorm, erf gelu, row-by-row pooling) on h must agree within
1e-5, and log1p in float64 for SPLADE; the BERT family's stack agrees with
torch's nn.TransformerEncoder within 1e-5, ModernBERT's with
reference_f64 within 1e-5.  Finally every case is run again from the
written files (model.safetensors' tensors, head.safetensors' ids, config.json
checked equal to the case's) and must reproduce the stored outputs bit for
bit.

Determinism follows the other fixture scripts: torch.manual_seed(crc32(case
name)) (the twin's for _5 cases), the ids from their own generator seeded
with crc32(name + ":ids"), one torch thread and one OpenBLAS thread, every
file written from sorted data, so a rerun on the same machine gives the same
bytes (the expected floats differ in the last bits from CPU to CPU: to add a
case, copy only the new files from a run into a scratch directory).
"""

import json
import os
import sys
import zlib
from types import SimpleNamespace

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_fixtures as hfx  # noqa: E402
import make_modernbert_fixtures as mbx  # noqa: E402
from fixture_cli import fixture_main  # noqa: E402
from make_hf5_fixtures import config5  # noqa: E402
from reference import (check_saved, ids_generator, layer_norm, linear, linear_names,  # noqa: E402
                       md_row, norm_names, random_ids, write_json)
from safetensors_io import load_file, read_header, save_file  # noqa: E402

ATOL = 1e-5                 # float64 formulations / torch modules vs the float32 forward
VALUE_SCALE = 0.1
# The heads' dense weights are drawn ten times larger (normal * 1.0): their
# pre-activations then reach |x| of 2 to 4, where the activations differ
# (gelu and its tanh form by up to 5e-4, tanh from the identity by far more),
# so a test at 1e-5 tells them apart.
HEAD_DENSE = ("bert.pooler.dense.weight", "classifier.dense.weight", "pre_classifier.weight",
              "head.dense.weight", "cls.predictions.transform.dense.weight",
              "lm_head.dense.weight", "vocab_transform.weight")
HEAD_DENSE_SCALE = 1.0
HF_FORMAT_METADATA = hfx.HF_FORMAT_METADATA
DISTILBERT_EPS = hfx.DISTILBERT_EPS

# ModernBERT's small sizes: hidden 16 as the other families' (2 heads of 8),
# intermediate 24, 2 layers, layer 0 global and layer 1 local with a window
# of 2 each side (local_attention 4), which matters at L 7; the other fields
# as ModernBERT-base (make_modernbert_fixtures' modernbert_mlm case).
MODERNBERT_SIZES = dict(hidden_size=16, num_attention_heads=2, intermediate_size=24,
                        num_hidden_layers=2, global_attn_every_n_layers=2, local_attention=4,
                        global_rope_theta=160000.0, local_rope_theta=10000.0,
                        hidden_activation="gelu", norm_bias=False, attention_bias=False,
                        mlp_bias=False, norm_eps=1e-5)

# Class-name stem -> (public checkpoint, the make_hf_fixtures class whose
# hf_names() gives the base model's names under the family's prefix).
FAMILIES = {
    "Bert": ("bert-base-uncased", "BertForMaskedLM"),
    "Roberta": ("roberta-base", "RobertaForMaskedLM"),
    "XLMRoberta": ("xlm-roberta-base", "XLMRobertaForMaskedLM"),
    "Camembert": ("camembert-base", "CamembertForMaskedLM"),
    "Electra": ("google/electra-small-discriminator", "ElectraForPreTraining"),
    "DistilBert": ("distilbert-base-uncased", "DistilBertForMaskedLM"),
    "ModernBert": ("answerdotai/ModernBERT-base", None),
}
KINDS = {"ForSequenceClassification": "sequence", "ForTokenClassification": "token",
         "ForMaskedLM": "masked_lm"}
# sentence-transformers' activation_fn (fullname of the module) -> "function".
ST_ACTIVATION = {"torch.nn.modules.activation.Sigmoid": "sigmoid",
                 "torch.nn.modules.linear.Identity": "none"}
FINETUNE_FIELDS = ("id2label", "label2id", "problem_type")   # PreTrainedConfig's own
NER = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CROSS_ENCODER = {"activation_fn": "torch.nn.modules.activation.Sigmoid", "version": "4.1.0"}

# name, class, labels (None: masked LM), settings, what the case covers.
# settings: problem_type, hf5 (transformers 5's config.json; the twin is
# the name without _5), untied, config (extra config.json entries),
# modernbert (ModernBERT config overrides), and the expected function /
# pooling, which the rules must give.
CASES = [
    ("bert_seq", "BertForSequenceClassification", ["NEGATIVE", "NEUTRAL", "POSITIVE"],
     dict(problem_type="single_label_classification", function="softmax", pooling="cls"),
     "BERT: BertPooler (tanh) then classifier; token_type_ids"),
    ("bert_seq_5", "BertForSequenceClassification", ["NEGATIVE", "NEUTRAL", "POSITIVE"],
     dict(problem_type="single_label_classification", hf5=True, function="softmax",
          pooling="cls"),
     "bert_seq's model with transformers 5's config.json"),
    ("roberta_seq", "RobertaForSequenceClassification", ["anger", "joy", "optimism", "sadness"],
     dict(problem_type="multi_label_classification", function="sigmoid", pooling="cls"),
     "RobertaClassificationHead (dense, tanh, out_proj), no pooler; multi-label -> sigmoid"),
    ("xlm_roberta_rerank", "XLMRobertaForSequenceClassification", ["LABEL_0"],
     dict(function="sigmoid", pooling="cls"),
     "a reranker: one label -> sigmoid"),
    ("camembert_seq", "CamembertForSequenceClassification", ["negative", "positive"],
     dict(function="softmax", pooling="cls"), "CamemBERT, two labels"),
    ("electra_seq", "ElectraForSequenceClassification", ["not_duplicate", "duplicate"],
     dict(function="softmax", pooling="cls"),
     "ElectraClassificationHead (dense, exact gelu, out_proj) after embeddings_project"),
    ("distilbert_seq", "DistilBertForSequenceClassification", ["NEGATIVE", "POSITIVE"],
     dict(function="softmax", pooling="cls"), "pre_classifier, ReLU, classifier"),
    ("distilbert_regress", "DistilBertForSequenceClassification", ["LABEL_0"],
     dict(problem_type="regression", function="none", pooling="cls"),
     "problem_type regression -> no function"),
    ("modernbert_seq_cls", "ModernBertForSequenceClassification",
     ["entailment", "neutral", "contradiction"],
     dict(modernbert=dict(classifier_pooling="cls"), function="softmax", pooling="cls"),
     "classifier_pooling cls; head.dense without bias, head.norm without bias (norm_bias "
     "false), gelu"),
    ("modernbert_seq_mean", "ModernBertForSequenceClassification", ["safe", "unsafe"],
     dict(modernbert=dict(classifier_pooling="mean", classifier_bias=True,
                          classifier_activation="silu"), function="softmax", pooling="mean"),
     "classifier_pooling mean over the real tokens; classifier_bias true; silu"),
    ("cross_encoder", "BertForSequenceClassification", ["LABEL_0"],
     dict(config={"sentence_transformers": CROSS_ENCODER}, function="sigmoid", pooling="cls"),
     "sentence-transformers CrossEncoder config: activation_fn Sigmoid"),
    ("bert_token", "BertForTokenClassification", NER, dict(function="softmax"),
     "classifier per token, no pooler"),
    ("roberta_token", "RobertaForTokenClassification", NER, dict(function="softmax"),
     "RoBERTa positions, no pooler"),
    ("distilbert_token", "DistilBertForTokenClassification", NER, dict(function="softmax"),
     "DistilBERT"),
    ("electra_token", "ElectraForTokenClassification", NER, dict(function="softmax"),
     "ELECTRA, after embeddings_project"),
    ("modernbert_token", "ModernBertForTokenClassification", NER,
     dict(modernbert=dict(norm_bias=True, attention_bias=True, mlp_bias=True), function="softmax"),
     "classifier(head(h)); norm_bias, attention_bias and mlp_bias true (head.norm.bias, every LayerNorm's and Linear's bias)"),
    ("bert_token_5", "BertForTokenClassification", NER, dict(hf5=True, function="softmax"),
     "bert_token's model with transformers 5's config.json"),
    ("bert_mlm", "BertForMaskedLM", None, dict(function="softmax"),
     "BertLMPredictionHead, decoder tied to the word table"),
    ("bert_mlm_twice", "BertForMaskedLM", None, dict(untied=True, function="softmax"),
     "tied, but the decoder weight and bias written too (equal to the word table and "
     "cls.predictions.bias); bert.pooler.* and cls.seq_relationship.* ignored"),
    ("bert_mlm_untied", "BertForMaskedLM", None,
     dict(own_decoder=True, config={"tie_word_embeddings": False}, function="softmax"),
     "tie_word_embeddings false: cls.predictions.decoder.weight drawn on its own, "
     "not the word table"),
    ("bert_mlm_5", "BertForMaskedLM", None, dict(hf5=True, function="softmax"),
     "bert_mlm's model with transformers 5's config.json"),
    ("roberta_mlm", "RobertaForMaskedLM", None, dict(function="softmax"),
     "RobertaLMHead (dense, exact gelu, layer_norm, tied decoder, lm_head.bias)"),
    ("xlm_roberta_mlm", "XLMRobertaForMaskedLM", None, dict(function="softmax"),
     "XLM-RoBERTa's copy of RobertaLMHead"),
    ("distilbert_mlm", "DistilBertForMaskedLM", None, dict(function="softmax"),
     "vocab_transform, gelu, vocab_layer_norm (eps 1e-12), vocab_projector (tied)"),
    ("modernbert_mlm", "ModernBertForMaskedLM", None, dict(function="softmax"),
     "ModernBertPredictionHead, decoder tied, decoder.bias"),
    ("modernbert_mlm_5", "ModernBertForMaskedLM", None, dict(hf5=True, function="softmax"),
     "modernbert_mlm's model with transformers 5's config.json"),
]


class Case:
    def __init__(self, name, cls, labels, settings, doc):
        self.name, self.cls, self.labels, self.doc = name, cls, labels, doc
        opts = dict(problem_type=None, hf5=False, untied=False, own_decoder=False, config={},
                    modernbert={},
                    function=None, pooling=None)
        unknown = set(settings) - set(opts)
        assert not unknown, f"{name}: unknown settings {unknown}"
        opts.update(settings)
        for k, v in opts.items():
            setattr(self, k, v)
        stem, suffix = cls.split("For", 1)
        self.kind = KINDS["For" + suffix]
        assert (labels is None) == (self.kind == "masked_lm"), name
        self.checkpoint, proxy = FAMILIES[stem]
        self.modern = stem == "ModernBert"
        # The twin (same weights and ids) of a transformers-5 case.
        self.seed_name = name[:-2] if self.hf5 else name
        assert not self.hf5 or name.endswith("_5")
        if self.modern:
            self.prefix = "model."
            cfg = mbx.shrink(mbx.MODERNBERT_BASE_CONFIG, cls,
                             dict(MODERNBERT_SIZES, **self.modernbert))
            self.model_type = "modernbert"
            self.vocab = mbx.VOCAB
        else:
            assert not self.modernbert, name
            self.prefix, self.family = hfx.CLASSES[proxy]
            # make_hf_fixtures' Case attributes that its functions read.
            self.n_layers, self.hidden_act, self.sinusoidal, self.dtype = 2, None, False, "F32"
            self.pad_inside, self.ids_positions = False, False
            cfg = hfx.shrink(hfx.CHECKPOINT_CONFIGS[self.checkpoint], self)
            self.model_type = cfg["model_type"]
            if self.family == "distilbert":
                self.act_hf, self.eps = cfg["activation"], DISTILBERT_EPS
            else:
                self.act_hf, self.eps = cfg["hidden_act"], cfg["layer_norm_eps"]
            self.act = {"gelu": "gelu", "gelu_new": "gelu_tanh"}[self.act_hf]
            self.proxy = proxy
            self.vocab = hfx.VOCAB
        if labels is not None:
            cfg["id2label"] = {str(i): lab for i, lab in enumerate(labels)}
            cfg["label2id"] = {lab: i for i, lab in enumerate(labels)}
            assert labels != ["LABEL_0", "LABEL_1"], "the default is not written"
        if self.problem_type is not None:
            cfg["problem_type"] = self.problem_type
        for k, v in self.config.items():
            assert k not in cfg, k
            cfg[k] = v
        # hf_config: the 4.x dict (what the reused functions read);
        # config_json: what config.json holds.
        self.hf_config = cfg
        self.config_json = head_config5(cfg) if self.hf5 else cfg

    @property
    def hidden(self):
        cfg = self.hf_config
        return cfg["dim"] if self.model_type == "distilbert" else cfg["hidden_size"]


def head_config5(old):
    """config5() for a task model: id2label / label2id / problem_type, which
    config5 does not place, are PreTrainedConfig's own fields in 5.x, written
    when they differ from the default (None; the two-label default is never
    written)."""
    new = config5({k: v for k, v in old.items() if k not in FINETUNE_FIELDS})
    for k in FINETUNE_FIELDS:
        if k in old:
            new[k] = old[k]
    return new


def head_function(cfg, kind):
    """The score function: sentence-transformers' CrossEncoder activation
    when the config names one, else TextClassificationPipeline's default
    (sequence heads); softmax for token classification and masked LM."""
    if kind != "sequence":
        return "softmax"
    st = cfg.get("sentence_transformers") or {}
    path = st.get("activation_fn") or cfg.get("sbert_ce_default_activation_function")
    if path is not None:
        return ST_ACTIVATION[path]
    num_labels = len(cfg["id2label"]) if "id2label" in cfg else 2
    problem_type = cfg.get("problem_type")
    if problem_type == "regression":
        return "none"
    if problem_type == "multi_label_classification" or num_labels == 1:
        return "sigmoid"
    if problem_type == "single_label_classification" or num_labels > 1:
        return "softmax"
    return "none"


def pooling_of(c):
    if c.kind != "sequence":
        return None
    return c.hf_config["classifier_pooling"] if c.modern else "cls"


# ---- the HF state_dict ----------------------------------------------------------------
#
# (name, shape) in registration order: the base model (reused), then the head.

def head_names(c):
    """The head's (name, shape) after the base model, in registration order."""
    D = c.hidden
    C = None if c.labels is None else len(c.labels)
    cls = c.cls
    if c.modern:
        cfg = c.hf_config
        if c.kind == "masked_lm":
            names, _ = mbx.hf_names(cfg, cls)
            return [(n, s) for n, s in names if not n.startswith(c.prefix)]
        # ModernBertForSequence / TokenClassification: model, head, drop, classifier.
        return (linear_names("head.dense", D, D, cfg["classifier_bias"]) +
                norm_names("head.norm", D, cfg["norm_bias"]) + linear_names("classifier", C, D))
    if c.kind == "masked_lm":
        names, _ = hfx.hf_names(hfx_view(c, c.cls))    # the head as make_hf_fixtures has it
        return [(n, s) for n, s in names if not n.startswith(c.prefix)]
    if c.kind == "token":
        return linear_names("classifier", C, D)
    if cls == "BertForSequenceClassification":
        # BertModel's pooler is registered in the base model, before classifier.
        return linear_names("bert.pooler.dense", D, D) + linear_names("classifier", C, D)
    if cls == "DistilBertForSequenceClassification":
        return linear_names("pre_classifier", D, D) + linear_names("classifier", C, D)
    # RobertaClassificationHead (XLM-R's, CamemBERT's) and ElectraClassificationHead.
    return linear_names("classifier.dense", D, D) + linear_names("classifier.out_proj", C, D)


def hfx_view(c, cls):
    """The case as make_hf_fixtures.hf_names() takes it, for class cls."""
    view = SimpleNamespace(**vars(c))
    view.cls = cls
    return view


def base_names(c):
    """(the base model's (name, shape) under the prefix, the stack's names,
    the embedding module's names)."""
    if c.modern:
        names, stack = mbx.hf_names(c.hf_config, "ModernBertForMaskedLM")
        base = [(n, s) for n, s in names if n.startswith(c.prefix)]
        emb = {n for n, _ in base if n.startswith(f"{c.prefix}embeddings.")}
        return base, stack, emb
    names, stack = hfx.hf_names(hfx_view(c, c.proxy))
    base = [(n, s) for n, s in names if n.startswith(c.prefix)]
    emb = set(hfx.embedding_names(c, dict(base)))   # embeddings.*, ELECTRA's embeddings_project.*
    return base, stack, emb


def untied_extras(c):
    """bert_mlm_twice: what bert-base-uncased's own files carry besides
    BertForMaskedLM's tensors: BertForPreTraining's pooler and NSP head
    (drawn), and the decoder (copied, after the draw)."""
    D = c.hidden
    return linear_names("bert.pooler.dense", D, D) + linear_names("cls.seq_relationship", 2, D)


def is_norm_weight(name):
    return hfx.is_norm_weight(name) or mbx.is_norm_weight(name)


UNTIED_DECODER = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
                  "cls.predictions.decoder.bias": "cls.predictions.bias"}


def name_sets(c):
    """([(name, shape)] drawn, in registration order; the stack's names, the
    embedding module's, the head's; every name in model.safetensors)."""
    base, stack, emb = base_names(c)
    head = head_names(c)
    drawn = base + head + (untied_extras(c) if c.untied else []) + \
        ([("cls.predictions.decoder.weight", (c.vocab, c.hidden))] if c.own_decoder else [])
    assert len({n for n, _ in drawn}) == len(drawn), c.name
    head_set = {n for n, _ in head} | (set(UNTIED_DECODER) if c.untied else set()) | \
        ({"cls.predictions.decoder.weight"} if c.own_decoder else set())
    every = {n for n, _ in drawn} | head_set
    return drawn, set(stack), emb, head_set, every


def ignored_names(c):
    _, stack, emb, head_set, every = name_sets(c)
    return sorted(every - stack - emb - head_set)


def model_tensors(c):
    """({name: float32 tensor} as save_pretrained writes it, stack names,
    embedding names, the head's tensor names)."""
    drawn, stack, emb, head_set, every = name_sets(c)
    torch.manual_seed(zlib.crc32(c.seed_name.encode()))
    out = {}
    for name, shape in drawn:
        t = torch.randn(shape) * (HEAD_DENSE_SCALE if name in HEAD_DENSE else VALUE_SCALE)
        if is_norm_weight(name):
            t = t + 1.0
        out[name] = t
    if c.untied:
        # saved twice: the decoder equal to what it is tied to
        for name, source in UNTIED_DECODER.items():
            out[name] = out[source].clone()
    assert set(out) == every, c.name
    return out, stack, emb, head_set


# ---- the batch and the encoder's last hidden state ---------------------------------------

def make_batch(c):
    """head.safetensors' inputs: input_ids, lengths (and token_type_ids where
    the family has two types), as make_hf_fixtures / make_modernbert_fixtures
    draw them; and valid [B, L] (position < length)."""
    gen = ids_generator(c.seed_name)
    if c.modern:
        lengths = torch.tensor(hfx.IDS_LENGTHS, dtype=torch.int32)
        ids, valid = random_ids(gen, lengths, hfx.IDS_L, c.vocab, c.hf_config["pad_token_id"])
        return {"input_ids": ids, "lengths": lengths}, valid
    batch = hfx.ids_batch(c, gen)
    valid = torch.arange(hfx.IDS_L)[None, :] < batch["lengths"].long()[:, None]
    return batch, valid


def last_hidden_state(c, hf, batch, valid, check=True):
    """The encoder's last hidden state h [B, L, D] as transformers computes it
    (padded rows hold what it computes there).  With check, the stack is also
    run by the independent formulation (torch's nn.TransformerEncoder /
    reference_f64) and must agree within ATOL on the real tokens.  Returns
    (h, max difference)."""
    ids = batch["input_ids"]
    if c.modern:
        cfg = c.hf_config
        with torch.no_grad():
            x = mbx.modernbert_embeddings(cfg, hf, ids, c.prefix)
            h = mbx.modernbert_layers(cfg, hf, x, batch["lengths"], c.prefix)
        if not check:
            return h, 0.0
        p64 = {k: v.to(torch.float64) for k, v in hf.items()}
        x64 = mbx._ln64(p64[f"{c.prefix}embeddings.tok_embeddings.weight"][ids], p64,
                        f"{c.prefix}embeddings.norm", cfg["norm_eps"])
        diff = (x.to(torch.float64) - x64).abs()[valid].max().item()
        out64, _ = mbx.reference_f64(cfg, hf, x, batch["lengths"].to(torch.long), c.prefix)
        diff = max(diff, (h.to(torch.float64) - out64).abs()[valid].max().item())
        return h, diff
    with torch.no_grad():
        x = hfx.EMBEDDINGS[c.model_type](c, hf, ids, batch.get("token_type_ids"), None)
    h, _ = hfx.hf_reference(c, hf, x, valid.long())
    if not check:
        return h, 0.0
    params = [hfx.torch_layer(c, hf, i) for i in range(c.n_layers)]
    model, mods = hfx.torch_model(c, params)
    out, _ = hfx.module_reference_masked(c, model, mods, x, ~valid)
    return h, (out - h).abs()[valid].max().item()


# ---- the heads, float32, after transformers' modeling code ------------------------------

HF_ACT = {"gelu": F.gelu, "gelu_new": hfx.HF_ACT["gelu_new"], **mbx.HF_ACT}


def modernbert_prediction_head(cfg, hf, x):
    """ModernBertPredictionHead.forward: norm(act(dense(x)))."""
    t = linear(hf, "head.dense", x, optional_bias=True)
    t = HF_ACT[cfg["classifier_activation"]](t)
    return layer_norm(hf, "head.norm", t, cfg["norm_eps"], optional_bias=True)


def head_forward(c, hf, h, attention_mask):
    """The task head on h [B, L, D] (float32): logits, [B, C] or [B, L, C] or
    [B, L, V], padded rows as transformers leaves them."""
    cfg, cls, kind = c.hf_config, c.cls, c.kind
    if c.modern:
        if kind == "sequence":
            if cfg["classifier_pooling"] == "cls":
                pooled = h[:, 0]
            else:
                pooled = (h * attention_mask.unsqueeze(-1)).sum(dim=1) / attention_mask.sum(
                    dim=1, keepdim=True)
            return linear(hf, "classifier", modernbert_prediction_head(cfg, hf, pooled))
        t = modernbert_prediction_head(cfg, hf, h)
        if kind == "token":
            return linear(hf, "classifier", t)
        return F.linear(t, hf["model.embeddings.tok_embeddings.weight"], hf.get("decoder.bias"))
    if kind == "token":
        return linear(hf, "classifier", h)
    if kind == "sequence":
        if cls == "BertForSequenceClassification":
            pooled = torch.tanh(linear(hf, "bert.pooler.dense", h[:, 0]))      # BertPooler
            return linear(hf, "classifier", pooled)
        if cls == "DistilBertForSequenceClassification":
            pooled = F.relu(linear(hf, "pre_classifier", h[:, 0]))
            return linear(hf, "classifier", pooled)
        x = linear(hf, "classifier.dense", h[:, 0, :])
        x = F.gelu(x) if cls == "ElectraForSequenceClassification" else torch.tanh(x)
        return linear(hf, "classifier.out_proj", x)
    word = hf[f"{c.prefix}embeddings.word_embeddings.weight"]
    if cls == "BertForMaskedLM":
        t = HF_ACT[c.act_hf](linear(hf, "cls.predictions.transform.dense", h))
        t = layer_norm(hf, "cls.predictions.transform.LayerNorm", t, c.eps)
        if c.untied:
            return linear(hf, "cls.predictions.decoder", t)
        if c.own_decoder:  # tie_word_embeddings false: the decoder's own weight
            return F.linear(t, hf["cls.predictions.decoder.weight"], hf["cls.predictions.bias"])
        return F.linear(t, word, hf["cls.predictions.bias"])
    if cls == "DistilBertForMaskedLM":
        t = HF_ACT[c.act_hf](linear(hf, "vocab_transform", h))
        t = layer_norm(hf, "vocab_layer_norm", t, DISTILBERT_EPS)
        return F.linear(t, word, hf["vocab_projector.bias"])
    # RobertaLMHead (XLM-R's copy): activations.gelu is the exact gelu.
    t = layer_norm(hf, "lm_head.layer_norm", F.gelu(linear(hf, "lm_head.dense", h)), c.eps)
    return F.linear(t, word, hf["lm_head.bias"])


# ---- the heads again: an independent float64 formulation -----------------------------

ACT64 = dict(mbx.ACT64, relu=lambda x: torch.clamp(x, min=0.0),
             tanh=lambda x: 1.0 - 2.0 / (torch.exp(2.0 * x) + 1.0))


def head_f64(c, hf, h, lengths):
    """The same heads in float64 from h: explicit x @ W^T + b, LayerNorm as
    (x - mean) / sqrt(var + eps), erf gelu / tanh via exp / silu written out,
    pooling row by row over the real tokens."""
    p = {k: v.to(torch.float64) for k, v in hf.items()}
    h = h.to(torch.float64)
    cfg, cls, kind = c.hf_config, c.cls, c.kind
    lin, ln = mbx._lin64, mbx._ln64

    if c.modern:
        def head(x):
            t = ACT64[cfg["classifier_activation"]](lin(x, p, "head.dense"))
            return ln(t, p, "head.norm", cfg["norm_eps"])
        if kind == "sequence":
            if cfg["classifier_pooling"] == "cls":
                pooled = h[:, 0]
            else:
                pooled = torch.stack([h[b, :n].sum(0) / n for b, n in enumerate(lengths.tolist())])
            return lin(head(pooled), p, "classifier")
        t = head(h)
        if kind == "token":
            return lin(t, p, "classifier")
        return t @ p["model.embeddings.tok_embeddings.weight"].T + p["decoder.bias"]
    if kind == "token":
        return lin(h, p, "classifier")
    first = h[:, 0]
    if cls == "BertForSequenceClassification":
        return lin(ACT64["tanh"](lin(first, p, "bert.pooler.dense")), p, "classifier")
    if cls == "DistilBertForSequenceClassification":
        return lin(ACT64["relu"](lin(first, p, "pre_classifier")), p, "classifier")
    if kind == "sequence":
        act = ACT64["gelu"] if cls == "ElectraForSequenceClassification" else ACT64["tanh"]
        return lin(act(lin(first, p, "classifier.dense")), p, "classifier.out_proj")
    word = p[f"{c.prefix}embeddings.word_embeddings.weight"]
    if cls == "BertForMaskedLM":
        t = ln(ACT64[c.act_hf](lin(h, p, "cls.predictions.transform.dense")), p,
               "cls.predictions.transform.LayerNorm", c.eps)
        dec = p["cls.predictions.decoder.weight"] if c.own_decoder else word
        return t @ dec.T + p["cls.predictions.bias"]
    if cls == "DistilBertForMaskedLM":
        t = ln(ACT64[c.act_hf](lin(h, p, "vocab_transform")), p, "vocab_layer_norm",
               DISTILBERT_EPS)
        return t @ word.T + p["vocab_projector.bias"]
    t = ln(ACT64["gelu"](lin(h, p, "lm_head.dense")), p, "lm_head.layer_norm", c.eps)
    return t @ word.T + p["lm_head.bias"]


def splade(logits, lengths):
    """SPLADE's max pooling: per sequence, max over its real tokens of
    log(1 + relu(logits)).  [B, L, V] -> [B, V]."""
    w = torch.log(1 + torch.relu(logits))
    return torch.stack([w[b, :n].amax(dim=0) for b, n in enumerate(lengths.tolist())])


def expected(c, hf, batch, valid, check=True):
    """head.safetensors' outputs (logits; splade for masked LM) with padded
    rows 0, and the largest difference of the independent formulations."""
    h, diff = last_hidden_state(c, hf, batch, valid, check)
    with torch.no_grad():
        logits = head_forward(c, hf, h, valid.long())
    lengths = batch["lengths"]
    out = {}
    if c.kind == "sequence":
        out["logits"] = logits.contiguous()
    else:
        out["logits"] = torch.where(valid[..., None], logits, torch.zeros(())).contiguous()
    if c.kind == "masked_lm":
        out["splade"] = splade(logits, lengths).contiguous()
    if check:
        l64 = head_f64(c, hf, h, lengths)
        rows = torch.ones(logits.shape[0], dtype=torch.bool) if c.kind == "sequence" else valid
        diff = max(diff, (logits.to(torch.float64) - l64).abs()[rows].max().item())
        if c.kind == "masked_lm":
            s64 = torch.stack([torch.log1p(torch.clamp(l64[b, :n], min=0.0)).amax(dim=0)
                               for b, n in enumerate(lengths.tolist())])
            diff = max(diff, (out["splade"].to(torch.float64) - s64).abs().max().item())
        assert diff <= ATOL, f"{c.name}: the independent formulation differs by {diff:.3g}"
    for k, v in out.items():
        assert v.dtype == torch.float32 and torch.isfinite(v).all(), f"{c.name}: {k}"
    return out, diff


# ---- files ----------------------------------------------------------------------------

def reference_phrase(c):
    torch_version = torch.__version__.split("+")[0]
    if c.modern:
        stack = ("ModernBertEmbeddings and the encoder (make_modernbert_fixtures.py's float32 "
                 "forward after the 4.48-era modeling_modernbert.py, h after final_norm; its "
                 "float64 formulation agrees within 1e-5)")
    else:
        stack = (f"{c.cls.split('For')[0]} embeddings and encoder (make_hf_fixtures.py's "
                 "functional reference after transformers' modeling code with the extended "
                 "attention mask; torch's nn.TransformerEncoder agrees within 1e-5)")
    return (f"a functional float32 forward in plain torch {torch_version} ops: {stack}, then "
            f"{c.cls}'s head written out after transformers' modeling code, eval mode; an "
            "independent float64 formulation of the head agrees within 1e-5; padded rows 0" +
            ("; splade = max over the real tokens of log(1 + relu(logits))"
             if c.kind == "masked_lm" else "") + ".")


def head_meta(c, hf, stack, emb, head_set):
    meta = {"kind": c.kind, "architecture": c.cls,
            "labels": [] if c.labels is None else list(c.labels),
            "function": head_function(c.config_json, c.kind),
            "tensors": sorted(head_set),
            "ignored": sorted(set(hf) - stack - emb - head_set)}
    if c.kind == "sequence":
        meta["pooling"] = pooling_of(c)
    if c.kind == "masked_lm":
        meta["tied"] = not c.own_decoder
    return meta


def make_case(c, outdir):
    hf, stack, emb, head_set = model_tensors(c)
    batch, valid = make_batch(c)
    outputs, diff = expected(c, hf, batch, valid)
    tensors = dict(batch)
    tensors.update(outputs)
    head = head_meta(c, hf, stack, emb, head_set)
    assert head["ignored"] == ignored_names(c), c.name
    assert head["function"] == c.function, (c.name, head["function"])
    assert head.get("pooling") == c.pooling, c.name
    assert stack <= set(hf) and head_set <= set(hf) and emb <= set(hf), c.name
    meta = {"reference": reference_phrase(c), "head": json.dumps(head, sort_keys=True)}

    d = os.path.join(outdir, c.name)
    os.makedirs(d, exist_ok=True)
    write_json(c.config_json, os.path.join(d, "config.json"))
    save_file(hf, os.path.join(d, "model.safetensors"), HF_FORMAT_METADATA)
    save_file(tensors, os.path.join(d, "head.safetensors"), meta)
    files = {"config.json", "model.safetensors", "head.safetensors"}
    for stale in sorted(set(os.listdir(d)) - files):
        os.remove(os.path.join(d, stale))
        print(f"{c.name}: removed stale {stale}", file=sys.stderr)
    check_round_trip(c, d, hf, tensors, meta)
    if c.hf5:
        twin = os.path.join(outdir, c.seed_name)
        for fname in ("model.safetensors", "head.safetensors"):
            if os.path.exists(os.path.join(twin, fname)):
                with open(os.path.join(d, fname), "rb") as a, \
                        open(os.path.join(twin, fname), "rb") as b:
                    assert a.read() == b.read(), f"{c.name}: {fname} differs from {c.seed_name}'s"
    print(f"{c.name}: independent formulations max |diff| {diff:.3g}", file=sys.stderr)


def check_round_trip(c, d, hf, tensors, meta):
    """Reads every file back, compares with what was meant, and runs the case
    again from the written files alone."""
    got, _ = check_saved(os.path.join(d, "head.safetensors"), tensors, meta, c.name)
    assert got["input_ids"].dtype == torch.int64 and got["lengths"].dtype == torch.int32
    back, back_meta = load_file(os.path.join(d, "model.safetensors"), "pt")
    assert back_meta == HF_FORMAT_METADATA and set(back) == set(hf), c.name
    for k, v in hf.items():
        assert back[k].dtype == torch.float32 and torch.equal(back[k], v), f"{c.name}: {k}"
    header, _, _ = read_header(os.path.join(d, "model.safetensors"))
    assert {v["dtype"] for v in header.values()} == {"F32"}, c.name
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        text = f.read()
    cfg = json.loads(text)
    assert cfg == c.config_json and text.endswith("}\n"), c.name
    assert cfg["architectures"] == [c.cls], c.name
    labels = [cfg["id2label"][str(i)] for i in range(len(cfg["id2label"]))] \
        if "id2label" in cfg else []
    head = json.loads(meta["head"])
    assert head["labels"] == labels and head["function"] == head_function(cfg, c.kind), c.name
    if labels:
        assert cfg["label2id"] == {lab: i for i, lab in enumerate(labels)}, c.name
    if c.untied:
        assert torch.equal(back["cls.predictions.decoder.weight"],
                           back["bert.embeddings.word_embeddings.weight"])
        assert torch.equal(back["cls.predictions.decoder.bias"], back["cls.predictions.bias"])
    # Run again from the files alone: the same bits.
    batch = {k: got[k] for k in ("input_ids", "lengths", "token_type_ids") if k in got}
    valid = torch.arange(got["input_ids"].shape[1])[None, :] < got["lengths"].long()[:, None]
    again, _ = expected(c, back, batch, valid, check=False)
    for k, v in again.items():
        assert torch.equal(v, got[k]), f"{c.name}: {k} from the files differs"
    ids = got["input_ids"]
    pad = c.hf_config["pad_token_id"]
    assert ((ids == pad) == ~valid).all() and (ids < c.vocab).all() and (ids >= 0).all(), c.name


# ---- README ---------------------------------------------------------------------------

README_HEAD = """\
# Task-head fixtures

Generated by `tools/make_head_fixtures.py`; do not edit.  Regenerate with

    /usr/bin/python3 tools/make_head_fixtures.py tests/fixtures/heads

(needs Debian's python3-torch and python3-numpy; no `transformers`).  The
script is deterministic: running it twice on one machine gives byte-identical
files (the expected floats differ in the last bits from CPU to CPU: to add a
case, run it into a scratch directory and copy only the new files).

Each case is a Hugging Face model directory of a task class (sequence
classification, token classification, masked LM) plus the checkpoint's own
answer for a padded batch:

- `config.json`: the field set of the public checkpoint's config.json
  (bert-base-uncased, roberta-base, xlm-roberta-base, camembert-base,
  google/electra-small-discriminator, distilbert-base-uncased,
  answerdotai/ModernBERT-base) at the sizes of `tests/fixtures/hf` (hidden 16,
  4 heads, intermediate 32, 2 layers, vocab 50, max_position_embeddings 24;
  ELECTRA embedding_size 8) and for ModernBERT hidden 16, 2 heads,
  intermediate 24, 2 layers (layer 0 global, layer 1 local, local_attention
  4: 2 each side), vocab 64, special ids 1 / 2 / 3 (cls = bos / sep = eos /
  pad); `architectures` naming the class; for classification
  `id2label` (`{"0": label, ...}`) and `label2id`; `problem_type` and
  `sentence_transformers` where the case has them.  Indent 2, sorted keys.
  Cases ending in `_5` are in transformers 5's form
  (`tools/make_hf5_fixtures.py`'s `config5()`, with `id2label`, `label2id`,
  `problem_type` kept: PreTrainedConfig's own fields in 5.x).
- `model.safetensors`: every tensor save_pretrained writes for the class
  (base model under `bert.`, `roberta.`, `electra.`, `distilbert.` or
  `model.`, then the head), F32, `__metadata__` `{"format": "pt"}`; no tied
  decoder (`cls.predictions.decoder.*`, `lm_head.decoder.*`,
  `vocab_projector.weight`, `decoder.weight` are the word table and the
  head's bias), except in `bert_mlm_twice` (saved twice) and
  `bert_mlm_untied` (`tie_word_embeddings` false: its own
  `cls.predictions.decoder.weight`).  Values normal * 0.1, LayerNorm
  weights 1 + normal * 0.1, the heads' dense weights (pooler, `classifier.dense`,
  `pre_classifier`, `head.dense`, the masked LMs' transforms) normal * 1.0:
  their pre-activations reach 2 to 4, where gelu and its tanh form differ.
- `head.safetensors` (not part of the model: a loader reads
  `model.safetensors`, not every `*.safetensors`):
  - `input_ids` I64 `[B, L]` = `[2, 7]`: random ids below the vocabulary,
    never `pad_token_id` among the real tokens, `pad_token_id` at every
    padded position;
  - `lengths` I32 `[B]` = `[7, 4]` (attention_mask = position < length);
  - `token_type_ids` I64 `[B, L]` for BERT and ELECTRA (type_vocab_size 2):
    `[[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 0, 0, 0]]`; not written for the
    RoBERTa family (all zeros), DistilBERT and ModernBERT;
  - `logits` F32: sequence classification `[B, C]`; token classification
    `[B, L, C]`; masked LM `[B, L, V]`; rows at and after `lengths[b]` 0;
  - `splade` F32 `[B, V]`, masked-LM cases: max over the sequence's real
    tokens of `log(1 + relu(logits))` (TEI's / SPLADE's pooling);
  - `__metadata__`: `reference` (what computed it) and `head`, JSON:
    `{"kind": "sequence" | "token" | "masked_lm", "architecture": the class,
    "labels": [id2label in id order] ([] for masked LM), "function":
    "softmax" | "sigmoid" | "none", "pooling": "cls" | "mean" (sequence heads
    only), "tied": true | false (masked LM only: true = the decoder is the
    word table, false = the file's own decoder tensors), "tensors": [the
    head's tensors in model.safetensors, sorted], "ignored": [tensors that
    neither the encoder stack, the embedding module nor the head reads,
    sorted]}`.

The heads (h = the encoder's last hidden state; for ModernBERT after
`final_norm`; for ELECTRA after `embeddings_project`):

| class | logits |
| --- | --- |
| BertForSequenceClassification | `classifier(tanh(bert.pooler.dense(h[:, 0])))` |
| Roberta / XLMRoberta / CamembertForSequenceClassification | `classifier.out_proj(tanh(classifier.dense(h[:, 0])))` |
| ElectraForSequenceClassification | `classifier.out_proj(gelu(classifier.dense(h[:, 0])))`, exact gelu whatever `hidden_act` |
| DistilBertForSequenceClassification | `classifier(relu(pre_classifier(h[:, 0])))` |
| ModernBertForSequenceClassification | `classifier(head(pool(h)))`, pool = `h[:, 0]` (`classifier_pooling` cls) or the mean of the real tokens (mean); `head(x)` = `head.norm(act(head.dense(x)))`, act = `classifier_activation`, dense bias iff `classifier_bias`, norm eps `norm_eps`, bias iff `norm_bias` |
| Bert / Roberta / Electra / DistilBertForTokenClassification | `classifier(h)` per token |
| ModernBertForTokenClassification | `classifier(head(h))` per token |
| BertForMaskedLM | `LN(act(cls.predictions.transform.dense(h))) @ word_embeddings^T + cls.predictions.bias`, act = `hidden_act`, LN = `cls.predictions.transform.LayerNorm` (eps `layer_norm_eps`) |
| Roberta / XLMRobertaForMaskedLM | `lm_head.layer_norm(gelu(lm_head.dense(h))) @ word_embeddings^T + lm_head.bias` (exact gelu, eps `layer_norm_eps`) |
| DistilBertForMaskedLM | `vocab_layer_norm(act(vocab_transform(h))) @ word_embeddings^T + vocab_projector.bias`, act = `activation`, eps 1e-12 |
| ModernBertForMaskedLM | `head(h) @ tok_embeddings^T + decoder.bias` |

`function` follows transformers' TextClassificationPipeline: problem_type
regression: none; multi_label_classification or one label: sigmoid; else
softmax; a sentence-transformers CrossEncoder config
(`sentence_transformers.activation_fn`) names its own
(`torch.nn.modules.activation.Sigmoid`: sigmoid).  Token classification and
masked LM: softmax.

`bert_seq_5`, `bert_token_5`, `bert_mlm_5` and `modernbert_mlm_5` are
`bert_seq`, `bert_token`, `bert_mlm` and `modernbert_mlm` with transformers
5's config.json: their `model.safetensors` and `head.safetensors` are those
cases' byte for byte.  `bert_mlm_twice` has the form of bert-base-uncased's
own files: `cls.predictions.decoder.weight` (= the word table) and
`cls.predictions.decoder.bias` (= `cls.predictions.bias`) are written, and
so are `bert.pooler.dense.*` and `cls.seq_relationship.*`, which
BertForMaskedLM does not read (its `ignored`).

Compare with 1e-4 absolute tolerance.  Expected values: a functional float32
forward in plain torch (the embeddings and stack of
`tools/make_hf_fixtures.py` / `tools/make_modernbert_fixtures.py`, then the
head written out after transformers' modeling code); the stack agrees with
torch's nn.TransformerEncoder (BERT family) or a float64 formulation
(ModernBERT), and every head with an independent float64 formulation, within
1e-5; a run from the written files alone reproduces every output bit for
bit.

| case | class | config | labels | problem_type | function | pooling | tied | ignored | covers |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def readme_row(c):
    labels = "(masked LM)" if c.labels is None else ", ".join(c.labels)
    tied = "-" if c.kind != "masked_lm" else ("no (its own decoder)" if c.own_decoder
                                               else "yes (decoder written too)" if c.untied
                                               else "yes")
    ignored = ", ".join(f"`{n}`" for n in ignored_names(c)) or "none"
    return md_row(f"`{c.name}`", c.cls, "5.x" if c.hf5 else "4.x", labels,
                  c.problem_type or "-", c.function, c.pooling or "-", tied, ignored, c.doc)


def main(argv):
    mbx.one_blas_thread()
    return fixture_main(argv, "make_head_fixtures",
                        "Writes OUTDIR/<case>/ (a Hugging Face task-model directory plus\n"
                        "head.safetensors) for every case, or those named, and OUTDIR/README.md.",
                        [Case(*spec) for spec in CASES], make_case, README_HEAD, readme_row)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
