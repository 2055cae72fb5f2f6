/* str.c - the tokenizer's small containers: the normalized string with its
 * spans (tok_str), the pieces of a pre-tokenized string, token lists, UTF-8,
 * and the JSON readers the components' parsers share. */
#include "tok_internal.h"

#include <stdio.h>
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

uint32_t tok_utf8_get(const unsigned char *p, size_t *len)
{
    if (p[0] < 0x80) {
        *len = 1;
        return p[0];
    }
    if (p[0] < 0xE0) {
        *len = 2;
        return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if (p[0] < 0xF0) {
        *len = 3;
        return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    *len = 4;
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
           (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
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

int tok_utf8_put(uint32_t c, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | c >> 6);
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | c >> 12);
        o[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | c >> 18);
    o[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
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

long tok_utf8_invalid_at(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        const unsigned char c = p[i];
        size_t n;
        uint32_t min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return (long)i;
        }
        if (len - i < n)
            return (long)i;
        for (size_t k = 1; k < n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return (long)i;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return (long)i;
        i += n;
    }
    return -1;
}

/* ---- pieces and tokens ----------------------------------------------------- */

void tok_pieces_free(tok_pieces *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        tok_str_free(&p->v[i].s);
    free(p->v);
    memset(p, 0, sizeof *p);
}

int tok_pieces_take(tok_pieces *p, tok_str *s, bool done, tok_tok token)
{
    if (p->n == p->cap) {
        size_t c = p->cap ? 2 * p->cap : 8;
        tok_piece *v = realloc(p->v, c * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        p->v = v;
        p->cap = c;
    }
    p->v[p->n++] = (tok_piece){.s = *s, .done = done, .token = token};
    memset(s, 0, sizeof *s);
    return 0;
}

int tok_toks_push(tok_toks *t, int32_t id, uint32_t os, uint32_t oe)
{
    if (t->n == t->cap) {
        size_t c = t->cap ? 2 * t->cap : 16;
        tok_tok *v = realloc(t->v, c * sizeof *v);
        if (!v)
            return ENC_ENOMEM;
        t->v = v;
        t->cap = c;
    }
    t->v[t->n++] = (tok_tok){.id = id, .os = os, .oe = oe};
    return 0;
}

/* ---- JSON ---------------------------------------------------------------- */

int tok_json_bool(const json_t *obj, const char *path, const char *key, bool dflt, bool *out,
                  enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

int tok_json_string(const json_t *obj, const char *path, const char *key, const char *dflt,
                    const char **out, enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be a string", path, key);
    *out = json_string_value(v);
    return 0;
}

int tok_json_int(const json_t *obj, const char *path, const char *key, long dflt, long *out,
                 enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s must be an integer", path, key);
    *out = (long)json_integer_value(v);
    return 0;
}

int tok_json_need(const json_t *obj, const char *path, const char *key, enc_error *err)
{
    if (!json_object_get(obj, key))
        return enc_error_set(err, ENC_EFORMAT, "%s.%s is missing", path, key);
    return 0;
}

int tok_json_need_bool(const json_t *obj, const char *path, const char *key, bool *out,
                       enc_error *err)
{
    int rc = tok_json_need(obj, path, key, err);
    return rc < 0 ? rc : tok_json_bool(obj, path, key, false, out, err);
}

int tok_json_unsupported(const char *path, const char *key, const json_t *value, enc_error *err)
{
    char *text = value ? json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    char shown[64] = "";
    if (text) {
        snprintf(shown, sizeof shown, "%s", text);
        if (strlen(text) >= sizeof shown)
            memcpy(shown + sizeof shown - 4, "...", 4);
    }
    free(text);
    return enc_error_set(err, ENC_EINVAL, "%s.%s: %s is not supported", path, key, shown);
}
