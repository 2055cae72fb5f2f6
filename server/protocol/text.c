/* text.c - text input: the "text" (or "input", "inputs") field's forms
 * tokenized by the served tokenizer, the model's token limit and where it
 * comes from, truncation from either end, sentence-transformers' prompts,
 * and the tokens as the responses show them. */
#include "protocol/text.h"

#include "codec/strbuf.h"
#include "encoder.h"
#include "load/sentence.h"
#include "protocol/fields.h"
#include "protocol/schemas.h"

#include <jansson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...)       api_error_set(err, API_BAD_REQUEST, __VA_ARGS__)
#define TOO_LARGE(...) api_error_set(err, API_TOO_LARGE, __VA_ARGS__)

static const char FORM[] = "a string, a list of strings, or a list of [text, text_pair] pairs";

const char *const TEXT_DIRECTIONS[] = {"right", "left", "Right", "Left", NULL};

/* ---- the token limit ------------------------------------------------------- */

/* max = n and *from = why when n is a limit (> 0) below max. */
static void take(size_t *max, const char **from, size_t n, const char *why)
{
    if (n > 0 && n < *max) {
        *max = n;
        *from = why;
    }
}

size_t text_max_tokens(const api_ctx *ctx, const char **from)
{
    size_t max = SIZE_MAX;
    const char *why = "no limit";
    /* the model's length: sentence-transformers' first, as its encode and
     * TEI take it (it may be above the tokenizer's: it is what
     * sentence-transformers passes the tokenizer as max_length) */
    const enc_st_text *st = ctx->sentence;
    if (st && st->max_seq_length > 0)
        take(&max, &why, (size_t)st->max_seq_length, "sentence_bert_config.json's max_seq_length");
    else if (ctx->tokenizer)
        take(&max, &why, tok_model_max_length(ctx->tokenizer),
             "tokenizer_config.json's model_max_length");
    const enc_embedding_info *e = ctx->embedding;
    if (e && e->max_positions > 0) { /* a position table */
        const bool roberta = strcmp(e->position, "roberta") == 0 && e->padding_idx >= 0;
        size_t table = (size_t)e->max_positions;
        if (roberta) /* positions count from padding_idx + 1 */
            table = table > (size_t)e->padding_idx + 1 ? table - (size_t)e->padding_idx - 1 : 0;
        take(&max, &why, table > 0 ? table : 1,
             roberta                          ? "config.json's max_position_embeddings, less "
                                                "RoBERTa's padding offset"
             : e->max_position_embeddings > 0 ? "config.json's max_position_embeddings"
                                              : "the position embeddings' rows");
    } else if (e && e->max_position_embeddings > 0) { /* RoPE: the length it was trained to */
        take(&max, &why, (size_t)e->max_position_embeddings,
             "config.json's max_position_embeddings");
    }
    if (ctx->max_seq_len > 0)
        take(&max, &why, (size_t)ctx->max_seq_len, "limits.max_seq_len");
    if (from)
        *from = why;
    return max;
}

/* ---- a request's options ------------------------------------------------------ */

const char *text_prompt(const api_ctx *ctx, const char *name)
{
    return enc_st_text_prompt(ctx->sentence, name);
}

void text_prompt_names(const api_ctx *ctx, char *out, size_t cap)
{
    const enc_st_text *st = ctx->sentence;
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; st && i < st->n_prompts && k < cap; i++) {
        const int n = snprintf(out + k, cap - k, "%s%s", i ? ", " : "", st->prompts[i].name);
        if (n < 0)
            break;
        k += (size_t)n;
    }
}

