/* encoder.h - the attnd core: a transformer encoder block (or a stack of them)
 * on OpenBLAS, exact to PyTorch's nn.TransformerEncoderLayer.
 *
 * The core knows nothing of HTTP or JSON requests.  It loads a model once
 * (from a safetensors file or deterministically from a seed) and runs
 * forwards on it; a model is read-only after loading and may be shared by
 * any number of concurrent forwards, each with its own workspace.
 *
 * Shape letters used in comments throughout core/:
 *   B  sequences in a batch          L  padded sequence length
 *   D  d_model                       H  n_heads (query heads)
 *   G  n_kv_heads (key/value heads)  E  head size (D / H, or hp.head_dim)
 *   F  d_ff                          T  real tokens in a batch (sum of lengths)
 *
 *     enc_hparams hp;
 *     enc_hparams_default(&hp);                    // the defaults (docs/configuration.md)
 *     enc_error err = {0};
 *     enc_model *m = enc_model_load("w.safetensors", &hp, &err);  // or enc_model_random
 *     enc_workspace *ws = enc_workspace_new(m);
 *     enc_batch in = {.x = x, .B = 2, .L = 5, .lengths = lens};
 *     enc_result res = {.out = out, .attn_mode = ENC_ATTN_HEADS, .attn = layer_ptrs};
 *     if (enc_forward(m, ws, &in, &res, &err) < 0) ...
 *     enc_workspace_free(ws);
 *     enc_model_free(m);
 */
#ifndef ATTND_ENCODER_H
#define ATTND_ENCODER_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- hyperparameters --------------------------------------------------- */

typedef enum enc_activation {
    ENC_ACT_RELU,      /* max(0, x) */
    ENC_ACT_GELU,      /* exact: x * Phi(x), with erf */
    ENC_ACT_GELU_TANH, /* PyTorch's approximate='tanh' */
} enc_activation;

/* Positions inside attention (docs/model.md): none (the input embeddings
 * carry them), rotary embeddings of q and k, or ALiBi's score bias. */
typedef enum enc_position {
    ENC_POS_NONE,
    ENC_POS_ROPE,  /* q, k rotated by pos * theta^(-2k / rope_dim) */
    ENC_POS_ALIBI, /* scores += -m_h * |p_i - p_j| */
} enc_position;

typedef enum enc_rope_style {
    ENC_ROPE_NEOX, /* dims k and k + rope_dim/2 rotate together (GPT-NeoX, Llama, ModernBERT) */
    ENC_ROPE_GPTJ, /* dims 2k and 2k + 1 (GPT-J, RoFormer) */
} enc_rope_style;

/* The feed-forward: the paper's MLP, act(x W1) W2, or gated (GLU):
 * x W1 gives 2F columns, input then gate, and (act(input) * gate) W2 --
 * GeGLU with the GELU of activation, SwiGLU with SiLU (docs/model.md). */
typedef enum enc_ffn {
    ENC_FFN_MLP,
    ENC_FFN_GEGLU,
    ENC_FFN_SWIGLU,
} enc_ffn;

/* What the Linears compute in: float32 (exact as PyTorch in float32), or
 * bfloat16 -- the weights stored in bfloat16 (half the memory) and each
 * Linear's input rounded to bfloat16, the products summed in float32, as
 * torch.autocast(dtype=torch.bfloat16) runs a Linear on the CPU; or
 * int8 -- the weights quantised per output channel at load and each
 * Linear's input per row, the products summed in int32, as PyTorch's
 * quantize_dynamic (core/kernels/gemm.h); everything else stays float32.
 * auto is for the configuration only (the checkpoint's torch_dtype); a
 * model is built in one of the other three. */
typedef enum enc_dtype {
    ENC_DTYPE_FLOAT32,
    ENC_DTYPE_BFLOAT16,
    ENC_DTYPE_INT8,
    ENC_DTYPE_AUTO,
} enc_dtype;

/* The block's norms: LayerNorm with a weight and a bias (the bias only when
 * bias is on), with a weight only (ModernBERT's norm_bias false), or with a
 * weight and a bias whatever bias says (NomicBERT's bias-free Linears
 * beside norms with biases); or RMSNorm, x / sqrt(mean(x^2) + eps) times a
 * weight, no bias (T5's, Llama's, Qwen3's). */
typedef enum enc_norm {
    ENC_NORM_LAYERNORM,
    ENC_NORM_LAYERNORM_NOBIAS,
    ENC_NORM_LAYERNORM_BIAS,
    ENC_NORM_RMS,
} enc_norm;

/* DeBERTa-v2's relative attention (DisentangledSelfAttention, share_att_key
 * true): the table's 2 span rows (after a LayerNorm when norm) go through
 * each layer's query and key Linears; query i and key j at distance
 * d = i - j (indices) read row r = span + bucket(d), clamped to the table
 * (enc_dis_row): the score gets q_i . K_r (c2p) and k_j . Q_r (p2c), and
 * the scale is 1 / sqrt(E (1 + c2p + p2c)). */
typedef struct enc_disentangled {
    int span;         /* att_span: the table holds 2 span rows; 0: no relative attention */
    int buckets;      /* position_buckets: distances past buckets / 2 in log buckets; 0: none */
    int max_position; /* max_relative_positions: where the log buckets reach buckets - 1 */
    bool c2p, p2c;    /* which terms (pos_att_type) */
    bool norm;        /* the table through a LayerNorm first (norm_rel_ebd layer_norm) */
} enc_disentangled;

