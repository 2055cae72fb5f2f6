/* tei.h - Hugging Face's text-embeddings-inference (TEI) API, so that
 * clients and frameworks written for TEI (LangChain, LlamaIndex, Haystack,
 * Hugging Face's own client) work against attnd unchanged: /embed,
 * /embed_all, /embed_sparse, /predict, /rerank, /similarity (forwards,
 * tei_protocol), /tokenize and /decode (answered from the body), GET /info,
 * and POST /, which answers by the model's kind as TEI and Inference
 * Endpoints do.  Errors are TEI's {"error", "error_type"} with TEI's
 * statuses (422 for input it refuses, 424 for a route the model's kind
 * cannot answer).  docs/api.md ("Hugging Face TEI") has each route. */
#ifndef ATTND_TEI_H
#define ATTND_TEI_H

#include "protocol/api.h"

#include <jansson.h>
#include <stddef.h>

/* The route table's proto_route of each TEI path. */
enum tei_route {
    TEI_ROUTE_ROOT = 1, /* POST /: by the model's kind */
    TEI_ROUTE_EMBED,
    TEI_ROUTE_EMBED_ALL,
    TEI_ROUTE_EMBED_SPARSE,
    TEI_ROUTE_PREDICT,
    TEI_ROUTE_RERANK,
    TEI_ROUTE_SIMILARITY,
    TEI_ROUTE_INFO, /* GET /info */
};

/* POST /tokenize: {"inputs": str | [str], "add_special_tokens"} into
 * [[{"id", "text", "special", "start", "stop"}, ...], ...], byte offsets,
 * null on the special tokens.  NULL with err set. */
json_t *tei_tokenize(const char *body, size_t len, const api_ctx *ctx, api_error *err);

/* POST /decode: {"ids": [id] | [[id]], "skip_special_tokens"} into [str].
 * NULL with err set. */
json_t *tei_decode(const char *body, size_t len, const api_ctx *ctx, api_error *err);

#endif
