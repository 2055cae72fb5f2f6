/* options.c - the request options both protocols share, JSON to the
 * neutral request (options.h): the mask (causal, window, global,
 * key_padding, attn and the sparse patterns), attention and
 * attention_format.  Each JSON object's fields are a table (fields.h).
 *
 * - mask.attn numbers below -FLT_MAX (JSON has no -Infinity; send e.g.
 *   -1e39) become -inf, i.e. "not allowed"; above +FLT_MAX they are refused.
 * - mask.window sides larger than L are clamped to L (same meaning).
 *
 * Messages name the option as /v1 spells it ("mask.window.left",
 * "mask.fixed.summary"); v2.c respells them as its parameters. */
#include "protocol/options.h"
#include "protocol/schemas.h"

#include <float.h>
#include <jansson.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)       api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define TOO_LARGE(...) api_error_set(err, API_TOO_LARGE, __VA_ARGS__)

/* A JSON number as float32: 0, or -1 when it is outside float32's range. */
static int to_float(const json_t *v, float *out)
{
    double d = json_number_value(v);
    if (!(d <= FLT_MAX && d >= -FLT_MAX))
        return -1;
    *out = (float)d;
    return 0;
}

const char *const options_attention_modes[] = {"heads", "mean", "none", NULL};
const char *const options_attention_formats[] = {"dense", "csr", NULL};

void options_apply_attention(encode_request *req, const field_table *t, const json_t *obj)
{
    static const enc_attn_mode modes[] = {ENC_ATTN_HEADS, ENC_ATTN_MEAN, ENC_ATTN_NONE};
    const int m = fields_choice(t, obj, "attention", -1);
    if (m >= 0)
        req->attn_mode = modes[m];
    const int f = fields_choice(t, obj, "attention_format", -1);
    if (f >= 0)
        req->csr = f == 1;
}

/* ---- the mask ----------------------------------------------------------------- */

/* A non-negative window side, or ENC_WINDOW_NONE for null; clamped to L. */
static int window_side(const json_t *v, const char *name, int L, int *out, api_error *err)
{
    if (!v || json_is_null(v)) {
        *out = ENC_WINDOW_NONE;
        return 0;
    }
    if (!json_is_integer(v))
        return BAD("%s must be a non-negative integer, not %s", name, fields_kind(v));
    long long w = json_integer_value(v);
    if (w < 0)
        return BAD("%s = %lld must not be negative", name, w);
    *out = w > L ? L : (int)w;
    return 0;
}

static const field_spec WINDOW_FIELDS[] = {
    {.name = "left", .type = FIELD_INT, .min = 0, .max = LLONG_MAX},
    {.name = "right", .type = FIELD_INT, .min = 0, .max = LLONG_MAX},
};
const field_table options_window_fields = FIELD_TABLE("option", WINDOW_FIELDS);

static int parse_window(encode_request *req, json_t *v, api_error *err)
{
    enc_mask *mk = &req->batch.mask;
    const int L = req->batch.L;
    if (json_is_integer(v)) {
        if (window_side(v, "mask.window", L, &mk->window_left, err) < 0)
            return -1;
        mk->window_right = mk->window_left;
        return 0;
    }
    if (!json_is_object(v))
        return BAD("mask.window must be a non-negative integer or {\"left\": int, \"right\": int}, "
                   "not %s",
                   fields_kind(v));
    return fields_check(&options_window_fields, v, "mask.window", err) < 0 ||
                   window_side(json_object_get(v, "left"), "mask.window.left", L, &mk->window_left,
                               err) < 0 ||
                   window_side(json_object_get(v, "right"), "mask.window.right", L,
                               &mk->window_right, err) < 0
               ? -1
               : 0;
}

