/* unigram.c - the Unigram model, as tokenizers' models/unigram (model.rs's
 * encode_optimized, SentencePiece's Viterbi): the word cut into the pieces
 * whose scores sum highest, found over a trie of the vocabulary's pieces; a
 * character no piece starts with is unknown (score: the lowest piece's less
 * 10), and a run of unknowns is one piece, looked up again as a whole and
 * else the unk token or, with byte_fallback, its <0xXX> byte tokens. */
#include "tokenizer/unigram.h"
#include "tokenizer/json.h"
#include "tokenizer/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNK_PENALTY 10.0 /* model.rs's K_UNK_PENALTY */

typedef struct unigram {
    tok_model base;
    double *score;    /* (V) each piece's */
    double unk_score; /* min score - UNK_PENALTY */
    int32_t unk_id;   /* -1: none */
    bool byte_fallback;
    int32_t byte_id[256]; /* "<0xXX>"'s id, or -1 */
    /* The trie: node 0 the root; its edges in one open-addressing table
     * over (node << 32 | code point). */
    int32_t *node_tok; /* (nodes) the piece ending at the node, or -1 */
    size_t nodes;
    uint64_t *ekey;  /* (ecap) EKEY_EMPTY when free */
    int32_t *echild; /* (ecap) */
    size_t ecap;
    unsigned ebits;
} unigram;

#define EKEY_EMPTY UINT64_MAX

static size_t edge_slot(const unigram *m, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15u) >> (64 - m->ebits));
}

/* The child of node by cp, or -1. */
static int32_t trie_child(const unigram *m, int32_t node, uint32_t cp)
{
    const uint64_t key = (uint64_t)(uint32_t)node << 32 | cp;
    const size_t mask = m->ecap - 1;
    for (size_t i = edge_slot(m, key);; i = (i + 1) & mask) {
        if (m->ekey[i] == key)
            return m->echild[i];
        if (m->ekey[i] == EKEY_EMPTY)
            return -1;
    }
}

/* The child of node by cp, added when missing (the table has room: it was
 * sized for every piece's characters). */
static int32_t trie_add(unigram *m, int32_t node, uint32_t cp)
{
    const uint64_t key = (uint64_t)(uint32_t)node << 32 | cp;
    const size_t mask = m->ecap - 1;
    size_t i = edge_slot(m, key);
    for (; m->ekey[i] != EKEY_EMPTY; i = (i + 1) & mask)
        if (m->ekey[i] == key)
            return m->echild[i];
    m->ekey[i] = key;
    m->echild[i] = (int32_t)m->nodes;
    m->node_tok[m->nodes] = -1;
    return (int32_t)m->nodes++;
}

/* ---- one word ------------------------------------------------------------- */

/* The best path's last piece ending at each position (encode_optimized's
 * BestPathNode). */
typedef struct best {
    double score;  /* 0 until a path reaches here, as tokenizers' default */
    int32_t start; /* -1: none yet */
    int32_t id;
} best;

/* A run [a, b) of unknown characters (fused) as tokens: the run looked up
 * as a piece, else its bytes' tokens, else the unk token (model.rs's
 * tokenize). */
static int push_unknown(const unigram *m, const tok_str *word, size_t a, size_t b, tok_toks *out)
{
    char sbuf[256];
    char *buf = 4 * (b - a) <= sizeof sbuf ? sbuf : malloc(4 * (b - a));
    if (!buf)
        return ENC_ENOMEM;
    size_t len = 0;
    for (size_t i = a; i < b; i++)
        len += (size_t)tok_utf8_put(word->cp[i], buf + len);
    const uint32_t os = word->os[a], oe = word->oe[b - 1];
    int rc = 0;
    int32_t id = tok_vocab_find(&m->base.vocab, buf, len);
    if (id < 0 && m->byte_fallback) {
        size_t k = 0;
        while (k < len && m->byte_id[(unsigned char)buf[k]] >= 0)
            k++;
        if (k == len) {
            for (k = 0; k < len && rc == 0; k++)
                rc = tok_toks_push(out, m->byte_id[(unsigned char)buf[k]], os, oe);
            goto done;
        }
    }
    rc = tok_toks_push(out, id >= 0 ? id : m->unk_id, os, oe);
done:
    if (buf != sbuf)
        free(buf);
    return rc;
}

