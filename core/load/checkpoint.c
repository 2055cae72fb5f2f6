/* checkpoint.c - a model's parameters bound from safetensors files by name:
 * one PyTorch file (nn.TransformerEncoder's state_dict names), or a Hugging
 * Face encoder directory (config.json, read by hfconfig.c, +
 * model.safetensors, or a sharded model.safetensors.index.json), through
 * one table per naming scheme. */
#include "base/file.h"
#include "load/safetensors.h"
#include "load/hfhead.h"
#include "load/sha256.h"
#include "model/embed.h"
#include "model/head.h"
#include "model/model.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* ---- naming schemes -------------------------------------------------------- */

/* The tensors of one block, whatever a file calls them. */
typedef enum slot {
    S_QKV_W, /* q, k and v weights stacked */
    S_QKV_B,
    S_Q_W,
    S_K_W,
    S_V_W,
    S_Q_B,
    S_K_B,
    S_V_B,
    S_O_W,
    S_O_B,
    S_1_W, /* a gated feed-forward's: the activated rows, then the others */
    S_1_B,
    S_1L_W, /* a gated feed-forward's rows that are not activated (w_g), where a
               scheme keeps them apart from S_1_W's */
    S_1L_B,
    S_2_W,
    S_2_B,
    S_LN1_W, /* after attention (post-norm), or before it (pre-norm) */
    S_LN1_B,
    S_LN2_W, /* after the feed-forward (post-norm), or before it */
    S_LN2_B,
    S_QN_W, /* each head's query norm (hp.qk_norm), shared by the heads; or the
               whole query's (hp.qk_norm_whole) */
    S_KN_W,
    S_QN_B, /* the whole query's norm's bias (hp.qk_norm_whole) */
    S_KN_B,
    S_SO1_W, /* attention's output norm before the residual add (hp.sublayer_norm), or
                over it and the residual (hp.double_residual) */
    S_SO1_B,
    S_SO2_W, /* the feed-forward's */
    N_SLOTS
} slot;

/* A naming scheme: what a block's names start with (then its index and a
 * dot) and each slot's name after that; NULL where the scheme has no such
 * tensor. */
typedef struct naming {
    const char *layer;
    const char *name[N_SLOTS];
    const char *final; /* the norm after the last layer: its weight's and bias's prefix */
    const char *rel_bias; /* the relative position bias's table (hp.rel_buckets), or NULL */
    /* A layer tensor that marks a variant of the architecture attnd does not
     * compute, and what that variant is; NULL for none. */
    const char *variant, *variant_why;
    /* S_1_W's fused rows hold the others first, then the activated ones
     * (GTE's up_gate_proj): w_1 points at its second half, w_g at its
     * first; such a scheme names no S_1_B (b_1 keeps its zeros). */
    bool gate_last;
    /* DeBERTa's relative position table (hp.dis) and its LayerNorm's
     * prefix, after the model's prefix; NULL where the scheme has none */
    const char *dis_table, *dis_norm;
} naming;

/* nn.TransformerEncoder's state_dict (docs/contract.md section 2). */
static const naming TORCH = {"layers.",
                             {[S_QKV_W] = "self_attn.in_proj_weight",
                              [S_QKV_B] = "self_attn.in_proj_bias",
                              [S_Q_W] = "self_attn.q_proj_weight",
                              [S_K_W] = "self_attn.k_proj_weight",
                              [S_V_W] = "self_attn.v_proj_weight",
                              [S_O_W] = "self_attn.out_proj.weight",
                              [S_O_B] = "self_attn.out_proj.bias",
                              [S_1_W] = "linear1.weight",
                              [S_1_B] = "linear1.bias",
                              [S_2_W] = "linear2.weight",
                              [S_2_B] = "linear2.bias",
                              [S_LN1_W] = "norm1.weight",
                              [S_LN1_B] = "norm1.bias",
                              [S_LN2_W] = "norm2.weight",
                              [S_LN2_B] = "norm2.bias"},
                             "norm.",
                             NULL,
                             NULL,
                             NULL,
                             false,
                             NULL,
                             NULL};

/* BertSelfAttention's and BertSelfOutput's names (JinaBERT's too). */
#define BERT_ATTENTION                                                                             \
    [S_Q_W] = "attention.self.query.weight", [S_Q_B] = "attention.self.query.bias",                \
    [S_K_W] = "attention.self.key.weight", [S_K_B] = "attention.self.key.bias",                    \
    [S_V_W] = "attention.self.value.weight", [S_V_B] = "attention.self.value.bias",                \
    [S_O_W] = "attention.output.dense.weight", [S_O_B] = "attention.output.dense.bias",            \
    [S_LN1_W] = "attention.output.LayerNorm.weight", [S_LN1_B] = "attention.output.LayerNorm.bias"

/* transformers' BertLayer (BertSelfAttention, BertSelfOutput,
 * BertIntermediate, BertOutput), also RoBERTa's, XLM-R's, CamemBERT's and
 * ELECTRA's. */
static const naming BERT = {
    "encoder.layer.",
    {BERT_ATTENTION, [S_1_W] = "intermediate.dense.weight", [S_1_B] = "intermediate.dense.bias",
     [S_2_W] = "output.dense.weight", [S_2_B] = "output.dense.bias",
     [S_LN2_W] = "output.LayerNorm.weight", [S_LN2_B] = "output.LayerNorm.bias"},
    NULL,
    NULL,
    NULL,
    NULL,
    false,
    NULL,
    NULL};

/* transformers' DistilBERT TransformerBlock (MultiHeadSelfAttention, FFN). */
static const naming DISTILBERT = {"transformer.layer.",
                                  {[S_Q_W] = "attention.q_lin.weight",
                                   [S_Q_B] = "attention.q_lin.bias",
                                   [S_K_W] = "attention.k_lin.weight",
                                   [S_K_B] = "attention.k_lin.bias",
                                   [S_V_W] = "attention.v_lin.weight",
                                   [S_V_B] = "attention.v_lin.bias",
                                   [S_O_W] = "attention.out_lin.weight",
                                   [S_O_B] = "attention.out_lin.bias",
                                   [S_1_W] = "ffn.lin1.weight",
                                   [S_1_B] = "ffn.lin1.bias",
                                   [S_2_W] = "ffn.lin2.weight",
                                   [S_2_B] = "ffn.lin2.bias",
                                   [S_LN1_W] = "sa_layer_norm.weight",
                                   [S_LN1_B] = "sa_layer_norm.bias",
                                   [S_LN2_W] = "output_layer_norm.weight",
                                   [S_LN2_B] = "output_layer_norm.bias"},
                                  NULL,
                                  NULL,
                                  NULL,
                                  NULL,
                                  false,
                                  NULL,
                                  NULL};

/* transformers' ModernBertEncoderLayer (ModernBertAttention, ModernBertMLP)
 * and ModernBertModel's final_norm; layer 0 has no attn_norm (the
 * identity). */
static const naming MODERNBERT = {"layers.",
                                  {[S_QKV_W] = "attn.Wqkv.weight",
                                   [S_QKV_B] = "attn.Wqkv.bias",
                                   [S_O_W] = "attn.Wo.weight",
                                   [S_O_B] = "attn.Wo.bias",
                                   [S_1_W] = "mlp.Wi.weight",
                                   [S_1_B] = "mlp.Wi.bias",
                                   [S_2_W] = "mlp.Wo.weight",
                                   [S_2_B] = "mlp.Wo.bias",
                                   [S_LN1_W] = "attn_norm.weight",
                                   [S_LN1_B] = "attn_norm.bias",
                                   [S_LN2_W] = "mlp_norm.weight",
                                   [S_LN2_B] = "mlp_norm.bias"},
                                  "final_norm.",
                                  NULL,
                                  NULL,
                                  NULL,
                                  false,
                                  NULL,
                                  NULL};

/* transformers' MPNetLayer (MPNetAttention with its MPNetSelfAttention,
 * MPNetIntermediate, MPNetOutput) and MPNetEncoder's relative position
 * bias, shared by the layers. */
static const naming MPNET = {"encoder.layer.",
                             {[S_Q_W] = "attention.attn.q.weight",
                              [S_Q_B] = "attention.attn.q.bias",
                              [S_K_W] = "attention.attn.k.weight",
                              [S_K_B] = "attention.attn.k.bias",
                              [S_V_W] = "attention.attn.v.weight",
                              [S_V_B] = "attention.attn.v.bias",
                              [S_O_W] = "attention.attn.o.weight",
                              [S_O_B] = "attention.attn.o.bias",
                              [S_1_W] = "intermediate.dense.weight",
                              [S_1_B] = "intermediate.dense.bias",
                              [S_2_W] = "output.dense.weight",
                              [S_2_B] = "output.dense.bias",
                              [S_LN1_W] = "attention.LayerNorm.weight",
                              [S_LN1_B] = "attention.LayerNorm.bias",
                              [S_LN2_W] = "output.LayerNorm.weight",
                              [S_LN2_B] = "output.LayerNorm.bias"},
                             NULL,
                             "encoder.relative_attention_bias.weight",
                             NULL,
                             NULL,
                             false,
                             NULL,
                             NULL};

/* NomicBERT's NomicBertBlock (NomicBertAttention, NomicBertGatedMLP) as
 * modeling_hf_nomic_bert.py names it: fc11(x) * act(fc12(x)), so fc12's
 * rows are the activated ones (S_1_W) and fc11's the others (S_1L_W). */
static const naming NOMIC = {"encoder.layers.",
                             {[S_QKV_W] = "attn.Wqkv.weight",
                              [S_QKV_B] = "attn.Wqkv.bias",
                              [S_O_W] = "attn.out_proj.weight",
                              [S_O_B] = "attn.out_proj.bias",
                              [S_1_W] = "mlp.fc12.weight",
                              [S_1_B] = "mlp.fc12.bias",
                              [S_1L_W] = "mlp.fc11.weight",
                              [S_1L_B] = "mlp.fc11.bias",
                              [S_2_W] = "mlp.fc2.weight",
                              [S_2_B] = "mlp.fc2.bias",
                              [S_LN1_W] = "norm1.weight",
                              [S_LN1_B] = "norm1.bias",
                              [S_LN2_W] = "norm2.weight",
                              [S_LN2_B] = "norm2.bias"},
                             NULL,
                             NULL,
                             NULL,
                             NULL,
                             false,
                             NULL,
                             NULL};

