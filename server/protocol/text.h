/* text.h - text input, as /v1/tokenize, /v1/encode, /v1/embeddings,
 * /v1/predict and /v2 take it: a string, a list of strings, or a list of
 * [a, b] pairs, tokenized by the served model's tokenizer (core/tokenizer/),
 * with the model's token limit, truncation from either end and
 * sentence-transformers' prompts; and a sequence's tokens as the responses
 * show them.
 *
 *     text_options o;
 *     if (text_read_options(root, &limits, TEXT_OPT_AUTO | TEXT_OPT_PROMPT, &o, &err) < 0)
 *         ... err: 400 (an unknown prompt_name, naming the prompts)
 *     o.flags |= TEXT_SPECIALS;
 *     text_batch tb = {0};
 *     if (text_tokenize(v, "text", &limits, &o, &tb, &err) < 0)
 *         ... err: 400 (the form, no tokenizer), 413 (over the limit)
 *     for (size_t b = 0; b < tb.B; b++) ... tb.enc[b].ids, tb.enc[b].n
 *     text_batch_free(&tb);
 *
 * A route of another protocol sets a text_options itself:
 *
 *     const char *prompt = text_prompt(&limits, "query");   // NULL: no such prompt
 *     text_options o = {.flags = TEXT_SPECIALS | TEXT_TRUNCATE,
 *                       .direction = TOK_TRUNCATE_LEFT, .prompt = prompt};
 *     text_tokenize(v, "inputs", &limits, &o, &tb, &err); */
#ifndef ATTND_TEXT_H
#define ATTND_TEXT_H

#include "protocol/api.h"
#include "protocol/fields.h"
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

/* The byte offset of code point cp of UTF-8 text s (len bytes; len past
 * its end): a token's offsets (tok_encoding's, in code points) as bytes. */
size_t text_byte_of(const char *s, size_t len, uint32_t cp);
/* The code points of UTF-8 text s (len bytes). */
size_t text_chars(const char *s, size_t len);

/* The most tokens one text (or pair) may have, specials included: the
 * smallest of the model's length -- sentence_bert_config.json's
 * max_seq_length where the directory has one (sentence-transformers and
 * Text Embeddings Inference take it first), else tokenizer_config.json's
 * model_max_length --, config.json's max_position_embeddings (the position
 * table's rows, less RoBERTa's padding offset; ModernBERT's trained length),
 * and limits.max_seq_len; SIZE_MAX when none says.  *from (when not NULL):
 * which one ("sentence_bert_config.json's max_seq_length", ...; the first
 * of them in that order on a tie), a static string. */
size_t text_max_tokens(const api_ctx *ctx, const char **from);

/* Whether v is a list of token ids, TEXT_IDS's form: a list whose first
 * entry is an integer, or an empty list (then refused as a sequence without
 * tokens). */
bool text_is_ids(const json_t *v);

/* How text_tokenize tokenizes (flags, or-ed). */
enum {
    TEXT_SPECIALS = 1,      /* the tokenizer's special tokens added (a forward's input) */
    TEXT_TRUNCATE = 2,      /* a text over text_max_tokens cut to it, from direction's end */
    TEXT_ALLOW_EMPTY = 4,   /* a sequence may have no tokens (/v1/tokenize; a forward needs one) */
    TEXT_NO_LIMIT = 8,      /* no limit at all (/v1/tokenize without "truncate": it counts) */
    TEXT_SAY_TRUNCATE = 16, /* the request has a "truncate" field: a 413 says it would cut */
    TEXT_IDS = 32,          /* a list of integers is a sequence of token ids (TEI's Input):
                               taken as given (cut as a text is), or with a prompt decoded,
                               special tokens skipped, and tokenized as a text */
};

typedef struct text_options {
    unsigned flags;          /* TEXT_* */
    tok_direction direction; /* with TEXT_TRUNCATE: TOK_TRUNCATE_RIGHT keeps a text's first
                                tokens, TOK_TRUNCATE_LEFT its last */
    const char *prompt;      /* prepended to every single text, as sentence-transformers'
                                encode does, and with pair_prompt to a pair's first;
                                NULL: none */
    bool prompt_given;       /* the request named it: a pair is then refused but with
                                pair_prompt */
    bool pair_prompt;        /* the model is a CrossEncoder (enc_st_text.cross_encoder) */
    /* a [query, document] pair made one text (api_ctx.pair_template;
       text_tokenize sets it); NULL: the tokenizer's pair */
    const char *pair_template;
} text_options;

