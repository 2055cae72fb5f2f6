/* internal.h - what the HTTP layer's files share: the server, a request on
 * its way through the daemon, the route table's entries, and the functions
 * one file offers the others.  Not for outside server/http/.
 *
 *     listener.c  the listening socket, libmicrohttpd, start-up, shutdown
 *     request.c   one request's lifecycle: what its headers decide, its
 *                 body, its completion
 *     routes.c    the route table and each route's handler
 *     respond.c   below both: a request's headers read, its responses
 *                 (whole bodies, errors, streamed bodies), its release
 *     framing.c   RFC 9112's rules (framing.h)
 *     linger.c    the graceful close of a connection answered before its
 *                 body was read (linger.h) */
#ifndef ATTND_HTTP_INTERNAL_H
#define ATTND_HTTP_INTERNAL_H

#include "http/server.h"

#include "http/linger.h"
#include "codec/stream.h"
#include "protocol/api.h"
#include "protocol/openai.h"
#include "protocol/protocol.h"
#include "runtime/bufpool.h"
#include "runtime/metrics.h"
#include "runtime/prepare.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

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
    const tok_tokenizer *tokenizer; /* text input's; NULL: none */
    const enc_st_text *sentence;    /* model.dir's sentence-transformers text settings; NULL */
    const char *pair_template;      /* model.rerank_template resolved (api_ctx's); NULL */
    enc_embedder pooling;           /* /v1/embeddings' */
    pool *pool;
    prepare *prep;    /* large bodies' parse and tokenization (routes.c); NULL: in place */
    spinners *spin;   /* kicked at each hand-off (spin.h); may be NULL */
    bufpool *buffers; /* uploads, inputs and results, kept across requests */
    linger_set *lingering; /* connections answered before their body, closing gracefully */
    char *model_json; /* the /v1/model body, made once */
    time_t started;   /* when server_new ran: /v1/models' created */
    atomic_int ready;
    atomic_int draining;      /* readiness down, still accepting (server_drain) */
    _Atomic double drain_end; /* clock_now() when the drain period ends */
    atomic_int shutting_down; /* no longer accepting (server_shutdown) */
    atomic_int closing; /* server_shutdown's last phase: no job may reach the pool, whose
                           jobs would outlive the connections libmicrohttpd closes */
    atomic_long in_flight; /* requests begun and not yet completed */
    atomic_ulong next_id;
};

/* Where a POST is: its body being read (or parsed on the HTTP thread);
 * its body with a prepare worker, then parsed (or refused a worker); its
 * forward with the compute pool, then run (or refused a place). */
typedef enum req_state {
    REQ_READING,
    REQ_PREPARING,
    REQ_PREPARED,
    REQ_QUEUED,
    REQ_DONE,
    REQ_REJECTED
} req_state;

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
    /* The protocol of the path (protocol/protocol.h): its error body, and
     * the codec of a forward's route; NULL: the contract's errors, no codec. */
    const protocol *proto;
    int proto_route;  /* with a proto that matches its own paths: the route's id */
    bool names_model; /* the path names the model: proto->check_model */
    route_media media;
    /* A POST answered from its body alone, no forward (serve_answer; a
     * large body's on a prepare worker, so it must be thread-safe): the
     * response JSON (new reference), or NULL with err set.  The function
     * lives with its protocol (/v1/tokenize: text.h). */
    json_t *(*answer)(const char *body, size_t len, const api_ctx *ctx, api_error *err);
    /* The whole body is in: answer, or hand a forward to the pool
     * (routes.c's serve_forward runs the proto's codec). */
    enum MHD_Result (*serve)(request *r);
} route;

/* An answer decided from the headers alone: sent once the body has been
 * read and discarded (up to drain_budget), so that every client reads it. */
typedef struct early_answer {
    api_error err;        /* err.kind API_OK: none */
    const char *extra[5]; /* extra response headers, name, value, ..., NULL */
    bool close;           /* the body cannot be framed: answer, then close */
} early_answer;

/* A connection's own state, libmicrohttpd's socket context. */
typedef struct conn_state {
    bool linger; /* answered before its body was read: close it gracefully */
} conn_state;

/* Whether the server is on its way out, as one request sees it
 * (http_stopping): read once per request. */
