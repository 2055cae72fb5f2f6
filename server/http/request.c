/* request.c - one request's lifecycle: when its headers are in, everything
 * they decide (framing, route, method, key, media type, size) is decided
 * before a byte of its body is kept; then its body, its route's handler,
 * and its completion. */
#include "http/internal.h"

#include "base/clock.h"

#include <fcntl.h>

#include "http/framing.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------- */

/* Copies src into dst (size bytes) as printable ASCII, other bytes as '?', so
 * a URL cannot break a log line or the JSON of an error message. */
static void http_printable(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < size; i++)
        dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
    dst[i] = '\0';
}

/* A client's X-Request-Id is kept when it is 1..128 characters of
 * [A-Za-z0-9._:-]; otherwise one is made up. */
static void request_id_init(request *r)
{
    const char *given = http_header(r, "X-Request-Id");
    size_t n = given ? strlen(given) : 0;
    bool ok = n > 0 && n < sizeof r->id;
    for (size_t i = 0; ok && i < n; i++)
        ok = (given[i] >= 'a' && given[i] <= 'z') || (given[i] >= 'A' && given[i] <= 'Z') ||
             (given[i] >= '0' && given[i] <= '9') || strchr("._:-", given[i]);
    if (ok) {
        memcpy(r->id, given, n + 1);
        return;
    }
    unsigned long k = atomic_fetch_add(&r->srv->next_id, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(r->id, sizeof r->id, "%08lx%08lx", (unsigned long)ts.tv_sec & 0xffffffffUL,
             (k * 2654435761UL + (unsigned long)ts.tv_nsec) & 0xffffffffUL);
}

/* Constant-time comparison, so the key cannot be guessed byte by byte. */
static bool secret_equal(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = na != nb;
    for (size_t i = 0; i < na; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return diff == 0;
}

static bool authorized(request *r)
{
    const char *key = r->srv->cfg->server.api_key;
    if (!key)
        return true;
    const char *auth = http_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    return secret_equal(auth + 7, key);
}

/* application/json, optionally with parameters ("; charset=utf-8"). */
static bool is_json(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* ---- what the headers decide ------------------------------------------------ */

/* Sets the answer decided from the headers (the first one wins); -1. */
static int decide(request *r, api_error_kind kind, const char *const *extra, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int decide(request *r, api_error_kind kind, const char *const *extra, const char *fmt, ...)
{
    early_answer *a = &r->early;
    if (a->err.kind != API_OK)
        return -1;
    a->err.kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->err.message, sizeof a->err.message, fmt, ap);
    va_end(ap);
    for (int i = 0; extra && extra[i] && i + 2 < (int)(sizeof a->extra / sizeof *a->extra);
         i += 2) {
        a->extra[i] = extra[i];
        a->extra[i + 1] = extra[i + 1];
    }
    return -1;
}

typedef struct field_list {
    http_field f[64];
    size_t n;
    bool more; /* over 64 fields: the rest are not looked at */
} field_list;

static enum MHD_Result collect_field(void *cls, enum MHD_ValueKind kind, const char *name,
                                     const char *value)
{
    (void)kind;
    field_list *l = cls;
    if (l->n == sizeof l->f / sizeof *l->f) {
        l->more = true;
        return MHD_NO;
    }
    l->f[l->n++] = (http_field){name, value};
    return MHD_YES;
}

/* Everything the headers can decide, in the order a client would fix it:
 * framing (RFC 9112), route, method, API key, media type and encoding,
 * declared size.  Sets r->rt and fr.  Returns 0, or -1 with the answer in
 * r->early. */
static int decide_from_headers(request *r, const char *url, const char *method, const char *version,
                               http_framing *fr)
{
    const server *s = r->srv;
    field_list fl = {.n = 0};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_field, &fl);
    if (fl.more) { /* the framing of a request with this many fields is not looked into */
        r->early.close = true;
        return decide(r, API_BAD_REQUEST, NULL, "over %zu header fields", fl.n);
    }
    api_error err = {0};
    char path[sizeof r->path];
    if (framing_check(version, fl.f, fl.n, fr, &err) < 0) {
        r->early.close = true; /* the body cannot be framed: answer and close */
        http_printable(r->path, sizeof r->path, url);
        return decide(r, err.kind, NULL, "%s", err.message);
    }
    if (framing_path(url, path, sizeof path, &err) < 0) {
        /* 400, or 414 for a path over sizeof path - 1 bytes; the body is
         * framed: read and discarded, the connection kept.  Under /v2 (as
         * far as the path was decoded) in the protocol's error form. */
        int id;
        r->proto = http_protocol_of(path, &id);
        http_printable(r->path, sizeof r->path, url);
        return decide(r, err.kind, NULL, "%s", err.message);
    }
    http_printable(r->path, sizeof r->path, path);
    r->rt = http_route_find(r, path, method);
    const route *rt = r->rt;
    if (!rt)
        return decide(r, API_NOT_FOUND, NULL, "no route %s; see /openapi.json", r->path);
    if (strcmp(method, "OPTIONS") == 0)
        return 0;
    const bool method_ok = rt->post ? strcmp(method, "POST") == 0
                                    : strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (!method_ok)
        return decide(r, API_METHOD_NOT_ALLOWED, (const char *const[]){"Allow", rt->allow, NULL},
                      "%s does not accept %s; use %s", r->path, r->method,
                      rt->post ? "POST" : "GET");
    if (!rt->open && !authorized(r))
        return decide(r, API_UNAUTHORIZED,
                      (const char *const[]){"WWW-Authenticate", "Bearer", NULL},
                      "missing or wrong API key: send Authorization: Bearer <key>");
    if (rt->names_model && rt->proto->check_model(path, s->cfg->model.name, &err) < 0)
        return decide(r, err.kind, NULL, "%s", err.message);
    if (rt->media == MEDIA_NONE)
        return 0;
    if (rt->media == MEDIA_JSON && !is_json(http_header(r, MHD_HTTP_HEADER_CONTENT_TYPE)))
        return decide(r, API_UNSUPPORTED_MEDIA, NULL, "Content-Type must be application/json");
    const char *ce = http_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (ce && strcasecmp(ce, "identity") != 0) {
        char name[64];
        http_printable(name, sizeof name, ce);
        return decide(r, API_UNSUPPORTED_MEDIA, NULL,
                      "Content-Encoding %s is not supported; send the body uncompressed", name);
    }
    if (fr->body == HTTP_BODY_LENGTH && fr->length > s->cfg->server.max_body_bytes)
        return decide(r, API_TOO_LARGE, NULL,
                      "request body is over server.max_body_bytes (%zu bytes)",
                      s->cfg->server.max_body_bytes);
    return 0;
}

/* An answer decided from the headers is sent after the body has been read
 * and discarded, so that a client that sends its whole body before it
 * reads (Python's http.client, Node's fetch) reads the answer rather than a
 * reset connection.  Up to DRAIN_SECONDS from the headers and this many body
 * bytes: twice server.max_body_bytes, at least DRAIN_MIN_BYTES; past either
 * (or declared past the bytes), it is sent at once with Connection: close. */
#define DRAIN_SECONDS   30.0
#define DRAIN_MIN_BYTES (64ull << 20)

static unsigned long long drain_budget(const server *s)
{
    const unsigned long long twice = 2ull * s->cfg->server.max_body_bytes;
    return twice > DRAIN_MIN_BYTES ? twice : DRAIN_MIN_BYTES;
}

static enum MHD_Result answer_early(request *r, bool before_body_end)
{
    r->early.close |= before_body_end;
    if (r->early.close && r->cs) /* the client may still be sending: linger.c */
        r->cs->linger = true;
    return http_respond_error(r, r->early.err.kind, r->early.err.message, r->early.extra);
}

/* ---- libmicrohttpd callbacks ------------------------------------------- */

/* The headers are in: the request begins.  Everything the headers decide
 * is decided here, before a byte of the body is kept. */
static enum MHD_Result request_begin(server *s, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version, void **con_cls)
{
    request *r = calloc(1, sizeof *r);
    if (!r)
        return MHD_NO;
    r->srv = s;
    r->conn = conn;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    r->cs = ci ? ci->socket_context : NULL;
    atomic_init(&r->refs, 1);
    r->start = clock_now();
    spinners_kick(s->spin); /* the first hand-off: the client's bytes woke us */
    http_printable(r->method, sizeof r->method, method);
    request_id_init(r);
    *con_cls = r;
    atomic_fetch_add(&s->in_flight, 1);
    metrics_in_flight(s->mx, 1);
    http_framing fr = {.body = HTTP_BODY_NONE};
    if (decide_from_headers(r, url, method, version, &fr) < 0) {
        /* With Expect: 100-continue the answer replaces 100 Continue: the
         * client has sent no body. */
        if (fr.expect_continue)
            return answer_early(r, false);
        if (r->early.close || (fr.body == HTTP_BODY_LENGTH && fr.length > drain_budget(s)))
            return answer_early(r, true);
        return MHD_YES; /* read and discard the body, then answer */
    }
    /* A declared body within the limit gets its buffer now, so it is not
     * regrown (and copied) piece by piece; at most 4 MiB up front, as a
     * client may declare more than it sends. */
    if (fr.body == HTTP_BODY_LENGTH && fr.length > 0) {
        const size_t want = (size_t)(fr.length < 4u << 20 ? fr.length : 4u << 20) + 1;
        if ((r->body = bufpool_take(s->buffers, want)))
            r->cap = want;
    }
    return MHD_YES;
}

/* A piece of the body: kept, or (an answer decided, or over the limit)
 * counted and discarded. */
static enum MHD_Result request_piece(request *r, const char *data, size_t n)
{
    const server *s = r->srv;
    if (r->early.err.kind == API_OK && n > s->cfg->server.max_body_bytes - r->len)
        (void)decide(r, API_TOO_LARGE, NULL,
                     "request body is over server.max_body_bytes (%zu bytes)",
                     s->cfg->server.max_body_bytes);
    if (r->early.err.kind != API_OK) {
        bufpool_give(s->buffers, r->body);
        r->body = NULL;
        r->len = r->cap = 0;
        r->drained += n;
        if (r->drained > drain_budget(s) || clock_now() - r->start > DRAIN_SECONDS)
            return answer_early(r, true);
        return MHD_YES;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n + 1)
            cap *= 2;
        char *b = bufpool_resize(s->buffers, r->body, cap);
        if (!b)
            return MHD_NO;
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return MHD_YES;
}

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **con_cls)
{
    request *r = *con_cls;
    if (!r)
        return request_begin(cls, conn, url, method, version, con_cls);
    if (*upload_size) {
        const size_t n = *upload_size;
        *upload_size = 0;
        return request_piece(r, upload_data, n);
    }
    /* The whole request is in (or a suspended one resumed). */
    const req_state st = atomic_load(&r->state);
    if (st == REQ_DONE || st == REQ_REJECTED)
        return http_forward_finish(r);
    if (st == REQ_PREPARED)
        return http_prepared(r);
    if (st == REQ_QUEUED || st == REQ_PREPARING)
        return MHD_YES; /* woken early: the worker has not finished */
    if (r->early.err.kind != API_OK)
        return answer_early(r, false);
    if (strcmp(method, "OPTIONS") == 0)
        return http_serve_options(r);
    return r->rt->serve(r);
}

void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    server *s = cls;
    request *r = *con_cls;
    if (!r)
        return;
    double secs = clock_now() - r->start;
    spinners_kick(s->spin); /* the client is reading; its next request may follow */
    int status = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? r->status : 499;
    metrics_request(s->mx, r->rt ? r->rt->path : "other", status, secs);
    if (s->cfg->server.access_log)
        fprintf(stderr, "%s %s %d %zu %.1fms %s\n", r->method, r->path, status, r->bytes,
                secs * 1e3, r->id);
    *con_cls = NULL;
    metrics_in_flight(s->mx, -1);
    atomic_fetch_sub(&s->in_flight, 1);
    http_request_unref(r);
}

/* A connection begins or ends.  One answered before its body was read
 * (conn_state.linger) is closed gracefully: a duplicate of its socket goes
 * to linger.c, so libmicrohttpd's close does not reset it. */
void http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = calloc(1, sizeof(conn_state)); /* NULL: it cannot linger */
        return;
    }
    conn_state *cs = *socket_context;
    *socket_context = NULL;
    const union MHD_ConnectionInfo *ci =
        cs && cs->linger ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    const int fd = ci ? fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (fd >= 0)
        linger_add(s->lingering, fd);
    free(cs);
}

/* Leaves the request target as it came: framing_path decodes it, refusing
 * what libmicrohttpd's own decoding would let through (an escaped NUL cuts
 * the path there). */
size_t http_keep_escaped(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return strlen(s);
}
