/* encode.c - the /v1/encode codec: a JSON request body to a core batch
 * (encode_request_parse), a forward's results to the JSON response body
 * (encode_response), and RFC 4648 base64.
 *
 * Choices where API.md is silent (docs/api.md, "POST /v1/encode in detail",
 * is the user's version of this list):
 *
 * - "attention" in the response is always the LAST layer's weights, whatever
 *   attention_layers says; attention_layers only adds the "attention_layers"
 *   array, in the order the request listed the layers ("all": 0..n-1).  So
 *   the last layer is computed whenever attention is not "none".  With
 *   "none", attention_layers must still be well-formed (typos are caught)
 *   but has no effect.
 * - The unbatched form ([L][d_model] embeddings, or shape [L, d_model]) drops
 *   the batch dimension everywhere: outputs [L][D], attention [H][L][L]
 *   ("mean": [L][L]), shape [L, D].  Its key_padding may be bool[L] or
 *   bool[1][L]; its lengths is int[1]; its mask.attn must be [L][L].
 * - With lengths the response is ragged: sequence b has lengths[b] rows and
 *   [H][len][len] attention.  With "encoding": "base64" and no lengths,
 *   outputs / attention are ONE base64 string each (row-major float32 LE) with
 *   outputs_shape / attention_shape the full shapes ([B, L, D],
 *   [B, H, L, L] or [B, L, L]; no B for the unbatched form).  With lengths,
 *   outputs and attention are arrays of B strings (one per sequence) and
 *   outputs_shape / attention_shape arrays of B shapes ([len, D],
 *   [H, len, len] or [len, len]); for the unbatched form, a single string and
 *   shape.  Entries of attention_layers carry "attention" in the same form;
 *   attention_shape applies to each.
 * - A JSON null for an optional field means the field is absent.
 * - Limits are checked as soon as B and L are known, before anything sized
 *   by them is allocated: B > max_batch, L > max_seq_len, B*L >
 *   max_batch_tokens, then the attention output B * (H or 1) * L * L * 4
 *   bytes * (distinct layers computed) > max_attention_bytes (L is the padded
 *   length; lengths do not reduce it).  All 413.  A NULL limits means none
 *   (sizes are still checked for overflow).
 * - Every input number must fit float32 (|v| <= FLT_MAX), padding rows
 *   included; base64 input must be finite everywhere.  mask.attn numbers
 *   below -FLT_MAX (JSON has no -Infinity; send e.g. -1e39) become -inf,
 *   i.e. "not allowed"; above +FLT_MAX they are refused.
 * - mask.window sides larger than L are clamped to L (same meaning).
 * - Numbers are printed with "%.{precision}g" in the C locale (the daemon
 *   never calls setlocale).  A non-finite value, which the core never
 *   returns, would be printed as null so the body stays valid JSON.
 *
 * Error messages name the field and index: "embeddings[1][3] has 511
 * numbers; d_model is 512", "mask: unknown option 'x'", "lengths[1] = 9 is
 * outside 1..7", "batch of 65 sequences is over limits.max_batch (64)".
 * Text from the client (field names, strings) is quoted as printable ASCII
 * only and cut, so a message is always valid UTF-8.
 */
#include "encode.h"
#include "strbuf.h"

#include <float.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)       api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define TOO_LARGE(...) api_error_set(err, API_TOO_LARGE, __VA_ARGS__)

/* ---- small helpers --------------------------------------------------------- */

#define SAFE_MAX 40

/* Client text made safe for an error message: printable ASCII only (other
 * bytes become '?'), cut after max characters with "...".  out has room for
 * max + 4.  Returns out. */
static const char *safe_text_n(const char *s, char *out, size_t max)
{
    size_t n = 0;
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    for (; *u && n < max; u++)
        out[n++] = (*u >= 0x20 && *u < 0x7f) ? (char)*u : '?';
    if (*u) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

/* The same for names and values quoted from the request: SAFE_MAX characters. */
static const char *safe_text(const char *s, char out[SAFE_MAX + 4])
{
    return safe_text_n(s, out, SAFE_MAX);
}

/* "a string", "an array", ... for messages. */
static const char *kind_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* obj[key], with JSON null taken as absent.  Borrowed. */
static json_t *field(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_null(v) ? NULL : v;
}

/* *out = a * b; returns true on overflow. */
static bool mul_over(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return true;
    *out = a * b;
    return false;
}

/* A JSON number as float32: 0, or -1 when it is outside float32's range. */
static int to_float(const json_t *v, float *out)
{
    double d = json_number_value(v);
    if (!(d <= FLT_MAX && d >= -FLT_MAX))
        return -1;
    *out = (float)d;
    return 0;
}

/* "s" unless n is 1, for "row%s", "number%s"; entries and matrices have their own. */
static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

static const char *entries(size_t n)
{
    return n == 1 ? "entry" : "entries";
}

static void *alloc_zero(size_t n, size_t size)
{
    return calloc(n ? n : 1, size ? size : 1);
}

/* ---- base64 (RFC 4648, standard alphabet, with padding) ------------------ */

static const char B64_ALPHABET[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Encodes n bytes (n a multiple of 3, or the final piece) to dst: 4 chars
 * per 3 bytes, '=' padding on a short final group.  Returns chars written. */
static size_t b64_encode_block(const unsigned char *src, size_t n, char *dst)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)src[i] << 16 | (unsigned)src[i + 1] << 8 | src[i + 2];
        dst[o++] = B64_ALPHABET[v >> 18 & 63];
        dst[o++] = B64_ALPHABET[v >> 12 & 63];
        dst[o++] = B64_ALPHABET[v >> 6 & 63];
        dst[o++] = B64_ALPHABET[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)src[i] << 16;
        dst[o++] = B64_ALPHABET[v >> 18 & 63];
        dst[o++] = B64_ALPHABET[v >> 12 & 63];
        dst[o++] = '=';
        dst[o++] = '=';
    } else if (n - i == 2) {
        unsigned v = (unsigned)src[i] << 16 | (unsigned)src[i + 1] << 8;
        dst[o++] = B64_ALPHABET[v >> 18 & 63];
        dst[o++] = B64_ALPHABET[v >> 12 & 63];
        dst[o++] = B64_ALPHABET[v >> 6 & 63];
        dst[o++] = '=';
    }
    return o;
}

