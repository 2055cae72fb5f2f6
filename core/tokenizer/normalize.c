/* normalize.c - tok_normalize*: tokenizer.json's normalizers (BertNormalizer, NFC, NFD,
 * NFKC, NFKD, Lowercase, StripAccents, Strip, Replace, Prepend, Nmt,
 * Precompiled, ByteLevel, Sequence), written after Hugging Face tokenizers'
 * src/normalizers and tokenizer/normalizer.rs.
 *
 * Unicode data comes from utf8proc (categories, case, decompositions,
 * compositions, grapheme clusters) and, for Alphabetic, from Oniguruma's
 * property tables (chars.c): each library's Unicode version, not the one of the Rust
 * crates tokenizers was built with (unicode-normalization-alignments is at
 * Unicode 9, Rust's std at 15 or 16), so characters assigned in between can
 * differ. */
#include "tokenizer/normalize.h"

#include "tokenizer/chars.h"
#include "tokenizer/json.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* bert.rs is_whitespace: \t \n \r or White_Space. */
static bool is_bert_whitespace(uint32_t c)
{
    return tok_char_is_whitespace(c);
}

/* ---- (char, change) lists ---------------------------------------------------- */

typedef struct pair {
    uint32_t c;
    uint8_t ccc; /* canonical combining class, for the reordering */
    long change;
} pair;

typedef struct pairs {
    pair *v;
    size_t n, cap;
} pairs;

static int pairs_push(pairs *p, uint32_t c, long change)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        pair *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = (pair){.c = c, .change = change};
    return 0;
}

/* Rebuilds s from the pairs walked over it from its start. */
static int apply_pairs(tok_str *s, const pairs *p, size_t initial_removed)
{
    tok_str_xform x;
    tok_str_xform_begin(&x, s, initial_removed);
    for (size_t i = 0; i < p->n; i++)
        tok_str_xform_push(&x, p->v[i].c, p->v[i].change);
    return tok_str_xform_end(&x);
}

/* NormalizedString::filter: the kept chars, each removing the dropped ones
 * that follow it; dropped chars before the first kept one are the
 * transform's initial_removed. */
static int filter(tok_str *s, bool (*keep)(uint32_t c))
{
    pairs p = {0};
    long removed = 0;
    size_t removed_start = 0;
    bool have_last = false;
    uint32_t last = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        if (keep(s->cp[i])) {
            if (have_last)
                rc = pairs_push(&p, last, -removed);
            else
                removed_start = (size_t)removed;
            last = s->cp[i];
            have_last = true;
            removed = 0;
        } else {
            removed++;
        }
    }
    if (rc == 0 && have_last)
        rc = pairs_push(&p, last, -removed);
    if (rc == 0)
        rc = apply_pairs(s, &p, removed_start);
    free(p.v);
    return rc;
}

/* ---- Unicode normalization forms ------------------------------------------ */

/* Stable sort of v[0, n) by combining class (Decompositions::sort_pending). */
static int sort_by_ccc(pair *v, size_t n)
{
    if (n < 2)
        return 0;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            pair t = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1].ccc > t.ccc; j--)
                v[j] = v[j - 1];
            v[j] = t;
        }
        return 0;
    }
    /* a long run of marks: counting sort, linear */
    pair *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return ENC_ENOMEM;
    size_t count[257] = {0};
    for (size_t i = 0; i < n; i++)
        count[v[i].ccc + 1]++;
    for (size_t k = 1; k < 257; k++)
        count[k] += count[k - 1];
    for (size_t i = 0; i < n; i++)
        tmp[count[v[i].ccc]++] = v[i];
    memcpy(v, tmp, n * sizeof *v);
    free(tmp);
    return 0;
}

