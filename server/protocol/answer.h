/* answer.h - a task head's answer as transformers' pipelines give it, from
 * the head's raw output (core/encoder.h's enc_result.logits): the labels of
 * text-classification, the entities of token-classification, the tokens of
 * fill-mask.  Each is the pipeline's postprocess written after
 * src/transformers/pipelines/{text_classification,token_classification,
 * fill_mask}.py; /v1/predict (predict.c) renders them.
 *
 *     json_t *labels = answer_labels(head, logits_of_b, 0, false);
 *     json_t *ents = answer_entities(tok, head, &enc, text, len, logits_of_b, true, &err);
 *     json_t *fill = answer_fill_mask(tok, enc.ids, enc.n, masks, n, rows, V, 5, &err); */
#ifndef ATTND_ANSWER_H
#define ATTND_ANSWER_H

#include "encoder.h"
#include "protocol/api.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* text-classification with top_k (0: every label): the C logits through fn
 * (softmax, sigmoid, none), as [{"label", "score"}, ...] by score, highest
 * first (ties in label order).  New reference, NULL when out of memory. */
json_t *answer_labels(const enc_head_info *h, const float *logits, int top_k, enc_head_function fn);

/* token-classification of one text (len bytes) and its encoding e, from
 * its logits (e->n, C): each token that is not special, its label the
 * argmax of the softmax ("entity", "score", "index", "word", "start",
 * "end"; word the vocabulary's token, or the text it covers where it is the
 * unknown token); with aggregate, grouped as the pipeline's "simple"
 * strategy ("entity_group", "score" the mean, "word" the decoder over the
 * group's tokens, "start", "end").  Entities labelled O are left out.
 * NULL with err set (503 out of memory, the decoder's error). */
json_t *answer_entities(const tok_tokenizer *t, const enc_head_info *h, const tok_encoding *e,
                        const char *text, size_t len, const float *logits, bool aggregate,
                        api_error *err);

/* fill-mask of one sequence's ids (n), its masks at positions masks[k]
 * (n_masks >= 1, ascending) with their logits (n_masks, V): per mask the
 * top_k tokens by softmax, each {"score", "token", "token_str",
 * "sequence"}: token_str the token decoded, sequence ids with the mask
 * replaced and padding left out, decoded (special tokens skipped when
 * there is one mask), cleaned up as the tokenizer says.  One mask: the
 * list; more: a list per mask.  NULL with err set. */
json_t *answer_fill_mask(const tok_tokenizer *t, const int32_t *ids, size_t n, const int32_t *masks,
                         int n_masks, const float *logits, int V, int top_k, api_error *err);

#endif