/* The request fields text_read_options reads, for a route's field table. */
extern const char *const TEXT_DIRECTIONS[]; /* "right", "left", "Right", "Left" (TEI's) */
#define TEXT_FIELD_TRUNCATE                                                                        \
    {                                                                                              \
        .name = "truncate", .type = FIELD_BOOL                                                     \
    }
#define TEXT_FIELD_DIRECTION                                                                       \
    {                                                                                              \
        .name = "truncation_direction", .type = FIELD_CHOICE, .choices = TEXT_DIRECTIONS           \
    }
#define TEXT_FIELD_PROMPT_NAME                                                                     \
    {                                                                                              \
        .name = "prompt_name", .type = FIELD_STRING                                                \
    }

/* What text_read_options reads (or-ed). */
enum {
    TEXT_OPT_AUTO = 1,   /* "truncate" absent: ctx->auto_truncate (else false) */
    TEXT_OPT_PROMPT = 2, /* "prompt_name"; absent: the model's default prompt, if any */
    /* a scoring route (/v1/predict, TEI's /predict and /rerank): a
     * CrossEncoder's prompts as TEXT_OPT_PROMPT reads them (its predict and
     * rank apply them); another model's none, and a prompt_name refused */
    TEXT_OPT_SCORE = 4,
};

/* A request's "truncate", "truncation_direction" and (TEXT_OPT_PROMPT)
 * "prompt_name", checked by the route's fields_check, into *o (zeroed
 * first; flags TEXT_TRUNCATE and TEXT_SAY_TRUNCATE).  0, or -1 with err
 * set: 400 for a prompt_name the model does not have, naming the ones it
 * has. */
int text_read_options(const json_t *root, const api_ctx *ctx, unsigned what, text_options *o,
                      api_error *err);

/* The text of the served model's prompt named name (borrowed), or NULL
 * when it has none of that name. */
const char *text_prompt(const api_ctx *ctx, const char *name);
/* The model's prompts' names as "a, b, c" (at most cap bytes, NUL-ended);
 * "" when it has none. */
void text_prompt_names(const api_ctx *ctx, char *out, size_t cap);

/* Tokenizes v, the request's field named field: a string, a list of
 * strings or a list of [a, b] pairs, as o says (o->prompt before each
 * single text); with TEXT_IDS also a list of token ids, or a list mixing
 * them with strings.  A sequence over text_max_tokens is 413 naming its count,
 * the limit and where the limit comes from, unless TEXT_TRUNCATE (cut) or
 * TEXT_NO_LIMIT.  ctx->max_batch bounds the list.  0, or -1 with err set
 * (400 naming field and index, 413). */
int text_tokenize(const json_t *v, const char *field, const api_ctx *ctx, const text_options *o,
                  text_batch *out, api_error *err);
void text_batch_free(text_batch *tb);

/* Sequence e's tokens as [{"id", "text", "start", "stop", "special",
 * "sequence"}, ...] (new reference, NULL when out of memory): text the
 * vocabulary's token, start and stop in characters of the sequence's text
 * (with a prompt, of the prompt and the text), sequence 0 or 1 (which text
 * of a pair; null for a post-processor's). */
json_t *text_tokens_json(const tok_tokenizer *tok, const tok_encoding *e);

/* POST /v1/tokenize: the body {"text": str | [str] | [[a, b]],
 * "add_special_tokens", "truncate", "truncation_direction", "prompt_name"}
 * tokenized by ctx->tokenizer into {"tokens": [[token, ...], ...]}, one
 * list per sequence (new reference), or NULL with err set.  Without
 * "truncate" (its default is false here, whatever server.auto_truncate
 * says) no token limit applies: counting tokens is what the route is for. */
json_t *text_tokenize_request(const char *body, size_t len, const api_ctx *ctx, api_error *err);

#endif
