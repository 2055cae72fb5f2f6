/* wordpiece.c - the WordPiece model, as tokenizers' models/wordpiece: each
 * word cut greedily into the longest vocabulary pieces from its start, the
 * pieces after the first looked up with continuing_subword_prefix ("##"); a
 * word longer than max_input_chars_per_word, or with any part no piece
 * matches, is the one unk_token. */
#include "tokenizer/wordpiece.h"
#include "tokenizer/json.h"
#include "tokenizer/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wordpiece {
    tok_model base;
    char *prefix; /* continuing_subword_prefix */
    size_t prefix_len;
    size_t max_chars; /* max_input_chars_per_word */
    int32_t unk;      /* unk_token's id, -1 when not in the vocabulary */
    size_t max_len;   /* the longest token, bytes: longer lookups cannot match */
} wordpiece;

static void wordpiece_free(tok_model *m)
{
    wordpiece *w = (wordpiece *)m;
    tok_vocab_free(&w->base.vocab);
    free(w->prefix);
    free(w);
}

/* The whole word as the unk token.  tokenizers fails the encoding
 * (MissingUnkToken) when unk_token is not in the vocabulary. */
static int push_unk(const wordpiece *w, const tok_str *word, tok_toks *out)
{
    if (w->unk < 0)
        return ENC_EINVAL;
    return tok_toks_push(out, w->unk, word->os[0], word->oe[word->n - 1]);
}

static int wordpiece_tokenize(const tok_model *m, const tok_str *word, tok_toks *out)
{
    const wordpiece *w = (const wordpiece *)m;
    const size_t n = word->n;
    if (n > w->max_chars)
        return push_unk(w, word, out);

    /* The word's UTF-8 after the prefix, and each code point's byte offset. */
    char sbuf[512];
    uint32_t sbo[129];
    const size_t need = w->prefix_len + 4 * n;
    char *buf = need <= sizeof sbuf ? sbuf : malloc(need);
    uint32_t *bo = n + 1 <= sizeof sbo / sizeof *sbo ? sbo : malloc((n + 1) * sizeof *bo);
    int rc = 0;
    if (!buf || !bo) {
        rc = ENC_ENOMEM;
        goto done;
    }
    char *text = buf + w->prefix_len;
    memcpy(buf, w->prefix, w->prefix_len);
    bo[0] = 0;
    for (size_t i = 0; i < n; i++)
        bo[i + 1] = bo[i] + (uint32_t)tok_utf8_put(word->cp[i], text + bo[i]);

    const size_t first = out->n;
    for (size_t start = 0; start < n;) {
        /* The prefixed piece is built in place: the prefix is copied over
         * the bytes just before start, which are never read again. */
        const size_t plen = start > 0 ? w->prefix_len : 0;
        char *piece = text + bo[start] - plen;
        if (plen)
            memcpy(piece, w->prefix, plen);
        /* A piece longer than the longest token cannot match: every
         * character is a byte at least, so start at most max_len on. */
        size_t end = n - start > w->max_len ? start + w->max_len : n;
        int32_t id = -1;
        for (; end > start; end--) {
            const size_t len = plen + bo[end] - bo[start];
            if (len > w->max_len)
                continue;
            id = tok_vocab_find(&w->base.vocab, piece, len);
            if (id >= 0)
                break;
        }
        if (id < 0) {
            out->n = first;
            rc = push_unk(w, word, out);
            goto done;
        }
        if ((rc = tok_toks_push(out, id, word->os[start], word->oe[end - 1])) < 0)
            goto done;
        start = end;
    }
done:
    if (buf != sbuf)
        free(buf);
    if (bo != sbo)
        free(bo);
    return rc;
}

static const tok_model_ops wordpiece_ops = {wordpiece_free, wordpiece_tokenize};

/* A string member serde requires (null is no string). */
static int required_string(const json_t *j, const char *path, const char *key, const char **out,
                           size_t *len, enc_error *err)
{
    const json_t *v = json_object_get(j, key);
    if (!v)
        return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a string", path, key);
    *out = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

tok_model *tok_wordpiece_new(const json_t *j, const char *path, enc_error *err)
{
    static const char *const keys[] = {
        "type",  "unk_token", "continuing_subword_prefix", "max_input_chars_per_word",
        "vocab", NULL};
    char what[96];
    if (tok_json_check_keys(j, path, keys, err) < 0)
        return NULL;
    const char *unk = "", *prefix = "";
    size_t unk_len = 0, prefix_len = 0;
    if (required_string(j, path, "unk_token", &unk, &unk_len, err) < 0 ||
        required_string(j, path, "continuing_subword_prefix", &prefix, &prefix_len, err) < 0)
        return NULL;
    const json_t *mc = json_object_get(j, "max_input_chars_per_word");
    if (!mc) {
        enc_error_set(err, ENC_EFORMAT, "%s.max_input_chars_per_word is missing", path);
        return NULL;
    }
    if (!json_is_integer(mc) || json_integer_value(mc) < 0) {
        enc_error_set(err, ENC_EFORMAT, "%s.max_input_chars_per_word must be an integer from 0",
                      path);
        return NULL;
    }
    const json_t *vocab = json_object_get(j, "vocab");
    if (!vocab) {
        enc_error_set(err, ENC_EFORMAT, "%s.vocab is missing", path);
        return NULL;
    }

    wordpiece *w = calloc(1, sizeof *w);
    if (!w || !(w->prefix = malloc(prefix_len + 1))) {
        free(w);
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    w->base.ops = &wordpiece_ops;
    memcpy(w->prefix, prefix, prefix_len + 1);
    w->prefix_len = prefix_len;
    w->max_chars = (size_t)json_integer_value(mc);
    snprintf(what, sizeof what, "%s.vocab", path);
    if (tok_vocab_from_map(&w->base.vocab, vocab, what, err) < 0) {
        wordpiece_free(&w->base);
        return NULL;
    }
    w->unk = tok_vocab_find(&w->base.vocab, unk, unk_len);
    for (size_t i = 0; i < w->base.vocab.n; i++)
        if (w->base.vocab.lens[i] > w->max_len)
            w->max_len = w->base.vocab.lens[i];
    return &w->base;
}
