/* encode_request.c - the neutral request both protocols parse into
 * (encode_request.h): its defaults, the limits it is held to as soon as B and L are known, the
 * plan of a CSR request, and the buffers of its input and results (from the
 * context's buffer pool, bufs, kept across requests).
 *
 * Limits are checked as soon as B and L are known, before anything sized
 * by them is allocated: B > max_batch, L > max_seq_len, B*L >
 * max_batch_tokens, then the attention output B * (H or 1) * L * L * 4
 * bytes * (distinct layers computed) > max_attention_bytes (L is the padded
 * length; lengths do not reduce it).  All 413, naming the limit.  A NULL
 * limits means none (sizes are still checked for overflow).
 *
 * Token ids (input_ids, token_type_ids) and attention_mask arrive here as
 * int32 (B, L) arrays whichever codec read them: their buffers, the mask's
 * meaning (transformers': a row's last 1 ends it, a 0 before hides a key)
 * and the ids' bounds (the model's embedding module) are this file's. */
#include "protocol/encode_request.h"
#include "protocol/text.h"
#include "model/rollout.h"

#include "runtime/bufpool.h"

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

/* *out = a * b; returns true on overflow. */
static bool mul_over(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return true;
    *out = a * b;
    return false;
}

/* ---- limits ---------------------------------------------------------------- */

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
int encode_check_limits(const encode_request *req, size_t B, size_t L, const enc_hparams *hp,
                        const api_ctx *ctx, api_error *err)
{
    if (ctx && B > (size_t)(ctx->max_batch > 0 ? ctx->max_batch : 0))
        return TOO_LARGE("batch of %zu sequences is over limits.max_batch (%d)", B, ctx->max_batch);
    if (ctx && L > (size_t)(ctx->max_seq_len > 0 ? ctx->max_seq_len : 0))
        return TOO_LARGE("sequence length %zu is over limits.max_seq_len (%d)", L,
                         ctx->max_seq_len);
    size_t BL = 0, x_bytes;
    if (B > INT_MAX || L > INT_MAX || mul_over(B, L, &BL) ||
        mul_over(BL, (size_t)hp->d_model * sizeof(float), &x_bytes))
        return TOO_LARGE("batch of %zu sequences of %zu positions is too large", B, L);
    if (ctx && BL > (size_t)(ctx->max_batch_tokens > 0 ? ctx->max_batch_tokens : 0))
        return TOO_LARGE("batch of %zu sequences x %zu positions = %zu tokens is over "
                         "limits.max_batch_tokens (%ld)",
                         B, L, BL, ctx->max_batch_tokens);
    if (req->attn_mode == ENC_ATTN_NONE || req->csr)
        return 0; /* CSR: held to the limit by allowed pairs (encode_request_plan) */

    const size_t heads = (size_t)enc_attn_heads(req->attn_mode, hp->n_heads);
    const size_t layers = layers_wanted(req);
    size_t bytes = 0;
    bool over = mul_over(B, heads, &bytes) || mul_over(bytes, L, &bytes) ||
                mul_over(bytes, L, &bytes) || mul_over(bytes, sizeof(float), &bytes) ||
                mul_over(bytes, layers, &bytes);
    if (over || (ctx && bytes > ctx->max_attention_bytes)) {
        char amount[48];
        return TOO_LARGE("attention output of %s bytes (%zu sequences x %zu head%s x %zu x %zu "
                         "float32 x %zu layer%s) is over limits.max_attention_bytes (%zu); ask "
                         "for %s, or fewer attention_layers",
                         bytes_text(over, bytes, amount), B, heads, heads == 1 ? "" : "s", L, L,
                         layers, layers == 1 ? "" : "s", ctx ? ctx->max_attention_bytes : SIZE_MAX,
                         req->attn_mode == ENC_ATTN_HEADS ? "\"attention\": \"mean\" or \"none\""
                                                          : "\"attention\": \"none\"");
    }
    return 0;
}

