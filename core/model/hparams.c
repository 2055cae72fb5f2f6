/* hparams.c - model hyperparameters: defaults, names and validation. */
#include "encoder.h"

#include <math.h>
#include <string.h>

/* ---- the enums' names, both ways ---------------------------------------- */

static const char *const activation_names[] = {
    [ENC_ACT_RELU] = "relu",
    [ENC_ACT_GELU] = "gelu",
    [ENC_ACT_GELU_TANH] = "gelu_tanh",
};
static const char *const position_names[] = {
    [ENC_POS_NONE] = "none",
    [ENC_POS_ROPE] = "rope",
    [ENC_POS_ALIBI] = "alibi",
};
static const char *const rope_style_names[] = {
    [ENC_ROPE_NEOX] = "neox",
    [ENC_ROPE_GPTJ] = "gptj",
};
static const char *const ffn_names[] = {
    [ENC_FFN_MLP] = "mlp",
    [ENC_FFN_GEGLU] = "geglu",
    [ENC_FFN_SWIGLU] = "swiglu",
};
static const char *const norm_names[] = {
    [ENC_NORM_LAYERNORM] = "layernorm",
    [ENC_NORM_LAYERNORM_NOBIAS] = "layernorm_nobias",
    [ENC_NORM_LAYERNORM_BIAS] = "layernorm_bias",
    [ENC_NORM_RMS] = "rmsnorm",
};
static const char *const dtype_names[] = {
    [ENC_DTYPE_FLOAT32] = "float32",
    [ENC_DTYPE_BFLOAT16] = "bfloat16",
    [ENC_DTYPE_INT8] = "int8",
    [ENC_DTYPE_AUTO] = "auto",
};

/* The index of name in names (n of them), or -1. */
static int name_index(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return (int)i;
    return -1;
}

/* type's parse (name -> value: 0 or ENC_EINVAL) and name (value -> name,
 * "unknown" out of range) from its table. */
#define ENUM_NAMES(type, table)                                                                    \
    int type##_parse(const char *name, type *out)                                                  \
    {                                                                                              \
        const int i = name_index(table, sizeof table / sizeof *table, name);                       \
        if (i < 0)                                                                                 \
            return ENC_EINVAL;                                                                     \
        *out = (type)i;                                                                            \
        return ENC_OK;                                                                             \
    }                                                                                              \
    const char *type##_name(type v)                                                                \
    {                                                                                              \
        return (unsigned)v < sizeof table / sizeof *table ? table[v] : "unknown";                  \
    }

ENUM_NAMES(enc_activation, activation_names)
ENUM_NAMES(enc_position, position_names)
ENUM_NAMES(enc_rope_style, rope_style_names)
ENUM_NAMES(enc_ffn, ffn_names)
ENUM_NAMES(enc_norm, norm_names)
ENUM_NAMES(enc_dtype, dtype_names)

void enc_hparams_default(enc_hparams *hp)
{
    *hp = (enc_hparams){
        .d_model = 512,
        .n_heads = 8,
        .n_kv_heads = 8,
        .d_ff = 2048,
        .n_layers = 1,
        .activation = ENC_ACT_RELU,
        .norm_first = false,
        .layer_norm_eps = 1e-5f,
        .bias = true,
        .position = ENC_POS_NONE,
        .rope_theta = 10000.0,
        .rope_dim = 0,
        .rope_style = ENC_ROPE_NEOX,
        .rope_ntk = 1.0,
        .ffn = ENC_FFN_MLP,
        .norm = ENC_NORM_LAYERNORM,
        .global_every = 1,
    };
}

int enc_head_dim(const enc_hparams *hp)
{
    return hp->head_dim ? hp->head_dim : hp->d_model / (hp->n_heads > 0 ? hp->n_heads : 1);
}

bool enc_norm_has_bias(const enc_hparams *hp)
{
    return hp->norm == ENC_NORM_LAYERNORM_BIAS || (hp->bias && hp->norm == ENC_NORM_LAYERNORM);
}

bool enc_layer_local(const enc_hparams *hp, int l)
{
    return hp->global_every > 1 && l % hp->global_every != hp->global_offset;
}

