/* model.c - a model's parameters: one allocation, loaded from safetensors or
 * built from a seed with PyTorch's initialisation scheme. */
#include "internal.h"
#include "safetensors.h"
#include "sha256.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Floats in one layer, and where each tensor sits, for hp. */
static size_t layer_floats(const enc_model *m, enc_layer *carve, float *base)
{
    const enc_hparams *hp = &m->hp;
    const size_t D = (size_t)hp->d_model, F = (size_t)hp->d_ff, Q = (size_t)m->qkv_dim;
    const bool b = hp->bias;
    size_t off = 0;
#define CARVE(field, n, present)                                                                   \
    do {                                                                                           \
        if (carve)                                                                                 \
            carve->field = (present) ? base + off : NULL;                                          \
        off += (present) ? (n) : 0;                                                                \
    } while (0)
    CARVE(w_qkv, Q * D, true);
    CARVE(b_qkv, Q, b);
    CARVE(w_o, D * D, true);
    CARVE(b_o, D, b);
    CARVE(w_1, F * D, true);
    CARVE(b_1, F, b);
    CARVE(w_2, D * F, true);
    CARVE(b_2, D, b);
    CARVE(ln1_w, D, true);
    CARVE(ln1_b, D, b);
    CARVE(ln2_w, D, true);
    CARVE(ln2_b, D, b);
#undef CARVE
    return off;
}

enc_model *model_alloc(const enc_hparams *hp, enc_error *err)
{
    if (enc_hparams_validate(hp, err) < 0)
        return NULL;
    enc_model *m = calloc(1, sizeof *m);
    if (!m)
        goto nomem;
    m->hp = *hp;
    m->head_dim = hp->d_model / hp->n_heads;
    m->kv_dim = hp->n_kv_heads * m->head_dim;
    m->qkv_dim = hp->d_model + 2 * m->kv_dim;

    size_t per_layer = layer_floats(m, NULL, NULL);
    m->n_params = per_layer * (size_t)hp->n_layers;
    m->params = calloc(m->n_params, sizeof *m->params);
    m->layers = calloc((size_t)hp->n_layers, sizeof *m->layers);
    if (!m->params || !m->layers)
        goto nomem;
    for (int l = 0; l < hp->n_layers; l++)
        layer_floats(m, &m->layers[l], m->params + (size_t)l * per_layer);
    return m;
nomem:
    enc_model_free(m);
    enc_error_set(err, ENC_ENOMEM, "out of memory allocating the model's parameters");
    return NULL;
}

void model_pack(enc_model *m)
{
    const int D = m->hp.d_model, F = m->hp.d_ff;
    m->packed = false;
    for (int l = 0; l < m->hp.n_layers; l++) {
        enc_layer *ly = &m->layers[l];
        gemm_packed_free(ly->pk_qkv);
        gemm_packed_free(ly->pk_o);
        gemm_packed_free(ly->pk_1);
        gemm_packed_free(ly->pk_2);
        ly->pk_qkv = gemm_pack(ly->w_qkv, m->qkv_dim, D);
        ly->pk_o = gemm_pack(ly->w_o, D, D);
        ly->pk_1 = gemm_pack(ly->w_1, F, D);
        ly->pk_2 = gemm_pack(ly->w_2, D, F);
        m->packed = m->packed || ly->pk_qkv || ly->pk_o || ly->pk_1 || ly->pk_2;
    }
}

void enc_model_free(enc_model *m)
{
    if (!m)
        return;
    for (int l = 0; m->layers && l < m->hp.n_layers; l++) {
        gemm_packed_free(m->layers[l].pk_qkv);
        gemm_packed_free(m->layers[l].pk_o);
        gemm_packed_free(m->layers[l].pk_1);
        gemm_packed_free(m->layers[l].pk_2);
    }
    free(m->params);
    free(m->layers);
    free(m);
}

const enc_hparams *enc_model_hparams(const enc_model *m)
{
    return &m->hp;
}

size_t enc_model_param_count(const enc_model *m)
{
    return m->n_params;
}

const char *enc_model_sha256(const enc_model *m)
{
    return m->sha256;
}

const char *enc_model_source(const enc_model *m)
{
    return m->source;
}

/* ---- the seeded generator --------------------------------------------- */

void model_rng_init(model_rng *r, uint64_t seed, int layer, int tensor)
{
    r->state = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(layer * 16 + tensor + 1));
}

