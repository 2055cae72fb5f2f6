/* pretokenize.c - tok_pretok*: tokenizer.json's pre-tokenizers (BertPreTokenizer,
 * Whitespace, WhitespaceSplit, Punctuation, Digits, ByteLevel, Metaspace,
 * Split, CharDelimiterSplit, FixedLength, Sequence), written after Hugging
 * Face tokenizers' src/pre_tokenizers, with the split they share
 * (NormalizedString::split's behaviors). */
#include "tokenizer/pretokenize.h"

#include "tokenizer/chars.h"
#include "tokenizer/json.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the split -------------------------------------------------------------------- */

/* How a split keeps the delimiters it finds (tokenizers' SplitDelimiterBehavior). */
typedef enum split_behavior {
    SPLIT_REMOVED,
    SPLIT_ISOLATED,
    SPLIT_MERGED_WITH_PREVIOUS,
    SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS,
} split_behavior;

/* One range of Pattern::find_matches: [a, b), matched or not. */
typedef struct span {
    size_t a, b;
    bool match;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
} spans;

static int spans_push(spans *l, size_t a, size_t b, bool match)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        span *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (span){a, b, match};
    return 0;
}

/* find_matches' list from the matches: the gaps between them added. */
typedef struct gaps {
    spans *l;
    size_t prev;
} gaps;

static int gaps_match(size_t a, size_t b, void *ctx)
{
    gaps *g = ctx;
    if (g->prev != a && spans_push(g->l, g->prev, a, false) < 0)
        return ENC_ENOMEM;
    g->prev = b;
    return spans_push(g->l, a, b, true);
}

static int gaps_end(gaps *g, size_t n)
{
    if (n == 0)
        return spans_push(g->l, 0, 0, false); /* an empty string: one empty gap */
    if (g->prev != n)
        return spans_push(g->l, g->prev, n, false);
    return 0;
}

/* NormalizedString::split on find_matches' list l (reused as scratch). */
static int split_spans(const tok_str *s, spans *l, split_behavior behavior, tok_pieces *out)
{
    spans r = {0}; /* (a, b, remove) */
    int rc = 0;
    bool prev = false;
    switch (behavior) {
    case SPLIT_ISOLATED:
    case SPLIT_REMOVED:
        for (size_t i = 0; i < l->n && rc == 0; i++)
            rc = spans_push(&r, l->v[i].a, l->v[i].b,
                            behavior == SPLIT_REMOVED && l->v[i].match);
        break;
    case SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < l->n && rc == 0; i++) {
            if (l->v[i].match == prev && r.n > 0)
                r.v[r.n - 1].b = l->v[i].b;
            else
                rc = spans_push(&r, l->v[i].a, l->v[i].b, false);
            prev = l->v[i].match;
        }
        break;
    case SPLIT_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < l->n && rc == 0; i++) {
            if (l->v[i].match && !prev && r.n > 0)
                r.v[r.n - 1].b = l->v[i].b;
            else
                rc = spans_push(&r, l->v[i].a, l->v[i].b, false);
            prev = l->v[i].match;
        }
        break;
    case SPLIT_MERGED_WITH_NEXT:
        for (size_t i = l->n; i-- > 0 && rc == 0;) {
            if (l->v[i].match && !prev && r.n > 0)
                r.v[r.n - 1].a = l->v[i].a;
            else
                rc = spans_push(&r, l->v[i].a, l->v[i].b, false);
            prev = l->v[i].match;
        }
        for (size_t i = 0; i < r.n / 2; i++) {
            span t = r.v[i];
            r.v[i] = r.v[r.n - 1 - i];
            r.v[r.n - 1 - i] = t;
        }
        break;
    }
    /* the kept ranges as pieces, empty ones dropped (PreTokenizedString::split) */
    for (size_t i = 0; i < r.n && rc == 0; i++) {
        if (r.v[i].match || r.v[i].b <= r.v[i].a)
            continue;
        tok_str piece = {0};
        rc = tok_str_slice(s, r.v[i].a, r.v[i].b, &piece);
        if (rc == 0)
            rc = tok_pieces_take(out, &piece, false, (tok_tok){0});
        tok_str_free(&piece);
    }
    free(r.v);
    return rc;
}

/* ---- the pre-tokenizer ---------------------------------------------------------- */

