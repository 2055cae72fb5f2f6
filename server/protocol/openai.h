/* openai.h - POST /v1/embeddings in OpenAI's shape: its request parsed into
 * the neutral request (encode_request.h: token ids, no attention weights),
 * and, once the forward has run, the pooled sentence embeddings as OpenAI
 * returns them.
 *
 *     openai_request o;
 *     if (openai_parse(&req, &o, body, len, "encoder", hp, &limits, &err) < 0)
 *         ... err: 400 naming the field, 404 a model this server does not serve, 413
 *     ... the forward fills req.out ...
 *     openai_render(&req, &o, "encoder", d_model, &pool, st); */
#ifndef ATTND_OPENAI_H
#define ATTND_OPENAI_H

#include "codec/stream.h"
#include "model/pooling.h"
#include "protocol/encode_request.h"

#include <stdbool.h>
#include <stddef.h>

/* How the served model pools (server start-up decides: model.pooling,
 * model.normalize, the directory's sentence-transformers files). */
typedef struct openai_pooling {
    enc_pooling mode;
    bool normalize;
} openai_pooling;

typedef struct openai_request {
    bool base64;    /* encoding_format "base64" */
    int dimensions; /* 0: d_model */
    long tokens;    /* the input's tokens: usage.prompt_tokens */
} openai_request;

/* Parses body (len bytes) into req (encode_request_init'ed here; free it
 * with encode_request_free) and o.  model_name is the served model's name
 * (a "model" that names another is a 404).  0, or -1 with err set. */
int openai_parse(encode_request *req, openai_request *o, const char *body, size_t len,
                 const char *model_name, const enc_hparams *hp, const api_limits *limits,
                 api_error *err);

/* The response of a forward that ran: each sequence's embedding pooled from
 * req->out, cut to o->dimensions, as floats or base64 of little-endian
 * float32.  0, or -1 when out of memory. */
int openai_render(const encode_request *req, const openai_request *o, const char *model_name,
                  int d_model, const openai_pooling *pool, stream *st);

#endif