typedef struct enc_hparams {
    int d_model;    /* D */
    int n_heads;    /* H; must divide d_model unless head_dim is set */
    int n_kv_heads; /* G; must divide n_heads */
    /* E, each head's size; 0: D / H.  Set, H E may differ from D: q is
     * (H E) wide and the out-projection takes H E to D (Qwen3's head_dim). */
    int head_dim;
    /* A decoder's attention: query i sees keys j <= i only, on every layer,
     * on top of the batch's own mask (Qwen3). */
    bool causal;
    /* Each head's q and k through a norm of E dims (hp.norm's kind, one
     * weight per layer shared by the heads) before RoPE (Qwen3's q_norm,
     * k_norm). */
    bool qk_norm;
    /* With qk_norm: one norm over all of q's H E dims and one over k's G E
     * instead (hp.norm's kind, with a bias where the norms have one):
     * JinaBERT qk-post-norm's layer_norm_q and layer_norm_k. */
    bool qk_norm_whole;
    /* Post-norm only: attention's output and the residual through a norm
     * of its own, then the residual added again before LN1:
     * x = LN1(x + SO1(x + MHA(x))) (JinaBERT qk-post-norm's
     * attention.output.LayerNorm, then its layer_norm_1). */
    bool double_residual;
    /* Each sublayer's output through a norm of its own (hp.norm's kind)
     * before the residual add: attention's, then the feed-forward's
     * (Gemma 3's post_attention_layernorm and post_feedforward_layernorm,
     * on top of its pre-norms).  Pre-norm only. */
    bool sublayer_norm;
    int d_ff;       /* F */
    int n_layers;   /* blocks in the stack, >= 1 */
    enc_activation activation;
    bool norm_first;       /* false: post-norm (the paper), true: pre-norm */
    float layer_norm_eps;  /* > 0 */
    bool bias;             /* false: no bias in any Linear or LayerNorm */
    enc_position position; /* zero: none */
    double rope_theta;     /* RoPE's base, > 0 (default 10000) */
    int rope_dim;          /* dims of each head RoPE rotates: even, <= E; 0 = E */
    enc_rope_style rope_style;
    /* GTE's fixed NTK-aware scaling (rope_scaling type ntk, factor f): the
     * angles pos * (theta f)^(-2k / rope_dim) / f^(2 / rope_dim) when f > 1;
     * 0 or 1: none (docs/model.md) */
    double rope_ntk;
    enc_ffn ffn;              /* zero: mlp */
    enc_norm norm;            /* zero: layernorm */
    bool final_norm;          /* a norm after the last layer */
    bool first_norm_identity; /* layer 0's attention norm is the identity (ModernBERT);
                                 pre-norm only */
    /* Per-layer attention (docs/model.md): layer l is global when l mod
     * global_every = global_offset, otherwise local: query i sees keys
     * |i - j| <= local_window, on top of the batch's own mask.  0 or 1:
     * every layer global. */
    int global_every;
    int global_offset;       /* 0 .. global_every - 1 (ModernBERT: 0; Gemma 3: 5 of 6) */
    int local_window;        /* W >= 0 */
    double rope_theta_local; /* RoPE's base on local layers; 0: rope_theta */
    enc_dtype dtype;         /* the Linears' (not auto); zero: float32 */
    /* MPNet's relative position bias (docs/model.md): every layer's scores
     * get a learned (rel_buckets, H) table's entry for the bucket of the
     * key's index minus the query's (enc_rel_bucket), the table shared by
     * the layers.  rel_buckets is the table's rows, at least
     * ENC_REL_BUCKETS (transformers buckets into that many whatever the
     * table's size); 0: no bias. */
    int rel_buckets;
    /* DeBERTa's disentangled attention (docs/model.md): every layer's scores
     * get a content-to-position and a position-to-content term read from a
     * relative position table shared by the layers; 0 span: none. */
    enc_disentangled dis;
    /* A causal LM's directory (Qwen3ForCausalLM) served as a reranker
     * (docs/model.md, "Rerankers from causal LMs"): a sequence's score is
     * lm_head's logit of token score_ids[0] minus score_ids[1]'s at its
     * last token (n_score_ids 1: the first's alone), as sentence-
     * transformers' LogitScore computes it.  0: as the directory's
     * LogitScore module says, else none. */
    int n_score_ids;
    int score_ids[2];
} enc_hparams;

/* MPNet's relative position buckets: T5's bidirectional scheme with 32
 * buckets and a maximum distance of 128, as transformers' MPNetEncoder
 * computes them. */
#define ENC_REL_BUCKETS      32
#define ENC_REL_MAX_DISTANCE 128
/* The bucket of relative position d = j - i (key minus query): keys before
 * the query in 0..15, after it in 16..31; distances below 8 exactly, then
 * logarithmically up to 128 (float32 arithmetic, as torch's); every
 * distance from 128 on is the last bucket of its side. */
int enc_rel_bucket(int d);
/* DeBERTa's table row for query i and key j, d = i - j (hp.dis, span > 0):
 * span + make_log_bucket_position(d) (float32 arithmetic, as torch computes
 * it), clamped to 0 .. 2 span - 1. */
