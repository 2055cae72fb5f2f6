/* framing.c - RFC 9112 framing and request-target checks (framing.h). */
#include "http/framing.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
 * "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA */
static bool is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              (c && strchr("!#$%&'*+-.^_`|~", c))))
            return false;
    }
    return true;
}

/* Content-Length = 1*DIGIT, within 64 bits. */
static bool read_length(const char *s, unsigned long long *out)
{
    unsigned long long v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        const unsigned d = (unsigned)(*s - '0');
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* The transfer codings of one Transfer-Encoding field ("chunked",
 * "gzip, chunked"), appended to what earlier fields listed: *codings counts
 * them, *chunked_at is the position of chunked (or -1).  Returns 0, or -1
 * with err set for a coding other than chunked or chunked twice. */
static int read_codings(const char *v, int *codings, int *chunked_at, api_error *err)
{
    char safe[API_SAFE_MAX + 4];
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        size_t n = strcspn(v, " \t,;");
        if (n == 0)
            break;
        if (n == 7 && strncasecmp(v, "chunked", 7) == 0) {
            if (*chunked_at >= 0)
                return api_error_set(err, API_BAD_REQUEST,
                                     "Transfer-Encoding lists chunked twice (RFC 9112 6.1)");
            *chunked_at = *codings;
        } else {
            char name[64];
            const size_t k = n < sizeof name - 1 ? n : sizeof name - 1;
            memcpy(name, v, k);
            name[k] = '\0';
            return api_error_set(err, API_NOT_IMPLEMENTED,
                                 "Transfer-Encoding %s is not supported: send the body with "
                                 "Content-Length or Transfer-Encoding: chunked",
                                 api_safe_text(name, safe));
        }
        (*codings)++;
        v += n;
        v += strcspn(v, ","); /* parameters (";q=...") are not ours to read */
    }
    return 0;
}

int framing_check(const char *version, const http_field *fields, size_t n, http_framing *fr,
                  api_error *err)
{
    char safe[API_SAFE_MAX + 4];
    *fr = (http_framing){.body = HTTP_BODY_NONE};
    const bool http11 = version && strcmp(version, "HTTP/1.1") == 0;
    int hosts = 0, lengths = 0, codings = 0, chunked_at = -1, te_fields = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = fields[i].name, *value = fields[i].value ? fields[i].value : "";
        if (!is_token(name))
            return api_error_set(err, API_BAD_REQUEST,
                                 "header field name '%s' is not a token (RFC 9110 5.1: no spaces, "
                                 "none before the colon)",
                                 api_safe_text(name, safe));
        if (strcasecmp(name, "Host") == 0) {
            hosts++;
        } else if (strcasecmp(name, "Content-Length") == 0) {
            unsigned long long v;
            if (!read_length(value, &v))
                return api_error_set(err, API_BAD_REQUEST,
                                     "Content-Length '%s' is not a number of bytes",
                                     api_safe_text(value, safe));
            if (lengths++ && v != fr->length)
                return api_error_set(err, API_BAD_REQUEST,
                                     "Content-Length is given twice with different values "
                                     "(%llu and %llu)",
                                     fr->length, v);
            fr->length = v;
        } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
            te_fields++;
            if (read_codings(value, &codings, &chunked_at, err) < 0)
                return -1;
        } else if (strcasecmp(name, "Expect") == 0) {
            fr->expect_continue = strcasecmp(value, "100-continue") == 0;
        }
    }
    if (http11 && hosts == 0)
        return api_error_set(err, API_BAD_REQUEST,
                             "Host is missing: HTTP/1.1 needs exactly one (RFC 9112 3.2)");
    if (hosts > 1)
        return api_error_set(err, API_BAD_REQUEST,
                             "Host is given %d times: a request names one (RFC 9112 3.2)", hosts);
    if (te_fields) {
        if (!http11)
            return api_error_set(err, API_BAD_REQUEST,
                                 "Transfer-Encoding needs HTTP/1.1 (RFC 9112 6.1)");
        if (lengths)
            return api_error_set(err, API_BAD_REQUEST,
                                 "Content-Length and Transfer-Encoding together: the body's length "
                                 "is ambiguous (RFC 9112 6.3)");
        if (chunked_at < 0 || chunked_at != codings - 1)
            return api_error_set(err, API_BAD_REQUEST,
                                 "Transfer-Encoding must end with chunked (RFC 9112 6.3)");
        fr->body = HTTP_BODY_CHUNKED;
    } else if (lengths) {
        fr->body = HTTP_BODY_LENGTH;
    }
    return 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int framing_path(const char *target, char *path, size_t size, api_error *err)
{
    char safe[API_SAFE_MAX + 4];
    const char *p = target;
    size_t n = 0;
    int rc = 0;
    if (strncasecmp(p, "http://", 7) == 0 || strncasecmp(p, "https://", 8) == 0) {
        p = strstr(p, "//") + 2; /* absolute-form: skip the authority */
        p += strcspn(p, "/");
        if (!*p)
            p = "/";
    }
    if (*p != '/')
        rc = api_error_set(err, API_BAD_REQUEST,
                           "request target '%s' is neither a path nor an http URL",
                           api_safe_text(target, safe));
    for (; rc == 0 && *p; p++) {
        char c = *p;
        if (c == '%') {
            const int hi = hex_value(p[1]), lo = hi < 0 ? -1 : hex_value(p[2]);
            if (hi < 0 || lo < 0) {
                rc = api_error_set(err, API_BAD_REQUEST,
                                   "request target '%s' has a '%%' not followed by two hex "
                                   "digits",
                                   api_safe_text(target, safe));
                break;
            }
            c = (char)(hi * 16 + lo);
            if (!c) {
                rc = api_error_set(err, API_BAD_REQUEST,
                                   "request target '%s' has an escaped NUL (%%00)",
                                   api_safe_text(target, safe));
                break;
            }
            p += 2;
        }
        if (n + 1 >= size) { /* RFC 9112 3: longer than any path we parse, 414 */
            rc = api_error_set(err, API_URI_TOO_LONG,
                               "request target '%s' is too long: its path is over %zu bytes",
                               api_safe_text(target, safe), size - 1);
            break;
        }
        path[n++] = c;
    }
    if (size)
        path[n] = '\0';
    return rc;
}
