/* protocol.h - an API protocol as the HTTP layer sees it: /v1/encode
 * (v1.c), /v1/predict (predict.c), OpenAI's /v1/embeddings and /v1/models
 * (openai.c) and the Open Inference Protocol under /v2 (v2.c).  The HTTP
 * layer knows the protocols only through this table: a row of its route table (http/routes.c) names
 * the protocol of its path, a request carries that protocol's state opaquely (state_size bytes,
 * zeroed), and the protocol turns the body into the neutral request (encode_request.h) the compute
 * pool runs, the forward's results into its response, and an error into its error body.  Adding a
 * protocol is its file here and its rows in the route table.
 *
 *     const protocol *p = row->proto;
 *     void *state = calloc(1, p->state_size);
 *     encode_request *e = p->parse(state, &in, &err);   // NULL: answer err
 *     ... the pool runs e->batch into encode_request_result(e) ...
 *     p->render(state, &out, stream, &header_len);
 *     p->free(state); free(state); */
#ifndef ATTND_PROTOCOL_H
#define ATTND_PROTOCOL_H

#include "codec/stream.h"
#include "protocol/api.h"
#include "protocol/encode_request.h"

#include <stdbool.h>
#include <stddef.h>

struct enc_embedder;

/* What a protocol's parse is given: the body, the request's headers, the
 * served model and the request context (api.h: limits, buffers, model
 * parts). */
typedef struct proto_input {
    const char *body; /* len bytes, NUL-terminated, or NULL when empty */
    size_t len;
    /* a request header's value, or NULL */
    const char *(*header)(void *cls, const char *name);
    void *cls;
    const char *model_name;
    const enc_hparams *hp;
    const api_ctx *ctx;
    int route;                            /* the route table's proto_route of the path */
    const struct enc_embedder *pooling;   /* how the served model pools (model/pooling.h) */
} proto_input;

/* What a protocol's render is given besides its state. */
typedef struct proto_output {
    const char *model_name;
    const enc_hparams *hp;
    const encode_usage *usage;            /* the forward's counts and times */
    const struct enc_embedder *pooling;   /* how the served model pools (model/pooling.h) */
    double parse_ms;                      /* parse's time (the body read, text tokenized) */
    double total_ms;                      /* since the request's headers came in */
} proto_output;

/* A response header a protocol adds to a forward's answer (headers). */
#define PROTO_HEADERS_MAX 8
typedef struct proto_header {
    const char *name; /* static */
    char value[32];
} proto_header;

/* What a protocol's own GET routes may say of the server. */
struct enc_embedding_info;
typedef struct proto_server {
    bool loaded;  /* the model is loaded (hp etc. below are set) */
    bool serving; /* loaded, and neither draining nor shutting down */
    const char *version;
    const char *model_name;
    const enc_hparams *hp;
    const struct enc_embedding_info *emb; /* the embedding module, or NULL */
    bool text;                            /* the model takes text */
    const api_ctx *ctx;                   /* the limits, model and tokenizer (loaded) */
    const struct enc_embedder *pooling;   /* how the served model pools */
    const char *dtype;                    /* the Linears' dtype: "float32", "bfloat16", "int8" */
    long long started;                    /* unix seconds the server started */
} proto_server;

/* get's answer beside 200: not ready (the HTTP layer answers 503 with the
 * server's state and Retry-After). */
#define PROTO_NOT_READY 503

typedef struct protocol {
    const char *name;
    /* Which of the protocol's routes a decoded path is: > 0 its id (the
     * route table's proto_route), -1 a path of the protocol's with no route
     * (answered in its error form), 0 not the protocol's; NULL: the route
     * table's paths are matched exactly. */
    int (*match)(const char *path);
    /* For a route that names the model in its path: 0 when path names
     * model_name, else -1 with err (404). */
    int (*check_model)(const char *path, const char *model_name, api_error *err);
    /* A forward's request and response; NULL for a protocol without one.
     * parse's request, owned by state, is then made ready for the queue
     * (encode_request_ready: the ids checked, the outputs allocated). */
    size_t state_size;
    encode_request *(*parse)(void *state, const proto_input *in, api_error *err);
    int (*render)(const void *state, const proto_output *out, stream *st, size_t *header_len);
    void (*free)(void *state);
    /* A GET route of its own (match's id): 200 with *body (owned JSON
     * text; NULL: an empty body), PROTO_NOT_READY, or -1 out of memory.
     * NULL for a protocol without GET routes of its own. */
    int (*get)(int route_id, const proto_server *sv, char **body);
    /* The error body (owned JSON text), or NULL when out of memory. */
    char *(*error_body)(api_error_kind kind, const char *message);
    /* The error's HTTP status; NULL: the contract's (api_error_status). */
    int (*error_status)(api_error_kind kind, const char *message);
    /* A forward's answer's headers beyond attnd's own (X-Queue-Ms,
     * X-Compute-Ms): at most PROTO_HEADERS_MAX into h, the count; NULL:
     * none. */
    int (*headers)(const void *state, const proto_output *out, proto_header *h);
} protocol;

extern const protocol v1_protocol, openai_protocol, v2_protocol, predict_protocol, tei_protocol;

#endif
