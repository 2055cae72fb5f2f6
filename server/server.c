/* server.c - routes, request lifecycle and shutdown on libmicrohttpd. */
#include "server.h"

#include "api.h"
#include "bufpool.h"
#include "codec/stream.h"
#include "http/framing.h"
#include "encode.h"
#include "metrics.h"
#include "page.h"
#include "v2.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct server {
    const attnd_config *cfg;
    struct MHD_Daemon *daemon;
    int port;
    int listen_fd; /* ours, not libmicrohttpd's: see acceptor_main */
    int wake[2];   /* a pipe: a byte tells the acceptor to stop */
    pthread_t acceptor;
    bool accepting; /* the acceptor thread runs */
    metrics *mx;
    const enc_model *model; /* NULL until ready */
    pool *pool;
    spinners *spin;         /* kicked at each hand-off (spin.h); may be NULL */
    bufpool *buffers;       /* uploads, inputs and results, kept across requests */
    char *model_json; /* the /v1/model body, made once */
    atomic_int ready;
    atomic_int shutting_down;
    atomic_long in_flight; /* requests begun and not yet completed */
    atomic_ulong next_id;
};

typedef enum req_state { REQ_READING, REQ_QUEUED, REQ_DONE, REQ_REJECTED } req_state;

typedef struct request request;

/* What a route needs of a request before its body is read, and who serves
 * it (the way llama.cpp's server registers {path, method, handler}). */
typedef enum route_media {
    MEDIA_NONE, /* GET, HEAD: no body expected */
    MEDIA_JSON, /* Content-Type application/json, uncompressed */
    MEDIA_ANY   /* any Content-Type (Triton's clients send none), uncompressed */
} route_media;

typedef struct route {
    const char *path;
    const char *allow; /* the methods, for 405's Allow and OPTIONS */
    bool post;         /* POST with a body; otherwise GET and HEAD */
    bool open;         /* served without the API key */
    bool v2;           /* errors in the Open Inference Protocol's form */
    bool names_model;  /* /v2/models/{name}: the name must be the model's */
    route_media media;
    /* The whole body is in: answer, or hand a forward to the pool. */
    enum MHD_Result (*serve)(request *r);
    /* The pool ran the forward (or refused it a place): answer. */
    enum MHD_Result (*finish)(request *r);
} route;

/* An answer decided from the headers alone: sent once the body has been
 * read and discarded (up to drain_budget), so that every client reads it. */
typedef struct early_answer {
    api_error err;         /* err.kind API_OK: none */
    const char *extra[5];  /* extra response headers, name, value, ..., NULL */
    bool close;            /* the body cannot be framed: answer, then close */
} early_answer;

/* One HTTP request, from its headers to MHD's completion callback. */
struct request {
    server *srv;
    struct MHD_Connection *conn;
    double start;
    char id[129];
    char method[16];
    char path[256];    /* decoded, printable, cut: for the log and messages */
    const route *rt;   /* NULL: no such route */
    early_answer early;
    char *body;        /* (len) the upload, NUL-terminated */
    size_t len, cap;
    unsigned long long drained; /* body bytes read and discarded */
    _Atomic req_state state;
    encode_request enc;
    bool v2;          /* a /v2 path: errors are {"error": "..."} */
    v2_path v2path;   /* the model and version a /v2/models/... path names */
    v2_request v2req; /* POST /v2/models/{name}/infer */
    pool_job job;
    stream *out;      /* a streamed response body (codec/stream.h), or NULL */
    atomic_int refs;  /* libmicrohttpd's request, and a streamed body */
    int status;
    size_t bytes;
};

/* ---- responses ----------------------------------------------------------- */

/* Queues resp with the headers every response carries. */
static enum MHD_Result queue(request *r, int status, struct MHD_Response *resp, const char *type,
                             const char *const *extra)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, "X-Request-Id", r->id);
    const char *origin = r->srv->cfg->server.cors_origin;
    if (origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                "X-Request-Id, X-Queue-Ms, X-Compute-Ms, Retry-After, "
                                "Inference-Header-Content-Length");
        if (strcmp(origin, "*") != 0)
            MHD_add_response_header(resp, "Vary", "Origin");
    }
    for (int i = 0; extra && extra[i]; i += 2)
        MHD_add_response_header(resp, extra[i], extra[i + 1]);
    if (atomic_load(&r->srv->shutting_down) || r->early.close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    r->status = status;
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Queues body (owned, freed by MHD) with the headers every response carries. */
static enum MHD_Result respond(request *r, int status, const char *type, char *body, size_t len,
                               const char *const *extra)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    r->bytes = len;
    return queue(r, status, resp, type, extra);
}