/* JinaBERT's JinaBertLayer (jina-bert-implementation's modeling_bert.py,
 * feed_forward_type geglu): BERT's attention, then JinaBertGLUMLP's
 * gated_layers (the activated rows first, no bias: b_1 stays zero), wo and
 * layernorm. */
static const naming JINA = {
    "encoder.layer.",
    {BERT_ATTENTION, [S_1_W] = "mlp.gated_layers.weight", [S_2_W] = "mlp.wo.weight",
     [S_2_B] = "mlp.wo.bias", [S_LN2_W] = "mlp.layernorm.weight", [S_LN2_B] = "mlp.layernorm.bias"},
    NULL,
    NULL,
    "attention.self.layer_norm_q.weight",
    "JinaBERT's qk-post-norm layout (jina-embeddings-v2-base-code's) without config.json's "
    "auto_map naming jinaai/jina-bert-v2-qk-post-norm",
    false,
    NULL,
    NULL};

/* JinaBERT qk-post-norm's JinaBertLayer (jina-bert-v2-qk-post-norm's
 * modeling_bert.py, which jina-embeddings-v2-base-code's auto_map names;
 * TEI's jina_code.rs): BERT's Linears, layer_norm_q and layer_norm_k over
 * the whole query and key (hp.qk_norm_whole), attention.output.LayerNorm
 * over attention's output and the residual, layer_norm_1 over that and the
 * residual again (hp.double_residual), then mlp.up_gated_layer (no bias;
 * its first half the rows not activated: gate_last), mlp.down_layer and
 * layer_norm_2. */
static const naming JINA_CODE = {.layer = "encoder.layer.",
                                 .name = {[S_Q_W] = "attention.self.query.weight",
                                          [S_Q_B] = "attention.self.query.bias",
                                          [S_K_W] = "attention.self.key.weight",
                                          [S_K_B] = "attention.self.key.bias",
                                          [S_V_W] = "attention.self.value.weight",
                                          [S_V_B] = "attention.self.value.bias",
                                          [S_QN_W] = "attention.self.layer_norm_q.weight",
                                          [S_QN_B] = "attention.self.layer_norm_q.bias",
                                          [S_KN_W] = "attention.self.layer_norm_k.weight",
                                          [S_KN_B] = "attention.self.layer_norm_k.bias",
                                          [S_O_W] = "attention.output.dense.weight",
                                          [S_O_B] = "attention.output.dense.bias",
                                          [S_SO1_W] = "attention.output.LayerNorm.weight",
                                          [S_SO1_B] = "attention.output.LayerNorm.bias",
                                          [S_LN1_W] = "layer_norm_1.weight",
                                          [S_LN1_B] = "layer_norm_1.bias",
                                          [S_1_W] = "mlp.up_gated_layer.weight",
                                          [S_2_W] = "mlp.down_layer.weight",
                                          [S_2_B] = "mlp.down_layer.bias",
                                          [S_LN2_W] = "layer_norm_2.weight",
                                          [S_LN2_B] = "layer_norm_2.bias"},
                                 .gate_last = true};

/* GTE's NewLayer (Alibaba-NLP/new-impl's modeling.py: NewAttention with
 * qkv_proj, pack_qkv true (hfconfig.c's read_gte); NewGatedMLP, whose up_gate_proj has no bias and
 * holds the up rows, then the gate's; attn_ln and mlp_ln after each sublayer). */
static const naming GTE = {"encoder.layer.",
                           {[S_QKV_W] = "attention.qkv_proj.weight",
                            [S_QKV_B] = "attention.qkv_proj.bias",
                            [S_O_W] = "attention.o_proj.weight",
                            [S_O_B] = "attention.o_proj.bias",
                            [S_1_W] = "mlp.up_gate_proj.weight",
                            [S_2_W] = "mlp.down_proj.weight",
                            [S_2_B] = "mlp.down_proj.bias",
                            [S_LN1_W] = "attn_ln.weight",
                            [S_LN1_B] = "attn_ln.bias",
                            [S_LN2_W] = "mlp_ln.weight",
                            [S_LN2_B] = "mlp_ln.bias"},
                           NULL,
                           NULL,
                           NULL,
                           NULL,
                           true,
                           NULL,
                           NULL};

/* transformers' DebertaV2Layer: BERT's, the attention's Linears named
 * query_proj, key_proj and value_proj; the encoder's rel_embeddings and
 * their LayerNorm. */
static const naming DEBERTA = {"encoder.layer.",
                               {[S_Q_W] = "attention.self.query_proj.weight",
                                [S_Q_B] = "attention.self.query_proj.bias",
                                [S_K_W] = "attention.self.key_proj.weight",
                                [S_K_B] = "attention.self.key_proj.bias",
                                [S_V_W] = "attention.self.value_proj.weight",
                                [S_V_B] = "attention.self.value_proj.bias",
                                [S_O_W] = "attention.output.dense.weight",
                                [S_O_B] = "attention.output.dense.bias",
                                [S_LN1_W] = "attention.output.LayerNorm.weight",
                                [S_LN1_B] = "attention.output.LayerNorm.bias",
                                [S_1_W] = "intermediate.dense.weight",
                                [S_1_B] = "intermediate.dense.bias",
                                [S_2_W] = "output.dense.weight",
                                [S_2_B] = "output.dense.bias",
                                [S_LN2_W] = "output.LayerNorm.weight",
                                [S_LN2_B] = "output.LayerNorm.bias"},
                               NULL,
                               NULL,
                               NULL,
                               NULL,
                               false,
                               "encoder.rel_embeddings.weight",
                               "encoder.LayerNorm."};

/* The slots transformers' decoders (Qwen's, Gemma 3's) name alike: the
 * projections, each head's q and k norm, the attention norm, and the gated
 * MLP, down_proj(act(gate_proj(x)) * up_proj(x)), so gate_proj's rows are
 * the activated ones. */
#define DECODER_SLOTS                                                                              \
    [S_Q_W] = "self_attn.q_proj.weight", [S_K_W] = "self_attn.k_proj.weight",                      \
    [S_V_W] = "self_attn.v_proj.weight", [S_O_W] = "self_attn.o_proj.weight",                      \
    [S_1_W] = "mlp.gate_proj.weight", [S_1L_W] = "mlp.up_proj.weight",                             \
    [S_2_W] = "mlp.down_proj.weight", [S_LN1_W] = "input_layernorm.weight",                        \
    [S_QN_W] = "self_attn.q_norm.weight", [S_KN_W] = "self_attn.k_norm.weight"

/* transformers' Qwen2DecoderLayer, Qwen3DecoderLayer and
 * MistralDecoderLayer (their Attention and MLP) and their Models' final
 * norm.  Qwen2's q, k and v have biases (hp.bias), no other Linear (b_o,
 * b_2 keep their zeros); Qwen3's have none, but q_norm and k_norm
 * (hp.qk_norm); Mistral's neither. */
static const naming QWEN = {
    .layer = "layers.",
    .name = {DECODER_SLOTS, [S_Q_B] = "self_attn.q_proj.bias", [S_K_B] = "self_attn.k_proj.bias",
             [S_V_B] = "self_attn.v_proj.bias", [S_LN2_W] = "post_attention_layernorm.weight"},
    .final = "norm."};

/* transformers' Gemma3DecoderLayer with its four norms: input_layernorm
 * and pre_feedforward_layernorm before the sublayers,
 * post_attention_layernorm and post_feedforward_layernorm on their
 * outputs; Gemma3TextModel's final norm.  Gemma3RMSNorm's weights are
 * stored as w - 1 (its scheme's norm_plus_one). */
static const naming GEMMA3 = {
    .layer = "layers.",
    .name = {DECODER_SLOTS, [S_LN2_W] = "pre_feedforward_layernorm.weight",
             [S_SO1_W] = "post_attention_layernorm.weight",
             [S_SO2_W] = "post_feedforward_layernorm.weight"},
    .final = "norm."};

/* Each config.json model_type's tensor names (hfconfig.c reads its
 * config.json): its naming scheme, and the base model's prefix in task
 * checkpoints ("bert." in BertForMaskedLM's names). */
typedef struct scheme {
    const char *model_type;
    const naming *names;
    const char *prefix;
    bool gated; /* the scheme of this model_type when its feed-forward is gated */
    /* Every norm's weight is stored as w - 1 (Gemma3RMSNorm computes with
     * 1 + weight): 1 is added as it is bound. */
    bool norm_plus_one;
} scheme;

static const scheme SCHEMES[] = {
    {"bert", &BERT, "bert.", false, false},
    {"bert", &JINA, "bert.", true, false}, /* JinaBERT: feed_forward_type geglu */
    {"roberta", &BERT, "roberta.", false, false},
    {"xlm-roberta", &BERT, "roberta.", false, false},
    {"camembert", &BERT, "roberta.", false, false},
    {"electra", &BERT, "electra.", false, false},
    {"distilbert", &DISTILBERT, "distilbert.", false, false},
    /* ModernBertForMaskedLM names the stack model.layers.{i}...; ModernBertModel layers.{i}... */
    {"modernbert", &MODERNBERT, "model.", false, false},
    {"mpnet", &MPNET, "mpnet.", false, false},
    {"nomic_bert", &NOMIC, "bert.", false,
     false},                            /* NomicBertForPreTraining's bert.encoder.layers... */
    {"new", &GTE, "new.", true, false}, /* GTE: NewForSequenceClassification's new.encoder... */
    {"deberta-v2", &DEBERTA, "deberta.", false, false},
    /* gte-Qwen2's, Qwen3-Embedding's and e5-mistral's files are Qwen2Model's,
     * Qwen3Model's and MistralModel's (layers.{i}...), the ...ForCausalLM's
     * model.layers... */
    {"qwen2", &QWEN, "model.", true, false},
    {"qwen3", &QWEN, "model.", true, false},
    {"bidirectional_pplx_qwen3", &QWEN, "model.", true, false},
    {"mistral", &QWEN, "model.", true, false},
    /* EmbeddingGemma's file is Gemma3TextModel's (layers.{i}...) */
    {"gemma3_text", &GEMMA3, "model.", true, true},
};

