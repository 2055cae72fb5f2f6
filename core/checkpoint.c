/* checkpoint.c - a model's parameters bound from safetensors files by name:
 * one PyTorch file (nn.TransformerEncoder's state_dict names), or a Hugging
 * Face encoder directory (config.json + model.safetensors, or a sharded
 * model.safetensors.index.json), through one table per naming scheme. */
#include "internal.h"
#include "safetensors.h"
#include "sha256.h"

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
    S_1_W,
    S_1_B,
    S_2_W,
    S_2_B,
    S_LN1_W, /* after attention (post-norm), or before it (pre-norm) */
    S_LN1_B,
    S_LN2_W, /* after the feed-forward (post-norm), or before it */
    S_LN2_B,
    N_SLOTS
} slot;

/* A naming scheme: what a block's names start with (then its index and a
 * dot) and each slot's name after that; NULL where the scheme has no such
 * tensor. */
typedef struct naming {
    const char *layer;
    const char *name[N_SLOTS];
    const char *final; /* the norm after the last layer: its weight's and bias's prefix */
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
                             "norm."};

/* transformers' BertLayer (BertSelfAttention, BertSelfOutput,
 * BertIntermediate, BertOutput), also RoBERTa's, XLM-R's, CamemBERT's and
 * ELECTRA's. */
static const naming BERT = {"encoder.layer.",
                            {[S_Q_W] = "attention.self.query.weight",
                             [S_Q_B] = "attention.self.query.bias",
                             [S_K_W] = "attention.self.key.weight",
                             [S_K_B] = "attention.self.key.bias",
                             [S_V_W] = "attention.self.value.weight",
                             [S_V_B] = "attention.self.value.bias",
                             [S_O_W] = "attention.output.dense.weight",
                             [S_O_B] = "attention.output.dense.bias",
                             [S_1_W] = "intermediate.dense.weight",
                             [S_1_B] = "intermediate.dense.bias",
                             [S_2_W] = "output.dense.weight",
                             [S_2_B] = "output.dense.bias",
                             [S_LN1_W] = "attention.output.LayerNorm.weight",
                             [S_LN1_B] = "attention.output.LayerNorm.bias",
                             [S_LN2_W] = "output.LayerNorm.weight",
                             [S_LN2_B] = "output.LayerNorm.bias"},
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
                                  "final_norm."};

/* What a family's config.json says beyond the sizes (positions, the
 * fields it refuses, the embedding module's; ModernBERT's block), into c. */
