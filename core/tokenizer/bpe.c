/* bpe.c - the BPE model, as tokenizers' models/bpe (model.rs, word.rs): a
 * word split into its characters' tokens (continuing_subword_prefix on all
 * but the first, end_of_word_suffix on the last; an unknown one as unk_token,
 * fused when fuse_unk, or as its <0xXX> byte tokens when byte_fallback), then
 * merged by rank with a priority queue of candidate merges, as word.rs's
 * merge_all: O(n log n) in the word's length.  No dropout: attnd tokenizes
 * deterministically. */
#include "tokenizer/bpe.h"
#include "tokenizer/json.h"
#include "tokenizer/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The characters below SMALL_CP have their tokens looked up once, at load:
 * byte-level BPE's alphabet (U+0021..U+0143) is among them. */
#define SMALL_CP 512

typedef struct bpe {
    tok_model base;
    /* merges: open addressing over the pair (left id << 32 | right id) */
    uint64_t *mkeys; /* (mcap) MKEY_EMPTY when free */
    uint32_t *mrank; /* (mcap) the rank: its index among the merges */
    int32_t *mnew;   /* (mcap) the merged token's id */
    size_t mcap;
    unsigned mbits;
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix ("" when none) */
    size_t prefix_len, suffix_len;
    bool has_unk; /* unk_token is set */
    int32_t unk;  /* its id, -1 when not in the vocabulary */
    bool fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_id[256];       /* "<0xXX>"'s id, or -1 */
    int32_t small[4][SMALL_CP]; /* [!first | last << 1][cp]: the char's token id or -1 */
} bpe;

#define MKEY_EMPTY UINT64_MAX

static uint64_t pair_key(int32_t a, int32_t b)
{
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static size_t pair_slot(const bpe *m, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15u) >> (64 - m->mbits));
}

/* The merge of (a, b): true with its rank and new id. */
static bool merge_find(const bpe *m, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id)
{
    const uint64_t key = pair_key(a, b);
    const size_t mask = m->mcap - 1;
    for (size_t i = pair_slot(m, key);; i = (i + 1) & mask) {
        if (m->mkeys[i] == key) {
            *rank = m->mrank[i];
            *new_id = m->mnew[i];
            return true;
        }
        if (m->mkeys[i] == MKEY_EMPTY)
            return false;
    }
}

/* tokenizers collects the merges into a map, so a pair listed twice keeps
 * the later rank. */
static void merge_put(bpe *m, int32_t a, int32_t b, uint32_t rank, int32_t new_id)
{
    const uint64_t key = pair_key(a, b);
    const size_t mask = m->mcap - 1;
    size_t i = pair_slot(m, key);
    while (m->mkeys[i] != MKEY_EMPTY && m->mkeys[i] != key)
        i = (i + 1) & mask;
    m->mkeys[i] = key;
    m->mrank[i] = rank;
    m->mnew[i] = new_id;
}

/* ---- one word -------------------------------------------------------------- */

/* word.rs's Symbol: a token, its neighbours, and its length in the word's
 * bytes (0: merged into its left neighbour). */
typedef struct sym {
    int32_t c, prev, next;
    uint32_t len;
} sym;

/* A candidate merge of the symbol at pos with its next; the queue pops the
 * lowest rank first, then the leftmost. */
typedef struct cand {
    uint32_t rank, pos;
    int32_t new_id;
} cand;

/* One word's symbols and queue: in the struct for a short word, on the
 * heap past that. */
typedef struct work {
    sym *s;
    size_t n, cap;
    cand *q;
    size_t qn, qcap;
    sym s_in[48];
    cand q_in[96];
} work;

static void work_init(work *w)
{
    w->s = w->s_in;
    w->cap = sizeof w->s_in / sizeof *w->s_in;
    w->n = 0;
    w->q = w->q_in;
    w->qcap = sizeof w->q_in / sizeof *w->q_in;
    w->qn = 0;
}

static void work_free(work *w)
{
    if (w->s != w->s_in)
        free(w->s);
    if (w->q != w->q_in)
        free(w->q);
}

/* Doubles an array that may still be the struct's own (inline). */
static void *grow(void *p, const void *inline_buf, size_t *cap, size_t size)
{
    void *np = p == inline_buf ? malloc(2 * *cap * size) : realloc(p, 2 * *cap * size);
    if (np && p == inline_buf)
        memcpy(np, p, *cap * size);
    if (np)
        *cap *= 2;
    return np;
}