/* Bytes that len characters of base64 decode to (len a multiple of 4),
 * assuming the padding is well placed (decoding checks it). */
static size_t b64_decoded_size(const char *s, size_t len)
{
    size_t n = len / 4 * 3;
    if (len >= 4 && s[len - 1] == '=')
        n -= (s[len - 2] == '=') ? 2 : 1;
    return n;
}

/* Decodes len characters (a multiple of 4) into out, which has room for
 * b64_decoded_size bytes.  Returns 0, or -1 with *bad the offset of the
 * first character that is not valid there (a non-alphabet character, or '='
 * other than one or two at the very end). */
static int b64_decode_into(const char *s, size_t len, unsigned char *out, size_t *bad)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        const bool last = i + 4 == len;
        int v[4];
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + (size_t)k];
            if (c == '=') {
                if (!last || k < 2 || (k == 2 && s[i + 3] != '=')) {
                    *bad = i + (size_t)k;
                    return -1;
                }
                v[k] = -2;
            } else if ((v[k] = b64_value(c)) < 0) {
                *bad = i + (size_t)k;
                return -1;
            }
        }
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (v[2] >= 0)
            out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        if (v[3] >= 0)
            out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    }
    return 0;
}

char *base64_encode(const void *data, size_t len, size_t *out_len)
{
    if (len > (SIZE_MAX - 4) / 4 * 3)
        return NULL;
    size_t n = (len + 2) / 3 * 4;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    size_t w = b64_encode_block(data ? data : "", len, s);
    s[w] = '\0';
    if (out_len)
        *out_len = w;
    return s;
}

unsigned char *base64_decode(const char *text, size_t len, size_t *out_len)
{
    if (len % 4 || (len && !text))
        return NULL;
    size_t n = b64_decoded_size(text, len), bad;
    unsigned char *out = malloc(n ? n : 1);
    if (!out)
        return NULL;
    if (b64_decode_into(text, len, out, &bad) < 0) {
        free(out);
        return NULL;
    }
    if (out_len)
        *out_len = n;
    return out;
}

/* ---- parsing: options ------------------------------------------------------ */

static const char *const TOP_FIELDS[] = {"embeddings",       "embeddings_b64", "shape",
                                         "lengths",          "mask",           "attention",
                                         "attention_layers", "precision",      "encoding"};

static int check_fields(json_t *root, api_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof TOP_FIELDS / sizeof *TOP_FIELDS; i++)
            known = known || strcmp(key, TOP_FIELDS[i]) == 0;
        if (!known) {
            char s[SAFE_MAX + 4];
            return BAD("unknown field '%s'; expected embeddings, embeddings_b64, shape, lengths, "
                       "mask, attention, attention_layers, precision or encoding",
                       safe_text(key, s));
        }
    }
    return 0;
}

/* attention_layers: "last" | "all" | int[] of distinct indices 0..n-1. */
static int parse_layers(encode_request *req, const json_t *v, api_error *err)
{
    const int n = req->n_layers;
    const char *s = json_string_value(v);
    char q[SAFE_MAX + 4];
    if (!v || (s && strcmp(s, "last") == 0))
        return 0;
    req->layers_listed = true;
    if (s && strcmp(s, "all") == 0) {
        for (int l = 0; l < n; l++)
            req->layers[req->n_listed++] = l;
        return 0;
    }
    if (s)
        return BAD("attention_layers must be \"last\", \"all\" or an array of layer indices "
                   "0..%d, not '%s'",
                   n - 1, safe_text(s, q));
    if (!json_is_array(v))
        return BAD("attention_layers must be \"last\", \"all\" or an array of layer indices "
                   "0..%d, not %s",
                   n - 1, kind_of(v));
    if (json_array_size(v) == 0)
        return BAD("attention_layers is empty; give layer indices 0..%d, \"all\" or \"last\"",
                   n - 1);
    bool *seen = alloc_zero((size_t)n, sizeof *seen);
    if (!seen)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    int rc = 0;
    for (size_t k = 0; k < json_array_size(v) && rc == 0; k++) {
        json_t *e = json_array_get(v, k);
        if (!json_is_integer(e)) {
            rc = BAD("attention_layers[%zu] is %s; expected a layer index 0..%d", k, kind_of(e),
                     n - 1);
            break;
        }
        long long l = json_integer_value(e);
        if (l < 0 || l >= n)
            rc = BAD("attention_layers[%zu] = %lld is outside 0..%d (the model has %d layer%s)", k,
                     l, n - 1, n, plural((size_t)n));
        else if (seen[l])
            rc = BAD("attention_layers[%zu] = %lld is listed twice", k, l);
        else {
            seen[l] = true;
            req->layers[req->n_listed++] = (int)l;
        }
    }
    free(seen);
    return rc;
}

