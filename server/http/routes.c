/* routes.c - the route table (path, methods, key, media type, handlers) and
 * each route's handler: health, model, metrics, the page, OpenAPI, the
 * protocols' GET routes (/v2, /v1/models), and those that parse a body
 * (a large one on the prepare workers) and run a forward on the compute
 * pool or answer from it. */
#include "http/internal.h"

#include "base/clock.h"

#include "page/page.h"
#include "protocol/openapi.h"
#include "protocol/tei.h"
#include "protocol/text.h"
#include "protocol/v2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the routes' handlers ------------------------------------------------ */

/* Where the server is in its life, as readiness sees it: /health's status
 * and the /v2 ready routes' message for each. */
typedef enum readiness { READY, STARTING, DRAINING, SHUTTING_DOWN } readiness;
static const char *const READINESS_STATUS[] = {"ok", "starting", "draining", "shutting_down"};
static const char *const READINESS_MESSAGE[] = {
    "", "the model is still loading", "the server is draining: it stops accepting soon",
    "the server is shutting down"};

static readiness readiness_of(request *r)
{
    const stop_state st = http_stopping(r);
    return st == STOP_SHUTTING_DOWN       ? SHUTTING_DOWN
           : st == STOP_DRAINING          ? DRAINING
           : !atomic_load(&r->srv->ready) ? STARTING
                                          : READY;
}

/* A not-ready answer's Retry-After: what is left of the drain, else 1. */
static const char *retry_after(const server *s, readiness rd, char buf[24])
{
    const double left = atomic_load(&s->drain_end) - clock_now();
    snprintf(buf, 24, "%ld", rd == DRAINING && left > 1 ? (long)ceil(left) : 1L);
    return buf;
}

static enum MHD_Result serve_health(request *r)
{
    const readiness rd = readiness_of(r);
    char retry[24];
    if (rd != READY)
        return http_respond_json(r, 503, json_pack("{s:s}", "status", READINESS_STATUS[rd]),
                                 (const char *const[]){"Retry-After",
                                                       retry_after(r->srv, rd, retry), NULL});
    return http_respond_json(r, 200, json_pack("{s:s}", "status", "ok"), NULL);
}

static enum MHD_Result serve_model(request *r)
{
    const char *body = r->srv->model_json;
    if (!atomic_load(&r->srv->ready) || !body)
        return http_respond_error(r, API_UNAVAILABLE, "the model is still loading", NULL);
    char *copy = strdup(body);
    return copy ? http_respond(r, 200, "application/json", copy, strlen(copy), NULL) : MHD_NO;
}

static enum MHD_Result serve_metrics(request *r)
{
    size_t len = 0;
    pool *p = r->srv->pool;
    char *text = metrics_render(r->srv->mx, p ? pool_queue_depth(p) : 0, &len);
    if (!text)
        return MHD_NO;
    return http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, NULL);
}

/* A 200 of bytes built into the binary (http_respond takes an owned copy). */
static enum MHD_Result respond_embedded(request *r, const char *type, const unsigned char *bytes,
                                        size_t len, const char *const *headers)
{
    char *copy = malloc(len);
    if (!copy)
        return MHD_NO;
    memcpy(copy, bytes, len);
    return http_respond(r, 200, type, copy, len, headers);
}

static enum MHD_Result serve_openapi(request *r)
{
    return respond_embedded(r, "application/json", openapi_json, openapi_json_len, NULL);
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
    return respond_embedded(r, "text/html; charset=utf-8", page_html, page_html_len,
                            (const char *const[]){"Cache-Control", "no-cache",
                                                  "Content-Security-Policy", PAGE_CSP,
                                                  "X-Content-Type-Options", "nosniff", NULL});
}

/* Runs on a compute worker when the forward is done: wake the connection. */
static void job_done(pool_job *job, void *arg)
{
    (void)job;
    request *r = arg;
    atomic_store(&r->state, REQ_DONE);
    MHD_resume_connection(r->conn);
}

static api_ctx request_ctx(const server *s)
{
    const attnd_config *cfg = s->cfg;
    api_ctx ctx = {.max_batch = cfg->limits.max_batch,
                   .max_seq_len = cfg->limits.max_seq_len,
                   .max_batch_tokens = cfg->limits.max_batch_tokens,
                   .max_attention_bytes = cfg->limits.max_attention_bytes,
                   .max_logits_bytes = cfg->limits.max_logits_bytes,
                   .model = s->model,
                   .bufs = s->buffers,
                   .embedding = s->model ? enc_model_embedding(s->model) : NULL,
                   .tokenizer = s->tokenizer,
                   .sentence = s->sentence,
                   .auto_truncate = cfg->server.auto_truncate,
                   .pair_template = s->pair_template};
    return ctx;
}