typedef int (*read_extras)(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_bert(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_distilbert(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_modernbert(const json_t *root, enc_hf_config *c, enc_error *err);

/* The architectures a directory's config.json may name, their naming, the
 * base model's prefix in task checkpoints, and where config.json keeps each
 * hyperparameter.  gated: the feed-forward is a GLU whose activation the
 * activation field names (silu: SwiGLU). */
typedef struct family {
    const char *model_type;
    const naming *names;
    const char *prefix; /* "bert." in BertForMaskedLM's names */
    const char *d_model, *n_heads, *d_ff, *n_layers, *activation, *eps;
    read_extras extras;
    bool gated;
} family;

static const family FAMILIES[] = {
    {"bert", &BERT, "bert.", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_act", "layer_norm_eps", read_bert, false},
    {"roberta", &BERT, "roberta.", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_act", "layer_norm_eps", read_bert, false},
    {"xlm-roberta", &BERT, "roberta.", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_act", "layer_norm_eps", read_bert, false},
    {"camembert", &BERT, "roberta.", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_act", "layer_norm_eps", read_bert, false},
    {"electra", &BERT, "electra.", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_act", "layer_norm_eps", read_bert, false},
    /* DistilBERT's LayerNorms are nn.LayerNorm(eps=1e-12), not configurable. */
    {"distilbert", &DISTILBERT, "distilbert.", "dim", "n_heads", "hidden_dim", "n_layers",
     "activation", NULL, read_distilbert, false},
    /* ModernBertForMaskedLM names the stack model.layers.{i}...; ModernBertModel layers.{i}... */
    {"modernbert", &MODERNBERT, "model.", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_activation", "norm_eps", read_modernbert, true},
};
#define N_FAMILIES     (sizeof FAMILIES / sizeof *FAMILIES)
#define DISTILBERT_EPS 1e-12f

static const family *family_of(const char *model_type)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (strcmp(FAMILIES[i].model_type, model_type) == 0)
            return &FAMILIES[i];
    return NULL;
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

/* Binds every tensor of layer l, each named prefix + its name in nm. */
static int bind_layer(loader *ld, enc_model *m, int l, const char *prefix, const naming *nm)
{
    const enc_hparams *hp = &m->hp;
    const int64_t D = hp->d_model, F = hp->d_ff, KV = m->kv_dim, Q = m->qkv_dim;
    const int64_t F1 = enc_ffn_rows(hp); /* gated: input rows, then gate rows */
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
            ly->w_k = ly->w_q + D * D; /* one tensor: its rows q's, then k's, then v's */
            ly->w_v = ly->w_k + KV * D;
        }
    } else if ((rc = bind_linear(ld, m, NAME(S_Q_W), &ly->w_q, D, D)) < 0 ||
               (rc = bind_linear(ld, m, NAME(S_K_W), &ly->w_k, KV, D)) < 0 ||
               (rc = bind_linear(ld, m, NAME(S_V_W), &ly->w_v, KV, D)) < 0) {
        return rc;
    }
    /* A gated feed-forward's fused input projection of another height: say
     * what the height must be. */
    const st_tensor *t1 = find(ld, NAME(S_1_W), NULL);
    if (rc == 0 && hp->ffn != ENC_FFN_MLP && t1 && t1->ndim == 2 && t1->shape[0] != F1)
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "tensor '%s' has %lld rows; ffn %s needs 2 x d_ff = %lld (the "
                             "input's %lld rows, then the gate's)",
                             name, (long long)t1->shape[0], enc_ffn_name(hp->ffn), (long long)F1,
                             (long long)F);
    /* Layer 0's attention norm may be the identity: no ln1 to bind. */
    if (rc < 0 || (rc = bind_linear(ld, m, NAME(S_O_W), &ly->w_o, D, D)) < 0 ||
        (rc = bind_linear(ld, m, NAME(S_1_W), &ly->w_1, F1, D)) < 0 ||
        (rc = bind_linear(ld, m, NAME(S_2_W), &ly->w_2, D, F)) < 0 ||
        (ly->ln1_w && (rc = bind(ld, NAME(S_LN1_W), ly->ln1_w, D, 0)) < 0) ||
        (rc = bind(ld, NAME(S_LN2_W), ly->ln2_w, D, 0)) < 0 ||
        (ly->ln1_b && (rc = bind(ld, NAME(S_LN1_B), ly->ln1_b, D, 0)) < 0) ||
        (ly->ln2_b && (rc = bind(ld, NAME(S_LN2_B), ly->ln2_b, D, 0)) < 0))
        return rc;
    if (!hp->bias)
        return ENC_OK;
    if (nm->name[S_QKV_B])
        rc = bind(ld, NAME(S_QKV_B), ly->b_qkv, Q, 0);
    else if ((rc = bind(ld, NAME(S_Q_B), ly->b_qkv, D, 0)) < 0 ||
             (rc = bind(ld, NAME(S_K_B), ly->b_qkv + D, KV, 0)) < 0)
        return rc;
    else
        rc = bind(ld, NAME(S_V_B), ly->b_qkv + D + KV, KV, 0);
    if (rc < 0 || (rc = bind(ld, NAME(S_O_B), ly->b_o, D, 0)) < 0 ||
        (rc = bind(ld, NAME(S_1_B), ly->b_1, F1, 0)) < 0 ||
        (rc = bind(ld, NAME(S_2_B), ly->b_2, D, 0)) < 0)
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
    static const int slots[] = {S_QKV_W, S_Q_W, S_K_W, S_V_W, S_O_W, S_1_W, S_2_W};
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
    }
    if (m->final_b) {
        snprintf(name, sizeof name, "%s%sbias", model_prefix, nm->final);
        if (bind(ld, name, m->final_b, D, 0) < 0)
            return ld->err->status;
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

/* src as printable ASCII for a message (others as '?'), cut to size. */
static void printable(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    for (; src[n] && n + 1 < size; n++)
        dst[n] = src[n] >= 0x20 && src[n] < 0x7f ? src[n] : '?';
    dst[n] = '\0';
}

/* dir/name into buf; false when it does not fit. */
static bool join(char *buf, size_t size, const char *dir, const char *name)
{
    return (size_t)snprintf(buf, size, "%s/%s", dir, name) < size;
}

char *model_read_whole(const char *path, size_t *len, enc_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        enc_error_set(err, ENC_EIO, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            char *grown = cap < (64u << 20) ? realloc(buf, cap = cap ? 2 * cap : 8192) : NULL;
            if (!grown) {
                free(buf);
                fclose(fp);
                enc_error_set(err, ENC_EFORMAT, "'%s' is over 64 MiB or memory is short", path);
                return NULL;
            }
            buf = grown;
        }
        const size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
    }
    const bool bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(buf);
        enc_error_set(err, ENC_EIO, "cannot read '%s'", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* ---- reading config.json ----------------------------------------------------- */

/* config.json as transformers 4.x and 5.x write it (PretrainedConfig's and
 * PreTrainedConfig's save_pretrained: every field of the model's
 * configuration class, sorted).  A field that changes what transformers
 * computes in eval mode is honoured or refused naming it; the others
 * (dropouts, initialisation, the heads', runtime switches, token ids other
 * than the padding one) are not read; dtype / torch_dtype only for
 * model.dtype auto (c->dtype: attnd reads each tensor's own dtype).  docs/model.md has the
 * table. */

/* An integer field of config.json in *out (1..ENC_MAX_DIM-ish bounds are
 * enc_hparams_validate's). */
static int int_field(const json_t *root, const char *key, int *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v)
        return enc_error_set(err, ENC_EINVAL, "config.json: missing '%s'", key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 30))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not a positive integer", key);
    *out = (int)json_integer_value(v);
    return ENC_OK;
}

/* An optional integer field, at least lo (0 or 1), in *out; absent or null:
 * *out unchanged. */
static int opt_int_field(const json_t *root, const char *key, int lo, int *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return ENC_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > (1 << 30))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not a %s integer", key,
                             lo > 0 ? "positive" : "non-negative");
    *out = (int)json_integer_value(v);
    return ENC_OK;
}

/* A positive number field of obj in *out, where naming obj in messages
 * ("" for the top level, "rope_parameters.sliding_attention." for an
 * entry); absent or null: *out unchanged.  *given (when non-NULL) says
 * whether it was there. */
static int number_in(const json_t *obj, const char *where, const char *key, double *out,
                     bool *given, enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (given)
        *given = false;
    if (!v || json_is_null(v))
        return ENC_OK;
    if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s%s' is not a positive number", where,
                             key);
    *out = json_number_value(v);
    if (given)
        *given = true;
    return ENC_OK;
}

/* A positive number field of config.json in *out; absent: *out unchanged. */
static int number_field(const json_t *root, const char *key, double *out, enc_error *err)
{
    return number_in(root, "", key, out, NULL, err);
}

/* A boolean field of config.json in *out; absent or null: dflt. */
static int bool_field(const json_t *root, const char *key, bool dflt, bool *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return ENC_OK;
    }
    if (!json_is_boolean(v))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not true or false", key);
    *out = json_is_true(v);
    return ENC_OK;
}

/* Whether config.json has key with a value other than null. */
static bool given(const json_t *root, const char *key)
{
    const json_t *v = json_object_get(root, key);
    return v && !json_is_null(v);
}

/* transformers' ACT2FN names (activations.py) attnd computes: one function
 * under several names. */
static const struct {
    const char *name;
    enc_activation act;
} ACTIVATIONS[] = {
    {"gelu", ENC_ACT_GELU},                   /* GELUActivation: nn.functional.gelu, erf */
    {"gelu_python", ENC_ACT_GELU},            /* the same written with torch.erf */
    {"gelu_new", ENC_ACT_GELU_TANH},          /* NewGELUActivation: the tanh form */
    {"gelu_pytorch_tanh", ENC_ACT_GELU_TANH}, /* gelu(approximate="tanh") */
    {"gelu_fast", ENC_ACT_GELU_TANH},         /* the tanh form, sqrt(2/pi) to 10 digits */
    {"gelu_accurate", ENC_ACT_GELU_TANH},     /* AccurateGELUActivation: the tanh form */
    {"relu", ENC_ACT_RELU},                   /* not for a gated feed-forward */
};
#define ACTIVATION_LIST "gelu, gelu_python, gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_accurate"

/* One entry of a rope_parameters object (transformers 5's RopeParameters),
 * where naming it in messages ("rope_parameters.", or
 * "rope_parameters.sliding_attention."): its rope_type (or the older
 * "type") must be default (a scaled RoPE is refused); its rope_theta and
 * partial_rotary_factor into *theta / *factor when given (*has_theta,
 * *has_factor say so).  The default RoPE reads no other key. */
static int rope_entry(const json_t *e, const char *where, double *theta, bool *has_theta,
                      double *factor, bool *has_factor, enc_error *err)
{
    if (!json_is_object(e))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%.*s' is not an object",
                             (int)strlen(where) - 1, where);
    const char *tkey = "rope_type";
    const json_t *t = json_object_get(e, tkey);
    if (!t || json_is_null(t))
        t = json_object_get(e, tkey = "type");
    if (t && !json_is_null(t)) {
        if (!json_is_string(t))
            return enc_error_set(err, ENC_EINVAL, "config.json: '%s%s' is not a string", where,
                                 tkey);
        if (strcmp(json_string_value(t), "default") != 0) {
            char shown[64];
            printable(shown, sizeof shown, json_string_value(t));
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: %s%s '%s' is not supported (default: attnd "
                                 "computes RoPE without scaling)",
                                 where, tkey, shown);
        }
    }
    int rc;
    if ((rc = number_in(e, where, "rope_theta", theta, has_theta, err)) < 0 ||
        (rc = number_in(e, where, "partial_rotary_factor", factor, has_factor, err)) < 0)
        return rc;
    return ENC_OK;
}

/* Positions inside attention (the BERT family and DistilBERT):
 * position_embedding_type absolute (or absent: the embeddings carry them)
 * is none; relative_key and relative_key_query (transformers 4.x's
 * BertSelfAttention: learned distance embeddings added to the scores) are
 * refused; alibi is ALiBi, rotary or rope is RoPE (both attnd's own:
 * transformers' classes of this family have neither) with its base and
 * partial_rotary_factor where transformers 5's RotaryEmbeddingConfigMixin
 * looks first, the one rope_parameters dict (this family has no
 * layer_types, so no per-layer-type entries), then the top-level rope_theta
 * (or rotary_emb_base; 10000 by default) and partial_rotary_factor 4.x
 * writes.  A rope_parameters of another rope_type, or with per-layer-type
 * entries, is refused whatever the position type, as rope_scaling is
 * (read_common). */
static int read_positions(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    double theta = hp->rope_theta, factor = 1.0;
    bool theta_given = false, factor_given = false;
    int rc;
    const json_t *rp = json_object_get(root, "rope_parameters");
    if (rp && !json_is_null(rp)) { /* checked whatever the position type, as rope_scaling */
        if (json_is_object(rp) &&
            (json_object_get(rp, "full_attention") || json_object_get(rp, "sliding_attention")))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: rope_parameters has entries per layer type, but a "
                                 "%s model has no layer_types: one dict for every layer expected",
                                 c->model_type);
        if ((rc = rope_entry(rp, "rope_parameters.", &theta, &theta_given, &factor, &factor_given,
                             err)) < 0)
            return rc;
    }
    const json_t *pos = json_object_get(root, "position_embedding_type");
    const char *type = json_is_string(pos) ? json_string_value(pos) : NULL;
    if (!pos || json_is_null(pos) || (type && strcmp(type, "absolute") == 0))
        return ENC_OK;
    if (type && strcmp(type, "alibi") == 0) {
        hp->position = ENC_POS_ALIBI;
        return ENC_OK;
    }
    if (!type || (strcmp(type, "rotary") != 0 && strcmp(type, "rope") != 0)) {
        char shown[64] = "(not a string)";
        if (type)
            printable(shown, sizeof shown, type);
        const bool relative = type && strncmp(type, "relative_key", 12) == 0;
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: position_embedding_type '%s' is not supported "
                             "(absolute, alibi, rotary)%s",
                             shown,
                             relative ? ": transformers adds learned distance embeddings to the "
                                        "attention scores, which attnd does not compute"
                                      : "");
    }
    hp->position = ENC_POS_ROPE;
    if (theta_given) {
        hp->rope_theta = theta;
        c->key_rope_theta = "rope_parameters.rope_theta";
    } else {
        c->key_rope_theta = given(root, "rope_theta") ? "rope_theta" : "rotary_emb_base";
        if ((rc = number_field(root, "rotary_emb_base", &hp->rope_theta, err)) < 0 ||
            (rc = number_field(root, "rope_theta", &hp->rope_theta, err)) < 0)
            return rc;
    }
    if (!factor_given && (rc = number_field(root, "partial_rotary_factor", &factor, err)) < 0)
        return rc;
    const int E = hp->d_model / (hp->n_heads > 0 ? hp->n_heads : 1);
    const int dim = (int)(factor * E) / 2 * 2;
    if (factor > 1.0 || dim < 2)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: %spartial_rotary_factor %g leaves no pair of the "
                             "head's %d dimensions to rotate",
                             factor_given ? "rope_parameters." : "", factor, E);
    hp->rope_dim = dim == E ? 0 : dim;
    return ENC_OK;
}

