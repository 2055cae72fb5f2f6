/* encode.h - the /v1/encode codec (API.md section 4): a JSON request body to
 * a core batch, and a forward's results to the JSON response body.  Knows
 * nothing of HTTP; never prints.
 *
 *     encode_request req;
 *     api_error err = {0};
 *     if (encode_request_parse(&req, body, len, &hp, &limits, &err) < 0 ||
 *         encode_request_alloc_outputs(&req, &hp, &err) < 0)
 *         -> respond api_error_status(err.kind) with err.message
 *     enc_result result = encode_request_result(&req);
 *     enc_forward(model, ws, &req.batch, &result, ...)
 *     char *json = encode_response(&req, "encoder", &hp, &usage, &json_len);
 *     encode_request_free(&req);
 */
#ifndef ATTND_ENCODE_H
#define ATTND_ENCODE_H

#include "protocol/api.h"
#include "encoder.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct encode_usage {
    int sequences;
    long tokens; /* real tokens: sum of lengths */
    double queue_ms;
    double compute_ms;
    uint64_t attention_scores; /* query-key scores the forward computed (enc_result.scores) */
} encode_usage;

typedef struct encode_request {
    /* Where x and the outputs come from and go back to: the limits' pool
     * (borrowed; NULL: malloc). */
    struct bufpool *pool;
    enc_batch batch;      /* x, B, L, lengths and mask point into the arrays below */
    bool batched;         /* input nesting [B][L][D] (true) or [L][D] (false) */
    float *x;             /* owned (B, L, D), from pool */
    int *lengths;         /* owned (B) or NULL */
    int *global;          /* owned or NULL */
    uint8_t *key_padding; /* owned (B, L) or NULL */
    uint8_t *attn_bool;   /* owned (L, L) or (B, L, L), or NULL */
    float *attn_add;      /* owned, or NULL */

    enc_attn_mode attn_mode; /* from "attention": heads (default) | mean | none */
    int n_layers;            /* the model's */
    bool *want_layer;        /* owned (n_layers): which layers' attention to compute; the
                                last is always set unless attention is "none" */
    bool layers_listed;      /* attention_layers was not "last": add "attention_layers" */
    int *layers;             /* owned (n_layers): the listed layers, in request order */
    int n_listed;            /* entries of layers */
    int precision;           /* 1..9, default 9 */
    bool base64_out;         /* "encoding": "base64" */
    bool csr;                /* "attention_format": "csr" (and attention not "none") */
    enc_blockmask *blockmask;/* owned: the batch's, compiled with CSR when csr (batch.blockmask
                                points to it), else NULL (the forward compiles its own) */

    /* Outputs, allocated by encode_request_alloc_outputs in one block from
     * pool: */
    float *out;   /* owned (B, L, D): the block */
    float **attn; /* owned (n_layers) pointers; attn[l], in out's block, set when
                     want_layer[l] */
} encode_request;

/* Parses and validates a /v1/encode body against the model's hyperparameters
 * and the limits.  Checks every field of API.md section 4: nesting, ragged
 * rows, d_model, numbers only, finite base64 floats, lengths in 1..L, mask
 * options (unknown ones refused), attention mode, attention_layers indices,
 * precision, encoding; and batch / sequence / token counts and the attention
 * output size against limits BEFORE allocating anything sized by them
 * (limits NULL: none, sizes are still checked for overflow).
 * Returns 0, or -1 with err set: API_BAD_REQUEST (400) or API_TOO_LARGE (413),
 * the message naming the field and index ("embeddings[1][3] has 511 numbers;
 * d_model is 512"; API_UNAVAILABLE when out of memory).  req is always safe
 * to encode_request_free.  docs/api.md lists the choices the contract leaves
 * open (null = absent, the unbatched form's masks, clamped windows, ...). */
int encode_request_parse(encode_request *req, const char *body, size_t len, const enc_hparams *hp,
                         const api_limits *limits, api_error *err);

/* For other codecs that fill an encode_request themselves (v2.c): */

/* Zeroes req and sets the defaults of an empty request for hp: no mask
 * (windows unbounded), attention "heads", precision 9, want_layer and layers
 * allocated (all false).  Returns 0, or -1 (API_INTERNAL for bad hp,
 * API_UNAVAILABLE when out of memory); req is then safe to free. */
int encode_request_init(encode_request *req, const enc_hparams *hp, api_error *err);

