/* v2_request.c - the Open Inference Protocol's infer request (v2.h):
 * its parameters, outputs and inputs, their data as JSON or as binary
 * tensor data after the JSON header, parsed into the neutral request
 * (encode_request.h) with the shared options (options.h).  The choices
 * where the protocol leaves room are listed at the top of v2.c. */
#include "protocol/v2.h"

#include "protocol/options.h"
#include "protocol/schemas.h"
#include "protocol/text.h"

#include "codec/body.h"
#include "codec/extract.h"
#include "codec/jsontext.h"

#include <jansson.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define OOM()    api_error_set(err, API_UNAVAILABLE, "out of memory")
#define MAX_RANK 8

/* ---- small helpers --------------------------------------------------------- */

/* "[2, 6, 16]" into buf. */
static const char *shape_text(const long long *dims, int rank, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int k = 0; k < rank && n < size; k++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", k ? ", " : "", dims[k]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* ---- parsing: request parameters ---------------------------------------------- */

static const field_spec PARAMS_FIELDS[] = {
    OPTIONS_FIELD_ATTENTION,
    {.name = "causal", .type = FIELD_BOOL},
    {.name = "window", .type = FIELD_JSON},
    {.name = "window_left", .type = FIELD_JSON},
    {.name = "window_right", .type = FIELD_JSON},
    {.name = "global", .type = FIELD_JSON},
    {.name = "key_padding", .type = FIELD_JSON},
    {.name = "attn", .type = FIELD_JSON},
    {.name = "strided", .type = FIELD_JSON},
    {.name = "fixed", .type = FIELD_JSON},
    {.name = "blocks", .type = FIELD_JSON},
    OPTIONS_FIELD_ATTENTION_FORMAT,
    {.name = "binary_data_output", .type = FIELD_BOOL},
};
const field_table v2_parameters_fields = FIELD_TABLE("parameter", PARAMS_FIELDS);

/* A mask option as /v1's mask object takes it: the value itself, or, when it
 * is a string, the JSON it holds (the protocol's parameters are scalars).
 * New reference, or NULL with err set. */
static json_t *mask_value(const char *name, json_t *v, api_error *err)
{
    if (!json_is_string(v))
        return json_incref(v);
    json_error_t jerr; /* integers of any size are numbers, as in the body */
    json_t *parsed = jx_loadb(json_string_value(v), json_string_length(v), JSON_DECODE_ANY, &jerr);
    if (!parsed) {
        char q[API_SAFE_MAX + 4], why[API_SAFE_MAX + 4];
        BAD("parameters.%s: the string '%s' is not valid JSON (%s)", name,
            api_safe_text(json_string_value(v), q), api_safe_text(jerr.text, why));
        return NULL;
    }
    return parsed;
}

/* Request-level parameters: attention and binary_data_output into req, the
 * mask options into *mask (a /v1 mask object, new reference). */
static int parse_params(v2_request *req, json_t *params, bool *binary_all, json_t **mask,
                        bool *window_lr, api_error *err)
{
    *mask = json_object();
    if (!*mask)
        return OOM();
    if (!params)
        return 0;
    if (!json_is_object(params))
        return BAD("parameters must be an object, not %s", fields_kind(params));
    if (fields_check(&v2_parameters_fields, params, "parameters", err) < 0)
        return -1;
    options_apply_attention(&req->enc, &v2_parameters_fields, params);
    *binary_all = fields_bool(params, "binary_data_output", *binary_all);
    json_t *v;
    static const char *const mask_keys[] = {"causal", "window",  "global", "key_padding",
                                            "attn",   "strided", "fixed",  "blocks"};
    for (size_t i = 0; i < sizeof mask_keys / sizeof *mask_keys; i++) {
        v = json_object_get(params, mask_keys[i]);
        if (!v || json_is_null(v))
            continue;
        json_t *m = i == 0 ? json_incref(v) : mask_value(mask_keys[i], v, err);
        if (!m || json_object_set_new(*mask, mask_keys[i], m) < 0)
            return m ? OOM() : -1;
    }
    json_t *left = json_object_get(params, "window_left"),
           *right = json_object_get(params, "window_right");
    if ((left && !json_is_null(left)) || (right && !json_is_null(right))) {
        if (json_object_get(*mask, "window"))
            return BAD("parameters: give window, or window_left and window_right, not both");
        json_t *w = json_pack("{s:O?, s:O?}", "left", left, "right", right);
        if (!w || json_object_set_new(*mask, "window", w) < 0)
            return OOM();
        *window_lr = true;
    }
    return 0;
}

/* Runs /v1's mask parser and names the options as v2 spells them. */
static int parse_mask(v2_request *req, json_t *mask, bool window_lr, api_error *err)
{
    api_error e = {0};
    if (options_parse_mask(&req->enc, mask, &e) == 0)
        return 0;
    char msg[sizeof e.message];
    size_t n = 0;
    for (const char *s = e.message; *s && n + 1 < sizeof msg;) {
        const char *rep = NULL;
        size_t skip = 0;
        if (window_lr && strncmp(s, "mask.window.left", 16) == 0)
            rep = "parameters.window_left", skip = 16;
        else if (window_lr && strncmp(s, "mask.window.right", 17) == 0)
            rep = "parameters.window_right", skip = 17;
        else if (strncmp(s, "mask.", 5) == 0)
            rep = "parameters.", skip = 5;
        if (rep) {
            size_t r = strlen(rep);
            if (n + r + 1 >= sizeof msg)
                break;
            memcpy(msg + n, rep, r);
            n += r;
            s += skip;
        } else {
            msg[n++] = *s++;
        }
    }
    msg[n] = '\0';
    return api_error_set(err, e.kind, "%s", msg);
}

/* ---- parsing: outputs ------------------------------------------------------------ */

/* An output's fields, and its parameters'. */
static const field_spec OUTPUT_FIELDS[] = {{.name = "name", .type = FIELD_JSON},
                                           {.name = "parameters", .type = FIELD_JSON}};
static const field_spec OUTPUT_PARAMS_FIELDS[] = {{.name = "binary_data", .type = FIELD_BOOL}};
const field_table v2_output_fields = FIELD_TABLE("field", OUTPUT_FIELDS);
const field_table v2_output_parameters_fields = FIELD_TABLE("parameter", OUTPUT_PARAMS_FIELDS);

static int parse_outputs(v2_request *req, json_t *outs, bool binary_all, api_error *err)
{
    const bool attn_allowed = req->enc.attn_mode != ENC_ATTN_NONE;
    if (outs && !json_is_array(outs))
        return BAD("outputs must be an array of {\"name\": ...} objects, not %s",
                   fields_kind(outs));
    if (!outs || json_array_size(outs) == 0) {
        req->out[req->n_out++] = V2_OUT_OUTPUTS;
        req->binary[V2_OUT_OUTPUTS] = binary_all;
        if (attn_allowed) {
            req->out[req->n_out++] = V2_OUT_ATTENTION;
            req->binary[V2_OUT_ATTENTION] = binary_all;
        }
        return 0;
    }
    bool seen[V2_N_OUT] = {false, false};
    for (size_t k = 0; k < json_array_size(outs); k++) {
        json_t *o = json_array_get(outs, k);
        char q[API_SAFE_MAX + 4], what[48];
        snprintf(what, sizeof what, "outputs[%zu]", k);
        if (!json_is_object(o))
            return BAD("outputs[%zu] is %s; expected {\"name\": \"outputs\" or \"attention\"}", k,
                       fields_kind(o));
        if (fields_check(&v2_output_fields, o, what, err) < 0)
            return -1;
        const char *name = json_string_value(json_object_get(o, "name"));
        if (!name)
            return BAD("outputs[%zu] has no name (a string: \"outputs\" or \"attention\")", k);
        int which = -1;
        for (int i = 0; i < V2_N_OUT; i++)
            if (strcmp(name, v2_output_name[i]) == 0)
                which = i;
        if (which < 0)
            return BAD("outputs[%zu]: unknown output '%s'; the model gives outputs and attention",
                       k, api_safe_text(name, q));
        if (seen[which])
            return BAD("outputs[%zu]: output '%s' is asked for twice", k, name);
        if (which == V2_OUT_ATTENTION && !attn_allowed)
            return BAD("outputs[%zu] asks for attention but parameters.attention is \"none\"", k);
        seen[which] = true;
        bool binary = binary_all;
        json_t *params = json_object_get(o, "parameters");
        if (params && !json_is_null(params)) {
            char pw[64];
            snprintf(pw, sizeof pw, "outputs[%zu] (%s): parameters", k, name);
            if (!json_is_object(params))
                return BAD("outputs[%zu] (%s): parameters must be an object, not %s", k, name,
                           fields_kind(params));
            if (fields_check(&v2_output_parameters_fields, params, pw, err) < 0)
                return -1;
            binary = fields_bool(params, "binary_data", binary);
        }
        req->out[req->n_out++] = (v2_output)which;
        req->binary[which] = binary;
    }
    if (!seen[V2_OUT_ATTENTION])
        req->enc.attn_mode = ENC_ATTN_NONE; /* not asked for: not computed */
    return 0;
}

/* ---- parsing: inputs --------------------------------------------------------------- */

/* The inputs a request may give; input_ids and the ones after it are the
 * integer (B, L) tensors of token ids in, INT32 or INT64. */
enum { IN_EMB, IN_LEN, IN_POS, IN_IDS, IN_TYPES, IN_AMASK, IN_TEXT, IN_N };

static const char *const IN_NAME[IN_N] = {"embeddings", "lengths",        "position_ids",
                                          "input_ids",  "token_type_ids", "attention_mask",
                                          "text"};
static const char *const IN_DTYPE[IN_N] = {"FP32",           "INT32",          "INT32",
                                           "INT32 or INT64", "INT32 or INT64", "INT32 or INT64",
                                           "BYTES"};
static const char *const IN_SHAPE[IN_N] = {"[B, L, d_model]", "[B]",    "[L] or [B, L]",
                                           "[B, L]",          "[B, L]", "[B, L]", "[B] or [B, 1]"};
#define INPUTS_TEXT                                                                                \
    "embeddings (FP32 [B, L, d_model]), input_ids (INT32 or INT64 [B, L]) or text (BYTES [B], "    \
    "for a model with a tokenizer), and optionally token_type_ids and attention_mask (INT32 or "   \
    "INT64 [B, L]), lengths (INT32 [B]) and position_ids (INT32 [L] or [B, L])"

typedef struct v2_input {
    int index;        /* in "inputs" */
    const char *name; /* borrowed */
    long long shape[MAX_RANK];
    int rank;
    size_t elem;          /* bytes per element: 4, or 8 for INT64 */
    const json_t *data;   /* JSON data, or NULL */
    const jx_array *text; /* data, scanned in the body's text (an array), or NULL */
    bool binary;
    size_t bin_size;          /* binary_data_size */
    const unsigned char *bin; /* its bytes in the body */
} v2_input;

/* An input's fields, and its parameters'. */
static const field_spec INPUT_FIELDS[] = {{.name = "name", .type = FIELD_JSON},
                                          {.name = "shape", .type = FIELD_JSON},
                                          {.name = "datatype", .type = FIELD_JSON},
                                          {.name = "parameters", .type = FIELD_JSON},
                                          {.name = "data", .type = FIELD_JSON}};
static const field_spec INPUT_PARAMS_FIELDS[] = {
    {.name = "binary_data_size", .type = FIELD_INT, .max = LLONG_MAX}};
const field_table v2_input_fields = FIELD_TABLE("field", INPUT_FIELDS);
const field_table v2_input_parameters_fields = FIELD_TABLE("parameter", INPUT_PARAMS_FIELDS);

/* One input's name, datatype, shape, parameters and data, checked for form. */
static int parse_input(json_t *o, size_t k, v2_input *in, int *which, api_error *err)
{
    char q[API_SAFE_MAX + 4], what[48];
    snprintf(what, sizeof what, "inputs[%zu]", k);
    if (!json_is_object(o))
        return BAD("inputs[%zu] is %s; expected an object with name, shape, datatype and data", k,
                   fields_kind(o));
    if (fields_check(&v2_input_fields, o, what, err) < 0)
        return -1;
    const json_t *v = json_object_get(o, "name");
    if (!json_is_string(v))
        return BAD("inputs[%zu] has no name (a string: \"embeddings\", \"input_ids\", "
                   "\"token_type_ids\", \"attention_mask\", \"lengths\" or \"position_ids\")",
                   k);
    const char *name = json_string_value(v);
    *which = -1;
    for (int i = 0; i < IN_N && *which < 0; i++)
        if (strcmp(name, IN_NAME[i]) == 0)
            *which = i;
    if (*which < 0)
        return BAD("inputs[%zu]: unknown input '%s'; the model takes " INPUTS_TEXT, k,
                   api_safe_text(name, q));
    in->index = (int)k;
    in->name = name;

    v = json_object_get(o, "datatype");
    if (!json_is_string(v))
        return BAD("inputs[%zu] (%s) has no datatype (a string: %s)", k, name, IN_DTYPE[*which]);
    const char *dtype = json_string_value(v);
    in->elem = 4;
    if (*which == IN_TEXT) {
        if (strcmp(dtype, "BYTES") != 0)
            return BAD("inputs[%zu] (%s): datatype is '%s'; the model takes BYTES", k, name,
                       api_safe_text(dtype, q));
        in->elem = 1; /* each element: its bytes (binary: a 4-byte length first) */
    } else if (*which >= IN_IDS && strcmp(dtype, "INT64") == 0)
        in->elem = 8;
    else if (*which != IN_TEXT &&
             strcmp(dtype, *which >= IN_IDS ? "INT32" : IN_DTYPE[*which]) != 0)
        return BAD("inputs[%zu] (%s): datatype is '%s'; the model takes %s", k, name,
                   api_safe_text(dtype, q), IN_DTYPE[*which]);

    v = json_object_get(o, "shape");
    if (!json_is_array(v))
        return BAD("inputs[%zu] (%s) has no shape (an array of integers)", k, name);
    if (json_array_size(v) > MAX_RANK)
        return BAD("inputs[%zu] (%s): shape has %zu dimensions; expected %s", k, name,
                   json_array_size(v), IN_SHAPE[*which]);
    in->rank = (int)json_array_size(v);
    for (int d = 0; d < in->rank; d++) {
        const json_t *e = json_array_get(v, (size_t)d);
        if (!json_is_integer(e) || json_integer_value(e) < 0)
            return BAD("inputs[%zu] (%s): shape[%d] is %s; expected a non-negative integer", k,
                       name, d, json_is_integer(e) ? "negative" : fields_kind(e));
        in->shape[d] = json_integer_value(e);
    }

    json_t *params = json_object_get(o, "parameters");
    if (params && !json_is_null(params)) {
        char pw[64];
        snprintf(pw, sizeof pw, "inputs[%zu] (%s): parameters", k, name);
        if (!json_is_object(params))
            return BAD("inputs[%zu] (%s): parameters must be an object, not %s", k, name,
                       fields_kind(params));
        if (fields_check(&v2_input_parameters_fields, params, pw, err) < 0)
            return -1;
        const long long size = fields_int(params, "binary_data_size", -1);
        if (size >= 0) {
            in->binary = true;
            in->bin_size = (size_t)size;
        }
    }
    v = json_object_get(o, "data");
    in->data = json_is_null(v) ? NULL : v;
    if (in->data && in->binary)
        return BAD("inputs[%zu] (%s) has both data and parameters.binary_data_size; send one", k,
                   name);
    if (!in->data && !in->binary)
        return BAD("inputs[%zu] (%s) has no data (give data, or parameters.binary_data_size and "
                   "the bytes after the JSON header)",
                   k, name);
    return 0;
}

/* "[1][2][3]" for flat element k of shape dims. */
static void index_text(char *buf, size_t size, size_t k, const long long *dims, int rank)
{
    size_t idx[MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        size_t n = dims[d] > 0 ? (size_t)dims[d] : 1;
        idx[d] = k % n;
        k /= n;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; d < rank && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "[%zu]", idx[d]);
}

/* ---- parsing: the inputs' data ------------------------------------------------------
 *
 * An inputs[k].data array is read from the body's text (codec/extract.h),
 * not through jansson's one json_t per number: find_data scans each before
 * jansson runs, and jansson reads the header with them cut to [].  The
 * data is flat (numel entries in row-major order) or nested as the shape. */

#define TEXT_INPUTS 8 /* inputs[0..7]; a request with more is refused anyway */

typedef struct v2_text {
    jx_array data[TEXT_INPUTS]; /* inputs[k].data, scanned when an array */
    bool found[TEXT_INPUTS];
    bool walked; /* the first "inputs" was walked; a second is a duplicate key */
    int k;       /* the input being walked */
} v2_text;

/* A member of inputs[k]: scan "data" when it is an array. */
static const char *input_member(void *ctx, const char *key, size_t key_len, const char *v,
                                const char *end)
{
    v2_text *t = ctx;
    if (!t->found[t->k] && *v == '[' && jt_key_is(key, key_len, "data")) {
        t->found[t->k] = true;
        return jx_scan(v, end, &t->data[t->k]); /* NULL (the walk stops) on a syntax fault */
    }
    return jt_skip_value(v, end);
}

/* A member of the request: walk "inputs". */
static const char *root_member(void *ctx, const char *key, size_t key_len, const char *v,
                               const char *end)
{
    v2_text *t = ctx;
    if (t->walked || *v != '[' || !jt_key_is(key, key_len, "inputs"))
        return jt_skip_value(v, end);
    t->walked = true;
    const char *p = jt_skip_ws(v + 1, end);
    if (p < end && *p == ']')
        return p + 1;
    for (int k = 0;; k++) {
        if (p >= end)
            return NULL;
        if (*p == '{' && k < TEXT_INPUTS) {
            t->k = k;
            p = jx_object(p, end, input_member, t);
        } else {
            p = jt_skip_value(p, end);
        }
        if (!p)
            return NULL;
        p = jt_skip_ws(p, end);
        if (p < end && *p == ',')
            p = jt_skip_ws(p + 1, end);
        else if (p < end && *p == ']')
            return p + 1;
        else
            return NULL;
    }
}

/* The scanned data array's fault (a->fault != JX_OK) as the request's
 * error; the array is nested as in's shape (want: its dims) to rank. */
static int data_fault(const v2_input *in, const jx_array *a, bool fp32, api_error *err)
{
    char where[JX_MAX_RANK * 24], dims[160];
    jx_index_text(a->at, a->depth, where, sizeof where);
    shape_text(in->shape, in->rank, dims, sizeof dims);
    const char *num = fp32 ? "a number" : "an integer";
    switch (a->fault) {
    case JX_COUNT:
        return BAD("inputs[%d] (%s): data%s has %zu entries; shape %s says %lld", in->index,
                   in->name, where, a->entries, dims, in->shape[a->depth]);
    case JX_KIND:
        if (a->depth < a->rank)
            return BAD("inputs[%d] (%s): data%s is %s; shape %s needs an array of %lld here",
                       in->index, in->name, where, a->is, dims, in->shape[a->depth]);
        return BAD("inputs[%d] (%s): data%s is %s, not %s", in->index, in->name, where, a->is, num);
    case JX_RANGE:
        return BAD("inputs[%d] (%s): data%s = %g is outside the %s range", in->index, in->name,
                   where, a->value, fp32 ? "float32" : "INT32");
    default: /* JX_DEEP: the shape's checks came first */
        return api_error_set(err, API_INTERNAL, "v2: data fault %d", (int)a->fault);
    }
}

/* in's JSON data, scanned as a, into numel floats f or ints i. */
static int read_data(const v2_input *in, const jx_array *a, size_t numel, float *f, int *i,
                     api_error *err)
{
    char where[JX_MAX_RANK * 24], dims[160];
    const size_t zeros[JX_MAX_RANK] = {0};
    const char *num = f ? "a number" : "an integer";
    shape_text(in->shape, in->rank, dims, sizeof dims);
    if (in->rank > 1 && a->rank > 1) { /* nested: the first entries against the shape */
        for (int d = 0; d < in->rank; d++) {
            jx_index_text(zeros, d, where, sizeof where);
            if (d == a->rank)
                return BAD("inputs[%d] (%s): data%s is %s; shape %s needs an array of %lld here",
                           in->index, in->name, where, a->leaf ? a->leaf : "missing", dims,
                           in->shape[d]);
            if (a->dims[d] != (size_t)in->shape[d])
                return BAD("inputs[%d] (%s): data%s has %zu entries; shape %s says %lld", in->index,
                           in->name, where, a->dims[d], dims, in->shape[d]);
        }
    } else if (a->dims[0] != numel) {
        return BAD("inputs[%d] (%s): data has %zu %s; shape %s has %zu", in->index, in->name,
                   a->dims[0], a->dims[0] == 1 ? "entry" : "entries", dims, numel);
    }
    const int rank = in->rank > 1 && a->rank > 1 ? in->rank : 1;
    if (a->rank > rank)
        return BAD("inputs[%d] (%s): data%s is an array, not %s", in->index, in->name,
                   jx_index_text(zeros, rank, where, sizeof where), num);
    if (a->fault != JX_OK)
        return data_fault(in, a, f != NULL, err);
    if (a->count != numel) /* the scan held every array to the first's count */
        return api_error_set(err, API_INTERNAL, "v2: data holds %zu numbers", a->count);
    if (f)
        return jx_read_f32(a, f) < 0 ? OOM() : 0;
    jx_int_fault bad;
    const int rc = jx_read_i32(a, i, &bad);
    if (rc <= 0)
        return rc < 0 ? OOM() : 0;
    size_t at[JX_MAX_RANK];
    jx_number_at(a, bad.k, at);
    jx_index_text(at, a->rank, where, sizeof where);
    if (bad.fraction)
        return BAD("inputs[%d] (%s): data%s is a number with a fraction, not an integer", in->index,
                   in->name, where);
    return BAD("inputs[%d] (%s): data%s = %.*s is outside the INT32 range%s", in->index, in->name,
               where, (int)(bad.tok_len > API_SAFE_MAX ? API_SAFE_MAX : bad.tok_len), bad.tok,
               in->elem == 8 ? " (INT64 ids and masks are read as int32)" : "");
}

/* in's data (JSON or binary) into numel floats f or ints i. */
static int read_input(const v2_input *in, size_t numel, float *f, int *i, api_error *err)
{
    char where[160];
    if (in->binary && in->elem == 8) { /* INT64: each within int32 */
        for (size_t k = 0; k < numel; k++) {
            const unsigned char *b = in->bin + 8 * k;
            uint64_t u = 0;
            for (int j = 7; j >= 0; j--)
                u = u << 8 | b[j];
            const int64_t v = (int64_t)u;
            if (v < INT32_MIN || v > INT32_MAX) {
                index_text(where, sizeof where, k, in->shape, in->rank);
                return BAD("inputs[%d] (%s): binary element %zu (%s) = %" PRId64 " is outside the "
                           "INT32 range (INT64 ids and masks are read as int32)",
                           in->index, in->name, k, where, v);
            }
            i[k] = (int)v;
        }
        return 0;
    }
    if (in->binary) {
        for (size_t k = 0; k < numel; k++) {
            const unsigned char *b = in->bin + 4 * k;
            uint32_t u =
                (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            if (i) {
                i[k] = (int)(int32_t)u;
                continue;
            }
            memcpy(&f[k], &u, sizeof u);
            if (!isfinite(f[k])) {
                index_text(where, sizeof where, k, in->shape, in->rank);
                return BAD("inputs[%d] (%s): binary element %zu (%s) is %s", in->index, in->name, k,
                           where, isnan(f[k]) ? "NaN" : "infinite");
            }
        }
        return 0;
    }
    if (in->text)
        return read_data(in, in->text, numel, f, i, err);
    if (json_is_array(in->data)) /* find_data missed it: cannot happen */
        return api_error_set(err, API_INTERNAL, "v2: inputs[%d].data not scanned", in->index);
    return BAD("inputs[%d] (%s): data must be an array (flat in row-major order, or nested "
               "as the shape), not %s",
               in->index, in->name, fields_kind(in->data));
}

/* Inference-Header-Content-Length: a decimal byte count within the body. */
static int header_length(const char *text, size_t len, size_t *out, api_error *err)
{
    char q[API_SAFE_MAX + 4];
    size_t n = 0, digits = 0;
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (n > (SIZE_MAX - 9) / 10)
            return BAD("Inference-Header-Content-Length %s is past the end of the body (%zu "
                       "bytes)",
                       api_safe_text(text, q), len);
        n = n * 10 + (size_t)(*p - '0');
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (!digits || *p)
        return BAD("Inference-Header-Content-Length '%s' is not a byte count (a non-negative "
                   "decimal integer)",
                   api_safe_text(text, q));
    if (n > len)
        return BAD("Inference-Header-Content-Length %zu is past the end of the body (%zu bytes)", n,
                   len);
    *out = n;
    return 0;
}

/* ---- parsing: the request ------------------------------------------------------------ */

/* The BYTES input "text" (in, inputs[in->index]): B strings, JSON or binary
 * (each a 4-byte little-endian length, then its bytes), tokenized by the
 * served tokenizer (text.h) into the batch's token ids, each sequence its
 * own length.  Only the mask options go with it. */
static int parse_text_input(v2_request *req, const v2_input *in, const bool *have,
                            const unsigned char *bin, size_t bin_len, bool has_header, json_t *mask,
                            bool window_lr, const enc_hparams *hp, const api_ctx *ctx,
                            api_error *err)
{
    char what[48], dims[160];
    snprintf(what, sizeof what, "inputs[%d] (text)", in->index);
    for (int w = 0; w < IN_N; w++)
        if (w != IN_TEXT && have[w])
            return BAD("%s: %s is not used with text (the tokens are the sequence; the mask "
                       "options in parameters still apply)",
                       what, IN_NAME[w]);
    if (!(in->rank == 1 || (in->rank == 2 && in->shape[1] == 1)) || in->shape[0] < 1)
        return BAD("%s: shape %s; expected [B] or [B, 1], B at least 1", what,
                   shape_text(in->shape, in->rank, dims, sizeof dims));
    const size_t B = (size_t)in->shape[0];
    encode_request *e = &req->enc;
    json_t *texts = json_array();
    int rc = texts ? 0 : OOM();
    if (rc == 0 && in->binary) {
        size_t at = 0;
        if (!has_header)
            rc = BAD("%s has parameters.binary_data_size but the request has no "
                     "Inference-Header-Content-Length header",
                     what);
        else if (in->bin_size != bin_len)
            rc = BAD("%s: binary_data_size is %zu but %zu bytes follow the JSON header", what,
                     in->bin_size, bin_len);
        for (size_t b = 0; rc == 0 && b < B; b++) {
            if (bin_len - at < 4) {
                rc = BAD("%s: the binary data ends before element %zu's 4-byte length", what, b);
                break;
            }
            const size_t n = (size_t)bin[at] | (size_t)bin[at + 1] << 8 |
                             (size_t)bin[at + 2] << 16 | (size_t)bin[at + 3] << 24;
            at += 4;
            if (n > bin_len - at) {
                rc = BAD("%s: element %zu's length %zu runs past the binary data", what, b, n);
                break;
            }
            const long bad = tok_utf8_invalid_at((const char *)bin + at, n);
            if (bad >= 0) {
                rc = BAD("%s: element %zu is not valid UTF-8 at byte %ld", what, b, bad);
                break;
            }
            if (memchr(bin + at, 0, n)) {
                rc = BAD("%s: element %zu holds a NUL character", what, b);
                break;
            }
            if (json_array_append_new(texts, json_stringn((const char *)bin + at, n)) < 0)
                rc = OOM();
            at += n;
        }
        if (rc == 0 && at != bin_len)
            rc = BAD("%s: %zu bytes after its %zu elements", what, bin_len - at, B);
    } else if (rc == 0) {
        const json_t *data = in->data;
        if (!json_is_array(data) || json_array_size(data) != B)
            rc = BAD("%s: data must hold %zu strings (shape %s)", what, B,
                     shape_text(in->shape, in->rank, dims, sizeof dims));
        for (size_t b = 0; rc == 0 && b < B; b++) {
            const json_t *s = json_array_get(data, b);
            if (json_is_array(s) && json_array_size(s) == 1 && in->rank == 2)
                s = json_array_get(s, 0);
            if (!json_is_string(s))
                rc = BAD("%s: data[%zu] is %s, not a string", what, b, fields_kind(s));
            else if (json_array_append_new(
                         texts, json_stringn(json_string_value(s), json_string_length(s))) < 0)
                rc = OOM();
        }
    }
    text_batch tb = {0};
    /* no field says "truncate": server.auto_truncate does, cutting the end */
    const text_options o = {.flags = TEXT_SPECIALS | (ctx->auto_truncate ? TEXT_TRUNCATE : 0)};
    if (rc == 0 && text_tokenize(texts, what, ctx, &o, &tb, err) < 0)
        rc = -1;
    json_decref(texts);
    if (rc == 0)
        rc = encode_ids_allowed(e, what, err);
    if (rc == 0)
        rc = encode_check_limits(e, B, tb.longest, hp, ctx, err);
    const size_t L = tb.longest;
    if (rc == 0) {
        e->batched = true;
        e->batch.B = (int)B;
        e->batch.L = (int)L;
        if (encode_alloc_ids(e, true, what, err) < 0)
            rc = -1;
        else if (!(e->lengths = malloc(B * sizeof *e->lengths)))
            rc = OOM();
    }
    for (size_t b = 0; rc == 0 && b < B; b++) {
        encode_put_tokens(e, b, &tb.enc[b]);
        e->lengths[b] = (int)tb.enc[b].n;
    }
    e->batch.lengths = e->lengths;
    text_batch_free(&tb);
    if (rc == 0)
        rc = parse_mask(req, mask, window_lr, err);
    if (rc == 0)
        rc = encode_check_ids(e, what, what, err);
    return rc;
}

/* What a request's inputs are, as parse_input found them: in[k] is
 * meaningful only where have[k]. */
typedef struct v2_inputs {
    v2_input in[IN_N];
    bool have[IN_N];
} v2_inputs;

/* The request's "inputs": each one's form, none twice. */
static int collect_inputs(const json_t *inputs, const v2_text *tx, v2_inputs *ins, api_error *err)
{
    if (!json_is_array(inputs) || json_array_size(inputs) == 0)
        return BAD("inputs must be a non-empty array of tensors (" INPUTS_TEXT "), not %s",
                   inputs ? fields_kind(inputs) : "absent");
    for (size_t k = 0; k < json_array_size(inputs); k++) {
        v2_input cur = {0};
        int which = -1;
        if (parse_input(json_array_get(inputs, k), k, &cur, &which, err) < 0)
            return -1;
        if (ins->have[which])
            return BAD("inputs[%zu]: input '%s' is given twice (also inputs[%d])", k, cur.name,
                       ins->in[which].index);
        if (k < TEXT_INPUTS && tx->found[k] && cur.data) /* read from the text */
            cur.text = &tx->data[k];
        ins->in[which] = cur;
        ins->have[which] = true;
    }
    return 0;
}

/* Which inputs go together: embeddings or input_ids, token types with ids. */
static int check_input_set(encode_request *e, const v2_inputs *ins, const enc_hparams *hp,
                           api_error *err)
{
    const v2_input *in = ins->in;
    const bool *have = ins->have;
    if (have[IN_EMB] && have[IN_IDS])
        return BAD("inputs[%d] (input_ids): give embeddings (inputs[%d]) or input_ids, not both",
                   in[IN_IDS].index, in[IN_EMB].index);
    if (!have[IN_EMB] && !have[IN_IDS])
        return BAD("input 'embeddings' is required (FP32 [B, L, %d]), or 'input_ids' (INT32 or "
                   "INT64 [B, L]) for a model with an embedding module",
                   hp->d_model);
    if (have[IN_TYPES] && !have[IN_IDS])
        return BAD("inputs[%d] (token_type_ids) is only used with input_ids", in[IN_TYPES].index);
    if (!have[IN_IDS])
        return 0;
    char what[64];
    snprintf(what, sizeof what, "inputs[%d] (input_ids)", in[IN_IDS].index);
    return encode_ids_allowed(e, what, err);
}

/* B and L, from embeddings [B, L, D] or input_ids [B, L], against the
 * limits; then every other input's shape against them. */
static int batch_shape(encode_request *e, const v2_inputs *ins, const enc_hparams *hp,
                       const api_ctx *ctx, size_t *B_out, size_t *L_out, api_error *err)
{
    const v2_input *in = ins->in;
    const bool *have = ins->have;
    const v2_input *x = &in[have[IN_IDS] ? IN_IDS : IN_EMB];
    char dims[160], want[64];
    if (have[IN_IDS])
        snprintf(want, sizeof want, "[B, L]");
    else
        snprintf(want, sizeof want, "[B, L, %d]", hp->d_model);
    if (x->rank != (have[IN_IDS] ? 2 : 3))
        return BAD("inputs[%d] (%s): shape %s has %d dimension%s; expected %s", x->index, x->name,
                   shape_text(x->shape, x->rank, dims, sizeof dims), x->rank,
                   x->rank == 1 ? "" : "s", want);
    if (x->shape[0] < 1 || x->shape[1] < 1)
        return BAD("inputs[%d] (%s): shape %s is empty; B and L must be at least 1", x->index,
                   x->name, shape_text(x->shape, x->rank, dims, sizeof dims));
    if (!have[IN_IDS] && x->shape[2] != hp->d_model)
        return BAD("inputs[%d] (embeddings): shape[2] = %lld but d_model is %d", x->index,
                   x->shape[2], hp->d_model);
    if (encode_check_limits(e, (size_t)x->shape[0], (size_t)x->shape[1], hp, ctx, err) < 0)
        return -1;
    const size_t B = (size_t)x->shape[0], L = (size_t)x->shape[1];
    const v2_input *pi = &in[IN_POS];
    const char *of = have[IN_IDS] ? "input_ids" : "embeddings";
    if (have[IN_LEN] && (in[IN_LEN].rank != 1 || in[IN_LEN].shape[0] != (long long)B))
        return BAD("inputs[%d] (lengths): shape %s; expected [%zu], one length per sequence of %s",
                   in[IN_LEN].index,
                   shape_text(in[IN_LEN].shape, in[IN_LEN].rank, dims, sizeof dims), B, of);
    if (have[IN_POS] && !(pi->rank == 1 && pi->shape[0] == (long long)L) &&
        !(pi->rank == 2 && pi->shape[0] == (long long)B && pi->shape[1] == (long long)L))
        return BAD("inputs[%d] (position_ids): shape %s; expected [%zu] (every sequence) or "
                   "[%zu, %zu], as %s",
                   pi->index, shape_text(pi->shape, pi->rank, dims, sizeof dims), L, B, L, of);
    for (int w = IN_TYPES; w <= IN_AMASK; w++)
        if (have[w] &&
            !(in[w].rank == 2 && in[w].shape[0] == (long long)B && in[w].shape[1] == (long long)L))
            return BAD("inputs[%d] (%s): shape %s; expected [%zu, %zu], as %s", in[w].index,
                       in[w].name, shape_text(in[w].shape, in[w].rank, dims, sizeof dims), B, L,
                       of);
    *B_out = B;
    *L_out = L;
    return 0;
}

/* The binary data after the JSON header: in input order, each input's
 * exactly its shape's bytes (numel[k] elements), all of it claimed. */
static int claim_binary(v2_inputs *ins, const size_t *numel, const unsigned char *bin,
                        size_t bin_len, bool has_header, size_t json_len, api_error *err)
{
    int order[IN_N];
    for (int a = 0; a < IN_N; a++)
        order[a] = a;
    for (int a = 0; a < IN_N; a++) /* by input index; absent inputs last */
        for (int b = a + 1; b < IN_N; b++) {
            const int ia = ins->have[order[a]] ? ins->in[order[a]].index : 1 << 20;
            const int ib = ins->have[order[b]] ? ins->in[order[b]].index : 1 << 20;
            if (ib < ia) {
                const int t = order[a];
                order[a] = order[b];
                order[b] = t;
            }
        }
    char dims[160];
    size_t used = 0;
    for (int o = 0; o < IN_N; o++) {
        v2_input *t = &ins->in[order[o]];
        if (!ins->have[order[o]] || !t->binary)
            continue;
        const size_t n = numel[order[o]];
        if (!has_header)
            return BAD("inputs[%d] (%s) has parameters.binary_data_size but the request has no "
                       "Inference-Header-Content-Length header (the JSON header's length in "
                       "bytes)",
                       t->index, t->name);
        if (t->bin_size / t->elem != n || t->bin_size % t->elem != 0)
            return BAD("inputs[%d] (%s): binary_data_size is %zu but shape %s of %s needs %zu "
                       "bytes",
                       t->index, t->name, t->bin_size,
                       shape_text(t->shape, t->rank, dims, sizeof dims),
                       t->elem == 8 ? "INT64" : IN_DTYPE[order[o]], n * t->elem);
        if (t->bin_size > bin_len - used)
            return BAD("inputs[%d] (%s): binary_data_size %zu runs past the end of the body: "
                       "only %zu bytes follow the %zu-byte JSON header%s",
                       t->index, t->name, t->bin_size, bin_len - used, json_len,
                       used ? " and the inputs before it" : "");
        t->bin = bin + used;
        used += t->bin_size;
    }
    if (used != bin_len)
        return BAD("%zu byte%s after the %zu-byte JSON header %s claimed by no input's "
                   "binary_data_size (the inputs claim %zu of %zu)",
                   bin_len - used, bin_len - used == 1 ? "" : "s", json_len,
                   bin_len - used == 1 ? "is" : "are", used, bin_len);
    return 0;
}

/* The batch read from the inputs into req->enc (B x L, numel[k] elements
 * of input k), and the mask object of the parameters applied to it. */
static int read_batch(v2_request *req, const v2_inputs *ins, size_t B, size_t L,
                      const size_t *numel, json_t *mask, bool window_lr, const api_ctx *ctx,
                      api_error *err)
{
    encode_request *e = &req->enc;
    const v2_input *in = ins->in;
    const bool *have = ins->have;
    char what[64];
    e->batched = true;
    e->batch.B = (int)B;
    e->batch.L = (int)L;
    if (have[IN_IDS]) {
        snprintf(what, sizeof what, "inputs[%d] (input_ids)", in[IN_IDS].index);
        if (encode_alloc_ids(e, have[IN_TYPES], what, err) < 0 ||
            read_input(&in[IN_IDS], B * L, NULL, e->input_ids, err) < 0 ||
            (have[IN_TYPES] && read_input(&in[IN_TYPES], B * L, NULL, e->token_type_ids, err) < 0))
            return -1;
    } else {
        if (!(e->x = encode_alloc_input(e, numel[IN_EMB])))
            return OOM();
        e->batch.x = e->x;
        if (read_input(&in[IN_EMB], numel[IN_EMB], e->x, NULL, err) < 0)
            return -1;
    }
    if (have[IN_LEN]) {
        if (!(e->lengths = malloc(B * sizeof *e->lengths)))
            return OOM();
        e->batch.lengths = e->lengths;
        if (read_input(&in[IN_LEN], B, NULL, e->lengths, err) < 0)
            return -1;
        for (size_t b = 0; b < B; b++)
            if (e->lengths[b] < 1 || (size_t)e->lengths[b] > L)
                return BAD("inputs[%d] (lengths): lengths[%zu] = %d is outside 1..%zu",
                           in[IN_LEN].index, b, e->lengths[b], L);
    }
    if (parse_mask(req, mask, window_lr, err) < 0)
        return -1;
    int rc = 0;
    if (have[IN_AMASK]) {
        int32_t *am = malloc(B * L * sizeof *am);
        char lw[48] = "";
        snprintf(what, sizeof what, "inputs[%d] (attention_mask)", in[IN_AMASK].index);
        if (have[IN_LEN]) /* in[IN_LEN] is set only then */
            snprintf(lw, sizeof lw, "inputs[%d] (lengths)", in[IN_LEN].index);
        if (!am)
            rc = OOM();
        else if ((rc = read_input(&in[IN_AMASK], B * L, NULL, am, err)) == 0)
            rc = encode_set_attention_mask(e, am, NULL, what, have[IN_LEN] ? lw : NULL, err);
        free(am);
    }
    if (rc == 0 && have[IN_POS]) {
        const v2_input *pi = &in[IN_POS];
        int *ids = malloc(numel[IN_POS] * sizeof *ids);
        long long *vals = malloc(numel[IN_POS] * sizeof *vals);
        snprintf(what, sizeof what, "inputs[%d] (position_ids)", pi->index);
        if (!ids || !vals)
            rc = OOM();
        else if ((rc = read_input(pi, numel[IN_POS], NULL, ids, err)) == 0) {
            for (size_t k = 0; k < numel[IN_POS]; k++)
                vals[k] = ids[k];
            rc = encode_set_positions(e, vals, pi->rank == 2, ctx, what, err);
        }
        free(ids);
        free(vals);
    }
    if (rc == 0 && have[IN_IDS]) {
        char tw[48] = "token_type_ids";
        snprintf(what, sizeof what, "inputs[%d] (input_ids)", in[IN_IDS].index);
        if (have[IN_TYPES]) /* in[IN_TYPES] is set only then */
            snprintf(tw, sizeof tw, "inputs[%d] (token_type_ids)", in[IN_TYPES].index);
        rc = encode_check_ids(e, what, tw, err);
    }
    return rc;
}

/* The request's fields. */
static const field_spec ROOT_FIELDS[] = {
    {.name = "id", .type = FIELD_STRING},          {.name = "model_name", .type = FIELD_JSON},
    {.name = "model_version", .type = FIELD_JSON}, {.name = "parameters", .type = FIELD_JSON},
    {.name = "inputs", .type = FIELD_JSON},        {.name = "outputs", .type = FIELD_JSON}};
const field_table v2_request_fields = FIELD_TABLE("field", ROOT_FIELDS);

/* The request's own fields: id, and the model's name and version as the
 * URL gives them. */
static int check_request_fields(v2_request *req, json_t *root, const char *model_name,
                                api_error *err)
{
    char q[API_SAFE_MAX + 4], m[API_SAFE_MAX + 4];
    if (!json_is_object(root))
        return BAD("the inference request must be a JSON object, not %s", fields_kind(root));
    if (fields_check(&v2_request_fields, root, "", err) < 0)
        return -1;
    const json_t *v = fields_get(root, "id");
    if (v && !(req->id = strdup(json_string_value(v))))
        return OOM();
    v = fields_get(root, "model_name");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), model_name) != 0))
        return BAD("model_name is %s%s%s but the URL names model '%s'",
                   json_is_string(v) ? "'" : "",
                   json_is_string(v) ? api_safe_text(json_string_value(v), q) : fields_kind(v),
                   json_is_string(v) ? "'" : "", api_safe_text(model_name, m));
    v = fields_get(root, "model_version");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), V2_MODEL_VERSION) != 0))
        return BAD("model_version must be \"" V2_MODEL_VERSION "\" (the model's only version)");
    return 0;
}