/* ---- the request's life ---------------------------------------------------- */

int encode_request_init(encode_request *req, const enc_hparams *hp, const api_ctx *ctx,
                        api_error *err)
{
    memset(req, 0, sizeof *req);
    req->bufs = ctx ? ctx->bufs : NULL;
    req->embedding = ctx ? ctx->embedding : NULL;
    req->batch.mask.window_left = ENC_WINDOW_NONE;
    req->batch.mask.window_right = ENC_WINDOW_NONE;
    req->batch.mask.causal = hp && hp->causal; /* a decoder's attention (mask.causal) */
    req->attn_mode = ENC_ATTN_HEADS;
    req->precision = 9;
    if (!hp || hp->d_model < 1 || hp->n_heads < 1 || hp->n_layers < 1 ||
        hp->n_layers > ENC_MAX_LAYERS)
        return api_error_set(err, API_INTERNAL, "encode: invalid model hyperparameters");
    req->n_layers = hp->n_layers;
    req->has_positions = hp->position != ENC_POS_NONE;
    req->want_layer = encode_zalloc((size_t)hp->n_layers, sizeof *req->want_layer);
    req->layers = encode_zalloc((size_t)hp->n_layers, sizeof *req->layers);
    if (!req->want_layer || !req->layers)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    return 0;
}

int encode_request_plan(encode_request *req, const enc_hparams *hp, const api_ctx *ctx,
                        api_error *err)
{
    if (req->attn_mode == ENC_ATTN_NONE)
        req->csr = false; /* no weights to return */
    if (!req->csr)
        return 0;
    enc_error e = {0};
    if (!(req->blockmask = enc_blockmask_new(&req->batch, true, &e)))
        return api_error_set(err, api_error_of_core(e.status), "%s", e.message);
    req->batch.blockmask = req->blockmask;
    /* the weights of the allowed pairs: heads x nnz float32 per layer (the
     * limit counts weights, dense or CSR; not the index arrays) */
    const size_t heads = (size_t)enc_attn_heads(req->attn_mode, hp->n_heads);
    const size_t layers = layers_wanted(req);
    size_t nnz = 0, bytes = 0;
    for (int b = 0; b < req->batch.B; b++)
        nnz += enc_blockmask_nnz(req->blockmask, b); /* each at most INT32_MAX */
    const bool over = mul_over(nnz, heads, &bytes) || mul_over(bytes, sizeof(float), &bytes) ||
                      mul_over(bytes, layers, &bytes);
    if (over || (ctx && bytes > ctx->max_attention_bytes)) {
        char amount[48];
        return TOO_LARGE("attention output of %s bytes (csr: %zu allowed pairs x %zu head%s x "
                         "float32 x %zu layer%s) is over limits.max_attention_bytes (%zu); ask "
                         "for %s, a sparser mask, or fewer attention_layers",
                         bytes_text(over, bytes, amount), nnz, heads, heads == 1 ? "" : "s", layers,
                         layers == 1 ? "" : "s", ctx ? ctx->max_attention_bytes : SIZE_MAX,
                         req->attn_mode == ENC_ATTN_HEADS ? "\"attention\": \"mean\" or \"none\""
                                                          : "\"attention\": \"none\"");
    }
    return 0;
}

size_t encode_attention_floats(const encode_request *req, const enc_hparams *hp)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const size_t heads = (size_t)enc_attn_heads(req->attn_mode, hp->n_heads);
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
    return n > SIZE_MAX / sizeof(float) ? NULL : bufpool_take(req->bufs, n * sizeof(float));
}

/* Floats rounded up to a cache line's worth, so each array of the outputs'
 * block starts 64-byte aligned. */
static size_t line_floats(size_t n)
{
    return (n + 15) / 16 * 16;
}

