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
 * - Numbers are printed as "%.{precision}g" prints them in the C locale (the
 *   daemon never calls setlocale), by fmt_float rather than snprintf (same
 *   text, several times faster).  A non-finite value, which the core never
 *   returns, would be printed as null so the body stays valid JSON.
 * - The embeddings array is read from the body text (scan_embeddings), not
 *   through one json_t per number; jansson reads the rest of the body.  A
 *   number becomes (float)strtod(text), as jansson's double did, except
 *   that the integer -0 is now -0.0f (jansson made it the integer 0).
 *   Everything else (what is valid JSON, every message, the order errors
 *   are reported in) is what the jansson-only code did.
 *
 * Error messages name the field and index: "embeddings[1][3] has 511
 * numbers; d_model is 512", "mask: unknown option 'x'", "lengths[1] = 9 is
 * outside 1..7", "batch of 65 sequences is over limits.max_batch (64)".
 * Text from the client (field names, strings) is quoted as printable ASCII
 * only and cut, so a message is always valid UTF-8.
 */
#include "protocol/encode.h"

#include "runtime/bufpool.h"
#include "codec/stream.h"
#include "codec/base64.h"
#include "codec/jsonnum.h"
#include "codec/jsontext.h"
#include "codec/strbuf.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <pthread.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)       api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define TOO_LARGE(...) api_error_set(err, API_TOO_LARGE, __VA_ARGS__)

/* ---- small helpers --------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

#define SAFE_MAX ENCODE_SAFE_MAX

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

const char *encode_safe_text(const char *s, char out[ENCODE_SAFE_MAX + 4])
{
    return safe_text(s, out);
}

json_t *encode_json_loadb(const char *text, size_t len, size_t flags, json_error_t *err)
{
    json_t *root = json_loadb(text, len, flags, err);
    if (root || !strstr(err->text, "too big")) /* "too big (negative) integer" */
        return root;
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return NULL;
    memcpy(copy, text, len);
    jsonnum_widen(copy, len);
    root = json_loadb(copy, len, flags, err);
    free(copy);
    return root;
}

/* "a string", "an array", ... for messages. */
const char *encode_json_kind(const json_t *v)
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
json_t *encode_json_field(const json_t *obj, const char *key)
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

/* n floats, not zeroed; NULL on overflow or out of memory. */
/* Sequence b's real tokens. */
static size_t seq_len_of(const encode_request *req, size_t b)
{
    return req->lengths ? (size_t)req->lengths[b] : (size_t)req->batch.L;
}

/* ---- parsing: options ------------------------------------------------------ */

static const char *const TOP_FIELDS[] = {
    "embeddings", "embeddings_b64",   "shape",     "lengths",  "mask",
    "attention",  "attention_layers", "precision", "encoding", "attention_format"};

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
                       "mask, attention, attention_layers, attention_format, precision or "
                       "encoding",
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
                   n - 1, encode_json_kind(v));
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
            rc = BAD("attention_layers[%zu] is %s; expected a layer index 0..%d", k,
                     encode_json_kind(e), n - 1);
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
    json_t *v = encode_json_field(root, "attention");
    if (v) {
        const char *s = json_string_value(v);
        if (!s)
            return BAD("attention must be \"heads\", \"mean\" or \"none\", not %s",
                       encode_json_kind(v));
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
    if (parse_layers(req, encode_json_field(root, "attention_layers"), err) < 0)
        return -1;
    if (req->attn_mode == ENC_ATTN_NONE) {
        req->layers_listed = false; /* validated, but nothing to return */
    } else {
        req->want_layer[req->n_layers - 1] = true;
        for (int k = 0; k < req->n_listed; k++)
            req->want_layer[req->layers[k]] = true;
    }

    if ((v = encode_json_field(root, "precision"))) {
        if (!json_is_integer(v))
            return BAD("precision must be an integer 1..9, not %s", encode_json_kind(v));
        long long p = json_integer_value(v);
        if (p < 1 || p > 9)
            return BAD("precision = %lld is outside 1..9", p);
        req->precision = (int)p;
    }
    if (encode_parse_attention_format(req, encode_json_field(root, "attention_format"),
                                      "attention_format", err) < 0)
        return -1;
    if (req->attn_mode == ENC_ATTN_NONE)
        req->csr = false; /* validated, but no weights to return */
    if ((v = encode_json_field(root, "encoding"))) {
        const char *s = json_string_value(v);
        if (!s)
            return BAD("encoding must be \"json\" or \"base64\", not %s", encode_json_kind(v));
        if (strcmp(s, "base64") == 0)
            req->base64_out = true;
        else if (strcmp(s, "json") != 0)
            return BAD("encoding must be \"json\" or \"base64\", not '%s'", safe_text(s, q));
    }
    return 0;
}

int encode_parse_attention_format(encode_request *req, const json_t *v, const char *name,
                                  api_error *err)
{
    char q[SAFE_MAX + 4];
    if (!v || json_is_null(v))
        return 0;
    const char *s = json_string_value(v);
    if (!s)
        return BAD("%s must be \"dense\" or \"csr\", not %s", name, encode_json_kind(v));
    if (strcmp(s, "csr") == 0)
        req->csr = true;
    else if (strcmp(s, "dense") == 0)
        req->csr = false;
    else
        return BAD("%s must be \"dense\" or \"csr\", not '%s'", name, safe_text(s, q));
    return 0;
}

/* ---- parsing: limits ------------------------------------------------------- */

/* Layers whose attention weights the request returns. */
static size_t layers_wanted(const encode_request *req)
{
    size_t layers = 0;
    for (int l = 0; l < req->n_layers; l++)
        layers += req->want_layer[l];
    return layers;
}

/* "N" or, when the size overflowed, "more than SIZE_MAX", for a limit's
 * message. */
static const char *bytes_text(bool over, size_t bytes, char buf[48])
{
    if (over)
        snprintf(buf, 48, "more than %zu", SIZE_MAX);
    else
        snprintf(buf, 48, "%zu", bytes);
    return buf;
}

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
    if (req->attn_mode == ENC_ATTN_NONE || req->csr)
        return 0; /* CSR: held to the limit by allowed pairs (encode_request_plan) */

    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
    const size_t layers = layers_wanted(req);
    size_t bytes = 0;
    bool over = mul_over(B, heads, &bytes) || mul_over(bytes, L, &bytes) ||
                mul_over(bytes, L, &bytes) || mul_over(bytes, sizeof(float), &bytes) ||
                mul_over(bytes, layers, &bytes);
    if (over || (lim && bytes > lim->max_attention_bytes)) {
        char amount[48];
        return TOO_LARGE("attention output of %s bytes (%zu sequences x %zu head%s x %zu x %zu "
                         "float32 x %zu layer%s) is over limits.max_attention_bytes (%zu); ask "
                         "for %s, or fewer attention_layers",
                         bytes_text(over, bytes, amount), B, heads, heads == 1 ? "" : "s", L, L, layers,
                         layers == 1 ? "" : "s", lim ? lim->max_attention_bytes : SIZE_MAX,
                         req->attn_mode == ENC_ATTN_HEADS ? "\"attention\": \"mean\" or \"none\""
                                                          : "\"attention\": \"none\"");
    }
    return 0;
}