/* attention, attention_layers, precision, encoding. */
static int parse_options(encode_request *req, const json_t *root, api_error *err)
{
    char q[SAFE_MAX + 4];
    json_t *v = field(root, "attention");
    if (v) {
        const char *s = json_string_value(v);
        if (!s)
            return BAD("attention must be \"heads\", \"mean\" or \"none\", not %s", kind_of(v));
        if (strcmp(s, "heads") == 0)
            req->attn_mode = ENC_ATTN_HEADS;
        else if (strcmp(s, "mean") == 0)
            req->attn_mode = ENC_ATTN_MEAN;
        else if (strcmp(s, "none") == 0)
            req->attn_mode = ENC_ATTN_NONE;
        else
            return BAD("attention must be \"heads\", \"mean\" or \"none\", not '%s'",
                       safe_text(s, q));
    }
    if (parse_layers(req, field(root, "attention_layers"), err) < 0)
        return -1;
    if (req->attn_mode == ENC_ATTN_NONE) {
        req->layers_listed = false; /* validated, but nothing to return */
    } else {
        req->want_layer[req->n_layers - 1] = true;
        for (int k = 0; k < req->n_listed; k++)
            req->want_layer[req->layers[k]] = true;
    }

    if ((v = field(root, "precision"))) {
        if (!json_is_integer(v))
            return BAD("precision must be an integer 1..9, not %s", kind_of(v));
        long long p = json_integer_value(v);
        if (p < 1 || p > 9)
            return BAD("precision = %lld is outside 1..9", p);
        req->precision = (int)p;
    }
    if ((v = field(root, "encoding"))) {
        const char *s = json_string_value(v);
        if (!s)
            return BAD("encoding must be \"json\" or \"base64\", not %s", kind_of(v));
        if (strcmp(s, "base64") == 0)
            req->base64_out = true;
        else if (strcmp(s, "json") != 0)
            return BAD("encoding must be \"json\" or \"base64\", not '%s'", safe_text(s, q));
    }
    return 0;
}

/* ---- parsing: limits ------------------------------------------------------- */

/* B and L against the limits and size_t, before anything sized by them is
 * allocated.  413 naming the limit. */
static int check_limits(const encode_request *req, size_t B, size_t L, const enc_hparams *hp,
                        const api_limits *lim, api_error *err)
{
    if (lim && B > (size_t)(lim->max_batch > 0 ? lim->max_batch : 0))
        return TOO_LARGE("batch of %zu sequences is over limits.max_batch (%d)", B, lim->max_batch);
    if (lim && L > (size_t)(lim->max_seq_len > 0 ? lim->max_seq_len : 0))
        return TOO_LARGE("sequence length %zu is over limits.max_seq_len (%d)", L,
                         lim->max_seq_len);
    size_t BL = 0, x_bytes;
    if (B > INT_MAX || L > INT_MAX || mul_over(B, L, &BL) ||
        mul_over(BL, (size_t)hp->d_model * sizeof(float), &x_bytes))
        return TOO_LARGE("batch of %zu sequences of %zu positions is too large", B, L);
    if (lim && BL > (size_t)(lim->max_batch_tokens > 0 ? lim->max_batch_tokens : 0))
        return TOO_LARGE("batch of %zu sequences x %zu positions = %zu tokens is over "
                         "limits.max_batch_tokens (%ld)",
                         B, L, BL, lim->max_batch_tokens);
    if (req->attn_mode == ENC_ATTN_NONE)
        return 0;

    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
    size_t layers = 0, bytes = 0;
    for (int l = 0; l < req->n_layers; l++)
        layers += req->want_layer[l];
    bool over = mul_over(B, heads, &bytes) || mul_over(bytes, L, &bytes) ||
                mul_over(bytes, L, &bytes) || mul_over(bytes, sizeof(float), &bytes) ||
                mul_over(bytes, layers, &bytes);
    if (over || (lim && bytes > lim->max_attention_bytes)) {
        char amount[48];
        if (over)
            snprintf(amount, sizeof amount, "more than %zu", SIZE_MAX);
        else
            snprintf(amount, sizeof amount, "%zu", bytes);
        return TOO_LARGE("attention output of %s bytes (%zu sequences x %zu head%s x %zu x %zu "
                         "float32 x %zu layer%s) is over limits.max_attention_bytes (%zu); ask "
                         "for %s, or fewer attention_layers",
                         amount, B, heads, heads == 1 ? "" : "s", L, L, layers,
                         layers == 1 ? "" : "s", lim ? lim->max_attention_bytes : SIZE_MAX,
                         req->attn_mode == ENC_ATTN_HEADS ? "\"attention\": \"mean\" or \"none\""
                                                          : "\"attention\": \"none\"");
    }
    return 0;
}

/* ---- parsing: embeddings --------------------------------------------------- */

/* The form and B, L of nested embeddings, from embeddings and embeddings[0]. */
static int nested_shape(const json_t *emb, bool *batched, size_t *B, size_t *L, api_error *err)
{
    static const char form[] = "number[B][L][d_model] or number[L][d_model]";
    if (!json_is_array(emb))
        return BAD("embeddings must be %s, not %s", form, kind_of(emb));
    if (json_array_size(emb) == 0)
        return BAD("embeddings is empty; expected %s", form);
    json_t *e0 = json_array_get(emb, 0);
    if (!json_is_array(e0))
        return BAD("embeddings[0] is %s; embeddings must be %s", kind_of(e0), form);
    if (json_array_size(e0) == 0)
        return BAD("embeddings[0] is empty; embeddings must be %s", form);
    json_t *e00 = json_array_get(e0, 0);
    if (json_is_array(e00)) {
        *batched = true;
        *B = json_array_size(emb);
        *L = json_array_size(e0);
    } else if (json_is_number(e00)) {
        *batched = false;
        *B = 1;
        *L = json_array_size(emb);
    } else {
        return BAD("embeddings[0][0] is %s; embeddings must be %s", kind_of(e00), form);
    }
    return 0;
}

