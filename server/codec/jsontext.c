/* jsontext.c - steps through JSON text in place (see jsontext.h). */
#include "codec/jsontext.h"

#include <stddef.h>
#include <string.h>

const char *jt_skip_string(const char *p, const char *end)
{
    const char *from = p + 1;
    for (;;) {
        const char *q = memchr(from, '"', (size_t)(end - from));
        if (!q)
            return NULL;
        /* the quote ends the string unless an odd run of backslashes escapes it */
        size_t backslashes = 0;
        while (q - backslashes > p + 1 && q[-1 - (ptrdiff_t)backslashes] == '\\')
            backslashes++;
        if (backslashes % 2 == 0)
            return q + 1;
        from = q + 1;
    }
}

const char *jt_skip_nested(const char *p, const char *end)
{
    size_t depth = 0;
    while (p < end) {
        const char c = *p;
        if (c == '"') {
            if (!(p = jt_skip_string(p, end)))
                return NULL;
            continue;
        }
        if (c == '[' || c == '{')
            depth++;
        else if ((c == ']' || c == '}') && --depth == 0)
            return p + 1;
        p++;
    }
    return NULL;
}

const char *jt_skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return jt_skip_string(p, end);
    if (*p == '[' || *p == '{')
        return jt_skip_nested(p, end);
    const char *q = p;
    while (q < end && !jt_is_ws(*q) && *q != ',' && *q != '}' && *q != ']')
        q++;
    return q > p ? q : NULL;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool jt_key_is(const char *s, size_t n, const char *want)
{
    if (!memchr(s, '\\', n))
        return n == strlen(want) && memcmp(s, want, n) == 0;
    size_t w = 0;
    for (size_t i = 0; i < n; i++, w++) {
        char c = s[i];
        if (c == '\\') { /* only \u00XX can spell an ASCII letter */
            if (i + 5 >= n || s[i + 1] != 'u')
                return false;
            int cp = 0;
            for (size_t h = 2; h < 6; h++) {
                const int v = hex_value(s[i + h]);
                if (v < 0)
                    return false;
                cp = cp * 16 + v;
            }
            if (cp == 0 || cp >= 0x80)
                return false;
            c = (char)cp;
            i += 5;
        }
        if (c == '\0' || want[w] != c)
            return false;
    }
    return want[w] == '\0';
}