/* Hands a decoded request's batch to the pool; the connection sleeps until
 * job_done wakes it. */
static enum MHD_Result submit_job(request *r, encode_request *e)
{
    if (atomic_load(&r->srv->closing)) /* server_shutdown's last phase */
        return http_respond_error(r, API_UNAVAILABLE, "the server is shutting down", NULL);
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

static const char *header_of(void *cls, const char *name)
{
    return http_header(cls, name);
}

/* ---- a body's parse, on the HTTP thread or a prepare worker ---------------- */

/* Bodies of this many bytes and more are parsed (their JSON read, their
 * texts tokenized: about 0.3 s for 1 MB of text) on the prepare workers
 * (server.tokenize_threads, runtime/prepare.h) while their connection is
 * suspended, so that no HTTP thread, and none of the connections it
 * serves, waits behind a long text.  Smaller ones, a few milliseconds at
 * most, are parsed here, where a hand-off would cost more than it saves
 * and where they queue behind no long text.  The workers are few (one by
 * default) and yield to the forwards (PREPARE_NICE, prepare.c): on a small
 * host, long texts take turns on one core, not the compute's. */
#define PREPARE_MIN_BYTES (16u << 10)

/* r's body parsed: a forward's into r->fwd by its protocol, an answer
 * route's answer into r->answer; NULL with r->prep_err set.  The header
 * callback reads the connection's headers, which libmicrohttpd leaves
 * alone while the connection is suspended. */
static void parse_body(request *r)
{
    server *s = r->srv;
    if (r->rt->answer) {
        r->answer = r->rt->answer(r->body, r->len, &r->ctx, &r->prep_err);
        return;
    }
    const proto_input in = {.body = r->body,
                            .len = r->len,
                            .header = header_of,
                            .cls = r,
                            .model_name = s->cfg->model.name,
                            .hp = enc_model_hparams(s->model),
                            .ctx = &r->ctx,
                            .route = r->rt->proto_route,
                            .pooling = &s->pooling};
    const double t0 = clock_now();
    r->fwd = r->rt->proto->parse(r->pstate, &in, &r->prep_err);
    if (r->fwd && encode_request_ready(r->fwd, &r->ctx, &r->prep_err) < 0)
        r->fwd = NULL; /* the protocol's state still owns it (proto->free) */
    r->parse_ms = (clock_now() - t0) * 1e3;
}

/* Runs on a prepare worker: the parse, then the connection woken. */
static void prepare_run(prepare_job *job, void *arg)
{
    (void)job;
    request *r = arg;
    parse_body(r);
    atomic_store(&r->state, REQ_PREPARED);
    MHD_resume_connection(r->conn);
}

/* r's body parsed here, or (a large one, with prepare workers) on one of
 * them: http_prepared follows on this thread either way. */
static enum MHD_Result parse_and_go_on(request *r)
{
    server *s = r->srv;
    r->ctx = request_ctx(s);
    if (!s->prep || r->len < PREPARE_MIN_BYTES) {
        parse_body(r);
        return http_prepared(r);
    }
    r->prep = (prepare_job){.run = prepare_run, .arg = r};
    atomic_store(&r->state, REQ_PREPARING);
    /* Suspend first: the worker may finish and resume before we return. */
    MHD_suspend_connection(r->conn);
    if (prepare_submit(s->prep, &r->prep) < 0) { /* stopped: server_shutdown's end */
        api_error_set(&r->prep_err, API_UNAVAILABLE, "the server is shutting down");
        atomic_store(&r->state, REQ_PREPARED);
        MHD_resume_connection(r->conn);
    }
    return MHD_YES;
}

/* A forward's route once its body is in: its protocol parses the body into
 * the neutral request (protocol/encode_request.h); then http_prepared. */
static enum MHD_Result serve_forward(request *r)
{
    server *s = r->srv;
    const protocol *p = r->rt->proto;
    /* Shutting down is no reason to refuse: a request that got this far was
     * accepted before the listener closed, and accepted requests finish. */
    if (!atomic_load(&s->ready))
        return http_respond_error(r, API_UNAVAILABLE, "the model is still loading",
                                  (const char *const[]){"Retry-After", "1", NULL});
    if (!(r->pstate = calloc(1, p->state_size)))
        return http_respond_error(r, API_UNAVAILABLE, "out of memory", NULL);
    return parse_and_go_on(r);
}

/* The body is parsed: an answer route's answer is sent; a forward, its
 * outputs allocated (encode_request_ready), goes to the pool. */
enum MHD_Result http_prepared(request *r)
{
    if (r->rt->answer) {
        json_t *out = r->answer;
        r->answer = NULL;
        if (!out)
            return http_respond_error(r, r->prep_err.kind, r->prep_err.message, NULL);
        return http_respond_json(r, 200, out, NULL);
    }
    if (!r->fwd)
        return http_respond_error(r, r->prep_err.kind, r->prep_err.message, NULL);
    return submit_job(r, r->fwd);
}

/* Bodies with at least this many JSON numbers (about 3 MB of text) are
 * formatted on two threads. */
#define PARALLEL_NUMBERS (256u << 10)

/* The forward has run (or was refused a place): the queue's and the core's
 * errors, or the route's answer. */
enum MHD_Result http_forward_finish(request *r)
{
    server *s = r->srv;
    if (atomic_load(&r->state) == REQ_REJECTED) {
        char msg[128];
        snprintf(msg, sizeof msg, "the compute queue is full (compute.queue_size %d); retry",
                 s->cfg->compute.queue_size);
        return http_respond_error(r, API_QUEUE_FULL, msg,
                                  (const char *const[]){"Retry-After", "1", NULL});
    }
    const pool_job *job = &r->job;
    if (job->rc < 0)
        return http_respond_error(r, api_error_of_core(job->rc), job->err.message, NULL);
    metrics_queue(s->mx, job->queue_ms / 1e3);
    metrics_attention_scores(s->mx, job->result.scores);
    const encode_request *e = r->fwd;
    long tokens = 0;
    for (int b = 0; b < e->batch.B; b++)
        tokens += e->batch.lengths ? e->batch.lengths[b] : e->batch.L;
    const encode_usage usage = {.sequences = e->batch.B,
                                .tokens = tokens,
                                .queue_ms = job->queue_ms,
                                .compute_ms = job->compute_ms,
                                .attention_scores = job->result.scores};
    const proto_output out = {.model_name = s->cfg->model.name,
                              .hp = enc_model_hparams(s->model),
                              .usage = &usage,
                              .pooling = &s->pooling,
                              .parse_ms = r->parse_ms,
                              .total_ms = (clock_now() - r->start) * 1e3};
    /* The route's protocol renders the body as pieces, produced as the
     * socket drains; header_len > 0: JSON then binary (the v2 protocol's
     * form). */
    size_t header_len = 0;
    if (!(r->out = stream_new()) || r->rt->proto->render(r->pstate, &out, r->out, &header_len) < 0)
        return http_respond_error(r, API_UNAVAILABLE, "out of memory writing the response", NULL);
    /* A large JSON body: half of its numbers formatted by a helper thread,
     * ahead of the socket (the forward's CPUs are free by now). */
    stream_parallel(r->out, PARALLEL_NUMBERS);
    /* attnd's headers, then the protocol's */
    char qms[32], cms[32], hl[32];
    snprintf(qms, sizeof qms, "%.3f", job->queue_ms);
    snprintf(cms, sizeof cms, "%.3f", job->compute_ms);
    snprintf(hl, sizeof hl, "%zu", header_len);
    proto_header ph[PROTO_HEADERS_MAX];
    const char *extra[2 * (3 + PROTO_HEADERS_MAX) + 1];
    int n = 0;
    if (header_len) {
        extra[n++] = "Inference-Header-Content-Length";
        extra[n++] = hl;
    }
    extra[n++] = "X-Queue-Ms";
    extra[n++] = qms;
    extra[n++] = "X-Compute-Ms";
    extra[n++] = cms;
    const int k = r->rt->proto->headers ? r->rt->proto->headers(r->pstate, &out, ph) : 0;
    for (int i = 0; i < k && i < PROTO_HEADERS_MAX; i++) {
        extra[n++] = ph[i].name;
        extra[n++] = ph[i].value;
    }
    extra[n] = NULL;
    return http_respond_stream(r, header_len ? "application/octet-stream" : "application/json",
                               extra);
}

/* ---- a POST answered from its body (route.answer) ------------------------- */

/* The route's answer (tokenizing text, say) is made from the body as a
 * forward's parse is: a large body's on a prepare worker (parse_and_go_on). */
static enum MHD_Result serve_answer(request *r)
{
    if (!atomic_load(&r->srv->ready))
        return http_respond_error(r, API_UNAVAILABLE, "the model is still loading",
                                  (const char *const[]){"Retry-After", "1", NULL});
    return parse_and_go_on(r);
}

/* ---- a protocol's own GET routes (protocol.get) ---------------------------- */

/* 503 in the protocol's error form, saying where the server is, with
 * Retry-After.  Asked when not ready; READY here means the model arrived
 * meanwhile: still answered as loading. */
static enum MHD_Result not_ready(request *r)
{
    const readiness now = readiness_of(r), rd = now == READY ? STARTING : now;
    char retry[24];
    return http_respond_error(r, API_UNAVAILABLE, READINESS_MESSAGE[rd],
                              (const char *const[]){"Retry-After", retry_after(r->srv, rd, retry),
                                                    NULL});
}

static enum MHD_Result serve_proto_get(request *r)
{
    const server *s = r->srv;
    const bool loaded = atomic_load(&s->ready) && s->model;
    const api_ctx ctx = request_ctx(s);
    const proto_server sv = {.loaded = loaded,
                             .serving = loaded && readiness_of(r) == READY,
                             .version = ATTND_VERSION,
                             .model_name = s->cfg->model.name,
                             .hp = loaded ? enc_model_hparams(s->model) : NULL,
                             .emb = loaded ? enc_model_embedding(s->model) : NULL,
                             .text = s->tokenizer != NULL,
                             .ctx = &ctx,
                             .pooling = &s->pooling,
                             .dtype = loaded ? enc_dtype_name(enc_model_dtype(s->model)) : "",
                             .started = (long long)s->started};
    char *body = NULL;
    const int status = r->rt->proto->get(r->rt->proto_route, &sv, &body);
    if (status == PROTO_NOT_READY)
        return not_ready(r);
    if (status != 200)
        return MHD_NO;
    if (!body) /* an empty body */
        return http_respond(r, 200, "text/plain", NULL, 0, NULL);
    return http_respond(r, 200, "application/json", body, strlen(body), NULL);
}

/* ---- the route table ------------------------------------------------------ */

/* GET routes' allow list; POST routes'; the path / (the page, and TEI's
 * POST). */
#define ALLOW_GET  "GET, HEAD, OPTIONS"
#define ALLOW_POST "POST, OPTIONS"
#define ALLOW_ROOT "GET, HEAD, POST, OPTIONS"

#define GET_ROUTE(p, fn) .path = p, .allow = ALLOW_GET, .serve = fn
/* A POST route answered from its body (no forward). */
#define ANSWER_ROUTE(p, fn)                                                                        \
    .path = p, .allow = ALLOW_POST, .post = true, .media = MEDIA_JSON, .answer = fn,               \
    .serve = serve_answer
/* A POST route that runs a forward through its protocol's codec. */
#define FORWARD_ROUTE(p, pr, m)                                                                    \
    .path = p, .allow = ALLOW_POST, .post = true, .media = m, .proto = &pr, .serve = serve_forward
/* A route of Hugging Face's text-embeddings-inference (tei.h): a forward,
 * an answer from the body, its GET /info. */
#define TEI_FORWARD(p, r) FORWARD_ROUTE(p, tei_protocol, MEDIA_JSON), .proto_route = TEI_ROUTE_##r
#define TEI_ANSWER(p, fn) ANSWER_ROUTE(p, fn), .proto = &tei_protocol
/* A route of the Open Inference Protocol (v2.h): which of its routes it is
 * (v2_route_parse's answer; {name} also stands for {name}/versions/{v}). */
#define V2(r)        .proto = &v2_protocol, .proto_route = V2_ROUTE_##r
#define V2_GET(p, r) GET_ROUTE(p, serve_proto_get), V2(r)
/* A GET route of OpenAI's API (openai.h). */
#define OPENAI_GET(p, r)                                                                           \
    GET_ROUTE(p, serve_proto_get), .proto = &openai_protocol, .proto_route = OPENAI_ROUTE_##r

/* Every route, one row each: adding a route is adding its row. */
static const route routes[] = {
    {FORWARD_ROUTE("/v1/encode", v1_protocol, MEDIA_JSON)},
    {ANSWER_ROUTE("/v1/tokenize", text_tokenize_request)},
    /* OpenAI's API (openai.h): its routes are its own paths (openai_route_of). */
    {FORWARD_ROUTE("/v1/embeddings", openai_protocol, MEDIA_JSON),
     .proto_route = OPENAI_ROUTE_EMBEDDINGS},
    {OPENAI_GET("/v1/models", MODELS)},
    {OPENAI_GET("/v1/models/{model}", MODEL), .names_model = true},
    {FORWARD_ROUTE("/v1/predict", predict_protocol, MEDIA_JSON)},
    {GET_ROUTE("/health", serve_health), .open = true},
    {GET_ROUTE("/v1/model", serve_model)},
    {GET_ROUTE("/metrics", serve_metrics)},
    {GET_ROUTE("/openapi.json", serve_openapi)},
    {.path = "/", .allow = ALLOW_ROOT, .serve = serve_page, .open = true},
    /* Hugging Face's text-embeddings-inference (tei.h); POST / answers by
     * the model's kind, as TEI and Inference Endpoints do. */
    {.path = "/",
     .allow = ALLOW_ROOT,
     .post = true,
     .media = MEDIA_JSON,
     .proto = &tei_protocol,
     .proto_route = TEI_ROUTE_ROOT,
     .serve = serve_forward},
    {TEI_FORWARD("/embed", EMBED)},
    {TEI_FORWARD("/embed_all", EMBED_ALL)},
    {TEI_FORWARD("/embed_sparse", EMBED_SPARSE)},
    {TEI_FORWARD("/predict", PREDICT)},
    {TEI_FORWARD("/rerank", RERANK)},
    {TEI_FORWARD("/similarity", SIMILARITY)},
    {TEI_ANSWER("/tokenize", tei_tokenize)},
    {TEI_ANSWER("/decode", tei_decode)},
    {GET_ROUTE("/info", serve_proto_get), .proto = &tei_protocol, .proto_route = TEI_ROUTE_INFO},
    /* The Open Inference Protocol (v2.h). */
    {V2_GET("/v2", SERVER)},
    {V2_GET("/v2/health/live", LIVE), .open = true},
    {V2_GET("/v2/health/ready", READY), .open = true},
    {V2_GET("/v2/models/{name}", MODEL), .names_model = true},
    {V2_GET("/v2/models/{name}/ready", MODEL_READY), .names_model = true},
    {FORWARD_ROUTE("/v2/models/{name}/infer", v2_protocol, MEDIA_ANY), .names_model = true,
     .proto_route = V2_ROUTE_INFER},
};

int http_route_names(const char **names, int max)
{
    int n = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && n < max; i++) {
        bool seen = false; /* a path of two rows (/: GET and POST) is one route */
        for (int k = 0; k < n && !seen; k++)
            seen = strcmp(names[k], routes[i].path) == 0;
        if (!seen)
            names[n++] = routes[i].path;
    }
    return n;
}