/* ---- parsing: embeddings --------------------------------------------------- */

/* The nested embeddings array is read from the body text, not by jansson:
 *
 * 1. find_embeddings walks the top-level object to the "embeddings" member
 *    and, when its value is an array, scan_embeddings reads that array once:
 *    it checks the JSON syntax exactly as jansson would (numbers, literals,
 *    nesting depth; strings are handed to jansson one by one, and objects
 *    make jansson read the whole body), counts B and L, and notes the error
 *    the jansson-based walk reported first (same messages, same order).
 * 2. jansson parses the rest: a copy of the body with that array replaced
 *    by [].  When that copy is not valid JSON, jansson parses another copy
 *    whose replacement keeps the array's lines and columns, so its message
 *    ("invalid JSON at line 3, column 7: ...") is the body's.
 * 3. parse_nested checks the shape, then the limits, then the noted error,
 *    and only then allocates x and reads the numbers into it (a second pass
 *    over the array's text). */

#define JSON_MAX_DEPTH                                                                             \
    2048 /* jansson's JSON_PARSER_MAX_DEPTH: values nested deeper are refused                      \
          */

static const char EMB_FORM[] = "number[B][L][d_model] or number[L][d_model]";

enum { V_ARRAY, V_OBJECT, V_STRING, V_NUMBER, V_BOOL, V_NULL };
static const char *const V_NAME[] = {"an array", "an object", "a string",
                                     "a number", "a boolean", "null"};

enum { FORM_UNKNOWN, FORM_BATCHED, FORM_SEQUENCE };

typedef struct emb_scan {
    size_t D;          /* d_model */
    bool found;        /* the top-level "embeddings" is an array, scanned here */
    size_t start, end; /* its bytes in the body */
    bool bad_syntax;   /* it is not valid JSON: jansson words the error */
    bool objects;      /* it holds objects: jansson checks the whole body */
    bool oom;
    int form;
    size_t num_depth; /* where numbers go (3 batched, 2 not), once the form is known */
    size_t B, L;
    bool shape_bad; /* nested_shape's errors: before the limits */
    char shape_msg[256];
    bool walk_bad; /* the walk's first error: after the limits */
    size_t key[3]; /* its place in the walk's order: (b, i + 1, k + 1), 0 = the container */
    char walk_msg[256];
    /* The top-level "embeddings_b64" string, when its text is plain
     * printable ASCII (no escapes): read from the body, not by jansson. */
    bool b64_found;
    size_t b64_start, b64_end; /* its characters, between the quotes */
} emb_scan;

static void shape_error(emb_scan *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void shape_error(emb_scan *sc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->shape_msg, sizeof sc->shape_msg, fmt, ap);
    va_end(ap);
    sc->shape_bad = true;
    sc->num_depth = 0;
}

/* Whether an error at (b, i1, k1) comes before the one noted so far in the
 * jansson-based walk's order: sequence by sequence, a sequence's row count
 * before its rows, a row's length before its numbers. */
static bool walk_first(const emb_scan *sc, size_t b, size_t i1, size_t k1)
{
    if (!sc->walk_bad)
        return true;
    if (b != sc->key[0])
        return b < sc->key[0];
    if (i1 != sc->key[1])
        return i1 < sc->key[1];
    return k1 < sc->key[2];
}

static void walk_error(emb_scan *sc, size_t b, size_t i1, size_t k1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void walk_error(emb_scan *sc, size_t b, size_t i1, size_t k1, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->walk_msg, sizeof sc->walk_msg, fmt, ap);
    va_end(ap);
    sc->walk_bad = true;
    sc->key[0] = b;
    sc->key[1] = i1;
    sc->key[2] = k1;
}

/* "embeddings[b][i]", or "embeddings[i]" for the unbatched form. */
static void row_name(char *buf, size_t n, bool batched, size_t b, size_t i)
{
    if (batched)
        snprintf(buf, n, "embeddings[%zu][%zu]", b, i);
    else
        snprintf(buf, n, "embeddings[%zu]", i);
}

/* A value of kind at depth level of the array (0: the embeddings value
 * itself), at idx[0..level) in the arrays around it.  A number: in_range
 * (|v| <= FLT_MAX) and, when not, its value v. */
static void scan_value(emb_scan *sc, size_t level, const size_t *idx, int kind, bool in_range,
                       double v)
{
    if (sc->shape_bad || level == 0)
        return;
    if (sc->form == FORM_UNKNOWN) {
        if (level == 1) { /* embeddings[0] */
            if (kind != V_ARRAY)
                shape_error(sc, "embeddings[0] is %s; embeddings must be %s", V_NAME[kind],
                            EMB_FORM);
            return;
        }
        /* embeddings[0][0] decides the form */
        if (kind == V_ARRAY)
            sc->form = FORM_BATCHED;
        else if (kind == V_NUMBER)
            sc->form = FORM_SEQUENCE;
        if (kind == V_ARRAY || kind == V_NUMBER)
            sc->num_depth = sc->form == FORM_BATCHED ? 3 : 2;
        else {
            shape_error(sc, "embeddings[0][0] is %s; embeddings must be %s", V_NAME[kind],
                        EMB_FORM);
            return;
        }
    }
    const bool batched = sc->form == FORM_BATCHED;
    const size_t role = batched ? level : level + 1; /* 1 sequence, 2 row, 3 number */
    const size_t b = batched ? idx[0] : 0;
    char name[80];
    if (role == 1) {
        if (kind != V_ARRAY && walk_first(sc, b, 0, 0))
            walk_error(sc, b, 0, 0, "embeddings[%zu] is %s; expected an array of rows", b,
                       V_NAME[kind]);
    } else if (role == 2) {
        const size_t i = idx[level - 1];
        if (kind != V_ARRAY && walk_first(sc, b, i + 1, 0)) {
            row_name(name, sizeof name, batched, b, i);
            walk_error(sc, b, i + 1, 0, "%s is %s; expected an array of d_model (%zu) numbers",
                       name, V_NAME[kind], sc->D);
        }
    } else if (role == 3 && (kind != V_NUMBER || !in_range)) {
        const size_t i = idx[level - 2], k = idx[level - 1];
        if (!walk_first(sc, b, i + 1, k + 1))
            return;
        row_name(name, sizeof name, batched, b, i);
        if (kind != V_NUMBER)
            walk_error(sc, b, i + 1, k + 1, "%s[%zu] is not a number (it is %s)", name, k,
                       V_NAME[kind]);
        else
            walk_error(sc, b, i + 1, k + 1, "%s[%zu] = %g is outside the float32 range", name, k,
                       v);
    }
}