/* The request after its own fields, in steps: parameters (the mask object
 * they make is *mask, the caller's to free), outputs, the inputs' form,
 * which go together, B and L and the shapes, the binary data, the batch. */
static int parse_request(v2_request *req, json_t *root, const v2_text *tx, const unsigned char *bin,
                         size_t bin_len, bool has_header, size_t json_len, const enc_hparams *hp,
                         const api_ctx *ctx, json_t **mask, api_error *err)
{
    bool binary_all = false, window_lr = false;
    if (parse_params(req, fields_get(root, "parameters"), &binary_all, mask, &window_lr, err) < 0 ||
        parse_outputs(req, fields_get(root, "outputs"), binary_all, err) < 0)
        return -1;
    encode_request *e = &req->enc;
    if (e->attn_mode != ENC_ATTN_NONE)
        e->want_layer[e->n_layers - 1] = true;
    v2_inputs ins = {0};
    if (collect_inputs(json_object_get(root, "inputs"), tx, &ins, err) < 0)
        return -1;
    if (ins.have[IN_TEXT])
        return parse_text_input(req, &ins.in[IN_TEXT], ins.have, bin, bin_len, has_header, *mask,
                                window_lr, hp, ctx, err);
    size_t B = 0, L = 0;
    if (check_input_set(e, &ins, hp, err) < 0 || batch_shape(e, &ins, hp, ctx, &B, &L, err) < 0)
        return -1;
    const bool pos_rows = ins.have[IN_POS] && ins.in[IN_POS].rank == 2;
    const size_t numel[IN_N] = {
        B * L * (size_t)hp->d_model, B, pos_rows ? B * L : L, B * L, B * L, B * L};
    if (claim_binary(&ins, numel, bin, bin_len, has_header, json_len, err) < 0)
        return -1;
    return read_batch(req, &ins, B, L, numel, *mask, window_lr, ctx, err);
}