typedef enum pretok_kind {
    P_BERT,
    P_BYTE_LEVEL,
    P_DELIMITER,
    P_METASPACE,
    P_WHITESPACE,
    P_SEQUENCE,
    P_SPLIT,
    P_PUNCTUATION,
    P_WHITESPACE_SPLIT,
    P_DIGITS,
    P_FIXED_LENGTH,
} pretok_kind;

enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

struct tok_pretok {
    pretok_kind kind;
    split_behavior behavior;                    /* Punctuation, Split */
    bool invert;                                    /* Split */
    tok_regex *re;                                  /* Split, ByteLevel */
    bool add_prefix_space, trim_offsets, use_regex; /* ByteLevel */
    bool individual_digits;                         /* Digits */
    uint32_t ch;        /* CharDelimiterSplit's delimiter, Metaspace's replacement */
    int prepend_scheme; /* Metaspace */
    bool split;         /* Metaspace */
    size_t length;      /* FixedLength */
    tok_pretok **seq;   /* (seq_n) Sequence */
    size_t seq_n;
};

/* The piece and what it splits into. */
typedef int (*split_fn)(const tok_pretok *pt, tok_str *s, tok_pieces *out);

/* PreTokenizedString::split: fn on every piece without tokens, the others
 * kept in place. */
static int split_each(const tok_pretok *pt, tok_pieces *p, split_fn fn)
{
    tok_pieces out = {0};
    int rc = 0;
    for (size_t i = 0; i < p->n && rc == 0; i++) {
        tok_piece *piece = &p->v[i];
        if (piece->done)
            rc = tok_pieces_take(&out, &piece->s, true, piece->token);
        else
            rc = fn(pt, &piece->s, &out);
    }
    if (rc < 0) {
        tok_pieces_free(&out);
        return rc;
    }
    tok_pieces_free(p);
    *p = out;
    return 0;
}

/* The piece whole (a split that returns it unchanged), unless empty. */
static int keep_whole(tok_str *s, tok_pieces *out)
{
    return s->n ? tok_pieces_take(out, s, false, (tok_tok){0}) : 0;
}

/* split(char predicate, behavior): each matching char its own match. */
static int split_chars(const tok_pretok *pt, tok_str *s, bool (*pred)(const tok_pretok *, uint32_t),
                       split_behavior behavior, tok_pieces *out)
{
    spans l = {0};
    gaps g = {.l = &l, .prev = 0};
    int rc = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++)
        if (pred(pt, s->cp[i]))
            rc = gaps_match(i, i + 1, &g);
    if (rc == 0)
        rc = gaps_end(&g, s->n);
    if (rc == 0)
        rc = split_spans(s, &l, behavior, out);
    free(l.v);
    return rc;
}

static bool pred_whitespace(const tok_pretok *pt, uint32_t c)
{
    (void)pt;
    return tok_char_is_whitespace(c);
}

static bool pred_punctuation(const tok_pretok *pt, uint32_t c)
{
    (void)pt;
    return tok_char_is_punctuation(c);
}

static bool pred_numeric(const tok_pretok *pt, uint32_t c)
{
    (void)pt;
    return tok_char_is_numeric(c);
}

static bool pred_char(const tok_pretok *pt, uint32_t c)
{
    return c == pt->ch;
}

static int split_whitespace_removed(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    return split_chars(pt, s, pred_whitespace, SPLIT_REMOVED, out);
}

static int split_punctuation(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    return split_chars(pt, s, pred_punctuation,
                       pt->kind == P_BERT ? SPLIT_ISOLATED : pt->behavior, out);
}

static int split_digits(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    return split_chars(pt, s, pred_numeric,
                       pt->individual_digits ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, out);
}

static int split_delimiter(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    return split_chars(pt, s, pred_char, SPLIT_REMOVED, out);
}

/* Whitespace: the matches of \w+|[^\w\s]+ (the regex crate, leftmost
 * first), each its own piece; what is between them removed. */