/* c's scheme (its model_type's; a gated feed-forward's where the
 * model_type has one), or NULL. */
static const scheme *scheme_of(const enc_hf_config *c)
{
    /* JinaBERT qk-post-norm's (hfconfig.c's read_feed_forward: model_type bert) */
    static const scheme jina_code = {"bert", &JINA_CODE, "bert.", true, false};
    if (c->hp.double_residual)
        return &jina_code;
    const scheme *found = NULL;
    for (size_t i = 0; i < sizeof SCHEMES / sizeof *SCHEMES; i++)
        if (strcmp(SCHEMES[i].model_type, c->model_type) == 0 &&
            (!found || SCHEMES[i].gated == (c->hp.ffn != ENC_FFN_MLP)))
            found = &SCHEMES[i];
    return found;
}

/* ---- binding ----------------------------------------------------------------- */

/* The files a model is read from (one, or a directory's shards), and which
 * of their tensors are bound so far. */
typedef struct loader {
    st_file *files;
    bool **used; /* (n_files) x (each file's n_tensors) */
    bool *keep;  /* (n_files) the model reads the file's mapping: handed over (keep_maps) */
    size_t n_files;
    enc_error *err;
    /* The files' sha256, computed by a helper thread while the tensors are
     * bound (a BERT-base file hashes in about 0.3 s): paths[k] into
     * m->files[slots[k]] of model m. */
    enc_model *m;
    char **paths;
    size_t *slots, n_hash;
    pthread_t hasher;
    bool hashing;
    int hash_errno; /* the first failure's errno, and its path */
    const char *hash_failed;
    /* The queries' scale past 1 / sqrt(E), folded into the weights as
     * they are bound (bind_layer); 0: 1 */
    double q_scale;
    bool norm_plus_one; /* the scheme's */
} loader;

/* The tensor called name in any of the files (marking nothing), or NULL. */
static const st_tensor *find(const loader *ld, const char *name, size_t *file)
{
    for (size_t i = 0; i < ld->n_files; i++) {
        const st_tensor *t = st_find(&ld->files[i], name);
        if (t) {
            if (file)
                *file = i;
            return t;
        }
    }
    return NULL;
}

/* Formats a shape as "[a, b]" into buf. */
static void shape_str(char *buf, size_t size, const int64_t *shape, int ndim)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

/* Checkpoints converted from TensorFlow (bert-base-uncased's among them)
 * call a LayerNorm's weight and bias gamma and beta, which transformers
 * renames as it loads them: name's legacy form into buf, or false. */
static bool legacy_name(const char *name, char *buf, size_t size)
{
    static const char *const from[] = {"LayerNorm.weight", "LayerNorm.bias"};
    static const char *const to[] = {"LayerNorm.gamma", "LayerNorm.beta"};
    const size_t n = strlen(name);
    for (int i = 0; i < 2; i++) {
        const size_t k = strlen(from[i]);
        if (n >= k && strcmp(name + n - k, from[i]) == 0 && n - k + strlen(to[i]) < size) {
            snprintf(buf, size, "%.*s%s", (int)(n - k), name, to[i]);
            return true;
        }
    }
    return false;
}

/* Tensor name (rows x cols, cols 0 for 1-D), marked bound, its file in
 * *file: checks presence, dtype and shape.  NULL on an error naming it. */
static const st_tensor *lookup(loader *ld, const char *name, int64_t rows, int64_t cols,
                               size_t *file)
{
    size_t fi = 0;
    const st_tensor *t = find(ld, name, &fi);
    char legacy[300];
    if (!t && legacy_name(name, legacy, sizeof legacy))
        t = find(ld, legacy, &fi);
    if (!t) {
        enc_error_set(ld->err, ENC_EFORMAT, "missing tensor '%s'", name);
        return NULL;
    }
    ld->used[fi][t - ld->files[fi].tensors] = true;
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16) {
        enc_error_set(ld->err, ENC_EFORMAT, "tensor '%s' has dtype %s; F32, F16 or BF16 expected",
                      name, st_dtype_name(t->dtype));
        return NULL;
    }
    int64_t want[2] = {rows, cols};
    int want_ndim = cols ? 2 : 1;
    if (t->ndim != want_ndim || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got_s[96], want_s[64];
        shape_str(got_s, sizeof got_s, t->shape, t->ndim);
        shape_str(want_s, sizeof want_s, want, want_ndim);
        enc_error_set(ld->err, ENC_EFORMAT, "tensor '%s' has shape %s, expected %s", name, got_s,
                      want_s);
        return NULL;
    }
    *file = fi;
    return t;
}

/* The error for the first non-finite value of n floats at v, tensor name's. */
static int not_finite(loader *ld, const char *name, const float *v, size_t n)
{
    size_t i = 0;
    while (i < n && isfinite(v[i]))
        i++;
    return enc_error_set(ld->err, ENC_EFORMAT, "tensor '%s' has a non-finite value at index %zu",
                         name, i);
}

/* Binds tensor name (rows x cols, cols 0 for 1-D) into dst, as float32:
 * checks presence, dtype, shape and finiteness.  Returns 0 or an error
 * naming the tensor. */
static int bind(loader *ld, const char *name, float *dst, int64_t rows, int64_t cols)
{
    size_t fi = 0;
    const st_tensor *t = lookup(ld, name, rows, cols, &fi);
    if (!t)
        return ld->err->status;
    int rc = st_tensor_read_f32(t, dst, ld->err);
    if (rc < 0)
        return rc;
    st_release(&ld->files[fi], t); /* copied: its pages of the mapping go back */
    if (!embed_finite(dst, t->numel, EMBED_F32))
        return not_finite(ld, name, dst, t->numel);
    return ENC_OK;
}

/* Whether t (of file f) can be read in place as float32: F32, aligned, in
 * a mapping. */
static bool viewable(const st_file *f, const st_tensor *t)
{
    return t->dtype == ST_F32 && f->map && (uintptr_t)t->data % _Alignof(float) == 0;
}

/* Binds a Linear weight: copied into its slot of m's params when model_carve
 * made one (*w set), else read in its file's mapping, *w pointing there (the
 * file kept: keep_maps), once checked like bind's. */
static int bind_linear(loader *ld, enc_model *m, const char *name, const float **w, int64_t rows,
                       int64_t cols)
{
    if (*w)
        return bind(ld, name, model_own(m, *w), rows, cols);
    size_t fi = 0;
    const st_tensor *t = lookup(ld, name, rows, cols, &fi);
    if (!t)
        return ld->err->status;
    if (!viewable(&ld->files[fi], t)) /* stack_viewable said every one is */
        return enc_error_set(ld->err, ENC_EFORMAT, "tensor '%s' cannot be read in place", name);
    const float *v = (const float *)(const void *)t->data;
    if (!embed_finite(v, t->numel, EMBED_F32))
        return not_finite(ld, name, v, t->numel);
    st_release(&ld->files[fi], t); /* checked: model_pack reads it again, the forward may */
    ld->keep[fi] = true;
    *w = v;
    return ENC_OK;
}

/* The factor the queries take past 1 / sqrt(E) (bind_layer): DeBERTa's
 * 1 / sqrt(1 + c2p + p2c), times loader's q_scale. */
static double query_scale(const loader *ld, const enc_model *m)
{
    return (ld->q_scale > 0.0 ? ld->q_scale : 1.0) / sqrt((double)enc_dis_scale_factor(&m->hp.dis));
}