/* The array at depth level closed with count entries. */
static void scan_close(emb_scan *sc, size_t level, const size_t *idx, size_t count)
{
    if (level == 0) {
        if (count == 0 && !sc->shape_bad)
            shape_error(sc, "embeddings is empty; expected %s", EMB_FORM);
        if (sc->form == FORM_BATCHED) {
            sc->B = count;
        } else {
            sc->B = 1;
            sc->L = count;
        }
        return;
    }
    if (sc->shape_bad)
        return;
    if (sc->form == FORM_UNKNOWN) { /* embeddings[0], without a first entry */
        shape_error(sc, "embeddings[0] is empty; embeddings must be %s", EMB_FORM);
        return;
    }
    const bool batched = sc->form == FORM_BATCHED;
    const size_t role = batched ? level : level + 1;
    const size_t b = batched ? idx[0] : 0;
    if (role == 1) { /* a sequence */
        if (b == 0)
            sc->L = count;
        else if (count != sc->L && walk_first(sc, b, 0, 0))
            walk_error(sc, b, 0, 0,
                       "embeddings[%zu] has %zu row%s; embeddings[0] has %zu (sequences must "
                       "have the same length: pad them and send lengths)",
                       b, count, plural(count), sc->L);
    } else if (role == 2) { /* a row */
        const size_t i = idx[level - 1];
        if (count != sc->D && walk_first(sc, b, i + 1, 0)) {
            char name[80];
            row_name(name, sizeof name, batched, b, i);
            walk_error(sc, b, i + 1, 0, "%s has %zu number%s; d_model is %zu", name, count,
                       plural(count), sc->D);
        }
    }
}

/* Whether n bytes are plain ASCII that a JSON string holds as is: no
 * escape, control character or UTF-8, so jansson would read them unchanged.
 * Compiled for AVX2 and plain x86-64 (a base64 string is half a megabyte
 * at B=1 L=128). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static bool plain_ascii(const unsigned char *c, size_t n)
{
    unsigned odd = 0;
    for (size_t i = 0; i < n; i++)
        odd |= (unsigned)(c[i] < 0x20) | (unsigned)(c[i] > 0x7e) | (unsigned)(c[i] == '\\');
    return !odd;
}

/* Reads the embeddings array at s ('[') to its end: see the section comment.
 * Sets sc->end, or sc->bad_syntax (or sc->oom). */
static void scan_embeddings(emb_scan *sc, const char *body, const char *s, const char *end)
{
    const char *p = s;
    size_t depth = 0;    /* arrays open: the level of the next value */
    size_t idx[3] = {0}; /* the entry being read in each of the outer three arrays */
    for (;;) {
        /* a value at level depth starts at p (p < end) */
        if (depth + 2 > JSON_MAX_DEPTH) /* the body's object is 1, embeddings 2 */
            goto bad;
        const char c = *p;
        if (c == '[') {
            scan_value(sc, depth, idx, V_ARRAY, true, 0.0);
            if (depth < 3)
                idx[depth] = 0;
            depth++;
            p = jt_skip_ws(p + 1, end);
            if (p == end)
                goto bad;
            if (*p != ']')
                continue;
            p++;
            depth--;
            if (depth < 3)
                scan_close(sc, depth, idx, 0);
        } else if (c == '-' || is_digit(c)) {
            jsonnum_scanned t;
            if (!jsonnum_scan(p, (size_t)(end - p), &t))
                goto bad;
            bool in_range = true, erange;
            double v = 0.0;
            if (t.mag > 38) { /* not certainly below 1e38 (FLT_MAX is 3.4e38) */
                if (!jsonnum_strtod(p, t.len, &v, &erange)) {
                    sc->oom = true;
                    return;
                }
                if (erange && isinf(v))
                    goto bad; /* jansson: "real number overflow" */
                in_range = v <= FLT_MAX && v >= -FLT_MAX;
            }
            if (depth != sc->num_depth || !in_range) /* else: a number where numbers go */
                scan_value(sc, depth, idx, V_NUMBER, in_range, v);
            p += t.len;
            if (p < end && *p == '\0') /* jansson drops one NUL here: see the words below */
                p++;
        } else if (c == 't' || c == 'f' || c == 'n') {
            const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
            const size_t n = strlen(word);
            if ((size_t)(end - p) < n || memcmp(p, word, n) != 0)
                goto bad;
            scan_value(sc, depth, idx, c == 'n' ? V_NULL : V_BOOL, true, 0.0);
            p += n; /* "truex": what follows is checked below */
            /* jansson 2.14 reads one byte past a number or a word and puts it
             * back; a NUL put back is lost, so "1\0]" is "1]" to jansson. */
            if (p < end && *p == '\0')
                p++;
        } else if (c == '"') {
            const char *q = jt_skip_string(p, end);
            json_error_t je;
            json_t *str = q ? json_loadb(p, (size_t)(q - p), JSON_DECODE_ANY, &je) : NULL;
            if (!str)
                goto bad;
            json_decref(str);
            scan_value(sc, depth, idx, V_STRING, true, 0.0);
            p = q;
        } else if (c == '{') {
            if (!(p = jt_skip_nested(p, end)))
                goto bad;
            sc->objects = true;
            scan_value(sc, depth, idx, V_OBJECT, true, 0.0);
        } else {
            goto bad;
        }
        /* after a value: a comma, or the ends of arrays */
        for (;;) {
            if (depth == 0) {
                sc->end = (size_t)(p - body);
                return;
            }
            p = jt_skip_ws(p, end);
            if (p == end)
                goto bad;
            if (*p == ',') {
                if (depth <= 3)
                    idx[depth - 1]++;
                p = jt_skip_ws(p + 1, end);
                if (p == end)
                    goto bad;
                break;
            }
            if (*p != ']')
                goto bad;
            p++;
            depth--;
            if (depth < 3)
                scan_close(sc, depth, idx, idx[depth] + 1);
        }
    }
bad:
    sc->bad_syntax = true;
}

/* Walks the top-level object to its "embeddings" member and scans it when
 * it is an array (sc->found).  Anything unexpected on the way just stops
 * the walk: the body is then invalid JSON, and jansson says so. */
static void find_embeddings(emb_scan *sc, const char *body, size_t len)
{
    const char *p = body, *end = body + len;
    p = jt_skip_ws(p, end);
    if (p == end || *p != '{')
        return;
    p = jt_skip_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *q = jt_skip_string(p, end);
        if (!q)
            return;
        const bool emb = jt_key_is(p + 1, (size_t)(q - 1 - (p + 1)), "embeddings");
        const bool b64 = jt_key_is(p + 1, (size_t)(q - 1 - (p + 1)), "embeddings_b64");
        p = jt_skip_ws(q, end);
        if (p == end || *p != ':')
            return;
        p = jt_skip_ws(p + 1, end);
        if (p == end)
            return;
        if (emb) {
            if (*p == '[') {
                sc->found = true;
                sc->start = (size_t)(p - body);
                scan_embeddings(sc, body, p, end);
            }
            return; /* a second "embeddings" is jansson's duplicate key */
        }
        const char *next = NULL; /* past the value, when the string was read here */
        if (b64 && *p == '"' && !sc->b64_found) { /* a second one: jansson's duplicate key */
            const char *s = memchr(p + 1, '"', (size_t)(end - (p + 1)));
            if (s && plain_ascii((const unsigned char *)p + 1, (size_t)(s - (p + 1)))) {
                sc->b64_found = true;
                sc->b64_start = (size_t)(p + 1 - body);
                sc->b64_end = (size_t)(s - body);
                next = s + 1; /* no escapes: the string ends at that quote */
            }
        }
        if (!(p = next ? next : jt_skip_value(p, end)))
            return;
        p = jt_skip_ws(p, end);
        if (p == end || *p != ',')
            return;
        p = jt_skip_ws(p + 1, end);
    }
}

