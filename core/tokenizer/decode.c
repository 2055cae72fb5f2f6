/* decode.c - ids back to text (tok_decode), as huggingface/tokenizers'
 * Tokenizer::decode (tokenizer/mod.rs): each id's token (an added token's
 * normalized form where it has one: AddedVocabulary::simple_id_to_token),
 * the special tokens left out on request, then the decoder, which maps the
 * list of token strings to another (decode_chain) and concatenates the last
 * one (Decoder::decode); without a decoder the tokens are joined by spaces.
 * The decoders by their "type": BPEDecoder, ByteLevel, WordPiece, Metaspace,
 * CTC, Sequence, Replace, Fuse, Strip, ByteFallback (decoders/,
 * normalizers/replace.rs, pre_tokenizers/byte_level.rs and metaspace.rs),
 * read as the crate's serde reads them (decoders/mod.rs). */
#include "tokenizer/decode.h"

#include "tokenizer/chars.h"

#include "tokenizer/json.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer_def.h"
#include "tokenizer/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the decoders ------------------------------------------------------- */

typedef enum dec_kind {
    DEC_BPE,
    DEC_BYTE_LEVEL,
    DEC_WORDPIECE,
    DEC_METASPACE,
    DEC_CTC,
    DEC_SEQUENCE,
    DEC_REPLACE,
    DEC_FUSE,
    DEC_STRIP,
    DEC_BYTE_FALLBACK
} dec_kind;

struct tok_decoder {
    dec_kind kind;
    char *text;  /* BPEDecoder's suffix, WordPiece's prefix, Replace's content,
                  * CTC's pad_token */
    size_t len;  /* its bytes */
    char *delim; /* CTC's word_delimiter_token */
    size_t delim_len;
    bool cleanup;       /* WordPiece, CTC */
    uint32_t ch;        /* Metaspace's replacement, Strip's content */
    bool prepended;     /* Metaspace: prepend_scheme is not "never" */
    size_t start, stop; /* Strip */
    tok_regex *re;      /* Replace */
    tok_decoder **seq;  /* (n_seq) Sequence */
    size_t n_seq;
};

static const struct {
    const char *name;
    dec_kind kind;
} dec_types[] = {
    {"BPEDecoder", DEC_BPE},
    {"ByteLevel", DEC_BYTE_LEVEL},
    {"WordPiece", DEC_WORDPIECE},
    {"Metaspace", DEC_METASPACE},
    {"CTC", DEC_CTC},
    {"Sequence", DEC_SEQUENCE},
    {"Replace", DEC_REPLACE},
    {"Fuse", DEC_FUSE},
    {"Strip", DEC_STRIP},
    {"ByteFallback", DEC_BYTE_FALLBACK},
};

/* A decoder of no type the crate knows is read as the first of these whose
 * fields it has (DecoderUntagged, the legacy form): the ones whose serde
 * form does not check "type". */
static const dec_kind legacy_kinds[] = {DEC_BPE, DEC_WORDPIECE, DEC_CTC, DEC_REPLACE, DEC_STRIP};

static void dec_clear(tok_decoder *d)
{
    free(d->text);
    free(d->delim);
    tok_regex_free(d->re);
    for (size_t i = 0; i < d->n_seq; i++)
        tok_decoder_free(d->seq[i]);
    free(d->seq);
    memset(d, 0, sizeof *d);
}

void tok_decoder_free(tok_decoder *d)
{
    if (!d)
        return;
    dec_clear(d);
    free(d);
}

/* serde's String, bool and usize fields: required, of that type (null is
 * not one). */