/* The BERT family (BertConfig, RobertaConfig, XLMRobertaConfig,
 * CamembertConfig, ElectraConfig and modeling_bert.py's layers, which the
 * others copy): is_decoder true makes BertModel's self-attention causal
 * (its extended attention mask), add_cross_attention true adds a
 * cross-attention to each layer: both refused.  type_vocab_size and
 * ELECTRA's embedding_size (ElectraConfig's default 128) for the embedding
 * module; then the positions. */
static int read_bert(const json_t *root, enc_hf_config *c, enc_error *err)
{
    bool decoder = false, cross = false;
    int rc;
    if ((rc = bool_field(root, "is_decoder", false, &decoder, err)) < 0 ||
        (rc = bool_field(root, "add_cross_attention", false, &cross, err)) < 0)
        return rc;
    if (decoder)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: is_decoder true is not supported (transformers' %s "
                             "then masks its self-attention causally, as a decoder's)",
                             c->model_type);
    if (cross)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: add_cross_attention true is not supported (a "
                             "cross-attention to an encoder's states in every layer)");
    if ((rc = opt_int_field(root, "type_vocab_size", 0, &c->type_vocab_size, err)) < 0)
        return rc;
    if (strcmp(c->model_type, "electra") == 0) {
        c->embedding_size = 128;
        if ((rc = opt_int_field(root, "embedding_size", 1, &c->embedding_size, err)) < 0)
            return rc;
    }
    return read_positions(root, c, err);
}

