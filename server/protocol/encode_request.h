/* encode_request.h - the neutral request: what a /v1/encode or /v2 infer request
 * asks of the core, whichever codec parsed it (protocol/v1.c,
 * protocol/v2_request.c), and the buffers its results are written into.  Both
 * codecs fill it through encode_request_init, encode_check_limits, the
 * shared options (options.h) and encode_alloc_input; routes.c then runs
 * encode_request_alloc_outputs and the forward, and the codec renders the
 * response from the same struct.  Token ids in (input_ids, token_type_ids,
 * attention_mask) go through encode_alloc_ids, encode_set_attention_mask
 * and encode_check_ids, whichever codec read them. */
#ifndef ATTND_ENCODE_REQUEST_H
#define ATTND_ENCODE_REQUEST_H

#include "protocol/api.h"
#include "encoder.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct encode_usage {
    int sequences;
    long tokens; /* real tokens: sum of lengths */
    double queue_ms;
    double compute_ms;
    uint64_t attention_scores; /* query-key scores the forward computed (enc_result.scores) */
} encode_usage;

typedef struct encode_request {
    /* Where x and the outputs come from and go back to: the context's bufs
     * (borrowed; NULL: malloc). */
    struct bufpool *bufs;
    enc_batch batch;      /* x, B, L, lengths and mask point into the arrays below */
    bool batched;         /* input nesting [B][L][D] (true) or [L][D] (false) */
    float *x;             /* owned (B, L, D), from bufs */
    int *lengths;         /* owned (B) or NULL */
    int *global;          /* owned or NULL */
    uint8_t *key_padding; /* owned (B, L) or NULL */
    uint8_t *attn_bool;   /* owned (L, L) or (B, L, L), or NULL */
    float *attn_add;      /* owned, or NULL */
    int32_t *positions;   /* owned (B, L) position_ids, or NULL (0 .. L - 1) */
    bool has_positions;   /* the model uses positions (RoPE, ALiBi): position_ids allowed */

    /* Token ids in, instead of x: batch.ids points to ids, ids to these. */
    const enc_embedding_info *embedding; /* borrowed: api_ctx.embedding, or NULL */
    int32_t *input_ids;                  /* owned (B, L), or NULL: x is the input */
    int32_t *token_type_ids;             /* owned (B, L), or NULL: every type 0 */
    enc_ids ids;
    /* Text in: its tokens, the ids above made from them (text.h). */
    const struct tok_tokenizer *tokenizer; /* borrowed: api_ctx.tokenizer */
    struct text_batch *texts;              /* owned, or NULL: no text */

    enc_attn_mode attn_mode;  /* from "attention": heads (default) | mean | none */
    int n_layers;             /* the model's */
    bool *want_layer;         /* owned (n_layers): which layers' attention to compute; the
                                 last is always set unless attention is "none" */
    bool layers_listed;       /* attention_layers was not "last": add "attention_layers" */
    int *layers;              /* owned (n_layers): the listed layers, in request order */
    int n_listed;             /* entries of layers */
    int precision;            /* 1..9, default 9 */
    bool base64_out;          /* "encoding": "base64" */
    bool csr;                 /* "attention_format": "csr" (and attention not "none") */
    enc_blockmask *blockmask; /* owned: the batch's, compiled with CSR when csr (batch.blockmask
                                 points to it), else NULL (the forward compiles its own) */

    /* "explain": each sequence's attention rollout from token explain_from
     * (model/rollout.h), computed from every layer's weights; attn_hidden:
     * the weights were computed for it alone ("attention": "none") and are
     * not returned. */
    bool explain;
    int explain_from;
    bool attn_hidden;

    /* The task head's output ("logits"): ENC_HEAD_OUT_NONE, or what the
     * forward writes into logits, head_outputs (C or V) per sequence
     * (head_per_token: per token). */
    enc_head_output head;
    size_t head_outputs;
    bool head_per_token;
    int32_t *head_rows; /* owned: ROWS' tokens, b * L + i ascending (n_head_rows) */
    int n_head_rows;

    /* Outputs, allocated by encode_request_alloc_outputs in one block from
     * bufs: */
    float *out;   /* owned (B, L, D): the block */
    float **attn; /* owned (n_layers) pointers; attn[l], in out's block, set when
                     want_layer[l] */
    float *logits; /* in out's block: (B, C), or (B, L, C) per token, or (n_head_rows, C);
                      NULL without head */
} encode_request;