static int need_string(const json_t *o, const char *path, const char *key, char **out, size_t *len,
                       enc_error *err)
{
    int rc = tok_json_need(o, path, key, err);
    if (rc < 0)
        return rc;
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a string", path, key);
    *len = json_string_length(v);
    if (!(*out = malloc(*len + 1)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for %s.%s", path, key);
    memcpy(*out, json_string_value(v), *len + 1);
    return 0;
}

/* required: no default; else dflt when absent (and, for an Option, null) */
static int read_bool(const json_t *o, const char *path, const char *key, bool required, bool option,
                     bool dflt, bool *out, enc_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v && required)
        return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
    if (!v || (option && json_is_null(v))) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

static int need_size(const json_t *o, const char *path, const char *key, size_t *out,
                     enc_error *err)
{
    int rc = tok_json_need(o, path, key, err);
    if (rc < 0)
        return rc;
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a whole number, 0 or more", path,
                             key);
    *out = (size_t)json_integer_value(v);
    return 0;
}

/* Metaspace (pre_tokenizers/metaspace.rs, its Deserialize): prepend_scheme
 * "always" by default; the older add_prefix_space false means "never" and
 * must not contradict a prepend_scheme.  Decoding reads only whether the
 * scheme is "never". */
static int parse_metaspace(tok_decoder *d, const json_t *j, const char *path, enc_error *err)
{
    int rc = tok_json_need_char(j, path, "replacement", &d->ch, err);
    if (rc < 0)
        return rc;
    const json_t *scheme = json_object_get(j, "prepend_scheme");
    const char *s = json_is_string(scheme) ? json_string_value(scheme) : "";
    if (scheme && strcmp(s, "always") != 0 && strcmp(s, "first") != 0 && strcmp(s, "never") != 0)
        return tok_json_unsupported(path, "prepend_scheme", scheme, err);
    bool never = scheme && strcmp(s, "never") == 0, add_prefix_space = true, split = true;
    if ((rc = read_bool(j, path, "add_prefix_space", false, true, true, &add_prefix_space, err)) <
            0 ||
        (rc = read_bool(j, path, "split", false, true, true, &split, err)) < 0)
        return rc;
    const json_t *str_rep = json_object_get(j, "str_rep");
    if (str_rep && !json_is_null(str_rep) && !json_is_string(str_rep))
        return enc_error_set(err, ENC_EFORMAT, "%s.str_rep must be a string", path);
    if (!add_prefix_space && !never)
        return enc_error_set(err, ENC_EFORMAT,
                             "%s.add_prefix_space does not match declared prepend_scheme", path);
    d->prepended = add_prefix_space && !never;
    return 0;
}

static int parse(tok_decoder *d, const json_t *j, const char *path, enc_error *err);

static int parse_sequence(tok_decoder *d, const json_t *j, const char *path, enc_error *err)
{
    int rc = tok_json_need(j, path, "decoders", err);
    if (rc < 0)
        return rc;
    const json_t *v = json_object_get(j, "decoders");
    if (!json_is_array(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.decoders must be a list", path);
    size_t n = json_array_size(v);
    if (!(d->seq = calloc(n ? n : 1, sizeof *d->seq)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for %s", path);
    for (size_t i = 0; i < n; i++) {
        char sub[ENC_ERROR_MAX];
        snprintf(sub, sizeof sub, "%s.decoders[%zu]", path, i);
        if (!(d->seq[i] = calloc(1, sizeof *d->seq[i])))
            return enc_error_set(err, ENC_ENOMEM, "out of memory for %s", sub);
        d->n_seq = i + 1;
        if ((rc = parse(d->seq[i], json_array_get(v, i), sub, err)) < 0)
            return rc;
    }
    return 0;
}

/* j's fields as a decoder of that kind (its struct's serde). */
static int parse_kind(tok_decoder *d, dec_kind kind, const json_t *j, const char *path,
                      enc_error *err)
{
    char sub[ENC_ERROR_MAX];
    bool b;
    int rc = 0;
    d->kind = kind;
    switch (kind) {
    case DEC_BPE:
        return need_string(j, path, "suffix", &d->text, &d->len, err);
    case DEC_BYTE_LEVEL:
        /* options of the pre-tokenizer's, required all the same */
        if ((rc = read_bool(j, path, "add_prefix_space", true, false, false, &b, err)) < 0 ||
            (rc = read_bool(j, path, "trim_offsets", true, false, false, &b, err)) < 0)
            return rc;
        return read_bool(j, path, "use_regex", false, false, true, &b, err);
    case DEC_WORDPIECE:
        if ((rc = need_string(j, path, "prefix", &d->text, &d->len, err)) < 0)
            return rc;
        return read_bool(j, path, "cleanup", true, false, false, &d->cleanup, err);
    case DEC_METASPACE:
        return parse_metaspace(d, j, path, err);
    case DEC_CTC:
        if ((rc = need_string(j, path, "pad_token", &d->text, &d->len, err)) < 0 ||
            (rc = need_string(j, path, "word_delimiter_token", &d->delim, &d->delim_len, err)) < 0)
            return rc;
        return read_bool(j, path, "cleanup", true, false, false, &d->cleanup, err);
    case DEC_SEQUENCE:
        return parse_sequence(d, j, path, err);
    case DEC_REPLACE:
        if ((rc = tok_json_need(j, path, "pattern", err)) < 0 ||
            (rc = need_string(j, path, "content", &d->text, &d->len, err)) < 0)
            return rc;
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if (!(d->re = tok_regex_pattern(json_object_get(j, "pattern"), sub, err)))
            return err && err->status ? err->status : ENC_EINVAL;
        return 0;
    case DEC_FUSE:
    case DEC_BYTE_FALLBACK:
        return 0;
    case DEC_STRIP:
        if ((rc = tok_json_need_char(j, path, "content", &d->ch, err)) < 0 ||
            (rc = need_size(j, path, "start", &d->start, err)) < 0)
            return rc;
        return need_size(j, path, "stop", &d->stop, err);
    }
    return 0;
}

static int parse(tok_decoder *d, const json_t *j, const char *path, enc_error *err)
{
    if (!json_is_object(j))
        return enc_error_set(err, ENC_EFORMAT, "%s must be an object", path);
    const char *type = json_string_value(json_object_get(j, "type"));
    for (size_t i = 0; type && i < sizeof dec_types / sizeof dec_types[0]; i++)
        if (strcmp(type, dec_types[i].name) == 0)
            return parse_kind(d, dec_types[i].kind, j, path, err);
    for (size_t i = 0; i < sizeof legacy_kinds / sizeof legacy_kinds[0]; i++) {
        enc_error tried = {0};
        if (parse_kind(d, legacy_kinds[i], j, path, &tried) == 0)
            return 0;
        dec_clear(d);
        if (tried.status == ENC_ENOMEM)
            return enc_error_set(err, ENC_ENOMEM, "%s", tried.message);
    }
    if (!json_object_get(j, "type"))
        return enc_error_set(err, ENC_EFORMAT, "%s.type is missing", path);
    if (!type)
        return enc_error_set(err, ENC_EFORMAT, "%s.type must be a string", path);
    if (strcmp(path, "decoder") == 0)
        return enc_error_set(err, ENC_EINVAL, "the tokenizer's decoder '%.60s' is not supported",
                             type);
    return enc_error_set(err, ENC_EINVAL, "the tokenizer's decoder '%.60s' is not supported (%s)",
                         type, path);
}

/* The special tokens' contents, sorted (strcmp). */
static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int tok_decode_setup(tok_tokenizer *t, const json_t *j, enc_error *err)
{
    if (!(t->specials = malloc((t->n_added ? t->n_added : 1) * sizeof *t->specials)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the special tokens");
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].special)
            t->specials[t->n_specials++] = t->added[i].content;
    qsort(t->specials, t->n_specials, sizeof *t->specials, by_text);
    if (!j || json_is_null(j))
        return 0;
    if (!(t->decoder = calloc(1, sizeof *t->decoder)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory for the decoder");
    enc_error e = {0};
    if (parse(t->decoder, j, "decoder", &e) == 0)
        return 0;
    tok_decoder_free(t->decoder);
    t->decoder = NULL;
    if (e.status == ENC_ENOMEM)
        return enc_error_set(err, ENC_ENOMEM, "%s", e.message);
    t->decoder_error = e; /* tok_decode's */
    return 0;
}

/* ---- lists of strings ----------------------------------------------------------- */

/* The tokens one decoder hands the next. */
typedef struct dec_list {
    char *bytes; /* (used) the strings, one after another */
    size_t used, cap;
    size_t *end; /* (n) where each string ends in bytes */
    size_t n, n_cap;
} dec_list;

static void list_free(dec_list *l)
{
    free(l->bytes);
    free(l->end);
}

static void list_clear(dec_list *l)
{
    l->used = l->n = 0;
}

/* A new, empty string at the list's end. */
static int list_open(dec_list *l)
{
    if (!l->bytes) {
        if (!(l->bytes = malloc(256)))
            return ENC_ENOMEM;
        l->cap = 256;
    }
    if (l->n == l->n_cap) {
        size_t c = l->n_cap ? 2 * l->n_cap : 64;
        size_t *v = c > SIZE_MAX / sizeof *v ? NULL : realloc(l->end, c * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        l->end = v;
        l->n_cap = c;
    }
    l->end[l->n++] = l->used;
    return 0;
}

/* p (len bytes) appended to the list's last string. */
static int list_put(dec_list *l, const char *p, size_t len)
{
    if (len == 0)
        return 0;
    if (len > l->cap - l->used) {
        size_t c = l->cap;
        while (len > c - l->used) {
            if (c > SIZE_MAX / 2)
                return ENC_ENOMEM;
            c *= 2;
        }
        char *v = realloc(l->bytes, c);
        if (!v)
            return ENC_ENOMEM;
        l->bytes = v;
        l->cap = c;
    }
    memcpy(l->bytes + l->used, p, len);
    l->used += len;
    l->end[l->n - 1] = l->used;
    return 0;
}

static const char *list_at(const dec_list *l, size_t i, size_t *len)
{
    size_t a = i ? l->end[i - 1] : 0;
    *len = l->end[i] - a;
    return l->bytes + a;
}

/* The UTF-8 length of the character at p (the strings are all UTF-8). */
static size_t char_len(const char *p)
{
    size_t l;
    tok_utf8_get((const unsigned char *)p, &l);
    return l;
}

/* Rust's str::replace into l's last string: s (n bytes) with each from
 * (left to right, not overlapping) as to; an empty from matches before
 * each character and at the end. */
static int put_replaced(dec_list *l, const char *s, size_t n, const char *from, size_t from_len,
                        const char *to, size_t to_len)
{
    int rc = 0;
    if (from_len == 0) {
        rc = list_put(l, to, to_len);
        for (size_t i = 0, k; i < n && rc == 0; i += k) {
            k = char_len(s + i);
            if ((rc = list_put(l, s + i, k)) == 0)
                rc = list_put(l, to, to_len);
        }
        return rc;
    }
    size_t last = 0;
    for (size_t i = 0; i + from_len <= n;) {
        if (memcmp(s + i, from, from_len) != 0) {
            i++;
            continue;
        }
        if ((rc = list_put(l, s + last, i - last)) < 0 || (rc = list_put(l, to, to_len)) < 0)
            return rc;
        i += from_len;
        last = i;
    }
    return list_put(l, s + last, n - last);
}

/* String::from_utf8_lossy into l's last string: each invalid sequence (a
 * lead byte and the continuation bytes that fit it, or a stray byte) as
 * one U+FFFD, as Rust's Utf8Chunks cuts them. */
static int put_lossy(dec_list *l, const unsigned char *p, size_t n)
{
    static const char fffd[] = "\xef\xbf\xbd";
    int rc = 0;
    size_t valid = 0; /* p[valid, i) is valid, not yet written */
    for (size_t i = 0; i < n && rc == 0;) {
        const unsigned char b = p[i];
        const size_t width = b < 0x80                 ? 1
                             : b >= 0xC2 && b <= 0xDF ? 2
                             : b >= 0xE0 && b <= 0xEF ? 3
                             : b >= 0xF0 && b <= 0xF4 ? 4
                                                      : 0;
        /* the second byte's range by the lead, the others' 80..BF */
        const unsigned lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
        const unsigned hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
        size_t k = 1;
        while (k < width && i + k < n && p[i + k] >= (k == 1 ? lo : 0x80) &&
               p[i + k] <= (k == 1 ? hi : 0xBF))
            k++;
        if (width != 0 && k == width) {
            i += k;
            continue;
        }
        if ((rc = list_put(l, (const char *)p + valid, i - valid)) == 0)
            rc = list_put(l, fffd, 3);
        i += k;
        valid = i;
    }
    return rc < 0 ? rc : list_put(l, (const char *)p + valid, n - valid);
}

/* ---- running them ------------------------------------------------------------- */

typedef struct dec_run {
    dec_list *in, *out; /* the tokens, and the next decoder's */
    dec_list tmp[4];    /* one string each: a token's steps */
    tok_str s;          /* Replace's token */
} dec_run;

/* WordPiece's cleanup (decoders/wordpiece.rs), each replacement over the
 * last one's result. */
static const char *const cleanups[][2] = {
    {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
    {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
    {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* s (n bytes) cleaned up into l's last string, through r->tmp[0] and [1]. */
static int put_cleanup(dec_run *r, dec_list *l, const char *s, size_t n)
{
    int rc = 0;
    for (size_t k = 0; k < sizeof cleanups / sizeof cleanups[0] && rc == 0; k++) {
        dec_list *step = &r->tmp[k % 2];
        list_clear(step);
        if ((rc = list_open(step)) < 0)
            return rc;
        rc = put_replaced(step, s, n, cleanups[k][0], strlen(cleanups[k][0]), cleanups[k][1],
                          strlen(cleanups[k][1]));
        s = list_at(step, 0, &n);
    }
    return rc < 0 ? rc : list_put(l, s, n);
}

/* A fresh one-string list of r's (tmp[2] or [3]). */
static dec_list *scratch(dec_run *r, int i, int *rc)
{
    list_clear(&r->tmp[i]);
    *rc = list_open(&r->tmp[i]);
    return &r->tmp[i];
}

static int run_wordpiece(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n, len;
        const char *p = list_at(r->in, i, &n);
        dec_list *t = scratch(r, 2, &rc);
        if (rc < 0)
            break;
        if (i == 0)
            rc = list_put(t, p, n);
        else if (n >= d->len && memcmp(p, d->text, d->len) == 0)
            rc = list_put(t, p + d->len, n - d->len);
        else if ((rc = list_put(t, " ", 1)) == 0)
            rc = list_put(t, p, n);
        p = list_at(t, 0, &len);
        if (rc == 0 && (rc = list_open(r->out)) == 0)
            rc = d->cleanup ? put_cleanup(r, r->out, p, len) : list_put(r->out, p, len);
    }
    return rc;
}

/* Consecutive equal tokens once, the padding token taken out, and with
 * cleanup, WordPiece's cleanup and the word delimiter as a space (without,
 * the delimiter stays); the tokens left empty go. */
static int run_ctc(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n, pn, len;
        const char *p = list_at(r->in, i, &n);
        if (i > 0) {
            const char *prev = list_at(r->in, i - 1, &pn);
            if (pn == n && memcmp(prev, p, n) == 0)
                continue;
        }
        dec_list *t = scratch(r, 2, &rc);
        if (rc < 0 || (rc = put_replaced(t, p, n, d->text, d->len, "", 0)) < 0)
            break;
        p = list_at(t, 0, &len);
        if (d->cleanup) {
            dec_list *c = scratch(r, 3, &rc);
            if (rc < 0 || (rc = put_cleanup(r, c, p, len)) < 0)
                break;
            p = list_at(c, 0, &len);
        }
        if ((rc = list_open(r->out)) < 0)
            break;
        rc = d->cleanup ? put_replaced(r->out, p, len, d->delim, d->delim_len, " ", 1)
                        : list_put(r->out, p, len);
        if (r->out->end[r->out->n - 1] == (r->out->n > 1 ? r->out->end[r->out->n - 2] : 0))
            r->out->n--; /* empty */
    }
    return rc;
}

/* Each token's characters as the bytes they stand for, a token with a
 * character outside the table as its own UTF-8; all of it one string,
 * invalid UTF-8 as U+FFFD. */
static int run_byte_level(dec_run *r)
{
    int rc = 0;
    dec_list *bytes = scratch(r, 2, &rc);
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n;
        const char *p = list_at(r->in, i, &n);
        bool all = true;
        for (size_t k = 0, l; k < n && all; k += l)
            all = tok_char_byte_of(tok_utf8_get((const unsigned char *)p + k, &l)) >= 0;
        if (!all) {
            rc = list_put(bytes, p, n);
            continue;
        }
        for (size_t k = 0, l; k < n && rc == 0; k += l) {
            const char c = (char)tok_char_byte_of(tok_utf8_get((const unsigned char *)p + k, &l));
            rc = list_put(bytes, &c, 1);
        }
    }
    if (rc < 0)
        return rc;
    size_t n;
    const char *p = list_at(bytes, 0, &n);
    if ((rc = list_open(r->out)) == 0)
        rc = put_lossy(r->out, (const unsigned char *)p, n);
    return rc;
}

/* A token "<0xHH>" as its byte, else -1 (u8::from_str_radix(HH, 16), which
 * takes "+H" too). */
static int fallback_byte(const char *p, size_t n)
{
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    int d[2];
    for (int k = 0; k < 2; k++) {
        const char c = p[3 + k];
        d[k] = c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
               : c == '+' && k == 0   ? 0
                                      : -1;
    }
    return d[0] < 0 || d[1] < 0 ? -1 : d[0] * 16 + d[1];
}

/* The bytes of a run of byte tokens: one token when they are UTF-8, else
 * one U+FFFD token for each. */
static int flush_bytes(dec_list *out, dec_list *bytes, size_t count)
{
    size_t n;
    const char *p = list_at(bytes, 0, &n);
    int rc = 0;
    if (count == 0)
        return 0;
    if (tok_utf8_invalid_at(p, n) < 0) {
        if ((rc = list_open(out)) == 0)
            rc = list_put(out, p, n);
    } else {
        for (size_t i = 0; i < count && rc == 0; i++)
            if ((rc = list_open(out)) == 0)
                rc = list_put(out, "\xef\xbf\xbd", 3);
    }
    list_clear(bytes);
    return rc < 0 ? rc : list_open(bytes);
}

static int run_byte_fallback(dec_run *r)
{
    int rc = 0;
    size_t count = 0;
    dec_list *bytes = scratch(r, 2, &rc);
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n;
        const char *p = list_at(r->in, i, &n);
        const int b = fallback_byte(p, n);
        if (b >= 0) {
            const char c = (char)b;
            rc = list_put(bytes, &c, 1);
            count++;
            continue;
        }
        if ((rc = flush_bytes(r->out, bytes, count)) == 0 && (rc = list_open(r->out)) == 0)
            rc = list_put(r->out, p, n);
        count = 0;
    }
    return rc < 0 ? rc : flush_bytes(r->out, bytes, count);
}

/* Each replacement a space, but in the first token when the scheme
 * prepends one: there every replacement goes. */
static int run_metaspace(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n;
        const char *p = list_at(r->in, i, &n);
        if ((rc = list_open(r->out)) < 0)
            break;
        for (size_t k = 0, l; k < n && rc == 0; k += l) {
            if (tok_utf8_get((const unsigned char *)p + k, &l) != d->ch)
                rc = list_put(r->out, p + k, l);
            else if (i != 0 || !d->prepended)
                rc = list_put(r->out, " ", 1);
        }
    }
    return rc;
}

/* Up to start leading and stop trailing content characters off each token.
 * Where the crate panics (a token stripped whole from its end, or from both
 * ends past each other) the token is left empty. */
static int run_strip(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n, a = 0, b, l;
        const char *p = list_at(r->in, i, &n);
        for (size_t k = 0; k < d->start && a < n; k++, a += l)
            if (tok_utf8_get((const unsigned char *)p + a, &l) != d->ch)
                break;
        b = n;
        for (size_t k = 0; k < d->stop && b > 0; k++) {
            size_t s = b - 1;
            while (s > 0 && ((unsigned char)p[s] & 0xC0) == 0x80)
                s--;
            if (tok_utf8_get((const unsigned char *)p + s, &l) != d->ch)
                break;
            b = s;
        }
        if ((rc = list_open(r->out)) == 0 && b > a)
            rc = list_put(r->out, p + a, b - a);
    }
    return rc;
}

typedef struct replace_walk {
    dec_list *out;
    const char *p;  /* the token */
    size_t n, last; /* its bytes; the end of the last match */
    const tok_str *s;
    const tok_decoder *d;
} replace_walk;

static int replace_match(size_t a, size_t b, void *ctx)
{
    replace_walk *w = ctx;
    const size_t ba = a < w->s->n ? w->s->os[a] : w->n, bb = b < w->s->n ? w->s->os[b] : w->n;
    int rc = list_put(w->out, w->p + w->last, ba - w->last);
    w->last = bb;
    return rc < 0 ? rc : list_put(w->out, w->d->text, w->d->len);
}

/* Each match of the pattern (find_matches) as the content. */
static int run_replace(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        replace_walk w = {.out = r->out, .s = &r->s, .d = d};
        w.p = list_at(r->in, i, &w.n);
        if ((rc = list_open(r->out)) < 0 || (rc = tok_str_from_utf8(&r->s, w.p, w.n, 0)) < 0 ||
            (rc = tok_regex_each(d->re, &r->s, replace_match, &w)) < 0)
            break;
        rc = list_put(r->out, w.p + w.last, w.n - w.last);
    }
    return rc;
}

static int run_bpe(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    for (size_t i = 0; i < r->in->n && rc == 0; i++) {
        size_t n;
        const char *p = list_at(r->in, i, &n);
        const bool last = i + 1 == r->in->n;
        if ((rc = list_open(r->out)) == 0)
            rc = put_replaced(r->out, p, n, d->text, d->len, last ? "" : " ", last ? 0 : 1);
    }
    return rc;
}

/* decode_chain: r->in's tokens through d, the result left in r->in. */
static int run(const tok_decoder *d, dec_run *r)
{
    int rc = 0;
    if (d->kind == DEC_SEQUENCE) {
        for (size_t i = 0; i < d->n_seq && rc == 0; i++)
            rc = run(d->seq[i], r);
        return rc;
    }
    list_clear(r->out);
    switch (d->kind) {
    case DEC_BPE:
        rc = run_bpe(d, r);
        break;
    case DEC_BYTE_LEVEL:
        rc = run_byte_level(r);
        break;
    case DEC_WORDPIECE:
        rc = run_wordpiece(d, r);
        break;
    case DEC_METASPACE:
        rc = run_metaspace(d, r);
        break;
    case DEC_CTC:
        rc = run_ctc(d, r);
        break;
    case DEC_REPLACE:
        rc = run_replace(d, r);
        break;
    case DEC_FUSE:
        if ((rc = list_open(r->out)) == 0)
            rc = list_put(r->out, r->in->bytes, r->in->used);
        break;
    case DEC_STRIP:
        rc = run_strip(d, r);
        break;
    case DEC_BYTE_FALLBACK:
        rc = run_byte_fallback(r);
        break;
    case DEC_SEQUENCE:
        break;
    }
    dec_list *t = r->in;
    r->in = r->out;
    r->out = t;
    return rc;
}

/* ---- tok_decode ------------------------------------------------------------------ */

/* The token an id decodes from: an added token's normalized form
 * (its pattern), or the vocabulary's. */
static const char *token_of(const tok_tokenizer *t, int32_t id)
{
    if (id >= 0 && (size_t)id < t->n_added_ids && t->added_by_id[id] >= 0)
        return t->added[t->added_by_id[id]].pattern;
    return tok_model_id_to_token(t->model, id);
}

/* The decoder chain over r's input tokens (r->in), then the text: the
 * pieces concatenated (Decoder::decode), or without a decoder joined by
 * spaces.  Frees r's lists. */
static int decode_finish(const tok_tokenizer *t, dec_run *r, int rc, char **out, size_t *len,
                         enc_error *err)
{
    if (rc == 0 && t->decoder && (rc = run(t->decoder, r)) < 0)
        rc = rc == ENC_ENOMEM ? enc_error_set(err, rc, "out of memory decoding")
                              : enc_error_set(err, rc, "decoder: %s", enc_strerror(rc));
    const size_t spaces = t->decoder || r->in->n == 0 ? 0 : r->in->n - 1;
    char *text = rc == 0 ? malloc(r->in->used + spaces + 1) : NULL;
    if (rc == 0 && !text)
        rc = enc_error_set(err, ENC_ENOMEM, "out of memory for the decoded text");
    if (rc == 0) {
        size_t k = 0;
        for (size_t i = 0; i < r->in->n; i++) {
            size_t l;
            const char *p = list_at(r->in, i, &l);
            if (i > 0 && spaces)
                text[k++] = ' ';
            memcpy(text + k, p, l);
            k += l;
        }
        text[k] = '\0';
        *out = text;
        *len = k;
    }
    list_free(r->in);
    list_free(r->out);
    for (size_t i = 0; i < sizeof r->tmp / sizeof r->tmp[0]; i++)
        list_free(&r->tmp[i]);
    tok_str_free(&r->s);
    return rc;
}

int tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **out,
               size_t *len, enc_error *err)
{
    *out = NULL;
    *len = 0;
    if (t->decoder_error.status)
        return enc_error_set(err, t->decoder_error.status, "%s", t->decoder_error.message);
    dec_list lists[2] = {{0}};
    dec_run r = {.in = &lists[0], .out = &lists[1]};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *s = token_of(t, ids[i]);
        if (!s && (ids[i] < 0 || (size_t)ids[i] >= tok_id_count(t))) {
            rc = enc_error_set(err, ENC_EINVAL,
                               "ids[%zu]: %d is out of range (the tokenizer has %zu token ids)", i,
                               (int)ids[i], tok_id_count(t));
        } else if (!s) {
            rc = enc_error_set(err, ENC_EINVAL, "ids[%zu]: no token has id %d", i, (int)ids[i]);
        } else if (skip_special &&
                   bsearch(&s, t->specials, t->n_specials, sizeof *t->specials, by_text)) {
            continue; /* is_special_token: its text is a special token's content */
        } else if ((rc = list_open(r.in)) < 0 || (rc = list_put(r.in, s, strlen(s))) < 0) {
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory for the tokens");
        }
    }
    return decode_finish(t, &r, rc, out, len, err);
}

int tok_decode_tokens(const tok_tokenizer *t, const char *const *tokens, size_t n, char **out,
                      size_t *len, enc_error *err)
{
    *out = NULL;
    *len = 0;
    if (t->decoder_error.status)
        return enc_error_set(err, t->decoder_error.status, "%s", t->decoder_error.message);
    dec_list lists[2] = {{0}};
    dec_run r = {.in = &lists[0], .out = &lists[1]};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((rc = list_open(r.in)) < 0 || (rc = list_put(r.in, tokens[i], strlen(tokens[i]))) < 0)
            rc = enc_error_set(err, ENC_ENOMEM, "out of memory for the tokens");
    return decode_finish(t, &r, rc, out, len, err);
}