/* splitmix64 (Steele, Lea, Flood 2014): the whole state in one word. */
uint64_t model_rng_next(model_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float model_rng_uniform(model_rng *r, double bound)
{
    double u = (double)(model_rng_next(r) >> 40) * (1.0 / 16777216.0);
    return (float)((2.0 * u - 1.0) * bound);
}

/* Fills n floats from one stream, uniform in [-bound, bound). */
static void fill_uniform(float *dst, size_t n, uint64_t seed, int layer, int tensor, double bound)
{
    model_rng r;
    model_rng_init(&r, seed, layer, tensor);
    for (size_t i = 0; i < n; i++)
        dst[i] = model_rng_uniform(&r, bound);
}

static void fill_value(float *dst, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = v;
}

/* Stream numbers of enc_model_random, one per tensor of a layer. */
enum { RNG_Q, RNG_K, RNG_V, RNG_OUT_W, RNG_FF1_W, RNG_FF1_B, RNG_FF2_W, RNG_FF2_B };

enc_model *enc_model_random(const enc_hparams *hp, uint64_t seed, enc_error *err)
{
    enc_model *m = model_alloc(hp, err);
    if (!m)
        return NULL;
    const size_t D = (size_t)hp->d_model, F = (size_t)hp->d_ff, KV = (size_t)m->kv_dim;
    for (int l = 0; l < hp->n_layers; l++) {
        enc_layer *ly = &m->layers[l];
        if (hp->n_kv_heads == hp->n_heads) {
            /* nn.MultiheadAttention: xavier_uniform_ over the whole (3D, D). */
            fill_uniform(ly->w_qkv, 3 * D * D, seed, l, RNG_Q, sqrt(6.0 / (double)(D + 3 * D)));
        } else {
            /* Separate q/k/v weights: xavier_uniform_ on each. */
            fill_uniform(ly->w_qkv, D * D, seed, l, RNG_Q, sqrt(6.0 / (double)(D + D)));
            fill_uniform(ly->w_qkv + D * D, KV * D, seed, l, RNG_K,
                         sqrt(6.0 / (double)(D + KV)));
            fill_uniform(ly->w_qkv + D * D + KV * D, KV * D, seed, l, RNG_V,
                         sqrt(6.0 / (double)(D + KV)));
        }
        /* nn.Linear: kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in),
         * and its bias the same bound; MHA zeroes its two biases. */
        fill_uniform(ly->w_o, D * D, seed, l, RNG_OUT_W, 1.0 / sqrt((double)D));
        fill_uniform(ly->w_1, F * D, seed, l, RNG_FF1_W, 1.0 / sqrt((double)D));
        fill_uniform(ly->w_2, D * F, seed, l, RNG_FF2_W, 1.0 / sqrt((double)F));
        if (hp->bias) {
            fill_uniform(ly->b_1, F, seed, l, RNG_FF1_B, 1.0 / sqrt((double)D));
            fill_uniform(ly->b_2, D, seed, l, RNG_FF2_B, 1.0 / sqrt((double)F));
            /* b_qkv, b_o and the LayerNorm biases stay zero from calloc. */
        }
        fill_value(ly->ln1_w, D, 1.0f);
        fill_value(ly->ln2_w, D, 1.0f);
    }
    snprintf(m->source, sizeof m->source, "seed:%llu", (unsigned long long)seed);
    model_pack(m);
    return m;
}

/* ---- loading from safetensors ------------------------------------------- */

/* Formats a shape as "[a, b]" into buf. */
static void shape_str(char *buf, size_t size, const int64_t *shape, int ndim)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

typedef struct loader {
    const st_file *f;
    bool *used;           /* (f->n_tensors) tensors bound so far */
    enc_error *err;
} loader;

/* Binds tensor name (rows x cols, cols 0 for 1-D) into dst: checks presence,
 * dtype, shape and finiteness.  Returns 0 or an error naming the tensor. */
static int bind(loader *ld, const char *name, float *dst, int64_t rows, int64_t cols)
{
    const st_tensor *t = st_find(ld->f, name);
    if (!t)
        return enc_error_set(ld->err, ENC_EFORMAT, "missing tensor '%s'", name);
    ld->used[t - ld->f->tensors] = true;
    if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16)
        return enc_error_set(ld->err, ENC_EFORMAT,
                             "tensor '%s' has dtype %s; F32, F16 or BF16 expected", name,
                             st_dtype_name(t->dtype));
    int64_t want[2] = {rows, cols};
    int want_ndim = cols ? 2 : 1;
    if (t->ndim != want_ndim || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char got_s[96], want_s[64];
        shape_str(got_s, sizeof got_s, t->shape, t->ndim);
        shape_str(want_s, sizeof want_s, want, want_ndim);
        return enc_error_set(ld->err, ENC_EFORMAT, "tensor '%s' has shape %s, expected %s", name,
                             got_s, want_s);
    }
    int rc = st_tensor_read_f32(t, dst, ld->err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < t->numel; i++)
        if (!isfinite(dst[i]))
            return enc_error_set(ld->err, ENC_EFORMAT,
                                 "tensor '%s' has a non-finite value at index %zu", name, i);
    return ENC_OK;
}