double enc_layer_rope_theta(const enc_hparams *hp, int l)
{
    return enc_layer_local(hp, l) && hp->rope_theta_local > 0.0 ? hp->rope_theta_local
                                                                : hp->rope_theta;
}

double enc_rope_inv_freq(const enc_hparams *hp, double theta, int k, int dim)
{
    /* GTE's NTKScalingRotaryEmbedding: the base times f, then every
     * frequency divided by f^(2 / dim) -- only where f > 1 */
    const double f = hp->rope_ntk;
    if (!(f > 1.0))
        return pow(theta, -2.0 * k / dim);
    return pow(theta * f, -2.0 * k / dim) / pow(f, 2.0 / dim);
}

int enc_ffn_rows(const enc_hparams *hp)
{
    return hp->ffn == ENC_FFN_MLP ? hp->d_ff : 2 * hp->d_ff;
}

void enc_alibi_slopes(int n, float *slopes)
{
    int m = 1; /* the power of two at most n */
    while (m * 2 <= n)
        m *= 2;
    for (int h = 0; h < n; h++) /* 2^(-8(h+1)/m), then every other one of 2m heads */
        slopes[h] = (float)(h < m ? pow(2.0, -8.0 * (h + 1) / m)
                                  : pow(2.0, -8.0 * (2 * (h - m) + 1) / (2 * m)));
}

int enc_rel_bucket(int d)
{
    const int half = ENC_REL_BUCKETS / 2, exact = half / 2; /* 16 a side, 8 of them exact */
    const int side = d > 0 ? half : 0;                      /* transformers' n = -d < 0 */
    const int n = d < 0 ? -d : d;
    if (n < exact)
        return side + n;
    /* exact + log(n / exact) / log(max_distance / exact) * (half - exact), in
     * float32 and truncated, as torch computes it; n is capped first, which
     * changes nothing (the last bucket from there on) and keeps it finite */
    const float r = (float)(n < ENC_REL_MAX_DISTANCE ? n : ENC_REL_MAX_DISTANCE) / (float)exact;
    const float t =
        logf(r) / (float)log((double)ENC_REL_MAX_DISTANCE / exact) * (float)(half - exact);
    const int v = exact + (int)t;
    return side + (v < half - 1 ? v : half - 1);
}

int enc_dis_row(const enc_disentangled *dis, int d)
{
    int b = d;
    const int mid = dis->buckets / 2, a = d < 0 ? -d : d;
    if (dis->buckets > 0 && a > mid) {
        /* make_log_bucket_position: ceil(log(|d| / mid) / log((max_position
         * - 1) / mid) * (mid - 1)) + mid, in float32 as torch computes it,
         * with d's sign; |d| is capped first where the row is the last one
         * anyway, so that the float stays exact */
        const int far = a < (1 << 24) ? a : (1 << 24);
        const float den = logf((float)((double)(dis->max_position - 1) / mid));
        const float t = ceilf(logf((float)far / (float)mid) / den * (float)(mid - 1));
        const int lb = t < (float)(2 * dis->span) ? (int)t + mid : 2 * dis->span + mid;
        b = d < 0 ? -lb : lb;
    }
    const int r = dis->span + b;
    return r < 0 ? 0 : r > 2 * dis->span - 1 ? 2 * dis->span - 1 : r;
}

int enc_dis_scale_factor(const enc_disentangled *dis)
{
    return dis->span > 0 ? 1 + dis->c2p + dis->p2c : 1;
}

/* Checks one integer setting is in [lo, hi]. */
static int check_range(const char *name, int v, int lo, int hi, enc_error *err)
{
    if (v < lo || v > hi)
        return enc_error_set(err, ENC_EINVAL, "%s (%d) must be between %d and %d", name, v, lo, hi);
    return ENC_OK;
}