/* Binds every tensor of layer l, each named prefix + its name in nm. */
static int bind_layer(loader *ld, enc_model *m, int l, const char *prefix, const naming *nm)
{
    const enc_hparams *hp = &m->hp;
    const int64_t D = hp->d_model, F = hp->d_ff, KV = m->kv_dim, Q = m->qkv_dim, Z = m->q_dim;
    const int64_t F1 = enc_ffn_rows(hp); /* gated: input rows, then gate rows */
    const int64_t qn = hp->qk_norm_whole ? Z : m->head_dim, kn = hp->qk_norm_whole ? KV : qn;
    enc_layer *ly = &m->layers[l];
    char name[256];
    int rc = 0;
#define NAME(s) (snprintf(name, sizeof name, "%s%s", prefix, nm->name[s]), name)

    /* The in-projection: one stacked tensor, or q/k/v apart (required for
     * grouped-query attention, whose k and v are narrower than q). */
    if (nm->name[S_QKV_W] && (NAME(S_QKV_W), !nm->name[S_Q_W] || find(ld, name, NULL))) {
        if (hp->n_kv_heads != hp->n_heads)
            return enc_error_set(ld->err, ENC_EFORMAT,
                                 "tensor '%s' cannot serve n_kv_heads (%d) < n_heads (%d): "
                                 "give q_proj_weight, k_proj_weight and v_proj_weight",
                                 name, hp->n_kv_heads, hp->n_heads);
        if ((rc = bind_linear(ld, m, name, &ly->w_q, Q, D)) == 0) {
            ly->w_k = ly->w_q + Z * D; /* one tensor: its rows q's, then k's, then v's */
            ly->w_v = ly->w_k + KV * D;
        }
    } else if ((rc = bind_linear(ld, m, NAME(S_Q_W), &ly->w_q, Z, D)) < 0 ||
               (rc = bind_linear(ld, m, NAME(S_K_W), &ly->w_k, KV, D)) < 0 ||
               (rc = bind_linear(ld, m, NAME(S_V_W), &ly->w_v, KV, D)) < 0) {
        return rc;
    }
    /* A gated feed-forward's fused input projection of another height: say
     * what the height must be. */
    const bool halves = nm->name[S_1L_W] != NULL; /* the GLU's two halves apart */
    const st_tensor *t1 = find(ld, NAME(S_1_W), NULL);
    if (halves && rc == 0 && hp->ffn == ENC_FFN_MLP)
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "tensor '%s' is half of a gated feed-forward, but ffn is mlp", name);
    if (!halves && rc == 0 && hp->ffn != ENC_FFN_MLP && t1 && t1->ndim == 2 && t1->shape[0] != F1)
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "tensor '%s' has %lld rows; ffn %s needs 2 x d_ff = %lld (the "
                             "input's %lld rows, then the gate's)",
                             name, (long long)t1->shape[0], enc_ffn_name(hp->ffn), (long long)F1,
                             (long long)F);
    /* Layer 0's attention norm may be the identity: no ln1 to bind. */
    if (rc < 0 || (rc = bind_linear(ld, m, NAME(S_O_W), &ly->w_o, D, Z)) < 0 ||
        (!halves && (rc = bind_linear(ld, m, NAME(S_1_W), &ly->w_1, F1, D)) < 0) ||
        (halves && ((rc = bind_linear(ld, m, NAME(S_1_W), &ly->w_1, F, D)) < 0 ||
                    (rc = bind_linear(ld, m, NAME(S_1L_W), &ly->w_g, F, D)) < 0)) ||
        (rc = bind_linear(ld, m, NAME(S_2_W), &ly->w_2, D, F)) < 0 ||
        (ly->ln1_w && (rc = bind(ld, NAME(S_LN1_W), ly->ln1_w, D, 0)) < 0) ||
        (rc = bind(ld, NAME(S_LN2_W), ly->ln2_w, D, 0)) < 0 ||
        (ly->ln1_b && (rc = bind(ld, NAME(S_LN1_B), ly->ln1_b, D, 0)) < 0) ||
        (ly->ln2_b && (rc = bind(ld, NAME(S_LN2_B), ly->ln2_b, D, 0)) < 0) ||
        (ly->qn_w && (rc = bind(ld, NAME(S_QN_W), ly->qn_w, qn, 0)) < 0) ||
        (ly->kn_w && (rc = bind(ld, NAME(S_KN_W), ly->kn_w, kn, 0)) < 0) ||
        (ly->so1_w && (rc = bind(ld, NAME(S_SO1_W), ly->so1_w, D, 0)) < 0) ||
        (ly->so2_w && (rc = bind(ld, NAME(S_SO2_W), ly->so2_w, D, 0)) < 0))
        return rc;
    /* the biases of norms other than LN1 and LN2: where the scheme names them */
    const struct {
        float *b;
        slot s;
        int64_t n;
    } nbias[] = {{ly->qn_b, S_QN_B, qn},
                 {ly->kn_b, S_KN_B, kn},
                 {ly->so1_b, S_SO1_B, D},
                 {ly->so2_b, N_SLOTS, D}};
    for (size_t k = 0; k < sizeof nbias / sizeof *nbias; k++) {
        if (!nbias[k].b)
            continue;
        if (nbias[k].s == N_SLOTS || !nm->name[nbias[k].s])
            return enc_error_set(ld->err, ENC_EINVAL,
                                 "this checkpoint's architecture has no biases for its "
                                 "sublayers' output norms or its q and k norms");
        if ((rc = bind(ld, NAME(nbias[k].s), nbias[k].b, nbias[k].n, 0)) < 0)
            return rc;
    }
    if (!halves && F1 > F) /* one tensor: the gate's rows after the input's, or before */
        ly->w_g = ly->w_1 + F * D;
    if (nm->gate_last) {
        const float *up = ly->w_1;
        ly->w_1 = ly->w_g;
        ly->w_g = up;
    }
    if (ld->norm_plus_one) {
        float *const norms[] = {ly->ln1_w, ly->ln2_w, ly->so1_w, ly->so2_w, ly->qn_w, ly->kn_w};
        const int64_t sizes[] = {D, D, D, D, qn, kn};
        for (size_t k = 0; k < sizeof norms / sizeof *norms; k++)
            for (int64_t i = 0; norms[k] && i < sizes[k]; i++)
                norms[k][i] += 1.0f;
    }
    /* DeBERTa's scores are over sqrt(E (1 + c2p + p2c)), Gemma 3's over
     * sqrt(query_pre_attn_scalar): the query Linear takes the part past
     * sqrt(E), so that attention scales as any other's (its bias too,
     * below; the table's query rows through it as well), or with q's own
     * norm (which would undo it) that norm's weight */
    const double qs = query_scale(ld, m);
    const float q_scale = ly->qn_w ? 1.0f : (float)qs;
    for (int64_t i = 0; ly->qn_w && qs != 1.0 && i < qn; i++) {
        ly->qn_w[i] *= (float)qs;
        if (ly->qn_b)
            ly->qn_b[i] *= (float)qs;
    }
    if (q_scale != 1.0f) {
        float *wq = model_own(m, ly->w_q);
        for (int64_t i = 0; i < Z * D; i++)
            wq[i] *= q_scale;
    }
    if (!hp->bias)
        return ENC_OK;
    if (nm->name[S_QKV_B])
        rc = bind(ld, NAME(S_QKV_B), ly->b_qkv, Q, 0);
    else if ((rc = bind(ld, NAME(S_Q_B), ly->b_qkv, Z, 0)) < 0 ||
             (rc = bind(ld, NAME(S_K_B), ly->b_qkv + Z, KV, 0)) < 0)
        return rc;
    else
        rc = bind(ld, NAME(S_V_B), ly->b_qkv + Z + KV, KV, 0);
    for (int64_t i = 0; rc == 0 && q_scale != 1.0f && i < Z; i++)
        ly->b_qkv[i] *= q_scale;
    /* A Linear the architecture gives no bias (JinaBERT's gated_layers,
     * Qwen2's o_proj and MLP) keeps its zeros. */
    if (rc < 0 || (nm->name[S_O_B] && (rc = bind(ld, NAME(S_O_B), ly->b_o, D, 0)) < 0) ||
        (nm->name[S_1_B] && (rc = bind(ld, NAME(S_1_B), ly->b_1, halves ? F : F1, 0)) < 0) ||
        (halves && nm->name[S_1L_B] && (rc = bind(ld, NAME(S_1L_B), ly->b_1 + F, F, 0)) < 0) ||
        (nm->name[S_2_B] && (rc = bind(ld, NAME(S_2_B), ly->b_2, D, 0)) < 0))
        return rc;
#undef NAME
    return ENC_OK;
}

/* Layer l's names' prefix: model_prefix + nm's layer prefix, or
 * model_prefix alone (a single block's file without "layers.0."). */
static void layer_prefix(char *buf, size_t size, const char *model_prefix, const naming *nm, int l,
                         bool layer_prefixed)
{
    if (layer_prefixed)
        snprintf(buf, size, "%s%s%d.", model_prefix, nm->layer, l);
    else
        snprintf(buf, size, "%s", model_prefix);
}

/* Whether every Linear weight of the stack that the files hold can be read
 * in place (viewable): then model_carve leaves them out of params and
 * bind_linear points into the files' mappings; else each is copied (a
 * half-precision file is widened, an unaligned one copied), all of them,
 * as before.  A weight that is missing is bind's to report. */
static bool stack_viewable(const loader *ld, const enc_model *m, const char *model_prefix,
                           const naming *nm, bool layer_prefixed)
{
    if (query_scale(ld, m) != 1.0 && !m->hp.qk_norm)
        return false; /* the query Linear scaled in params (bind_layer) */
    static const int slots[] = {S_QKV_W, S_Q_W, S_K_W, S_V_W, S_O_W, S_1_W, S_1L_W, S_2_W};
    for (int l = 0; l < m->hp.n_layers; l++) {
        char prefix[128], name[300];
        layer_prefix(prefix, sizeof prefix, model_prefix, nm, l, layer_prefixed);
        for (size_t k = 0; k < sizeof slots / sizeof *slots; k++) {
            if (!nm->name[slots[k]])
                continue;
            snprintf(name, sizeof name, "%s%s", prefix, nm->name[slots[k]]);
            size_t fi = 0;
            const st_tensor *t = find(ld, name, &fi);
            if (t && !viewable(&ld->files[fi], t))
                return false;
        }
    }
    return true;
}

/* Carves m's params, the Linear weights left to the files when
 * stack_viewable, then binds every layer, named model_prefix + nm's layer
 * prefix + the slot, and the final norm, model_prefix + nm's final name. */