/* The protocols that match their own paths (protocol.match). */
static const protocol *const path_protocols[] = {&v2_protocol, &openai_protocol};

const protocol *http_protocol_of(const char *path, int *route_id)
{
    for (size_t i = 0; i < sizeof path_protocols / sizeof *path_protocols; i++)
        if ((*route_id = path_protocols[i]->match(path)) != 0)
            return path_protocols[i];
    *route_id = 0;
    return NULL;
}

/* The route of a decoded path, or NULL.  A path a protocol matches itself
 * takes that protocol's route of the same id (and its error form even when
 * it has none); any other path a row of exactly that path, the one of the
 * request's method where the path has two (/: GET the page, POST TEI's). */
const route *http_route_find(request *r, const char *path, const char *method)
{
    int id;
    const protocol *p = http_protocol_of(path, &id);
    r->proto = p;
    const bool post = method && strcmp(method, "POST") == 0;
    const route *found = NULL;
    for (size_t i = 0; id >= 0 && i < sizeof routes / sizeof routes[0]; i++) {
        const route *rt = &routes[i];
        const bool own = rt->proto && rt->proto->match;
        if (p ? own && rt->proto == p && rt->proto_route == id
              : !own && strcmp(path, rt->path) == 0) {
            if (!found || rt->post == post)
                found = rt;
            if (rt->post == post)
                break;
        }
    }
    if (found)
        r->proto = found->proto;
    return found;
}

/* OPTIONS on any route: its methods, and CORS's preflight answer. */
enum MHD_Result http_serve_options(request *r)
{
    const char *allow = r->rt->allow;
    if (!r->srv->cfg->server.cors_origin)
        return http_respond(r, 204, "text/plain", NULL, 0,
                            (const char *const[]){"Allow", allow, NULL});
    return http_respond(r, 204, "text/plain", NULL, 0,
                        (const char *const[]){"Allow", allow, "Access-Control-Allow-Methods", allow,
                                              "Access-Control-Allow-Headers",
                                              "Authorization, Content-Type, X-Request-Id, "
                                              "Inference-Header-Content-Length",
                                              "Access-Control-Max-Age", "600", NULL});
}