static int split_word_runs(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    (void)pt;
    int rc = 0;
    size_t i = 0;
    while (i < s->n && rc == 0) {
        bool word = tok_char_is_word(s->cp[i]);
        if (!word && tok_char_is_whitespace(s->cp[i])) {
            i++;
            continue;
        }
        size_t j = i + 1;
        if (word)
            while (j < s->n && tok_char_is_word(s->cp[j]))
                j++;
        else
            while (j < s->n && !tok_char_is_word(s->cp[j]) && !tok_char_is_whitespace(s->cp[j]))
                j++;
        tok_str piece = {0};
        rc = tok_str_slice(s, i, j, &piece);
        if (rc == 0)
            rc = tok_pieces_take(out, &piece, false, (tok_tok){0});
        tok_str_free(&piece);
        i = j;
    }
    return rc;
}

/* split(&regex or Invert(&regex), behavior). */
static int split_regex(const tok_pretok *pt, tok_str *s, split_behavior behavior, bool invert,
                       tok_pieces *out)
{
    spans l = {0};
    gaps g = {.l = &l, .prev = 0};
    int rc = tok_regex_each(pt->re, s, gaps_match, &g);
    if (rc == 0)
        rc = gaps_end(&g, s->n);
    if (rc == 0 && invert)
        for (size_t i = 0; i < l.n; i++)
            l.v[i].match = !l.v[i].match;
    if (rc == 0)
        rc = split_spans(s, &l, behavior, out);
    free(l.v);
    return rc;
}

static int split_pattern(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    return split_regex(pt, s, pt->behavior, pt->invert, out);
}

/* NormalizedString::prepend of one char: it takes the first char's span,
 * as the first char does again. */
static int prepend_char(tok_str *s, uint32_t c)
{
    if (s->n == 0)
        return 0;
    tok_str_xform x;
    tok_str_xform_begin(&x, s, 0);
    tok_str_xform_push(&x, c, 0);
    tok_str_xform_push(&x, s->cp[0], 1);
    for (size_t i = 1; i < s->n; i++)
        tok_str_xform_push(&x, s->cp[i], 0);
    return tok_str_xform_end(&x);
}

static int split_byte_level(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    if (pt->add_prefix_space && !(s->n > 0 && s->cp[0] == ' ')) {
        int rc = prepend_char(s, ' ');
        if (rc < 0)
            return rc;
    }
    if (pt->use_regex)
        return split_regex(pt, s, SPLIT_ISOLATED, false, out);
    return keep_whole(s, out);
}

/* ByteLevel's second step: each char as its UTF-8 bytes' chars, the first
 * replacing it (change 0), the others inserted (+1). */
static int byte_level_chars(tok_str *s)
{
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

/* Metaspace: spaces become the replacement (each keeping its span), the
 * replacement prepended per prepend_scheme, then split before each
 * replacement (MergedWithNext).  "first" prepends only to a piece whose
 * original span starts at offset 0 of its sequence (offsets_original().0 ==
 * 0: every piece reaching the pre-tokenizer was sliced from the normalized
 * text, so that is its first char's span). */
static int split_metaspace(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->cp[i] == ' ')
            s->cp[i] = pt->ch;
    bool starts = s->n > 0 && s->cp[0] == pt->ch;
    bool first = s->n > 0 && s->os[0] == 0;
    if ((pt->prepend_scheme == PREPEND_ALWAYS && !starts) ||
        (pt->prepend_scheme == PREPEND_FIRST && !starts && first)) {
        int rc = prepend_char(s, pt->ch);
        if (rc < 0)
            return rc;
    }
    if (pt->split)
        return split_chars(pt, s, pred_char, SPLIT_MERGED_WITH_NEXT, out);
    return keep_whole(s, out);
}

/* FixedLength: chunks of length chars. */
static int split_fixed(const tok_pretok *pt, tok_str *s, tok_pieces *out)
{
    int rc = 0;
    for (size_t a = 0; a < s->n && rc == 0; a += pt->length) {
        size_t b = s->n - a < pt->length ? s->n : a + pt->length;
        tok_str piece = {0};
        rc = tok_str_slice(s, a, b, &piece);
        if (rc == 0)
            rc = tok_pieces_take(out, &piece, false, (tok_tok){0});
        tok_str_free(&piece);
    }
    return rc;
}