int enc_hparams_validate(const enc_hparams *hp, enc_error *err)
{
    int rc;
    if ((rc = check_range("d_model", hp->d_model, 1, ENC_MAX_DIM, err)) < 0 ||
        (rc = check_range("n_heads", hp->n_heads, 1, hp->d_model, err)) < 0)
        return rc;
    if (hp->head_dim != 0 &&
        (rc = check_range("head_dim", hp->head_dim, 1, ENC_MAX_DIM / hp->n_heads, err)) < 0)
        return rc;
    if (hp->head_dim == 0 && hp->d_model % hp->n_heads != 0)
        return enc_error_set(err, ENC_EINVAL,
                             "n_heads (%d) must divide d_model (%d) unless head_dim is set",
                             hp->n_heads, hp->d_model);
    if ((rc = check_range("n_kv_heads", hp->n_kv_heads, 1, hp->n_heads, err)) < 0 ||
        (rc = check_range("d_ff", hp->d_ff, 1, 4 * ENC_MAX_DIM, err)) < 0 ||
        (rc = check_range("n_layers", hp->n_layers, 1, ENC_MAX_LAYERS, err)) < 0)
        return rc;
    if (hp->n_heads % hp->n_kv_heads != 0)
        return enc_error_set(err, ENC_EINVAL, "n_kv_heads (%d) must divide n_heads (%d)",
                             hp->n_kv_heads, hp->n_heads);
    if ((unsigned)hp->activation > ENC_ACT_GELU_TANH)
        return enc_error_set(err, ENC_EINVAL, "activation (%d) must be relu, gelu or gelu_tanh",
                             (int)hp->activation);
    if (!(hp->layer_norm_eps > 0.0f) || !isfinite(hp->layer_norm_eps))
        return enc_error_set(err, ENC_EINVAL, "layer_norm_eps (%g) must be a positive number",
                             (double)hp->layer_norm_eps);
    if ((unsigned)hp->ffn > ENC_FFN_SWIGLU)
        return enc_error_set(err, ENC_EINVAL, "ffn (%d) must be mlp, geglu or swiglu",
                             (int)hp->ffn);
    if (hp->ffn == ENC_FFN_GEGLU && hp->activation == ENC_ACT_RELU)
        return enc_error_set(err, ENC_EINVAL,
                             "ffn geglu gates with the GELU of activation: activation must be "
                             "gelu or gelu_tanh, not relu");
    if ((unsigned)hp->dtype > ENC_DTYPE_INT8)
        return enc_error_set(
            err, ENC_EINVAL,
            "dtype (%d) must be float32, bfloat16 or int8 (auto is resolved by the "
            "configuration)",
            (int)hp->dtype);
    if ((unsigned)hp->norm > ENC_NORM_RMS)
        return enc_error_set(err, ENC_EINVAL,
                             "norm (%d) must be layernorm, layernorm_nobias, layernorm_bias or "
                             "rmsnorm",
                             (int)hp->norm);
    if (hp->first_norm_identity && !hp->norm_first)
        return enc_error_set(err, ENC_EINVAL,
                             "first_attn_norm false (layer 0's attention norm the identity) "
                             "needs norm_first true: a post-norm block's norms follow their "
                             "sublayers");
    if (hp->sublayer_norm && !hp->norm_first)
        return enc_error_set(err, ENC_EINVAL,
                             "sublayer_norm (each sublayer's output normed before the residual "
                             "add) needs norm_first true: a post-norm block's norms follow the "
                             "add");
    if (hp->qk_norm_whole && !hp->qk_norm)
        return enc_error_set(err, ENC_EINVAL,
                             "qk_norm_whole (one norm over all of q's and of k's heads) needs "
                             "qk_norm true");
    if (hp->double_residual && (hp->norm_first || hp->sublayer_norm))
        return enc_error_set(err, ENC_EINVAL,
                             "double_residual (attention's output and the residual normed, then "
                             "the residual added again) needs a post-norm block: norm_first and "
                             "sublayer_norm false");
    if ((rc = check_range("global_every", hp->global_every, 0, ENC_MAX_LAYERS, err)) < 0 ||
        (rc = check_range("global_offset", hp->global_offset, 0,
                          hp->global_every > 1 ? hp->global_every - 1 : 0, err)) < 0 ||
        (rc = check_range("local_window", hp->local_window, 0, ENC_MAX_POSITION, err)) < 0)
        return rc;
    if (hp->rope_theta_local != 0.0 &&
        (!(hp->rope_theta_local > 0.0) || !isfinite(hp->rope_theta_local)))
        return enc_error_set(err, ENC_EINVAL, "rope_theta_local (%g) must be a positive number",
                             hp->rope_theta_local);
    if (hp->rope_ntk != 0.0 && (!(hp->rope_ntk >= 1.0) || !isfinite(hp->rope_ntk)))
        return enc_error_set(err, ENC_EINVAL,
                             "rope_ntk (%g) must be 1 or more (the NTK scaling factor; 1: none)",
                             hp->rope_ntk);
    if (hp->rel_buckets != 0 &&
        (rc = check_range("rel_buckets", hp->rel_buckets, ENC_REL_BUCKETS, ENC_MAX_DIM, err)) < 0)
        return rc;
    if (hp->n_score_ids < 0 || hp->n_score_ids > 2)
        return enc_error_set(err, ENC_EINVAL, "n_score_ids (%d) must be 0, 1 or 2",
                             hp->n_score_ids);
    for (int i = 0; i < hp->n_score_ids; i++)
        if (hp->score_ids[i] < 0)
            return enc_error_set(err, ENC_EINVAL, "score_ids[%d] (%d) must be a token id", i,
                                 hp->score_ids[i]);
    const enc_disentangled *dis = &hp->dis;
    if (dis->span != 0) {
        if ((rc = check_range("dis.span", dis->span, 1, ENC_MAX_DIM, err)) < 0 ||
            (dis->buckets != 0 &&
             (rc = check_range("dis.buckets", dis->buckets, 2, ENC_MAX_DIM, err)) < 0))
            return rc;
        if (dis->buckets &&
            (dis->max_position - 1 <= dis->buckets / 2 || dis->max_position > ENC_MAX_POSITION))
            return enc_error_set(err, ENC_EINVAL,
                                 "dis.max_position (%d) must be above dis.buckets / 2 + 1 (%d) "
                                 "and at most %d",
                                 dis->max_position, dis->buckets / 2 + 1, ENC_MAX_POSITION);
        if (!dis->c2p && !dis->p2c)
            return enc_error_set(err, ENC_EINVAL,
                                 "relative attention (dis.span %d) needs c2p, p2c or both",
                                 dis->span);
        if (hp->n_kv_heads != hp->n_heads || enc_head_dim(hp) * hp->n_heads != hp->d_model)
            return enc_error_set(err, ENC_EINVAL,
                                 "relative attention (dis.span %d) needs n_kv_heads = n_heads "
                                 "and head_dim = d_model / n_heads",
                                 dis->span);
        if (hp->position != ENC_POS_NONE || hp->rel_buckets)
            return enc_error_set(err, ENC_EINVAL,
                                 "DeBERTa's relative attention (dis.span %d) takes no other "
                                 "positions inside attention (position %s, rel_buckets %d)",
                                 dis->span, enc_position_name(hp->position), hp->rel_buckets);
    }
    if ((unsigned)hp->position > ENC_POS_ALIBI)
        return enc_error_set(err, ENC_EINVAL, "position (%d) must be none, rope or alibi",
                             (int)hp->position);
    if (hp->position != ENC_POS_ROPE)
        return ENC_OK;
    const int E = enc_head_dim(hp);
    if (!(hp->rope_theta > 0.0) || !isfinite(hp->rope_theta))
        return enc_error_set(err, ENC_EINVAL, "rope_theta (%g) must be a positive number",
                             hp->rope_theta);
    if (hp->rope_dim < 0 || hp->rope_dim > E || hp->rope_dim % 2 != 0)
        return enc_error_set(err, ENC_EINVAL,
                             "rope_dim (%d) must be even and at most the head dimension (%d); "
                             "0 = all of it",
                             hp->rope_dim, E);
    if ((unsigned)hp->rope_style > ENC_ROPE_GPTJ)
        return enc_error_set(err, ENC_EINVAL, "rope_style (%d) must be neox or gptj",
                             (int)hp->rope_style);
    return ENC_OK;
}
