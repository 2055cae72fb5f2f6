/* v1.h - the /v1/encode codec (docs/api.md, "POST /v1/encode"): a JSON
 * request body to the neutral request (encode_request.h), and a forward's results
 * to the JSON response body.  Knows nothing of HTTP; never prints.
 *
 *     encode_request req;
 *     api_error err = {0};
 *     if (v1_request_parse(&req, body, len, &hp, &limits, &err) < 0 ||
 *         encode_request_alloc_outputs(&req, &hp, &err) < 0)
 *         -> respond api_error_status(err.kind) with err.message
 *     enc_result result = encode_request_result(&req);
 *     enc_forward(model, ws, &req.batch, &result, ...)
 *     v1_response_stream(&req, "encoder", &hp, &usage, st);  (or v1_response)
 *     ... once st is sent: encode_request_free(&req);
 */
#ifndef ATTND_V1_H
#define ATTND_V1_H

#include "protocol/encode_request.h"

/* Parses and validates a /v1/encode body against the model's hyperparameters
 * and the limits.  Checks every field of docs/contract.md section 4: nesting, ragged
 * rows, d_model, numbers only, finite base64 floats, lengths in 1..L, mask
 * options (unknown ones refused), attention mode, attention_layers indices,
 * precision, encoding; and batch / sequence / token counts and the attention
 * output size against limits BEFORE allocating anything sized by them
 * (ctx NULL: none, sizes are still checked for overflow).
 * Returns 0, or -1 with err set: API_BAD_REQUEST (400) or API_TOO_LARGE (413),
 * the message naming the field and index ("embeddings[1][3] has 511 numbers;
 * d_model is 512"; API_UNAVAILABLE when out of memory).  req is always safe
 * to encode_request_free.  docs/api.md lists the choices the contract leaves
 * open (null = absent, the unbatched form's masks, clamped windows, ...). */
int v1_request_parse(encode_request *req, const char *body, size_t len, const enc_hparams *hp,
                     const api_ctx *ctx, api_error *err);

/* The response body for a completed forward (docs/contract.md section 4): model, shape,
 * outputs (with the input's nesting; with lengths, sequence b has lengths[b]
 * rows and attention [H][len][len]), attention (always the LAST layer's
 * weights; omitted for "none"), attention_layers (in request order) when
 * listed, usage; numbers with req->precision significant digits ("%.{p}g"),
 * or base64 little-endian float32 with outputs_shape / attention_shape (one
 * string per sequence with lengths).  Returns an owned NUL-terminated string
 * and its length in *len, or NULL when out of memory (or when req has no
 * outputs allocated). */
char *v1_response(const encode_request *req, const char *model_name, const enc_hparams *hp,
                  const encode_usage *usage, size_t *len);

/* The same body as pieces of st (codec/stream.h), to be produced chunk by
 * chunk as the socket drains: the tensors are read from req's buffers, which
 * must live until st is freed.  Returns 0, or -1 (no outputs allocated, or
 * out of memory). */
struct stream;
int v1_response_stream(const encode_request *req, const char *model_name, const enc_hparams *hp,
                       const encode_usage *usage, struct stream *st);

#endif
