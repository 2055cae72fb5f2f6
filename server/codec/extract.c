/* extract.c - the numeric arrays of a JSON body, read from its text (see
 * extract.h): finding them, scanning their syntax and shape, cutting them
 * out of what jansson reads, and reading their numbers.
 *
 * The scan is strict RFC 8259.  Inside an array it checks every value's
 * syntax itself (strings: escapes and UTF-8; nesting up to JX_MAX_DEPTH),
 * so that what it cuts out never hides invalid JSON from jansson. */
#include "codec/extract.h"

#include "codec/jsonnum.h"
#include "codec/jsontext.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values nested deeper than this (arrays and objects, from the scanned
 * array down) are refused as invalid, as jansson refuses them. */
#define JX_MAX_DEPTH 2048

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* ---- checking any JSON value ------------------------------------------------------------ */

static bool is_hex(char c)
{
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Past the string at p ('"'), its escapes and UTF-8 checked; NULL (with
 * *bad) when it is not a valid JSON string. */
static const char *string_end(const char *p, const char *end, const char **bad)
{
    const unsigned char *s = (const unsigned char *)p + 1, *e = (const unsigned char *)end;
    while (s < e) {
        const unsigned c = *s;
        if (c == '"')
            return (const char *)s + 1;
        if (c < 0x20)
            break;
        if (c == '\\') {
            if (s + 1 >= e)
                break;
            const char x = (char)s[1];
            if (x == 'u') {
                if (e - s < 6 || !is_hex((char)s[2]) || !is_hex((char)s[3]) ||
                    !is_hex((char)s[4]) || !is_hex((char)s[5]))
                    break;
                s += 6;
            } else if (strchr("\"\\/bfnrt", x) && x) {
                s += 2;
            } else {
                break;
            }
            continue;
        }
        if (c < 0x80) {
            s++;
            continue;
        }
        /* UTF-8 (RFC 3629): no overlong forms, no surrogates, up to U+10FFFF */
        size_t n;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            n = 2;
        else if (c >= 0xe0 && c <= 0xef)
            n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        else
            break;
        if ((size_t)(e - s) < n || s[1] < lo || s[1] > hi)
            break;
        for (size_t i = 2; i < n; i++)
            if ((s[i] & 0xc0) != 0x80)
                goto fail;
        s += n;
    }
fail:
    *bad = (const char *)s;
    return NULL;
}

/* Past the value at p, whatever it is, its syntax checked; NULL with *bad
 * and *why when it is not valid JSON. */
static const char *skip_value(const char *p, const char *end, const char **bad, const char **why)
{
    unsigned char in_object[JX_MAX_DEPTH / 8];
    size_t depth = 0;
    for (;;) {
        /* a value starts at p */
        if (p >= end) {
            *why = "expected a value";
            goto fail;
        }
        const char c = *p;
        if (c == '[' || c == '{') {
            if (depth == JX_MAX_DEPTH) {
                *why = "arrays and objects nested too deep";
                goto fail;
            }
            if (c == '{')
                in_object[depth / 8] |= (unsigned char)(1u << depth % 8);
            else
                in_object[depth / 8] &= (unsigned char)~(1u << depth % 8);
            depth++;
            p = jt_skip_ws(p + 1, end);
            if (p < end && *p == (c == '[' ? ']' : '}')) {
                p++;
                depth--;
            } else if (c == '[') {
                continue;
            } else {
                goto key;
            }
        } else if (c == '"') {
            if (!(p = string_end(p, end, bad))) {
                *why = "invalid string";
                return NULL;
            }
        } else if (c == '-' || is_digit(c)) {
            jsonnum_scanned t;
            if (!jsonnum_scan(p, (size_t)(end - p), &t)) {
                *why = "invalid number";
                goto fail;
            }
            p += t.len;
        } else {
            const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
            const size_t n = strlen(word);
            if ((size_t)(end - p) < n || memcmp(p, word, n) != 0) {
                *why = "expected a value";
                goto fail;
            }
            p += n;
        }
        /* after a value: a comma or the ends of containers */
        for (;;) {
            if (depth == 0)
                return p;
            const bool obj = in_object[(depth - 1) / 8] >> (depth - 1) % 8 & 1;
            p = jt_skip_ws(p, end);
            if (p < end && *p == ',') {
                p = jt_skip_ws(p + 1, end);
                if (obj)
                    goto key;
                break;
            }
            if (p < end && *p == (obj ? '}' : ']')) {
                p++;
                depth--;
                continue;
            }
            *why = obj ? "expected ',' or '}'" : "expected ',' or ']'";
            goto fail;
        }
        continue;
    key:
        if (p >= end || *p != '"') {
            *why = "expected a string (an object's key)";
            goto fail;
        }
        if (!(p = string_end(p, end, bad))) {
            *why = "invalid string";
            return NULL;
        }
        p = jt_skip_ws(p, end);
        if (p >= end || *p != ':') {
            *why = "expected ':'";
            goto fail;
        }
        p = jt_skip_ws(p + 1, end);
    }
fail:
    *bad = p;
    return NULL;
}

/* ---- the scan ------------------------------------------------------------------------------ */

/* Whether the place at[0..depth) comes before the fault noted so far, in
 * document order (an array before its entries). */
static bool comes_first(const jx_array *a, const size_t *at, int depth)
{
    if (a->fault == JX_OK)
        return true;
    for (int i = 0; i < depth && i < a->depth; i++)
        if (at[i] != a->at[i])
            return at[i] < a->at[i];
    return depth < a->depth;
}

static bool note(jx_array *a, jx_fault f, const size_t *at, int depth)
{
    if (!comes_first(a, at, depth))
        return false;
    a->fault = f;
    a->depth = depth;
    memcpy(a->at, at, (size_t)depth * sizeof *at);
    return true;
}

static const char *syntax(jx_array *a, const char *p, const char *why)
{
    a->fault = JX_SYNTAX;
    a->depth = 0;
    a->bad = p;
    a->why = why;
    return NULL;
}

static const char *kind_of(char c)
{
    switch (c) {
    case '[':
        return "an array";
    case '{':
        return "an object";
    case '"':
        return "a string";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}

/* The array at level l closed with n entries. */
static void close_array(jx_array *a, int l, size_t n, const size_t *at, bool *settled, bool *closed)
{
    if (!*settled) { /* an empty array ends the first entries */
        *settled = true;
        a->rank = l + 1;
    }
    const bool row = l == a->rank - 1;
    if (!closed[l]) { /* the first at its level */
        closed[l] = true;
        a->dims[l] = n;
    } else if (n != a->dims[l] && !(row && a->ragged) && note(a, JX_COUNT, at, l)) {
        a->entries = n;
    }
    if (row) {
        a->rows++;
        if (n > a->longest)
            a->longest = n;
    }
}

static const char *scan(const char *p, const char *end, jx_array *a, bool ragged)
{
    memset(a, 0, sizeof *a);
    a->start = p;
    a->ragged = ragged;
    size_t at[JX_MAX_RANK] = {0}; /* the entry read at each open level */
    bool closed[JX_MAX_RANK] = {false};
    int d = 0;            /* arrays open: the depth of the next value */
    bool settled = false; /* a->rank is known */
    if (p >= end || *p != '[')
        return syntax(a, p, "expected an array");
    for (;;) {
        /* a value at depth d starts at p (p < end) */
        const char c = *p;
        if (c == '[' && (settled ? d < a->rank : d < JX_MAX_RANK)) {
            at[d++] = 0;
            p = jt_skip_ws(p + 1, end);
            if (p == end)
                return syntax(a, p, "expected a value or ']'");
            if (*p != ']')
                continue;
            p++;
            close_array(a, --d, 0, at, &settled, closed);
        } else {
            if (!settled) { /* the first leaf */
                settled = true;
                a->rank = d;
                a->leaf = kind_of(c);
                if (c == '[' && note(a, JX_DEEP, at, d))
                    a->is = "an array";
            }
            if (c == '-' || is_digit(c)) {
                jsonnum_scanned t;
                if (!jsonnum_scan(p, (size_t)(end - p), &t))
                    return syntax(a, p, "invalid number");
                if (d != a->rank) {
                    if (note(a, JX_KIND, at, d))
                        a->is = "a number";
                } else {
                    a->count++;
                    if (t.mag > 38) { /* not certainly below 1e38 (FLT_MAX is 3.4e38) */
                        double v;
                        bool erange;
                        if (!jsonnum_strtod(p, t.len, &v, &erange)) {
                            a->fault = JX_OOM;
                            return NULL;
                        }
                        if (!(v <= FLT_MAX && v >= -FLT_MAX) && note(a, JX_RANGE, at, d))
                            a->value = v;
                    }
                }
                p += t.len;
            } else {
                const char *bad = p, *why = "expected a value";
                const char *q = skip_value(p, end, &bad, &why);
                if (!q)
                    return syntax(a, bad, why);
                if (note(a, JX_KIND, at, d))
                    a->is = kind_of(c);
                p = q;
            }
        }
        /* after a value: a comma, or the ends of arrays */
        for (;;) {
            if (d == 0) {
                a->end = p;
                return p;
            }
            p = jt_skip_ws(p, end);
            if (p < end && *p == ',') {
                at[d - 1]++;
                p = jt_skip_ws(p + 1, end);
                if (p == end)
                    return syntax(a, p, "expected a value");
                break;
            }
            if (p == end || *p != ']')
                return syntax(a, p, "expected ',' or ']'");
            p++;
            d--;
            close_array(a, d, at[d] + 1, at, &settled, closed);
        }
    }
}

const char *jx_scan(const char *p, const char *end, jx_array *a)
{
    return scan(p, end, a, false);
}

const char *jx_scan_rows(const char *p, const char *end, jx_array *a)
{
    return scan(p, end, a, true);
}

const char *jx_index_text(const size_t *at, int depth, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < depth && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "[%zu]", at[i]);
    return buf;
}

void jx_number_at(const jx_array *a, size_t k, size_t at[JX_MAX_RANK])
{
    for (int r = a->rank - 1; r >= 0; r--) {
        const size_t n = a->dims[r] ? a->dims[r] : 1;
        at[r] = k % n;
        k /= n;
    }
}

const char *jx_syntax_text(const jx_array *a, const char *text, char *buf, size_t size)
{
    size_t line = 1, column = 1;
    for (const char *c = text; c < a->bad; c++) {
        if (*c == '\n')
            line++, column = 1;
        else if ((*c & 0xc0) != 0x80) /* not a UTF-8 continuation byte */
            column++;
    }
    snprintf(buf, size, "invalid JSON at line %zu, column %zu: %s", line, column, a->why);
    return buf;
}

/* ---- reading the numbers ----------------------------------------------------------------- */

/* Reads every number of the checked text p[0..end) into x[0..n). */
static int read_numbers(const char *p, const char *end, float *x, size_t n)
{
    size_t k = 0;
    while (p < end) {
        const char c = *p;
        if (c != '-' && !is_digit(c)) {
            p++;
            continue;
        }
        double d;
        const size_t len = jsonnum_read(p, (size_t)(end - p), &d);
        if (len == 0)
            return -1;
        if (k < n)
            x[k] = (float)d;
        k++;
        p += len;
    }
    return k == n ? 0 : -2;
}

typedef struct half_read {
    const char *p, *end;
    float *x;
    size_t n;
    int rc;
} half_read;

static void *read_half(void *arg)
{
    half_read *h = arg;
    h->rc = read_numbers(h->p, h->end, h->x, h->n);
    return NULL;
}

/* Texts at least this long are read on two threads (about 1 ms each). */
#define READ_SPLIT_BYTES (1u << 20)

/* Whether q ends a row of numbers: a ']' right after a number. */
static bool ends_row(const char *start, const char *q)
{
    if (*q != ']')
        return false;
    while (q > start && jt_is_ws(q[-1]))
        q--;
    return q > start && is_digit(q[-1]);
}

int jx_read_f32(const jx_array *a, float *x)
{
    const char *p = a->start, *end = a->end;
    const size_t n = a->count;
    int rc;
    if ((size_t)(end - p) < READ_SPLIT_BYTES || a->rank < 2) {
        rc = read_numbers(p, end, x, n);
    } else {
        /* The first row end past the middle; the rows before it (each of
         * dims[rank - 1] numbers: the scan held them to it) say where the
         * second half's numbers go. */
        const char *mid = p + (end - p) / 2;
        while (mid < end && !ends_row(p, mid))
            mid++;
        size_t rows = 0; /* from one ']' to the next: a row is hundreds of bytes */
        for (const char *q = p; q <= mid && (q = memchr(q, ']', (size_t)(mid + 1 - q))); q++)
            rows += ends_row(p, q);
        const size_t before = rows * a->dims[a->rank - 1];
        half_read h = {mid + 1, end, x + before, n - before, 0};
        pthread_t t;
        if (mid >= end || before > n || pthread_create(&t, NULL, read_half, &h) != 0) {
            rc = read_numbers(p, end, x, n);
        } else {
            rc = read_numbers(p, mid + 1, x, before);
            pthread_join(t, NULL);
            rc = rc < 0 ? rc : h.rc;
        }
    }
    return rc == -2 ? -1 : rc; /* -2, a count that changed, cannot happen */
}

/* The integer at p (a number the scan checked) into *v: its length, or 0
 * when it has a fraction or an exponent (*fraction) or is outside int32. */
static size_t read_int(const char *p, const char *end, int32_t *v, bool *fraction)
{
    jsonnum_scanned t;
    jsonnum_scan(p, (size_t)(end - p), &t); /* the scan checked it */
    const bool neg = *p == '-';
    long long n = 0;
    *fraction = !t.integer;
    bool over = !t.integer || t.digits > 10;
    for (const char *s = p + neg; !over && s < p + t.len; s++)
        n = n * 10 + (*s - '0');
    if (over || (neg ? -n < INT32_MIN : n > INT32_MAX))
        return 0;
    *v = (int32_t)(neg ? -n : n);
    return t.len;
}

/* The token at p, for a fault's text. */
static size_t token_len(const char *p, const char *end)
{
    jsonnum_scanned t;
    jsonnum_scan(p, (size_t)(end - p), &t);
    return t.len;
}

int jx_read_i32(const jx_array *a, int *x, jx_int_fault *bad)
{
    const char *p = a->start, *end = a->end;
    size_t k = 0;
    while (p < end && k < a->count) {
        if (*p != '-' && !is_digit(*p)) {
            p++;
            continue;
        }
        int32_t v;
        bool fraction;
        const size_t len = read_int(p, end, &v, &fraction);
        if (!len) {
            *bad = (jx_int_fault){k, fraction, p, token_len(p, end), 0, k};
            return 1;
        }
        x[k++] = v;
        p += len;
    }
    return 0;
}

int jx_read_i32_rows(const jx_array *a, int32_t *x, size_t stride, size_t *row_len,
                     jx_int_fault *bad)
{
    /* The scan left numbers only, at depth rank: a '[' at depth rank - 1
     * opens a row, its ']' closes it. */
    const char *p = a->start, *end = a->end;
    const int rows_at = a->rank - 1;
    int depth = 0;
    size_t r = 0, i = 0;
    while (p < end) {
        const char c = *p;
        if (c == '[') {
            if (depth++ == rows_at)
                i = 0;
            p++;
        } else if (c == ']') {
            if (--depth == rows_at)
                row_len[r++] = i;
            p++;
        } else if (c == '-' || is_digit(c)) {
            int32_t v;
            bool fraction;
            const size_t len = read_int(p, end, &v, &fraction);
            if (!len) {
                *bad = (jx_int_fault){r * stride + i, fraction, p, token_len(p, end), r, i};
                return 1;
            }
            if (i < stride)
                x[r * stride + i] = v;
            i++;
            p += len;
        } else {
            p++;
        }
    }
    return 0;
}

/* ---- finding arrays, and what jansson reads ---------------------------------------------- */

const char *jx_object(const char *p, const char *end, jx_member_fn member, void *ctx)
{
    if (p >= end || *p != '{')
        return NULL;
    p = jt_skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        if (p >= end || *p != '"')
            return NULL;
        const char *key = p + 1;
        if (!(p = jt_skip_string(p, end)))
            return NULL;
        const size_t key_len = (size_t)(p - 1 - key);
        p = jt_skip_ws(p, end);
        if (p >= end || *p != ':')
            return NULL;
        p = jt_skip_ws(p + 1, end);
        if (p >= end || !(p = member(ctx, key, key_len, p, end)))
            return NULL;
        p = jt_skip_ws(p, end);
        if (p < end && *p == ',')
            p = jt_skip_ws(p + 1, end);
        else if (p < end && *p == '}')
            return p + 1;
        else
            return NULL;
    }
}

