/* v1.c - the /v1/encode codec: a JSON request body to the neutral request
 * (v1_request_parse; encode_request.h), a forward's results to the JSON
 * response body (v1_response_stream, v1_response).
 *
 * Choices where the contract (docs/contract.md section 4) is silent
 * (docs/api.md, "POST /v1/encode", is the user's version of this
 * list):
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
 * - The limits, checked as soon as B and L are known, are
 *   encode_request.c's; the mask's rules are options.c's.
 * - Every input number must fit float32 (|v| <= FLT_MAX), padding rows
 *   included; base64 input must be finite everywhere.
 * - Numbers are printed as "%.{precision}g" prints them in the C locale (the
 *   daemon never calls setlocale), by jsonnum_write rather than snprintf
 *   (same text, several times faster).  A non-finite value, which the core never
 *   returns, would be printed as null so the body stays valid JSON.
 * - The embeddings array is read from the body text by codec/extract.c, not
 *   through one json_t per number; jansson reads the rest of the body.  A
 *   number becomes (float)strtod(text); the integer -0 is -0.0f.  So are
 *   input_ids, token_type_ids and attention_mask, as int32 (a fraction or
 *   an exponent is refused even when whole: "2e0" is not an integer).
 * - input_ids (a model with an embedding module only) may have ragged rows:
 *   the batch is padded to the longest row with the model's padding id and
 *   each row's own length becomes its sequence's (lengths, which may then
 *   only shorten a row); token_type_ids, attention_mask and per-sequence
 *   position_ids are shaped as input_ids, row for row.
 * - attention_mask is transformers' (encode_request.c says how it becomes
 *   lengths and key padding); it also works with embeddings, and with
 *   lengths the two must agree.  Either way the response is ragged, as
 *   with lengths.
 *
 * Error messages name the field and index: "embeddings[1][3] has 511
 * numbers; d_model is 512", "mask: unknown option 'x'", "lengths[1] = 9 is
 * outside 1..7", "batch of 65 sequences is over limits.max_batch (64)".
 * Text from the client (field names, strings) is quoted as printable ASCII
 * only and cut, so a message is always valid UTF-8.
 */
#include "protocol/v1.h"

#include "protocol/options.h"
#include "protocol/protocol.h"
#include "protocol/schemas.h"
#include "protocol/text.h"

#include "runtime/bufpool.h"
#include "codec/stream.h"
#include "codec/base64.h"
#include "codec/body.h"
#include "codec/extract.h"
#include "codec/jsontext.h"
#include "codec/strbuf.h"

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

/* ---- parsing: options ------------------------------------------------------ */

/* The body's fields, in the order the unknown-field message lists them.
 * embeddings is cut out of the body before jansson reads it (see below):
 * it is here for that message and the table's completeness. */
static const char *const ENCODINGS[] = {"json", "base64", NULL};
static const field_spec TOP_FIELDS[] = {
    {.name = "embeddings", .type = FIELD_JSON},
    {.name = "embeddings_b64", .type = FIELD_JSON},
    {.name = "shape", .type = FIELD_JSON},
    {.name = "input_ids", .type = FIELD_JSON},
    {.name = "token_type_ids", .type = FIELD_JSON},
    {.name = "attention_mask", .type = FIELD_JSON},
    {.name = "lengths", .type = FIELD_JSON},
    {.name = "text", .type = FIELD_JSON},
    TEXT_FIELD_TRUNCATE,
    TEXT_FIELD_DIRECTION,
    {.name = "mask", .type = FIELD_JSON},
    {.name = "position_ids", .type = FIELD_JSON},
    OPTIONS_FIELD_ATTENTION,
    {.name = "attention_layers", .type = FIELD_JSON},
    OPTIONS_FIELD_ATTENTION_FORMAT,
    {.name = "precision", .type = FIELD_INT, .min = 1, .max = 9},
    {.name = "encoding", .type = FIELD_CHOICE, .choices = ENCODINGS},
    {.name = "logits", .type = FIELD_BOOL},
    {.name = "explain", .type = FIELD_BOOL},
    {.name = "explain_from", .type = FIELD_INT, .min = 0, .max = INT_MAX},
};
const field_table v1_encode_fields = FIELD_TABLE("field", TOP_FIELDS);