int enc_dis_row(const enc_disentangled *dis, int d);
/* DeBERTa's scale factor, 1 + c2p + p2c: the scores are over sqrt(E times it). */
int enc_dis_scale_factor(const enc_disentangled *dis);

/* E: hp.head_dim, or D / H when it is 0. */
int enc_head_dim(const enc_hparams *hp);

/* Positions (a batch's positions, RoPE's and ALiBi's) are below this. */
#define ENC_MAX_POSITION (1 << 20)

/* Upper bounds on hyperparameters, so sizes never overflow. */
#define ENC_MAX_DIM    (1 << 16)
#define ENC_MAX_LAYERS 256

/* Fills hp with the defaults (docs/contract.md section 1's example config,
 * docs/configuration.md): D 512, H 8, G 8, F 2048, 1 layer, relu,
 * post-norm, eps 1e-5, bias on. */
void enc_hparams_default(enc_hparams *hp);

/* Checks every setting and their combinations.  Returns 0, or ENC_EINVAL with
 * a message naming the setting ("n_heads (6) must divide d_model (512)"). */
int enc_hparams_validate(const enc_hparams *hp, enc_error *err);

/* "none" | "rope" | "alibi", "neox" | "gptj": names both ways; 0 or ENC_EINVAL. */
int enc_position_parse(const char *name, enc_position *out);
const char *enc_position_name(enc_position pos);
int enc_rope_style_parse(const char *name, enc_rope_style *out);
const char *enc_rope_style_name(enc_rope_style style);
/* "mlp" | "geglu" | "swiglu" both ways; 0 or ENC_EINVAL. */
int enc_ffn_parse(const char *name, enc_ffn *out);
const char *enc_ffn_name(enc_ffn ffn);
/* Rows of the feed-forward's first Linear: d_ff, or 2 d_ff when gated. */
int enc_ffn_rows(const enc_hparams *hp);
/* "float32" | "bfloat16" | "auto" both ways; 0 or ENC_EINVAL. */
int enc_dtype_parse(const char *name, enc_dtype *out);
const char *enc_dtype_name(enc_dtype dtype);
/* "layernorm" | "layernorm_nobias" | "layernorm_bias" | "rmsnorm" both
 * ways; 0 or ENC_EINVAL. */
int enc_norm_parse(const char *name, enc_norm *out);
const char *enc_norm_name(enc_norm norm);
/* Whether the norms have a bias: norm layernorm_bias, or layernorm with
 * bias on. */
bool enc_norm_has_bias(const enc_hparams *hp);
/* Whether layer l is local (a sliding window) rather than global. */
bool enc_layer_local(const enc_hparams *hp, int l);
/* RoPE's base on layer l: rope_theta_local on a local layer when set. */
double enc_layer_rope_theta(const enc_hparams *hp, int l);
/* RoPE's frequency k (of rope_dim / 2) for base theta: theta^(-2k / dim),
 * rope_ntk's scaling applied when it is above 1, in double. */
double enc_rope_inv_freq(const enc_hparams *hp, double theta, int k, int dim);

/* ALiBi's slope of each of n heads (Press et al.): 2^(-8(h+1)/n) when n is a
 * power of two; else the slopes of the power of two m below n, then every
 * other slope of 2m, n - m of them. */
void enc_alibi_slopes(int n, float *slopes);

/* "relu" | "gelu" | "gelu_tanh" -> activation; returns 0 or ENC_EINVAL. */
int enc_activation_parse(const char *name, enc_activation *out);
const char *enc_activation_name(enc_activation act);

/* ---- model ------------------------------------------------------------- */

typedef struct enc_model enc_model;

/* Loads a safetensors file whose tensors follow PyTorch's state_dict names
 * (docs/contract.md section 2) for the hyperparameters in hp.  Every tensor is checked
 * for presence, dtype (F32, F16, BF16) and shape, and refused if unexpected;
 * values must be finite.  Returns an owned model, or NULL with err naming
 * the tensor and the problem. */
enc_model *enc_model_load(const char *path, const enc_hparams *hp, enc_error *err);

/* Builds a model deterministically from seed with PyTorch's initialisation
 * scheme: xavier-uniform in-projection, zero in/out-projection biases,
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the other Linear weights and the FFN
 * biases, LayerNorm weight 1 and bias 0.  The same seed gives the same bits on
 * every machine.  Returns an owned model, or NULL with err set. */
enc_model *enc_model_random(const enc_hparams *hp, uint64_t seed, enc_error *err);

/* Gives a model built from a seed an embedding module of its own, so that it
 * takes token ids (and text, with a tokenizer): BertEmbeddings' math,
 * LayerNorm(word[id] + token_type[tt] + position[p]) at d_model, eps
 * layer_norm_eps, with vocab_size word rows and 2 token types drawn from the
 * seed (U(+-sqrt(3)): variance 1, as nn.Embedding's N(0, 1)), DistilBERT's
 * sinusoidal table for positions 0 .. max_positions - 1, LayerNorm weight 1
 * and bias 0.  A word row is computed when it is looked up, never stored,
 * so any vocab_size costs nothing.  docs/model.md, "Models built from a
 * seed".  0, or a negative enc_status with err set. */
int enc_model_seed_embedding(enc_model *m, int vocab_size, int max_positions, uint64_t seed,
                             enc_error *err);

/* Frees a model; NULL is a no-op.  No forward may be running on it. */
void enc_model_free(enc_model *m);