/* DistilBERT (DistilBertConfig, modeling_distilbert.py): its attribute_map
 * lets hidden_size, num_attention_heads and num_hidden_layers stand for
 * dim, n_heads and n_layers (and win when both are given: refused when they
 * differ); sinusoidal_pos_embds for the embedding module; then the
 * positions. */
static int read_distilbert(const json_t *root, enc_hf_config *c, enc_error *err)
{
    static const struct {
        const char *alias, *key;
        size_t off;
    } aliases[] = {
        {"hidden_size", "dim", offsetof(enc_hparams, d_model)},
        {"num_attention_heads", "n_heads", offsetof(enc_hparams, n_heads)},
        {"num_hidden_layers", "n_layers", offsetof(enc_hparams, n_layers)},
    };
    int rc;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        const int have = *(const int *)((const char *)&c->hp + aliases[i].off);
        int v = have;
        if ((rc = opt_int_field(root, aliases[i].alias, 1, &v, err)) < 0)
            return rc;
        if (v != have)
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: '%s' (%d) and '%s' (%d) differ (DistilBertConfig "
                                 "reads %s as %s)",
                                 aliases[i].alias, v, aliases[i].key, have, aliases[i].alias,
                                 aliases[i].key);
    }
    if ((rc = bool_field(root, "sinusoidal_pos_embds", false, &c->sinusoidal, err)) < 0)
        return rc;
    return read_positions(root, c, err);
}

