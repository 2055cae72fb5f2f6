/* options.h - the request options both protocols share (the mask, attention
 * and attention_format), JSON to the neutral request (encode_request.h),
 * and their fields (fields.h) for the tables of /v1's body and v2's
 * parameters. */
#ifndef ATTND_OPTIONS_H
#define ATTND_OPTIONS_H

#include "protocol/encode_request.h"
#include "protocol/fields.h"

struct json_t;

/* The choices of "attention" (in enc_attn_mode's order: heads, mean, none)
 * and of "attention_format" (dense, csr); NULL-terminated. */
extern const char *const options_attention_modes[];
extern const char *const options_attention_formats[];
#define OPTIONS_FIELD_ATTENTION                                                                    \
    {                                                                                              \
        .name = "attention", .type = FIELD_CHOICE, .choices = options_attention_modes              \
    }
#define OPTIONS_FIELD_ATTENTION_FORMAT                                                             \
    {                                                                                              \
        .name = "attention_format", .type = FIELD_CHOICE, .choices = options_attention_formats     \
    }

/* attention and attention_format of obj, checked against t (which holds
 * both fields above), into req->attn_mode and req->csr; absent: left as
 * they are. */
void options_apply_attention(encode_request *req, const field_table *t, const struct json_t *obj);

/* Parses a /v1 "mask" object (causal, window, global, key_padding, attn
 * and the sparse patterns) into req->batch.mask; req->batch.B, .L and
 * req->batched must be set.  Messages name the option as "mask.<option>". */
int options_parse_mask(encode_request *req, struct json_t *mask, api_error *err);

#endif
