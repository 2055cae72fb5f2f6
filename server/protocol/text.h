/* text.h - text input, as /v1/tokenize, /v1/encode and /v1/embeddings take
 * it: a string, a list of strings, or a list of [a, b] pairs, tokenized by
 * the served model's tokenizer (core/tokenizer/), with the token limit and
 * truncation; and a sequence's tokens as the responses show them.
 *
 *     text_batch tb = {0};
 *     if (text_tokenize(v, "text", &limits, TEXT_SPECIALS, &tb, &err) < 0)
 *         ... err: 400 (the form, no tokenizer), 413 (over the limit)
 *     for (size_t b = 0; b < tb.B; b++) ... tb.enc[b].ids, tb.enc[b].n
 *     text_batch_free(&tb); */
#ifndef ATTND_TEXT_H
#define ATTND_TEXT_H

#include "protocol/api.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct text_batch {
    size_t B;          /* sequences */
    bool batched;      /* a list was given (a single string: false) */
    tok_encoding *enc; /* owned (B) */
    size_t longest;    /* the longest sequence's tokens */
    size_t total;      /* every sequence's tokens */
} text_batch;

/* The most tokens one sequence may have: limits.max_seq_len and the
 * model's position table (RoBERTa's counting from padding_idx + 1). */
size_t text_max_tokens(const api_limits *limits);

/* How text_tokenize tokenizes (flags, or-ed). */
enum {
    TEXT_SPECIALS = 1,    /* the tokenizer's special tokens added (a forward's input) */
    TEXT_TRUNCATE = 2,    /* a sequence over the limit cut, as tokenizers' right truncation */
    TEXT_ALLOW_EMPTY = 4, /* a sequence may have no tokens (/v1/tokenize; a forward needs one) */
};

/* Tokenizes v, the request's field named field: a string, a list of
 * strings or a list of [a, b] pairs, as flags say.  A sequence over
 * text_max_tokens is 413 naming its count and the limit unless
 * TEXT_TRUNCATE.  limits->max_batch bounds the list.  0, or -1 with err set
 * (400 naming field and index, 413). */
int text_tokenize(const json_t *v, const char *field, const api_limits *limits, unsigned flags,
                  text_batch *out, api_error *err);
void text_batch_free(text_batch *tb);

/* Sequence e's tokens as [{"id", "text", "start", "stop", "special",
 * "sequence"}, ...] (new reference, NULL when out of memory): text the
 * vocabulary's token, start and stop in characters of the sequence's text,
 * sequence 0 or 1 (which text of a pair; null for a post-processor's). */
json_t *text_tokens_json(const tok_tokenizer *tok, const tok_encoding *e);

/* POST /v1/tokenize: the body {"text": str | [str] | [[a, b]],
 * "add_special_tokens", "truncate"} tokenized by limits->tokenizer into {"tokens": [[token,
 * ...], ...]}, one list per sequence (new reference), or NULL with err set.
 * Without truncate no token limit applies: counting tokens is what the
 * route is for. */
json_t *text_tokenize_request(const char *body, size_t len, const api_limits *limits,
                              api_error *err);

#endif
