/* api.h - what the HTTP layer and the request codecs share: the contract's
 * error kinds (docs/contract.md section 7, "Errors and limits") and the
 * request context (api_ctx). */
#ifndef ATTND_API_H
#define ATTND_API_H

#include <stdbool.h>
#include <stddef.h>

/* X(name, http status, "type" string of the JSON error body) */
#define API_ERROR_MAP(X)                                                                           \
    X(BAD_REQUEST, 400, "invalid_request")                                                         \
    X(UNAUTHORIZED, 401, "unauthorized")                                                           \
    X(NOT_FOUND, 404, "not_found")                                                                 \
    X(METHOD_NOT_ALLOWED, 405, "method_not_allowed")                                               \
    X(TOO_LARGE, 413, "too_large")                                                                 \
    X(URI_TOO_LONG, 414, "uri_too_long")                                                           \
    X(UNSUPPORTED_MEDIA, 415, "unsupported_media_type")                                            \
    X(QUEUE_FULL, 429, "queue_full")                                                               \
    X(INTERNAL, 500, "internal")                                                                   \
    X(NOT_IMPLEMENTED, 501, "not_implemented")                                                     \
    X(UNAVAILABLE, 503, "unavailable")

typedef enum api_error_kind {
    API_OK = 0,
#define API_ERROR_ENUM(name, status, type) API_##name,
    API_ERROR_MAP(API_ERROR_ENUM)
#undef API_ERROR_ENUM
} api_error_kind;

typedef struct api_error {
    api_error_kind kind; /* API_OK until set */
    char message[512];   /* names the field and index */
} api_error;

/* Sets err (first error wins) and returns -1. */
int api_error_set(api_error *err, api_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int api_error_status(api_error_kind kind);       /* 400, 401, ... */
const char *api_error_type(api_error_kind kind); /* "invalid_request", ... */

/* The one mapping of a core status (core/base/error.h) met while serving a
 * request to the contract's kind: the request's input refused (EINVAL,
 * ENUMERIC, EFORMAT) 400, over a limit (ELIMIT) 413, out of memory 503,
 * anything else 500. */
api_error_kind api_error_of_core(int status);

/* The contract's error body, {"error": {"type": ..., "message": ...}}, as
 * owned JSON text, or NULL when out of memory. */
char *api_error_body(api_error_kind kind, const char *message);

/* api_ctx: the request context, what every request is read against
 * besides its own text: the server's limits and settings, the buffer pool
 * its large buffers come from, and the served model's parts (embedding
 * module, tokenizer, head, sentence-transformers settings).  One per
 * request, filled by the HTTP layer (http/routes.c); limits are only part
 * of it, hence not "limits". */
struct bufpool;
struct enc_embedding_info;
struct enc_st_text;
struct enc_model;
typedef struct api_ctx {
    int max_batch;
    int max_seq_len;
    long max_batch_tokens;      /* B * L */
    size_t max_attention_bytes; /* float32 bytes of the attention output */
    size_t max_logits_bytes;    /* float32 bytes of a head's logits */
    struct bufpool *bufs;       /* the input and outputs' buffers (bufpool.h); NULL: malloc */
    /* borrowed: enc_model_embedding of the model (vocab_size, type_vocab_size,
     * the position table), or NULL: a model that takes embeddings only, and
     * input_ids are refused */
    const struct enc_embedding_info *embedding;
    /* borrowed: the tokenizer of text input (tokenizer.h), or NULL: text is
     * refused */
    const struct tok_tokenizer *tokenizer;
    /* borrowed: the model, for its task head (enc_model_head: "logits"), or
     * NULL: "logits" is refused */
    const struct enc_model *model;
    /* borrowed: model.dir's sentence-transformers text settings
     * (load/sentence.h: max_seq_length, prompts), or NULL: none */
    const struct enc_st_text *sentence;
    bool auto_truncate; /* server.auto_truncate: "truncate" where a request does not say */
    /* borrowed: model.rerank_template as start-up resolved it: every
     * [query, document] pair made one text, {query} and {document} in it
     * replaced (text.c); NULL: the tokenizer's pair template */
    const char *pair_template;
} api_ctx;

/* Wording the codecs share for their messages: */

/* Client text made safe to quote: printable ASCII (other bytes '?'), cut
 * after max (API_SAFE_MAX) characters with "...".  out has room for max + 4.
 * Returns out. */
#define API_SAFE_MAX 40
const char *api_safe_text_n(const char *s, char *out, size_t max);
const char *api_safe_text(const char *s, char out[API_SAFE_MAX + 4]);
/* "s" unless n is 1 ("row%s"); "entry" or "entries". */
static inline const char *api_plural(size_t n)
{
    return n == 1 ? "" : "s";
}
static inline const char *api_entries(size_t n)
{
    return n == 1 ? "entry" : "entries";
}

#endif