static int parse_global(encode_request *req, const json_t *v, api_error *err)
{
    const int L = req->batch.L;
    if (!json_is_array(v))
        return BAD("mask.global must be an array of positions 0..%d, not %s", L - 1,
                   fields_kind(v));
    const size_t n = json_array_size(v);
    if (!(req->global = encode_zalloc(n, sizeof *req->global)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(v, k);
        if (!json_is_integer(e))
            return BAD("mask.global[%zu] is %s; expected a position 0..%d", k, fields_kind(e),
                       L - 1);
        long long p = json_integer_value(e);
        if (p < 0 || p >= L)
            return BAD("mask.global[%zu] = %lld is outside 0..%d", k, p, L - 1);
        req->global[k] = (int)p;
    }
    req->batch.mask.global = req->global;
    req->batch.mask.n_global = n;
    return 0;
}

/* key_padding: bool[B][L] (true = padding); the unbatched form also bool[L]. */
static int parse_key_padding(encode_request *req, const json_t *v, api_error *err)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return BAD("mask.key_padding must be bool[B][L]%s", req->batched ? "" : " or bool[L]");
    const bool flat = !req->batched && !json_is_array(json_array_get(v, 0));
    if (!flat && json_array_size(v) != B)
        return BAD("mask.key_padding has %zu row%s; the batch has %zu sequence%s",
                   json_array_size(v), api_plural(json_array_size(v)), B, api_plural(B));
    for (int pass = 0; pass < 2; pass++) {
        for (size_t b = 0; b < B; b++) {
            const json_t *row = flat ? v : json_array_get(v, b);
            char name[64];
            if (flat)
                snprintf(name, sizeof name, "mask.key_padding");
            else
                snprintf(name, sizeof name, "mask.key_padding[%zu]", b);
            if (!json_is_array(row))
                return BAD("%s is %s; expected an array of L (%zu) booleans", name,
                           fields_kind(row), L);
            if (json_array_size(row) != L)
                return BAD("%s has %zu %s; L is %zu", name, json_array_size(row),
                           api_entries(json_array_size(row)), L);
            for (size_t j = 0; j < L; j++) {
                const json_t *e = json_array_get(row, j);
                if (!json_is_boolean(e))
                    return BAD("%s[%zu] is not a boolean (it is %s)", name, j, fields_kind(e));
                if (pass)
                    req->key_padding[b * L + j] = json_is_true(e);
            }
        }
        if (!pass && !(req->key_padding = encode_zalloc(B * L, 1)))
            return api_error_set(err, API_UNAVAILABLE, "out of memory");
    }
    req->batch.mask.key_padding = req->key_padding;
    return 0;
}

/* mask.attn: [L][L] (every sequence) or [B][L][L] (batched input only); all
 * booleans (true = not allowed) or all numbers (added to the scores). */