int encode_request_alloc_outputs(encode_request *req, const enc_hparams *hp, api_error *err)
{
    if ((!req->x && !req->input_ids) || !hp || hp->n_layers != req->n_layers)
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
     * from bufs: the forward writes into memory the last request left
     * mapped.  Not zeroed: the forward writes every entry, padding included
     * (valgrind's memcheck would report an entry left unwritten when the
     * response reads it).  The sizes were held to the limits already. */
    const size_t head_rows = req->head == ENC_HEAD_OUT_ROWS ? (size_t)req->n_head_rows
                             : req->head_per_token          ? B * L
                                                            : B;
    const size_t n_logits = line_floats(req->head ? head_rows * req->head_outputs : 0);
    req->attn = encode_zalloc((size_t)req->n_layers, sizeof *req->attn);
    req->out = bufpool_take(req->bufs, (n_out + n_logits + layers * per_layer) * sizeof(float));
    if (!req->out || !req->attn)
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the outputs");
    req->logits = req->head ? req->out + n_out : NULL;
    float *next = req->out + n_out + n_logits;
    for (int l = 0; l < req->n_layers && req->attn_mode != ENC_ATTN_NONE; l++)
        if (req->want_layer[l]) {
            req->attn[l] = next;
            next += per_layer;
        }
    return 0;
}

int encode_request_ready(encode_request *req, const api_ctx *ctx, api_error *err)
{
    enc_error ee = {0};
    int rc;
    if (req->batch.ids && (rc = enc_batch_validate(ctx->model, &req->batch, &ee)) < 0)
        return api_error_set(err, api_error_of_core(rc), "%s", ee.message);
    return encode_request_alloc_outputs(req, enc_model_hparams(ctx->model), err);
}

enc_result encode_request_result(encode_request *req)
{
    enc_result r = {.out = req->out,
                    .attn_mode = req->attn ? req->attn_mode : ENC_ATTN_NONE,
                    .attn_format = req->csr ? ENC_FORMAT_CSR : ENC_FORMAT_DENSE,
                    .attn = req->attn_mode != ENC_ATTN_NONE ? req->attn : NULL,
                    .head = req->logits ? req->head : ENC_HEAD_OUT_NONE,
                    .logits = req->logits,
                    .head_rows = req->head_rows,
                    .n_head_rows = req->n_head_rows};
    return r;
}

int encode_want_logits(encode_request *req, const api_ctx *ctx, api_error *err)
{
    const enc_model *m = ctx ? ctx->model : NULL;
    const enc_head_info *h = enc_model_head(m);
    if (!h) {
        const char *unsupported = enc_model_head_unsupported(m);
        const char *klass = m ? enc_model_class(m) : "";
        const char *note = enc_model_head_note(m);
        if (unsupported)
            return api_error_set(err, API_BAD_REQUEST,
                                 "logits: this model's head (%s) is not %s%s; it serves the "
                                 "encoder's outputs alone",
                                 unsupported, note[0] ? "computed: " : "one attnd computes", note);
        return api_error_set(err, API_BAD_REQUEST,
                             "logits: this model has no task head (%s); it serves the encoder's "
                             "outputs alone",
                             klass[0] ? klass : "no config.json architectures");
    }
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const bool per_token = h->kind != ENC_HEAD_SEQUENCE;
    const size_t C = (size_t)h->n_outputs, rows = B * (per_token ? L : 1);
    const size_t lim = ctx->max_logits_bytes;
    if (rows > SIZE_MAX / 4 / C || rows * C * 4 > lim)
        return api_error_set(err, API_TOO_LARGE,
                             "logits: %zu x %zu float32 (%s) is over limits.max_logits_bytes "
                             "(%zu)",
                             rows, C, per_token ? "[B][L][outputs]" : "[B][outputs]", lim);
    req->head = ENC_HEAD_OUT_LOGITS;
    req->head_outputs = C;
    req->head_per_token = per_token;
    return 0;
}