static void request_unref(request *r);

/* libmicrohttpd asks for the next bytes of a streamed body as the socket
 * drains: they are encoded from the tensors straight into its buffer. */
static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    request *r = cls;
    const size_t n = stream_read(r->out, buf, max);
    r->bytes += n;
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void stream_done(void *cls)
{
    request_unref(cls);
}

/* The block libmicrohttpd asks a streamed body for at a time. */
#define STREAM_BLOCK (128u << 10)

/* Queues r->out, produced as the socket drains: with Content-Length when
 * its length is known ahead (base64, binary), else chunked.  The body reads
 * the request's tensors, so the request lives until libmicrohttpd is done
 * with the body. */
static enum MHD_Result respond_stream(request *r, const char *type, const char *const *extra)
{
    const size_t size = stream_size(r->out);
    atomic_fetch_add(&r->refs, 1);
    struct MHD_Response *resp = MHD_create_response_from_callback(
        size == (size_t)-1 ? MHD_SIZE_UNKNOWN : size, STREAM_BLOCK, stream_reader, r, stream_done);
    if (!resp) {
        request_unref(r);
        return MHD_NO;
    }
    return queue(r, 200, resp, type, extra);
}

static enum MHD_Result respond_json(request *r, int status, json_t *obj, const char *const *extra)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!s)
        return MHD_NO;
    return respond(r, status, "application/json", s, strlen(s), extra);
}

/* The contract's error body: {"error": {"type": ..., "message": ...}}. */
static enum MHD_Result respond_error(request *r, api_error_kind kind, const char *message,
                                     const char *const *extra)
{
    if (r->v2) /* the Open Inference Protocol's error body: {"error": "..."} */
        return respond_json(r, api_error_status(kind), json_pack("{s:s}", "error", message), extra);
    json_t *body =
        json_pack("{s:{s:s,s:s}}", "error", "type", api_error_type(kind), "message", message);
    return respond_json(r, api_error_status(kind), body, extra);
}

/* ---- helpers ------------------------------------------------------------- */