/* attention_layers: "last" | "all" | int[] of distinct indices 0..n-1. */
static int parse_layers(encode_request *req, const json_t *v, api_error *err)
{
    const int n = req->n_layers;
    const char *s = json_string_value(v);
    char q[API_SAFE_MAX + 4];
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
                   n - 1, api_safe_text(s, q));
    if (!json_is_array(v))
        return BAD("attention_layers must be \"last\", \"all\" or an array of layer indices "
                   "0..%d, not %s",
                   n - 1, fields_kind(v));
    if (json_array_size(v) == 0)
        return BAD("attention_layers is empty; give layer indices 0..%d, \"all\" or \"last\"",
                   n - 1);
    bool *seen = encode_zalloc((size_t)n, sizeof *seen);
    if (!seen)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    int rc = 0;
    for (size_t k = 0; k < json_array_size(v) && rc == 0; k++) {
        json_t *e = json_array_get(v, k);
        if (!json_is_integer(e)) {
            rc = BAD("attention_layers[%zu] is %s; expected a layer index 0..%d", k, fields_kind(e),
                     n - 1);
            break;
        }
        long long l = json_integer_value(e);
        if (l < 0 || l >= n)
            rc = BAD("attention_layers[%zu] = %lld is outside 0..%d (the model has %d layer%s)", k,
                     l, n - 1, n, api_plural((size_t)n));
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

static int parse_explain(encode_request *req, const json_t *root, api_error *err)
{
    return encode_want_explain(req, fields_bool(root, "explain", false),
                               fields_get(root, "explain_from"), err);
}

/* attention, attention_layers, precision, attention_format, encoding,
 * explain (checked against TOP). */
static int parse_options(encode_request *req, const json_t *root, api_error *err)
{
    options_apply_attention(req, &v1_encode_fields, root);
    if (parse_layers(req, fields_get(root, "attention_layers"), err) < 0)
        return -1;
    if (req->attn_mode == ENC_ATTN_NONE) {
        req->layers_listed = false; /* validated, but nothing to return */
        req->csr = false;           /* validated, but no weights to return */
    } else {
        req->want_layer[req->n_layers - 1] = true;
        for (int k = 0; k < req->n_listed; k++)
            req->want_layer[req->layers[k]] = true;
    }
    req->precision = (int)fields_int(root, "precision", req->precision);
    req->base64_out = fields_choice(&v1_encode_fields, root, "encoding", 0) == 1;
    return parse_explain(req, root, err);
}
/* ---- parsing: embeddings --------------------------------------------------- */

/* The embeddings are read from the body's text (codec/extract.h), not
 * through jansson: the top-level "embeddings" array is scanned and cut out
 * of what jansson reads, or else a plain "embeddings_b64" string is decoded
 * where it lies.  parse_nested then checks the form, then the limits, then
 * the array's first fault in document order, and only then allocates x and
 * reads the numbers into it. */

static const char EMB_FORM[] = "number[B][L][d_model] or number[L][d_model]";

/* The integer arrays read from the text as the embeddings are: token ids
 * and the mask, int[L] or int[B][L], rows ragged alike. */
enum { INT_IDS, INT_TYPES, INT_AMASK, N_INTS };
static const char *const INT_FIELD[N_INTS] = {"input_ids", "token_type_ids", "attention_mask"};

typedef struct v1_text {
    bool found;                /* the top-level "embeddings" is an array, scanned */
    jx_array emb;              /* ... here */
    const char *b64, *b64_end; /* a plain top-level "embeddings_b64" string's characters */
    bool int_found[N_INTS];    /* INT_FIELD[i] is an array, scanned (jx_scan_rows) ... */
    jx_array ints[N_INTS];     /* ... here */
} v1_text;

/* A member of the body's object: scan "embeddings" and the integer arrays,
 * note "embeddings_b64".  A second one of any is left to jansson (a
 * duplicate key). */
static const char *top_member(void *ctx, const char *key, size_t key_len, const char *v,
                              const char *end)
{
    v1_text *t = ctx;
    if (!t->found && *v == '[' && jt_key_is(key, key_len, "embeddings")) {
        t->found = true;
        return jx_scan(v, end, &t->emb); /* NULL (the walk stops) on a syntax fault */
    }
    for (int i = 0; i < N_INTS && *v == '['; i++)
        if (!t->int_found[i] && jt_key_is(key, key_len, INT_FIELD[i])) {
            t->int_found[i] = true;
            return jx_scan_rows(v, end, &t->ints[i]);
        }
    const char *s;
    if (!t->b64 && *v == '"' && jt_key_is(key, key_len, "embeddings_b64") &&
        (s = jx_plain_string(v, end, &t->b64_end))) {
        t->b64 = s;
        return t->b64_end + 1;
    }
    return jt_skip_value(v, end);
}

/* "embeddings[b][i]" (batched) or "embeddings[i]": the entry at at[0..depth). */
static const char *emb_name(const size_t *at, int depth, char *buf, size_t size)
{
    char idx[JX_MAX_RANK * 24];
    snprintf(buf, size, "embeddings%s", jx_index_text(at, depth, idx, sizeof idx));
    return buf;
}

/* The array's first fault (t->emb.fault != JX_OK) as the request's error;
 * numbers sit at depth nd (3 batched, 2 not). */
static int emb_fault(const jx_array *a, int nd, size_t D, api_error *err)
{
    char name[JX_MAX_RANK * 24 + 16];
    emb_name(a->at, a->depth, name, sizeof name);
    switch (a->fault) {
    case JX_COUNT:
        if (a->depth == nd - 1)
            return BAD("%s has %zu number%s; d_model is %zu", name, a->entries,
                       api_plural(a->entries), D);
        return BAD("%s has %zu row%s; embeddings[0] has %zu (sequences must have the same "
                   "length: pad them and send lengths)",
                   name, a->entries, api_plural(a->entries), a->dims[1]);
    case JX_KIND:
        if (a->depth == nd)
            return BAD("%s is not a number (it is %s)", name, a->is);
        if (a->depth == nd - 1)
            return BAD("%s is %s; expected an array of d_model (%zu) numbers", name, a->is, D);
        return BAD("%s is %s; expected an array of rows", name, a->is);
    case JX_RANGE:
        return BAD("%s = %g is outside the float32 range", name, a->value);
    default: /* JX_DEEP: the form's checks came first; the rest never get here */
        return api_error_set(err, API_INTERNAL, "encode: embeddings fault %d", (int)a->fault);
    }
}

static int parse_nested(encode_request *req, const json_t *emb, const v1_text *t,
                        const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    if (!t->found) {
        if (json_is_array(emb)) /* top_member missed it: cannot happen */
            return api_error_set(err, API_INTERNAL, "encode: embeddings not scanned");
        return BAD("embeddings must be %s, not %s", EMB_FORM, fields_kind(emb));
    }
    const jx_array *a = &t->emb;
    const size_t D = (size_t)hp->d_model;
    /* The form, from the first entries: [B][L][d_model] or [L][d_model]. */
    if (a->dims[0] == 0)
        return BAD("embeddings is empty; expected %s", EMB_FORM);
    if (a->rank < 2)
        return BAD("embeddings[0] is %s; embeddings must be %s", a->leaf, EMB_FORM);
    if (a->dims[1] == 0)
        return BAD("embeddings[0] is empty; embeddings must be %s", EMB_FORM);
    if (a->rank == 2 && strcmp(a->leaf, "a number") != 0)
        return BAD("embeddings[0][0] is %s; embeddings must be %s", a->leaf, EMB_FORM);
    req->batched = a->rank >= 3;
    const int nd = req->batched ? 3 : 2;
    const size_t B = req->batched ? a->dims[0] : 1, L = req->batched ? a->dims[1] : a->dims[0];
    if (encode_check_limits(req, B, L, hp, ctx, err) < 0)
        return -1;
    /* In document order: the first row's length, a number there, then the
     * rest of the array. */
    char name[JX_MAX_RANK * 24 + 16];
    const size_t zeros[JX_MAX_RANK] = {0};
    if (a->dims[nd - 1] != D)
        return BAD("%s has %zu number%s; d_model is %zu",
                   emb_name(zeros, nd - 1, name, sizeof name), a->dims[nd - 1],
                   api_plural(a->dims[nd - 1]), D);
    if (a->rank > nd)
        return BAD("%s is not a number (it is an array)", emb_name(zeros, nd, name, sizeof name));
    if (a->fault != JX_OK)
        return emb_fault(a, nd, D, err);
    if (a->count != B * L * D) /* the scan held every row to D numbers: cannot happen */
        return api_error_set(err, API_INTERNAL, "encode: embeddings hold %zu numbers", a->count);
    if (!(req->x = encode_alloc_input(req, B * L * D)) || jx_read_f32(a, req->x) < 0)
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the embeddings");
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    return 0;
}

/* embeddings_b64 + shape; its characters are body[b64_start, b64_end) when
 * the scanner found them (text is then ""), else text's. */
static int parse_b64(encode_request *req, const json_t *text, const json_t *shape, const v1_text *t,
                     const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    if (!json_is_string(text))
        return BAD("embeddings_b64 must be a base64 string, not %s", fields_kind(text));
    if (!shape)
        return BAD("embeddings_b64 needs shape: [B, L, d_model] or [L, d_model]");
    size_t nd = json_array_size(shape);
    if (!json_is_array(shape) || nd < 2 || nd > 3)
        return BAD("shape must be [B, L, d_model] or [L, d_model], not %s%s",
                   json_is_array(shape) ? "an array of " : fields_kind(shape),
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
    if (encode_check_limits(req, B, L, hp, ctx, err) < 0)
        return -1;

    const char *s = t->b64 ? t->b64 : json_string_value(text);
    const size_t len = t->b64 ? (size_t)(t->b64_end - t->b64) : json_string_length(text);
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
        const uint32_t u =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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

/* ---- parsing: token ids and attention_mask ------------------------------------ */

/* input_ids is int[L] or int[B][L] with rows of any length: a ragged batch
 * is padded to its longest row, each row's own length its sequence's
 * (unless lengths or attention_mask say less).  token_type_ids and
 * attention_mask are shaped as input_ids, row for row; attention_mask with
 * embeddings is [B][L] ([L] for the unbatched form).  Each array is read
 * from the body's text as the embeddings are (jx_scan_rows, then
 * jx_read_i32_rows): the form, then the limits, then the array's first
 * fault in document order, then the numbers. */

static const char IDS_FORM[] = "int[B][L] or int[L] (token ids)";

/* The rows of a request with input_ids: each row's entries. */
typedef struct v1_rows {
    size_t *len; /* owned (B): input_ids[b]'s entries; NULL for embeddings (every row L) */
    bool ragged; /* a row is shorter than L (the longest) */
} v1_rows;

/* A scanned integer array's fault (a->fault != JX_OK) as the request's
 * error. */
static int ints_fault(const char *field, const jx_array *a, api_error *err)
{
    char idx[JX_MAX_RANK * 24];
    jx_index_text(a->at, a->depth, idx, sizeof idx);
    switch (a->fault) {
    case JX_KIND:
        if (a->depth >= a->rank)
            return BAD("%s%s is %s, not an integer", field, idx, a->is);
        return BAD("%s%s is %s; expected an array of integers", field, idx, a->is);
    case JX_RANGE:
        return BAD("%s%s = %g is outside the int32 range", field, idx, a->value);
    default: /* JX_COUNT (rows may differ; the outer array is one) or JX_DEEP (the
                form's checks came first): cannot happen */
        return api_error_set(err, API_INTERNAL, "encode: %s fault %d", field, (int)a->fault);
    }
}

/* A number jx_read_i32_rows refused. */
static int int_fault(const encode_request *req, const char *field, const jx_int_fault *bad,
                     api_error *err)
{
    char at[48];
    encode_index_text(req, bad->row, bad->entry, at);
    const int n = (int)(bad->tok_len > API_SAFE_MAX ? API_SAFE_MAX : bad->tok_len);
    if (bad->fraction)
        return BAD("%s%s is %.*s, not an integer", field, at, n, bad->tok);
    return BAD("%s%s = %.*s is outside the int32 range", field, at, n, bad->tok);
}

/* "input_ids[b] has N" or "the sequences have N positions": what row b
 * must hold, for messages. */
static const char *row_want(const encode_request *req, const v1_rows *rows, size_t b, char *buf,
                            size_t size)
{
    if (!rows->len)
        snprintf(buf, size, "the sequences have %d position%s", req->batch.L,
                 api_plural((size_t)req->batch.L));
    else if (req->batched)
        snprintf(buf, size, "input_ids[%zu] has %zu", b, rows->len[b]);
    else
        snprintf(buf, size, "input_ids has %zu", rows->len[b]);
    return buf;
}

/* token_type_ids or attention_mask (INT_FIELD[i], JSON value v) into dst
 * (B, L), shaped as the rows: int[B][L] batched, int[L] not, row b
 * rows->len[b] entries (or L). */
static int read_ints(encode_request *req, int i, const json_t *v, const v1_text *t,
                     const v1_rows *rows, int32_t *dst, api_error *err)
{
    const char *field = INT_FIELD[i];
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const char *form = req->batched ? "int[B][L]" : "int[L]";
    const char *like = rows->len ? "shaped as input_ids" : "for the embeddings' sequences";
    char want[96], zero[JX_MAX_RANK * 24];
    if (!t->int_found[i]) {
        if (json_is_array(v)) /* top_member missed it: cannot happen */
            return api_error_set(err, API_INTERNAL, "encode: %s not scanned", field);
        return BAD("%s must be %s (%s), not %s", field, form, like, fields_kind(v));
    }
    const jx_array *a = &t->ints[i];
    const int rank = req->batched ? 2 : 1;
    const size_t zeros[JX_MAX_RANK] = {0};
    if (a->rank < rank && a->dims[0] > 0)
        return BAD("%s[0] is %s; %s must be %s (%s)", field, a->leaf ? a->leaf : "empty", field,
                   form, like);
    if (a->rank > rank)
        return BAD("%s%s is an array, not an integer (%s must be %s, %s)", field,
                   jx_index_text(zeros, rank, zero, sizeof zero), field, form, like);
    if (req->batched && a->dims[0] != B)
        return BAD("%s has %zu row%s; the batch has %zu sequence%s", field, a->dims[0],
                   api_plural(a->dims[0]), B, api_plural(B));
    if (a->fault != JX_OK)
        return ints_fault(field, a, err);
    size_t *got = encode_zalloc(B, sizeof *got);
    if (!got)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    jx_int_fault bad;
    int rc = 0;
    if (jx_read_i32_rows(a, dst, L, got, &bad) != 0)
        rc = int_fault(req, field, &bad, err);
    for (size_t b = 0; rc == 0 && b < B; b++) {
        const size_t n = rows->len ? rows->len[b] : L;
        if (got[b] == n)
            continue;
        row_want(req, rows, b, want, sizeof want);
        if (req->batched)
            rc = BAD("%s[%zu] has %zu %s; %s", field, b, got[b], api_entries(got[b]), want);
        else
            rc = BAD("%s has %zu %s; %s", field, got[b], api_entries(got[b]), want);
    }
    free(got);
    return rc;
}

/* input_ids, and token_type_ids with them: B, L, the rows and the ids. */
static int parse_ids(encode_request *req, const json_t *root, const v1_text *t, v1_rows *rows,
                     const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    const json_t *v = fields_get(root, "input_ids");
    if (encode_ids_allowed(req, "input_ids", err) < 0)
        return -1;
    if (!t->int_found[INT_IDS]) {
        if (json_is_array(v)) /* top_member missed it: cannot happen */
            return api_error_set(err, API_INTERNAL, "encode: input_ids not scanned");
        return BAD("input_ids must be %s, not %s", IDS_FORM, fields_kind(v));
    }
    const jx_array *a = &t->ints[INT_IDS];
    if (a->dims[0] == 0)
        return BAD("input_ids is empty; expected %s", IDS_FORM);
    if (a->rank > 2)
        return BAD("input_ids[0][0] is an array, not an integer (input_ids is %s)", IDS_FORM);
    req->batched = a->rank == 2;
    const size_t B = req->batched ? a->dims[0] : 1, L = req->batched ? a->longest : a->dims[0];
    if (L == 0)
        return BAD("input_ids[0] is empty; a sequence needs at least one token");
    if (encode_check_limits(req, B, L, hp, ctx, err) < 0)
        return -1;
    if (a->fault != JX_OK)
        return ints_fault("input_ids", a, err);
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    const json_t *types = fields_get(root, "token_type_ids");
    if (encode_alloc_ids(req, types != NULL, "input_ids", err) < 0)
        return -1;
    if (!(rows->len = encode_zalloc(B, sizeof *rows->len)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    jx_int_fault bad;
    if (jx_read_i32_rows(a, req->input_ids, L, rows->len, &bad) != 0)
        return int_fault(req, "input_ids", &bad, err);
    for (size_t b = 0; b < B; b++) {
        if (rows->len[b] == 0)
            return BAD("input_ids[%zu] is empty; a sequence needs at least one token", b);
        rows->ragged |= rows->len[b] != L;
    }
    if (types && read_ints(req, INT_TYPES, types, t, rows, req->token_type_ids, err) < 0)
        return -1;
    return 0;
}

/* attention_mask: its rows read as input_ids' (or the embeddings' [B][L]),
 * then what it means (encode_set_attention_mask). */
static int parse_attention_mask(encode_request *req, const json_t *v, const v1_text *t,
                                const v1_rows *rows, bool lengths_given, api_error *err)
{
    const size_t n = (size_t)req->batch.B * (size_t)req->batch.L;
    int32_t *mask = encode_zalloc(n, sizeof *mask);
    if (!mask)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    int rc = read_ints(req, INT_AMASK, v, t, rows, mask, err);
    if (rc == 0)
        rc = encode_set_attention_mask(req, mask, rows->len, "attention_mask",
                                       lengths_given ? "lengths" : NULL, err);
    free(mask);
    return rc;
}

/* ---- parsing: lengths ------------------------------------------------------ */

/* lengths: int[B], each 1..L (with ragged input_ids rows, 1..its row's
 * length). */
static int parse_lengths(encode_request *req, const json_t *v, const v1_rows *rows, api_error *err)
{
    const int B = req->batch.B, L = req->batch.L;
    if (!json_is_array(v))
        return BAD("lengths must be an array of integers (one per sequence), not %s",
                   fields_kind(v));
    if (json_array_size(v) != (size_t)B)
        return BAD("lengths has %zu %s; the batch has %d sequence%s", json_array_size(v),
                   api_entries(json_array_size(v)), B, api_plural((size_t)B));
    if (!(req->lengths = encode_zalloc((size_t)B, sizeof *req->lengths)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (int b = 0; b < B; b++) {
        json_t *e = json_array_get(v, (size_t)b);
        if (!json_is_integer(e))
            return BAD("lengths[%d] is %s; expected an integer 1..%d", b, fields_kind(e), L);
        long long n = json_integer_value(e);
        const int top = rows->len ? (int)rows->len[b] : L;
        if ((n < 1 || n > top) && top < L)
            return BAD("lengths[%d] = %lld is outside 1..%d (input_ids[%d] has %d id%s)", b, n, top,
                       b, top, api_plural((size_t)top));
        if (n < 1 || n > top)
            return BAD("lengths[%d] = %lld is outside 1..%d", b, n, L);
        req->lengths[b] = (int)n;
    }
    req->batch.lengths = req->lengths;
    return 0;
}

/* ---- parsing: position_ids -------------------------------------------------- */

/* position_ids: int[L] (every sequence) or int[B][L] (with ragged
 * input_ids rows, row b as long as input_ids[b]). */
static int parse_positions(encode_request *req, const json_t *v, const v1_rows *ids_rows,
                           const api_ctx *ctx, api_error *err)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    if (!json_is_array(v) || json_array_size(v) == 0)
        return BAD("position_ids must be int[L] or int[B][L] (non-negative integers), not %s",
                   json_is_array(v) ? "an empty array" : fields_kind(v));
    const bool rows = json_is_array(json_array_get(v, 0));
    if (rows && json_array_size(v) != B)
        return BAD("position_ids has %zu row%s; the batch has %zu sequence%s", json_array_size(v),
                   api_plural(json_array_size(v)), B, api_plural(B));
    if (!rows && json_array_size(v) != L)
        return BAD("position_ids has %zu %s; the sequences have %zu positions", json_array_size(v),
                   api_entries(json_array_size(v)), L);
    long long *vals = encode_zalloc(rows ? B * L : L, sizeof *vals);
    if (!vals)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    int rc = 0;
    for (size_t r = 0; rc == 0 && r < (rows ? B : 1); r++) {
        const json_t *row = rows ? json_array_get(v, r) : v;
        const size_t n = rows && ids_rows->len ? ids_rows->len[r] : L;
        if (!json_is_array(row) || json_array_size(row) != n) {
            char as[48] = "";
            if (n < L)
                snprintf(as, sizeof as, ", as input_ids[%zu]", r);
            rc = BAD("position_ids[%zu] is %s; expected %zu integers%s", r,
                     json_is_array(row) ? "of another length" : fields_kind(row), n, as);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(row, i);
            if (!json_is_integer(e)) {
                char at[48];
                if (rows)
                    snprintf(at, sizeof at, "position_ids[%zu][%zu]", r, i);
                else
                    snprintf(at, sizeof at, "position_ids[%zu]", i);
                rc = json_is_real(e) ? BAD("%s = %g is not an integer", at, json_real_value(e))
                                     : BAD("%s is %s; expected an integer", at, fields_kind(e));
                break;
            }
            vals[r * L + i] = json_integer_value(e);
        }
    }
    if (rc == 0)
        rc = encode_set_positions(req, vals, rows, ctx, "position_ids", err);
    free(vals);
    return rc;
}

/* ---- parsing: text ------------------------------------------------------------ */

/* text: tokenized by the served tokenizer (text.h) into input_ids and
 * token_type_ids, each sequence its own length; req->texts keeps the tokens
 * for the response. */
static int parse_text(encode_request *req, const json_t *root, v1_rows *rows, const enc_hparams *hp,
                      const api_ctx *ctx, api_error *err)
{
    text_options o;
    if (encode_ids_allowed(req, "text", err) < 0 ||
        text_read_options(root, ctx, TEXT_OPT_AUTO, &o, err) < 0)
        return -1;
    o.flags |= TEXT_SPECIALS;
    if (fields_get(root, "attention_mask"))
        return BAD("attention_mask is not used with text: each text's tokens are its sequence "
                   "(lengths and mask still apply)");
    if (encode_set_text(req, fields_get(root, "text"), "text", &o, hp, ctx, err) < 0)
        return -1;
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    if (!(rows->len = encode_zalloc(B, sizeof *rows->len)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t b = 0; b < B; b++) {
        rows->len[b] = req->texts->enc[b].n;
        rows->ragged |= rows->len[b] != L;
    }
    return 0;
}

/* ---- parsing: the request ------------------------------------------------ */

static int parse_input_fields(encode_request *req, json_t *root, const v1_text *t, v1_rows *rows,
                              const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    json_t *emb = fields_get(root, "embeddings"), *b64 = fields_get(root, "embeddings_b64"),
           *ids = fields_get(root, "input_ids"), *shape = fields_get(root, "shape"),
           *text = fields_get(root, "text");
    const char *given[4];
    int n = 0;
    if (text)
        given[n++] = "text";
    if (emb)
        given[n++] = "embeddings";
    if (b64)
        given[n++] = "embeddings_b64";
    if (ids)
        given[n++] = "input_ids";
    if (n > 1)
        return BAD("give one of text, input_ids, embeddings or embeddings_b64 (with shape), not "
                   "both %s and %s",
                   given[0], given[1]);
    if (n == 0)
        return BAD("embeddings is required: number[B][L][d_model] or number[L][d_model] (or "
                   "embeddings_b64 with shape, or input_ids or text for a model with an embedding "
                   "module)");
    if (!text && fields_get(root, "truncate"))
        return BAD("truncate is only used with text");
    if (!text && fields_get(root, "truncation_direction"))
        return BAD("truncation_direction is only used with text");
    if (shape && !b64)
        return BAD("shape is only used with embeddings_b64");
    if (!ids && fields_get(root, "token_type_ids"))
        return BAD("token_type_ids is only used with input_ids");
    if (text)
        return parse_text(req, root, rows, hp, ctx, err);
    if (ids)
        return parse_ids(req, root, t, rows, hp, ctx, err);
    if ((emb ? parse_nested(req, emb, t, hp, ctx, err)
             : parse_b64(req, b64, shape, t, hp, ctx, err)) < 0)
        return -1;
    req->batch.x = req->x;
    return 0;
}

static int parse_root(encode_request *req, json_t *root, const v1_text *t, v1_rows *rows,
                      const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    if (!json_is_object(root))
        return BAD("the request body must be a JSON object, not %s", fields_kind(root));
    if (fields_check(&v1_encode_fields, root, "", err) < 0 || parse_options(req, root, err) < 0 ||
        parse_input_fields(req, root, t, rows, hp, ctx, err) < 0)
        return -1;

    json_t *v, *lengths = fields_get(root, "lengths");
    if (lengths && parse_lengths(req, lengths, rows, err) < 0)
        return -1;
    if ((v = fields_get(root, "mask")) && options_parse_mask(req, v, err) < 0)
        return -1;
    if ((v = fields_get(root, "attention_mask")) &&
        parse_attention_mask(req, v, t, rows, lengths != NULL, err) < 0)
        return -1;
    if (!req->lengths && rows->ragged) { /* each ragged row its own length */
        const size_t B = (size_t)req->batch.B;
        if (!(req->lengths = encode_zalloc(B, sizeof *req->lengths)))
            return api_error_set(err, API_UNAVAILABLE, "out of memory");
        for (size_t b = 0; b < B; b++)
            req->lengths[b] = (int)rows->len[b];
        req->batch.lengths = req->lengths;
    }
    if ((v = fields_get(root, "position_ids")) && parse_positions(req, v, rows, ctx, err) < 0)
        return -1;
    if (fields_bool(root, "logits", false) && encode_want_logits(req, ctx, err) < 0)
        return -1;
    for (size_t b = 0; req->explain && b < (size_t)req->batch.B; b++)
        if ((size_t)req->explain_from >= encode_seq_len(req, b))
            return BAD("explain_from = %d is outside sequence %zu's tokens 0..%zu",
                       req->explain_from, b, encode_seq_len(req, b) - 1);
    return encode_check_ids(req, "input_ids", "token_type_ids", err);
}

int v1_request_parse(encode_request *req, const char *body, size_t len, const enc_hparams *hp,
                     const api_ctx *ctx, api_error *err)
{
    if (encode_request_init(req, hp, ctx, err) < 0)
        return -1;

    const char *text = body ? body : "";
    const size_t n = body ? len : 0;
    /* The numeric arrays are read from the text; jansson reads the rest. */
    v1_text t;
    memset(&t, 0, sizeof t);
    jx_object(jt_skip_ws(text, text + n), text + n, top_member, &t);
    const jx_array *scanned[1 + N_INTS] = {t.found ? &t.emb : NULL};
    for (int i = 0; i < N_INTS; i++)
        scanned[1 + i] = t.int_found[i] ? &t.ints[i] : NULL;
    if (t.found) /* "embeddings" is read; a plain "embeddings_b64" is left to jansson */
        t.b64 = NULL;
    const jx_cut b64_cut = {t.b64 ? t.b64 - 1 : NULL, t.b64 ? t.b64_end + 1 : NULL};
    body_json bj;
    if (body_load(text, n, scanned, 1 + N_INTS, &b64_cut, t.b64 ? 1 : 0, false, &bj) < 0)
        return fields_body_error(&bj, false, err);
    json_t *root = bj.root;
    v1_rows rows = {0};
    /* U+0000 in text alone: the tokenizer reads a string by its length */
    int rc = fields_refuse_nul(root, "text", err);
    if (rc == 0)
        rc = parse_root(req, root, &t, &rows, hp, ctx, err);
    free(rows.len);
    json_decref(root);
    if (rc == 0)
        rc = encode_request_plan(req, hp, ctx, err);
    return rc;
}

/* ---- the response ---------------------------------------------------------- */

/* view_of's layer for the head's logits (the outputs: any other layer < 0). */
#define LOGITS (-2)

/* Sequence b of the outputs (layer < 0), of the head's logits (LOGITS: [C],
 * or per token [rows][C]) or of layer's attention: [rows][cols] or, per
 * head, [heads][rows][cols]. */
static stream_view view_of(const encode_request *req, const enc_hparams *hp, int layer, size_t b)
{
    const size_t L = (size_t)req->batch.L, len = encode_seq_len(req, b), D = (size_t)hp->d_model;
    const size_t C = req->head_outputs;
    if (layer == LOGITS && req->head_per_token)
        return (stream_view){req->logits + b * L * C, STREAM_FLOAT32, 2, {len, C}, {C, 1}};
    if (layer == LOGITS)
        return (stream_view){req->logits + b * C, STREAM_FLOAT32, 1, {C}, {1}};
    if (layer < 0)
        return (stream_view){req->out + b * L * D, STREAM_FLOAT32, 2, {len, D}, {D, 1}};
    const size_t heads = (size_t)enc_attn_heads(req->attn_mode, hp->n_heads);
    const float *base = req->attn[layer] + b * heads * L * L;
    if (req->attn_mode != ENC_ATTN_HEADS)
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

/* Sequence b's pairs at a local layer (band >= 0: the batch's pairs at
 * most band apart) and their values picked out of values (nh, the batch's
 * nnz), in arrays the stream owns; false (the stream failed) when out of
 * memory. */
static bool band_csr(stream *st, const encode_request *req, int b, int band, size_t nh,
                     const float *values, const int32_t **indptr, const int32_t **indices,
                     const float **vals, size_t *nnz)
{
    const size_t len = encode_seq_len(req, (size_t)b);
    *nnz = enc_blockmask_band(req->blockmask, b, band, NULL, NULL, 0, NULL, NULL, 0);
    int32_t *ip = malloc((len + 1 + *nnz + nh * *nnz) * 4);
    if (!ip) {
        stream_fail(st);
        return false;
    }
    stream_own(st, ip);
    enc_blockmask_band(req->blockmask, b, band, ip, ip + len + 1, (int)nh, values,
                       (float *)(ip + len + 1 + *nnz), 0);
    *indptr = ip;
    *indices = ip + len + 1;
    *vals = (const float *)(ip + len + 1 + *nnz);
    return true;
}

/* A layer's attention as CSR (docs/api.md): per sequence {"indptr",
 * "indices", "values"} (base64: strings and their shapes); an array of them
 * for batched input.  A local layer lists the pairs its window allows. */
static void write_csr(stream *st, const encode_request *req, const enc_hparams *hp, int layer)
{
    const size_t B = (size_t)req->batch.B;
    const size_t nh = (size_t)enc_attn_heads(req->attn_mode, hp->n_heads);
    const size_t heads = req->attn_mode == ENC_ATTN_HEADS ? nh : 0; /* 0: no heads axis */
    const int band = enc_layer_local(hp, layer) ? hp->local_window : -1;
    const float *layer_values = req->attn[layer];
    if (req->batched)
        stream_text(st, "[", 1);
    for (size_t b = 0; b < B; b++) {
        const size_t len = encode_seq_len(req, b);
        size_t nnz = enc_blockmask_nnz(req->blockmask, (int)b);
        const int32_t *indptr = enc_blockmask_indptr(req->blockmask, (int)b);
        const int32_t *indices = enc_blockmask_indices(req->blockmask, (int)b);
        const float *values = layer_values;
        layer_values += nh * nnz;
        if (band >= 0 &&
            !band_csr(st, req, (int)b, band, nh, values, &indptr, &indices, &values, &nnz))
            return;
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

/* ,"explain": each sequence's rollout from token explain_from, one
 * relevance per token ([..] for the unbatched form, [[..], ..] for a
 * batch), as JSON numbers whatever the encoding. */
static int write_explain(stream *st, const encode_request *req, const enc_hparams *hp)
{
    const size_t L = (size_t)req->batch.L, B = (size_t)req->batch.B;
    double *rel = malloc(L * sizeof *rel);
    if (!rel)
        return -1;
    stream_puts(st, req->batched ? ",\"explain\":[" : ",\"explain\":");
    for (size_t b = 0; b < B; b++) {
        const size_t len = encode_seq_len(req, b);
        if (encode_explain(req, hp, b, rel) < 0) {
            free(rel);
            return -1;
        }
        stream_puts(st, b ? ",[" : "[");
        for (size_t j = 0; j < len; j++)
            stream_printf(st, j ? ",%.*g" : "%.*g", req->precision, rel[j]);
        stream_puts(st, "]");
    }
    if (req->batched)
        stream_puts(st, "]");
    free(rel);
    return 0;
}

/* Text in: "tokens" and "input_ids" of each sequence, at its own length
 * ([..] for one text, [[..], ..] for a list), then a comma. */
static int write_tokens(stream *st, const encode_request *req)
{
    const text_batch *tb = req->texts;
    json_t *tokens = json_array(), *ids = json_array();
    int rc = tokens && ids ? 0 : -1;
    for (size_t b = 0; rc == 0 && b < tb->B; b++) {
        const tok_encoding *e = &tb->enc[b];
        json_t *row = json_array(), *t = text_tokens_json(req->tokenizer, e);
        for (size_t i = 0; row && i < e->n; i++)
            if (json_array_append_new(row, json_integer(e->ids[i])) < 0)
                rc = -1;
        if (!row || !t)
            rc = -1;
        if (tb->batched) {
            json_array_append_new(tokens, t);
            json_array_append_new(ids, row);
        } else {
            json_decref(tokens);
            json_decref(ids);
            tokens = t;
            ids = row;
        }
    }
    char *a = rc == 0 ? json_dumps(tokens, JSON_COMPACT) : NULL;
    char *b = rc == 0 ? json_dumps(ids, JSON_COMPACT) : NULL;
    json_decref(tokens);
    json_decref(ids);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    stream_puts(st, "\"tokens\":");
    stream_text(st, a, strlen(a));
    stream_puts(st, ",\"input_ids\":");
    stream_text(st, b, strlen(b));
    stream_puts(st, ",");
    free(a);
    free(b);
    return 0;
}

int v1_response_stream(const encode_request *req, const char *model_name, const enc_hparams *hp,
                       const encode_usage *usage, stream *st)
{
    if (!req || !hp || !req->out || hp->n_layers != req->n_layers)
        return -1;
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L, D = (size_t)hp->d_model;
    const int last = req->n_layers - 1;
    const bool attn =
        req->attn_mode != ENC_ATTN_NONE && req->attn && req->attn[last] && !req->attn_hidden;

    json_t *name = json_string(model_name ? model_name : "");
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    stream_puts(st, "{\"model\":");
    stream_puts(st, quoted ? quoted : "\"\"");
    free(quoted);
    json_decref(name);

    stream_puts(st, ",\"shape\":[");
    if (req->batched)
        stream_printf(st, "%zu,", B);
    stream_printf(st, "%zu,%zu],", L, D);
    if (req->texts && write_tokens(st, req) < 0)
        return -1;
    stream_puts(st, "\"outputs\":");
    write_tensor(st, req, hp, -1);
    if (req->base64_out) {
        stream_puts(st, ",\"outputs_shape\":");
        write_shape(st, req, hp, -1);
    }
    if (req->logits) {
        stream_puts(st, ",\"logits\":");
        write_tensor(st, req, hp, LOGITS);
        if (req->base64_out) {
            stream_puts(st, ",\"logits_shape\":");
            write_shape(st, req, hp, LOGITS);
        }
    }
    if (req->explain && write_explain(st, req, hp) < 0)
        return -1;
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

char *v1_response(const encode_request *req, const char *model_name, const enc_hparams *hp,
                  const encode_usage *usage, size_t *len)
{
    stream *st = stream_new();
    char *text = NULL;
    if (st && v1_response_stream(req, model_name, hp, usage, st) == 0)
        text = stream_collect(st, len);
    stream_free(st);
    return text;
}

/* ---- the protocol (protocol.h) ---------------------------------------------- */

static encode_request *v1_parse(void *state, const proto_input *in, api_error *err)
{
    encode_request *req = state;
    if (v1_request_parse(req, in->body ? in->body : "", in->len, in->hp, in->ctx, err) < 0)
        return NULL;
    return req;
}

static int v1_render(const void *state, const proto_output *out, stream *st, size_t *header_len)
{
    *header_len = 0;
    return v1_response_stream(state, out->model_name, out->hp, out->usage, st);
}

static void v1_free(void *state)
{
    encode_request_free(state);
}

const protocol v1_protocol = {.name = "v1",
                              .state_size = sizeof(encode_request),
                              .parse = v1_parse,
                              .render = v1_render,
                              .free = v1_free,
                              .error_body = api_error_body};