/* transformers 5's layer_types (ModernBertConfig: "full_attention" or
 * "sliding_attention" per layer) as attnd's global_every: layer l global
 * when l mod every = 0.  Another pattern is refused naming the first layer
 * that breaks it. */
static int layer_pattern(const json_t *lt, int n_layers, int *every, enc_error *err)
{
    if (!json_is_array(lt) || json_array_size(lt) != (size_t)n_layers)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: 'layer_types' is not a list of num_hidden_layers (%d) "
                             "entries",
                             n_layers);
    for (int l = 0; l < n_layers; l++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)l));
        if (!s || (strcmp(s, "full_attention") != 0 && strcmp(s, "sliding_attention") != 0)) {
            char shown[64] = "(not a string)";
            if (s)
                printable(shown, sizeof shown, s);
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: layer_types[%d] '%s' is not supported "
                                 "(full_attention, sliding_attention)",
                                 l, shown);
        }
    }
    int n = n_layers > 1 ? n_layers : 1; /* the first full layer after layer 0 */
    for (int l = 1; l < n_layers && n == n_layers; l++)
        if (strcmp(json_string_value(json_array_get(lt, (size_t)l)), "full_attention") == 0)
            n = l;
    for (int l = 0; l < n_layers; l++) {
        const bool full =
            strcmp(json_string_value(json_array_get(lt, (size_t)l)), "full_attention") == 0;
        if (full != (l % n == 0))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: layer_types is not a pattern attnd computes "
                                 "(layer l full_attention exactly when l mod N = 0): layer %d is "
                                 "%s",
                                 l, full ? "full_attention" : "sliding_attention");
    }
    *every = n;
    return ENC_OK;
}

/* ModernBERT (transformers' ModernBertConfig, ModernBertEncoderLayer):
 * pre-norm, layer 0's attention norm the identity, a final norm; a GLU
 * feed-forward (input, gate = Wi(x).chunk(2)); RoPE (rotate_half) over the
 * whole head on every layer.  Biases: attention_bias and mlp_bias (must
 * agree: attnd's bias covers every Linear), norm_bias; defaults as
 * ModernBertConfig's.  position_embedding_type ("absolute" in
 * ModernBERT-base's) is not read: its positions are rotary whatever it
 * says.
 *
 * Which layers are local: transformers 5's layer_types when given (its
 * ModernBertModel picks each layer's mask and rotary table by it, and
 * builds it from global_attn_every_n_layers only when it is absent), else
 * 4.x's global_attn_every_n_layers (default 3): layer i global when i mod
 * N = 0.  A local layer sees local_attention // 2 keys each side (both
 * versions floor an odd one); transformers 5's sliding_window property is
 * that half window, and a different one in the file is refused.
 *
 * The bases, as transformers 5's ModernBertConfig.convert_rope_params_to_dict
 * sets them: rope_parameters' full_attention / sliding_attention entries
 * first (their rope_type default), then 4.x's global_rope_theta /
 * local_rope_theta, then ModernBertConfig's defaults 160000 / 10000.  A
 * local_rope_theta of null is 4.x's "the global one" (5.x cannot load it).
 * Inside rope_parameters a partial_rotary_factor other than 1 is refused;
 * a top-level one is not read (neither version's ModernBERT reads it), nor
 * 4.x's layer_norm_eps (norm_eps is the one). */