/* "embeddings[b][i]", or "embeddings[i]" for the unbatched form. */
static void row_name(char *buf, size_t n, bool batched, size_t b, size_t i)
{
    if (batched)
        snprintf(buf, n, "embeddings[%zu][%zu]", b, i);
    else
        snprintf(buf, n, "embeddings[%zu]", i);
}

/* Holds every sequence and row of nested embeddings to B, L and D and every
 * entry to float32 numbers; when x is not NULL, also converts them into x
 * (B, L, D).  Called once to check, then (after allocating x) to fill. */
static int walk_embeddings(const json_t *emb, bool batched, size_t B, size_t L, size_t D, float *x,
                           api_error *err)
{
    char name[80];
    for (size_t b = 0; b < B; b++) {
        const json_t *seq = batched ? json_array_get(emb, b) : emb;
        if (!json_is_array(seq))
            return BAD("embeddings[%zu] is %s; expected an array of rows", b, kind_of(seq));
        if (json_array_size(seq) != L)
            return BAD("embeddings[%zu] has %zu row%s; embeddings[0] has %zu (sequences must "
                       "have the same length: pad them and send lengths)",
                       b, json_array_size(seq), plural(json_array_size(seq)), L);
        for (size_t i = 0; i < L; i++) {
            const json_t *row = json_array_get(seq, i);
            row_name(name, sizeof name, batched, b, i);
            if (!json_is_array(row))
                return BAD("%s is %s; expected an array of d_model (%zu) numbers", name,
                           kind_of(row), D);
            if (json_array_size(row) != D)
                return BAD("%s has %zu number%s; d_model is %zu", name, json_array_size(row),
                           plural(json_array_size(row)), D);
            float *dst = x ? x + (b * L + i) * D : NULL;
            for (size_t k = 0; k < D; k++) {
                const json_t *v = json_array_get(row, k);
                float f;
                if (!json_is_number(v))
                    return BAD("%s[%zu] is not a number (it is %s)", name, k, kind_of(v));
                if (to_float(v, &f) < 0)
                    return BAD("%s[%zu] = %g is outside the float32 range", name, k,
                               json_number_value(v));
                if (dst)
                    dst[k] = f;
            }
        }
    }
    return 0;
}

