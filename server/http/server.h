/* server.h - the HTTP daemon on libmicrohttpd: routes of docs/contract.md
 * sections 4, 5 (v2.h), 6 and 7, authentication, CORS, limits, access log, request ids, metrics and
 * graceful shutdown.  HTTP threads read and decode requests (a large body is
 * decoded on the prepare workers, prepare.h); forwards run on the compute
 * pool (pool.h); meanwhile the connection is suspended.
 *
 *     server *s = server_new(&cfg, spin, &err);  // spin: spin.h, or NULL
 *     server_start(s, &err);                 // listening; /health says 503
 *     ... load the model, start the pool ...
 *     server_set_model(s, model, &text, pool); // /health says 200
 *     ... wait for SIGTERM ...
 *     server_shutdown(s);                    // 503, stop accepting, finish in-flight
 *     server_free(s);
 */
#ifndef ATTND_SERVER_H
#define ATTND_SERVER_H

#include "config/config.h"
#include "encoder.h"
#include "runtime/pool.h"
#include "runtime/spin.h"
#include "load/sentence.h"
#include "model/pooling.h"
#include "tokenizer/tokenizer.h"

/* attnd's version, from the Makefile's VERSION (its one place). */
#ifndef ATTND_VERSION
#error "ATTND_VERSION must be defined (the Makefile passes -DATTND_VERSION)"
#endif

typedef struct server server;

/* A server for cfg and spin (both borrowed for the server's lifetime; spin
 * may be NULL), which it kicks at each hand-off of a request: when its
 * headers arrive, when it is queued, when its forward ends and when its
 * response has been sent.  Owned, or NULL. */
server *server_new(const attnd_config *cfg, spinners *spin, enc_error *err);

/* Binds and starts listening.  Returns 0, or ENC_EIO naming server.host /
 * server.port and the reason. */
int server_start(server *s, enc_error *err);

/* The bound port (useful with server.port 0). */
int server_port(const server *s);

/* The pool's on_forward callback (arg: the server): counts a forward in
 * /metrics and kicks the spinners. */
void server_on_forward(void *arg, const pool_forward *f);

/* What the served model does with text: its tokenizer (borrowed; NULL: no
 * text input), model.dir's sentence-transformers text settings, and how
 * /v1/embeddings pools its outputs. */
typedef struct server_text {
    const tok_tokenizer *tokenizer;
    const char *tokenizer_source; /* its file, or "built-in" (the built-in model's) */
    const enc_st_text *sentence;  /* borrowed: max_seq_length, prompts; NULL: none */
    enc_embedder pooling;         /* start-up decided; its Dense modules borrowed */
    const char *pooling_from;     /* what decided the mode: "model.pooling", "modules.json", ... */
    const char *pair_template;    /* model.rerank_template resolved (api_ctx's); NULL: none */
    const char *pair_template_from; /* what decided it, for the log and /v1/model */
} server_text;

/* Serves m (borrowed) through p (borrowed) from now on, text as t says:
 * ready. */
void server_set_model(server *s, const enc_model *m, const server_text *t, pool *p);

/* The drain after SIGTERM, for a load balancer to take this replica out:
 * readiness goes down (/health, /v2/health/ready, /v2/models/{name}/ready
 * answer 503 with Retry-After: the drain's seconds left), liveness stays up,
 * and requests are still accepted and served for the next seconds, each
 * answered with Connection: close so that keep-alive clients reconnect. */
void server_drain(server *s, int seconds);

/* /health turns 503, the listener closes, requests already accepted finish;
 * then the HTTP threads stop.  The pool is left to the caller. */
void server_shutdown(server *s);

void server_free(server *s);

#endif