/* Borrowed views, valid for the model's lifetime. */
const enc_hparams *enc_model_hparams(const enc_model *m);
/* The encoder stack's parameters (a directory's embedding module,
 * enc_model_embedding, is not counted). */
size_t enc_model_param_count(const enc_model *m);
/* sha256 of the weights file as 64 hex digits, or "" for a seeded model. */
const char *enc_model_sha256(const enc_model *m);
/* The weights file's path, the directory, or "seed:N" for a seeded model. */
const char *enc_model_source(const enc_model *m);
/* What the Linears run in: bfloat16 or int8 when hp.dtype asked for it
 * (both pack on every CPU: gemm.h), else float32; float32 too when memory
 * was short at packing. */
enc_dtype enc_model_dtype(const enc_model *m);
/* config.json's model_type ("bert", ...) for a directory, else "". */
const char *enc_model_architecture(const enc_model *m);
/* The files the model was read from, sorted by name (a directory's
 * config.json, weights and index; a weights file's name; none for a seeded
 * model): file i's name, and its sha256 (hex) in *sha256 when non-NULL. */
size_t enc_model_file_count(const enc_model *m);
const char *enc_model_file(const enc_model *m, size_t i, const char **sha256);
/* A directory's tensors that are not the encoder stack's or its embedding
 * module's (pooler, task heads), in file order: skipped, and listed here. */
size_t enc_model_ignored_count(const enc_model *m);
const char *enc_model_ignored(const enc_model *m, size_t i);

/* The embedding module a Hugging Face directory brings (embed.c): what
 * turns token ids into the stack's input.  Borrowed, valid for the model's
 * lifetime; NULL for a model without one (a weights file, a seeded model),
 * which takes embeddings only. */
typedef struct enc_embedding_info {
    int vocab_size;       /* input_ids are 0 .. vocab_size - 1 */
    int type_vocab_size;  /* token_type_ids are 0 .. type_vocab_size - 1; 0: none taken */
    int max_positions;    /* L (and every position id) at most this; 0: no limit (RoPE) */
    int max_position_embeddings; /* config.json's, as given (0: not given): with a table, its
                                    rows; with RoPE (ModernBERT), bounding no table, the length
                                    the model was trained to, which text input is held to */
    int padding_idx;      /* RoBERTa family: positions count from padding_idx + 1; else -1 */
    const char *position; /* how positions enter: "absolute" (a learned table, rows 0..L-1 or
                             the batch's positions), "roberta" (the same table, rows counted
                             from padding_idx + 1), "sinusoidal" (DistilBERT's fixed table),
                             "rope" or "alibi" (no table: inside attention) */
    const char *dtype;    /* the word table as stored and read: "F32", "F16" or "BF16" */
    size_t n_tensors;     /* the module's tensors, as the file names them */
    const char *const *tensors;
} enc_embedding_info;
const enc_embedding_info *enc_model_embedding(const enc_model *m);

/* The model's own projection of its token states after the final norm
 * (voyage-4-nano's linear.weight: config.json's num_labels rows of
 * hidden_size, no bias; float32 whatever the model's dtype), which its
 * embeddings are made from (model/pooling.h's enc_embedder.project).
 * Borrowed; NULL for a model without one. */
struct enc_dense;
const struct enc_dense *enc_model_projection(const enc_model *m);

/* ---- the checkpoint's task head (model/head.c) ---------------------------- */

/* What a Hugging Face directory's architectures name on top of the encoder
 * (docs/model.md, "Task heads"): the head transformers' *For<Task> class
 * computes from the last hidden state. */
typedef enum enc_head_kind {
    ENC_HEAD_NONE,      /* the encoder alone (BertModel, or a head attnd does not compute) */
    ENC_HEAD_SEQUENCE,  /* *ForSequenceClassification: C logits per sequence */
    ENC_HEAD_TOKEN,     /* *ForTokenClassification: C logits per token */
    ENC_HEAD_MASKED_LM, /* *ForMaskedLM: V logits per token, over the vocabulary */
} enc_head_kind;

/* How a head's scores come from its logits: transformers' pipelines'
 * function_to_apply (problem_type regression: none; multi-label or one
 * label: sigmoid; else softmax), or a sentence-transformers CrossEncoder's
 * activation_fn. */
typedef enum enc_head_function {
    ENC_HEAD_FN_SOFTMAX,
    ENC_HEAD_FN_SIGMOID,
    ENC_HEAD_FN_NONE,
} enc_head_function;

/* "sequence" | "token" | "masked_lm" ("none"); "softmax" | "sigmoid" | "none". */
const char *enc_head_kind_name(enc_head_kind kind);
const char *enc_head_function_name(enc_head_function fn);

typedef struct enc_head_info {
    enc_head_kind kind;
    const char *architecture;  /* config.json's architectures[0] */
    int n_outputs;             /* C (labels) or, for a masked LM, V (the vocabulary) */
    const char *const *labels; /* (C) id2label in id order; NULL for a masked LM */
    enc_head_function function;
    const char *problem_type; /* config.json's problem_type, or "" */
    bool mean_pooling;        /* a sequence head on the mean of the real tokens (ModernBERT's
                                 classifier_pooling "mean"), else on the first token */
    /* or on the last token whose id is not pad_token_id (the last token
     * when it is -1 or the batch gives embeddings), as transformers'
     * GenericForSequenceClassification takes a decoder's (Qwen3's) */
    bool last_pooling;
    int pad_token_id;
    /* A causal LM's reranker (enc_hparams.score_ids): its one output is
     * lm_head's logit of score_ids[0] minus score_ids[1]'s (n_score_ids 1:
     * the first's); 0 otherwise */
    int n_score_ids;
    int score_ids[2];
    bool tied;                /* a masked LM's decoder is the word table */
    size_t n_tensors;         /* the head's tensors, as the files name them */
    const char *const *tensors;
} enc_head_info;