int tok_pretokenize(const tok_pretok *pt, tok_pieces *p)
{
    if (!pt)
        return 0;
    int rc = 0;
    switch (pt->kind) {
    case P_SEQUENCE:
        for (size_t i = 0; i < pt->seq_n && rc == 0; i++)
            rc = tok_pretokenize(pt->seq[i], p);
        return rc;
    case P_BERT:
        rc = split_each(pt, p, split_whitespace_removed);
        return rc < 0 ? rc : split_each(pt, p, split_punctuation);
    case P_WHITESPACE:
        return split_each(pt, p, split_word_runs);
    case P_WHITESPACE_SPLIT:
        return split_each(pt, p, split_whitespace_removed);
    case P_PUNCTUATION:
        return split_each(pt, p, split_punctuation);
    case P_DIGITS:
        return split_each(pt, p, split_digits);
    case P_DELIMITER:
        return split_each(pt, p, split_delimiter);
    case P_SPLIT:
        return split_each(pt, p, split_pattern);
    case P_METASPACE:
        return split_each(pt, p, split_metaspace);
    case P_FIXED_LENGTH:
        return split_each(pt, p, split_fixed);
    case P_BYTE_LEVEL:
        rc = split_each(pt, p, split_byte_level);
        for (size_t i = 0; i < p->n && rc == 0; i++)
            if (!p->v[i].done)
                rc = byte_level_chars(&p->v[i].s);
        return rc;
    }
    return 0;
}

void tok_pretok_free(tok_pretok *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->seq_n; i++)
        tok_pretok_free(p->seq[i]);
    free(p->seq);
    tok_regex_free(p->re);
    free(p);
}

/* ---- parsing ------------------------------------------------------------------------ */

static int parse_behavior(const json_t *o, const char *path, const char *key, bool required,
                          split_behavior dflt, split_behavior *out, enc_error *err)
{
    static const struct {
        const char *name;
        split_behavior b;
    } names[] = {
        {"Removed", SPLIT_REMOVED},
        {"Isolated", SPLIT_ISOLATED},
        {"MergedWithPrevious", SPLIT_MERGED_WITH_PREVIOUS},
        {"MergedWithNext", SPLIT_MERGED_WITH_NEXT},
        {"Contiguous", SPLIT_CONTIGUOUS},
    };
    const json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
        *out = dflt;
        return 0;
    }
    if (json_is_string(v))
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(names[i].name, json_string_value(v)) == 0) {
                *out = names[i].b;
                return 0;
            }
    return tok_json_unsupported(path, key, v, err);
}