static int read_modernbert(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    bool attn_bias = false, mlp_bias = false, norm_bias = false;
    int every = 3, window = 128, rc;
    if ((rc = bool_field(root, "attention_bias", false, &attn_bias, err)) < 0 ||
        (rc = bool_field(root, "mlp_bias", false, &mlp_bias, err)) < 0 ||
        (rc = bool_field(root, "norm_bias", false, &norm_bias, err)) < 0 ||
        (json_object_get(root, "global_attn_every_n_layers") &&
         (rc = int_field(root, "global_attn_every_n_layers", &every, err)) < 0) ||
        (json_object_get(root, "local_attention") &&
         (rc = int_field(root, "local_attention", &window, err)) < 0))
        return rc;
    if (attn_bias != mlp_bias)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: attention_bias (%s) and mlp_bias (%s) differ; attnd's "
                             "bias covers every Linear",
                             attn_bias ? "true" : "false", mlp_bias ? "true" : "false");
    if (norm_bias && !attn_bias)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: norm_bias true with attention_bias and mlp_bias false "
                             "is not supported (attnd's bias false drops the norms' biases too)");
    const char *every_key = "global_attn_every_n_layers";
    const json_t *lt = json_object_get(root, "layer_types");
    if (lt && !json_is_null(lt)) {
        if ((rc = layer_pattern(lt, hp->n_layers, &every, err)) < 0)
            return rc;
        every_key = "layer_types";
    }
    if (every > ENC_MAX_LAYERS)
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' gives global every %d, over %d",
                             every_key, every, ENC_MAX_LAYERS);
    int half = window / 2;
    if ((rc = opt_int_field(root, "sliding_window", 0, &half, err)) < 0)
        return rc;
    if (half != window / 2)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: sliding_window (%d) is not local_attention // 2 (%d): "
                             "transformers 5 would set local_attention from it, 4.x ignores it",
                             half, window / 2);
    int head_dim = 0;
    if ((rc = opt_int_field(root, "head_dim", 1, &head_dim, err)) < 0)
        return rc;
    if (head_dim && (long)head_dim * hp->n_heads != hp->d_model)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: head_dim (%d) is not hidden_size / "
                             "num_attention_heads; ModernBERT's heads and rotary tables take "
                             "their size from it",
                             head_dim);

    double global = 160000.0, local = 10000.0, gfactor = 1.0, lfactor = 1.0;
    bool g_given = false, l_given = false, gf_given = false, lf_given = false;
    json_t *rp = json_object_get(root, "rope_parameters");
    if (rp && !json_is_null(rp)) {
        if (!json_is_object(rp))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: 'rope_parameters' is not an object");
        const char *key;
        json_t *v;
        json_object_foreach(rp, key, v)
        {
            if (strcmp(key, "full_attention") == 0 || strcmp(key, "sliding_attention") == 0)
                continue;
            char shown[64];
            printable(shown, sizeof shown, key);
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: rope_parameters has '%s': ModernBertConfig reads "
                                 "one entry per layer type, full_attention and sliding_attention",
                                 shown);
        }
        const json_t *full = json_object_get(rp, "full_attention");
        const json_t *sliding = json_object_get(rp, "sliding_attention");
        if ((full && !json_is_null(full) &&
             (rc = rope_entry(full, "rope_parameters.full_attention.", &global, &g_given, &gfactor,
                              &gf_given, err)) < 0) ||
            (sliding && !json_is_null(sliding) &&
             (rc = rope_entry(sliding, "rope_parameters.sliding_attention.", &local, &l_given,
                              &lfactor, &lf_given, err)) < 0))
            return rc;
        if ((gf_given && gfactor != 1.0) || (lf_given && lfactor != 1.0))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: rope_parameters.%s.partial_rotary_factor %g is not "
                                 "supported (ModernBERT rotates the whole head)",
                                 gf_given && gfactor != 1.0 ? "full_attention"
                                                            : "sliding_attention",
                                 gf_given && gfactor != 1.0 ? gfactor : lfactor);
    }
    if (!g_given && (rc = number_field(root, "global_rope_theta", &global, err)) < 0)
        return rc;
    const json_t *lrt = json_object_get(root, "local_rope_theta");
    const bool local_is_global = !l_given && lrt && json_is_null(lrt);
    if (!l_given && (rc = number_field(root, "local_rope_theta", &local, err)) < 0)
        return rc;
    hp->norm_first = true;
    hp->first_norm_identity = true;
    hp->final_norm = true;
    hp->bias = attn_bias;
    hp->norm = norm_bias ? ENC_NORM_LAYERNORM : ENC_NORM_LAYERNORM_NOBIAS;
    hp->position = ENC_POS_ROPE;
    hp->rope_style = ENC_ROPE_NEOX;
    hp->rope_dim = 0;
    hp->rope_theta = global;
    hp->global_every = every;
    hp->local_window = every > 1 ? half : 0;
    hp->rope_theta_local = every > 1 ? (local_is_global ? global : local) : 0.0;
    c->key_rope_theta = g_given ? "rope_parameters.full_attention.rope_theta" : "global_rope_theta";
    c->key_norm = "norm_bias";
    c->key_global_every = every_key;
    c->key_local_window = "local_attention";
    c->key_rope_theta_local = l_given           ? "rope_parameters.sliding_attention.rope_theta"
                              : local_is_global ? c->key_rope_theta
                                                : "local_rope_theta";
    return ENC_OK;
}