/* Rows of the embedding module's position table that position_ids index
 * with token ids in, or 0 when its positions are not a table (RoPE). */
static long long position_table_rows(const encode_request *req)
{
    const enc_embedding_info *e = req->embedding;
    if (!req->input_ids || !e || e->max_positions <= 0 || !e->position ||
        strcmp(e->position, "rope") == 0)
        return 0;
    return e->max_positions;
}

int encode_set_positions(encode_request *req, const long long *vals, bool rows, const api_ctx *ctx,
                         const char *what, api_error *err)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const long long table = position_table_rows(req);
    const long long top = table > 0                     ? table
                          : ctx && ctx->max_seq_len > 0 ? (long long)ctx->max_seq_len
                                                        : (long long)L;
    const char *bound = table > 0 ? "the model's position table" : "below limits.max_seq_len";
    if (!req->has_positions && table == 0)
        return api_error_set(err, API_BAD_REQUEST,
                             "%s: this model has no positions inside attention (model.position "
                             "is none): its input embeddings carry them%s",
                             what,
                             req->embedding && !req->input_ids
                                 ? " (with input_ids, position_ids index the model's position "
                                   "table)"
                                 : "");
    const size_t n = rows ? B * L : L;
    for (size_t k = 0; k < n; k++)
        if (vals[k] < 0 || vals[k] >= top) {
            if (!rows)
                return api_error_set(err, API_BAD_REQUEST, "%s[%zu] = %lld is outside 0..%lld (%s)",
                                     what, k, vals[k], top - 1, bound);
            return api_error_set(err, API_BAD_REQUEST,
                                 "%s[%zu][%zu] = %lld is outside 0..%lld (%s)", what, k / L, k % L,
                                 vals[k], top - 1, bound);
        }
    if (!(req->positions = malloc(B * L * sizeof *req->positions)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t k = 0; k < B * L; k++)
        req->positions[k] = (int32_t)vals[rows ? k : k % L];
    req->batch.positions = req->positions;
    return 0;
}

/* ---- token ids and attention_mask ------------------------------------------- */

const char *encode_index_text(const encode_request *req, size_t b, size_t j, char buf[48])
{
    if (req->batched)
        snprintf(buf, 48, "[%zu][%zu]", b, j);
    else
        snprintf(buf, 48, "[%zu]", j);
    return buf;
}

int encode_ids_allowed(const encode_request *req, const char *what, api_error *err)
{
    if (req->embedding)
        return 0;
    return api_error_set(err, API_BAD_REQUEST,
                         "%s: this model takes embeddings, not input_ids: it has no embedding "
                         "module (serve a model.dir: a Hugging Face directory brings one)",
                         what);
}

int encode_alloc_ids(encode_request *req, bool types, const char *what, api_error *err)
{
    const enc_embedding_info *e = req->embedding;
    if (encode_ids_allowed(req, what, err) < 0)
        return -1;
    const size_t n = (size_t)req->batch.B * (size_t)req->batch.L;
    const int32_t pad = e->padding_idx >= 0 && e->padding_idx < e->vocab_size ? e->padding_idx : 0;
    if (!(req->input_ids = malloc((n ? n : 1) * sizeof *req->input_ids)) ||
        (types && !(req->token_type_ids = encode_zalloc(n, sizeof *req->token_type_ids))))
        return api_error_set(err, API_UNAVAILABLE, "out of memory for the token ids");
    for (size_t k = 0; k < n; k++)
        req->input_ids[k] = pad;
    req->ids = (enc_ids){.input_ids = req->input_ids, .token_type_ids = req->token_type_ids};
    req->batch.ids = &req->ids;
    req->batch.x = NULL;
    return 0;
}

