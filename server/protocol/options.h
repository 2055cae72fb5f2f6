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

/* Parses one sparse pattern option (option "strided", "fixed" or "blocks":
 * v its object) into req->batch.mask, naming it name in messages
 * ("mask.fixed.summary = 9 must be below mask.fixed.block = 8"). */
int encode_parse_pattern(encode_request *req, const char *option, struct json_t *v,
                         const char *name, api_error *err);

/* Parses "attention_format" ("dense" | "csr"; NULL = absent) into req->csr,
 * naming the field as name in messages. */
int encode_parse_attention_format(encode_request *req, const struct json_t *v, const char *name,
                                  api_error *err);

#endif