static int unigram_tokenize(const tok_model *base, const tok_str *word, tok_toks *out)
{
    const unigram *m = (const unigram *)base;
    const size_t n = word->n;
    if (n >= INT32_MAX)
        return ENC_ELIMIT;
    best sbp[64];
    best *bp = n + 1 <= sizeof sbp / sizeof *sbp ? sbp : malloc((n + 1) * sizeof *bp);
    if (!bp)
        return ENC_ENOMEM;
    for (size_t i = 0; i <= n; i++)
        bp[i] = (best){0.0, -1, 0};

    int rc = 0;
    for (size_t start = 0; start < n; start++) {
        const double here = bp[start].score;
        bool single = false;
        int32_t node = 0;
        for (size_t k = start; k < n; k++) {
            if ((node = trie_child(m, node, word->cp[k])) < 0)
                break;
            const int32_t id = m->node_tok[node];
            if (id < 0)
                continue;
            const double cand = m->score[id] + here;
            best *t = &bp[k + 1];
            if (t->start < 0 || cand > t->score)
                *t = (best){cand, (int32_t)start, id};
            if (k == start)
                single = true;
        }
        if (!single) {
            const double cand = m->unk_score + here;
            best *t = &bp[start + 1];
            if (t->start < 0 || cand > t->score) {
                if (m->unk_id < 0) {
                    rc = ENC_EINVAL; /* tokenizers' MissingUnkId */
                    goto done;
                }
                *t = (best){cand, (int32_t)start, m->unk_id};
            }
        }
    }

    /* Back from the end: the path's pieces, written over bp[].start as the
     * next piece's start so the walk can go forward. */
    int32_t next = (int32_t)n;
    for (size_t end = n; end > 0;) {
        const size_t s = (size_t)bp[end].start;
        bp[end].start = next;
        next = (int32_t)end;
        end = s;
    }
    /* now from 0: piece [a, b) with b = next, its id at bp[b].id */
    size_t a = 0;
    int32_t b = next;
    size_t run = SIZE_MAX; /* the start of a run of unk pieces */
    while (a < n) {
        const int32_t id = bp[b].id;
        if (id == m->unk_id) {
            if (run == SIZE_MAX)
                run = a;
        } else {
            if (run != SIZE_MAX && (rc = push_unknown(m, word, run, a, out)) < 0)
                goto done;
            run = SIZE_MAX;
            if ((rc = tok_toks_push(out, id, word->os[a], word->oe[b - 1])) < 0)
                goto done;
        }
        a = (size_t)b;
        b = bp[b].start;
    }
    if (run != SIZE_MAX)
        rc = push_unknown(m, word, run, n, out);
done:
    if (bp != sbp)
        free(bp);
    return rc;
}

/* ---- loading --------------------------------------------------------------- */

static void unigram_free(tok_model *base)
{
    unigram *m = (unigram *)base;
    tok_vocab_free(&m->base.vocab);
    free(m->score);
    free(m->node_tok);
    free(m->ekey);
    free(m->echild);
    free(m);
}

static const tok_model_ops unigram_ops = {unigram_free, unigram_tokenize};