int text_read_options(const json_t *root, const api_ctx *ctx, unsigned what, text_options *o,
                      api_error *err)
{
    memset(o, 0, sizeof *o);
    const bool auto_truncate = (what & TEXT_OPT_AUTO) && ctx->auto_truncate;
    o->flags =
        TEXT_SAY_TRUNCATE | (fields_bool(root, "truncate", auto_truncate) ? TEXT_TRUNCATE : 0);
    const json_t *dir = fields_get(root, "truncation_direction");
    const char *d = json_string_value(dir); /* one of TEXT_DIRECTIONS: checked */
    o->direction = d && (d[0] == 'l' || d[0] == 'L') ? TOK_TRUNCATE_LEFT : TOK_TRUNCATE_RIGHT;
    const enc_st_text *st = ctx->sentence;
    const bool cross_encoder = st && st->cross_encoder;
    const json_t *name = fields_get(root, "prompt_name");
    if (!(what & TEXT_OPT_PROMPT) && !((what & TEXT_OPT_SCORE) && cross_encoder))
        return name && (what & TEXT_OPT_SCORE)
                   ? BAD("prompt_name: this route takes a CrossEncoder's prompts only "
                         "(config_sentence_transformers.json's model_type CrossEncoder), and the "
                         "model is not one")
                   : 0;
    o->pair_prompt = cross_encoder;
    if (!name) { /* sentence-transformers' encode: the default prompt, where there is one */
        o->prompt =
            st && st->default_prompt_name ? text_prompt(ctx, st->default_prompt_name) : NULL;
        return 0;
    }
    o->prompt_given = true;
    if ((o->prompt = text_prompt(ctx, json_string_value(name))))
        return 0;
    char q[API_SAFE_MAX + 4], names[256];
    text_prompt_names(ctx, names, sizeof names);
    return names[0] ? BAD("prompt_name '%s' is not one of the model's prompts: %s",
                          api_safe_text(json_string_value(name), q), names)
                    : BAD("prompt_name '%s': the model has no prompts (model.dir's "
                          "config_sentence_transformers.json names none)",
                          api_safe_text(json_string_value(name), q));
}

/* ---- tokenizing ---------------------------------------------------------------- */

size_t text_byte_of(const char *s, size_t len, uint32_t cp)
{
    size_t i = 0;
    for (uint32_t c = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && c++ == cp)
            return i;
    return len;
}

size_t text_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
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

/* What one text is tokenized with: the prompt's room. */
typedef struct scratch {
    char *buf;
    size_t cap;
} scratch;

/* The prompt and text a (len bytes) in sc's buffer; *len its length.
 * NULL when out of memory. */
static const char *prompted(scratch *sc, const char *prompt, const char *a, size_t *len)
{
    const size_t pl = strlen(prompt), n = pl + *len;
    if (n + 1 > sc->cap) {
        char *p = realloc(sc->buf, n + 1);
        if (!p)
            return NULL;
        sc->buf = p;
        sc->cap = n + 1;
    }
    memcpy(sc->buf, prompt, pl);
    memcpy(sc->buf + pl, a, *len);
    sc->buf[n] = '\0';
    *len = n;
    return sc->buf;
}

static int one(const tok_tokenizer *tok, const json_t *item, const char *at, const text_options *o,
               size_t max, const char *from, scratch *sc, tok_encoding *e, api_error *err);

bool text_is_ids(const json_t *v)
{
    return json_is_array(v) && (json_array_size(v) == 0 || json_is_integer(json_array_get(v, 0)));
}

/* TEXT_IDS: one list of token ids, at naming it.  Without a prompt taken as
 * given, cut to max from o->direction's end with TEXT_TRUNCATE; with one,
 * as Text Embeddings Inference does: decoded with the special tokens
 * skipped, and the text tokenized after the prompt. */
