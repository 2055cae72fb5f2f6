/* text.c - text input: the "text" (or "input") field's forms tokenized by
 * the served tokenizer, the token limit, truncation, and the tokens as the
 * responses show them. */
#include "protocol/text.h"

#include "encoder.h"
#include "protocol/fields.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)       api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define TOO_LARGE(...) api_error_set(err, API_TOO_LARGE, __VA_ARGS__)

static const char FORM[] = "a string, a list of strings, or a list of [text, text_pair] pairs";

size_t text_max_tokens(const api_limits *limits)
{
    size_t max = limits->max_seq_len > 0 ? (size_t)limits->max_seq_len : SIZE_MAX;
    const enc_embedding_info *e = limits->embedding;
    if (e && e->max_positions > 0) {
        size_t table = (size_t)e->max_positions;
        if (strcmp(e->position, "roberta") == 0 && e->padding_idx >= 0)
            table = table > (size_t)e->padding_idx + 1 ? table - (size_t)e->padding_idx - 1 : 0;
        max = table < max ? table : max;
    }
    return max;
}

void text_batch_free(text_batch *tb)
{
    if (!tb)
        return;
    for (size_t b = 0; b < tb->B; b++)
        tok_encoding_free(&tb->enc[b]);
    free(tb->enc);
    memset(tb, 0, sizeof *tb);
}

/* One item: a string, or [a, b]; at names it ("text", "text[3]"). */
static int one(const tok_tokenizer *tok, const json_t *item, const char *at, unsigned flags,
               size_t max, tok_encoding *e, api_error *err)
{
    const json_t *a = item, *b = NULL;
    if (json_is_array(item)) {
        if (json_array_size(item) != 2 || !json_is_string(json_array_get(item, 0)) ||
            !json_is_string(json_array_get(item, 1)))
            return BAD("%s must be a string or a [text, text_pair] pair of strings", at);
        a = json_array_get(item, 0);
        b = json_array_get(item, 1);
    } else if (!json_is_string(item)) {
        return BAD("%s must be a string or a [text, text_pair] pair, not %s", at,
                   api_json_kind(item));
    }
    enc_error ee = {0};
    size_t whole = 0;
    int rc =
        tok_encode(tok, json_string_value(a), json_string_length(a),
                   b ? json_string_value(b) : NULL, b ? json_string_length(b) : 0,
                   (flags & TEXT_SPECIALS) != 0, flags & TEXT_TRUNCATE ? max : 0, e, &whole, &ee);
    if (rc < 0)
        return api_error_set(err, api_error_of_core(rc), "%s: %s", at,
                             rc == ENC_ENOMEM ? "out of memory" : ee.message);
    if (e->n == 0 && !(flags & TEXT_ALLOW_EMPTY))
        return BAD("%s has no tokens: the tokenizer makes none of it and adds no special tokens",
                   at);
    if (e->n > max) /* /v1/encode's and /v1/tokenize's "text" can be cut; OpenAI's input not */
        return TOO_LARGE("%s has %zu tokens; the model takes at most %zu%s", at, whole, max,
                         strncmp(at, "text", 4) == 0 ? " (\"truncate\": true cuts it to that)"
                                                     : "");
    return 0;
}

int text_tokenize(const json_t *v, const char *field, const api_limits *limits, unsigned flags,
                  text_batch *out, api_error *err)
{
    memset(out, 0, sizeof *out);
    const tok_tokenizer *tok = limits->tokenizer;
    if (!tok)
        return BAD("%s needs a tokenizer, and the served model has none (a model.dir with "
                   "tokenizer.json, or model.tokenizer); send input_ids or embeddings",
                   field);
    const bool list = json_is_array(v); /* ["a", "b"]: two texts; a pair is [[a, b]] */
    if (!json_is_string(v) && !list)
        return BAD("%s must be %s, not %s", field, FORM, api_json_kind(v));
    const size_t B = list ? json_array_size(v) : 1;
    if (B == 0)
        return BAD("%s is an empty list; expected %s", field, FORM);
    if (limits->max_batch > 0 && B > (size_t)limits->max_batch)
        return TOO_LARGE("%s has %zu texts; limits.max_batch is %d", field, B, limits->max_batch);
    if (!(out->enc = calloc(B, sizeof *out->enc)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    out->B = B;
    out->batched = list;
    const size_t max = text_max_tokens(limits);
    for (size_t b = 0; b < B; b++) {
        char at[64];
        if (list)
            snprintf(at, sizeof at, "%s[%zu]", field, b);
        else
            snprintf(at, sizeof at, "%s", field);
        if (one(tok, list ? json_array_get(v, b) : v, at, flags, max, &out->enc[b], err) < 0) {
            text_batch_free(out);
            return -1;
        }
        out->total += out->enc[b].n;
        if (out->enc[b].n > out->longest)
            out->longest = out->enc[b].n;
    }
    return 0;
}

json_t *text_tokens_json(const tok_tokenizer *tok, const tok_encoding *e)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < e->n; i++) {
        const char *t = tok_token_text(tok, e->ids[i]);
        json_t *item = json_pack("{s:i, s:s, s:I, s:I, s:b, s:o}", "id", (int)e->ids[i], "text",
                                 t ? t : "", "start", (json_int_t)e->start[i], "stop",
                                 (json_int_t)e->stop[i], "special", e->special[i] != 0, "sequence",
                                 e->seq[i] == 255 ? json_null() : json_integer(e->seq[i]));
        if (!item || json_array_append_new(list, item) < 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* ---- POST /v1/tokenize ------------------------------------------------------ */

static const field_spec TOKENIZE_FIELDS[] = {
    {.name = "text", .type = FIELD_JSON, .required = true, .form = FORM},
    {.name = "add_special_tokens", .type = FIELD_BOOL},
    {.name = "truncate", .type = FIELD_BOOL},
};
static const field_table TOKENIZE = FIELD_TABLE("field", TOKENIZE_FIELDS);

json_t *text_tokenize_request(const char *body, size_t len, const api_limits *limits,
                              api_error *err)
{
    json_t *root = api_json_load(body, len, "text", err), *out = NULL;
    if (!root)
        return NULL;
    text_batch tb = {0};
    if (!json_is_object(root)) {
        BAD("the request body must be a JSON object, not %s", api_json_kind(root));
        goto done;
    }
    if (fields_check(&TOKENIZE, root, "", err) < 0)
        goto done;
    const bool special = fields_bool(root, "add_special_tokens", true),
               truncate = fields_bool(root, "truncate", false);
    /* no limit without "truncate": counting tokens is what this route is for */
    api_limits unbounded = *limits;
    if (!truncate)
        unbounded.max_seq_len = 0, unbounded.embedding = NULL;
    const unsigned flags =
        TEXT_ALLOW_EMPTY | (special ? TEXT_SPECIALS : 0) | (truncate ? TEXT_TRUNCATE : 0);
    if (text_tokenize(api_json_field(root, "text"), "text", truncate ? limits : &unbounded, flags,
                      &tb, err) < 0)
        goto done;
    json_t *lists = json_array();
    out = json_pack("{s:o}", "tokens", lists);
    for (size_t b = 0; out && lists && b < tb.B; b++)
        if (json_array_append_new(lists, text_tokens_json(limits->tokenizer, &tb.enc[b])) < 0) {
            json_decref(out);
            out = NULL;
        }
    if (!out)
        api_error_set(err, API_UNAVAILABLE, "out of memory writing the response");
done:
    text_batch_free(&tb);
    json_decref(root);
    return out;
}
