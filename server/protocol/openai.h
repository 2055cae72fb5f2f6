/* openai.h - OpenAI's API: POST /v1/embeddings, its request parsed into
 * the neutral request (encode_request.h: token ids, no attention weights),
 * and, once the forward has run, the pooled sentence embeddings as OpenAI
 * returns them; GET /v1/models and /v1/models/{model}; errors in OpenAI's
 * shape, {"error": {"message", "type", "param", "code"}}.
 *
 *     openai_request o;
 *     if (openai_parse(&req, &o, body, len, "encoder", hp, width, &limits, &err) < 0)
 *         ... err: 400 naming the field, 404 a model this server does not serve, 413
 *     ... the forward fills req.out ...
 *     openai_render(&req, &o, "encoder", d_model, &embedder, st); */
#ifndef ATTND_OPENAI_H
#define ATTND_OPENAI_H

#include "codec/stream.h"
#include "model/pooling.h"
#include "protocol/encode_request.h"

#include <stdbool.h>
#include <stddef.h>

/* The most inputs one /v1/embeddings request takes (OpenAI's own bound),
 * or limits.max_batch when that is more. */
#define OPENAI_MAX_INPUTS 2048

/* The protocol's routes (protocol.match's ids). */
enum { OPENAI_ROUTE_NONE, OPENAI_ROUTE_EMBEDDINGS, OPENAI_ROUTE_MODELS, OPENAI_ROUTE_MODEL };

/* Which of the protocol's routes a decoded path is: /v1/embeddings,
 * /v1/models, /v1/models/{model} (anything after the slash), else NONE. */
int openai_route_of(const char *path);

/* GET /v1/models' body (list: {"object": "list", "data": [model]}) or GET
 * /v1/models/{model}'s (the model object: {"id", "object": "model",
 * "created", "owned_by": "attnd"}), as owned JSON text; NULL when out of
 * memory.  created: unix seconds. */
char *openai_models_json(const char *model_name, long long created, bool list);

/* An error as OpenAI sends it (owned JSON text, NULL when out of memory):
 * {"error": {"message", "type", "param", "code"}}.  type is
 * "invalid_request_error", "server_error" for 5xx, "requests" for 429 (code
 * "rate_limit_exceeded", OpenAI's rate limit's); code "invalid_api_key" for
 * 401, "model_not_found" for a 404 of a model, else null; param the body's
 * field the message begins with (input, model, encoding_format,
 * dimensions, user), else null. */
char *openai_error_body(api_error_kind kind, const char *message);

typedef struct openai_request {
    bool base64;    /* encoding_format "base64" */
    int dimensions; /* 0: all of the embedding's */
    long tokens;    /* the input's tokens: usage.prompt_tokens */
} openai_request;

/* Parses body (len bytes) into req (encode_request_init'ed here; free it
 * with encode_request_free) and o.  model_name is the served model's name
 * (a "model" that names another is a 404); width, its embeddings'
 * (dimensions' bound: enc_embed_width).  0, or -1 with err set. */
int openai_parse(encode_request *req, openai_request *o, const char *body, size_t len,
                 const char *model_name, const enc_hparams *hp, int width, const api_ctx *ctx,
                 api_error *err);

/* The response of a forward that ran: each sequence's embedding made of
 * req->out (d_model wide) as e says (how the served model pools: server
 * start-up decides from model.pooling, model.normalize and the directory's
 * sentence-transformers files), cut to o->dimensions, as floats or base64
 * of little-endian float32.  0, or -1 when out of memory. */
int openai_render(const encode_request *req, const openai_request *o, const char *model_name,
                  int d_model, const enc_embedder *e, stream *st);

#endif