static int sym_add(work *w, int32_t c, uint32_t len)
{
    if (w->n == w->cap) {
        sym *s = grow(w->s, w->s_in, &w->cap, sizeof *s);
        if (!s)
            return ENC_ENOMEM;
        w->s = s;
    }
    if (w->n)
        w->s[w->n - 1].next = (int32_t)w->n;
    w->s[w->n] = (sym){c, (int32_t)w->n - 1, -1, len};
    w->n++;
    return 0;
}

static bool cand_less(const cand *a, const cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static int queue_push(work *w, cand c)
{
    if (w->qn == w->qcap) {
        cand *q = grow(w->q, w->q_in, &w->qcap, sizeof *q);
        if (!q)
            return ENC_ENOMEM;
        w->q = q;
    }
    size_t i = w->qn++;
    while (i > 0 && cand_less(&c, &w->q[(i - 1) / 2])) {
        w->q[i] = w->q[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->q[i] = c;
    return 0;
}

static cand queue_pop(work *w)
{
    const cand top = w->q[0];
    const cand last = w->q[--w->qn];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= w->qn)
            break;
        if (k + 1 < w->qn && cand_less(&w->q[k + 1], &w->q[k]))
            k++;
        if (!cand_less(&w->q[k], &last))
            break;
        w->q[i] = w->q[k];
        i = k;
    }
    if (w->qn)
        w->q[i] = last;
    return top;
}

/* Pushes the merge of the symbols at pos and next, if there is one. */
static int queue_pair(const bpe *m, work *w, size_t pos, size_t next)
{
    uint32_t rank;
    int32_t new_id;
    if (!merge_find(m, w->s[pos].c, w->s[next].c, &rank, &new_id))
        return 0;
    return queue_push(w, (cand){rank, (uint32_t)pos, new_id});
}

/* word.rs's merge_all, without dropout.  An entry is stale when its symbol
 * was merged away, has no right neighbour any more, or the pair there now
 * merges into another token (only the new id is compared, as word.rs does). */
static int merge_all(const bpe *m, work *w)
{
    for (size_t i = 0; i + 1 < w->n; i++)
        if (queue_pair(m, w, i, i + 1) < 0)
            return ENC_ENOMEM;
    while (w->qn) {
        const cand top = queue_pop(w);
        sym *cur = &w->s[top.pos];
        if (cur->len == 0 || cur->next < 0)
            continue;
        const size_t next_pos = (size_t)cur->next;
        const sym right = w->s[next_pos];
        uint32_t rank;
        int32_t new_id;
        if (!merge_find(m, cur->c, right.c, &rank, &new_id) || new_id != top.new_id)
            continue;
        cur->c = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        w->s[next_pos].len = 0;
        if (right.next >= 0)
            w->s[right.next].prev = (int32_t)top.pos;
        if (cur->prev >= 0 && queue_pair(m, w, (size_t)cur->prev, top.pos) < 0)
            return ENC_ENOMEM;
        cur = &w->s[top.pos];
        if (cur->next >= 0 && queue_pair(m, w, top.pos, (size_t)cur->next) < 0)
            return ENC_ENOMEM;
    }
    return 0;
}

static uint32_t cp_len(uint32_t cp)
{
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* The token id of the word's character cp, with the prefix when it is not
 * the first and the suffix when it is the last; buf has the room for it.
 * *s and *slen: the string looked up. */
static int32_t char_id(const bpe *m, uint32_t cp, bool first, bool last, char *buf, char **s,
                       size_t *slen)
{
    size_t len = 0;
    if (!first) {
        memcpy(buf, m->prefix, m->prefix_len);
        len = m->prefix_len;
    }
    len += (size_t)tok_utf8_put(cp, buf + len);
    if (last) {
        memcpy(buf + len, m->suffix, m->suffix_len);
        len += m->suffix_len;
    }
    *s = buf;
    *slen = len;
    if (cp < SMALL_CP)
        return m->small[(first ? 0 : 1) | (last ? 2 : 0)][cp];
    return tok_vocab_find(&m->base.vocab, buf, len);
}

/* model.rs's merge_word: the word's symbols before merging.  Lengths are
 * the bytes of the character (the prefix and suffix do not count), except a
 * byte-fallback token, which counts 1 for each byte of the prefixed string
 * as tokenizers has it. */
static int word_symbols(const bpe *m, const tok_str *word, work *w, char *buf)
{
    int32_t unk_id = -1; /* a pending unk: its id and length */
    uint32_t unk_len = 0;
    for (size_t i = 0; i < word->n; i++) {
        const uint32_t cp = word->cp[i];
        const uint32_t blen = cp_len(cp);
        char *s;
        size_t slen;
        const int32_t id = char_id(m, cp, i == 0, i + 1 == word->n, buf, &s, &slen);
        if (id >= 0) {
            if (unk_id >= 0 && sym_add(w, unk_id, unk_len) < 0)
                return ENC_ENOMEM;
            unk_id = -1;
            if (sym_add(w, id, blen) < 0)
                return ENC_ENOMEM;
            continue;
        }
        if (m->byte_fallback) {
            size_t k = 0;
            while (k < slen && m->byte_id[(unsigned char)s[k]] >= 0)
                k++;
            if (k == slen) {
                /* A pending unk stays pending: tokenizers adds these first. */
                for (k = 0; k < slen; k++)
                    if (sym_add(w, m->byte_id[(unsigned char)s[k]], 1) < 0)
                        return ENC_ENOMEM;
                continue;
            }
        }
        if (!m->has_unk)
            continue; /* tokenizers drops the character */
        if (unk_id >= 0 && m->fuse_unk) {
            unk_len += blen;
            continue;
        }
        if (unk_id >= 0 && sym_add(w, unk_id, unk_len) < 0)
            return ENC_ENOMEM;
        if (m->unk < 0)
            return ENC_EINVAL; /* UnkTokenOutOfVocabulary */
        unk_id = m->unk;
        unk_len = blen;
    }
    if (unk_id >= 0 && sym_add(w, unk_id, unk_len) < 0)
        return ENC_ENOMEM;
    return 0;
}

/* The symbols as tokens.  tokenizers gives each token the bytes
 * [pos, pos + len) of the word, pos running over the lengths; here the token
 * spans the characters holding its first and last byte (the last character
 * for a byte past the word's end: see word_symbols). */
static int emit(const work *w, const tok_str *word, tok_toks *out)
{
    size_t a = 0;      /* the character holding byte pos */
    uint32_t a_at = 0; /* its first byte */
    uint32_t pos = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (w->s[i].len == 0)
            continue;
        while (a + 1 < word->n && a_at + cp_len(word->cp[a]) <= pos)
            a_at += cp_len(word->cp[a++]);
        const uint32_t last = pos + w->s[i].len - 1;
        size_t b = a;
        uint32_t b_at = a_at;
        while (b + 1 < word->n && b_at + cp_len(word->cp[b]) <= last)
            b_at += cp_len(word->cp[b++]);
        if (tok_toks_push(out, w->s[i].c, word->os[a], word->oe[b]) < 0)
            return ENC_ENOMEM;
        pos = last + 1;
    }
    return 0;
}

static int bpe_tokenize(const tok_model *base, const tok_str *word, tok_toks *out)
{
    const bpe *m = (const bpe *)base;
    char sbuf[256];
    const size_t need = m->prefix_len + 4 + m->suffix_len;
    const size_t whole = 4 * word->n;
    if (word->n > INT32_MAX / need)
        return ENC_ELIMIT; /* symbols (at most need a character) are counted in int32 */
    char *buf = sbuf;
    if ((need > sizeof sbuf || (m->ignore_merges && whole > sizeof sbuf)) &&
        !(buf = malloc(need > whole ? need : whole)))
        return ENC_ENOMEM;
    work w;
    work_init(&w);
    int rc = 0;
    if (m->ignore_merges) {
        size_t len = 0;
        for (size_t i = 0; i < word->n; i++)
            len += (size_t)tok_utf8_put(word->cp[i], buf + len);
        const int32_t id = tok_vocab_find(&m->base.vocab, buf, len);
        if (id >= 0) {
            rc = tok_toks_push(out, id, word->os[0], word->oe[word->n - 1]);
            goto done;
        }
    }
    if ((rc = word_symbols(m, word, &w, buf)) == 0 && (rc = merge_all(m, &w)) == 0)
        rc = emit(&w, word, out);
done:
    work_free(&w);
    if (buf != sbuf)
        free(buf);
    return rc;
}

/* ---- loading ------------------------------------------------------------------ */

static void bpe_free(tok_model *base)
{
    bpe *m = (bpe *)base;
    tok_vocab_free(&m->base.vocab);
    free(m->mkeys);
    free(m->mrank);
    free(m->mnew);
    free(m->prefix);
    free(m->suffix);
    free(m);
}

static const tok_model_ops bpe_ops = {bpe_free, bpe_tokenize};

static char *dup_or_empty(const char *s, size_t *len)
{
    *len = s ? strlen(s) : 0;
    char *d = malloc(*len + 1);
    if (d) {
        memcpy(d, s ? s : "", *len);
        d[*len] = '\0';
    }
    return d;
}

/* The merge at index i of "merges": a pair of strings, or tokenizers'
 * earlier "a b" form (split at its one space).  0, 1 to skip it (a
 * "#version" line of the earlier form), or ENC_EFORMAT. */
static int merge_parts(const json_t *e, bool legacy, const char *path, size_t i, const char **a,
                       size_t *alen, const char **b, size_t *blen, enc_error *err)
{
    if (legacy) {
        if (!json_is_string(e))
            return enc_error_set(err, ENC_EFORMAT,
                                 "%s.merges[%zu] must be a string \"a b\" like the others", path,
                                 i);
        const char *s = json_string_value(e);
        const size_t len = json_string_length(e);
        if (strncmp(s, "#version", 8) == 0)
            return 1;
        const char *sp = memchr(s, ' ', len);
        if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
            return enc_error_set(err, ENC_EFORMAT,
                                 "%s.merges[%zu]: \"%.60s\" is not two tokens split by one space",
                                 path, i, s);
        *a = s;
        *alen = (size_t)(sp - s);
        *b = sp + 1;
        *blen = len - *alen - 1;
        return 0;
    }
    if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(json_array_get(e, 0)) ||
        !json_is_string(json_array_get(e, 1)))
        return enc_error_set(err, ENC_EFORMAT, "%s.merges[%zu] must be a pair of strings", path, i);
    *a = json_string_value(json_array_get(e, 0));
    *alen = json_string_length(json_array_get(e, 0));
    *b = json_string_value(json_array_get(e, 1));
    *blen = json_string_length(json_array_get(e, 1));
    return 0;
}