/* The model's head, borrowed; NULL for a model without one (a weights file,
 * a seeded model, a base model's directory, or an architecture whose head
 * attnd does not compute: enc_model_head_unsupported). */
const enc_head_info *enc_model_head(const enc_model *m);
/* config.json's architectures[0] when it names a head attnd does not
 * compute (BertForQuestionAnswering, ...), or one whose decoder the files
 * lack (enc_model_head_note says so): the encoder is served and the head's
 * tensors listed as ignored.  Else NULL. */
const char *enc_model_head_unsupported(const enc_model *m);
/* Why the head of enc_model_head_unsupported is left out when attnd
 * computes its kind ("its decoder ... is not in the files"), else "". */
const char *enc_model_head_note(const enc_model *m);
/* config.json's architectures[0], or "" (a weights file, a seeded model). */
const char *enc_model_class(const enc_model *m);

/* What a forward computes of the head (enc_result.head). */
typedef enum enc_head_output {
    ENC_HEAD_OUT_NONE,
    ENC_HEAD_OUT_LOGITS, /* the head's raw output into enc_result.logits: (B, C) for a
                            sequence head, (B, L, C) for a token head, (B, L, V) for a
                            masked LM; rows at or past lengths[b] zero */
    ENC_HEAD_OUT_SPLADE, /* a masked LM's SPLADE vector into enc_result.logits, (B, V):
                            the max over the real tokens of log(1 + relu(logits)); the
                            (L, V) logits are never held, a block of columns at a time */
    ENC_HEAD_OUT_ROWS,   /* a token head's or masked LM's raw output for chosen tokens only
                            (enc_result.head_rows): (n_head_rows, C) into enc_result.logits,
                            in the order of head_rows (fill-mask's masked positions) */
} enc_head_output;

/* Floats of enc_result.logits for a batch of B sequences of L tokens on m
 * (0 for NONE, ROWS, whose count is n_head_rows x the head's outputs, or a
 * head the model does not have). */
size_t enc_head_floats(const enc_model *m, enc_head_output what, int B, int L);

/* ---- Hugging Face encoder directories (hfconfig.c, checkpoint.c) -------- */

/* What a directory's config.json says, for model.dir: the architecture and
 * the encoder's hyperparameters (post-norm, biases, n_kv_heads = n_heads),
 * with the key config.json keeps each under (for messages). */
typedef struct enc_hf_config {
    char model_type[32]; /* bert | roberta | xlm-roberta | camembert | electra | distilbert |
                            modernbert | mpnet | nomic_bert | new (GTE) | deberta-v2 | qwen2 |
                            qwen3 | bidirectional_pplx_qwen3 | mistral | gemma3_text */
    enc_hparams hp;
    const char *key_d_model, *key_n_heads, *key_d_ff, *key_n_layers, *key_activation;
    const char *key_eps; /* NULL: the architecture fixes it (DistilBERT: 1e-12) */
    /* RoPE's base, where the file gave it: rope_parameters.rope_theta,
     * rope_theta or rotary_emb_base (ModernBERT:
     * rope_parameters.full_attention.rope_theta or global_rope_theta) */
    const char *key_rope_theta;
    /* ModernBERT's: norm_bias, layer_types or global_attn_every_n_layers,
     * local_attention, rope_parameters.sliding_attention.rope_theta or
     * local_rope_theta (or the global one's key); Gemma 3's and Mistral's
     * their own; NULL for the others.  key_local_window is the expression
     * that gives local_window ("local_attention / 2", "sliding_window -
     * 1") */
    const char *key_norm, *key_global_every, *key_local_window, *key_rope_theta_local;
    /* GTE's rope_scaling.factor, where the file gives one; NULL for the others */
    const char *key_rope_ntk;
    char activation[32]; /* the file's activation name ("gelu_new") */
    /* The embedding module's fields (embed.c), as config.json gives them;
     * the encoder stack does not use them.  0 (pad_token_id -1) where the
     * file does not say. */
    int vocab_size;              /* rows of the word embeddings */
    int type_vocab_size; /* BERT family's token types; 0 for DistilBERT, ModernBERT, MPNet */
    int max_position_embeddings; /* rows of the absolute position embeddings */
    int pad_token_id;            /* the padding id (RoBERTa's positions count from it + 1) */
    int embedding_size;          /* the word embeddings' width: ELECTRA's embedding_size (128 when
                                    absent, as ElectraConfig's), otherwise d_model */
    bool sinusoidal;             /* DistilBERT's sinusoidal_pos_embds */
    bool no_types;     /* type_vocab_size 0 is no table (GTE's, DeBERTa's), not BERT's 2 */
    bool no_positions; /* the embeddings add no position table (DeBERTa's
                          position_biased_input false) */
    enc_dtype dtype;             /* torch_dtype (4.x) or dtype (5.x): bfloat16 when it says so,
                                    else float32 (what model.dtype auto runs) */
    /* Gemma 3's scores are over sqrt(query_pre_attn_scalar), not sqrt(E);
     * 0: sqrt(E) */
    double query_pre_attn_scalar;
    /* Qwen3's num_labels where config.json gives that field: the rows of
     * voyage-4-nano's projection (linear.weight); 0: not given */
    int num_labels;
} enc_hf_config;