static uint8_t ccc_of(uint32_t c)
{
    return (uint8_t)utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

/* unicode-normalization-alignments' Decompositions: each char's full
 * decomposition (first char change 0, the rest +1), then each run of
 * non-starters stably sorted by combining class, the changes going with
 * their chars. */
static int decompose(const tok_str *s, bool compat, pairs *out)
{
    utf8proc_option_t opt = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
    size_t pending = 0; /* start of the run not yet sorted */
    for (size_t i = 0; i < s->n; i++) {
        utf8proc_int32_t buf[32];
        int boundclass = 0;
        utf8proc_ssize_t k =
            utf8proc_decompose_char((utf8proc_int32_t)s->cp[i], buf, 32, opt, &boundclass);
        if (k < 1 || k > 32) {
            buf[0] = (utf8proc_int32_t)s->cp[i];
            k = 1;
        }
        for (utf8proc_ssize_t j = 0; j < k; j++) {
            uint32_t d = (uint32_t)buf[j];
            uint8_t ccc = ccc_of(d);
            if (ccc == 0) { /* a starter: the marks before it are in order */
                if (out->n - pending > 1 && sort_by_ccc(out->v + pending, out->n - pending) < 0)
                    return ENC_ENOMEM;
                pending = out->n;
            }
            if (pairs_push(out, d, j > 0) < 0)
                return ENC_ENOMEM;
            out->v[out->n - 1].ccc = ccc;
        }
    }
    /* (out->v is NULL while nothing is out: no pointer arithmetic on it) */
    return out->n - pending > 1 ? sort_by_ccc(out->v + pending, out->n - pending) : 0;
}

/* The primary composite of a and b, or 0 (utf8proc's composition tables,
 * composition exclusions respected; Hangul included). */
static uint32_t compose(uint32_t a, uint32_t b)
{
    utf8proc_int32_t buf[2] = {(utf8proc_int32_t)a, (utf8proc_int32_t)b};
    utf8proc_ssize_t n = utf8proc_normalize_utf32(buf, 2, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
    return n == 1 ? (uint32_t)buf[0] : 0;
}

/* unicode-normalization-alignments' Recompositions over the decomposed
 * pairs: a composed char carries composee.change + change - 1. */
static int recompose(const pairs *in, pairs *out)
{
    pairs blocked = {0}; /* the marks blocked after the composee */
    bool have_k = false;
    pair k = {0};
    int last_ccc = -1;
    int rc = 0;
    for (size_t i = 0; i < in->n && rc == 0; i++) {
        pair ch = in->v[i];
        int cls = ch.ccc;
        if (!have_k) {
            if (cls != 0) {
                rc = pairs_push(out, ch.c, ch.change);
                continue;
            }
            k = ch;
            have_k = true;
            continue;
        }
        if (last_ccc < 0) {
            uint32_t r = compose(k.c, ch.c);
            if (r) {
                k.c = r;
                k.ccc = ccc_of(r);
                k.change = k.change + ch.change - 1;
                continue;
            }
            if (cls == 0) {
                rc = pairs_push(out, k.c, k.change);
                k = ch;
                continue;
            }
            rc = pairs_push(&blocked, ch.c, ch.change);
            last_ccc = cls;
            continue;
        }
        if (last_ccc >= cls) {
            /* ch is blocked from the composee */
            if (cls == 0) {
                rc = pairs_push(out, k.c, k.change);
                for (size_t j = 0; j < blocked.n && rc == 0; j++)
                    rc = pairs_push(out, blocked.v[j].c, blocked.v[j].change);
                blocked.n = 0;
                k = ch;
                last_ccc = -1;
                continue;
            }
            rc = pairs_push(&blocked, ch.c, ch.change);
            last_ccc = cls;
            continue;
        }
        uint32_t r = compose(k.c, ch.c);
        if (r) {
            k.c = r;
            k.ccc = ccc_of(r);
            k.change = k.change + ch.change - 1;
            continue;
        }
        rc = pairs_push(&blocked, ch.c, ch.change);
        last_ccc = cls;
    }
    if (rc == 0 && have_k)
        rc = pairs_push(out, k.c, k.change);
    for (size_t j = 0; j < blocked.n && rc == 0; j++)
        rc = pairs_push(out, blocked.v[j].c, blocked.v[j].change);
    free(blocked.v);
    return rc;
}

static int unicode_form(tok_str *s, bool compat, bool composed)
{
    pairs d = {0}, c = {0};
    int rc = decompose(s, compat, &d);
    if (rc == 0 && composed)
        rc = recompose(&d, &c);
    if (rc == 0)
        rc = apply_pairs(s, composed ? &c : &d, 0);
    free(d.v);
    free(c.v);
    return rc;
}

/* ---- the simple ones --------------------------------------------------------- */

/* NormalizedString::lowercase: char::to_lowercase per char, so no final
 * sigma rule (Σ is always σ); U+0130 is the one char lowercasing to two. */
static int lowercase(tok_str *s)
{
    pairs p = {0};
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        uint32_t c = s->cp[i];
        if (c == 0x130) {
            rc = pairs_push(&p, 0x69, 0);
            if (rc == 0)
                rc = pairs_push(&p, 0x307, 1);
        } else {
            rc = pairs_push(&p, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c), 0);
        }
    }
    if (rc == 0)
        rc = apply_pairs(s, &p, 0);
    free(p.v);
    return rc;
}