/* The body as jansson values, with the scanned embeddings array replaced
 * by [] (its numbers are read from the text), or else the plain
 * embeddings_b64 string by "" (its characters are decoded from the text).
 * NULL when the body is not valid JSON, with *jerr as jansson words it for
 * the body itself (or *oom). */
static json_t *load_root(emb_scan *sc, const char *body, size_t len, json_error_t *jerr, bool *oom)
{
    size_t start, end; /* the bytes replaced */
    const char *empty; /* by this */
    if (sc->found && !sc->bad_syntax && !sc->objects) {
        start = sc->start, end = sc->end, empty = "[]";
        sc->b64_found = false; /* both keys: the request is refused anyway */
    } else if (sc->b64_found && !sc->found) {
        start = sc->b64_start - 1, end = sc->b64_end + 1, empty = "\"\"";
    } else {
        sc->b64_found = false;
        return encode_json_loadb(body, len, JSON_REJECT_DUPLICATES, jerr);
    }
    const size_t tail = len - end;
    char *doc = malloc(start + 2 + tail);
    if (!doc) {
        *oom = true;
        return NULL;
    }
    memcpy(doc, body, start);
    memcpy(doc + start, empty, 2);
    memcpy(doc + start + 2, body + end, tail);
    json_t *root = encode_json_loadb(doc, start + 2 + tail, JSON_REJECT_DUPLICATES, jerr);
    free(doc);
    if (root || !(doc = malloc(len)))
        return root;
    /* Invalid outside the value: again with "[  ...  ]" (or "  ...  ")
     * that keeps its newlines and one column per character (jansson counts
     * characters, not bytes), so the line and column are the body's. */
    memcpy(doc, body, start);
    size_t n = start;
    doc[n++] = empty[0];
    for (size_t i = start + 1; i + 1 < end; i++) {
        const unsigned char c = (unsigned char)body[i];
        if (c == '\n')
            doc[n++] = '\n';
        else if ((c & 0xc0) != 0x80 && c != 0) /* not a UTF-8 continuation byte, nor a */
            doc[n++] = ' ';                    /* NUL jansson dropped (no column either) */
    }
    doc[n++] = empty[1];
    memcpy(doc + n, body + end, tail);
    json_error_t padded;
    json_t *again = encode_json_loadb(doc, n + tail, JSON_REJECT_DUPLICATES, &padded);
    if (!again)
        *jerr = padded;
    json_decref(again);
    free(doc);
    return NULL;
}

/* Reads every number of the checked array text p[0..end) into x, in order.
 * Returns 0, -1 out of memory, -2 when the count is not n (cannot happen). */
static int read_numbers(const char *p, const char *end, float *x, size_t n)
{
    size_t k = 0;
    while (p < end) {
        const char c = *p;
        if (c != '-' && !is_digit(c)) {
            p++;
            continue;
        }
        double d;
        const size_t len = jsonnum_read(p, (size_t)(end - p), &d);
        if (len == 0)
            return -1;
        if (k == n)
            return -2;
        x[k++] = (float)d;
        p += len;
    }
    return k == n ? 0 : -2;
}

/* read_numbers on a second thread: the half of the text after a row's end. */
typedef struct half_read {
    const char *p, *end;
    float *x;
    size_t n;
    int rc;
} half_read;

static void *read_half(void *arg)
{
    half_read *h = arg;
    h->rc = read_numbers(h->p, h->end, h->x, h->n);
    return NULL;
}

/* Texts at least this long are read on two threads (about 1 ms each). */
#define READ_SPLIT_BYTES (1u << 20)

/* Whether q, a ']' in the checked array text starting at p, ends a row: the
 * last thing before it (past whitespace) is a number's last digit. */
static bool ends_row(const char *p, const char *q)
{
    if (*q != ']')
        return false;
    while (q > p && jt_is_ws(q[-1]))
        q--;
    return q > p && is_digit(q[-1]);
}

/* read_numbers over a checked array of rows of d numbers each, the second
 * half of the text on a second thread when it is long: the scan has already
 * held every row to d numbers, so the rows that end before the split say
 * where its numbers go. */
static int read_rows(const char *p, const char *end, float *x, size_t n, size_t d)
{
    if ((size_t)(end - p) < READ_SPLIT_BYTES)
        return read_numbers(p, end, x, n);
    /* The first row end (a ']' right after a number) past the middle. */
    const char *mid = p + (end - p) / 2;
    while (mid < end && !ends_row(p, mid))
        mid++;
    size_t rows = 0;
    for (const char *q = p; q <= mid && q < end; q++)
        rows += ends_row(p, q);
    if (mid >= end || rows * d > n)
        return read_numbers(p, end, x, n);
    half_read h = {mid + 1, end, x + rows * d, n - rows * d, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, read_half, &h) != 0)
        return read_numbers(p, end, x, n);
    const int rc = read_numbers(p, mid + 1, x, rows * d);
    pthread_join(t, NULL);
    return rc < 0 ? rc : h.rc;
}