static const char *header(request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Copies src into dst (size bytes) as printable ASCII, other bytes as '?', so
 * a URL cannot break a log line or the JSON of an error message. */
static void printable_copy(char *dst, size_t size, const char *src)
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
    const char *given = header(r, "X-Request-Id");
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
    const char *auth = header(r, MHD_HTTP_HEADER_AUTHORIZATION);
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

/* ---- the routes' handlers ------------------------------------------------ */

static enum MHD_Result serve_health(request *r)
{
    server *s = r->srv;
    if (atomic_load(&s->shutting_down))
        return respond_json(r, 503, json_pack("{s:s}", "status", "shutting_down"), NULL);
    if (!atomic_load(&s->ready))
        return respond_json(r, 503, json_pack("{s:s}", "status", "starting"), NULL);
    return respond_json(r, 200, json_pack("{s:s}", "status", "ok"), NULL);
}

static enum MHD_Result serve_model(request *r)
{
    const char *body = r->srv->model_json;
    if (!atomic_load(&r->srv->ready) || !body)
        return respond_error(r, API_UNAVAILABLE, "the model is still loading", NULL);
    char *copy = strdup(body);
    return copy ? respond(r, 200, "application/json", copy, strlen(copy), NULL) : MHD_NO;
}

static enum MHD_Result serve_metrics(request *r)
{
    size_t len = 0;
    pool *p = r->srv->pool;
    char *text = metrics_render(r->srv->mx, p ? pool_queue_depth(p) : 0, &len);
    if (!text)
        return MHD_NO;
    return respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
}

static enum MHD_Result serve_openapi(request *r)
{
    char *copy = strdup(openapi_json);
    return copy ? respond(r, 200, "application/json", copy, strlen(copy), NULL) : MHD_NO;
}

/* The page's Content-Security-Policy: its own inline script and style, data:
 * images, and requests to this daemon only, so it cannot load or send
 * anything elsewhere. */
#define PAGE_CSP                                                                                   \
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "                  \
    "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "                     \
    "frame-ancestors 'none'"

/* GET /: the heatmap page (page.h).  Static and free of model data, it needs
 * no API key (a browser cannot send one when it opens a URL); the page sends
 * the key the user types with its own API requests.  no-cache: a new binary
 * may carry a new page. */
static enum MHD_Result serve_page(request *r)
{
    char *copy = malloc(page_html_len);
    if (!copy)
        return MHD_NO;
    memcpy(copy, page_html, page_html_len);
    return respond(r, 200, "text/html; charset=utf-8", copy, page_html_len,
                   (const char *const[]){"Cache-Control", "no-cache", "Content-Security-Policy",
                                         PAGE_CSP, "X-Content-Type-Options", "nosniff", NULL});
}

/* Runs on a compute worker when the forward is done: wake the connection. */
static void job_done(pool_job *job, void *arg)
{
    (void)job;
    request *r = arg;
    atomic_store(&r->state, REQ_DONE);
    MHD_resume_connection(r->conn);
}

static api_limits request_limits(const server *s)
{
    const attnd_config *cfg = s->cfg;
    api_limits limits = {.max_batch = cfg->limits.max_batch,
                         .max_seq_len = cfg->limits.max_seq_len,
                         .max_batch_tokens = cfg->limits.max_batch_tokens,
                         .max_attention_bytes = cfg->limits.max_attention_bytes,
                         .pool = s->buffers};
    return limits;
}

/* Hands a decoded request's batch to the pool; the connection sleeps until
 * job_done wakes it. */
static enum MHD_Result submit_job(request *r, encode_request *e)
{
    r->job.batch = &e->batch;
    r->job.result = encode_request_result(e);
    r->job.done = job_done;
    r->job.arg = r;
    atomic_store(&r->state, REQ_QUEUED);
    spinners_kick(r->srv->spin); /* a worker is about to be woken */
    /* Suspend first: the worker may finish and resume before we return. */
    MHD_suspend_connection(r->conn);
    if (pool_submit(r->srv->pool, &r->job) < 0) {
        atomic_store(&r->state, REQ_REJECTED);
        MHD_resume_connection(r->conn);
    }
    return MHD_YES;
}

/* POST /v1/encode, once the body is in: decode, then hand to the pool. */
static enum MHD_Result encode_start(request *r)
{
    server *s = r->srv;
    api_error err = {0};
    /* Shutting down is no reason to refuse: a request that got this far was
     * accepted before the listener closed, and accepted requests finish. */
    if (!atomic_load(&s->ready))
        return respond_error(r, API_UNAVAILABLE, "the model is still loading",
                             (const char *const[]){"Retry-After", "1", NULL});
    api_limits limits = request_limits(s);
    const enc_hparams *hp = enc_model_hparams(s->model);
    if (encode_request_parse(&r->enc, r->body ? r->body : "", r->len, hp, &limits, &err) < 0 ||
        encode_request_alloc_outputs(&r->enc, hp, &err) < 0)
        return respond_error(r, err.kind, err.message, NULL);
    return submit_job(r, &r->enc);
}

/* The forward has run (or was refused a place): the queue's and the core's
 * errors, or the route's answer. */
static enum MHD_Result forward_finish(request *r)
{
    server *s = r->srv;
    if (atomic_load(&r->state) == REQ_REJECTED) {
        char msg[128];
        snprintf(msg, sizeof msg, "the compute queue is full (compute.queue_size %d); retry",
                 s->cfg->compute.queue_size);
        return respond_error(r, API_QUEUE_FULL, msg,
                             (const char *const[]){"Retry-After", "1", NULL});
    }
    pool_job *job = &r->job;
    if (job->rc < 0) {
        api_error_kind kind = job->rc == ENC_ENOMEM                                ? API_UNAVAILABLE
                              : (job->rc == ENC_EINVAL || job->rc == ENC_ENUMERIC) ? API_BAD_REQUEST
                                                                                   : API_INTERNAL;
        return respond_error(r, kind, job->err.message, NULL);
    }
    return r->rt->finish(r);
}

/* POST /v1/encode: the response to a forward that ran. */
static enum MHD_Result encode_finish(request *r)
{
    server *s = r->srv;
    const pool_job *job = &r->job;
    const encode_request *e = &r->enc;
    long tokens = 0;
    for (int b = 0; b < e->batch.B; b++)
        tokens += e->batch.lengths ? e->batch.lengths[b] : e->batch.L;
    metrics_queue(s->mx, job->queue_ms / 1e3);
    metrics_attention_scores(s->mx, job->result.scores);
    encode_usage usage = {.sequences = e->batch.B,
                          .tokens = tokens,
                          .queue_ms = job->queue_ms,
                          .compute_ms = job->compute_ms,
                          .attention_scores = job->result.scores};
    r->out = stream_new();
    if (!r->out ||
        encode_response_stream(e, s->cfg->model.name, enc_model_hparams(s->model), &usage,
                               r->out) < 0)
        return respond_error(r, API_UNAVAILABLE, "out of memory writing the response", NULL);
    char qms[32], cms[32];
    snprintf(qms, sizeof qms, "%.3f", job->queue_ms);
    snprintf(cms, sizeof cms, "%.3f", job->compute_ms);
    return respond_stream(r, "application/json",
                          (const char *const[]){"X-Queue-Ms", qms, "X-Compute-Ms", cms, NULL});
}

/* ---- the Open Inference Protocol (v2.h) ---------------------------------- */

/* The health routes answer 200 with an empty body (the protocol: the status
 * is the answer), or 503 {"error": ...} as API.md section 7 says for "not
 * ready". */
static enum MHD_Result respond_empty(request *r)
{
    return respond(r, 200, "text/plain", NULL, 0, NULL);
}

static enum MHD_Result v2_not_ready(request *r)
{
    return respond_error(r, API_UNAVAILABLE,
                         atomic_load(&r->srv->shutting_down) ? "the server is shutting down"
                                                             : "the model is still loading",
                         NULL);
}

static enum MHD_Result respond_body(request *r, char *body)
{
    return body ? respond(r, 200, "application/json", body, strlen(body), NULL) : MHD_NO;
}

/* GET /v2 */
static enum MHD_Result serve_v2_server(request *r)
{
    return respond_body(r, v2_server_metadata(ATTND_VERSION));
}

/* GET /v2/health/live */
static enum MHD_Result serve_v2_live(request *r)
{
    return respond_empty(r);
}

static bool serving(const server *s)
{
    return atomic_load(&s->ready) && !atomic_load(&s->shutting_down);
}

/* GET /v2/health/ready, /v2/models/{name}/ready */
static enum MHD_Result serve_v2_ready(request *r)
{
    return serving(r->srv) ? respond_empty(r) : v2_not_ready(r);
}

/* GET /v2/models/{name} */
static enum MHD_Result serve_v2_model(request *r)
{
    server *s = r->srv;
    if (!atomic_load(&s->ready))
        return v2_not_ready(r);
    return respond_body(r, v2_model_metadata(s->cfg->model.name, enc_model_hparams(s->model)));
}

/* POST /v2/models/{name}[/versions/{v}]/infer, once the body is in. */
static enum MHD_Result v2_infer_start(request *r)
{
    server *s = r->srv;
    api_error err = {0};
    if (!atomic_load(&s->ready))
        return respond_error(r, API_UNAVAILABLE, "the model is still loading",
                             (const char *const[]){"Retry-After", "1", NULL});
    api_limits limits = request_limits(s);
    const enc_hparams *hp = enc_model_hparams(s->model);
    if (v2_request_parse(&r->v2req, r->body, r->len, header(r, "Inference-Header-Content-Length"),
                         s->cfg->model.name, hp, &limits, &err) < 0 ||
        encode_request_alloc_outputs(&r->v2req.enc, hp, &err) < 0)
        return respond_error(r, err.kind, err.message, NULL);
    return submit_job(r, &r->v2req.enc);
}

/* The forward of an infer request has run: the v2 response, JSON alone or
 * JSON then binary outputs. */
static enum MHD_Result v2_finish(request *r)
{
    server *s = r->srv;
    const pool_job *job = &r->job;
    metrics_queue(s->mx, job->queue_ms / 1e3);
    metrics_attention_scores(s->mx, job->result.scores);
    size_t header_len = 0;
    r->out = stream_new();
    if (!r->out || v2_response_stream(&r->v2req, s->cfg->model.name, enc_model_hparams(s->model),
                                      job->result.scores, r->out, &header_len) < 0)
        return respond_error(r, API_UNAVAILABLE, "out of memory writing the response", NULL);
    char qms[32], cms[32], hl[32];
    snprintf(qms, sizeof qms, "%.3f", job->queue_ms);
    snprintf(cms, sizeof cms, "%.3f", job->compute_ms);
    snprintf(hl, sizeof hl, "%zu", header_len);
    if (!header_len)
        return respond_stream(r, "application/json",
                              (const char *const[]){"X-Queue-Ms", qms, "X-Compute-Ms", cms, NULL});
    return respond_stream(r, "application/octet-stream",
                          (const char *const[]){"Inference-Header-Content-Length", hl, "X-Queue-Ms",
                                                qms, "X-Compute-Ms", cms, NULL});
}

/* ---- the route table ------------------------------------------------------ */

static enum MHD_Result serve_options(request *r);

/* The v1 routes come first in the table, then the /v2 routes by v2_route. */
enum { V1_ROUTES = 6, V2_ROUTE_BASE = V1_ROUTES - V2_ROUTE_SERVER };

/* GET routes' allow list; POST routes'. */
#define ALLOW_GET "GET, HEAD, OPTIONS"
#define ALLOW_POST "POST, OPTIONS"

#define GET_ROUTE(p, fn) .path = p, .allow = ALLOW_GET, .serve = fn

static const route routes[] = {
    {.path = "/v1/encode", .allow = ALLOW_POST, .post = true, .media = MEDIA_JSON,
     .serve = encode_start, .finish = encode_finish},
    {GET_ROUTE("/health", serve_health), .open = true},
    {GET_ROUTE("/v1/model", serve_model)},
    {GET_ROUTE("/metrics", serve_metrics)},
    {GET_ROUTE("/openapi.json", serve_openapi)},
    {GET_ROUTE("/", serve_page), .open = true},
    /* The Open Inference Protocol (v2.h); {name} also stands for
     * {name}/versions/{v}. */
    [V2_ROUTE_BASE + V2_ROUTE_SERVER] = {GET_ROUTE("/v2", serve_v2_server), .v2 = true},
    [V2_ROUTE_BASE + V2_ROUTE_LIVE] = {GET_ROUTE("/v2/health/live", serve_v2_live), .open = true,
                                       .v2 = true},
    [V2_ROUTE_BASE + V2_ROUTE_READY] = {GET_ROUTE("/v2/health/ready", serve_v2_ready),
                                        .open = true, .v2 = true},
    [V2_ROUTE_BASE + V2_ROUTE_MODEL] = {GET_ROUTE("/v2/models/{name}", serve_v2_model),
                                        .v2 = true, .names_model = true},
    [V2_ROUTE_BASE + V2_ROUTE_MODEL_READY] = {GET_ROUTE("/v2/models/{name}/ready",
                                                        serve_v2_ready),
                                              .v2 = true, .names_model = true},
    [V2_ROUTE_BASE + V2_ROUTE_INFER] = {.path = "/v2/models/{name}/infer", .allow = ALLOW_POST,
                                        .post = true, .v2 = true, .names_model = true,
                                        .media = MEDIA_ANY, .serve = v2_infer_start,
                                        .finish = v2_finish},
};

/* The route of a decoded path, or NULL.  A path under /v2 sets r->v2 (its
 * errors take the protocol's form even when no route matches) and, for the
 * model routes, fills r->v2path with the model and version it names. */
static const route *route_find(request *r, const char *path)
{
    const v2_route v = v2_route_parse(path, &r->v2path);
    r->v2 = v != V2_ROUTE_NONE;
    if (v == V2_ROUTE_UNKNOWN)
        return NULL;
    if (r->v2)
        return &routes[V2_ROUTE_BASE + v];
    for (size_t i = 0; i < V1_ROUTES; i++)
        if (strcmp(path, routes[i].path) == 0)
            return &routes[i];
    return NULL;
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
    for (int i = 0; extra && extra[i] && i + 2 < (int)(sizeof a->extra / sizeof *a->extra); i += 2) {
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
static int decide_from_headers(request *r, const char *url, const char *method,
                                const char *version, http_framing *fr)
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
    if (framing_check(version, fl.f, fl.n, fr, &err) < 0 ||
        framing_path(url, path, sizeof path, &err) < 0) {
        r->early.close = true; /* the body cannot be framed: answer and close */
        printable_copy(r->path, sizeof r->path, url);
        return decide(r, err.kind, NULL, "%s", err.message);
    }
    printable_copy(r->path, sizeof r->path, path);
    r->rt = route_find(r, path);
    const route *rt = r->rt;
    if (!rt)
        return decide(r, API_NOT_FOUND, NULL, "no route %s; see /openapi.json", r->path);
    if (strcmp(method, "OPTIONS") == 0)
        return 0;
    const bool method_ok = rt->post ? strcmp(method, "POST") == 0
                                    : strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (!method_ok)
        return decide(r, API_METHOD_NOT_ALLOWED, (const char *const[]){"Allow", rt->allow, NULL},
                      "%s does not accept %s; use %s", rt->path, r->method,
                      rt->post ? "POST" : "GET");
    if (!rt->open && !authorized(r))
        return decide(r, API_UNAUTHORIZED,
                      (const char *const[]){"WWW-Authenticate", "Bearer", NULL},
                      "missing or wrong API key: send Authorization: Bearer <key>");
    if (rt->names_model &&
        v2_check_model(&r->v2path, s->cfg->model.name, &err) < 0)
        return decide(r, err.kind, NULL, "%s", err.message);
    if (rt->media == MEDIA_NONE)
        return 0;
    if (rt->media == MEDIA_JSON && !is_json(header(r, MHD_HTTP_HEADER_CONTENT_TYPE)))
        return decide(r, API_UNSUPPORTED_MEDIA, NULL, "Content-Type must be application/json");
    const char *ce = header(r, MHD_HTTP_HEADER_CONTENT_ENCODING);
    if (ce && strcasecmp(ce, "identity") != 0) {
        char name[64];
        printable_copy(name, sizeof name, ce);
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
#define DRAIN_SECONDS 30.0
#define DRAIN_MIN_BYTES (64ull << 20)

static unsigned long long drain_budget(const server *s)
{
    const unsigned long long twice = 2ull * s->cfg->server.max_body_bytes;
    return twice > DRAIN_MIN_BYTES ? twice : DRAIN_MIN_BYTES;
}

static enum MHD_Result answer_early(request *r, bool before_body_end)
{
    r->early.close |= before_body_end;
    return respond_error(r, r->early.err.kind, r->early.err.message, r->early.extra);
}

/* OPTIONS on any route: its methods, and CORS's preflight answer. */
static enum MHD_Result serve_options(request *r)
{
    const char *allow = r->rt->allow;
    if (!r->srv->cfg->server.cors_origin)
        return respond(r, 204, "text/plain", NULL, 0, (const char *const[]){"Allow", allow, NULL});
    return respond(r, 204, "text/plain", NULL, 0,
                   (const char *const[]){"Allow", allow, "Access-Control-Allow-Methods", allow,
                                         "Access-Control-Allow-Headers",
                                         "Authorization, Content-Type, X-Request-Id, "
                                         "Inference-Header-Content-Length",
                                         "Access-Control-Max-Age", "600", NULL});
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
    atomic_init(&r->refs, 1);
    r->start = pool_now();
    spinners_kick(s->spin); /* the first hand-off: the client's bytes woke us */
    printable_copy(r->method, sizeof r->method, method);
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
        (void)decide(r, API_TOO_LARGE, NULL, "request body is over server.max_body_bytes (%zu bytes)",
               s->cfg->server.max_body_bytes);
    if (r->early.err.kind != API_OK) {
        bufpool_give(s->buffers, r->body);
        r->body = NULL;
        r->len = r->cap = 0;
        r->drained += n;
        if (r->drained > drain_budget(s) || pool_now() - r->start > DRAIN_SECONDS)
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
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
        return forward_finish(r);
    if (st == REQ_QUEUED)
        return MHD_YES; /* woken early: the worker has not finished */
    if (r->early.err.kind != API_OK)
        return answer_early(r, false);
    if (strcmp(method, "OPTIONS") == 0)
        return serve_options(r);
    return r->rt->serve(r);
}

/* Frees r when neither libmicrohttpd's request nor a streamed body needs
 * it any more. */
static void request_unref(request *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    stream_free(r->out);
    encode_request_free(&r->enc);
    v2_request_free(&r->v2req);
    bufpool_give(r->srv->buffers, r->body);
    free(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    server *s = cls;
    request *r = *con_cls;
    if (!r)
        return;
    double secs = pool_now() - r->start;
    spinners_kick(s->spin); /* the client is reading; its next request may follow */
    int status = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? r->status : 499;
    metrics_request(s->mx, r->rt ? r->rt->path : "other", status, secs);
    if (s->cfg->server.access_log)
        fprintf(stderr, "%s %s %d %zu %.1fms %s\n", r->method, r->path, status, r->bytes,
                secs * 1e3, r->id);
    *con_cls = NULL;
    metrics_in_flight(s->mx, -1);
    atomic_fetch_sub(&s->in_flight, 1);
    request_unref(r);
}

/* Leaves the request target as it came: framing_path decodes it, refusing
 * what libmicrohttpd's own decoding would let through (an escaped NUL cuts
 * the path there). */
static size_t keep_escaped(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return strlen(s);
}

/* ---- lifecycle ----------------------------------------------------------- */

server *server_new(const attnd_config *cfg, spinners *spin, enc_error *err)
{
    server *s = calloc(1, sizeof *s);
    /* Each request in flight holds up to three blocks (its upload, its
     * input, its results); reading, computing and sending overlap. */
    if (!s || !(s->mx = metrics_new()) ||
        !(s->buffers = bufpool_new(3 * ((size_t)cfg->compute.workers + 2)))) {
        if (s)
            metrics_free(s->mx);
        free(s);
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the server");
        return NULL;
    }
    s->cfg = cfg;
    s->spin = spin;
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    return s;
}

/* The listening socket is ours: this thread accepts and hands each
 * connection to libmicrohttpd (MHD_add_connection), and shutdown closes the
 * socket itself.  libmicrohttpd's own listener would need MHD_quiesce_daemon
 * to stop accepting, and on an epoll daemon with internal threads that
 * races with the threads' own removal of the socket from their epoll sets:
 * the loser calls MHD_PANIC ("Failed to remove listen FD from epoll set")
 * and the process aborts at SIGTERM (an open libmicrohttpd defect; about
 * one shutdown in ten under a loaded test run here).  poll() mode avoids
 * the race too, but costs 2 ms per request of 2 MB. */
static void *acceptor_main(void *arg)
{
    server *s = arg;
    struct pollfd fds[2] = {{.fd = s->listen_fd, .events = POLLIN},
                            {.fd = s->wake[0], .events = POLLIN}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents)
            break; /* shutdown */
        if (!(fds[0].revents & POLLIN))
            continue;
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        const int fd =
            accept4(s->listen_fd, (struct sockaddr *)&addr, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            /* Out of descriptors or memory: let the load pass rather than spin. */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
            continue;
        }
        /* Over a connection limit, or out of memory: libmicrohttpd closes it. */
        (void)MHD_add_connection(s->daemon, fd, (const struct sockaddr *)&addr, len);
    }
    return NULL;
}

/* Stops the acceptor and closes the listening socket: new connections are
 * refused from here on. */
static void stop_accepting(server *s)
{
    if (s->accepting) {
        const char byte = 'q';
        while (write(s->wake[1], &byte, 1) < 0 && errno == EINTR)
            ;
        pthread_join(s->acceptor, NULL);
        s->accepting = false;
    }
    int *fds[] = {&s->listen_fd, &s->wake[0], &s->wake[1]};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

/* A socket bound to ai and listening; -1 with errno set. */
static int listen_on(const struct addrinfo *ai)
{
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
        const int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int server_start(server *s, enc_error *err)
{
    const attnd_config *cfg = s->cfg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->server.port);
    int gai = getaddrinfo(cfg->server.host, port, &hints, &ai);
    if (gai != 0)
        return enc_error_set(err, ENC_EIO, "server.host: cannot resolve '%s': %s", cfg->server.host,
                             gai_strerror(gai));
    s->listen_fd = listen_on(ai);
    int saved = errno;
    freeaddrinfo(ai);
    if (s->listen_fd < 0)
        return enc_error_set(err, ENC_EIO, "server.port: cannot listen on %s:%d: %s",
                             cfg->server.host, cfg->server.port, strerror(saved));
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    s->port = cfg->server.port;
    if (getsockname(s->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
        s->port =
            ntohs(bound.ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((const struct sockaddr_in *)&bound)->sin_port);

    /* libmicrohttpd without a listening socket of its own (acceptor_main). */
    const unsigned flags =
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
    struct MHD_OptionItem opts[8];
    int n = 0;
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, cfg->server.max_connections, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                        cfg->server.connection_timeout, NULL};
    if (cfg->server.max_connections_per_ip > 0)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            cfg->server.max_connections_per_ip, NULL};
    if (cfg->server.threads > 1)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, cfg->server.threads, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)keep_escaped, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    errno = 0;
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_NOTIFY_COMPLETED,
                                 on_completed, s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    saved = errno;
    if (!s->daemon || pipe2(s->wake, O_CLOEXEC) < 0 ||
        pthread_create(&s->acceptor, NULL, acceptor_main, s) != 0) {
        saved = saved ? saved : errno;
        stop_accepting(s);
        if (s->daemon)
            MHD_stop_daemon(s->daemon);
        s->daemon = NULL;
        return enc_error_set(err, ENC_EIO, "server: cannot start on %s:%d: %s", cfg->server.host,
                             s->port,
                             saved ? strerror(saved) : "libmicrohttpd refused the settings");
    }
    s->accepting = true;
    return ENC_OK;
}

int server_port(const server *s)
{
    return s->port;
}

/* The shortest decimal that reads back as f, as a double: 1e-05, not
 * 9.9999997473787516e-06. */
static double shortest(float f)
{
    char buf[32];
    for (int prec = 1; prec < 10; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f)
            break;
    }
    return strtod(buf, NULL);
}

void server_on_forward(void *arg, int sequences, long tokens, int requests, double compute_s)
{
    server *s = arg;
    spinners_kick(s->spin); /* the HTTP threads are about to be woken */
    metrics_forward(s->mx, sequences, tokens, requests, compute_s);
}

void server_set_model(server *s, const enc_model *m, pool *p)
{
    const enc_hparams *hp = enc_model_hparams(m);
    const attnd_config *cfg = s->cfg;
    const char *sha = enc_model_sha256(m);
    json_t *info = json_pack(
        "{s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:b, s:f, s:b}, s:I, s:{s:s, s:o}, "
        "s:{s:i, s:i, s:I, s:I, s:I}, s:s}",
        "name", cfg->model.name, "hyperparameters", "d_model", hp->d_model, "n_heads", hp->n_heads,
        "n_kv_heads", hp->n_kv_heads, "head_dim", hp->d_model / hp->n_heads, "d_ff", hp->d_ff,
        "n_layers", hp->n_layers, "activation", enc_activation_name(hp->activation), "norm_first",
        hp->norm_first, "layer_norm_eps", shortest(hp->layer_norm_eps), "bias", hp->bias,
        "parameters", (json_int_t)enc_model_param_count(m), "weights", "source",
        enc_model_source(m), "sha256", sha[0] ? json_string(sha) : json_null(), "limits",
        "max_batch", cfg->limits.max_batch, "max_seq_len", cfg->limits.max_seq_len,
        "max_batch_tokens", (json_int_t)cfg->limits.max_batch_tokens, "max_attention_bytes",
        (json_int_t)cfg->limits.max_attention_bytes, "max_body_bytes",
        (json_int_t)cfg->server.max_body_bytes, "version", ATTND_VERSION);
    free(s->model_json);
    s->model_json = info ? json_dumps(info, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(info);
    s->model = m;
    s->pool = p;
    atomic_store(&s->ready, 1);
}

void server_shutdown(server *s)
{
    if (!s || !s->daemon)
        return;
    atomic_store(&s->shutting_down, 1);
    /* Stop accepting: close the listening socket. */
    stop_accepting(s);
    /* Requests already accepted finish; idle keep-alive connections are
     * closed by MHD_stop_daemon below.  A client that trickles its body
     * forever is not waited for past the grace period. */
    const double grace = s->cfg->server.connection_timeout + 30.0, until = pool_now() + grace;
    while (atomic_load(&s->in_flight) > 0 && pool_now() < until) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}

void server_free(server *s)
{
    if (!s)
        return;
    stop_accepting(s);
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    metrics_free(s->mx);
    bufpool_free(s->buffers);
    free(s->model_json);
    free(s);
}
