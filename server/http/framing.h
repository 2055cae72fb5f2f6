/* framing.h - what RFC 9112 asks of a request before a byte of its body is
 * read: field names that are tokens, one Host in HTTP/1.1, a body framed by
 * one Content-Length or by chunked alone (sections 6.1-6.3), and a request
 * target in origin- or absolute-form whose path percent-decodes to no NUL
 * (section 3.2) and fits (section 3: else 414 URI Too Long).  Pure
 * functions over the header section libmicrohttpd has parsed: no I/O, no
 * state.
 *
 *     http_field f[] = {{"Host", "a"}, {"Content-Length", "12"}};
 *     http_framing fr;
 *     if (framing_check("HTTP/1.1", f, 2, &fr, &err) < 0) -> answer err, close
 *     char path[256];
 *     if (framing_path("http://a/v1/encode", path, sizeof path, &err) < 0)
 *         -> answer err (400 or 414); the body is framed: read and discard it
 */
#ifndef ATTND_HTTP_FRAMING_H
#define ATTND_HTTP_FRAMING_H

#include "protocol/api.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct http_field {
    const char *name, *value;
} http_field;

typedef enum http_body { HTTP_BODY_NONE, HTTP_BODY_LENGTH, HTTP_BODY_CHUNKED } http_body;

typedef struct http_framing {
    http_body body;
    unsigned long long length; /* HTTP_BODY_LENGTH: the Content-Length */
    bool expect_continue;      /* Expect: 100-continue */
} http_framing;

/* Checks the header section of a request of HTTP version ("HTTP/1.1",
 * "HTTP/1.0") with its n fields, in the order received.  Returns 0 and fills
 * *fr, or -1 with err set: API_BAD_REQUEST for a field name that is not a
 * token ("Content-Length : 5", "X Bad: 1"), HTTP/1.1 without exactly one
 * Host, a Content-Length that is not digits or is given twice with different
 * values, Content-Length together with Transfer-Encoding, Transfer-Encoding
 * in HTTP/1.0, or chunked not given once and last; API_NOT_IMPLEMENTED (501)
 * for any transfer coding but chunked ("gzip", "identity").  Either way the
 * body cannot be framed: the connection is to be closed after the answer. */
int framing_check(const char *version, const http_field *fields, size_t n, http_framing *fr,
                  api_error *err);

/* The decoded path of a request target: origin-form ("/v1/encode") as it
 * is, absolute-form ("http://host:8080/v1/encode") without scheme and
 * authority ("/" when it has no path), then percent-decoded into path (size
 * bytes).  Returns 0, or -1 with err API_BAD_REQUEST for a target in
 * neither form, a '%' not followed by two hex digits or an escaped NUL
 * ("%00"), or API_URI_TOO_LONG (414, RFC 9112 section 3) for a path over
 * size - 1 bytes decoded; the message quotes the target and, for a 414,
 * names the limit.  Either way path holds what was decoded before the
 * fault (NUL-terminated), enough to tell a /v2 target by. */
int framing_path(const char *target, char *path, size_t size, api_error *err);

#endif