/* The pieces: vocab is [[piece, score], ...], ids by position. */
static int load_vocab(unigram *m, const json_t *vocab, const char *path, enc_error *err)
{
    if (!json_is_array(vocab))
        return enc_error_set(err, ENC_EFORMAT, "%s.vocab must be an array of [piece, score]", path);
    const size_t n = json_array_size(vocab);
    if (n >= INT32_MAX)
        return enc_error_set(err, ENC_ELIMIT, "%s.vocab: %zu pieces is too many", path, n);
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(vocab, i);
        const json_t *piece = json_array_get(e, 0), *score = json_array_get(e, 1);
        if (json_array_size(e) != 2 || !json_is_string(piece) || !json_is_number(score))
            return enc_error_set(err, ENC_EFORMAT, "%s.vocab[%zu] must be [piece, score]", path, i);
        chars += json_string_length(piece);
    }
    if (tok_vocab_init(&m->base.vocab, n) < 0 ||
        !(m->score = malloc((n ? n : 1) * sizeof *m->score)))
        return enc_error_set(err, ENC_ENOMEM, "%s.vocab: out of memory", path);
    m->ebits = 4;
    while (((size_t)1 << m->ebits) < 2 * chars)
        m->ebits++;
    m->ecap = (size_t)1 << m->ebits;
    m->ekey = malloc(m->ecap * sizeof *m->ekey);
    m->echild = malloc(m->ecap * sizeof *m->echild);
    m->node_tok = malloc((chars + 1) * sizeof *m->node_tok);
    if (!m->ekey || !m->echild || !m->node_tok)
        return enc_error_set(err, ENC_ENOMEM, "%s.vocab: out of memory", path);
    memset(m->ekey, 0xff, m->ecap * sizeof *m->ekey);
    m->node_tok[0] = -1;
    m->nodes = 1;

    double min_score = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(vocab, i);
        const char *s = json_string_value(json_array_get(e, 0));
        const size_t len = json_string_length(json_array_get(e, 0));
        const int rc = tok_vocab_set(&m->base.vocab, (int32_t)i, s, len);
        if (rc == ENC_EFORMAT)
            return enc_error_set(err, ENC_EFORMAT,
                                 "%s.vocab[%zu]: the piece \"%.60s\" is there already", path, i, s);
        if (rc < 0)
            return enc_error_set(err, rc, "%s.vocab: out of memory", path);
        m->score[i] = json_number_value(json_array_get(e, 1));
        if (m->score[i] < min_score)
            min_score = m->score[i];
        if (len == 0)
            continue; /* the trie's root: never matched */
        int32_t node = 0;
        for (size_t k = 0; k < len;) {
            size_t l;
            const uint32_t cp = tok_utf8_get((const unsigned char *)s + k, &l);
            node = trie_add(m, node, cp);
            k += l;
        }
        m->node_tok[node] = (int32_t)i;
    }
    m->unk_score = min_score - UNK_PENALTY;
    return 0;
}

tok_model *tok_unigram_new(const json_t *j, const char *path, enc_error *err)
{
    static const char *const keys[] = {"type", "vocab", "unk_id", "byte_fallback", NULL};
    if (tok_json_check_keys(j, path, keys, err) < 0)
        return NULL;
    const json_t *vocab = json_object_get(j, "vocab");
    const json_t *unk = json_object_get(j, "unk_id");
    const json_t *fallback = json_object_get(j, "byte_fallback");
    if (!vocab) {
        enc_error_set(err, ENC_EFORMAT, "%s.vocab is missing", path);
        return NULL;
    }
    /* unk_id is an Option (null: none), byte_fallback a plain bool */
    if (unk && !json_is_null(unk) && (!json_is_integer(unk) || json_integer_value(unk) < 0)) {
        enc_error_set(err, ENC_EFORMAT, "%s.unk_id must be null or an integer from 0", path);
        return NULL;
    }
    if (fallback && !json_is_boolean(fallback)) {
        enc_error_set(err, ENC_EFORMAT, "%s.byte_fallback must be true or false", path);
        return NULL;
    }

    unigram *m = calloc(1, sizeof *m);
    if (!m) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    m->base.ops = &unigram_ops;
    m->byte_fallback = fallback && json_is_true(fallback);
    m->unk_id = -1;
    if (load_vocab(m, vocab, path, err) < 0)
        goto fail;
    if (json_is_integer(unk)) {
        if (m->base.vocab.n == 0) {
            enc_error_set(err, ENC_EFORMAT, "%s.vocab is empty but unk_id needs a piece", path);
            goto fail;
        }
        if ((size_t)json_integer_value(unk) >= m->base.vocab.n) {
            enc_error_set(err, ENC_EFORMAT, "%s.unk_id: %lld is not below the %zu pieces", path,
                          (long long)json_integer_value(unk), m->base.vocab.n);
            goto fail;
        }
        m->unk_id = (int32_t)json_integer_value(unk);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = tok_vocab_find(&m->base.vocab, name, 6);
    }
    return &m->base;
fail:
    unigram_free(&m->base);
    return NULL;
}