typedef enum stop_state { STOP_UNREAD, STOP_NONE, STOP_DRAINING, STOP_SHUTTING_DOWN } stop_state;

/* One HTTP request, from its headers to MHD's completion callback. */
struct request {
    server *srv;
    struct MHD_Connection *conn;
    double start;    /* clock_now() when its headers came in */
    double parse_ms; /* its protocol's parse of the body (a forward's) */
    char id[129];
    char method[16];
    char path[256];  /* decoded, printable, cut: for the log and messages */
    const route *rt; /* NULL: no such route */
    early_answer early;
    conn_state *cs; /* its connection's, or NULL */
    char *body; /* (len) the upload, NUL-terminated */
    size_t len, cap;
    unsigned long long drained; /* body bytes read and discarded */
    _Atomic req_state state;
    const protocol *proto; /* its path's (its route's, or the protocol a path without a
                              route belongs to): the error body; NULL: the contract's */
    void *pstate;          /* a forward's: its protocol's state (proto->state_size), owned */
    encode_request *fwd;   /* the neutral request inside pstate the pool runs */
    api_ctx ctx;           /* the request context its parse is held to */
    prepare_job prep;      /* its parse on a prepare worker */
    api_error prep_err;    /* its parse's error, when fwd (or answer) is NULL */
    json_t *answer;        /* an answer route's response, made by a prepare worker; owned */
    pool_job job;
    stream *out;     /* a streamed response body (codec/stream.h), or NULL */
    atomic_int refs; /* libmicrohttpd's request, and a streamed body */
    int status;
    size_t bytes;
    stop_state stop; /* http_stopping's answer, once asked */
};

/* ---- respond.c ------------------------------------------------------------- */

/* Queues body (owned, freed by libmicrohttpd) with the headers every
 * response carries (content type, request id, CORS, extra: name, value, ...,
 * NULL). */
enum MHD_Result http_respond(request *r, int status, const char *type, char *body, size_t len,
                             const char *const *extra);
enum MHD_Result http_respond_json(request *r, int status, json_t *obj, const char *const *extra);
/* The error body of the path's protocol (/v2's {"error": "..."}, OpenAI's
 * {"error": {"message", "type", "param", "code"}}), else the contract's. */
enum MHD_Result http_respond_error(request *r, api_error_kind kind, const char *message,
                                   const char *const *extra);
/* Queues r->out (codec/stream.h), produced as the socket drains; a 200. */
enum MHD_Result http_respond_stream(request *r, const char *type, const char *const *extra);
/* Whether the server drains or shuts down, read the first time a request
 * asks and kept: what its answer says (/health's status) and whether it
 * closes the connection (every answer once the server is stopping) then
 * agree, though SIGTERM comes between the two.  A forward's answer asks
 * only when it is sent. */
stop_state http_stopping(request *r);

/* A request header's value, or NULL. */
const char *http_header(request *r, const char *name);
/* Frees r when neither libmicrohttpd's request nor a streamed body needs it. */
void http_request_unref(request *r);

/* ---- request.c ------------------------------------------------------------- */

/* libmicrohttpd's callbacks (listener.c registers them). */
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **con_cls);
void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe);
void http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe);
size_t http_keep_escaped(void *cls, struct MHD_Connection *conn, char *s);

/* ---- routes.c -------------------------------------------------------------- */

/* The route of a decoded path, or NULL; sets r->proto. */
const route *http_route_find(request *r, const char *path, const char *method);
/* The route table's paths, in its order, each once, into names (at most
 * max): the routes /metrics counts by.  Returns how many. */
int http_route_names(const char **names, int max);
/* The protocol a decoded path belongs to by the protocols' own matching
 * (protocol.match), or NULL. */
const protocol *http_protocol_of(const char *path, int *route_id);
/* OPTIONS on r's route: its methods, and CORS's preflight answer. */
enum MHD_Result http_serve_options(request *r);
/* The pool ran r's forward (or refused it a place): answer. */
enum MHD_Result http_forward_finish(request *r);
/* A prepare worker parsed r's body (or was refused it): answer, or hand
 * the forward to the pool. */
enum MHD_Result http_prepared(request *r);

#endif