int encode_set_attention_mask(encode_request *req, const int32_t *mask, const size_t *row_len,
                              const char *what, const char *lengths_what, api_error *err)
{
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    char at[48];
    int *len = encode_zalloc(B, sizeof *len);
    if (!len)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    /* Each row's values, and its last 1. */
    for (size_t b = 0; b < B; b++) {
        const size_t n = row_len ? row_len[b] : L;
        for (size_t j = 0; j < n; j++) {
            const int32_t v = mask[b * L + j];
            if (v != 0 && v != 1) {
                free(len);
                return api_error_set(err, API_BAD_REQUEST, "%s%s = %d is not 0 or 1", what,
                                     encode_index_text(req, b, j, at), (int)v);
            }
            if (v)
                len[b] = (int)j + 1;
        }
        if (len[b] == 0) {
            free(len);
            if (!req->batched)
                return api_error_set(err, API_BAD_REQUEST,
                                     "%s has no 1: a sequence needs at least one real token", what);
            return api_error_set(err, API_BAD_REQUEST,
                                 "%s[%zu] has no 1: a sequence needs at least one real token", what,
                                 b);
        }
        if (lengths_what && req->lengths && req->lengths[b] != len[b]) {
            const int given = req->lengths[b], ends = len[b];
            free(len);
            if (req->batched)
                snprintf(at, sizeof at, "[%zu]", b);
            else
                at[0] = '\0';
            return api_error_set(err, API_BAD_REQUEST,
                                 "%s[%zu] = %d but %s%s gives %d real token%s (its last 1 is at "
                                 "index %d): send one of them, or make them agree",
                                 lengths_what, b, given, what, at, ends, api_plural((size_t)ends),
                                 ends - 1);
        }
    }
    /* A 0 before a row's last 1 hides that key. */
    for (size_t b = 0; b < B; b++)
        for (size_t j = 0; j < (size_t)len[b]; j++)
            if (!mask[b * L + j]) {
                if (!req->key_padding && !(req->key_padding = encode_zalloc(B * L, 1))) {
                    free(len);
                    return api_error_set(err, API_UNAVAILABLE, "out of memory");
                }
                req->key_padding[b * L + j] = 1;
            }
    req->batch.mask.key_padding = req->key_padding;
    if (req->lengths && lengths_what) {
        free(len);
    } else {
        free(req->lengths);
        req->lengths = len;
    }
    req->batch.lengths = req->lengths;
    return 0;
}

int encode_check_ids(const encode_request *req, const char *ids_what, const char *types_what,
                     api_error *err)
{
    const enc_embedding_info *e = req->embedding;
    if (!req->input_ids || !e)
        return 0;
    const size_t B = (size_t)req->batch.B, L = (size_t)req->batch.L;
    const int types = e->type_vocab_size > 0 ? e->type_vocab_size : 1; /* none: all 0 */
    char at[48];
    for (size_t b = 0; b < B; b++) {
        const size_t n = encode_seq_len(req, b);
        const int32_t *ids = req->input_ids + b * L;
        for (size_t j = 0; j < n; j++)
            if (ids[j] < 0 || ids[j] >= e->vocab_size)
                return api_error_set(err, API_BAD_REQUEST,
                                     "%s%s = %d is outside 0..%d (the model's vocab_size is %d)",
                                     ids_what, encode_index_text(req, b, j, at), (int)ids[j],
                                     e->vocab_size - 1, e->vocab_size);
        const int32_t *tt = req->token_type_ids ? req->token_type_ids + b * L : NULL;
        for (size_t j = 0; tt && j < n; j++)
            if (tt[j] < 0 || tt[j] >= types)
                return api_error_set(
                    err, API_BAD_REQUEST, "%s%s = %d is outside 0..%d (%s%d)", types_what,
                    encode_index_text(req, b, j, at), (int)tt[j], types - 1,
                    e->type_vocab_size > 0 ? "the model's type_vocab_size is "
                                           : "the model has no token type embeddings: "
                                             "type_vocab_size ",
                    e->type_vocab_size);
    }
    return 0;
}