static int parse_root(v2_request *req, json_t *root, const v2_text *tx, const unsigned char *bin,
                      size_t bin_len, bool has_header, size_t json_len, const char *model_name,
                      const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    if (check_request_fields(req, root, model_name, err) < 0)
        return -1;
    json_t *mask = NULL;
    const int rc =
        parse_request(req, root, tx, bin, bin_len, has_header, json_len, hp, ctx, &mask, err);
    json_decref(mask);
    return rc;
}

int v2_request_parse(v2_request *req, const char *body, size_t len, const char *header_len,
                     const char *model_name, const enc_hparams *hp, const api_ctx *ctx,
                     api_error *err)
{
    memset(req, 0, sizeof *req);
    if (encode_request_init(&req->enc, hp, ctx, err) < 0)
        return -1;
    const char *text = body ? body : "";
    const size_t n = body ? len : 0;
    size_t json_len = n;
    if (header_len && header_length(header_len, n, &json_len, err) < 0)
        return -1;
    /* The data arrays are read from the text; jansson reads the rest. */
    v2_text t;
    memset(&t, 0, sizeof t);
    jx_object(jt_skip_ws(text, text + json_len), text + json_len, root_member, &t);
    const jx_array *scanned[TEXT_INPUTS] = {NULL};
    for (int k = 0; k < TEXT_INPUTS; k++)
        /* a BYTES tensor's strings: jansson reads them */
        if (t.found[k] &&
            !(t.data[k].fault == JX_KIND && t.data[k].is && strcmp(t.data[k].is, "a string") == 0))
            scanned[k] = &t.data[k];
    body_json bj;
    if (body_load(text, json_len, scanned, TEXT_INPUTS, NULL, 0, false, &bj) < 0) {
        if (bj.fault != BODY_JSON)
            return fields_body_error(&bj, false, err);
        return BAD("invalid JSON %sat line %d, column %d: %s%s",
                   header_len ? "header (the first Inference-Header-Content-Length bytes) " : "",
                   bj.line, bj.column, bj.why,
                   header_len ? ""
                              : " (a body with binary tensors needs an "
                                "Inference-Header-Content-Length header)");
    }
    json_t *root = bj.root;
    /* U+0000 nowhere: the names and datatypes are compared as C strings */
    int rc = fields_refuse_nul(root, NULL, err);
    if (rc == 0)
        rc = parse_root(req, root, &t, (const unsigned char *)text + json_len, n - json_len,
                        header_len != NULL, json_len, model_name, hp, ctx, err);
    json_decref(root);
    if (rc == 0)
        rc = encode_request_plan(&req->enc, hp, ctx, err);
    return rc;
}

void v2_request_free(v2_request *req)
{
    if (!req)
        return;
    encode_request_free(&req->enc);
    free(req->id);
    memset(req, 0, sizeof *req);
}

