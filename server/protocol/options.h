/* options.h - the request options both protocols share (the mask and
 * attention_format), JSON to the neutral request (encode_request.h). */
#ifndef ATTND_OPTIONS_H
#define ATTND_OPTIONS_H

#include "protocol/encode_request.h"

struct json_t;

/* Parses a /v1 "mask" object (causal, window, global, key_padding, attn)
 * into req->batch.mask; req->batch.B, .L and req->batched must be set.
 * Messages name the option as "mask.<option>". */
int encode_parse_mask(encode_request *req, struct json_t *mask, api_error *err);

/* Parses "attention_format" ("dense" | "csr"; NULL = absent) into req->csr,
 * naming the field as name in messages. */
int encode_parse_attention_format(encode_request *req, const struct json_t *v, const char *name,
                                  api_error *err);

#endif