/* "logits": true (the batch's B and L known): the model's head (ctx's
 * model) computes its raw output into req->logits.  400 naming what the
 * model has when it has no head attnd computes; 413 over
 * limits.max_logits_bytes. */
int encode_want_logits(encode_request *req, const api_ctx *ctx, api_error *err);

/* Text in: v, the request's field named what, tokenized as o says
 * (text_tokenize, text.h; TEXT_SPECIALS) into req->texts, as the batch: B,
 * L the longest, input_ids and token_type_ids (sequence b's length is
 * req->texts->enc[b].n: the caller sets lengths).  Checked against the
 * limits (413) with req's attention as set.  0 or -1 with err set. */
struct text_options;
struct tok_encoding;
/* Sequence b's tokens from e into req's input_ids and token_type_ids (rows
 * of req->batch.L): the tokenizer's type ids where the model has token
 * type embeddings, else 0 (MPNet's: transformers' tokenizer for it returns
 * none, and its pair's second text is type 1 in the file's template). */
void encode_put_tokens(encode_request *req, size_t b, const struct tok_encoding *e);
int encode_set_text(encode_request *req, const json_t *v, const char *what,
                    const struct text_options *o, const enc_hparams *hp, const api_ctx *ctx,
                    api_error *err);
/* After encode_set_text: each sequence's length its text's tokens (the
 * batch ragged as the texts are).  0, or -1 out of memory. */
int encode_text_lengths(encode_request *req, api_error *err);

/* "explain" (with "explain_from", from: an integer checked by the codec,
 * or NULL): the rollout needs every layer's dense weights, computed (and
 * held to limits.max_attention_bytes) even when attention is "none", which
 * then returns none (attn_hidden).  400 for explain_from without explain,
 * or explain with CSR weights. */
int encode_want_explain(encode_request *req, bool explain, const json_t *from, api_error *err);

/* The attention rollout of sequence b (model/rollout.h) from token
 * req->explain_from, over every layer's head-averaged weights: its
 * relevance per real token into rel (encode_seq_len(req, b)).  0, or -1
 * out of memory. */
int encode_explain(const encode_request *req, const enc_hparams *hp, size_t b, double *rel);

/* Zeroes req and sets the defaults of an empty request for hp, its
 * buffers and embedding module those of ctx (NULL: malloc, none): no mask
 * (windows unbounded), attention "heads", precision 9, want_layer and layers
 * allocated (all false).  Returns 0, or -1 (API_INTERNAL for bad hp,
 * API_UNAVAILABLE when out of memory); req is then safe to free. */
int encode_request_init(encode_request *req, const enc_hparams *hp, const api_ctx *ctx,
                        api_error *err);

/* The limits check v1_request_parse runs as soon as B and L are known
 * (413 naming the limit; needs req->attn_mode and req->want_layer set). */
int encode_check_limits(const encode_request *req, size_t B, size_t L, const enc_hparams *hp,
                        const api_ctx *ctx, api_error *err);

/* For a CSR request (req->csr): compiles the batch's block mask with its
 * allowed pairs into req->blockmask and holds the attention size, by
 * allowed pairs, to limits.max_attention_bytes (413).  A request without
 * csr is left alone.  Call once the mask is parsed, before
 * encode_request_alloc_outputs.  Returns 0 or -1 with err set (400 for a
 * mask the core refuses, 413 over a limit, 503 out of memory). */
int encode_request_plan(encode_request *req, const enc_hparams *hp, const api_ctx *ctx,
                        api_error *err);

/* Floats of one layer's attention weights: (B, heads, L, L), or with csr
 * the sum over b of heads x nnz_b (0 for "none"). */
size_t encode_attention_floats(const encode_request *req, const enc_hparams *hp);