/* What every family refuses or records: rope_scaling (a scaled RoPE: 4.x's
 * rotary embeddings read it, 5.x's turn it into rope_parameters),
 * quantization_config (the tensors are not the float ones attnd binds),
 * pruned_heads (4.x's from_pretrained prunes those heads: smaller
 * projections); the embedding module's vocab_size, max_position_embeddings
 * and pad_token_id. */
static int read_common(const json_t *root, enc_hf_config *c, enc_error *err)
{
    if (given(root, "rope_scaling"))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rope_scaling is not supported (attnd computes RoPE "
                             "without scaling)");
    if (given(root, "quantization_config"))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: quantization_config is not supported (a quantized "
                             "checkpoint; attnd reads F32, F16 and BF16 tensors)");
    const json_t *pruned = json_object_get(root, "pruned_heads");
    if (pruned && !json_is_null(pruned) &&
        !(json_is_object(pruned) && json_object_size(pruned) == 0))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pruned_heads is not supported (transformers prunes "
                             "those heads from the projections as it loads them)");
    c->embedding_size = c->hp.d_model;
    c->pad_token_id = -1;
    int rc;
    if ((rc = opt_int_field(root, "vocab_size", 1, &c->vocab_size, err)) < 0 ||
        (rc = opt_int_field(root, "max_position_embeddings", 1, &c->max_position_embeddings, err)) <
            0 ||
        (rc = opt_int_field(root, "pad_token_id", 0, &c->pad_token_id, err)) < 0)
        return rc;
    if (c->vocab_size > 0 && c->pad_token_id >= c->vocab_size)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pad_token_id (%d) is not below vocab_size (%d)",
                             c->pad_token_id, c->vocab_size);
    return ENC_OK;
}

int enc_hf_config_read(const char *dir, enc_hf_config *c, enc_error *err)
{
    memset(c, 0, sizeof *c);
    char path[4200];
    if (!join(path, sizeof path, dir, "config.json"))
        return enc_error_set(err, ENC_EINVAL, "model.dir: the path is too long");
    size_t len;
    char *text = model_read_whole(path, &len, err);
    if (!text)
        return err->status;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    int rc = ENC_OK;
    if (!root)
        return enc_error_set(err, ENC_EFORMAT, "config.json: line %d, column %d: %s", jerr.line,
                             jerr.column, jerr.text);
    const json_t *mt = json_object_get(root, "model_type");
    const family *fam = NULL;
    if (!json_is_object(root)) {
        rc = enc_error_set(err, ENC_EFORMAT, "config.json: the top level is not an object");
        goto done;
    }
    if (!mt || !json_is_string(mt)) {
        rc = enc_error_set(err, ENC_EINVAL, "config.json: %s 'model_type'",
                           mt ? "a string expected for" : "missing");
        goto done;
    }
    if (!(fam = family_of(json_string_value(mt)))) {
        char shown[64];
        printable(shown, sizeof shown, json_string_value(mt));
        rc = enc_error_set(err, ENC_EINVAL,
                           "config.json: model_type '%s' is not supported (bert, roberta, "
                           "xlm-roberta, camembert, electra, distilbert, modernbert)",
                           shown);
        goto done;
    }
    snprintf(c->model_type, sizeof c->model_type, "%s", fam->model_type);
    const json_t *dt = json_object_get(root, "dtype") ? json_object_get(root, "dtype")
                                                      : json_object_get(root, "torch_dtype");
    c->dtype = json_is_string(dt) && strcmp(json_string_value(dt), "bfloat16") == 0
                   ? ENC_DTYPE_BFLOAT16
                   : ENC_DTYPE_FLOAT32;
    c->key_d_model = fam->d_model;
    c->key_n_heads = fam->n_heads;
    c->key_d_ff = fam->d_ff;
    c->key_n_layers = fam->n_layers;
    c->key_activation = fam->activation;
    c->key_eps = fam->eps;
    enc_hparams *hp = &c->hp;
    enc_hparams_default(hp);
    hp->norm_first = false; /* every one of them is post-norm, with biases */
    hp->bias = true;
    if ((rc = int_field(root, fam->d_model, &hp->d_model, err)) < 0 ||
        (rc = int_field(root, fam->n_heads, &hp->n_heads, err)) < 0 ||
        (rc = int_field(root, fam->d_ff, &hp->d_ff, err)) < 0 ||
        (rc = int_field(root, fam->n_layers, &hp->n_layers, err)) < 0)
        goto done;
    hp->n_kv_heads = hp->n_heads;
    const json_t *act = json_object_get(root, fam->activation);
    if (!act || !json_is_string(act)) {
        rc = enc_error_set(err, ENC_EINVAL, "config.json: %s '%s'",
                           act ? "a string expected for" : "missing", fam->activation);
        goto done;
    }
    const char *a = json_string_value(act);
    printable(c->activation, sizeof c->activation, a);
    bool known = false;
    if (fam->gated && (strcmp(a, "silu") == 0 || strcmp(a, "swish") == 0)) {
        hp->ffn = ENC_FFN_SWIGLU; /* SiLU gates; activation is not used */
        hp->activation = ENC_ACT_GELU;
        known = true;
    }
    for (size_t i = 0; !known && i < sizeof ACTIVATIONS / sizeof *ACTIVATIONS; i++)
        if (strcmp(a, ACTIVATIONS[i].name) == 0 &&
            !(fam->gated && ACTIVATIONS[i].act == ENC_ACT_RELU)) {
            hp->activation = ACTIVATIONS[i].act;
            hp->ffn = fam->gated ? ENC_FFN_GEGLU : ENC_FFN_MLP;
            known = true;
        }
    if (!known) {
        rc = enc_error_set(err, ENC_EINVAL, "config.json: %s '%s' is not supported (%s)",
                           fam->activation, c->activation,
                           fam->gated ? ACTIVATION_LIST ", silu, swish" : ACTIVATION_LIST ", relu");
        goto done;
    }
    if (fam->eps) {
        const json_t *eps = json_object_get(root, fam->eps);
        if (!eps) {
            rc = enc_error_set(err, ENC_EINVAL, "config.json: missing '%s'", fam->eps);
            goto done;
        }
        if (!json_is_number(eps) || !(json_number_value(eps) > 0) ||
            !isfinite(json_number_value(eps))) {
            rc = enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not a positive number",
                               fam->eps);
            goto done;
        }
        hp->layer_norm_eps = (float)json_number_value(eps);
    } else {
        hp->layer_norm_eps = DISTILBERT_EPS;
    }
    if ((rc = read_common(root, c, err)) < 0 || (rc = fam->extras(root, c, err)) < 0)
        goto done;