static int load_merges(bpe *m, const json_t *merges, const char *path, enc_error *err)
{
    if (!json_is_array(merges))
        return enc_error_set(err, ENC_EFORMAT, "%s.merges must be an array", path);
    const size_t n = json_array_size(merges);
    /* serde tries the pairs first: an empty array is either */
    const bool legacy = n > 0 && json_is_string(json_array_get(merges, 0));
    m->mbits = 4;
    while (((size_t)1 << m->mbits) < 2 * n)
        m->mbits++;
    m->mcap = (size_t)1 << m->mbits;
    m->mkeys = malloc(m->mcap * sizeof *m->mkeys);
    m->mrank = malloc(m->mcap * sizeof *m->mrank);
    m->mnew = malloc(m->mcap * sizeof *m->mnew);
    char *buf = NULL;
    size_t bufcap = 0;
    if (!m->mkeys || !m->mrank || !m->mnew)
        return enc_error_set(err, ENC_ENOMEM, "%s.merges: out of memory", path);
    memset(m->mkeys, 0xff, m->mcap * sizeof *m->mkeys);
    uint32_t rank = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = "", *b = "";
        size_t alen = 0, blen = 0;
        rc = merge_parts(json_array_get(merges, i), legacy, path, i, &a, &alen, &b, &blen, err);
        if (rc == 1)
            continue;
        if (rc < 0)
            break;
        const int32_t ia = tok_vocab_find(&m->base.vocab, a, alen);
        const int32_t ib = tok_vocab_find(&m->base.vocab, b, blen);
        if (ia < 0 || ib < 0) {
            rc = enc_error_set(err, ENC_EFORMAT, "%s.merges[%zu]: \"%.60s\" is not in %s.vocab",
                               path, i, ia < 0 ? a : b, path);
            break;
        }
        /* The merged token: a, then b less the prefix's length (tokenizers
         * cuts that many bytes whatever they are). */
        if (blen < m->prefix_len) {
            rc = enc_error_set(err, ENC_EFORMAT,
                               "%s.merges[%zu]: \"%.60s\" is shorter than "
                               "continuing_subword_prefix",
                               path, i, b);
            break;
        }
        const size_t len = alen + blen - m->prefix_len;
        if (len > bufcap) {
            char *nb = realloc(buf, len);
            if (!nb) {
                rc = enc_error_set(err, ENC_ENOMEM, "%s.merges: out of memory", path);
                break;
            }
            buf = nb;
            bufcap = len;
        }
        memcpy(buf, a, alen);
        memcpy(buf + alen, b + m->prefix_len, blen - m->prefix_len);
        const int32_t id = tok_vocab_find(&m->base.vocab, buf, len);
        if (id < 0) {
            rc = enc_error_set(err, ENC_EFORMAT,
                               "%s.merges[%zu]: the merged token \"%.*s\" is not in %s.vocab", path,
                               i, (int)(len < 60 ? len : 60), buf, path);
            break;
        }
        merge_put(m, ia, ib, rank++, id);
    }
    free(buf);
    return rc;
}