/* The limits check encode_request_parse runs as soon as B and L are known
 * (413 naming the limit; needs req->attn_mode and req->want_layer set). */
int encode_check_limits(const encode_request *req, size_t B, size_t L, const enc_hparams *hp,
                        const api_limits *limits, api_error *err);

/* Parses a /v1 "mask" object (causal, window, global, key_padding, attn)
 * into req->batch.mask; req->batch.B, .L and req->batched must be set.
 * Messages name the option as "mask.<option>". */
struct json_t;
int encode_parse_mask(encode_request *req, struct json_t *mask, api_error *err);

/* Parses one sparse pattern option (option "strided", "fixed" or "blocks":
 * v its object) into req->batch.mask, naming it name in messages
 * ("mask.fixed.summary = 9 must be below mask.fixed.block = 8"). */
int encode_parse_pattern(encode_request *req, const char *option, struct json_t *v,
                         const char *name, api_error *err);

/* Small helpers the codecs share for their messages: */

/* Client text made safe to quote: printable ASCII (other bytes '?'), cut
 * after ENCODE_SAFE_MAX characters with "...".  Returns out. */
#define ENCODE_SAFE_MAX 40
const char *encode_safe_text(const char *s, char out[ENCODE_SAFE_MAX + 4]);
/* "an object", "an array", "a string", "a number", "a boolean", "null". */
const char *encode_json_kind(const struct json_t *v);
/* obj[key], JSON null taken as absent; borrowed. */
struct json_t *encode_json_field(const struct json_t *obj, const char *key);


/* For a CSR request (req->csr): compiles the batch's block mask with its
 * allowed pairs into req->blockmask and holds the attention size, by
 * allowed pairs, to limits.max_attention_bytes (413).  A request without
 * csr is left alone.  Call once the mask is parsed, before
 * encode_request_alloc_outputs.  Returns 0 or -1 with err set (400 for a
 * mask the core refuses, 413 over a limit, 503 out of memory). */
int encode_request_plan(encode_request *req, const enc_hparams *hp, const api_limits *limits,
                        api_error *err);

/* Parses "attention_format" ("dense" | "csr"; NULL = absent) into req->csr,
 * naming the field as name in messages. */
int encode_parse_attention_format(encode_request *req, const struct json_t *v, const char *name,
                                  api_error *err);

/* Floats of one layer's attention weights: (B, heads, L, L), or with csr
 * the sum over b of heads x nnz_b (0 for "none"). */
size_t encode_attention_floats(const encode_request *req, const enc_hparams *hp);

/* The floats a request's input x holds, from req->pool (NULL when out of
 * memory); for codecs that fill x themselves. */
float *encode_alloc_input(encode_request *req, size_t n);

/* Allocates req->out and req->attn[l] for the wanted layers: (B, heads, L,
 * L) each, or with csr the allowed pairs' values, sum over b of heads x
 * nnz_b.  Returns 0 or -1 (out of memory: err API_UNAVAILABLE). */
int encode_request_alloc_outputs(encode_request *req, const enc_hparams *hp, api_error *err);

/* The enc_result that writes into req's outputs. */
enc_result encode_request_result(encode_request *req);

/* The response body for a completed forward (API.md section 4): model, shape,
 * outputs (with the input's nesting; with lengths, sequence b has lengths[b]
 * rows and attention [H][len][len]), attention (always the LAST layer's
 * weights; omitted for "none"), attention_layers (in request order) when
 * listed, usage; numbers with req->precision significant digits ("%.{p}g"),
 * or base64 little-endian float32 with outputs_shape / attention_shape (one
 * string per sequence with lengths).  Returns an owned NUL-terminated string
 * and its length in *len, or NULL when out of memory (or when req has no
 * outputs allocated). */
char *encode_response(const encode_request *req, const char *model_name, const enc_hparams *hp,
                      const encode_usage *usage, size_t *len);

/* The same body as pieces of st (codec/stream.h), to be produced chunk by
 * chunk as the socket drains: the tensors are read from req's buffers, which
 * must live until st is freed.  Returns 0, or -1 (no outputs allocated, or
 * out of memory). */
struct stream;
int encode_response_stream(const encode_request *req, const char *model_name,
                           const enc_hparams *hp, const encode_usage *usage, struct stream *st);

void encode_request_free(encode_request *req);

#endif