/* Reads dir/config.json, in the form transformers 4.x or 5.x writes it
 * (docs/model.md, "Hugging Face directories", has the table of fields).
 * Returns 0, or an error naming the file and the field: a missing or
 * mistyped field, an unknown model_type or activation, and every field
 * that would make transformers compute something attnd does not (a
 * relative position_embedding_type, is_decoder, a rope_type other than
 * default, a rope_scaling, a layer_types pattern attnd cannot represent,
 * ...). */
int enc_hf_config_read(const char *dir, enc_hf_config *c, enc_error *err);

/* Loads a Hugging Face encoder directory: config.json plus model.safetensors,
 * or model.safetensors.index.json and the shards it names.  The stack's
 * tensors are bound by the names transformers writes (BERT's
 * encoder.layer.{i}.attention.self.query.weight ..., DistilBERT's
 * transformer.layer.{i}.attention.q_lin.weight ...), with or without the
 * task checkpoint's prefix (bert., roberta., electra., distilbert.,
 * model.), and the embedding module's (embeddings.word_embeddings.weight
 * ..., ModernBERT's embeddings.tok_embeddings.weight, ELECTRA's
 * embeddings_project.*: enc_model_embedding) when the word table is there
 * (without it the model takes embeddings only; with it every other tensor
 * of the module must be there too, shaped as config.json says); every other
 * tensor (pooler, heads) is ignored and listed.  hp must be what
 * enc_hf_config_read gave (the caller may have checked it against other
 * settings).  Returns an owned model, or NULL with err naming the file or
 * tensor. */
enc_model *enc_model_load_dir(const char *dir, const enc_hparams *hp, enc_error *err);

/* ---- a forward ------------------------------------------------------------ */

/* The additive/boolean attn mask of docs/api.md ("Masks"). */
typedef enum enc_attn_mask_kind {
    ENC_MASK_NONE,
    ENC_MASK_BOOL, /* attn_bool: nonzero = not allowed, as PyTorch's bool attn_mask */
    ENC_MASK_ADD,  /* attn_add: added to the scaled scores; -inf = not allowed */
} enc_attn_mask_kind;

#define ENC_WINDOW_NONE (-1) /* an unbounded side of the window */

/* BigBird's block-sparse pattern (Zaheer et al. 2020).  With qb = i / size and
 * kb = j / size, query i may see key j when |qb - kb| <= window, qb < global,
 * kb < global, or kb is one of the `random` key blocks drawn for qb
 * (core/kernels/mask.c's mask_blocks_random says how they are drawn).
 * size 0 = off. */
typedef struct enc_blocks_pattern {
    int size;      /* tokens per block, >= 1 */
    int window;    /* key blocks each side of the query's own, >= 0 */
    int global;    /* the first `global` blocks see and are seen by all, >= 0 */
    int random;    /* random key blocks per query block, >= 0 */
    uint64_t seed; /* the generator's seed: the same seed, the same blocks everywhere */
} enc_blocks_pattern;

/* Which keys each query may see (docs/model.md, "Masks and sparse patterns").
 * The pattern options (window, stride, fixed, blocks) are a union: a pair
 * (i, j) is in the pattern when any option given allows it, and the rows and
 * columns of the global positions join it; no pattern option means every
 * pair (global alone changes nothing).  Then lengths, key_padding, causal and
 * attn restrict the pattern. */
typedef struct enc_mask {
    bool causal;       /* key j <= query i */
    int window_left;   /* i - left <= j, or ENC_WINDOW_NONE */
    int window_right;  /* j <= i + right, or ENC_WINDOW_NONE */
    const int *global; /* positions whose rows and columns join the pattern, or NULL */
    size_t n_global;
    int stride;                 /* Sparse Transformer's strided pattern, symmetric form:
                                   |i - j| < stride or (i - j) mod stride = 0; 0 = off */
    int fixed_block;            /* Sparse Transformer's fixed pattern: i / block = j / block */
    int fixed_summary;          /*   or j mod block >= block - summary; block 0 = off */
    enc_blocks_pattern blocks;  /* BigBird's block-sparse pattern */
    const uint8_t *key_padding; /* (B, L), nonzero = padding, or NULL */
    enc_attn_mask_kind attn_kind;
    const uint8_t *attn_bool; /* (L, L) or (B, L, L) */
    const float *attn_add;    /* (L, L) or (B, L, L) */
    bool attn_per_sequence;   /* true: (B, L, L); false: (L, L) for all */
} enc_mask;

typedef struct enc_blockmask enc_blockmask;

/* A batch given as token ids instead of embeddings: the model's own
 * embedding module (a Hugging Face directory's, enc_model_embedding) turns
 * them into the stack's input inside the forward.  Entries past lengths[b]
 * are padding: never looked up, never checked. */
typedef struct enc_ids {
    const int32_t *input_ids;      /* (B, L) each below the vocabulary size */
    const int32_t *token_type_ids; /* (B, L) each below type_vocab_size, or NULL = all 0 */
} enc_ids;

