/* pooling.c - sentence embeddings: sentence-transformers' Pooling (cls,
 * mean, max, lasttoken, over each sequence's own tokens), Dense and
 * Normalize modules, Matryoshka truncation, and the modules a directory's
 * sentence-transformers files name (modules.json, 1_Pooling/config.json in
 * the older pooling_mode_* form and the newer pooling_mode form, N_Dense/'s
 * config.json and model.safetensors). */
#include "model/pooling.h"

#include "kernels/ops.h"
#include "load/safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const NAMES[] = {"auto", "cls", "mean", "max", "last"};

const char *enc_pooling_name(enc_pooling p)
{
    return (unsigned)p < sizeof NAMES / sizeof NAMES[0] ? NAMES[p] : "?";
}

int enc_pooling_parse(const char *s, enc_pooling *p)
{
    for (size_t i = 0; s && i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcmp(s, NAMES[i]) == 0) {
            *p = (enc_pooling)i;
            return 0;
        }
    return -1;
}

/* ---- the directory's files ------------------------------------------------ */

/* The class name of a modules.json "type" ("sentence_transformers.models.Pooling"
 * and the newer module paths alike: the last dotted part). */
static const char *class_of(const char *type)
{
    const char *dot = strrchr(type, '.');
    return dot ? dot + 1 : type;
}

/* sentence-transformers' mode names, old keys and new values alike. */
static int mode_of(const char *name, enc_pooling *p)
{
    static const struct {
        const char *name;
        enc_pooling p;
    } modes[] = {{"cls", ENC_POOL_CLS},       {"mean", ENC_POOL_MEAN},
                 {"max", ENC_POOL_MAX},       {"lasttoken", ENC_POOL_LAST},
                 {"cls_token", ENC_POOL_CLS}, {"mean_tokens", ENC_POOL_MEAN},
                 {"max_tokens", ENC_POOL_MAX}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(name, modes[i].name) == 0) {
            *p = modes[i].p;
            return 0;
        }
    return -1;
}

/* The Pooling module's config.json: one mode, in either form, and
 * include_prompt. */
static int read_pooling(const char *path, enc_pooling *p, bool *include_prompt, enc_error *err)
{
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j)
        return enc_error_set(err, ENC_EFORMAT, "%s: %s", path, jerr.text);
    *include_prompt = !json_is_false(json_object_get(j, "include_prompt"));
    int rc = 0, n = 0;
    const json_t *mode = json_object_get(j, "pooling_mode");
    const char *key;
    json_t *v;
    if (mode) { /* the newer form: "pooling_mode": "mean" (or a list) */
        if (json_is_array(mode) && json_array_size(mode) == 1)
            mode = json_array_get(mode, 0);
        if (!json_is_string(mode))
            rc = enc_error_set(err, ENC_EINVAL,
                               "%s: pooling_mode must be one mode (attnd pools one way)", path);
        else if (mode_of(json_string_value(mode), p) < 0)
            rc = enc_error_set(err, ENC_EINVAL,
                               "%s: pooling_mode \"%s\" is not supported (cls, mean, max or "
                               "lasttoken)",
                               path, json_string_value(mode));
        json_decref(j);
        return rc;
    }
    /* the older form: one pooling_mode_* key true */
    json_object_foreach(j, key, v)
    {
        if (strncmp(key, "pooling_mode_", 13) != 0 || !json_is_true(v))
            continue;
        enc_pooling q;
        if (mode_of(key + 13, &q) < 0) {
            rc = enc_error_set(err, ENC_EINVAL,
                               "%s: %s is not supported (cls_token, mean_tokens, max_tokens or "
                               "lasttoken)",
                               path, key);
            break;
        }
        *p = q;
        n++;
    }
    if (rc == 0 && n != 1)
        rc = enc_error_set(err, ENC_EINVAL, "%s: %d pooling modes are true; attnd pools one way",
                           path, n);
    json_decref(j);
    return rc;
}

/* Dense's activation_function: the fullname of a torch.nn module class
 * ("torch.nn.modules.activation.Tanh"), by its last part. */
static int dense_activation(const char *path, const json_t *v, bool *tanh, enc_error *err)
{
    const char *name = json_string_value(v);
    if (!name)
        return enc_error_set(err, ENC_EFORMAT, "%s: activation_function must be a string", path);
    const char *cls = class_of(name);
    if (strcmp(cls, "Tanh") != 0 && strcmp(cls, "Identity") != 0)
        return enc_error_set(err, ENC_EINVAL,
                             "%s: activation_function \"%s\" is not supported (Tanh or Identity)",
                             path, name);
    *tanh = strcmp(cls, "Tanh") == 0;
    return 0;
}