static int parse_attn_mask(encode_request *req, const json_t *v, api_error *err)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return BAD("mask.attn must be booleans or numbers, [L][L]%s",
                   req->batched ? " or [B][L][L]" : "");
    const json_t *a0 = json_array_get(v, 0);
    const bool per_seq = json_is_array(a0) && json_is_array(json_array_get(a0, 0));
    if (per_seq && !req->batched)
        return BAD("mask.attn must be [L][L] for a single sequence ([L][d_model] embeddings)");
    const size_t n_mat = per_seq ? B : 1;
    if (per_seq && json_array_size(v) != B)
        return BAD("mask.attn has %zu matri%s; the batch has %zu sequence%s", json_array_size(v),
                   json_array_size(v) == 1 ? "x" : "ces", B, api_plural(B));

    enc_attn_mask_kind kind = ENC_MASK_NONE;
    char first[128] = "", name[128];
    for (int pass = 0; pass < 2; pass++) {
        for (size_t m = 0; m < n_mat; m++) {
            const json_t *mat = per_seq ? json_array_get(v, m) : v;
            char mname[48];
            if (per_seq)
                snprintf(mname, sizeof mname, "mask.attn[%zu]", m);
            else
                snprintf(mname, sizeof mname, "mask.attn");
            if (!json_is_array(mat))
                return BAD("%s is %s; expected [L][L]", mname, fields_kind(mat));
            if (json_array_size(mat) != L)
                return BAD("%s has %zu row%s; L is %zu", mname, json_array_size(mat),
                           api_plural(json_array_size(mat)), L);
            for (size_t i = 0; i < L; i++) {
                const json_t *row = json_array_get(mat, i);
                if (!json_is_array(row))
                    return BAD("%s[%zu] is %s; expected an array of L (%zu) entries", mname, i,
                               fields_kind(row), L);
                if (json_array_size(row) != L)
                    return BAD("%s[%zu] has %zu %s; L is %zu", mname, i, json_array_size(row),
                               api_entries(json_array_size(row)), L);
                for (size_t j = 0; j < L; j++) {
                    const json_t *e = json_array_get(row, j);
                    const size_t at = (m * L + i) * L + j;
                    if (pass) {
                        if (kind == ENC_MASK_BOOL)
                            req->attn_bool[at] = json_is_true(e);
                        else if (to_float(e, &req->attn_add[at]) < 0)
                            req->attn_add[at] = -INFINITY; /* checked: below -FLT_MAX */
                        continue;
                    }
                    enc_attn_mask_kind k = json_is_boolean(e)  ? ENC_MASK_BOOL
                                           : json_is_number(e) ? ENC_MASK_ADD
                                                               : ENC_MASK_NONE;
                    if (k != kind || k == ENC_MASK_NONE ||
                        (k == ENC_MASK_ADD && json_number_value(e) > FLT_MAX))
                        snprintf(name, sizeof name, "%s[%zu][%zu]", mname, i, j);
                    if (k == ENC_MASK_NONE)
                        return BAD("%s is %s; expected a boolean or a number", name,
                                   fields_kind(e));
                    if (kind == ENC_MASK_NONE) {
                        kind = k;
                        snprintf(first, sizeof first, "%s", name);
                    } else if (k != kind) {
                        return BAD("mask.attn mixes booleans and numbers: %s is %s but %s is "
                                   "%s; use one type",
                                   name, fields_kind(e), first,
                                   kind == ENC_MASK_BOOL ? "a boolean" : "a number");
                    }
                    if (k == ENC_MASK_ADD && json_number_value(e) > FLT_MAX)
                        return BAD("%s = %g is over the float32 range", name, json_number_value(e));
                }
            }
        }
        if (!pass) {
            const size_t n = n_mat * L * L;
            if (kind == ENC_MASK_BOOL)
                req->attn_bool = encode_zalloc(n, 1);
            else
                req->attn_add = encode_zalloc(n, sizeof *req->attn_add);
            if (!req->attn_bool && !req->attn_add)
                return api_error_set(err, API_UNAVAILABLE, "out of memory");
        }
    }
    enc_mask *mk = &req->batch.mask;
    mk->attn_kind = kind;
    mk->attn_bool = req->attn_bool;
    mk->attn_add = req->attn_add;
    mk->attn_per_sequence = per_seq;
    return 0;
}

/* mask.strided {stride}, mask.fixed {block, summary}, mask.blocks {size,
 * window, global, random, seed}: the sparse patterns (docs/model.md). */
static const field_spec STRIDED_FIELDS[] = {
    {.name = "stride", .type = FIELD_INT, .required = true, .min = 1, .max = INT_MAX},
};
static const field_spec FIXED_FIELDS[] = {
    {.name = "block", .type = FIELD_INT, .required = true, .min = 1, .max = INT_MAX},
    {.name = "summary", .type = FIELD_INT, .required = true, .min = 0, .max = INT_MAX},
};
static const field_spec BLOCKS_FIELDS[] = {
    {.name = "size", .type = FIELD_INT, .required = true, .min = 1, .max = INT_MAX},
    {.name = "window", .type = FIELD_INT, .min = 0, .max = INT_MAX},
    {.name = "global", .type = FIELD_INT, .min = 0, .max = INT_MAX},
    {.name = "random", .type = FIELD_INT, .min = 0, .max = INT_MAX},
    {.name = "seed", .type = FIELD_INT, .min = 0, .max = LLONG_MAX},
};
const field_table options_strided_fields = FIELD_TABLE("option", STRIDED_FIELDS);
const field_table options_fixed_fields = FIELD_TABLE("option", FIXED_FIELDS);
const field_table options_blocks_fields = FIELD_TABLE("option", BLOCKS_FIELDS);

