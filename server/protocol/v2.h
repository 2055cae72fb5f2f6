/* v2.h - the Open Inference Protocol (KServe v2, docs/contract.md section 5) with
 * Triton's binary tensor data extension: routes under /v2, the metadata
 * bodies, and the infer codec (a request body, JSON header plus binary
 * tensors, to a core batch; a forward's results to the response body).  The
 * batch lives in the neutral encode_request (encode_request.h), so the daemon runs a v2
 * request through the same compute pool as /v1/encode.  Knows nothing of
 * HTTP beyond the header value it is handed; never prints.
 *
 *     v2_path p;
 *     if (v2_route_parse(url, &p) == V2_ROUTE_INFER &&
 *         v2_check_model(&p, "encoder", &err) == 0 &&
 *         v2_request_parse(&req, body, len, ihcl_header, "encoder", &hp, &limits, &err) == 0 &&
 *         encode_request_alloc_outputs(&req.enc, &hp, &err) == 0) {
 *         ... run req.enc.batch into encode_request_result(&req.enc) ...
 *         char *resp = v2_response(&req, "encoder", &hp, &len, &header_len, res.scores);
 *         // header_len > 0: send Inference-Header-Content-Length: header_len
 *     }
 *     -> on error: status api_error_status(err.kind), body {"error": err.message}
 *     v2_request_free(&req);
 */
#ifndef ATTND_V2_H
#define ATTND_V2_H

#include "protocol/api.h"
#include "protocol/encode_request.h"

#include <stdbool.h>
#include <stddef.h>

/* The model's one version, as the protocol's string. */
#define V2_MODEL_VERSION "1"

typedef enum v2_route {
    V2_ROUTE_NONE,        /* not under /v2 */
    V2_ROUTE_UNKNOWN,     /* under /v2, but no such route */
    V2_ROUTE_SERVER,      /* GET /v2 */
    V2_ROUTE_LIVE,        /* GET /v2/health/live */
    V2_ROUTE_READY,       /* GET /v2/health/ready */
    V2_ROUTE_MODEL,       /* GET /v2/models/{name}[/versions/{v}] */
    V2_ROUTE_MODEL_READY, /* GET /v2/models/{name}[/versions/{v}]/ready */
    V2_ROUTE_INFER,       /* POST /v2/models/{name}[/versions/{v}]/infer */
} v2_route;

/* The model name and version of a /v2/models/... path. */
typedef struct v2_path {
    char name[256];
    char version[64];
    bool has_version;
    bool too_long; /* a segment did not fit: no model has that name */
} v2_path;

/* Which route url (an unescaped path, no query) is; fills p for the model
 * routes. */
v2_route v2_route_parse(const char *url, v2_path *p);

/* 0 when p names model_name (and version V2_MODEL_VERSION, if any);
 * otherwise -1 with err API_NOT_FOUND naming the unknown model or version. */
int v2_check_model(const v2_path *p, const char *model_name, api_error *err);

/* The GET /v2 body: {"name": "attnd", "version": version, "extensions":
 * ["binary_tensor_data"]}.  Owned, or NULL when out of memory. */
char *v2_server_metadata(const char *version);

/* The GET /v2/models/{name} body: name, versions, platform, and the inputs
 * (embeddings FP32 [-1, -1, D], lengths INT32 [-1]; position_ids INT32 [-1,
 * -1] for a model with RoPE or ALiBi, or a position table in emb; with an
 * embedding module emb (enc_model_embedding; NULL: none), input_ids INT64
 * [-1, -1], and token_type_ids INT64 [-1, -1] when it has token types;
 * attention_mask INT64 [-1, -1]) and outputs (outputs FP32 [-1, -1, D],
 * attention FP32 [-1, H, -1, -1]); with text (a tokenizer), text BYTES
 * [-1].  Owned, or NULL. */
char *v2_model_metadata(const char *model_name, const enc_hparams *hp,
                        const enc_embedding_info *emb, bool text);

/* The outputs a request can ask for. */
typedef enum v2_output { V2_OUT_OUTPUTS, V2_OUT_ATTENTION, V2_N_OUT } v2_output;
/* Each output's name in requests and responses: "outputs", "attention". */
extern const char *const v2_output_name[V2_N_OUT];

typedef struct v2_request {
    encode_request enc;      /* the batch, mask, attention mode and result buffers */
    char *id;                /* owned: the request's "id" (echoed), or NULL */
    int n_out;               /* outputs to return ... */
    v2_output out[V2_N_OUT]; /* ... in this order */
    bool binary[V2_N_OUT];   /* per output: as binary data after the JSON */
} v2_request;

/* Parses and validates an infer request body of len bytes.  header_length is
 * the Inference-Header-Content-Length header's value (NULL when absent): the
 * JSON header is then body[0..n) and the inputs' binary data follow it, in
 * input order, as their binary_data_size parameters say.  Every malformed
 * case is API_BAD_REQUEST (400) with a message that names it (the header
 * length, the input and its field, the index); limits are API_TOO_LARGE (413),
 * checked as soon as B and L are known, before anything sized by them is
 * allocated.  Asking only for the "outputs" output sets req->enc.attn_mode to
 * ENC_ATTN_NONE, so no attention weights are computed.  Returns 0 or -1;
 * req is always safe to v2_request_free.  docs/api.md ("POST
 * /v2/models/{name}/infer") lists the rules. */
int v2_request_parse(v2_request *req, const char *body, size_t len, const char *header_length,
                     const char *model_name, const enc_hparams *hp, const api_ctx *ctx,
                     api_error *err);

/* The response body for a completed forward: the JSON object (model_name,
 * model_version, id when the request had one, parameters.attention_scores,
 * outputs in the requested order: name, datatype FP32, shape [B, L, D] / [B,
 * H, L, L] / [B, L, L], and "data" flat in row-major order or
 * parameters.binary_data_size; with attention_format csr the attention
 * output is three tensors, attention_indptr INT32 [B*L + 1],
 * attention_indices INT32 [nnz] and attention_values FP32 [H, nnz] or
 * [nnz]), then the binary outputs' little-endian bytes in the same order.
 * *header_len is the JSON's length when any output is binary (send it as
 * Inference-Header-Content-Length), else 0.  Owned, or NULL when out of
 * memory. */
char *v2_response(const v2_request *req, const char *model_name, const enc_hparams *hp, size_t *len,
                  size_t *header_len, uint64_t attention_scores);

/* The same body as pieces of st (codec/stream.h), produced as the socket
 * drains (req's tensors must live until st is freed); *header_len as
 * above.  Returns 0, or -1 when out of memory. */
struct stream;
int v2_response_stream(const v2_request *req, const char *model_name, const enc_hparams *hp,
                       uint64_t attention_scores, struct stream *st, size_t *header_len);

/* Frees what req owns; req is empty afterwards. */
void v2_request_free(v2_request *req);

#endif