typedef struct enc_batch {
    const float *x;     /* (B, L, D) row-major; NULL when ids is set */
    const enc_ids *ids; /* borrowed, or NULL: x is the input.  Exactly one of x and ids.
                           positions below then also index the absolute position
                           table (NULL: the family's own, RoBERTa's counted from
                           padding_idx + 1 over the non-pad ids) */
    int B, L;
    const int *lengths;             /* (B) real tokens per sequence, 1..L; NULL = all L */
    const int32_t *positions;       /* (B, L) each token's position, 0..ENC_MAX_POSITION - 1,
                                       for RoPE and ALiBi; NULL = 0 .. L - 1 in every sequence */
    enc_mask mask;                  /* zeroed = no mask; set window_* to ENC_WINDOW_NONE */
    const enc_blockmask *blockmask; /* borrowed: this batch's, from enc_blockmask_new, or NULL
                                       (the forward compiles its own); needed for CSR weights */
} enc_batch;

typedef enum enc_attn_mode {
    ENC_ATTN_NONE,  /* no weights: nothing written */
    ENC_ATTN_HEADS, /* per layer (B, H, L, L) */
    ENC_ATTN_MEAN,  /* per layer (B, L, L): the mean over heads */
} enc_attn_mode;

/* The weights' heads a mode writes per sequence and layer: n_heads for
 * ENC_ATTN_HEADS, else 1 (the mean's one; nothing at all for NONE). */
static inline int enc_attn_heads(enc_attn_mode mode, int n_heads)
{
    return mode == ENC_ATTN_HEADS ? n_heads : 1;
}

typedef enum enc_attn_format {
    ENC_FORMAT_DENSE, /* (B, H, L, L) or (B, L, L) per layer */
    ENC_FORMAT_CSR,   /* per layer, sequence after sequence: (H, nnz_b) or (nnz_b), the
                         values of the allowed pairs in the order of the batch's blockmask
                         CSR (enc_blockmask_indptr / _indices) */
} enc_attn_format;

typedef struct enc_result {
    float *out; /* (B, L, D): rows at or past lengths[b] are zero */
    enc_attn_mode attn_mode;
    enc_attn_format attn_format;
    float **attn;    /* n_layers pointers; attn[l] NULL = layer l not wanted.
                        Dense: entries for queries or keys past lengths[b] are
                        zero, as are rows of queries with no allowed key, and
                        pairs the mask does not allow. */
    uint64_t scores; /* set by the forward: query-key scores it computed, over
                        every sequence, head and layer (masked entries of partially
                        masked tiles included) */
    enc_head_output head; /* zero: the encoder's output alone */
    float *logits;        /* enc_head_floats(m, head, B, L) floats, when head is set (ROWS:
                             n_head_rows x outputs) */
    /* ROWS: the tokens whose output is computed, each b * L + i with i below
     * lengths[b], ascending (no repeats). */
    const int32_t *head_rows;
    int n_head_rows;
} enc_result;

/* ---- the block mask ------------------------------------------------------ */

/* Compiles a batch's mask (FlexAttention's BlockMask): for each sequence and
 * each tile of 64 query rows, the tiles of 32 keys it scores,
 * each full (no per-key mask work) or partial (masked key by key); empty
 * tiles are never scored.  Window, causal, lengths, key padding, global
 * positions and the patterns give the tiles arithmetically; an explicit attn
 * mask is classified by one pass over it.  With csr, also each sequence's
 * allowed pairs in CSR form (row by row, keys ascending).  The batch is
 * validated first (enc_batch_validate's checks that need no model).
 * Returns an owned block mask, or NULL with err set: ENC_EINVAL for a bad
 * batch, ENC_ELIMIT when a sequence has more than INT32_MAX allowed pairs,
 * ENC_ENOMEM. */
enc_blockmask *enc_blockmask_new(const enc_batch *in, bool csr, enc_error *err);
void enc_blockmask_free(enc_blockmask *bm);
/* Scores a forward computes for sequence b, per head and layer. */
uint64_t enc_blockmask_scores(const enc_blockmask *bm, int b);
/* With csr: sequence b's allowed pairs; its indptr (len + 1 entries) and
 * indices (nnz), borrowed for the block mask's lifetime. */
size_t enc_blockmask_nnz(const enc_blockmask *bm, int b);
const int32_t *enc_blockmask_indptr(const enc_blockmask *bm, int b);
const int32_t *enc_blockmask_indices(const enc_blockmask *bm, int b);
/* With csr: sequence b's pairs at a layer that also refuses every pair
 * further apart than band (a local layer, band enc_hparams.local_window;
 * band < 0: none refused), in the block mask's order: their count, and when
 * indptr is set, its indptr (len + 1 entries) and indices (the count) written.
 * With dst, the values of those pairs picked out of src, the layer's (heads,
 * nnz) weights of sequence b in the block mask's CSR order (enc_result's),
 * head h's to dst + h * dst_stride (dst_stride 0: the count). */
size_t enc_blockmask_band(const enc_blockmask *bm, int b, int band, int32_t *indptr,
                          int32_t *indices, int heads, const float *src, float *dst,
                          size_t dst_stride);

/* A forward's scratch memory.  Sized for a batch shape on first use and grown
 * (never shrunk) when a larger one comes; one workspace per concurrent forward. */
typedef struct enc_workspace enc_workspace;