static int ids_item(const tok_tokenizer *tok, const json_t *item, const char *at,
                    const text_options *o, size_t max, const char *from, scratch *sc,
                    tok_encoding *e, api_error *err)
{
    const size_t n = json_array_size(item);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(item, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
            free(ids);
            return BAD("%s[%zu] must be a token id (an integer from 0), not %s", at, i,
                       json_is_integer(x) ? "a negative or too large integer" : fields_kind(x));
        }
        ids[i] = (int32_t)json_integer_value(x);
    }
    int rc;
    if (o->prompt && n > 0) {
        char *text = NULL;
        size_t len = 0;
        enc_error ee = {0};
        json_t *s = NULL;
        rc = tok_decode(tok, ids, n, true, &text, &len, &ee);
        if (rc < 0)
            rc = api_error_set(err, api_error_of_core(rc), "%s: %s", at, ee.message);
        else if (!(s = json_stringn(text, len)))
            rc = BAD("%s: its tokens do not decode to UTF-8 text, which the prompt needs", at);
        else
            rc = one(tok, s, at, o, max, from, sc, e, err);
        json_decref(s);
        free(text);
        free(ids);
        return rc;
    }
    const bool cut = (o->flags & TEXT_TRUNCATE) && !(o->flags & TEXT_NO_LIMIT) && n > max;
    const size_t keep = cut ? max : n;
    const int32_t *from_ids = cut && o->direction == TOK_TRUNCATE_LEFT ? ids + (n - max) : ids;
    rc = tok_encoding_set_ids(e, from_ids, keep);
    free(ids);
    if (rc < 0)
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    if (n == 0 && !(o->flags & TEXT_ALLOW_EMPTY))
        return BAD("%s is an empty list; a sequence needs at least one token", at);
    if (keep > max && !(o->flags & TEXT_NO_LIMIT))
        return TOO_LARGE("%s has %zu tokens; the model takes at most %zu (%s)%s", at, n, max, from,
                         o->flags & TEXT_SAY_TRUNCATE ? "; \"truncate\": true cuts it to that"
                                                      : "");
    return 0;
}

/* part (n bytes) onto b, every "{query}" in it replaced by q (qn bytes). */
static void put_filled(strbuf *b, const char *part, size_t n, const char *q, size_t qn)
{
    static const char KEY[] = "{query}";
    const size_t kn = sizeof KEY - 1;
    for (const char *end = part + n, *k; part < end; part = k + kn) {
        k = memmem(part, (size_t)(end - part), KEY, kn);
        strbuf_put(b, part, (size_t)((k ? k : end) - part));
        if (!k)
            break;
        strbuf_put(b, q, qn);
    }
}

/* A [query, document] pair made one text by the model's template
 * (model.rerank_template, docs/api.md): the template up to {document} with
 * {query} replaced, then the document, tokenized as one text and cut from
 * its end (when o says to cut) to leave room for the rest of the template,
 * tokenized apart and kept whole -- as Qwen3-Reranker's model card builds
 * its inputs.  A cut from the left takes the document's first tokens (those
 * ending past the text before it) instead.  A cut takes the document's
 * tokens only: the template and the query stay whole, or the pair is
 * refused.  No special tokens are added: the template holds its own, as a
 * chat template's text does.  Offsets are in the whole templated text. */
static int templated(const tok_tokenizer *tok, const json_t *q, const json_t *d, const char *at,
                     const text_options *o, size_t max, const char *from, tok_encoding *e,
                     api_error *err)
{
    static const char DOC[] = "{document}";
    const char *tpl = o->pair_template, *doc = strstr(tpl, DOC), *after = doc + sizeof DOC - 1;
    const char *qs = json_string_value(q);
    const size_t qn = json_string_length(q);
    strbuf hb = {0}, tb = {0};
    put_filled(&hb, tpl, (size_t)(doc - tpl), qs, qn);
    const size_t before = hb.failed ? 0 : text_chars(hb.s, hb.len); /* the document's start */
    strbuf_put(&hb, json_string_value(d), json_string_length(d));
    put_filled(&tb, after, strlen(after), qs, qn);
    size_t hn = 0, tn = 0, whole = 0;
    char *head = strbuf_detach(&hb, &hn), *tail = strbuf_detach(&tb, &tn);
    tok_encoding rest = {0};
    enc_error ee = {0};
    int rc = 0;
    if (!head || !tail) {
        rc = api_error_set(err, API_UNAVAILABLE, "out of memory");
        goto done;
    }
    const bool cut = (o->flags & TEXT_TRUNCATE) && !(o->flags & TEXT_NO_LIMIT) && max < SIZE_MAX;
    if ((rc = tok_encode(tok, tail, tn, NULL, 0, false, 0, &rest, NULL, &ee)) < 0)
        goto failed;
    if (cut && rest.n >= max) {
        rc = TOO_LARGE("%s: model.rerank_template's text after {document} has %zu tokens; the "
                       "model takes at most %zu (%s)",
                       at, rest.n, max, from);
        goto done;
    }
    if ((rc = tok_encode(tok, head, hn, NULL, 0, false, 0, e, &whole, &ee)) < 0)
        goto failed;
    const size_t room = cut ? max - rest.n : SIZE_MAX;
    if (e->n > room) {
        size_t kept = 0; /* the text before the document's tokens */
        while (kept < e->n && e->stop[kept] <= before)
            kept++;
        if (kept > room) {
            rc = TOO_LARGE("%s: model.rerank_template's text before {document}, the query in it, "
                           "has %zu tokens and the text after it %zu; the model takes at most "
                           "%zu (%s)",
                           at, kept, rest.n, max, from);
            goto done;
        }
        tok_encoding_remove(e, o->direction == TOK_TRUNCATE_LEFT ? kept : room, e->n - room);
    }
    if ((rc = tok_encoding_append(e, &rest, (uint32_t)text_chars(head, hn))) < 0) {
        rc = api_error_set(err, API_UNAVAILABLE, "out of memory");
        goto done;
    }
    if (e->n > max && !(o->flags & TEXT_NO_LIMIT))
        rc =
            TOO_LARGE("%s has %zu tokens, made one text by model.rerank_template; the model "
                      "takes at most %zu (%s)%s",
                      at, whole + rest.n, max, from,
                      o->flags & TEXT_SAY_TRUNCATE ? "; \"truncate\": true cuts the document" : "");
    goto done;
failed:
    rc = api_error_set(err, api_error_of_core(rc), "%s: %s", at,
                       rc == ENC_ENOMEM ? "out of memory" : ee.message);
done:
    tok_encoding_free(&rest);
    free(head);
    free(tail);
    return rc;
}