static int bind_layers(loader *ld, enc_model *m, const char *model_prefix, const naming *nm,
                       bool layer_prefixed)
{
    if (nm->variant) {
        char name[300];
        snprintf(name, sizeof name, "%s%s0.%s", model_prefix, nm->layer, nm->variant);
        if (find(ld, name, NULL))
            return enc_error_set(ld->err, ENC_EINVAL, "tensor '%s': %s is not supported", name,
                                 nm->variant_why);
    }
    const bool views = stack_viewable(ld, m, model_prefix, nm, layer_prefixed);
    if (model_carve(m, !views, ld->err) < 0)
        return ld->err->status;
    for (int l = 0; l < m->hp.n_layers; l++) {
        char prefix[128];
        layer_prefix(prefix, sizeof prefix, model_prefix, nm, l, layer_prefixed);
        if (bind_layer(ld, m, l, prefix, nm) < 0)
            return ld->err->status;
    }
    char name[256];
    const int64_t D = m->hp.d_model;
    if (m->final_w) {
        snprintf(name, sizeof name, "%s%sweight", model_prefix, nm->final ? nm->final : "");
        if (!nm->final || bind(ld, name, m->final_w, D, 0) < 0)
            return nm->final ? ld->err->status
                             : enc_error_set(ld->err, ENC_EINVAL,
                                             "this checkpoint's architecture has no final norm");
        for (int64_t i = 0; ld->norm_plus_one && i < D; i++)
            m->final_w[i] += 1.0f;
    }
    if (m->final_b) {
        snprintf(name, sizeof name, "%s%sbias", model_prefix, nm->final);
        if (bind(ld, name, m->final_b, D, 0) < 0)
            return ld->err->status;
    }
    if (m->dis_table) {
        snprintf(name, sizeof name, "%s%s", model_prefix, nm->dis_table ? nm->dis_table : "");
        if (!nm->dis_table || bind(ld, name, m->dis_table, 2 * (int64_t)m->hp.dis.span, D) < 0)
            return nm->dis_table ? ld->err->status
                                 : enc_error_set(ld->err, ENC_EINVAL,
                                                 "this checkpoint's architecture has no relative "
                                                 "attention");
        if (m->dis_ln_w && ((snprintf(name, sizeof name, "%s%sweight", model_prefix, nm->dis_norm),
                             bind(ld, name, m->dis_ln_w, D, 0) < 0) ||
                            (snprintf(name, sizeof name, "%s%sbias", model_prefix, nm->dis_norm),
                             bind(ld, name, m->dis_ln_b, D, 0) < 0)))
            return ld->err->status;
    }
    if (m->rel_bias) {
        snprintf(name, sizeof name, "%s%s", model_prefix, nm->rel_bias ? nm->rel_bias : "");
        if (!nm->rel_bias || bind(ld, name, m->rel_bias, m->hp.rel_buckets, m->hp.n_heads) < 0)
            return nm->rel_bias ? ld->err->status
                                : enc_error_set(ld->err, ENC_EINVAL,
                                                "this checkpoint's architecture has no relative "
                                                "position bias");
    }
    return ENC_OK;
}

/* Records dir's file name for m's list, its sha256 to come (hash_start). */
static int defer_hash(loader *ld, enc_model *m, const char *path, const char *name)
{
    char **paths = realloc(ld->paths, (ld->n_hash + 1) * sizeof *paths);
    if (paths)
        ld->paths = paths;
    size_t *slots = paths ? realloc(ld->slots, (ld->n_hash + 1) * sizeof *slots) : NULL;
    if (slots)
        ld->slots = slots;
    char *copy = slots ? strdup(path) : NULL;
    if (!copy || model_add_file(m, name, "") < 0) {
        free(copy);
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
    }
    ld->m = m;
    ld->paths[ld->n_hash] = copy;
    ld->slots[ld->n_hash++] = m->n_files - 1;
    return ENC_OK;
}

static void *hash_main(void *arg)
{
    loader *ld = arg;
    for (size_t k = 0; k < ld->n_hash && !ld->hash_failed; k++)
        if (sha256_file_hex(ld->paths[k], ld->m->files[ld->slots[k]].sha256) < 0) {
            ld->hash_errno = errno;
            ld->hash_failed = ld->paths[k];
        }
    return NULL;
}

/* Hashes the deferred files on a helper thread (or here, without one).
 * No file may be added to the model until hash_join. */
static void hash_start(loader *ld)
{
    if (ld->n_hash == 0)
        return;
    ld->hashing = pthread_create(&ld->hasher, NULL, hash_main, ld) == 0;
    if (!ld->hashing)
        hash_main(ld);
}

/* Waits for the hashes; an error names the file that could not be read. */
static int hash_join(loader *ld)
{
    if (ld->hashing)
        pthread_join(ld->hasher, NULL);
    ld->hashing = false;
    if (ld->hash_failed)
        return enc_error_set(ld->err, ENC_EIO, "cannot read '%s': %s", ld->hash_failed,
                             strerror(ld->hash_errno));
    return ENC_OK;
}

static void close_files(loader *ld)
{
    if (ld->hashing)
        pthread_join(ld->hasher, NULL);
    for (size_t k = 0; k < ld->n_hash; k++)
        free(ld->paths[k]);
    free(ld->paths);
    free(ld->slots);
    for (size_t i = 0; i < ld->n_files; i++) {
        st_close(&ld->files[i]);
        free(ld->used ? ld->used[i] : NULL);
    }
    free(ld->files);
    free(ld->used);
    free(ld->keep);
    *ld = (loader){.err = ld->err};
}

/* Hands the mappings the model reads (ld->keep), with their files, over to
 * m, which unmaps and closes them when it is freed; st_close then leaves
 * them. */
static int keep_maps(loader *ld, enc_model *m)
{
    for (size_t i = 0; i < ld->n_files; i++) {
        st_file *f = &ld->files[i];
        if (!ld->keep[i] || !f->map)
            continue;
        if (model_add_map(m, f->map, f->map_size, f->fd) < 0)
            return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
        f->map = NULL;
        f->fd = -1;
    }
    return ENC_OK;
}

/* Opens path as the next file of ld. */
static int open_file(loader *ld, const char *path)
{
    st_file *files = realloc(ld->files, (ld->n_files + 1) * sizeof *files);
    if (files)
        ld->files = files;
    bool **used = files ? realloc(ld->used, (ld->n_files + 1) * sizeof *used) : NULL;
    if (used)
        ld->used = used;
    bool *keep = used ? realloc(ld->keep, (ld->n_files + 1) * sizeof *keep) : NULL;
    if (keep)
        ld->keep = keep;
    if (!files || !used || !keep)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory reading '%s'", path);
    keep[ld->n_files] = false;
    st_file *f = &ld->files[ld->n_files];
    *f = (st_file){0};
    ld->used[ld->n_files] = NULL;
    int rc = st_open(f, path, ld->err);
    if (rc < 0)
        return rc;
    ld->n_files++;
    if (!(ld->used[ld->n_files - 1] = calloc(f->n_tensors + 1, sizeof **ld->used)))
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory reading '%s'", path);
    return ENC_OK;
}

/* Which setting leaves a PyTorch file's tensor name unbound, for the
 * message: "" when none says. */
static const char *unexpected_why(const enc_hparams *hp, const char *name)
{
    const bool norm = strstr(name, "norm") != NULL, bias = strstr(name, "bias") != NULL;
    if (strncmp(name, "norm.", 5) == 0 && !hp->final_norm)
        return " (the model has final_norm false)";
    if (hp->first_norm_identity && (strncmp(name, "layers.0.norm1.", 15) == 0 ||
                                    (hp->n_layers == 1 && strncmp(name, "norm1.", 6) == 0)))
        return " (the model has first_attn_norm false: layer 0 has no attention norm)";
    if (norm && bias && hp->bias && hp->norm == ENC_NORM_LAYERNORM_NOBIAS)
        return " (the model has norm layernorm_nobias)";
    if (bias && !hp->bias)
        return " (the model has bias false)";
    return "";
}

enc_model *enc_model_load(const char *path, const enc_hparams *hp, enc_error *err)
{
    loader ld = {.err = err};
    enc_model *m = model_new(hp, err);
    const char *base = strrchr(path, '/');
    if (!m || open_file(&ld, path) < 0 || defer_hash(&ld, m, path, base ? base + 1 : path) < 0)
        goto error;
    hash_start(&ld);
    const st_file *f = &ld.files[0];

    /* A single block may carry the stack's "layers.0." prefix. */
    bool prefixed = hp->n_layers > 1;
    for (size_t i = 0; i < f->n_tensors && !prefixed; i++)
        prefixed = strncmp(f->tensors[i].name, "layers.", 7) == 0;
    if (bind_layers(&ld, m, "", &TORCH, prefixed) < 0)
        goto error;
    for (size_t i = 0; i < f->n_tensors; i++) {
        if (!ld.used[0][i]) {
            const char *name = f->tensors[i].name;
            enc_error_set(err, ENC_EFORMAT, "unexpected tensor '%s'%s", name,
                          unexpected_why(hp, name));
            goto error;
        }
    }
    if (hash_join(&ld) < 0)
        goto error;
    snprintf(m->sha256, sizeof m->sha256, "%s", m->files[0].sha256);
    snprintf(m->source, sizeof m->source, "%s", path);
    if (keep_maps(&ld, m) < 0)
        goto error;
    close_files(&ld);
    model_pack(m);
    return m;
error:
    close_files(&ld);
    enc_model_free(m);
    return NULL;
}

/* ---- Hugging Face directories -------------------------------------------------- */

/* dir/name into buf; false when it does not fit. */
static bool join(char *buf, size_t size, const char *dir, const char *name)
{
    return (size_t)snprintf(buf, size, "%s/%s", dir, name) < size;
}