/* dropout: absent, null or 0 (tokenizers treats 0 as none). */
static int check_dropout(const json_t *j, const char *path, enc_error *err)
{
    const json_t *d = json_object_get(j, "dropout");
    if (!d || json_is_null(d))
        return 0;
    if (!json_is_number(d))
        return enc_error_set(err, ENC_EFORMAT, "%s.dropout must be a number or null", path);
    if (json_number_value(d) == 0.0)
        return 0;
    char shown[32];
    snprintf(shown, sizeof shown, "%g", json_number_value(d));
    return enc_error_set(err, ENC_EINVAL,
                         "%s.dropout: %s is not supported (attnd tokenizes deterministically)",
                         path, shown);
}

tok_model *tok_bpe_new(const json_t *j, const char *path, enc_error *err)
{
    static const char *const keys[] = {"type",
                                       "dropout",
                                       "unk_token",
                                       "continuing_subword_prefix",
                                       "end_of_word_suffix",
                                       "fuse_unk",
                                       "byte_fallback",
                                       "ignore_merges",
                                       "vocab",
                                       "merges",
                                       NULL};
    if (tok_json_check_keys(j, path, keys, err) < 0 || check_dropout(j, path, err) < 0)
        return NULL;
    const char *unk = NULL, *prefix = NULL, *suffix = NULL;
    bool fuse = false, fallback = false, ignore = false;
    if (tok_json_string(j, path, "unk_token", NULL, &unk, err) < 0 ||
        tok_json_string(j, path, "continuing_subword_prefix", NULL, &prefix, err) < 0 ||
        tok_json_string(j, path, "end_of_word_suffix", NULL, &suffix, err) < 0 ||
        tok_json_bool(j, path, "fuse_unk", false, &fuse, err) < 0 ||
        tok_json_bool(j, path, "byte_fallback", false, &fallback, err) < 0 ||
        tok_json_bool(j, path, "ignore_merges", false, &ignore, err) < 0)
        return NULL;
    const json_t *vocab = json_object_get(j, "vocab");
    const json_t *merges = json_object_get(j, "merges");
    if (!vocab || !merges) {
        enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, vocab ? "merges" : "vocab");
        return NULL;
    }

    bpe *m = calloc(1, sizeof *m);
    if (!m) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    m->base.ops = &bpe_ops;
    m->prefix = dup_or_empty(prefix, &m->prefix_len);
    m->suffix = dup_or_empty(suffix, &m->suffix_len);
    m->has_unk = unk != NULL;
    m->fuse_unk = fuse;
    m->byte_fallback = fallback;
    m->ignore_merges = ignore;
    char what[96];
    snprintf(what, sizeof what, "%s.vocab", path);
    if (!m->prefix || !m->suffix) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (tok_vocab_from_map(&m->base.vocab, vocab, what, err) < 0 ||
        load_merges(m, merges, path, err) < 0)
        goto fail;
    m->unk = unk ? tok_vocab_find(&m->base.vocab, unk, strlen(unk)) : -1;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = tok_vocab_find(&m->base.vocab, name, 6);
    }
    /* the small table: each character alone, with the prefix, the suffix, both */
    char *buf = malloc(m->prefix_len + m->suffix_len + 4);
    if (!buf) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (int v = 0; v < 4; v++)
        for (uint32_t cp = 0; cp < SMALL_CP; cp++) {
            size_t len = 0;
            if (v & 1) {
                memcpy(buf, m->prefix, m->prefix_len);
                len = m->prefix_len;
            }
            len += (size_t)tok_utf8_put(cp, buf + len);
            if (v & 2) {
                memcpy(buf + len, m->suffix, m->suffix_len);
                len += m->suffix_len;
            }
            m->small[v][cp] = tok_vocab_find(&m->base.vocab, buf, len);
        }
    free(buf);
    return &m->base;
fail:
    bpe_free(&m->base);
    return NULL;
}