static bool keep_clean(uint32_t c)
{
    return !(c == 0 || c == 0xFFFD || tok_char_is_control(c));
}

static bool keep_unmarked_nonspacing(uint32_t c)
{
    return !tok_char_is_mark_nonspacing(c);
}

static bool keep_unmarked(uint32_t c)
{
    return !tok_char_is_mark(c);
}

static bool keep_nmt(uint32_t c)
{
    return !((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
             c == 0x8F || c == 0x9F);
}

static uint32_t map_nmt(uint32_t c)
{
    if (c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
        (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF ||
        c == 0xFFFD)
        return ' ';
    return c;
}

/* BertNormalizer, in bert.rs's order: clean_text, handle_chinese_chars,
 * strip_accents (NFD then Mn removed), lowercase. */
static int bert(tok_str *s, bool clean, bool chinese, bool strip_accents, bool lower)
{
    int rc = 0;
    if (clean) {
        rc = filter(s, keep_clean);
        /* NormalizedString::map: each char replaced in place (change 0) */
        for (size_t i = 0; rc == 0 && i < s->n; i++)
            if (is_bert_whitespace(s->cp[i]))
                s->cp[i] = ' ';
    }
    if (rc == 0 && chinese) {
        pairs p = {0};
        for (size_t i = 0; i < s->n && rc == 0; i++) {
            uint32_t c = s->cp[i];
            if (tok_char_is_chinese(c)) {
                rc = pairs_push(&p, ' ', 0);
                if (rc == 0)
                    rc = pairs_push(&p, c, 1);
                if (rc == 0)
                    rc = pairs_push(&p, ' ', 1);
            } else {
                rc = pairs_push(&p, c, 0);
            }
        }
        if (rc == 0)
            rc = apply_pairs(s, &p, 0);
        free(p.v);
    }
    if (rc == 0 && strip_accents) {
        rc = unicode_form(s, false, false);
        if (rc == 0)
            rc = filter(s, keep_unmarked_nonspacing);
    }
    if (rc == 0 && lower)
        rc = lowercase(s);
    return rc;
}

/* NormalizedString::lrstrip: leading and trailing White_Space dropped. */
static int strip(tok_str *s, bool left, bool right)
{
    size_t lead = 0, trail = 0;
    if (left)
        while (lead < s->n && tok_char_is_whitespace(s->cp[lead]))
            lead++;
    if (right)
        while (trail < s->n && tok_char_is_whitespace(s->cp[s->n - 1 - trail]))
            trail++;
    if (lead == 0 && trail == 0)
        return 0;
    tok_str_xform x;
    tok_str_xform_begin(&x, s, lead);
    for (size_t i = lead; i + trail < s->n; i++)
        tok_str_xform_push(&x, s->cp[i], 0);
    return tok_str_xform_end(&x);
}

/* NormalizedString::prepend (a transform over the first char only): the
 * prepended chars and the first char all take the first char's span. */
static int prepend(tok_str *s, const uint32_t *text, size_t n)
{
    if (s->n == 0)
        return 0;
    tok_str_xform x;
    tok_str_xform_begin(&x, s, 0);
    for (size_t i = 0; i < n; i++)
        tok_str_xform_push(&x, text[i], i != 0);
    tok_str_xform_push(&x, s->cp[0], 1);
    x.at = 1; /* the end of the transformed range */
    for (size_t i = 1; i < s->n; i++)
        tok_str_xform_push(&x, s->cp[i], 0);
    return tok_str_xform_end(&x);
}

/* ---- Replace ------------------------------------------------------------------- */

typedef struct replace_ctx {
    tok_str_xform *x;
    const uint32_t *content;
    size_t content_n;
} replace_ctx;

/* NormalizedString::replace, one match: the chars before it kept, the match
 * removed, the content inserted (change +1 each: the span of the match's
 * last char, or of the char before an empty match). */
static int replace_match(size_t a, size_t b, void *ctx)
{
    replace_ctx *r = ctx;
    tok_str_xform *x = r->x;
    while (x->at < a)
        tok_str_xform_push(x, x->src->cp[x->at], 0);
    x->at = b;
    for (size_t i = 0; i < r->content_n; i++)
        tok_str_xform_push(x, r->content[i], 1);
    return x->failed ? ENC_ENOMEM : 0;
}

static int replace(tok_str *s, const tok_regex *re, const uint32_t *content, size_t content_n)
{
    tok_str_xform x;
    tok_str_xform_begin(&x, s, 0);
    replace_ctx r = {.x = &x, .content = content, .content_n = content_n};
    int rc = tok_regex_each(re, s, replace_match, &r);
    if (rc < 0) {
        x.failed = 1;
        tok_str_xform_end(&x);
        return rc;
    }
    while (x.at < s->n)
        tok_str_xform_push(&x, s->cp[x.at], 0);
    return tok_str_xform_end(&x);
}

/* ---- Precompiled (sentencepiece's precompiled_charsmap) ------------------- */

/* spm_precompiled's DoubleArray (darts-clone) units. */
static bool unit_has_leaf(uint32_t u)
{
    return (u >> 8) & 1;
}

static uint32_t unit_value(uint32_t u)
{
    return u & ((1u << 31) - 1);
}

static uint32_t unit_label(uint32_t u)
{
    return u & ((1u << 31) | 0xFF);
}

static size_t unit_offset(uint32_t u)
{
    return (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
}

typedef struct precompiled {
    uint32_t *trie; /* (trie_n) */
    size_t trie_n;
    char *norm; /* (norm_n) the replacement strings, NUL-separated */
    size_t norm_n;
} precompiled;

/* Precompiled::transform: the replacement for the FIRST (shortest) prefix of
 * key the trie holds (so the rest of key is dropped), as [*out, *out_n) in
 * norm; false when none. */
static bool precompiled_find(const precompiled *p, const unsigned char *key, size_t len,
                             const char **out, size_t *out_n)
{
    if (p->trie_n == 0)
        return false;
    size_t pos = unit_offset(p->trie[0]);
    for (size_t i = 0; i < len && key[i] != 0; i++) {
        pos ^= key[i];
        if (pos >= p->trie_n)
            return false;
        uint32_t u = p->trie[pos];
        if (unit_label(u) != key[i])
            return false;
        pos ^= unit_offset(u);
        if (unit_has_leaf(u)) {
            if (pos >= p->trie_n)
                return false;
            size_t index = unit_value(p->trie[pos]);
            /* Rust panics on an index out of the string or inside a char */
            if (index >= p->norm_n || ((unsigned char)p->norm[index] & 0xC0) == 0x80)
                return false;
            size_t end = index;
            while (end < p->norm_n && p->norm[end] != '\0')
                end++;
            *out = p->norm + index;
            *out_n = end - index;
            return true;
        }
    }
    return false;
}

/* precompiled.rs's replace(): the new chars with change 0, then the last
 * |diff| adjusted: +1 each when longer, the last one -|diff| when shorter
 * (which lands on an earlier piece's char when the new part is empty). */
static int precompiled_replace(pairs *p, size_t old_n, const char *norm, size_t norm_n)
{
    size_t new_n = 0;
    for (size_t i = 0; i < norm_n;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)norm + i,
                                              (utf8proc_ssize_t)(norm_n - i), &c);
        if (l < 1)
            break;
        if (pairs_push(p, (uint32_t)c, 0) < 0)
            return ENC_ENOMEM;
        new_n++;
        i += (size_t)l;
    }
    long diff = (long)new_n - (long)old_n;
    if (diff > 0) {
        for (size_t i = 0; i < (size_t)diff; i++)
            p->v[p->n - 1 - i].change = 1;
    } else if (diff < 0 && p->n > 0) {
        p->v[p->n - 1].change += diff;
    }
    return 0;
}

/* Precompiled::normalize: per extended grapheme cluster, the cluster's
 * replacement when it is under 6 bytes and has one, else per char. */
static int precompiled_normalize(const precompiled *pc, tok_str *s)
{
    pairs p = {0};
    bool modified = false;
    int rc = 0;
    unsigned char buf[64];
    size_t ga = 0;
    utf8proc_int32_t state = 0;
    while (ga < s->n && rc == 0) {
        size_t gb = ga + 1;
        while (gb < s->n && !utf8proc_grapheme_break_stateful((utf8proc_int32_t)s->cp[gb - 1],
                                                              (utf8proc_int32_t)s->cp[gb], &state))
            gb++;
        size_t len = 0;
        for (size_t i = ga; i < gb && len < 6; i++)
            len += (size_t)tok_utf8_put(s->cp[i], (char *)buf + len);
        const char *norm;
        size_t norm_n;
        if (len < 6 && precompiled_find(pc, buf, len, &norm, &norm_n)) {
            modified = true;
            rc = precompiled_replace(&p, gb - ga, norm, norm_n);
        } else {
            for (size_t i = ga; i < gb && rc == 0; i++) {
                int l = tok_utf8_put(s->cp[i], (char *)buf);
                if (precompiled_find(pc, buf, (size_t)l, &norm, &norm_n)) {
                    modified = true;
                    rc = precompiled_replace(&p, 1, norm, norm_n);
                } else {
                    rc = pairs_push(&p, s->cp[i], 0);
                }
            }
        }
        /* the grapheme state continues across the break */
        ga = gb;
    }
    if (rc == 0 && modified)
        rc = apply_pairs(s, &p, 0);
    free(p.v);
    return rc;
}

static int b64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 (padded) into a malloc'd buffer; -1 when malformed. */
static long b64_decode(const char *in, size_t len, unsigned char **out)
{
    while (len > 0 && in[len - 1] == '=')
        len--;
    if (len % 4 == 1)
        return -1;
    unsigned char *o = malloc(len / 4 * 3 + 3);
    if (!o)
        return -2;
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value((unsigned char)in[i]);
        if (v < 0) {
            free(o);
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[n++] = (unsigned char)(acc >> bits);
        }
    }
    *out = o;
    return (long)n;
}