done:
    json_decref(root);
    return rc;
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
    char *text = model_read_whole(path, &len, err);
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
} embed_naming;

static const embed_naming BERT_EMBED = {
    "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.", "embeddings_project."};
static const embed_naming DISTILBERT_EMBED = {"embeddings.word_embeddings.weight",
                                              "embeddings.position_embeddings.weight", NULL,
                                              "embeddings.LayerNorm.", NULL};
static const embed_naming MODERNBERT_EMBED = {"embeddings.tok_embeddings.weight", NULL, NULL,
                                              "embeddings.norm.", NULL};

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
    const bool roberta = strcmp(c->model_type, "roberta") == 0 ||
                         strcmp(c->model_type, "xlm-roberta") == 0 ||
                         strcmp(c->model_type, "camembert") == 0;
    const bool distilbert = strcmp(c->model_type, "distilbert") == 0;
    const embed_naming *nm = distilbert                                 ? &DISTILBERT_EMBED
                             : strcmp(c->model_type, "modernbert") == 0 ? &MODERNBERT_EMBED
                                                                        : &BERT_EMBED;
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
                        .norm_bias = m->hp.norm == ENC_NORM_LAYERNORM};
    const int64_t E = cfg.embedding_size;
    cfg.vocab_size = c->vocab_size > 0 ? c->vocab_size : t->ndim == 2 ? (int)t->shape[0] : 0;
    if (m->hp.position != ENC_POS_NONE || !nm->pos)
        cfg.pos = EMBED_POS_NONE; /* RoPE or ALiBi inside attention: no table added */
    else
        cfg.pos = roberta                       ? EMBED_POS_ROBERTA
                  : distilbert && c->sinusoidal ? EMBED_POS_SINUSOIDAL
                                                : EMBED_POS_ABSOLUTE;
    const st_tensor *pt = cfg.pos == EMBED_POS_NONE ? NULL : find(ld, ENAME(nm->pos), NULL);
    cfg.max_positions = cfg.pos == EMBED_POS_NONE        ? 0
                        : c->max_position_embeddings > 0 ? c->max_position_embeddings
                        : pt && pt->ndim == 2            ? (int)pt->shape[0]
                                                         : 512; /* DistilBertConfig's */
    const st_tensor *tt = nm->type ? find(ld, ENAME(nm->type), NULL) : NULL;
    cfg.type_vocab_size = !nm->type                ? 0
                          : c->type_vocab_size > 0 ? c->type_vocab_size
                          : tt && tt->ndim == 2    ? (int)tt->shape[0]
                                                   : 2; /* BertConfig's */
    if (roberta && cfg.pad_token_id < 0)
        cfg.pad_token_id = 1; /* RobertaConfig's */
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
    snprintf(base, sizeof base, "%s%s", prefix, nm->norm);
    snprintf(name, sizeof name, "%sweight", base);
    if (bind_embed(ld, e, name, e->ln_w, E, 0) < 0)
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
    return ENC_OK;
}

enc_model *enc_model_load_dir(const char *dir, const enc_hparams *hp, enc_error *err)
{
    enc_hf_config c;
    loader ld = {.err = err};
    enc_model *m = NULL;
    if (enc_hf_config_read(dir, &c, err) < 0 || !(m = model_new(hp, err)))
        return NULL;
    const family *fam = family_of(c.model_type);
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
        bind_embeddings(&ld, m, &c, prefix) < 0)
        goto error;

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
                              fam->n_layers, hp->n_layers);
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
