/* predict.h - a task head's answer for text (predict.c): /v1/predict's
 * request, and the pieces the TEI routes (tei.c) build theirs from.
 *
 *     predict_request p = {0};
 *     predict_init(&p, in, &err);                  // the forward's defaults
 *     p.head = predict_head(in->ctx, &err);     // NULL: no head (400)
 *     p.top_k = ...; p.fn = ...; p.aggregate = ...; encode_want_explain(&p.enc, ...);
 *     predict_prepare(&p, inputs, &opts, in, &err); // tokenized; the head's output asked for
 *     ... the pool runs p.enc ...
 *     for (b ...) predict_answer(&p, b, &row, &err);
 *     predict_request_free(&p); */
#ifndef ATTND_PREDICT_H
#define ATTND_PREDICT_H

#include "protocol/protocol.h"
#include "protocol/text.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct predict_request {
    encode_request enc;
    const enc_head_info *head;
    const tok_tokenizer *tok;
    json_t *inputs;       /* the inputs (a reference): the texts entities quote */
    int top_k;            /* labels (0: all) or fill-mask's tokens per mask */
    bool aggregate;       /* token-classification: entity groups ("simple") */
    enc_head_function fn; /* text-classification: how scores come from the logits */
} predict_request;

/* The pipeline a head kind answers as: "text-classification",
 * "token-classification", "fill-mask". */
const char *predict_task(enc_head_kind kind);

/* The served model's head, or NULL with a 400 naming what the model has. */
const enc_head_info *predict_head(const api_ctx *ctx, api_error *err);

/* p's forward with its defaults (no attention, the limits' buffers).  0 or
 * -1 with err set; p is then safe to free. */
int predict_init(predict_request *p, const proto_input *in, api_error *err);

/* inputs (a string, a list of strings, or of [text, text_pair] pairs: text
 * classification alone) tokenized as o says (text.h; TEXT_SPECIALS) as
 * p's batch, and the head's output asked for: text- and
 * token-classification's logits, fill-mask's rows at its mask tokens
 * (each text needs one).  p->head and the options set, and with explain,
 * p->enc's; field names inputs in messages ("inputs", /rerank's "texts").
 * 0 or -1 with err set (400 naming the input, 413). */
int predict_prepare(predict_request *p, json_t *inputs, const char *field, const text_options *o,
                    const proto_input *in, api_error *err);

/* Sequence b's answer once the forward has run (answer.h's shapes; *row:
 * fill-mask's next row, 0 for b = 0).  New reference, or NULL with err. */
json_t *predict_answer(const predict_request *p, size_t b, int *row, api_error *err);

/* Sequence b's tokens (text.h's text_tokens_json), each with its rollout
 * "relevance" (rel: room for the batch's L doubles).  NULL when out of
 * memory. */
json_t *predict_explain(const predict_request *p, const enc_hparams *hp, size_t b, double *rel);

void predict_request_free(predict_request *p);

#endif