/* ---- the normalizer ------------------------------------------------------------- */

typedef enum norm_kind {
    N_BERT,
    N_STRIP,
    N_STRIP_ACCENTS,
    N_NFC,
    N_NFD,
    N_NFKC,
    N_NFKD,
    N_SEQUENCE,
    N_LOWERCASE,
    N_NMT,
    N_PRECOMPILED,
    N_REPLACE,
    N_PREPEND,
    N_BYTE_LEVEL,
} norm_kind;

struct tok_normalizer {
    norm_kind kind;
    bool clean_text, handle_chinese_chars, strip_accents, lowercase; /* Bert */
    bool left, right;                                                /* Strip */
    uint32_t *text; /* (text_n) Prepend's prepend, Replace's content */
    size_t text_n;
    tok_regex *re; /* Replace */
    precompiled pc;
    tok_normalizer **seq; /* (seq_n) Sequence */
    size_t seq_n;
};

void tok_normalizer_free(tok_normalizer *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->seq_n; i++)
        tok_normalizer_free(n->seq[i]);
    free(n->seq);
    free(n->text);
    tok_regex_free(n->re);
    free(n->pc.trie);
    free(n->pc.norm);
    free(n);
}

int tok_normalize(const tok_normalizer *n, tok_str *s)
{
    if (!n)
        return 0;
    switch (n->kind) {
    case N_BERT:
        return bert(s, n->clean_text, n->handle_chinese_chars, n->strip_accents, n->lowercase);
    case N_STRIP:
        return strip(s, n->left, n->right);
    case N_STRIP_ACCENTS:
        return filter(s, keep_unmarked);
    case N_NFC:
        return unicode_form(s, false, true);
    case N_NFD:
        return unicode_form(s, false, false);
    case N_NFKC:
        return unicode_form(s, true, true);
    case N_NFKD:
        return unicode_form(s, true, false);
    case N_SEQUENCE:
        for (size_t i = 0; i < n->seq_n; i++) {
            int rc = tok_normalize(n->seq[i], s);
            if (rc < 0)
                return rc;
        }
        return 0;
    case N_LOWERCASE:
        return lowercase(s);
    case N_NMT: {
        int rc = filter(s, keep_nmt);
        for (size_t i = 0; rc == 0 && i < s->n; i++)
            s->cp[i] = map_nmt(s->cp[i]);
        return rc;
    }
    case N_PRECOMPILED:
        return precompiled_normalize(&n->pc, s);
    case N_REPLACE:
        return replace(s, n->re, n->text, n->text_n);
    case N_PREPEND:
        return prepend(s, n->text, n->text_n);
    case N_BYTE_LEVEL: {
        if (s->n == 0)
            return 0;
        tok_str_xform x;
        tok_str_xform_begin(&x, s, 0);
        for (size_t i = 0; i < s->n; i++) {
            char b[4];
            int l = tok_utf8_put(s->cp[i], b);
            for (int k = 0; k < l; k++)
                tok_str_xform_push(&x, tok_char_byte_level((uint8_t)b[k]), k > 0);
        }
        return tok_str_xform_end(&x);
    }
    }
    return 0;
}