/* position_ids (the batch's B and L known): vals holds one row per
 * sequence (rows, B x L values) or L values every sequence shares, each in
 * 0 .. limits.max_seq_len - 1, or with token ids in on a model whose
 * embedding module has a position table, each an index of that table;
 * copied into req->positions for the batch.  what names the field in
 * messages ("position_ids", "inputs[2] (position_ids)").  400 for a model
 * without positions inside attention (and, with ids, without a position
 * table) or a value out of range; 503 out of memory. */
int encode_set_positions(encode_request *req, const long long *vals, bool rows, const api_ctx *ctx,
                         const char *what, api_error *err);

/* 0 when the model takes token ids (req->embedding set), else 400 naming
 * what: a model without an embedding module takes embeddings only. */
int encode_ids_allowed(const encode_request *req, const char *what, api_error *err);

/* Token ids in (the batch's B and L known): allocates req->input_ids (and,
 * with types, req->token_type_ids) of (B, L), every entry the padding id
 * (the model's padding_idx, else 0; type 0), and points batch.ids at them.
 * 400 naming what (the field, as the codec spells it) for a model without
 * an embedding module (req->embedding NULL); 503 out of memory. */
int encode_alloc_ids(encode_request *req, bool types, const char *what, api_error *err);

/* attention_mask (the batch's B and L known): mask (B, L) of 0 and 1 as
 * transformers takes it, row b row_len[b] entries long (row_len NULL: L;
 * entries past it are padding).  A row's last 1 ends its real tokens (its
 * length); a 0 before it hides that key from every query (key padding,
 * added to mask.key_padding's), while its own query row is still computed,
 * as transformers' extended attention mask does.  A value other than 0 and
 * 1, or a row without a 1, is refused naming what[b][j].  When the request
 * gave lengths (lengths_what names them; NULL: it did not) they must agree;
 * otherwise req->lengths is set.  400; 503 out of memory. */
int encode_set_attention_mask(encode_request *req, const int32_t *mask, const size_t *row_len,
                              const char *what, const char *lengths_what, api_error *err);

/* The ids of the real tokens (below lengths[b]: padding is never looked up)
 * against the model's embedding module: input_ids in 0 .. vocab_size - 1,
 * token_type_ids in 0 .. type_vocab_size - 1 (all 0 for a model without
 * token types, as the core takes them).  The core checks them again, with
 * what only it knows (a sequence against the position table); these checks
 * name the field as the codec spells it: ids_what[b][j] / types_what[b][j]
 * ([j] alone for the unbatched form).  400. */
int encode_check_ids(const encode_request *req, const char *ids_what, const char *types_what,
                     api_error *err);

/* The floats a request's input x holds, from req->bufs (NULL when out of
 * memory); for codecs that fill x themselves. */
float *encode_alloc_input(encode_request *req, size_t n);

/* Allocates req->out and req->attn[l] for the wanted layers: (B, heads, L,
 * L) each, or with csr the allowed pairs' values, sum over b of heads x
 * nnz_b.  Returns 0 or -1 (out of memory: err API_UNAVAILABLE). */
int encode_request_alloc_outputs(encode_request *req, const enc_hparams *hp, api_error *err);

/* The last steps of every protocol's parse, before the request takes a
 * place in the compute queue: with token ids in, the core's own checks of
 * the batch against ctx->model (a sequence against the position table,
 * RoBERTa's offset: the forward would refuse the same batch with the same
 * words), then the outputs allocated (encode_request_alloc_outputs).
 * Returns 0 or -1 with err set (the core's status as its error kind; 503
 * out of memory). */
int encode_request_ready(encode_request *req, const api_ctx *ctx, api_error *err);

/* The enc_result that writes into req's outputs. */
enc_result encode_request_result(encode_request *req);

void encode_request_free(encode_request *req);

/* calloc that never returns NULL for a zero count (the request's small
 * arrays). */
static inline void *encode_zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size ? size : 1);
}

/* "[b][j]" (batched) or "[j]" (the unbatched form), for messages. */
const char *encode_index_text(const encode_request *req, size_t b, size_t j, char buf[48]);

/* Sequence b's real tokens. */
static inline size_t encode_seq_len(const encode_request *req, size_t b)
{
    return req->lengths ? (size_t)req->lengths[b] : (size_t)req->batch.L;
}

#endif