static int parse_strided(enc_mask *mk, json_t *v, const char *name, api_error *err)
{
    if (!json_is_object(v))
        return BAD("%s must be an object {\"stride\": s}, not %s", name, fields_kind(v));
    if (fields_check(&options_strided_fields, v, name, err) < 0)
        return -1;
    mk->stride = (int)fields_int(v, "stride", 0);
    return 0;
}

static int parse_fixed(enc_mask *mk, json_t *v, const char *name, api_error *err)
{
    if (!json_is_object(v))
        return BAD("%s must be an object {\"block\": l, \"summary\": c}, not %s", name,
                   fields_kind(v));
    if (fields_check(&options_fixed_fields, v, name, err) < 0)
        return -1;
    mk->fixed_block = (int)fields_int(v, "block", 0);
    mk->fixed_summary = (int)fields_int(v, "summary", 0);
    if (mk->fixed_summary >= mk->fixed_block)
        return BAD("%s.summary = %d must be below %s.block = %d", name, mk->fixed_summary, name,
                   mk->fixed_block);
    return 0;
}

static int parse_blocks(enc_mask *mk, json_t *v, const char *name, api_error *err)
{
    enc_blocks_pattern *p = &mk->blocks;
    if (!json_is_object(v))
        return BAD("%s must be an object {\"size\": b, \"window\": w, \"global\": g, "
                   "\"random\": r, \"seed\": s}, not %s",
                   name, fields_kind(v));
    if (fields_check(&options_blocks_fields, v, name, err) < 0)
        return -1;
    p->size = (int)fields_int(v, "size", 0);
    p->window = (int)fields_int(v, "window", 0);
    p->global = (int)fields_int(v, "global", 0);
    p->random = (int)fields_int(v, "random", 0);
    p->seed = (uint64_t)fields_int(v, "seed", 0);
    return 0;
}

/* One sparse pattern option (option "strided", "fixed" or "blocks": v its
 * object) into req->batch.mask, named name in messages ("mask.fixed.summary
 * = 9 must be below mask.fixed.block = 8"). */
static int parse_pattern(encode_request *req, const char *option, json_t *v, const char *name,
                         api_error *err)
{
    enc_mask *mk = &req->batch.mask;
    if (strcmp(option, "strided") == 0)
        return parse_strided(mk, v, name, err);
    if (strcmp(option, "fixed") == 0)
        return parse_fixed(mk, v, name, err);
    return parse_blocks(mk, v, name, err);
}

static const field_spec MASK_FIELDS[] = {
    {.name = "causal", .type = FIELD_BOOL}, {.name = "window", .type = FIELD_JSON},
    {.name = "global", .type = FIELD_JSON}, {.name = "key_padding", .type = FIELD_JSON},
    {.name = "attn", .type = FIELD_JSON},   {.name = "strided", .type = FIELD_JSON},
    {.name = "fixed", .type = FIELD_JSON},  {.name = "blocks", .type = FIELD_JSON},
};
const field_table options_mask_fields = FIELD_TABLE("option", MASK_FIELDS);

int options_parse_mask(encode_request *req, json_t *mask, api_error *err)
{
    if (!json_is_object(mask))
        return BAD("mask must be an object, not %s", fields_kind(mask));
    if (fields_check(&options_mask_fields, mask, "mask", err) < 0)
        return -1;
    json_t *v;
    static const char *const patterns[] = {"strided", "fixed", "blocks"};
    for (size_t k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "mask.%s", patterns[k]);
        if ((v = fields_get(mask, patterns[k])) &&
            parse_pattern(req, patterns[k], v, name, err) < 0)
            return -1;
    }
    req->batch.mask.causal = fields_bool(mask, "causal", req->batch.mask.causal);
    if ((v = fields_get(mask, "window")) && parse_window(req, v, err) < 0)
        return -1;
    if ((v = fields_get(mask, "global")) && parse_global(req, v, err) < 0)
        return -1;
    if ((v = fields_get(mask, "key_padding")) && parse_key_padding(req, v, err) < 0)
        return -1;
    if ((v = fields_get(mask, "attn")) && parse_attn_mask(req, v, err) < 0)
        return -1;
    return 0;
}