/* ByteLevel's split (pre_tokenizers/byte_level.rs). */
static const char byte_level_re[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const struct {
    const char *name;
    pretok_kind kind;
} pretok_types[] = {
    {"BertPreTokenizer", P_BERT},
    {"ByteLevel", P_BYTE_LEVEL},
    {"CharDelimiterSplit", P_DELIMITER},
    {"Metaspace", P_METASPACE},
    {"Whitespace", P_WHITESPACE},
    {"Sequence", P_SEQUENCE},
    {"Split", P_SPLIT},
    {"Punctuation", P_PUNCTUATION},
    {"WhitespaceSplit", P_WHITESPACE_SPLIT},
    {"Digits", P_DIGITS},
    {"FixedLength", P_FIXED_LENGTH},
};

static int parse_metaspace(tok_pretok *p, const json_t *j, const char *path, enc_error *err)
{
    int rc = tok_json_need_char(j, path, "replacement", &p->ch, err);
    if (rc < 0)
        return rc;
    const json_t *scheme = json_object_get(j, "prepend_scheme");
    p->prepend_scheme = PREPEND_ALWAYS;
    if (scheme) {
        const char *s = json_is_string(scheme) ? json_string_value(scheme) : "";
        if (strcmp(s, "always") == 0)
            p->prepend_scheme = PREPEND_ALWAYS;
        else if (strcmp(s, "first") == 0)
            p->prepend_scheme = PREPEND_FIRST;
        else if (strcmp(s, "never") == 0)
            p->prepend_scheme = PREPEND_NEVER;
        else
            return tok_json_unsupported(path, "prepend_scheme", scheme, err);
    }
    /* the legacy add_prefix_space: false means "never", and must not
     * contradict a prepend_scheme (the default "always" included) */
    bool add_prefix_space = true;
    if ((rc = tok_json_bool(j, path, "add_prefix_space", true, &add_prefix_space, err)) < 0)
        return rc;
    if (!add_prefix_space) {
        if (p->prepend_scheme != PREPEND_NEVER)
            return enc_error_set(err, ENC_EFORMAT,
                                 "%s.add_prefix_space does not match declared prepend_scheme",
                                 path);
        p->prepend_scheme = PREPEND_NEVER;
    }
    return tok_json_bool(j, path, "split", true, &p->split, err);
}

static int parse(tok_pretok *p, const json_t *j, const char *path, enc_error *err)
{
    if (!json_is_object(j))
        return enc_error_set(err, ENC_EFORMAT, "%s must be an object", path);
    const json_t *type = json_object_get(j, "type");
    if (!type)
        return enc_error_set(err, ENC_EFORMAT, "%s.type is missing", path);
    if (!json_is_string(type))
        return enc_error_set(err, ENC_EFORMAT, "%s.type must be a string", path);
    size_t t = 0, nt = sizeof pretok_types / sizeof pretok_types[0];
    while (t < nt && strcmp(pretok_types[t].name, json_string_value(type)) != 0)
        t++;
    if (t == nt)
        return tok_json_unsupported(path, "type", type, err);
    p->kind = pretok_types[t].kind;
    int rc = 0;
    char sub[ENC_ERROR_MAX];
    switch (p->kind) {
    case P_BYTE_LEVEL:
        if ((rc = tok_json_need_bool(j, path, "add_prefix_space", &p->add_prefix_space, err)) < 0 ||
            (rc = tok_json_need_bool(j, path, "trim_offsets", &p->trim_offsets, err)) < 0 ||
            (rc = tok_json_bool(j, path, "use_regex", true, &p->use_regex, err)) < 0)
            return rc;
        if (p->use_regex) {
            p->re = tok_regex_compile(byte_level_re, sizeof byte_level_re - 1, err, path);
            if (!p->re)
                return err && err->status ? err->status : ENC_EINVAL;
        }
        return 0;
    case P_DELIMITER:
        return tok_json_need_char(j, path, "delimiter", &p->ch, err);
    case P_METASPACE:
        return parse_metaspace(p, j, path, err);
    case P_SPLIT:
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((rc = tok_json_need(j, path, "pattern", err)) < 0 ||
            (rc = parse_behavior(j, path, "behavior", true, SPLIT_REMOVED, &p->behavior, err)) <
                0 ||
            (rc = tok_json_need_bool(j, path, "invert", &p->invert, err)) < 0)
            return rc;
        p->re = tok_regex_pattern(json_object_get(j, "pattern"), sub, err);
        return p->re ? 0 : err && err->status ? err->status : ENC_EINVAL;
    case P_PUNCTUATION:
        return parse_behavior(j, path, "behavior", false, SPLIT_ISOLATED, &p->behavior, err);
    case P_DIGITS:
        return tok_json_need_bool(j, path, "individual_digits", &p->individual_digits, err);
    case P_FIXED_LENGTH: {
        long length = 5;
        if ((rc = tok_json_int(j, path, "length", 5, &length, err)) < 0)
            return rc;
        if (length <= 0)
            return tok_json_unsupported(path, "length", json_object_get(j, "length"), err);
        p->length = (size_t)length;
        return 0;
    }
    case P_SEQUENCE: {
        const json_t *list = json_object_get(j, "pretokenizers");
        if (!list)
            return enc_error_set(err, ENC_EFORMAT, "%s.pretokenizers is missing", path);
        if (!json_is_array(list))
            return enc_error_set(err, ENC_EFORMAT, "%s.pretokenizers must be an array", path);
        size_t k = json_array_size(list);
        p->seq = calloc(k ? k : 1, sizeof *p->seq);
        if (!p->seq)
            return enc_error_set(err, ENC_ENOMEM, "%s.pretokenizers: out of memory", path);
        for (size_t i = 0; i < k; i++) {
            snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", path, i);
            p->seq[i] = tok_pretok_new(json_array_get(list, i), sub, err);
            if (!p->seq[i])
                return err && err->status ? err->status : ENC_EINVAL;
            p->seq_n = i + 1;
        }
        return 0;
    }
    default:
        return 0; /* no options */
    }
}

tok_pretok *tok_pretok_new(const json_t *j, const char *path, enc_error *err)
{
    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) {
        enc_error_set(err, ENC_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (!j || json_is_null(j)) {
        p->kind = P_SEQUENCE; /* none: an empty sequence */
        return p;
    }
    if (parse(p, j, path, err) < 0) {
        tok_pretok_free(p);
        return NULL;
    }
    return p;
}