/* Whether n bytes are plain printable ASCII without a backslash.  Compiled
 * for AVX2 and plain x86-64 (a base64 string is half a megabyte at B=1
 * L=128). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static bool
plain_ascii(const unsigned char *c, size_t n)
{
    unsigned odd = 0;
    for (size_t i = 0; i < n; i++)
        odd |= (unsigned)(c[i] < 0x20) | (unsigned)(c[i] > 0x7e) | (unsigned)(c[i] == '\\');
    return !odd;
}

const char *jx_plain_string(const char *p, const char *end, const char **chars_end)
{
    if (p >= end || *p != '"')
        return NULL;
    const char *q = memchr(p + 1, '"', (size_t)(end - (p + 1)));
    if (!q || !plain_ascii((const unsigned char *)p + 1, (size_t)(q - (p + 1))))
        return NULL;
    *chars_end = q;
    return p + 1;
}

json_t *jx_loadb(const char *text, size_t len, size_t flags, json_error_t *err)
{
    json_t *root = json_loadb(text, len, flags, err);
    if (root || !strstr(err->text, "too big")) /* "too big (negative) integer" */
        return root;
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return NULL;
    memcpy(copy, text, len);
    jsonnum_widen(copy, len);
    root = json_loadb(copy, len, flags, err);
    free(copy);
    return root;
}

