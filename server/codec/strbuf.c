/* strbuf.c - the growing text buffer. */
#include "codec/strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool strbuf_reserve(strbuf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra <= b->cap - b->len)
        return true;
    size_t want = b->cap ? b->cap : 4096;
    while (want - b->len < extra) {
        if (want > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        want *= 2;
    }
    char *s = realloc(b->s, want);
    if (!s) {
        b->failed = true;
        return false;
    }
    b->s = s;
    b->cap = want;
    return true;
}

void strbuf_put(strbuf *b, const void *data, size_t n)
{
    if (strbuf_reserve(b, n)) {
        memcpy(b->s + b->len, data, n);
        b->len += n;
    }
}

void strbuf_puts(strbuf *b, const char *s)
{
    strbuf_put(b, s, strlen(s));
}

void strbuf_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (!strbuf_reserve(b, (size_t)n + 1)) /* vsnprintf writes the NUL too */
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *strbuf_detach(strbuf *b, size_t *len)
{
    strbuf_put(b, "", 1);
    char *s = b->failed ? NULL : b->s;
    if (s && len)
        *len = b->len - 1;
    if (!s)
        free(b->s);
    *b = (strbuf){0};
    return s;
}

void strbuf_free(strbuf *b)
{
    free(b->s);
    *b = (strbuf){0};
}
