/* pooling.c - sentence embeddings: sentence-transformers' Pooling (cls,
 * mean, max, lasttoken, over each sequence's own tokens) and Normalize
 * modules, Matryoshka truncation, and the modules a directory's
 * sentence-transformers files name (modules.json, 1_Pooling/config.json in
 * the older pooling_mode_* form and the newer pooling_mode form). */
#include "model/pooling.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
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

int enc_st_config_read(const char *dir, enc_st_config *c, enc_error *err)
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
        if (strcmp(cls, "Pooling") == 0 && !pooled && i == 1) {
            char cfg[4096 + 64];
            snprintf(cfg, sizeof cfg, "%s/%s/config.json", dir, sub);
            rc = read_pooling(cfg, &c->pooling, &c->include_prompt, err);
            pooled = true;
            continue;
        }
        if (strcmp(cls, "Normalize") == 0 && pooled && !c->normalize &&
            i + 1 == json_array_size(mods)) {
            c->normalize = true;
            continue;
        }
        rc = enc_error_set(err, ENC_EINVAL,
                           "%s: module %zu (%s) is not supported: attnd runs Transformer, "
                           "Pooling, then Normalize",
                           path, i, type);
    }
    if (rc == 0 && !pooled)
        rc = enc_error_set(err, ENC_EINVAL, "%s has no Pooling module after its Transformer", path);
    json_decref(mods);
    c->found = rc == 0;
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