/* One item: a string, or [a, b] (with TEXT_IDS, or a list of token ids); at
 * names it ("text", "text[3]"). */
static int one(const tok_tokenizer *tok, const json_t *item, const char *at, const text_options *o,
               size_t max, const char *from, scratch *sc, tok_encoding *e, api_error *err)
{
    const json_t *a = item, *b = NULL;
    if ((o->flags & TEXT_IDS) && text_is_ids(item))
        return ids_item(tok, item, at, o, max, from, sc, e, err);
    if (json_is_array(item)) {
        if (json_array_size(item) != 2 || !json_is_string(json_array_get(item, 0)) ||
            !json_is_string(json_array_get(item, 1)))
            return BAD("%s must be a string or a [text, text_pair] pair of strings", at);
        a = json_array_get(item, 0);
        b = json_array_get(item, 1);
        if (o->prompt_given && (!o->pair_prompt || o->pair_template))
            return BAD("%s is a [text, text_pair] pair; prompt_name is only used with single "
                       "texts%s",
                       at,
                       o->pair_template ? " (a pair takes model.rerank_template's form)"
                                        : " (and a CrossEncoder's pairs)");
        if (o->pair_template)
            return templated(tok, a, b, at, o, max, from, e, err);
    } else if (!json_is_string(item)) {
        return BAD("%s must be a string or a [text, text_pair] pair, not %s", at,
                   fields_kind(item));
    }
    size_t alen = json_string_length(a);
    const char *atext = json_string_value(a);
    if (o->prompt && (!b || o->pair_prompt) && !(atext = prompted(sc, o->prompt, atext, &alen)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    enc_error ee = {0};
    size_t whole = 0;
    const bool cut = (o->flags & TEXT_TRUNCATE) && !(o->flags & TEXT_NO_LIMIT);
    int rc = tok_encode_dir(tok, atext, alen, b ? json_string_value(b) : NULL,
                            b ? json_string_length(b) : 0, (o->flags & TEXT_SPECIALS) != 0,
                            cut && max < SIZE_MAX ? max : 0, o->direction, e, &whole, &ee);
    if (rc < 0)
        return api_error_set(err, api_error_of_core(rc), "%s: %s", at,
                             rc == ENC_ENOMEM ? "out of memory" : ee.message);
    if (e->n == 0 && !(o->flags & TEXT_ALLOW_EMPTY))
        return BAD("%s has no tokens: the tokenizer makes none of it and adds no special tokens",
                   at);
    if (e->n > max && !(o->flags & TEXT_NO_LIMIT))
        return TOO_LARGE(
            "%s has %zu tokens; the model takes at most %zu (%s)%s", at, whole, max, from,
            o->flags & TEXT_SAY_TRUNCATE ? "; \"truncate\": true cuts it to that" : "");
    return 0;
}

int text_tokenize(const json_t *v, const char *field, const api_ctx *ctx, const text_options *o,
                  text_batch *out, api_error *err)
{
    memset(out, 0, sizeof *out);
    const tok_tokenizer *tok = ctx->tokenizer;
    if (!tok)
        return BAD("%s needs a tokenizer, and the served model has none (a model.dir with "
                   "tokenizer.json, or model.tokenizer); send input_ids or embeddings",
                   field);
    /* ["a", "b"]: two texts; a pair is [[a, b]]; with TEXT_IDS, [1, 2] one
     * sequence of ids and [[1, 2], "a"] two sequences. */
    const bool list = json_is_array(v) && !((o->flags & TEXT_IDS) && text_is_ids(v));
    if (!json_is_string(v) && !list && !json_is_array(v))
        return BAD("%s must be %s, not %s", field, FORM, fields_kind(v));
    const size_t B = list ? json_array_size(v) : 1;
    if (B == 0)
        return BAD("%s is an empty list; expected %s", field, FORM);
    if (ctx->max_batch > 0 && B > (size_t)ctx->max_batch)
        return TOO_LARGE("%s has %zu texts; limits.max_batch is %d", field, B, ctx->max_batch);
    if (!(out->enc = calloc(B, sizeof *out->enc)))
        return api_error_set(err, API_UNAVAILABLE, "out of memory");
    out->B = B;
    out->batched = list;
    const char *from;
    const size_t max = text_max_tokens(ctx, &from);
    scratch sc = {0};
    int rc = 0;
    text_options with = *o;
    with.pair_template = ctx->pair_template;
    o = &with;
    for (size_t b = 0; b < B && rc == 0; b++) {
        char at[64];
        if (list)
            snprintf(at, sizeof at, "%s[%zu]", field, b);
        else
            snprintf(at, sizeof at, "%s", field);
        rc = one(tok, list ? json_array_get(v, b) : v, at, o, max, from, &sc, &out->enc[b], err);
        out->total += out->enc[b].n;
        if (out->enc[b].n > out->longest)
            out->longest = out->enc[b].n;
    }
    free(sc.buf);
    if (rc < 0)
        text_batch_free(out);
    return rc;
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
    TEXT_FIELD_TRUNCATE,
    TEXT_FIELD_DIRECTION,
    TEXT_FIELD_PROMPT_NAME,
};
const field_table text_tokenize_fields = FIELD_TABLE("field", TOKENIZE_FIELDS);

json_t *text_tokenize_request(const char *body, size_t len, const api_ctx *ctx, api_error *err)
{
    json_t *root = fields_load(body, len, "text", err), *out = NULL;
    if (!root)
        return NULL;
    text_batch tb = {0};
    text_options o;
    if (!json_is_object(root)) {
        BAD("the request body must be a JSON object, not %s", fields_kind(root));
        goto done;
    }
    /* "truncate" false unless given, whatever server.auto_truncate says:
     * counting tokens is what this route is for, and TEI's /tokenize never
     * cuts */
    if (fields_check(&text_tokenize_fields, root, "", err) < 0 ||
        text_read_options(root, ctx, TEXT_OPT_PROMPT, &o, err) < 0)
        goto done;
    o.flags |=
        TEXT_ALLOW_EMPTY | (fields_bool(root, "add_special_tokens", true) ? TEXT_SPECIALS : 0);
    if (!(o.flags & TEXT_TRUNCATE))
        o.flags |= TEXT_NO_LIMIT;
    if (text_tokenize(fields_get(root, "text"), "text", ctx, &o, &tb, err) < 0)
        goto done;
    json_t *lists = json_array();
    out = json_pack("{s:o}", "tokens", lists);
    for (size_t b = 0; out && lists && b < tb.B; b++)
        if (json_array_append_new(lists, text_tokens_json(ctx->tokenizer, &tb.enc[b])) < 0) {
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