int encode_set_text(encode_request *req, const json_t *v, const char *what, const text_options *o,
                    const enc_hparams *hp, const api_ctx *ctx, api_error *err)
{
    if (encode_ids_allowed(req, what, err) < 0)
        return -1;
    if (!(req->texts = calloc(1, sizeof *req->texts)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    text_batch *tb = req->texts;
    if (text_tokenize(v, what, ctx, o, tb, err) < 0)
        return -1;
    req->tokenizer = ctx->tokenizer;
    req->batched = tb->batched;
    const size_t B = tb->B, L = tb->longest;
    if (encode_check_limits(req, B, L, hp, ctx, err) < 0)
        return -1;
    req->batch.B = (int)B;
    req->batch.L = (int)L;
    if (encode_alloc_ids(req, true, what, err) < 0)
        return -1;
    for (size_t b = 0; b < B; b++)
        encode_put_tokens(req, b, &tb->enc[b]);
    return 0;
}

void encode_put_tokens(encode_request *req, size_t b, const tok_encoding *e)
{
    const size_t L = (size_t)req->batch.L;
    const bool types = req->embedding && req->embedding->type_vocab_size > 0;
    for (size_t i = 0; i < e->n; i++) {
        req->input_ids[b * L + i] = e->ids[i];
        req->token_type_ids[b * L + i] = types ? e->type_ids[i] : 0;
    }
}

int encode_text_lengths(encode_request *req, api_error *err)
{
    if (!(req->lengths = encode_zalloc((size_t)req->batch.B, sizeof *req->lengths)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    req->batch.lengths = req->lengths;
    for (int b = 0; b < req->batch.B; b++)
        req->lengths[b] = (int)req->texts->enc[b].n;
    return 0;
}

int encode_want_explain(encode_request *req, bool explain, const json_t *from, api_error *err)
{
    req->explain = explain;
    if (!explain)
        return from ? api_error_set(err, API_BAD_REQUEST,
                                    "explain_from is given without \"explain\": true")
                    : 0;
    if (req->csr)
        return api_error_set(err, API_BAD_REQUEST,
                             "explain needs dense attention weights; attention_format \"csr\" is "
                             "not taken with it");
    if (req->attn_mode == ENC_ATTN_NONE) {
        req->attn_mode = ENC_ATTN_MEAN;
        req->attn_hidden = true;
    }
    for (int l = 0; l < req->n_layers; l++)
        req->want_layer[l] = true;
    req->explain_from = from ? (int)json_integer_value(from) : 0;
    return 0;
}

int encode_explain(const encode_request *req, const enc_hparams *hp, size_t b, double *rel)
{
    const size_t L = (size_t)req->batch.L;
    const int heads = enc_attn_heads(req->attn_mode, hp->n_heads);
    const int len = (int)encode_seq_len(req, b);
    double *buf = malloc(2 * L * sizeof *buf);
    const float **layers = malloc((size_t)req->n_layers * sizeof *layers);
    if (!buf || !layers) {
        free(buf);
        free(layers);
        return -1;
    }
    for (int l = 0; l < req->n_layers; l++)
        layers[l] = req->attn[l] + b * (size_t)heads * L * L;
    enc_rollout(layers, req->n_layers, heads, L * L, len, (int)L, req->explain_from, buf, rel);
    free(buf);
    free(layers);
    return 0;
}

void encode_request_free(encode_request *req)
{
    if (!req)
        return;
    bufpool_give(req->bufs, req->x);
    free(req->lengths);
    free(req->global);
    free(req->key_padding);
    free(req->attn_bool);
    free(req->attn_add);
    free(req->positions);
    free(req->input_ids);
    free(req->token_type_ids);
    free(req->head_rows);
    text_batch_free(req->texts);
    free(req->texts);
    enc_blockmask_free(req->blockmask);
    free(req->want_layer);
    free(req->layers);
    bufpool_give(req->bufs, req->out);
    free(req->attn);
    memset(req, 0, sizeof *req);
}