/* One of a Dense module's tensors, shape (rows) or (rows, cols) (cols 0),
 * read into an owned float array *dst. */
static int dense_tensor(const st_file *f, const char *path, const char *name, int rows, int cols,
                        float **dst, enc_error *err)
{
    const st_tensor *t = st_find(f, name);
    if (!t)
        return enc_error_set(err, ENC_EFORMAT, "%s has no tensor %s", path, name);
    if (t->ndim != (cols ? 2 : 1) || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char shape[32];
        if (cols)
            snprintf(shape, sizeof shape, "[%d, %d]", rows, cols);
        else
            snprintf(shape, sizeof shape, "[%d]", rows);
        return enc_error_set(err, ENC_EFORMAT, "%s: %s must be %s, as config.json says", path, name,
                             shape);
    }
    if (!(*dst = malloc(t->numel * sizeof **dst)))
        return enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
    enc_error why = {0};
    if (st_tensor_read_f32(t, *dst, &why) < 0)
        return enc_error_set(err, why.status, "%s: %s", path, why.message);
    return 0;
}

/* The Dense module in dir/sub: its config.json (in_features must be in) and
 * model.safetensors, into *d (its arrays owned; freed by the caller on error
 * too). */
static int read_dense(const char *dir, const char *sub, int in, enc_dense *d, enc_error *err)
{
    char path[4096 + 64];
    snprintf(path, sizeof path, "%s/%s/config.json", dir, sub);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j)
        return enc_error_set(err, ENC_EFORMAT, "%s: %s", path, jerr.text);
    const json_t *nin = json_object_get(j, "in_features"),
                 *nout = json_object_get(j, "out_features");
    const json_t *bias = json_object_get(j, "bias");
    int rc = 0;
    if (!json_is_integer(nin) || !json_is_integer(nout) || json_integer_value(nout) < 1 ||
        json_integer_value(nout) > (1 << 20))
        rc = enc_error_set(err, ENC_EFORMAT,
                           "%s: in_features and out_features must be integers, out_features in "
                           "1 .. 1048576",
                           path);
    else if (json_integer_value(nin) != in)
        rc = enc_error_set(err, ENC_EINVAL,
                           "%s: in_features %lld, but the module before it gives %d features", path,
                           (long long)json_integer_value(nin), in);
    else if (bias && !json_is_boolean(bias))
        rc = enc_error_set(err, ENC_EFORMAT, "%s: bias must be true or false", path);
    else
        rc = dense_activation(path, json_object_get(j, "activation_function"), &d->tanh, err);
    d->in = in;
    d->out = rc == 0 ? (int)json_integer_value(nout) : 0;
    const bool has_bias = !json_is_false(bias); /* Dense's default: true */
    json_decref(j);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, sub);
    if (access(path, F_OK) != 0) {
        char bin[4096 + 64];
        snprintf(bin, sizeof bin, "%s/%s/pytorch_model.bin", dir, sub);
        return enc_error_set(err, ENC_EINVAL, "%s is missing%s", path,
                             access(bin, F_OK) == 0
                                 ? ": the module has pytorch_model.bin only, and attnd reads "
                                   "safetensors (save the model again with sentence-transformers "
                                   "3 or later)"
                                 : "");
    }
    st_file f;
    enc_error why = {0};
    if ((rc = st_open(&f, path, &why)) < 0)
        return enc_error_set(err, why.status, "%s: %s", path, why.message);
    if (f.n_tensors != (has_bias ? 2u : 1u))
        rc = enc_error_set(err, ENC_EFORMAT, "%s holds %zu tensors; the module has %s", path,
                           f.n_tensors,
                           has_bias ? "linear.weight and linear.bias" : "linear.weight");
    if (rc == 0)
        rc = dense_tensor(&f, path, "linear.weight", d->out, in, &d->weight, err);
    if (rc == 0 && has_bias)
        rc = dense_tensor(&f, path, "linear.bias", d->out, 0, &d->bias, err);
    st_close(&f);
    return rc;
}

/* Appends the Dense module in dir/sub to c, after what c's modules give. */
static int add_dense(const char *dir, const char *sub, int d_model, enc_st_config *c,
                     enc_error *err)
{
    enc_dense *more = realloc(c->dense, ((size_t)c->n_dense + 1) * sizeof *more);
    if (!more)
        return enc_error_set(err, ENC_ENOMEM, "%s/%s: out of memory", dir, sub);
    c->dense = more;
    const int in = c->n_dense > 0 ? c->dense[c->n_dense - 1].out : d_model;
    enc_dense *d = &c->dense[c->n_dense++];
    memset(d, 0, sizeof *d);
    return read_dense(dir, sub, in, d, err);
}