/* Whether name is a plain file name in a directory (no '/', not "." or ".."). */
static bool plain_name(const char *name)
{
    return name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* Adds dir/name to m's files, its sha256 to come (defer_hash). */
static int hash_file(loader *ld, enc_model *m, const char *dir, const char *name)
{
    char path[4200];
    if (!join(path, sizeof path, dir, name))
        return enc_error_set(ld->err, ENC_EINVAL, "model.dir: the path is too long");
    return defer_hash(ld, m, path, name);
}

/* Opens the directory's weights: model.safetensors, or the shards that
 * model.safetensors.index.json names (every tensor of its weight_map in the
 * shard it names).  Hashes each file into m. */
static int open_weights(loader *ld, enc_model *m, const char *dir)
{
    enc_error *err = ld->err;
    char path[4200];
    struct stat st;
    if (!join(path, sizeof path, dir, "model.safetensors"))
        return enc_error_set(err, ENC_EINVAL, "model.dir: the path is too long");
    if (stat(path, &st) == 0) {
        if (open_file(ld, path) < 0 || hash_file(ld, m, dir, "model.safetensors") < 0)
            return err->status;
        return ENC_OK;
    }
    if (!join(path, sizeof path, dir, "model.safetensors.index.json") || stat(path, &st) != 0)
        return enc_error_set(err, ENC_EIO,
                             "model.dir '%s': neither model.safetensors nor "
                             "model.safetensors.index.json is there",
                             dir);
    size_t len;
    char *text = file_read_whole(path, &len, err);
    if (!text)
        return err->status;
    sha256_hex(text, len, m->sha256);
    int rc = model_add_file(m, "model.safetensors.index.json", m->sha256) < 0
                 ? enc_error_set(err, ENC_ENOMEM, "out of memory")
                 : ENC_OK;
    json_error_t jerr;
    json_t *index = rc < 0 ? NULL : json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (rc < 0)
        return rc;
    if (!index)
        return enc_error_set(err, ENC_EFORMAT, "model.safetensors.index.json: line %d: %s",
                             jerr.line, jerr.text);
    json_t *map = json_object_get(index, "weight_map");
    const char *name;
    json_t *file;
    if (!json_is_object(map) || json_object_size(map) == 0) {
        rc =
            enc_error_set(err, ENC_EFORMAT, "model.safetensors.index.json: no 'weight_map' object");
        goto done;
    }
    /* The shards, each opened once, in the order the map first names them:
     * ld->files[i] is m->files[base + i]. */
    const size_t base = m->n_files;
    json_object_foreach(map, name, file)
    {
        const char *shard = json_string_value(file);
        if (!shard || !plain_name(shard)) {
            rc = enc_error_set(err, ENC_EFORMAT,
                               "model.safetensors.index.json: tensor '%s' names no file of "
                               "the directory",
                               name);
            goto done;
        }
        bool open = false;
        for (size_t i = base; i < m->n_files && !open; i++)
            open = strcmp(m->files[i].name, shard) == 0;
        if (open)
            continue;
        if (!join(path, sizeof path, dir, shard) || open_file(ld, path) < 0 ||
            hash_file(ld, m, dir, shard) < 0) {
            rc = err->status ? err->status : ENC_EINVAL;
            goto done;
        }
    }
    json_object_foreach(map, name, file)
    {
        size_t fi = 0;
        const st_tensor *t = find(ld, name, &fi);
        if (!t || strcmp(m->files[base + fi].name, json_string_value(file)) != 0) {
            rc = enc_error_set(err, ENC_EFORMAT,
                               "model.safetensors.index.json: tensor '%s' is not in %s", name,
                               json_string_value(file));
            goto done;
        }
    }
done:
    json_decref(index);
    return rc;
}

/* ---- the embedding module ----------------------------------------------------- */

/* The embedding module's tensors after the model's prefix, as transformers
 * names them (NULL: the family has none): the word table, the position and
 * token type tables, the LayerNorm's prefix, ELECTRA's projection's. */
typedef struct embed_naming {
    const char *word, *pos, *type, *norm, *proj;
    bool scaled; /* the word rows times sqrt(d_model) (Gemma3TextScaledWordEmbedding) */
} embed_naming;

static const embed_naming BERT_EMBED = {"embeddings.word_embeddings.weight",
                                        "embeddings.position_embeddings.weight",
                                        "embeddings.token_type_embeddings.weight",
                                        "embeddings.LayerNorm.",
                                        "embeddings_project.",
                                        false};
/* DistilBERT's and MPNet's: BERT's without token types */
static const embed_naming NO_TYPES_EMBED = {"embeddings.word_embeddings.weight",
                                            "embeddings.position_embeddings.weight",
                                            NULL,
                                            "embeddings.LayerNorm.",
                                            NULL,
                                            false};
static const embed_naming MODERNBERT_EMBED = {
    "embeddings.tok_embeddings.weight", NULL, NULL, "embeddings.norm.", NULL, false};
/* NomicBertEmbeddings (word and token types; positions are RoPE's) and
 * NomicBertModel's emb_ln after it */
static const embed_naming NOMIC_EMBED = {"embeddings.word_embeddings.weight",
                                         NULL,
                                         "embeddings.token_type_embeddings.weight",
                                         "emb_ln.",
                                         NULL,
                                         false};
/* Qwen2Model's, Qwen3Model's and MistralModel's embed_tokens: the word row alone */
static const embed_naming QWEN_EMBED = {"embed_tokens.weight", NULL, NULL, NULL, NULL, false};
/* Gemma3TextModel's embed_tokens: the word row times sqrt(hidden_size), a
 * float32 scalar */
static const embed_naming GEMMA3_EMBED = {"embed_tokens.weight", NULL, NULL, NULL, NULL, true};

/* model_type's embedding module's names. */
static const embed_naming *embed_naming_of(const char *model_type)
{
    return strcmp(model_type, "distilbert") == 0 || strcmp(model_type, "mpnet") == 0
               ? &NO_TYPES_EMBED
           : strcmp(model_type, "modernbert") == 0 ? &MODERNBERT_EMBED
           : strcmp(model_type, "nomic_bert") == 0 ? &NOMIC_EMBED
           : strncmp(model_type, "qwen", 4) == 0 || strcmp(model_type, "mistral") == 0 ||
                   strcmp(model_type, "bidirectional_pplx_qwen3") == 0
               ? &QWEN_EMBED
           : strcmp(model_type, "gemma3_text") == 0 ? &GEMMA3_EMBED
                                                    : &BERT_EMBED;
}

/* Binds name (rows x cols) into dst and lists it as the module's, by the
 * name the file gives it (a TensorFlow conversion's LayerNorm.gamma). */
static int bind_embed(loader *ld, embed_module *e, const char *name, float *dst, int64_t rows,
                      int64_t cols)
{
    char legacy[300];
    if (bind(ld, name, dst, rows, cols) < 0)
        return ld->err->status;
    const bool renamed = !find(ld, name, NULL) && legacy_name(name, legacy, sizeof legacy);
    if (embed_add_name(e, renamed ? legacy : name) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
    return ENC_OK;
}

/* The directory's embedding module (docs/model.md, "Token ids"), named
 * prefix + the family's names, into m->embed.  A directory without the word
 * table has none (embeddings in only, as before); with it, every other
 * tensor the module reads must be there, shaped as config.json says (a
 * sinusoidal DistilBERT without its position table gets the table
 * transformers computes).  The word table stays in the file's mapping,
 * which the module keeps; the rest is copied. */
static int bind_embeddings(loader *ld, enc_model *m, const enc_hf_config *c, const char *prefix)
{
    const bool mpnet = strcmp(c->model_type, "mpnet") == 0;
    const bool roberta = strcmp(c->model_type, "roberta") == 0 ||
                         strcmp(c->model_type, "xlm-roberta") == 0 ||
                         strcmp(c->model_type, "camembert") == 0 || mpnet;
    const bool distilbert = strcmp(c->model_type, "distilbert") == 0;
    const embed_naming *nm = embed_naming_of(c->model_type);
    const int D = m->hp.d_model;
    char name[300], word[256];
#define ENAME(s) (snprintf(name, sizeof name, "%s%s", prefix, (s)), name)
    snprintf(word, sizeof word, "%s%s", prefix, nm->word);
    size_t fi = 0;
    const st_tensor *t = find(ld, word, &fi);
    if (!t)
        return ENC_OK;
    /* The config's sizes; where it gives none, the tensors' own, as the
     * configuration classes' defaults would have to match them anyway. */
    embed_config cfg = {.embedding_size = c->embedding_size > 0 ? c->embedding_size : D,
                        .pad_token_id = c->pad_token_id,
                        .eps = m->hp.layer_norm_eps,
                        .norm_bias = enc_norm_has_bias(&m->hp),
                        .no_norm = !nm->norm,
                        .scale = nm->scaled ? (float)sqrt((double)D) : 0.0f};
    const int64_t E = cfg.embedding_size;
    cfg.vocab_size = c->vocab_size > 0 ? c->vocab_size : t->ndim == 2 ? (int)t->shape[0] : 0;
    if (m->hp.position != ENC_POS_NONE || !nm->pos || c->no_positions)
        cfg.pos = EMBED_POS_NONE; /* positions inside attention only: no table added */
    else
        cfg.pos = roberta                       ? EMBED_POS_ROBERTA
                  : distilbert && c->sinusoidal ? EMBED_POS_SINUSOIDAL
                                                : EMBED_POS_ABSOLUTE;
    const st_tensor *pt = cfg.pos == EMBED_POS_NONE ? NULL : find(ld, ENAME(nm->pos), NULL);
    cfg.max_positions = cfg.pos == EMBED_POS_NONE        ? 0
                        : c->max_position_embeddings > 0 ? c->max_position_embeddings
                        : pt && pt->ndim == 2            ? (int)pt->shape[0]
                                                         : 512; /* DistilBertConfig's */
    /* GTE's and DeBERTa's type_vocab_size 0 is no table (their embeddings add none) */
    const bool no_types = c->no_types && c->type_vocab_size == 0;
    const st_tensor *tt = nm->type && !no_types ? find(ld, ENAME(nm->type), NULL) : NULL;
    cfg.type_vocab_size = !nm->type || no_types    ? 0
                          : c->type_vocab_size > 0 ? c->type_vocab_size
                          : tt && tt->ndim == 2    ? (int)tt->shape[0]
                                                   : 2; /* BertConfig's */
    if ((roberta && cfg.pad_token_id < 0) || mpnet)
        cfg.pad_token_id = 1; /* RobertaConfig's; MPNetEmbeddings' padding_idx, whatever the file */
    if (cfg.pos == EMBED_POS_ROBERTA && cfg.pad_token_id >= cfg.max_positions)
        return enc_error_set(ld->err, ENC_EINVAL,
                             "config.json: pad_token_id (%d) is not below "
                             "max_position_embeddings (%d): RoBERTa's positions count from it",
                             cfg.pad_token_id, cfg.max_positions);
    if (E != D && !nm->proj)
        return enc_error_set(ld->err, ENC_EINVAL,
                             "config.json: the embeddings' width %lld is not %s's %d", (long long)E,
                             c->key_d_model, D);
    if (distilbert)
        cfg.eps = 1e-12f; /* its Embeddings' nn.LayerNorm(dim, eps=1e-12) */

    /* the word table: checked, then read where the file has it */
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "tensor '%s' has dtype %s; F32, F16 or BF16 expected", word,
                             st_dtype_name(t->dtype));
    if (t->ndim != 2 || t->shape[0] != cfg.vocab_size || t->shape[1] != E) {
        char got[96], want[64];
        const int64_t shape[2] = {cfg.vocab_size, E};
        shape_str(got, sizeof got, t->shape, t->ndim);
        shape_str(want, sizeof want, shape, 2);
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "tensor '%s' has shape %s, expected %s (config.json: vocab_size "
                             "%d, %s %lld)",
                             word, got, want, cfg.vocab_size,
                             nm->proj && strcmp(c->model_type, "electra") == 0 ? "embedding_size"
                                                                               : c->key_d_model,
                             (long long)E);
    }
    embed_module *e = m->embed = embed_new(&cfg, D, ld->err);
    if (!e)
        return ld->err->status;
    ld->used[fi][t - ld->files[fi].tensors] = true;
    st_file *f = &ld->files[fi];
    if (!f->map)
        return enc_error_set(ld->err, ENC_EIO, "tensor '%s' is not in a mapped file", word);
    const embed_dtype dtype = t->dtype == ST_F32   ? EMBED_F32
                              : t->dtype == ST_F16 ? EMBED_F16
                                                   : EMBED_BF16;
    /* checked in parts of 4 MiB, each part's pages given back once checked
     * (the whole of an XLM-R table, 768 MB, was the load's peak); rows are
     * then read from the open file as ids are looked up (embed_module) */
    const size_t row_bytes = t->nbytes / (size_t)cfg.vocab_size,
                 part = ((size_t)4 << 20) / row_bytes + 1;
    for (size_t r = 0; r < (size_t)cfg.vocab_size; r += part) {
        const size_t rows = (size_t)cfg.vocab_size - r < part ? (size_t)cfg.vocab_size - r : part;
        if (embed_check_word(e, t->data, dtype, r, rows, word, ld->err) < 0)
            return ld->err->status;
        st_release_bytes(f, t->data + r * row_bytes, rows * row_bytes);
    }
    st_release(f, t); /* the pages across parts' edges */
    embed_use_word(e, t->data, dtype);
    if (embed_add_name(e, word) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
    e->word_fd = f->fd;
    e->word_off = (uint64_t)(t->data - f->bytes);
    ld->keep[fi] = true; /* the model keeps the file's mapping and descriptor */

    /* the rest, copied as float32 */
    if (cfg.pos == EMBED_POS_SINUSOIDAL && !pt)
        embed_sinusoidal(e); /* what DistilBERT's _init_weights writes there */
    else if (cfg.pos != EMBED_POS_NONE &&
             bind_embed(ld, e, ENAME(nm->pos), e->pos, cfg.max_positions, E) < 0)
        return ld->err->status;
    if (cfg.type_vocab_size > 0 &&
        bind_embed(ld, e, ENAME(nm->type), e->type, cfg.type_vocab_size, E) < 0)
        return ld->err->status;
    char base[256];
    snprintf(base, sizeof base, "%s%s", prefix, nm->norm ? nm->norm : "");
    snprintf(name, sizeof name, "%sweight", base);
    if (e->ln_w && bind_embed(ld, e, name, e->ln_w, E, 0) < 0)
        return ld->err->status;
    snprintf(name, sizeof name, "%sbias", base);
    if (e->ln_b && bind_embed(ld, e, name, e->ln_b, E, 0) < 0)
        return ld->err->status;
    if (e->proj_w) { /* ElectraModel's embeddings_project, when embedding_size != hidden_size */
        snprintf(base, sizeof base, "%s%s", prefix, nm->proj);
        snprintf(name, sizeof name, "%sweight", base);
        if (bind_embed(ld, e, name, e->proj_w, D, E) < 0)
            return ld->err->status;
        snprintf(name, sizeof name, "%sbias", base);
        if (bind_embed(ld, e, name, e->proj_b, D, 0) < 0)
            return ld->err->status;
    }
#undef ENAME
    embed_finish(e, &m->hp);
    e->info.max_position_embeddings = c->max_position_embeddings; /* as config.json gives it */
    return ENC_OK;
}

/* ---- the task head ------------------------------------------------------------ */

/* The name a tensor has in the files (a TensorFlow conversion's gamma and
 * beta), for the head's list: name itself when it is there. */
static const char *file_name(const loader *ld, const char *name, char *buf, size_t size)
{
    return find(ld, name, NULL) || !legacy_name(name, buf, size) ? name : buf;
}

/* Binds one tensor of the head into dst and lists it. */
static int bind_head_tensor(loader *ld, model_head *h, const char *name, float *dst, int64_t rows,
                            int64_t cols)
{
    char legacy[300];
    if (bind(ld, name, dst, rows, cols) < 0)
        return ld->err->status;
    if (head_add_tensor(h, file_name(ld, name, legacy, sizeof legacy)) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
    return ENC_OK;
}

/* The decoder's weight (rows, cols): read in place where a file holds it
 * as float32 (*own unused), else widened into own; marked used, and listed
 * as the head's unless it is the word table (tied). */
static int bind_decoder(loader *ld, model_head *h, const char *name, bool tied, const float **w,
                        float *own, int64_t rows, int64_t cols)
{
    size_t fi = 0;
    const st_tensor *t = lookup(ld, name, rows, cols, &fi);
    if (!t)
        return ld->err->status;
    if (!tied && head_add_tensor(h, name) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
    if (!viewable(&ld->files[fi], t)) {
        *w = own;
        return bind(ld, name, own, rows, cols);
    }
    const float *v = (const float *)(const void *)t->data;
    if (!embed_finite(v, t->numel, EMBED_F32))
        return not_finite(ld, name, v, t->numel);
    st_release(&ld->files[fi], t);
    ld->keep[fi] = true;
    *w = v;
    return ENC_OK;
}

/* Row r (cols wide) of tensor t as float32 into dst: widened exactly. */
static void read_row(const st_tensor *t, int64_t r, int64_t cols, float *dst)
{
    const size_t at = (size_t)r * (size_t)cols;
    for (int64_t k = 0; k < cols; k++) {
        uint16_t half;
        switch (t->dtype) {
        case ST_F32:
            memcpy(&dst[k], t->data + (at + (size_t)k) * 4, 4);
            break;
        case ST_F16:
            memcpy(&half, t->data + (at + (size_t)k) * 2, 2);
            dst[k] = st_f16_to_f32(half);
            break;
        default: /* BF16: lookup allows no other */
            memcpy(&half, t->data + (at + (size_t)k) * 2, 2);
            dst[k] = st_bf16_to_f32(half);
            break;
        }
    }
}

/* A causal LM's reranker (hfhead.c's score_head): the score's weight row,
 * lm_head's (or, tied and not saved, the word table's) row of the first
 * score id minus the second's, into h->mem's D floats.  One subtraction
 * rounded once: logit(a) - logit(b) = (w_a - w_b) . h. */
static int bind_score(loader *ld, enc_model *m, model_head *h, const hf_head_names *nm,
                      const char *word, int64_t V)
{
    const int64_t D = m->hp.d_model;
    const bool saved = find(ld, nm->out_w, NULL) != NULL;
    const char *name = saved || !nm->tied ? nm->out_w : word;
    size_t fi = 0;
    const st_tensor *t = lookup(ld, name, V, D, &fi);
    if (!t)
        return ld->err->status;
    if (head_alloc(h, (size_t)(3 * D)) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory for the head");
    const enc_head_info *in = &h->info;
    float *w = h->mem, *a = w + D, *b = a + D;
    read_row(t, in->score_ids[0], D, a);
    if (in->n_score_ids > 1)
        read_row(t, in->score_ids[1], D, b); /* else b stays zero */
    for (int64_t k = 0; k < D; k++) {
        w[k] = (float)((double)a[k] - (double)b[k]);
        if (!isfinite(a[k]) || !isfinite(b[k]))
            return enc_error_set(ld->err, ENC_EFORMAT,
                                 "tensor '%s' has a non-finite value in the score tokens' rows",
                                 name);
    }
    if (saved && head_add_tensor(h, name) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
    if (saved)
        st_release(&ld->files[fi], t); /* two rows read: the rest's pages go back */
    h->info.tied = !saved;
    h->out = (head_linear){.N = 1, .K = (int)D, .w = w};
    head_finish(h);
    return ENC_OK;
}

/* The head config.json's architectures names (hfhead.c), its tensors bound
 * (docs/model.md, "Task heads"): the dense, norm and last Linear copied into
 * the head's own memory, a masked LM's decoder read where a file holds it
 * (the word table, when tied and not saved again) or widened. */
static int bind_head(loader *ld, enc_model *m, const char *dir, const enc_hf_config *c,
                     const char *prefix)
{
    hf_head_names nm;
    model_head *h = NULL;
    if (hf_head_read(dir, c, &m->hp, prefix, &h, &nm, m->klass, &m->head_unsupported, ld->err) < 0)
        return ld->err->status;
    if (!h)
        return ENC_OK;
    m->head = h;
    const int64_t D = m->hp.d_model, N = nm.dense[0] ? nm.dense_out : D, C = h->out.N;
    char word[300], name[300];
    const bool lm = h->info.kind == ENC_HEAD_MASKED_LM;
    snprintf(word, sizeof word, "%s%s", prefix, embed_naming_of(c->model_type)->word);
    if (h->info.n_score_ids > 0)
        return bind_score(ld, m, h, &nm, word, c->vocab_size);
    const bool saved = find(ld, nm.out_w, NULL) != NULL;
    const char *dec = nm.tied ? word : nm.out_w;
    /* the head's own first tensor: a masked LM's transform (its decoder
     * may be the word table), else the output layer */
    char own[300];
    if (lm && nm.dense[0])
        snprintf(own, sizeof own, "%sweight", nm.dense);
    else
        snprintf(own, sizeof own, "%s", nm.out_w);
    if (!find(ld, own, NULL)) {
        /* none of it: a base model saved under a task class's name
         * (sentence-transformers' all-mpnet-base-v2 says MPNetForMaskedLM),
         * which transformers' AutoModel and sentence-transformers load as
         * the encoder: so is it served, the head left out */
        snprintf(m->head_note, sizeof m->head_note,
                 "its tensors (%.100s, ...) are not in the files", own);
        m->head_unsupported = true;
        head_free(h);
        m->head = NULL;
        return ENC_OK;
    }
    if (lm && ((nm.tied && !m->embed) || (!nm.tied && !saved))) {
        /* no decoder in the files (transformers would draw one at random):
         * the encoder is served, the head left out and its tensors listed
         * as ignored */
        snprintf(m->head_note, sizeof m->head_note, "its decoder %.100s is not in the files",
                 nm.tied ? word : nm.out_w);
        m->head_unsupported = true;
        head_free(h);
        m->head = NULL;
        return ENC_OK;
    }
    if (lm && N != (m->embed ? m->embed->cfg.embedding_size : N))
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "%s's decoder reads %lld-wide rows; the word table's are %d wide",
                             h->architecture, (long long)N, m->embed->cfg.embedding_size);
    /* the floats: dense (N, D) + N, norm 2N, the out bias C, and a
     * classifier's weight (C, N) or room to widen a decoder */
    /* the decoder needs room only when it cannot be read in place */
    size_t dfi = 0;
    const st_tensor *dt = lm ? find(ld, dec, &dfi) : NULL;
    const bool in_place = dt && viewable(&ld->files[dfi], dt);
    const size_t floats = (nm.dense[0] ? (size_t)(N * D + N) : 0) + (nm.norm[0] ? 2 * N : 0) +
                          (size_t)C + (in_place ? 0 : (size_t)(C * N));
    if (head_alloc(h, floats) < 0)
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory for the head");
    float *p = h->mem;
    int rc = ENC_OK;
    if (nm.dense[0]) {
        h->dense = (head_linear){.N = (int)N, .K = (int)D, .w = p};
        snprintf(name, sizeof name, "%sweight", nm.dense);
        if ((rc = bind_head_tensor(ld, h, name, p, N, D)) < 0)
            return rc;
        p += N * D;
        if (nm.dense_bias) {
            snprintf(name, sizeof name, "%sbias", nm.dense);
            if ((rc = bind_head_tensor(ld, h, name, p, N, 0)) < 0)
                return rc;
            h->dense.b = p;
        }
        p += N;
    }
    if (nm.norm[0]) {
        snprintf(name, sizeof name, "%sweight", nm.norm);
        if ((rc = bind_head_tensor(ld, h, name, p, N, 0)) < 0)
            return rc;
        h->ln_w = p;
        if (nm.norm_bias) {
            snprintf(name, sizeof name, "%sbias", nm.norm);
            if ((rc = bind_head_tensor(ld, h, name, p + N, N, 0)) < 0)
                return rc;
            h->ln_b = p + N;
        }
        p += 2 * N;
    }
    h->out.K = (int)N;
    if (nm.out_b[0]) {
        /* a masked LM's bias may be saved twice (cls.predictions.bias and
         * decoder.bias, one parameter in transformers): the head's is read,
         * the other checked (dtype, shape) and listed, not read */
        size_t fi = 0;
        if ((rc = bind_head_tensor(ld, h, nm.out_b, p, C, 0)) < 0)
            return rc;
        if (nm.out_b2[0] && find(ld, nm.out_b2, NULL) &&
            (!lookup(ld, nm.out_b2, C, 0, &fi) || head_add_tensor(h, nm.out_b2) < 0))
            return ld->err->status ? ld->err->status
                                   : enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
        h->out.b = p;
    }
    p += C;
    if (lm) {
        /* tied: the word table; a decoder saved again (the same values) is
         * checked and listed, not read */
        size_t fi = 0;
        h->info.tied = nm.tied;
        if (nm.tied && saved &&
            (!lookup(ld, nm.out_w, C, N, &fi) || head_add_tensor(h, nm.out_w) < 0))
            return ld->err->status ? ld->err->status
                                   : enc_error_set(ld->err, ENC_ENOMEM, "out of memory");
        rc = bind_decoder(ld, h, dec, nm.tied, &h->out.w, p, C, N);
    } else {
        h->out.w = p;
        rc = bind_head_tensor(ld, h, nm.out_w, p, C, N);
    }
    if (rc == 0)
        head_finish(h);
    return rc;
}

/* voyage-4-nano's projection, as TEI's qwen3.rs reads it: with
 * config.json's num_labels, a linear.weight (num_labels, hidden_size)
 * beside the model's tensors (no prefix), no bias, through which every
 * token state goes after the final norm.  Without num_labels the tensor is
 * listed as ignored, as TEI skips it. */
static int bind_projection(loader *ld, enc_model *m, const enc_hf_config *c)
{
    static const char name[] = "linear.weight";
    if (c->num_labels <= 0 || !find(ld, name, NULL))
        return ENC_OK;
    const int D = m->hp.d_model, P = c->num_labels;
    if (!(m->project.weight = malloc((size_t)P * (size_t)D * sizeof *m->project.weight)))
        return enc_error_set(ld->err, ENC_ENOMEM, "out of memory for %s", name);
    m->project.in = D;
    m->project.out = P;
    m->n_params += (size_t)P * (size_t)D;
    return bind(ld, name, m->project.weight, P, D);
}

enc_model *enc_model_load_dir(const char *dir, const enc_hparams *hp, enc_error *err)
{
    enc_hf_config c;
    loader ld = {.err = err};
    enc_model *m = NULL;
    if (enc_hf_config_read(dir, &c, err) < 0 || !(m = model_new(hp, err)))
        return NULL;
    const scheme *fam = scheme_of(&c);
    if (c.query_pre_attn_scalar > 0.0)
        ld.q_scale = sqrt((double)enc_head_dim(hp) / c.query_pre_attn_scalar);
    if (!fam) { /* hfconfig.c read a model_type SCHEMES lacks */
        enc_error_set(err, ENC_EINVAL, "config.json: no tensor names for model_type '%s'",
                      c.model_type);
        goto error;
    }
    ld.norm_plus_one = fam->norm_plus_one;
    if (hash_file(&ld, m, dir, "config.json") < 0 || open_weights(&ld, m, dir) < 0)
        goto error;
    hash_start(&ld); /* while the tensors are bound */

    /* A task checkpoint (BertForMaskedLM) names the base model's tensors
     * with its prefix ("bert."); the base model (BertModel) without. */
    char first[256];
    const char *prefix = NULL;
    snprintf(first, sizeof first, "%s0.%s", fam->names->layer,
             fam->names->name[S_Q_W] ? fam->names->name[S_Q_W] : fam->names->name[S_QKV_W]);
    for (int p = 0; p < 2 && !prefix; p++) {
        char name[300];
        snprintf(name, sizeof name, "%s%s", p ? fam->prefix : "", first);
        if (find(&ld, name, NULL))
            prefix = p ? fam->prefix : "";
    }
    if (!prefix) {
        enc_error_set(err, ENC_EFORMAT, "missing tensor '%s' (or '%s%s')", first, fam->prefix,
                      first);
        goto error;
    }
    if (bind_layers(&ld, m, prefix, fam->names, true) < 0 ||
        bind_embeddings(&ld, m, &c, prefix) < 0 || bind_head(&ld, m, dir, &c, prefix) < 0 ||
        bind_projection(&ld, m, &c) < 0)
        goto error;
    /* The count is the file's: the zeros of a Linear the architecture gives
     * no bias (JinaBERT's gated_layers, Qwen2's o_proj and MLP) are left out. */
    const size_t unbiased = (fam->names->name[S_1_B] ? 0 : (size_t)enc_ffn_rows(&m->hp)) +
                            (fam->names->name[S_O_B] ? 0 : (size_t)m->hp.d_model) +
                            (fam->names->name[S_2_B] ? 0 : (size_t)m->hp.d_model);
    if (m->hp.bias)
        m->n_params -= unbiased * (size_t)m->hp.n_layers;

    /* The rest: a tensor inside the encoder stack left unbound is refused
     * (a layer past n_layers, a part attnd does not compute); the
     * pooler and task heads (and an embedding table the module does not
     * read: ALiBi's or RoPE's BERT has no position table) are listed as
     * ignored. */
    char stack[128];
    snprintf(stack, sizeof stack, "%s%s", prefix, fam->names->layer);
    for (size_t i = 0; i < ld.n_files; i++) {
        for (size_t k = 0; k < ld.files[i].n_tensors; k++) {
            const char *name = ld.files[i].tensors[k].name;
            if (ld.used[i][k])
                continue;
            if (strncmp(name, stack, strlen(stack)) == 0) {
                enc_error_set(err, ENC_EFORMAT, "unexpected tensor '%s' (config.json: %s %d)", name,
                              c.key_n_layers, hp->n_layers);
                goto error;
            }
            if (model_add_ignored(m, name) < 0) {
                enc_error_set(err, ENC_ENOMEM, "out of memory");
                goto error;
            }
        }
    }
    if (hash_join(&ld) < 0)
        goto error;
    for (size_t i = 0; i < m->n_files && !m->sha256[0]; i++) /* the weights', or the index's */
        if (strcmp(m->files[i].name, "model.safetensors") == 0)
            snprintf(m->sha256, sizeof m->sha256, "%s", m->files[i].sha256);
    model_sort_files(m);
    snprintf(m->architecture, sizeof m->architecture, "%s", c.model_type);
    snprintf(m->source, sizeof m->source, "%s", dir);
    if (keep_maps(&ld, m) < 0)
        goto error;
    close_files(&ld);
    model_pack(m);
    return m;
error:
    close_files(&ld);
    enc_model_free(m);
    return NULL;
}