/* Binds every tensor of layer l, named with prefix. */
static int bind_layer(loader *ld, const enc_model *m, int l, const char *prefix)
{
    const enc_hparams *hp = &m->hp;
    const int64_t D = hp->d_model, F = hp->d_ff, KV = m->kv_dim, Q = m->qkv_dim;
    const enc_layer *ly = &m->layers[l];
    char name[128];
    int rc = 0;
#define NAME(s) (snprintf(name, sizeof name, "%s%s", prefix, (s)), name)

    /* The in-projection: one stacked tensor, or q/k/v apart (required for
     * grouped-query attention, whose k and v are narrower than q). */
    if (hp->n_kv_heads == hp->n_heads && st_find(ld->f, NAME("self_attn.in_proj_weight"))) {
        rc = bind(ld, name, ly->w_qkv, Q, D);
    } else {
        if (st_find(ld->f, NAME("self_attn.in_proj_weight")))
            return enc_error_set(ld->err, ENC_EFORMAT,
                                 "tensor '%s' cannot serve n_kv_heads (%d) < n_heads (%d): "
                                 "give q_proj_weight, k_proj_weight and v_proj_weight",
                                 name, hp->n_kv_heads, hp->n_heads);
        if ((rc = bind(ld, NAME("self_attn.q_proj_weight"), ly->w_qkv, D, D)) < 0 ||
            (rc = bind(ld, NAME("self_attn.k_proj_weight"), ly->w_qkv + D * D, KV, D)) < 0 ||
            (rc = bind(ld, NAME("self_attn.v_proj_weight"), ly->w_qkv + D * D + KV * D, KV, D)) <
                0)
            return rc;
    }
    if (rc < 0 || (rc = bind(ld, NAME("self_attn.out_proj.weight"), ly->w_o, D, D)) < 0 ||
        (rc = bind(ld, NAME("linear1.weight"), ly->w_1, F, D)) < 0 ||
        (rc = bind(ld, NAME("linear2.weight"), ly->w_2, D, F)) < 0 ||
        (rc = bind(ld, NAME("norm1.weight"), ly->ln1_w, D, 0)) < 0 ||
        (rc = bind(ld, NAME("norm2.weight"), ly->ln2_w, D, 0)) < 0)
        return rc;
    if (hp->bias &&
        ((rc = bind(ld, NAME("self_attn.in_proj_bias"), ly->b_qkv, Q, 0)) < 0 ||
         (rc = bind(ld, NAME("self_attn.out_proj.bias"), ly->b_o, D, 0)) < 0 ||
         (rc = bind(ld, NAME("linear1.bias"), ly->b_1, F, 0)) < 0 ||
         (rc = bind(ld, NAME("linear2.bias"), ly->b_2, D, 0)) < 0 ||
         (rc = bind(ld, NAME("norm1.bias"), ly->ln1_b, D, 0)) < 0 ||
         (rc = bind(ld, NAME("norm2.bias"), ly->ln2_b, D, 0)) < 0))
        return rc;
#undef NAME
    return ENC_OK;
}

enc_model *enc_model_load(const char *path, const enc_hparams *hp, enc_error *err)
{
    st_file f = {0};
    bool *used = NULL;
    enc_model *m = model_alloc(hp, err);
    if (!m)
        return NULL;
    if (st_open(&f, path, err) < 0)
        goto error;
    used = calloc(f.n_tensors + 1, sizeof *used);
    if (!used) {
        enc_error_set(err, ENC_ENOMEM, "out of memory reading '%s'", path);
        goto error;
    }

    /* A single block may carry the stack's "layers.0." prefix. */
    bool prefixed = hp->n_layers > 1;
    for (size_t i = 0; i < f.n_tensors && !prefixed; i++)
        prefixed = strncmp(f.tensors[i].name, "layers.", 7) == 0;

    loader ld = {.f = &f, .used = used, .err = err};
    for (int l = 0; l < hp->n_layers; l++) {
        char prefix[32] = "";
        if (prefixed)
            snprintf(prefix, sizeof prefix, "layers.%d.", l);
        if (bind_layer(&ld, m, l, prefix) < 0)
            goto error;
    }
    for (size_t i = 0; i < f.n_tensors; i++) {
        if (!used[i]) {
            const char *name = f.tensors[i].name;
            bool bias_off = !hp->bias && strstr(name, "bias");
            enc_error_set(err, ENC_EFORMAT, "unexpected tensor '%s'%s", name,
                          bias_off ? " (the model has bias false)" : "");
            goto error;
        }
    }

    sha256_hex(f.bytes, f.size, m->sha256);
    snprintf(m->source, sizeof m->source, "%s", path);
    free(used);
    st_close(&f);
    model_pack(m);
    return m;
error:
    free(used);
    st_close(&f);
    enc_model_free(m);
    return NULL;
}