enc_workspace *enc_workspace_new(const enc_model *m);
/* A second workspace for m on ws's threads, for forwards that run while ws
 * runs none: between the phases of one of ws's (enc_workspace_on_pause) or
 * while ws is idle.  Freed before ws.  Returns NULL when out of memory. */
enc_workspace *enc_workspace_new_beside(const enc_model *m, enc_workspace *ws);
void enc_workspace_free(enc_workspace *ws);
/* fn(arg) is called on the forward's thread after each phase of every
 * forward ws runs, while no thread of its team works (with a hook set, a
 * forward's Linears run 256 rows a phase and its attention 256 x 512 scores
 * per head, so that phases stay milliseconds long): there
 * a caller may run a forward on a workspace made beside ws, a short request
 * ahead of the long one under way.  NULL fn: none. */
void enc_workspace_on_pause(enc_workspace *ws, void (*fn)(void *arg), void *arg);
/* Bytes the workspace holds now. */
size_t enc_workspace_bytes(const enc_workspace *ws);

/* Checks a batch against the model: shape, lengths, mask positions and values.
 * Returns 0, or ENC_EINVAL naming the field and index ("lengths[1] = 9 is
 * outside 1..5").  enc_forward calls it first. */
int enc_batch_validate(const enc_model *m, const enc_batch *in, enc_error *err);

/* Runs the stack on a batch.  Returns 0; ENC_EINVAL for a bad batch;
 * ENC_ENOMEM when the workspace cannot grow; ENC_ENUMERIC when the input
 * drives a value to infinity or NaN (out is then not to be used). */
int enc_forward(const enc_model *m, enc_workspace *ws, const enc_batch *in, enc_result *res,
                enc_error *err);

/* One batch of a dynamic batch: its input, where its results go, and (set by
 * enc_forward_many) its own status and error. */
typedef struct enc_job {
    const enc_batch *in;
    enc_result *res;
    int rc; /* 0, or the negative status of this job alone */
    enc_error err;
} enc_job;

/* Runs n batches as one forward: the Linears over all their real tokens at
 * once, attention per sequence with each batch's own mask and length, each
 * batch's outputs and weights where its enc_result says.  Every job gets its
 * own rc/err: a bad or overflowing batch fails alone.  A batch's results are
 * what enc_forward gives it alone (within float32 rounding of BLAS kernels
 * whose rounding depends on a row's place in a GEMM; bit for bit on
 * AVX-512).  Returns the number of jobs that failed. */
int enc_forward_many(const enc_model *m, enc_workspace *ws, enc_job *jobs, int n);

/* The same computation in plain loops, no BLAS, no packing: the obviously
 * correct reference the fast path is tested against.  Slow. */
int enc_forward_naive(const enc_model *m, const enc_batch *in, enc_result *res, enc_error *err);

/* Floating-point operations of one forward (the GEMMs and attention), for
 * benchmarks and metrics. */
double enc_forward_flops(const enc_hparams *hp, int B, int L);

/* The index of the first NaN or infinity in x (n), or n when there is none.
 * A whole tensor is checked in one vectorized pass; it is walked only when
 * that pass finds one. */
size_t enc_floats_nonfinite(const float *x, size_t n);

/* Threads each forward uses: workspaces made from now on get a team of n
 * threads that splits every op (GEMMs by output columns, attention by tiles
 * of query rows, norms by rows).  OpenBLAS itself is set to one thread, so the
 * two never compete for cores.  Default 1. */
void enc_set_threads(int n);
/* The n of the last enc_set_threads (1 before any). */
int enc_threads(void);

/* What the forward runs on, for the start-up log and /v1/model. */
typedef struct enc_platform {
    const char *kernels;    /* "avx512": attnd's AVX-512 GEMM, softmax and activations;
                               "openblas": cblas_sgemm and portable C */
    const char *cpu_simd;   /* the widest vector extension the CPU has: "avx512f",
                               "avx2", "avx" or "sse2" ("none" elsewhere) */
    const char *blas_core;  /* openblas_get_corename(): OpenBLAS's kernels for this CPU */
    bool blas_core_generic; /* the CPU has AVX2 but OpenBLAS runs older kernels: it does
                               not know this CPU (Debian's 0.3.21 calls the newest
                               Xeons Prescott) and its sgemm runs at a fraction of the
                               CPU's speed; OPENBLAS_CORETYPE overrides it */
    const char *bf16_kernel; /* what bfloat16 Linears run on: "avx512_bf16" (vdpbf16ps),
                                "avx512f" (bfloat16 widened to float32 in registers), or
                                "openblas" (no AVX-512F: blocks of the panels widened,
                                multiplied by cblas_sgemm) */
    const char *int8_kernel; /* what int8 Linears run on: "avx512_vnni" (vpdpbusd), "avx2"
                                (int16 vpmaddwd) or "portable" (C) */
} enc_platform;

/* Fills p (its strings are static). */
void enc_platform_get(enc_platform *p);

/* The most forward threads, over all workspaces alive together, that m's
 * forwards can run without OpenBLAS running out of the buffers reserved for
 * them (core/model/workspace.c says why): 2 x OpenBLAS's MAX_THREADS less its own
 * threads (127 with Debian's build on 2 CPUs) when the forwards call
 * OpenBLAS (a CPU without AVX-512, valgrind, simd_set_enabled(false)), else
 * INT_MAX. */
int enc_blas_threads_max(const enc_model *m);

#endif
