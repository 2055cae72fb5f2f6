/* str.c - tok_str_*: the normalized string with its spans, and the
 * transform that rebuilds one (tok_str_xform). */
#include "tokenizer/str.h"

#include "base/error.h"
#include "tokenizer/utf8.h"

#include <stdlib.h>
#include <string.h>

void tok_str_free(tok_str *s)
{
    if (!s)
        return;
    free(s->cp);
    free(s->os);
    free(s->oe);
    memset(s, 0, sizeof *s);
}

int tok_str_reserve(tok_str *s, size_t cap)
{
    if (cap <= s->cap)
        return 0;
    size_t c = s->cap ? s->cap : 16;
    while (c < cap)
        c *= 2;
    uint32_t *cp = realloc(s->cp, c * sizeof *cp);
    if (!cp)
        return ENC_ENOMEM;
    s->cp = cp;
    uint32_t *os = realloc(s->os, c * sizeof *os);
    if (!os)
        return ENC_ENOMEM;
    s->os = os;
    uint32_t *oe = realloc(s->oe, c * sizeof *oe);
    if (!oe)
        return ENC_ENOMEM;
    s->oe = oe;
    s->cap = c;
    return 0;
}

int tok_str_push(tok_str *s, uint32_t cp, uint32_t os, uint32_t oe)
{
    if (s->n == s->cap && tok_str_reserve(s, s->n + 1) < 0)
        return ENC_ENOMEM;
    s->cp[s->n] = cp;
    s->os[s->n] = os;
    s->oe[s->n] = oe;
    s->n++;
    return 0;
}

int tok_str_from_utf8(tok_str *s, const char *text, size_t len, uint32_t base)
{
    s->n = 0;
    if (tok_str_reserve(s, len) < 0)
        return ENC_ENOMEM;
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t l;
        uint32_t c = tok_utf8_get(p + i, &l);
        s->cp[s->n] = c;
        s->os[s->n] = base + (uint32_t)i;
        s->oe[s->n] = base + (uint32_t)(i + (size_t)l);
        s->n++;
        i += (size_t)l;
    }
    return 0;
}

int tok_str_slice(const tok_str *s, size_t a, size_t b, tok_str *out)
{
    out->n = 0;
    if (tok_str_reserve(out, b - a) < 0)
        return ENC_ENOMEM;
    memcpy(out->cp, s->cp + a, (b - a) * sizeof *out->cp);
    memcpy(out->os, s->os + a, (b - a) * sizeof *out->os);
    memcpy(out->oe, s->oe + a, (b - a) * sizeof *out->oe);
    out->n = b - a;
    return 0;
}

long tok_str_utf8(const tok_str *s, size_t a, size_t b, char **buf, size_t *cap)
{
    size_t need = (b - a) * 4 + 1;
    if (need > *cap) {
        char *nb = realloc(*buf, need);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = need;
    }
    size_t len = 0;
    for (size_t i = a; i < b; i++)
        len += (size_t)tok_utf8_put(s->cp[i], *buf + len);
    (*buf)[len] = '\0';
    return (long)len;
}

/* ---- the transform --------------------------------------------------------- */

void tok_str_xform_begin(tok_str_xform *x, tok_str *src, size_t initial_removed)
{
    x->src = src;
    memset(&x->out, 0, sizeof x->out);
    x->at = initial_removed < src->n ? initial_removed : src->n;
    x->failed = tok_str_reserve(&x->out, src->n) < 0;
}

void tok_str_xform_push(tok_str_xform *x, uint32_t cp, long change)
{
    if (x->failed)
        return;
    const tok_str *s = x->src;
    uint32_t os = 0, oe = 0;
    if (change > 0) {
        /* inserted: the span of the source char before the cursor */
        if (x->at > 0)
            os = s->os[x->at - 1], oe = s->oe[x->at - 1];
    } else {
        /* replaces the next source char (Rust would panic past the end: the
         * last span is kept instead) */
        if (x->at < s->n)
            os = s->os[x->at], oe = s->oe[x->at], x->at++;
        else if (s->n > 0)
            os = s->os[s->n - 1], oe = s->oe[s->n - 1];
        size_t removed = (size_t)-change;
        x->at = removed < s->n - x->at ? x->at + removed : s->n;
    }
    if (tok_str_push(&x->out, cp, os, oe) < 0)
        x->failed = 1;
}

int tok_str_xform_end(tok_str_xform *x)
{
    if (x->failed) {
        tok_str_free(&x->out);
        return ENC_ENOMEM;
    }
    tok_str_free(x->src);
    *x->src = x->out;
    memset(&x->out, 0, sizeof x->out);
    return 0;
}