void enc_st_config_free(enc_st_config *c)
{
    for (int i = 0; i < c->n_dense; i++) {
        free(c->dense[i].weight);
        free(c->dense[i].bias);
    }
    free(c->dense);
    memset(c, 0, sizeof *c);
}

int enc_st_config_read(const char *dir, int d_model, enc_st_config *c, enc_error *err)
{
    memset(c, 0, sizeof *c);
    c->include_prompt = true;
    char path[4096];
    snprintf(path, sizeof path, "%s/modules.json", dir);
    if (access(path, F_OK) != 0)
        return 0;
    json_error_t jerr;
    json_t *mods = json_load_file(path, 0, &jerr);
    if (!mods)
        return enc_error_set(err, ENC_EFORMAT, "%s: %s", path, jerr.text);
    int rc = 0;
    bool pooled = false;
    if (!json_is_array(mods))
        rc = enc_error_set(err, ENC_EFORMAT, "%s must be a list of modules", path);
    for (size_t i = 0; rc == 0 && i < json_array_size(mods); i++) {
        const json_t *m = json_array_get(mods, i);
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *sub = json_string_value(json_object_get(m, "path"));
        if (!type || !sub) {
            rc = enc_error_set(err, ENC_EFORMAT, "%s: module %zu needs a type and a path", path, i);
            break;
        }
        const char *cls = class_of(type);
        if (strcmp(cls, "Transformer") == 0 && i == 0)
            continue;
        if (strcmp(cls, "LogitScore") == 0 && i == 1 && json_array_size(mods) == 2) {
            c->cross_encoder = true; /* the head's: hfhead.c reads its config */
            continue;
        }
        if (strcmp(cls, "Pooling") == 0 && !pooled && i == 1) {
            char cfg[4096 + 64];
            snprintf(cfg, sizeof cfg, "%s/%s/config.json", dir, sub);
            rc = read_pooling(cfg, &c->pooling, &c->include_prompt, err);
            pooled = true;
            continue;
        }
        if (strcmp(cls, "Dense") == 0 && pooled && !c->int8_tanh) {
            rc = add_dense(dir, sub, d_model, c, err);
            continue;
        }
        /* perplexity-ai's own module (trust_remote_code): forward's
         * quantization "int8" by default, which encode() keeps */
        if (strcmp(type, "st_quantize.FlexibleQuantizer") == 0 && pooled && !c->int8_tanh) {
            c->int8_tanh = true;
            continue;
        }
        if (strcmp(cls, "Normalize") == 0 && pooled && !c->normalize &&
            i + 1 == json_array_size(mods)) {
            c->normalize = true;
            continue;
        }
        rc = enc_error_set(err, ENC_EINVAL,
                           "%s: module %zu (%s) is not supported: attnd runs Transformer, "
                           "Pooling, Dense modules, st_quantize.FlexibleQuantizer, then "
                           "Normalize, in that order",
                           path, i, type);
    }
    /* a Transformer alone is a CrossEncoder's too: no SentenceTransformer
     * makes sentence embeddings without a Pooling module */
    if (rc == 0 && !pooled && json_array_size(mods) == 1)
        c->cross_encoder = true;
    if (rc == 0 && !pooled && !c->cross_encoder)
        rc = enc_error_set(err, ENC_EINVAL, "%s has no Pooling module after its Transformer", path);
    json_decref(mods);
    if (rc < 0)
        enc_st_config_free(c);
    c->found = rc == 0 && pooled;
    return rc;
}

/* ---- the math ------------------------------------------------------------------ */

static void normalize_row(float *v, int n)
{
    double ss = 0;
    for (int k = 0; k < n; k++)
        ss += (double)v[k] * v[k];
    const double norm = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
    for (int k = 0; k < n; k++)
        v[k] = (float)(v[k] / norm);
}