/* A UTF-8 string member as code points (malloc'd). */
static int need_text(const json_t *o, const char *path, const char *key, uint32_t **out,
                     size_t *out_n, enc_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a string", path, key);
    const char *t = json_string_value(v);
    size_t len = json_string_length(v);
    tok_str s = {0};
    if (tok_str_from_utf8(&s, t, len, 0) < 0)
        return enc_error_set(err, ENC_ENOMEM, "%s.%s: out of memory", path, key);
    *out = s.cp;
    *out_n = s.n;
    free(s.os);
    free(s.oe);
    if (!*out) {
        *out = malloc(sizeof **out);
        if (!*out)
            return enc_error_set(err, ENC_ENOMEM, "%s.%s: out of memory", path, key);
    }
    return 0;
}

static int parse_precompiled(tok_normalizer *n, const json_t *j, const char *path, enc_error *err)
{
    const json_t *v = json_object_get(j, "precompiled_charsmap");
    if (!v)
        return enc_error_set(err, ENC_EFORMAT, "%s.precompiled_charsmap is missing", path);
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.precompiled_charsmap must be a string", path);
    unsigned char *blob = NULL;
    long len = b64_decode(json_string_value(v), json_string_length(v), &blob);
    if (len == -2)
        return enc_error_set(err, ENC_ENOMEM, "%s.precompiled_charsmap: out of memory", path);
    if (len < 0)
        return enc_error_set(err, ENC_EFORMAT, "%s.precompiled_charsmap is not valid base64", path);
    int rc = 0;
    size_t size = (size_t)len;
    uint32_t trie_bytes = 0;
    if (size < 4) {
        rc = ENC_EFORMAT;
    } else {
        trie_bytes = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 |
                     (uint32_t)blob[3] << 24;
        if ((size_t)trie_bytes / 4 * 4 > size - 4)
            rc = ENC_EFORMAT;
    }
    if (rc < 0) {
        free(blob);
        return enc_error_set(err, ENC_EFORMAT, "%s.precompiled_charsmap: its trie is truncated",
                             path);
    }
    size_t trie_n = trie_bytes / 4;
    const unsigned char *norm = blob + 4 + trie_n * 4;
    size_t norm_n = size - 4 - trie_n * 4;
    if (tok_utf8_invalid_at((const char *)norm, norm_n) >= 0) {
        free(blob);
        return enc_error_set(err, ENC_EFORMAT,
                             "%s.precompiled_charsmap: its strings are not valid UTF-8", path);
    }
    n->pc.trie = malloc((trie_n ? trie_n : 1) * sizeof *n->pc.trie);
    n->pc.norm = malloc(norm_n ? norm_n : 1);
    if (!n->pc.trie || !n->pc.norm) {
        free(blob);
        return enc_error_set(err, ENC_ENOMEM, "%s.precompiled_charsmap: out of memory", path);
    }
    for (size_t i = 0; i < trie_n; i++) {
        const unsigned char *q = blob + 4 + 4 * i;
        n->pc.trie[i] =
            (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    }
    n->pc.trie_n = trie_n;
    memcpy(n->pc.norm, norm, norm_n);
    n->pc.norm_n = norm_n;
    free(blob);
    return 0;
}

static const struct {
    const char *name;
    norm_kind kind;
} norm_types[] = {
    {"BertNormalizer", N_BERT},
    {"Strip", N_STRIP},
    {"StripAccents", N_STRIP_ACCENTS},
    {"NFC", N_NFC},
    {"NFD", N_NFD},
    {"NFKC", N_NFKC},
    {"NFKD", N_NFKD},
    {"Sequence", N_SEQUENCE},
    {"Lowercase", N_LOWERCASE},
    {"Nmt", N_NMT},
    {"Precompiled", N_PRECOMPILED},
    {"Replace", N_REPLACE},
    {"Prepend", N_PREPEND},
    {"ByteLevel", N_BYTE_LEVEL},
};

static int parse(tok_normalizer *n, const json_t *j, const char *path, enc_error *err)
{
    if (!json_is_object(j))
        return enc_error_set(err, ENC_EFORMAT, "%s must be an object", path);
    const json_t *type = json_object_get(j, "type");
    if (!type)
        return enc_error_set(err, ENC_EFORMAT, "%s.type is missing", path);
    if (!json_is_string(type))
        return enc_error_set(err, ENC_EFORMAT, "%s.type must be a string", path);
    size_t t = 0, nt = sizeof norm_types / sizeof norm_types[0];
    while (t < nt && strcmp(norm_types[t].name, json_string_value(type)) != 0)
        t++;
    if (t == nt)
        return tok_json_unsupported(path, "type", type, err);
    n->kind = norm_types[t].kind;
    int rc = 0;
    switch (n->kind) {
    case N_BERT: {
        /* strip_accents: Option<bool>, None following lowercase */
        const json_t *sa = json_object_get(j, "strip_accents");
        if ((rc = tok_json_need_bool(j, path, "clean_text", &n->clean_text, err)) < 0 ||
            (rc = tok_json_need_bool(j, path, "handle_chinese_chars", &n->handle_chinese_chars,
                                     err)) < 0 ||
            (rc = tok_json_need_bool(j, path, "lowercase", &n->lowercase, err)) < 0)
            return rc;
        if (sa && !json_is_null(sa))
            rc = tok_json_bool(j, path, "strip_accents", false, &n->strip_accents, err);
        else
            n->strip_accents = n->lowercase;
        return rc;
    }
    case N_STRIP:
        if ((rc = tok_json_need_bool(j, path, "strip_left", &n->left, err)) < 0)
            return rc;
        return tok_json_need_bool(j, path, "strip_right", &n->right, err);
    case N_PREPEND:
        return need_text(j, path, "prepend", &n->text, &n->text_n, err);
    case N_REPLACE: {
        char sub[ENC_ERROR_MAX];
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((rc = tok_json_need(j, path, "pattern", err)) < 0)
            return rc;
        n->re = tok_regex_pattern(json_object_get(j, "pattern"), sub, err);
        if (!n->re)
            return err && err->status ? err->status : ENC_EINVAL;
        return need_text(j, path, "content", &n->text, &n->text_n, err);
    }
    case N_PRECOMPILED:
        return parse_precompiled(n, j, path, err);
    case N_SEQUENCE: {
        const json_t *list = json_object_get(j, "normalizers");
        if (!list)
            return enc_error_set(err, ENC_EFORMAT, "%s.normalizers is missing", path);
        if (!json_is_array(list))
            return enc_error_set(err, ENC_EFORMAT, "%s.normalizers must be an array", path);
        size_t k = json_array_size(list);
        n->seq = calloc(k ? k : 1, sizeof *n->seq);
        if (!n->seq)
            return enc_error_set(err, ENC_ENOMEM, "%s.normalizers: out of memory", path);
        for (size_t i = 0; i < k; i++) {
            char sub[ENC_ERROR_MAX];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, i);
            n->seq[i] = tok_normalizer_new(json_array_get(list, i), sub, err);
            if (!n->seq[i])
                return err && err->status ? err->status : ENC_EINVAL;
            n->seq_n = i + 1;
        }
        return 0;
    }
    default:
        return 0; /* no options */
    }
}

tok_normalizer *tok_normalizer_new(const json_t *j, const char *path, enc_error *err)
{
    tok_normalizer *n = calloc(1, sizeof *n);
    if (!n) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (!j || json_is_null(j)) {
        n->kind = N_SEQUENCE; /* none: an empty sequence */
        return n;
    }
    if (parse(n, j, path, err) < 0) {
        tok_normalizer_free(n);
        return NULL;
    }
    return n;
}