static int parse_nested(encode_request *req, const json_t *emb, const enc_hparams *hp,
                        const api_limits *lim, api_error *err)
{
    size_t B = 0, L = 0;
    if (nested_shape(emb, &req->batched, &B, &L, err) < 0 ||
        check_limits(req, B, L, hp, lim, err) < 0)
        return -1;
    const size_t D = (size_t)hp->d_model;
    if (walk_embeddings(emb, req->batched, B, L, D, NULL, err) < 0)
        return -1;
    if (!(req->x = malloc(B * L * D * sizeof *req->x)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the embeddings");
    walk_embeddings(emb, req->batched, B, L, D, req->x, err);
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    return 0;
}

/* embeddings_b64 + shape. */
static int parse_b64(encode_request *req, const json_t *text, const json_t *shape,
                     const enc_hparams *hp, const api_limits *lim, api_error *err)
{
    if (!json_is_string(text))
        return BAD("embeddings_b64 must be a base64 string, not %s", kind_of(text));
    if (!shape)
        return BAD("embeddings_b64 needs shape: [B, L, d_model] or [L, d_model]");
    size_t nd = json_array_size(shape);
    if (!json_is_array(shape) || nd < 2 || nd > 3)
        return BAD("shape must be [B, L, d_model] or [L, d_model], not %s%s",
                   json_is_array(shape) ? "an array of " : kind_of(shape),
                   json_is_array(shape) ? (nd < 2 ? "fewer than 2 entries" : "more than 3 entries")
                                        : "");
    size_t dims[3];
    for (size_t k = 0; k < nd; k++) {
        json_t *v = json_array_get(shape, k);
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return BAD("shape[%zu] must be a positive integer", k);
        long long d = json_integer_value(v);
        dims[k] = d > INT_MAX ? (size_t)INT_MAX + 1 : (size_t)d; /* over any limit */
    }
    if (dims[nd - 1] != (size_t)hp->d_model)
        return BAD("shape[%zu] = %zu but d_model is %d", nd - 1, dims[nd - 1], hp->d_model);
    req->batched = nd == 3;
    const size_t B = req->batched ? dims[0] : 1, L = dims[nd - 2], D = (size_t)hp->d_model;
    if (check_limits(req, B, L, hp, lim, err) < 0)
        return -1;

    const char *s = json_string_value(text);
    const size_t len = json_string_length(text), n_floats = B * L * D;
    if (len % 4)
        return BAD("embeddings_b64 is not valid base64: its length (%zu) is not a multiple of 4",
                   len);
    const size_t have = b64_decoded_size(s, len), need = n_floats * sizeof(float);
    if (have != need) {
        char dims_s[80];
        if (req->batched)
            snprintf(dims_s, sizeof dims_s, "%zu, %zu, %zu", B, L, D);
        else
            snprintf(dims_s, sizeof dims_s, "%zu, %zu", L, D);
        return BAD("embeddings_b64 holds %zu bytes; shape [%s] needs %zu (float32, 4 bytes each)",
                   have, dims_s, need);
    }
    if (!(req->x = malloc(need ? need : 1)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the embeddings");
    unsigned char *bytes = (unsigned char *)req->x;
    size_t bad;
    if (b64_decode_into(s, len, bytes, &bad) < 0) {
        unsigned char c = (unsigned char)s[bad];
        if (c >= 0x20 && c < 0x7f)
            return BAD("embeddings_b64 is not valid base64: '%c' at offset %zu", c, bad);
        return BAD("embeddings_b64 is not valid base64: byte 0x%02x at offset %zu", c, bad);
    }
    /* Little-endian float32 to the host's floats, in place. */
    for (size_t k = 0; k < n_floats; k++) {
        const unsigned char *p = bytes + 4 * k;
        uint32_t u =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        float f;
        memcpy(&f, &u, sizeof f);
        if (!isfinite(f)) {
            char where[80];
            const size_t b = k / (L * D), i = k / D % L, d = k % D;
            if (req->batched)
                snprintf(where, sizeof where, "embeddings[%zu][%zu][%zu]", b, i, d);
            else
                snprintf(where, sizeof where, "embeddings[%zu][%zu]", i, d);
            return BAD("embeddings_b64: float %zu (%s) is %s", k, where,
                       isnan(f) ? "NaN" : "infinite");
        }
        req->x[k] = f;
    }
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    return 0;
}

/* ---- parsing: lengths and mask --------------------------------------------- */

static int parse_lengths(encode_request *req, const json_t *v, api_error *err)
{
    const int B = req->batch.B, L = req->batch.L;
    if (!json_is_array(v))
        return BAD("lengths must be an array of integers (one per sequence), not %s", kind_of(v));
    if (json_array_size(v) != (size_t)B)
        return BAD("lengths has %zu %s; the batch has %d sequence%s", json_array_size(v),
                   entries(json_array_size(v)), B, plural((size_t)B));
    if (!(req->lengths = alloc_zero((size_t)B, sizeof *req->lengths)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (int b = 0; b < B; b++) {
        json_t *e = json_array_get(v, (size_t)b);
        if (!json_is_integer(e))
            return BAD("lengths[%d] is %s; expected an integer 1..%d", b, kind_of(e), L);
        long long n = json_integer_value(e);
        if (n < 1 || n > L)
            return BAD("lengths[%d] = %lld is outside 1..%d", b, n, L);
        req->lengths[b] = (int)n;
    }
    req->batch.lengths = req->lengths;
    return 0;
}

/* A non-negative window side, or ENC_WINDOW_NONE for null; clamped to L. */
static int window_side(const json_t *v, const char *name, int L, int *out, api_error *err)
{
    if (!v || json_is_null(v)) {
        *out = ENC_WINDOW_NONE;
        return 0;
    }
    if (!json_is_integer(v))
        return BAD("%s must be a non-negative integer, not %s", name, kind_of(v));
    long long w = json_integer_value(v);
    if (w < 0)
        return BAD("%s = %lld must not be negative", name, w);
    *out = w > L ? L : (int)w;
    return 0;
}

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
                   kind_of(v));
    const char *key;
    json_t *e;
    json_object_foreach(v, key, e)
    {
        if (strcmp(key, "left") != 0 && strcmp(key, "right") != 0) {
            char q[SAFE_MAX + 4];
            return BAD("mask.window: unknown option '%s'; expected left, right", safe_text(key, q));
        }
    }
    if (window_side(json_object_get(v, "left"), "mask.window.left", L, &mk->window_left, err) < 0 ||
        window_side(json_object_get(v, "right"), "mask.window.right", L, &mk->window_right, err) <
            0)
        return -1;
    return 0;
}

static int parse_global(encode_request *req, const json_t *v, api_error *err)
{
    const int L = req->batch.L;
    if (!json_is_array(v))
        return BAD("mask.global must be an array of positions 0..%d, not %s", L - 1, kind_of(v));
    const size_t n = json_array_size(v);
    if (!(req->global = alloc_zero(n, sizeof *req->global)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(v, k);
        if (!json_is_integer(e))
            return BAD("mask.global[%zu] is %s; expected a position 0..%d", k, kind_of(e), L - 1);
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
                   json_array_size(v), plural(json_array_size(v)), B, plural(B));
    for (int pass = 0; pass < 2; pass++) {
        for (size_t b = 0; b < B; b++) {
            const json_t *row = flat ? v : json_array_get(v, b);
            char name[64];
            if (flat)
                snprintf(name, sizeof name, "mask.key_padding");
            else
                snprintf(name, sizeof name, "mask.key_padding[%zu]", b);
            if (!json_is_array(row))
                return BAD("%s is %s; expected an array of L (%zu) booleans", name, kind_of(row),
                           L);
            if (json_array_size(row) != L)
                return BAD("%s has %zu %s; L is %zu", name, json_array_size(row),
                           entries(json_array_size(row)), L);
            for (size_t j = 0; j < L; j++) {
                const json_t *e = json_array_get(row, j);
                if (!json_is_boolean(e))
                    return BAD("%s[%zu] is not a boolean (it is %s)", name, j, kind_of(e));
                if (pass)
                    req->key_padding[b * L + j] = json_is_true(e);
            }
        }
        if (!pass && !(req->key_padding = alloc_zero(B * L, 1)))
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
                   json_array_size(v) == 1 ? "x" : "ces", B, plural(B));

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
                return BAD("%s is %s; expected [L][L]", mname, kind_of(mat));
            if (json_array_size(mat) != L)
                return BAD("%s has %zu row%s; L is %zu", mname, json_array_size(mat),
                           plural(json_array_size(mat)), L);
            for (size_t i = 0; i < L; i++) {
                const json_t *row = json_array_get(mat, i);
                if (!json_is_array(row))
                    return BAD("%s[%zu] is %s; expected an array of L (%zu) entries", mname, i,
                               kind_of(row), L);
                if (json_array_size(row) != L)
                    return BAD("%s[%zu] has %zu %s; L is %zu", mname, i, json_array_size(row),
                               entries(json_array_size(row)), L);
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
                    if (k != kind || (k == ENC_MASK_ADD && json_number_value(e) > FLT_MAX))
                        snprintf(name, sizeof name, "%s[%zu][%zu]", mname, i, j);
                    if (k == ENC_MASK_NONE)
                        return BAD("%s is %s; expected a boolean or a number", name, kind_of(e));
                    if (kind == ENC_MASK_NONE) {
                        kind = k;
                        snprintf(first, sizeof first, "%s", name);
                    } else if (k != kind) {
                        return BAD("mask.attn mixes booleans and numbers: %s is %s but %s is "
                                   "%s; use one type",
                                   name, kind_of(e), first,
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
                req->attn_bool = alloc_zero(n, 1);
            else
                req->attn_add = alloc_zero(n, sizeof *req->attn_add);
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

static int parse_mask(encode_request *req, json_t *mask, api_error *err)
{
    if (!json_is_object(mask))
        return BAD("mask must be an object, not %s", kind_of(mask));
    const char *key;
    json_t *v;
    json_object_foreach(mask, key, v)
    {
        static const char *const known[] = {"causal", "window", "global", "key_padding", "attn"};
        bool ok = false;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            ok = ok || strcmp(key, known[i]) == 0;
        if (!ok) {
            char q[SAFE_MAX + 4];
            return BAD("mask: unknown option '%s'; expected causal, window, global, key_padding "
                       "or attn",
                       safe_text(key, q));
        }
    }
    if ((v = field(mask, "causal"))) {
        if (!json_is_boolean(v))
            return BAD("mask.causal must be true or false, not %s", kind_of(v));
        req->batch.mask.causal = json_is_true(v);
    }
    if ((v = field(mask, "window")) && parse_window(req, v, err) < 0)
        return -1;
    if ((v = field(mask, "global")) && parse_global(req, v, err) < 0)
        return -1;
    if ((v = field(mask, "key_padding")) && parse_key_padding(req, v, err) < 0)
        return -1;
    if ((v = field(mask, "attn")) && parse_attn_mask(req, v, err) < 0)
        return -1;
    return 0;
}

/* ---- parsing: the request ------------------------------------------------ */

static int parse_root(encode_request *req, json_t *root, const enc_hparams *hp,
                      const api_limits *lim, api_error *err)
{
    if (!json_is_object(root))
        return BAD("the request body must be a JSON object, not %s", kind_of(root));
    if (check_fields(root, err) < 0 || parse_options(req, root, err) < 0)
        return -1;

    json_t *emb = field(root, "embeddings"), *b64 = field(root, "embeddings_b64"),
           *shape = field(root, "shape");
    if (emb && b64)
        return BAD("give either embeddings or embeddings_b64 (with shape), not both");
    if (!emb && !b64)
        return BAD("embeddings is required: number[B][L][d_model] or number[L][d_model] (or "
                   "embeddings_b64 with shape)");
    if (shape && !b64)
        return BAD("shape is only used with embeddings_b64");
    if ((emb ? parse_nested(req, emb, hp, lim, err) : parse_b64(req, b64, shape, hp, lim, err)) < 0)
        return -1;
    req->batch.x = req->x;

    json_t *v;
    if ((v = field(root, "lengths")) && parse_lengths(req, v, err) < 0)
        return -1;
    if ((v = field(root, "mask")) && parse_mask(req, v, err) < 0)
        return -1;
    return 0;
}

int encode_request_parse(encode_request *req, const char *body, size_t len, const enc_hparams *hp,
                         const api_limits *limits, api_error *err)
{
    memset(req, 0, sizeof *req);
    req->batch.mask.window_left = ENC_WINDOW_NONE;
    req->batch.mask.window_right = ENC_WINDOW_NONE;
    req->attn_mode = ENC_ATTN_HEADS;
    req->precision = 9;
    if (!hp || hp->d_model < 1 || hp->n_heads < 1 || hp->n_layers < 1 ||
        hp->n_layers > ENC_MAX_LAYERS)
        return api_error_set(err, API_INTERNAL, "encode: invalid model hyperparameters");
    req->n_layers = hp->n_layers;
    req->want_layer = alloc_zero((size_t)hp->n_layers, sizeof *req->want_layer);
    req->layers = alloc_zero((size_t)hp->n_layers, sizeof *req->layers);
    if (!req->want_layer || !req->layers)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");

    json_error_t jerr;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char text[JSON_ERROR_TEXT_LENGTH + 4];
        /* jansson's text may quote the offending bytes: keep it ASCII. */
        return BAD("invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                   safe_text_n(jerr.text, text, JSON_ERROR_TEXT_LENGTH));
    }
    int rc = parse_root(req, root, hp, limits, err);
    json_decref(root);
    return rc;
}

int encode_request_alloc_outputs(encode_request *req, const enc_hparams *hp, api_error *err)
{
    if (!req->x || !hp || hp->n_layers != req->n_layers)
        return api_error_set(err, API_INTERNAL, "encode: outputs for an unparsed request");
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
    req->out = alloc_zero(B * L * (size_t)hp->d_model, sizeof *req->out);
    req->attn = alloc_zero((size_t)req->n_layers, sizeof *req->attn);
    if (!req->out || !req->attn)
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the outputs");
    for (int l = 0; l < req->n_layers && req->attn_mode != ENC_ATTN_NONE; l++)
        if (req->want_layer[l] && !(req->attn[l] = alloc_zero(B * heads * L * L, sizeof(float))))
            return api_error_set(err, API_UNAVAILABLE, "out of memory for the attention weights");
    return 0;
}

enc_result encode_request_result(encode_request *req)
{
    enc_result r = {.out = req->out,
                    .attn_mode = req->attn ? req->attn_mode : ENC_ATTN_NONE,
                    .attn = req->attn_mode != ENC_ATTN_NONE ? req->attn : NULL};
    return r;
}

void encode_request_free(encode_request *req)
{
    if (!req)
        return;
    free(req->x);
    free(req->lengths);
    free(req->global);
    free(req->key_padding);
    free(req->attn_bool);
    free(req->attn_add);
    free(req->want_layer);
    free(req->layers);
    free(req->out);
    for (int l = 0; req->attn && l < req->n_layers; l++)
        free(req->attn[l]);
    free(req->attn);
    memset(req, 0, sizeof *req);
}

/* ---- the response ---------------------------------------------------------- */

static void sb_size(strbuf *sb, size_t v)
{
    char t[32];
    int n = snprintf(t, sizeof t, "%zu", v);
    strbuf_put(sb, t, (size_t)n);
}

/* One float with p significant digits; null (never NaN or inf) if not finite. */
static void sb_float(strbuf *sb, float f, int p)
{
    if (!isfinite(f)) {
        strbuf_put(sb, "null", 4);
        return;
    }
    if (strbuf_reserve(sb, 32)) {
        int n = snprintf(sb->s + sb->len, 32, "%.*g", p, (double)f);
        if (n > 0 && n < 32)
            sb->len += (size_t)n;
    }
}

/* Base64 of a float stream, written into an strbuf as it goes. */
typedef struct b64w {
    strbuf *sb;
    unsigned char buf[3 * 1024];
    size_t n;
} b64w;

static void b64w_flush(b64w *w, bool final)
{
    size_t n = final ? w->n : w->n / 3 * 3;
    if (strbuf_reserve(w->sb, n / 3 * 4 + 4)) {
        w->sb->len += b64_encode_block(w->buf, n, w->sb->s + w->sb->len);
    }
    memmove(w->buf, w->buf + n, w->n - n);
    w->n -= n;
}

static void b64w_float(b64w *w, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (w->n + 4 > sizeof w->buf)
        b64w_flush(w, false);
    w->buf[w->n++] = (unsigned char)(u & 0xff);
    w->buf[w->n++] = (unsigned char)(u >> 8 & 0xff);
    w->buf[w->n++] = (unsigned char)(u >> 16 & 0xff);
    w->buf[w->n++] = (unsigned char)(u >> 24);
}

/* One sequence's piece of a result: [heads][rows][cols] (heads 0: no head
 * dimension) at base, rows stride floats apart, heads head_stride apart. */
typedef struct seq_view {
    const float *base;
    size_t heads, rows, cols, stride, head_stride;
} seq_view;

static size_t seq_len(const encode_request *req, size_t b)
{
    return req->lengths ? (size_t)req->lengths[b] : (size_t)req->batch.L;
}

/* Sequence b of the outputs (layer < 0) or of layer's attention. */
static seq_view view_of(const encode_request *req, const enc_hparams *hp, int layer, size_t b)
{
    const size_t L = (size_t)req->batch.L, len = seq_len(req, b), D = (size_t)hp->d_model;
    if (layer < 0)
        return (seq_view){req->out + b * L * D, 0, len, D, D, 0};
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 0;
    return (seq_view){
        req->attn[layer] + b * (heads ? heads : 1) * L * L, heads, len, len, L, L * L};
}

static void write_json_view(strbuf *sb, const seq_view *v, int precision)
{
    const size_t nh = v->heads ? v->heads : 1;
    if (v->heads)
        strbuf_put(sb, "[", 1);
    for (size_t h = 0; h < nh; h++) {
        strbuf_put(sb, h ? ",[" : "[", h ? 2 : 1);
        for (size_t i = 0; i < v->rows; i++) {
            const float *row = v->base + h * v->head_stride + i * v->stride;
            strbuf_put(sb, i ? ",[" : "[", i ? 2 : 1);
            for (size_t j = 0; j < v->cols; j++) {
                if (j)
                    strbuf_put(sb, ",", 1);
                sb_float(sb, row[j], precision);
            }
            strbuf_put(sb, "]", 1);
        }
        strbuf_put(sb, "]", 1);
    }
    if (v->heads)
        strbuf_put(sb, "]", 1);
}

static void write_b64_view(b64w *w, const seq_view *v)
{
    const size_t nh = v->heads ? v->heads : 1;
    for (size_t h = 0; h < nh; h++)
        for (size_t i = 0; i < v->rows; i++)
            for (size_t j = 0; j < v->cols; j++)
                b64w_float(w, v->base[h * v->head_stride + i * v->stride + j]);
}

/* "H,rows,cols" or "rows,cols" of a view. */
static void write_dims(strbuf *sb, const seq_view *v)
{
    if (v->heads) {
        sb_size(sb, v->heads);
        strbuf_put(sb, ",", 1);
    }
    sb_size(sb, v->rows);
    strbuf_put(sb, ",", 1);
    sb_size(sb, v->cols);
}

/* The outputs (layer < 0) or a layer's attention in the request's form:
 * nested numbers, one base64 string, or (ragged base64) one per sequence. */
static void write_tensor(strbuf *sb, const encode_request *req, const enc_hparams *hp, int layer)
{
    const size_t B = (size_t)req->batch.B;
    if (!req->base64_out) {
        if (req->batched)
            strbuf_put(sb, "[", 1);
        for (size_t b = 0; b < B; b++) {
            seq_view v = view_of(req, hp, layer, b);
            if (b)
                strbuf_put(sb, ",", 1);
            write_json_view(sb, &v, req->precision);
        }
        if (req->batched)
            strbuf_put(sb, "]", 1);
        return;
    }
    const bool per_seq = req->lengths && req->batched;
    b64w stream = {.sb = sb, .n = 0}, *w = &stream;
    strbuf_put(sb, per_seq ? "[\"" : "\"", per_seq ? 2 : 1);
    for (size_t b = 0; b < B; b++) {
        seq_view v = view_of(req, hp, layer, b);
        if (per_seq && b) {
            b64w_flush(w, true);
            strbuf_put(sb, "\",\"", 3);
        }
        write_b64_view(w, &v);
    }
    b64w_flush(w, true);
    strbuf_put(sb, per_seq ? "\"]" : "\"", per_seq ? 2 : 1);
}

/* outputs_shape / attention_shape for the base64 form. */
static void write_shape(strbuf *sb, const encode_request *req, const enc_hparams *hp, int layer)
{
    const size_t B = (size_t)req->batch.B;
    if (req->lengths && req->batched) {
        strbuf_put(sb, "[", 1);
        for (size_t b = 0; b < B; b++) {
            seq_view v = view_of(req, hp, layer, b);
            strbuf_put(sb, b ? ",[" : "[", b ? 2 : 1);
            write_dims(sb, &v);
            strbuf_put(sb, "]", 1);
        }
        strbuf_put(sb, "]", 1);
        return;
    }
    seq_view v = view_of(req, hp, layer, 0);
    strbuf_put(sb, "[", 1);
    if (req->batched) {
        sb_size(sb, B);
        strbuf_put(sb, ",", 1);
    }
    write_dims(sb, &v);
    strbuf_put(sb, "]", 1);
}

char *encode_response(const encode_request *req, const char *model_name, const enc_hparams *hp,
                      const encode_usage *usage, size_t *len)
{
    if (!req || !hp || !req->out || hp->n_layers != req->n_layers)
        return NULL;
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L, D = (size_t)hp->d_model;
    const int last = req->n_layers - 1;
    const bool attn = req->attn_mode != ENC_ATTN_NONE && req->attn && req->attn[last];
    strbuf sb = {0};

    /* A size hint: every number at its widest ("-1.23456789e-38,"). */
    size_t numbers = B * L * D;
    if (attn) {
        const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
        numbers += B * heads * L * L * (size_t)(1 + req->n_listed);
    }
    size_t hint;
    if (!mul_over(numbers, req->base64_out ? 6 : (size_t)req->precision + 8, &hint))
        strbuf_reserve(&sb, hint + 1024);
    sb.failed = false; /* the hint is only a hint */

    json_t *name = json_string(model_name ? model_name : "");
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    strbuf_puts(&sb, "{\"model\":");
    strbuf_puts(&sb, quoted ? quoted : "\"\"");
    free(quoted);
    json_decref(name);

    strbuf_puts(&sb, ",\"shape\":[");
    if (req->batched) {
        sb_size(&sb, B);
        strbuf_put(&sb, ",", 1);
    }
    sb_size(&sb, L);
    strbuf_put(&sb, ",", 1);
    sb_size(&sb, D);
    strbuf_puts(&sb, "],\"outputs\":");
    write_tensor(&sb, req, hp, -1);
    if (req->base64_out) {
        strbuf_puts(&sb, ",\"outputs_shape\":");
        write_shape(&sb, req, hp, -1);
    }
    if (attn) {
        strbuf_puts(&sb, ",\"attention\":");
        write_tensor(&sb, req, hp, last);
        if (req->base64_out) {
            strbuf_puts(&sb, ",\"attention_shape\":");
            write_shape(&sb, req, hp, last);
        }
        if (req->layers_listed) {
            strbuf_puts(&sb, ",\"attention_layers\":[");
            for (int k = 0; k < req->n_listed; k++) {
                const int l = req->layers[k];
                strbuf_puts(&sb, k ? ",{\"layer\":" : "{\"layer\":");
                sb_size(&sb, (size_t)l);
                strbuf_puts(&sb, ",\"attention\":");
                if (req->attn[l])
                    write_tensor(&sb, req, hp, l);
                else
                    strbuf_puts(&sb, "null");
                strbuf_puts(&sb, "}");
            }
            strbuf_puts(&sb, "]");
        }
    }
    char tail[256];
    const double q = usage && isfinite(usage->queue_ms) ? usage->queue_ms : 0.0;
    const double c = usage && isfinite(usage->compute_ms) ? usage->compute_ms : 0.0;
    int n = snprintf(tail, sizeof tail,
                     ",\"usage\":{\"sequences\":%d,\"tokens\":%ld,\"queue_ms\":%.3f,"
                     "\"compute_ms\":%.3f}}",
                     usage ? usage->sequences : req->batch.B, usage ? usage->tokens : 0L, q, c);
    strbuf_put(&sb, tail, n > 0 && (size_t)n < sizeof tail ? (size_t)n : 0);
    return strbuf_detach(&sb, len);
}