void enc_pool(const float *x, int B, int L, int D, const int *lengths, enc_pooling p,
              bool normalize, float *out)
{
    for (int b = 0; b < B; b++) {
        const int len = lengths ? lengths[b] : L;
        const float *s = x + (size_t)b * L * D;
        float *o = out + (size_t)b * D;
        switch (p) {
        case ENC_POOL_CLS:
            memcpy(o, s, (size_t)D * sizeof *o);
            break;
        case ENC_POOL_LAST:
            memcpy(o, s + (size_t)(len - 1) * D, (size_t)D * sizeof *o);
            break;
        case ENC_POOL_MAX:
            for (int k = 0; k < D; k++) {
                float m = -INFINITY;
                for (int t = 0; t < len; t++)
                    m = s[(size_t)t * D + k] > m ? s[(size_t)t * D + k] : m;
                o[k] = m;
            }
            break;
        case ENC_POOL_AUTO:
        case ENC_POOL_MEAN:
        default:
            for (int k = 0; k < D; k++) {
                double sum = 0;
                for (int t = 0; t < len; t++)
                    sum += s[(size_t)t * D + k];
                o[k] = (float)(sum / (len > 0 ? len : 1));
            }
            break;
        }
        if (normalize)
            normalize_row(o, D);
    }
}

void enc_pool_truncate(float *x, int B, int D, int dims, bool normalize)
{
    for (int b = 0; b < B; b++) {
        memmove(x + (size_t)b * dims, x + (size_t)b * D, (size_t)dims * sizeof *x);
        if (normalize)
            normalize_row(x + (size_t)b * dims, dims);
    }
}

int enc_token_width(const enc_embedder *e, int D)
{
    return e->project ? e->project->out : D;
}

int enc_embed_width(const enc_embedder *e, int D)
{
    return e->n_dense > 0 ? e->dense[e->n_dense - 1].out : enc_token_width(e, D);
}

/* y (M, d->out) = act(d's weight . x (M, d->in) + bias): owned, NULL when
 * out of memory. */
static float *dense_rows(const enc_dense *d, const float *x, int M)
{
    float *y = malloc((size_t)M * (size_t)d->out * sizeof *y);
    if (!y)
        return NULL;
    ops_linear_cols(y, d->out, x, d->in, d->weight, d->bias, M, d->in, 0, d->out, NULL);
    for (size_t k = 0; d->tanh && k < (size_t)M * (size_t)d->out; k++)
        y[k] = tanhf(y[k]);
    return y;
}

float *enc_project_tokens(const enc_embedder *e, const float *x, int B, int L, int D,
                          const int *lengths)
{
    const int P = e->project->out;
    size_t rows = 0;
    for (int b = 0; b < B; b++)
        rows += (size_t)(lengths ? lengths[b] : L);
    float *y = malloc((rows ? rows : 1) * (size_t)P * sizeof *y), *o = y;
    for (int b = 0; y && b < B; b++) {
        const int len = lengths ? lengths[b] : L;
        ops_linear_cols(o, P, x + (size_t)b * L * D, D, e->project->weight, NULL, len, D, 0, P,
                        NULL);
        o += (size_t)len * P;
    }
    return y;
}

/* The pooled rows (B, enc_token_width) of x (B, L, D): through e->project
 * before the pooling for max (not linear), after it otherwise. */
static float *pooled_tokens(const enc_embedder *e, const float *x, int B, int L, int D,
                            const int *lengths)
{
    const int W = enc_token_width(e, D);
    float *v = malloc((size_t)B * (size_t)W * sizeof *v);
    if (!v || !e->project || e->mode != ENC_POOL_MAX) {
        if (v)
            enc_pool(x, B, L, D, lengths, e->mode, false, v);
        if (!v || !e->project)
            return v;
        float *y = dense_rows(e->project, v, B);
        free(v);
        return y;
    }
    for (int b = 0; b < B; b++) { /* one sequence's tokens at a time */
        const int len = lengths ? lengths[b] : L;
        float *t = dense_rows(e->project, x + (size_t)b * L * D, len);
        if (!t) {
            free(v);
            return NULL;
        }
        enc_pool(t, 1, len, W, NULL, ENC_POOL_MAX, false, v + (size_t)b * W);
        free(t);
    }
    return v;
}

float *enc_embed(const enc_embedder *e, const float *x, int B, int L, int D, const int *lengths,
                 int dims)
{
    float *v = pooled_tokens(e, x, B, L, D, lengths);
    for (int i = 0; v && i < e->n_dense; i++) {
        float *y = dense_rows(&e->dense[i], v, B);
        free(v);
        v = y;
    }
    if (!v)
        return NULL;
    const int width = enc_embed_width(e, D);
    for (size_t k = 0; e->int8_tanh && k < (size_t)B * (size_t)width; k++)
        v[k] = rintf(127.0f * tanhf(v[k])); /* torch.round's half to even */
    for (int b = 0; e->normalize && b < B; b++)
        normalize_row(v + (size_t)b * width, width);
    if (dims > 0 && dims < width)
        enc_pool_truncate(v, B, width, dims, e->normalize);
    return v;
}