static int parse_nested(encode_request *req, const json_t *emb, const emb_scan *sc,
                        const char *body, const enc_hparams *hp, const api_limits *lim,
                        api_error *err)
{
    if (!sc->found) {
        if (json_is_array(emb)) /* find_embeddings missed it: cannot happen */
            return api_error_set(err, API_INTERNAL, "encode: embeddings not scanned");
        return BAD("embeddings must be %s, not %s", EMB_FORM, encode_json_kind(emb));
    }
    if (sc->shape_bad)
        return BAD("%s", sc->shape_msg);
    req->batched = sc->form == FORM_BATCHED;
    const size_t B = sc->B, L = sc->L, D = (size_t)hp->d_model;
    if (check_limits(req, B, L, hp, lim, err) < 0)
        return -1;
    if (sc->walk_bad)
        return BAD("%s", sc->walk_msg);
    if (!(req->x = encode_alloc_input(req, B * L * D)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the embeddings");
    const int rc = read_rows(body + sc->start, body + sc->end, req->x, B * L * D, D);
    if (rc == -1)
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the embeddings");
    if (rc < 0)
        return api_error_set(err, API_INTERNAL, "encode: embeddings changed between passes");
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    return 0;
}

/* embeddings_b64 + shape; its characters are body[b64_start, b64_end) when
 * the scanner found them (text is then ""), else text's. */
static int parse_b64(encode_request *req, const json_t *text, const json_t *shape,
                     const emb_scan *sc, const char *body, const enc_hparams *hp,
                     const api_limits *lim, api_error *err)
{
    if (!json_is_string(text))
        return BAD("embeddings_b64 must be a base64 string, not %s", encode_json_kind(text));
    if (!shape)
        return BAD("embeddings_b64 needs shape: [B, L, d_model] or [L, d_model]");
    size_t nd = json_array_size(shape);
    if (!json_is_array(shape) || nd < 2 || nd > 3)
        return BAD("shape must be [B, L, d_model] or [L, d_model], not %s%s",
                   json_is_array(shape) ? "an array of " : encode_json_kind(shape),
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

    const char *s = sc->b64_found ? body + sc->b64_start : json_string_value(text);
    const size_t len = sc->b64_found ? sc->b64_end - sc->b64_start : json_string_length(text);
    const size_t n_floats = B * L * D;
    if (len % 4)
        return BAD("embeddings_b64 is not valid base64: its length (%zu) is not a multiple of 4",
                   len);
    const size_t have = base64_decoded_size(s, len), need = n_floats * sizeof(float);
    if (have != need) {
        char dims_s[80];
        if (req->batched)
            snprintf(dims_s, sizeof dims_s, "%zu, %zu, %zu", B, L, D);
        else
            snprintf(dims_s, sizeof dims_s, "%zu, %zu", L, D);
        return BAD("embeddings_b64 holds %zu bytes; shape [%s] needs %zu (float32, 4 bytes each)",
                   have, dims_s, need);
    }
    if (!(req->x = encode_alloc_input(req, (need + 3) / 4)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the embeddings");
    unsigned char *bytes = (unsigned char *)req->x;
    size_t bad;
    if (base64_decode_into(s, len, bytes, &bad) < 0) {
        unsigned char c = (unsigned char)s[bad];
        if (c >= 0x20 && c < 0x7f)
            return BAD("embeddings_b64 is not valid base64: '%c' at offset %zu", c, bad);
        return BAD("embeddings_b64 is not valid base64: byte 0x%02x at offset %zu", c, bad);
    }
    /* Little-endian float32 to the host's floats, in place: nothing to do
     * on a little-endian host. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t k = 0; k < n_floats; k++) {
        const unsigned char *p = bytes + 4 * k;
        const uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24;
        memcpy(req->x + k, &u, sizeof u);
    }
#endif
    /* Every float finite, or the first offender named. */
    const size_t k = enc_floats_nonfinite(req->x, n_floats);
    if (k < n_floats) {
        char where[80];
        const size_t b = k / (L * D), i = k / D % L, d = k % D;
        if (req->batched)
            snprintf(where, sizeof where, "embeddings[%zu][%zu][%zu]", b, i, d);
        else
            snprintf(where, sizeof where, "embeddings[%zu][%zu]", i, d);
        return BAD("embeddings_b64: float %zu (%s) is %s", k, where,
                   isnan(req->x[k]) ? "NaN" : "infinite");
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
        return BAD("lengths must be an array of integers (one per sequence), not %s",
                   encode_json_kind(v));
    if (json_array_size(v) != (size_t)B)
        return BAD("lengths has %zu %s; the batch has %d sequence%s", json_array_size(v),
                   entries(json_array_size(v)), B, plural((size_t)B));
    if (!(req->lengths = alloc_zero((size_t)B, sizeof *req->lengths)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (int b = 0; b < B; b++) {
        json_t *e = json_array_get(v, (size_t)b);
        if (!json_is_integer(e))
            return BAD("lengths[%d] is %s; expected an integer 1..%d", b, encode_json_kind(e), L);
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
        return BAD("%s must be a non-negative integer, not %s", name, encode_json_kind(v));
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
                   encode_json_kind(v));
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
        return BAD("mask.global must be an array of positions 0..%d, not %s", L - 1,
                   encode_json_kind(v));
    const size_t n = json_array_size(v);
    if (!(req->global = alloc_zero(n, sizeof *req->global)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(v, k);
        if (!json_is_integer(e))
            return BAD("mask.global[%zu] is %s; expected a position 0..%d", k, encode_json_kind(e),
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
                return BAD("%s is %s; expected an array of L (%zu) booleans", name,
                           encode_json_kind(row), L);
            if (json_array_size(row) != L)
                return BAD("%s has %zu %s; L is %zu", name, json_array_size(row),
                           entries(json_array_size(row)), L);
            for (size_t j = 0; j < L; j++) {
                const json_t *e = json_array_get(row, j);
                if (!json_is_boolean(e))
                    return BAD("%s[%zu] is not a boolean (it is %s)", name, j, encode_json_kind(e));
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
                return BAD("%s is %s; expected [L][L]", mname, encode_json_kind(mat));
            if (json_array_size(mat) != L)
                return BAD("%s has %zu row%s; L is %zu", mname, json_array_size(mat),
                           plural(json_array_size(mat)), L);
            for (size_t i = 0; i < L; i++) {
                const json_t *row = json_array_get(mat, i);
                if (!json_is_array(row))
                    return BAD("%s[%zu] is %s; expected an array of L (%zu) entries", mname, i,
                               encode_json_kind(row), L);
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
                    if (k != kind || k == ENC_MASK_NONE ||
                        (k == ENC_MASK_ADD && json_number_value(e) > FLT_MAX))
                        snprintf(name, sizeof name, "%s[%zu][%zu]", mname, i, j);
                    if (k == ENC_MASK_NONE)
                        return BAD("%s is %s; expected a boolean or a number", name,
                                   encode_json_kind(e));
                    if (kind == ENC_MASK_NONE) {
                        kind = k;
                        snprintf(first, sizeof first, "%s", name);
                    } else if (k != kind) {
                        return BAD("mask.attn mixes booleans and numbers: %s is %s but %s is "
                                   "%s; use one type",
                                   name, encode_json_kind(e), first,
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

/* Whether obj has only keys of known (n); else a 400 naming the first
 * other one and listing known as expected (text). */
static int only_keys(json_t *obj, const char *name, const char *const *known, size_t n,
                     const char *expected, api_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        bool ok = false;
        for (size_t i = 0; i < n; i++)
            ok = ok || strcmp(key, known[i]) == 0;
        if (!ok) {
            char q[SAFE_MAX + 4];
            return BAD("%s: unknown option '%s'; expected %s", name, safe_text(key, q), expected);
        }
    }
    return 0;
}

/* obj.key as an int in min..INT_MAX (an integer; null or absent: def, or a
 * 400 when required), named name.key in messages. */
static int pattern_int(const json_t *obj, const char *name, const char *key, long long min,
                       bool required, int def, int *out, api_error *err)
{
    const json_t *v = encode_json_field(obj, key);
    if (!v) {
        if (required)
            return BAD("%s.%s is required", name, key);
        *out = def;
        return 0;
    }
    if (!json_is_integer(v))
        return BAD("%s.%s must be an integer, not %s", name, key, encode_json_kind(v));
    const long long x = json_integer_value(v);
    if (x < min)
        return BAD("%s.%s = %lld must be at least %lld", name, key, x, min);
    if (x > INT_MAX)
        return BAD("%s.%s = %lld is too large (at most %d)", name, key, x, INT_MAX);
    *out = (int)x;
    return 0;
}

/* mask.strided {stride}, mask.fixed {block, summary}, mask.blocks {size,
 * window, global, random, seed}: the sparse patterns (docs/model.md). */
static int parse_strided(enc_mask *mk, json_t *v, const char *name, api_error *err)
{
    static const char *const known[] = {"stride"};
    if (!json_is_object(v))
        return BAD("%s must be an object {\"stride\": s}, not %s", name, encode_json_kind(v));
    if (only_keys(v, name, known, 1, "stride", err) < 0)
        return -1;
    return pattern_int(v, name, "stride", 1, true, 0, &mk->stride, err);
}

static int parse_fixed(enc_mask *mk, json_t *v, const char *name, api_error *err)
{
    static const char *const known[] = {"block", "summary"};
    if (!json_is_object(v))
        return BAD("%s must be an object {\"block\": l, \"summary\": c}, not %s", name,
                   encode_json_kind(v));
    if (only_keys(v, name, known, 2, "block, summary", err) < 0 ||
        pattern_int(v, name, "block", 1, true, 0, &mk->fixed_block, err) < 0 ||
        pattern_int(v, name, "summary", 0, true, 0, &mk->fixed_summary, err) < 0)
        return -1;
    if (mk->fixed_summary >= mk->fixed_block)
        return BAD("%s.summary = %d must be below %s.block = %d", name, mk->fixed_summary, name,
                   mk->fixed_block);
    return 0;
}

static int parse_blocks(enc_mask *mk, json_t *v, const char *name, api_error *err)
{
    static const char *const known[] = {"size", "window", "global", "random", "seed"};
    enc_blocks_pattern *p = &mk->blocks;
    if (!json_is_object(v))
        return BAD("%s must be an object {\"size\": b, \"window\": w, \"global\": g, "
                   "\"random\": r, \"seed\": s}, not %s",
                   name, encode_json_kind(v));
    if (only_keys(v, name, known, 5, "size, window, global, random, seed", err) < 0 ||
        pattern_int(v, name, "size", 1, true, 0, &p->size, err) < 0 ||
        pattern_int(v, name, "window", 0, false, 0, &p->window, err) < 0 ||
        pattern_int(v, name, "global", 0, false, 0, &p->global, err) < 0 ||
        pattern_int(v, name, "random", 0, false, 0, &p->random, err) < 0)
        return -1;
    const json_t *seed = encode_json_field(v, "seed");
    p->seed = 0;
    if (seed) {
        if (!json_is_integer(seed))
            return BAD("%s.seed must be a non-negative integer, not %s", name,
                       encode_json_kind(seed));
        if (json_integer_value(seed) < 0)
            return BAD("%s.seed = %lld must not be negative", name,
                       (long long)json_integer_value(seed));
        p->seed = (uint64_t)json_integer_value(seed);
    }
    return 0;
}

int encode_parse_pattern(encode_request *req, const char *option, json_t *v,
                         const char *name, api_error *err)
{
    enc_mask *mk = &req->batch.mask;
    if (strcmp(option, "strided") == 0)
        return parse_strided(mk, v, name, err);
    if (strcmp(option, "fixed") == 0)
        return parse_fixed(mk, v, name, err);
    return parse_blocks(mk, v, name, err);
}

static int parse_mask(encode_request *req, json_t *mask, api_error *err)
{
    static const char *const known[] = {"causal",      "window", "global",  "key_padding",
                                        "attn",        "strided", "fixed",  "blocks"};
    if (!json_is_object(mask))
        return BAD("mask must be an object, not %s", encode_json_kind(mask));
    if (only_keys(mask, "mask", known, sizeof known / sizeof *known,
                  "causal, window, global, key_padding, attn, strided, fixed or blocks", err) < 0)
        return -1;
    json_t *v;
    static const char *const patterns[] = {"strided", "fixed", "blocks"};
    for (size_t k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "mask.%s", patterns[k]);
        if ((v = encode_json_field(mask, patterns[k])) &&
            encode_parse_pattern(req, patterns[k], v, name, err) < 0)
            return -1;
    }
    if ((v = encode_json_field(mask, "causal"))) {
        if (!json_is_boolean(v))
            return BAD("mask.causal must be true or false, not %s", encode_json_kind(v));
        req->batch.mask.causal = json_is_true(v);
    }
    if ((v = encode_json_field(mask, "window")) && parse_window(req, v, err) < 0)
        return -1;
    if ((v = encode_json_field(mask, "global")) && parse_global(req, v, err) < 0)
        return -1;
    if ((v = encode_json_field(mask, "key_padding")) && parse_key_padding(req, v, err) < 0)
        return -1;
    if ((v = encode_json_field(mask, "attn")) && parse_attn_mask(req, v, err) < 0)
        return -1;
    return 0;
}

/* ---- parsing: the request ------------------------------------------------ */

static int parse_root(encode_request *req, json_t *root, const emb_scan *sc, const char *body,
                      const enc_hparams *hp, const api_limits *lim, api_error *err)
{
    if (!json_is_object(root))
        return BAD("the request body must be a JSON object, not %s", encode_json_kind(root));
    if (check_fields(root, err) < 0 || parse_options(req, root, err) < 0)
        return -1;

    json_t *emb = encode_json_field(root, "embeddings"),
           *b64 = encode_json_field(root, "embeddings_b64"),
           *shape = encode_json_field(root, "shape");
    if (emb && b64)
        return BAD("give either embeddings or embeddings_b64 (with shape), not both");
    if (!emb && !b64)
        return BAD("embeddings is required: number[B][L][d_model] or number[L][d_model] (or "
                   "embeddings_b64 with shape)");
    if (shape && !b64)
        return BAD("shape is only used with embeddings_b64");
    if ((emb ? parse_nested(req, emb, sc, body, hp, lim, err)
             : parse_b64(req, b64, shape, sc, body, hp, lim, err)) < 0)
        return -1;
    req->batch.x = req->x;

    json_t *v;
    if ((v = encode_json_field(root, "lengths")) && parse_lengths(req, v, err) < 0)
        return -1;
    if ((v = encode_json_field(root, "mask")) && parse_mask(req, v, err) < 0)
        return -1;
    return 0;
}

int encode_request_init(encode_request *req, const enc_hparams *hp, api_error *err)
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
    return 0;
}

int encode_check_limits(const encode_request *req, size_t B, size_t L, const enc_hparams *hp,
                        const api_limits *limits, api_error *err)
{
    return check_limits(req, B, L, hp, limits, err);
}

int encode_parse_mask(encode_request *req, json_t *mask, api_error *err)
{
    return parse_mask(req, mask, err);
}

int encode_request_parse(encode_request *req, const char *body, size_t len, const enc_hparams *hp,
                         const api_limits *limits, api_error *err)
{
    if (encode_request_init(req, hp, err) < 0)
        return -1;
    req->pool = limits ? limits->pool : NULL;

    const char *text = body ? body : "";
    const size_t n = body ? len : 0;
    emb_scan sc = {.D = (size_t)hp->d_model};
    find_embeddings(&sc, text, n);
    json_error_t jerr;
    bool oom = sc.oom;
    json_t *root = oom ? NULL : load_root(&sc, text, n, &jerr, &oom);
    if (oom)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    if (!root) {
        char msg[JSON_ERROR_TEXT_LENGTH + 4];
        /* jansson's text may quote the offending bytes: keep it ASCII. */
        return BAD("invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                   safe_text_n(jerr.text, msg, JSON_ERROR_TEXT_LENGTH));
    }
    int rc = sc.found && sc.bad_syntax /* but jansson took it: cannot happen */
                 ? api_error_set(err, API_INTERNAL, "encode: embeddings scanner refused valid JSON")
                 : parse_root(req, root, &sc, text, hp, limits, err);
    json_decref(root);
    if (rc == 0)
        rc = encode_request_plan(req, hp, limits, err);
    return rc;
}

int encode_request_plan(encode_request *req, const enc_hparams *hp, const api_limits *lim,
                        api_error *err)
{
    if (req->attn_mode == ENC_ATTN_NONE)
        req->csr = false; /* no weights to return */
    if (!req->csr)
        return 0;
    enc_error e = {0};
    if (!(req->blockmask = enc_blockmask_new(&req->batch, true, &e)))
        return api_error_set(err,
                             e.status == ENC_ELIMIT   ? API_TOO_LARGE
                             : e.status == ENC_ENOMEM ? API_UNAVAILABLE
                                                      : API_BAD_REQUEST,
                             "%s", e.message);
    req->batch.blockmask = req->blockmask;
    /* the weights of the allowed pairs: heads x nnz float32 per layer (the
     * limit counts weights, dense or CSR; not the index arrays) */
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
    const size_t layers = layers_wanted(req);
    size_t nnz = 0, bytes = 0;
    for (int b = 0; b < req->batch.B; b++)
        nnz += enc_blockmask_nnz(req->blockmask, b); /* each at most INT32_MAX */
    const bool over = mul_over(nnz, heads, &bytes) || mul_over(bytes, sizeof(float), &bytes) ||
                      mul_over(bytes, layers, &bytes);
    if (over || (lim && bytes > lim->max_attention_bytes)) {
        char amount[48];
        return TOO_LARGE("attention output of %s bytes (csr: %zu allowed pairs x %zu head%s x "
                         "float32 x %zu layer%s) is over limits.max_attention_bytes (%zu); ask "
                         "for %s, a sparser mask, or fewer attention_layers",
                         bytes_text(over, bytes, amount), nnz, heads, heads == 1 ? "" : "s", layers,
                         layers == 1 ? "" : "s", lim ? lim->max_attention_bytes : SIZE_MAX,
                         req->attn_mode == ENC_ATTN_HEADS ? "\"attention\": \"mean\" or \"none\""
                                                          : "\"attention\": \"none\"");
    }
    return 0;
}

size_t encode_attention_floats(const encode_request *req, const enc_hparams *hp)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 1;
    if (req->attn_mode == ENC_ATTN_NONE)
        return 0;
    if (!req->csr)
        return B * heads * L * L;
    size_t n = 0; /* the allowed pairs' values only */
    for (size_t b = 0; req->blockmask && b < B; b++)
        n += heads * enc_blockmask_nnz(req->blockmask, (int)b);
    return n;
}

float *encode_alloc_input(encode_request *req, size_t n)
{
    return n > SIZE_MAX / sizeof(float) ? NULL : bufpool_take(req->pool, n * sizeof(float));
}

/* Floats rounded up to a cache line's worth, so each array of the outputs'
 * block starts 64-byte aligned. */
static size_t line_floats(size_t n)
{
    return (n + 15) / 16 * 16;
}

int encode_request_alloc_outputs(encode_request *req, const enc_hparams *hp, api_error *err)
{
    if (!req->x || !hp || hp->n_layers != req->n_layers)
        return api_error_set(err, API_INTERNAL, "encode: outputs for an unparsed request");
    if (req->csr && !req->blockmask)
        return api_error_set(err, API_INTERNAL, "encode: CSR weights without a block mask");
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const size_t n_out = line_floats(B * L * (size_t)hp->d_model);
    const size_t per_layer = line_floats(encode_attention_floats(req, hp));
    size_t layers = 0;
    for (int l = 0; l < req->n_layers && req->attn_mode != ENC_ATTN_NONE; l++)
        layers += req->want_layer[l];
    /* One block for the outputs and every wanted layer's weights, taken
     * from the pool: the forward writes into memory the last request left
     * mapped.  Not zeroed: the forward writes every entry, padding included
     * (valgrind's memcheck would report an entry left unwritten when the
     * response reads it).  The sizes were held to the limits already. */
    req->attn = alloc_zero((size_t)req->n_layers, sizeof *req->attn);
    req->out = bufpool_take(req->pool, (n_out + layers * per_layer) * sizeof(float));
    if (!req->out || !req->attn)
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the outputs");
    float *next = req->out + n_out;
    for (int l = 0; l < req->n_layers && req->attn_mode != ENC_ATTN_NONE; l++)
        if (req->want_layer[l]) {
            req->attn[l] = next;
            next += per_layer;
        }
    return 0;
}

enc_result encode_request_result(encode_request *req)
{
    enc_result r = {.out = req->out,
                    .attn_mode = req->attn ? req->attn_mode : ENC_ATTN_NONE,
                    .attn_format = req->csr ? ENC_FORMAT_CSR : ENC_FORMAT_DENSE,
                    .attn = req->attn_mode != ENC_ATTN_NONE ? req->attn : NULL};
    return r;
}

void encode_request_free(encode_request *req)
{
    if (!req)
        return;
    bufpool_give(req->pool, req->x);
    free(req->lengths);
    free(req->global);
    free(req->key_padding);
    free(req->attn_bool);
    free(req->attn_add);
    enc_blockmask_free(req->blockmask);
    free(req->want_layer);
    free(req->layers);
    bufpool_give(req->pool, req->out);
    free(req->attn);
    memset(req, 0, sizeof *req);
}

/* ---- the response ---------------------------------------------------------- */

/* Sequence b of the outputs (layer < 0) or of layer's attention: [rows][cols]
 * or, per head, [heads][rows][cols]. */
static stream_view view_of(const encode_request *req, const enc_hparams *hp, int layer, size_t b)
{
    const size_t L = (size_t)req->batch.L, len = seq_len_of(req, b), D = (size_t)hp->d_model;
    if (layer < 0)
        return (stream_view){req->out + b * L * D, STREAM_FLOAT32, 2, {len, D}, {D, 1}};
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 0;
    const float *base = req->attn[layer] + b * (heads ? heads : 1) * L * L;
    if (!heads)
        return (stream_view){base, STREAM_FLOAT32, 2, {len, len}, {L, 1}};
    return (stream_view){base, STREAM_FLOAT32, 3, {heads, len, len}, {L * L, L, 1}};
}

/* n 4-byte words at p as a vector. */
static stream_view words(const void *p, stream_word word, size_t n)
{
    return (stream_view){p, word, 1, {n}, {1}};
}

/* The outputs (layer < 0) or a layer's attention in the request's form:
 * nested numbers, one base64 string, or (ragged base64) one per sequence. */
static void write_tensor(stream *st, const encode_request *req, const enc_hparams *hp, int layer)
{
    const size_t B = (size_t)req->batch.B;
    if (!req->base64_out) {
        if (req->batched)
            stream_text(st, "[", 1);
        for (size_t b = 0; b < B; b++) {
            const stream_view v = view_of(req, hp, layer, b);
            if (b)
                stream_text(st, ",", 1);
            stream_json(st, &v, req->precision);
        }
        if (req->batched)
            stream_text(st, "]", 1);
        return;
    }
    const bool per_seq = req->lengths && req->batched;
    stream_text(st, per_seq ? "[\"" : "\"", per_seq ? 2 : 1);
    for (size_t b = 0; b < B; b++) {
        const stream_view v = view_of(req, hp, layer, b);
        if (per_seq && b)
            stream_text(st, "\",\"", 3);
        stream_base64(st, &v);
    }
    stream_text(st, per_seq ? "\"]" : "\"", per_seq ? 2 : 1);
}

/* n 4-byte words at p as one base64 string. */
static void write_b64_words(stream *st, const void *p, stream_word word, size_t n)
{
    const stream_view v = words(p, word, n);
    stream_text(st, "\"", 1);
    stream_base64(st, &v);
    stream_text(st, "\"", 1);
}

/* A layer's attention as CSR (docs/api.md): per sequence {"indptr",
 * "indices", "values"} (base64: strings and their shapes); an array of them
 * for batched input. */
static void write_csr(stream *st, const encode_request *req, const enc_hparams *hp, int layer)
{
    const size_t B = (size_t)req->batch.B;
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? (size_t)hp->n_heads : 0;
    const size_t nh = heads ? heads : 1;
    const float *values = req->attn[layer];
    if (req->batched)
        stream_text(st, "[", 1);
    for (size_t b = 0; b < B; b++) {
        const size_t len = seq_len_of(req, b), nnz = enc_blockmask_nnz(req->blockmask, (int)b);
        const int32_t *indptr = enc_blockmask_indptr(req->blockmask, (int)b);
        const int32_t *indices = enc_blockmask_indices(req->blockmask, (int)b);
        stream_puts(st, b ? ",{\"indptr\":" : "{\"indptr\":");
        if (req->base64_out) {
            write_b64_words(st, indptr, STREAM_INT32, len + 1);
            stream_puts(st, ",\"indices\":");
            write_b64_words(st, indices, STREAM_INT32, nnz);
            stream_puts(st, ",\"values\":");
            write_b64_words(st, values, STREAM_FLOAT32, nh * nnz);
            stream_printf(st, ",\"indptr_shape\":[%zu],\"indices_shape\":[%zu],\"values_shape\":[",
                          len + 1, nnz);
            if (heads)
                stream_printf(st, "%zu,", heads);
            stream_printf(st, "%zu]}", nnz);
        } else {
            const stream_view ip = words(indptr, STREAM_INT32, len + 1);
            const stream_view ix = words(indices, STREAM_INT32, nnz);
            const stream_view vals = {values, STREAM_FLOAT32, 2, {nh, nnz}, {nnz, 1}};
            stream_json(st, &ip, 0);
            stream_puts(st, ",\"indices\":");
            stream_json(st, &ix, 0);
            stream_puts(st, ",\"values\":");
            if (heads) {
                stream_json(st, &vals, req->precision);
            } else {
                const stream_view row = words(values, STREAM_FLOAT32, nnz);
                stream_json(st, &row, req->precision);
            }
            stream_puts(st, "}");
        }
        values += nh * nnz;
    }
    if (req->batched)
        stream_text(st, "]", 1);
}

/* "H,rows,cols" or "rows,cols" of a view. */
static void write_dims(stream *st, const stream_view *v)
{
    for (int d = 0; d < v->rank; d++)
        stream_printf(st, d ? ",%zu" : "%zu", v->dims[d]);
}

/* outputs_shape / attention_shape for the base64 form. */
static void write_shape(stream *st, const encode_request *req, const enc_hparams *hp, int layer)
{
    const size_t B = (size_t)req->batch.B;
    if (req->lengths && req->batched) {
        stream_text(st, "[", 1);
        for (size_t b = 0; b < B; b++) {
            const stream_view v = view_of(req, hp, layer, b);
            stream_text(st, b ? ",[" : "[", b ? 2 : 1);
            write_dims(st, &v);
            stream_text(st, "]", 1);
        }
        stream_text(st, "]", 1);
        return;
    }
    const stream_view v = view_of(req, hp, layer, 0);
    stream_text(st, "[", 1);
    if (req->batched)
        stream_printf(st, "%zu,", B);
    write_dims(st, &v);
    stream_text(st, "]", 1);
}

int encode_response_stream(const encode_request *req, const char *model_name,
                           const enc_hparams *hp, const encode_usage *usage, stream *st)
{
    if (!req || !hp || !req->out || hp->n_layers != req->n_layers)
        return -1;
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L, D = (size_t)hp->d_model;
    const int last = req->n_layers - 1;
    const bool attn = req->attn_mode != ENC_ATTN_NONE && req->attn && req->attn[last];

    json_t *name = json_string(model_name ? model_name : "");
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    stream_puts(st, "{\"model\":");
    stream_puts(st, quoted ? quoted : "\"\"");
    free(quoted);
    json_decref(name);

    stream_puts(st, ",\"shape\":[");
    if (req->batched)
        stream_printf(st, "%zu,", B);
    stream_printf(st, "%zu,%zu],\"outputs\":", L, D);
    write_tensor(st, req, hp, -1);
    if (req->base64_out) {
        stream_puts(st, ",\"outputs_shape\":");
        write_shape(st, req, hp, -1);
    }
    if (attn) {
        stream_puts(st, ",\"attention\":");
        if (req->csr)
            write_csr(st, req, hp, last);
        else
            write_tensor(st, req, hp, last);
        if (req->base64_out && !req->csr) {
            stream_puts(st, ",\"attention_shape\":");
            write_shape(st, req, hp, last);
        }
        if (req->layers_listed) {
            stream_puts(st, ",\"attention_layers\":[");
            for (int k = 0; k < req->n_listed; k++) {
                const int l = req->layers[k];
                stream_printf(st, "%s{\"layer\":%d,\"attention\":", k ? "," : "", l);
                if (req->attn[l] && req->csr)
                    write_csr(st, req, hp, l);
                else if (req->attn[l])
                    write_tensor(st, req, hp, l);
                else
                    stream_puts(st, "null");
                stream_puts(st, "}");
            }
            stream_puts(st, "]");
        }
    }
    const double q = usage && isfinite(usage->queue_ms) ? usage->queue_ms : 0.0;
    const double c = usage && isfinite(usage->compute_ms) ? usage->compute_ms : 0.0;
    stream_printf(st,
                  ",\"usage\":{\"sequences\":%d,\"tokens\":%ld,\"queue_ms\":%.3f,"
                  "\"compute_ms\":%.3f,\"attention_scores\":%" PRIu64 "}}",
                  usage ? usage->sequences : req->batch.B, usage ? usage->tokens : 0L, q, c,
                  usage ? usage->attention_scores : (uint64_t)0);
    return stream_failed(st) ? -1 : 0;
}

char *encode_response(const encode_request *req, const char *model_name, const enc_hparams *hp,
                      const encode_usage *usage, size_t *len)
{
    stream *st = stream_new();
    char *text = NULL;
    if (st && encode_response_stream(req, model_name, hp, usage, st) == 0)
        text = stream_collect(st, len);
    stream_free(st);
    return text;
}