json_t *jx_load(const char *text, size_t len, const jx_cut *cuts, size_t n, json_error_t *jerr,
                bool *oom)
{
    /* U+0000 read; the caller refuses it where a string cannot take it */
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
    if (n == 0)
        return jx_loadb(text, len, flags, jerr);
    size_t cut = 0;
    for (size_t i = 0; i < n; i++)
        cut += (size_t)(cuts[i].end - cuts[i].start) - 2;
    char *doc = malloc(len - cut);
    if (!doc) {
        *oom = true;
        return NULL;
    }
    size_t m = 0;
    const char *from = text;
    for (size_t i = 0; i < n; i++) {
        memcpy(doc + m, from, (size_t)(cuts[i].start - from));
        m += (size_t)(cuts[i].start - from);
        doc[m++] = cuts[i].start[0];
        doc[m++] = cuts[i].end[-1];
        from = cuts[i].end;
    }
    memcpy(doc + m, from, (size_t)(text + len - from));
    m += (size_t)(text + len - from);
    json_t *root = jx_loadb(doc, m, flags, jerr);
    free(doc);
    if (root || !(doc = malloc(len)))
        return root;
    /* Invalid outside the cuts: again with each cut blanked in place, its
     * line breaks kept and one space per character (jansson counts
     * characters), so the line and column are text's. */
    m = 0;
    from = text;
    for (size_t i = 0; i < n; i++) {
        memcpy(doc + m, from, (size_t)(cuts[i].start - from));
        m += (size_t)(cuts[i].start - from);
        doc[m++] = cuts[i].start[0];
        for (const char *c = cuts[i].start + 1; c + 1 < cuts[i].end; c++) {
            if (*c == '\n')
                doc[m++] = '\n';
            else if ((*c & 0xc0) != 0x80)
                doc[m++] = ' ';
        }
        doc[m++] = cuts[i].end[-1];
        from = cuts[i].end;
    }
    memcpy(doc + m, from, (size_t)(text + len - from));
    m += (size_t)(text + len - from);
    json_error_t padded;
    json_t *again = jx_loadb(doc, m, flags, &padded);
    if (!again)
        *jerr = padded;
    json_decref(again);
    free(doc);
    return NULL;
}
