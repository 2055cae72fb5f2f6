/* listener.c - the listening socket and its acceptor thread, libmicrohttpd
 * started without a listener of its own, the model's arrival, shutdown. */
#include "http/internal.h"
#include "base/clock.h"
#include "protocol/text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- lifecycle ----------------------------------------------------------- */

server *server_new(const attnd_config *cfg, spinners *spin, enc_error *err)
{
    server *s = calloc(1, sizeof *s);
    const char *routes[64];
    const int n_routes = http_route_names(routes, 64);
    /* Each request in flight holds up to three blocks (its upload, its
     * input, its results); reading, computing and sending overlap. */
    if (!s || !(s->mx = metrics_new(routes, n_routes)) ||
        !(s->buffers = bufpool_new(3 * ((size_t)cfg->compute.workers + 2))) ||
        !(s->lingering = linger_new()) ||
        (cfg->server.tokenize_threads > 0 &&
         !(s->prep = prepare_new(cfg->server.tokenize_threads, cfg->server.tokenize_idle)))) {
        if (s) {
            metrics_free(s->mx);
            bufpool_free(s->buffers);
            linger_free(s->lingering);
        }
        free(s);
        enc_error_set(err, ENC_ENOMEM, "out of memory starting the server");
        return NULL;
    }
    s->cfg = cfg;
    s->spin = spin;
    s->started = time(NULL);
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
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)http_keep_escaped, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    errno = 0;
    s->daemon =
        MHD_start_daemon(flags, 0, NULL, NULL, http_on_request, s, MHD_OPTION_NOTIFY_COMPLETED,
                         http_on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, s,
                         MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
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

void server_on_forward(void *arg, const pool_forward *f)
{
    server *s = arg;
    spinners_kick(s->spin); /* the HTTP threads are about to be woken */
    metrics_forward(s->mx, f->sequences, f->tokens, f->jobs, f->compute_s, f->ahead);
}

/* /v1/model's "head": the checkpoint's task head (docs/api.md), a head
 * attnd does not compute ({"kind": "unsupported", "architecture"}), or
 * null. */
static json_t *head_json(const enc_model *m)
{
    const enc_head_info *h = enc_model_head(m);
    const char *unsupported = enc_model_head_unsupported(m);
    if (!h)
        return unsupported
                   ? json_pack("{s:s, s:s}", "kind", "unsupported", "architecture", unsupported)
                   : json_null();
    json_t *labels = h->labels ? json_array() : json_null(), *tensors = json_array();
    for (int i = 0; h->labels && i < h->n_outputs; i++)
        json_array_append_new(labels, json_string(h->labels[i]));
    for (size_t i = 0; i < h->n_tensors; i++)
        json_array_append_new(tensors, json_string(h->tensors[i]));
    const bool seq = h->kind == ENC_HEAD_SEQUENCE, lm = h->kind == ENC_HEAD_MASKED_LM;
    json_t *score = h->n_score_ids ? json_array() : json_null();
    for (int i = 0; i < h->n_score_ids; i++)
        json_array_append_new(score, json_integer(h->score_ids[i]));
    return json_pack("{s:s, s:s, s:i, s:o, s:s, s:o, s:o, s:o, s:o, s:o}", "kind",
                     enc_head_kind_name(h->kind), "architecture", h->architecture, "outputs",
                     h->n_outputs, "labels", labels, "function",
                     enc_head_function_name(h->function), "problem_type",
                     h->problem_type[0] ? json_string(h->problem_type) : json_null(), "pooling",
                     seq ? json_string(h->last_pooling   ? "last"
                                       : h->mean_pooling ? "mean"
                                                         : "cls")
                         : json_null(),
                     "tied", lm ? json_boolean(h->tied) : json_null(), "score_tokens", score,
                     "tensors", tensors);
}

/* /v1/model's "embedding": the module that turns token ids into the
 * stack's input, its bounds and its tensors as used; null for a model
 * that takes embeddings only. */
static json_t *embedding_json(const enc_model *m)
{
    const enc_embedding_info *e = enc_model_embedding(m);
    if (!e)
        return json_null();
    /* how positions enter: the module's table, or RoPE inside attention */
    const char *position = e->position                                      ? e->position
                           : enc_model_hparams(m)->position == ENC_POS_ROPE ? "rope"
                                                                            : "none";
    json_t *tensors = json_array();
    for (size_t i = 0; tensors && i < e->n_tensors; i++)
        json_array_append_new(tensors, json_string(e->tensors[i]));
    return json_pack("{s:i, s:i, s:o, s:o, s:s, s:s, s:o*}", "vocab_size", e->vocab_size,
                     "type_vocab_size", e->type_vocab_size, "max_positions",
                     e->max_positions > 0 ? json_integer(e->max_positions) : json_null(),
                     "padding_idx",
                     e->padding_idx >= 0 ? json_integer(e->padding_idx) : json_null(), "position",
                     position, "dtype", e->dtype ? e->dtype : "F32", "tensors", tensors);
}

/* /v1/model's "tokenizer": text input (docs/api.md), or null: its file and
 * vocabulary, the specials it adds, the token limit a text is held to and
 * where it comes from, whether a request that does not say is cut, and
 * the prompts. */
static json_t *tokenizer_json(const server *s, const enc_model *m, const server_text *t)
{
    const tok_tokenizer *tok = t ? t->tokenizer : NULL;
    if (!tok)
        return json_null();
    const api_ctx lim = {.max_seq_len = s->cfg->limits.max_seq_len,
                         .embedding = enc_model_embedding(m),
                         .tokenizer = tok,
                         .sentence = t->sentence};
    const char *from;
    const size_t max = text_max_tokens(&lim, &from);
    json_t *prompts = json_object();
    const enc_st_text *st = t->sentence;
    for (size_t i = 0; prompts && st && i < st->n_prompts; i++)
        json_object_set_new(prompts, st->prompts[i].name, json_string(st->prompts[i].text));
    return json_pack(
        "{s:s, s:I, s:I, s:I, s:o, s:s, s:b, s:o, s:o, s:o}", "source",
        t->tokenizer_source ? t->tokenizer_source : "", "vocab_size", (json_int_t)tok_id_count(tok),
        "specials_per_text", (json_int_t)tok_added_special(tok, false), "specials_per_pair",
        (json_int_t)tok_added_special(tok, true), "max_input_length",
        max < SIZE_MAX ? json_integer((json_int_t)max) : json_null(), "max_input_length_from", from,
        "auto_truncate", s->cfg->server.auto_truncate, "prompts", prompts, "default_prompt_name",
        st && st->default_prompt_name ? json_string(st->default_prompt_name) : json_null(),
        "pair_template", t->pair_template ? json_string(t->pair_template) : json_null());
}

/* /v1/model's pooling: how /v1/embeddings makes an embedding of the
 * outputs (d_model wide) and what decided it (from). */
static json_t *pooling_json(const enc_embedder *e, const char *from, int d_model)
{
    json_t *dense = json_array();
    for (int i = 0; dense && i < e->n_dense; i++)
        json_array_append_new(dense, json_pack("{s:i, s:i, s:b, s:s}", "in_features",
                                               e->dense[i].in, "out_features", e->dense[i].out,
                                               "bias", e->dense[i].bias != NULL, "activation",
                                               e->dense[i].tanh ? "tanh" : "identity"));
    json_t *project = e->project ? json_pack("{s:i, s:i}", "in_features", e->project->in,
                                             "out_features", e->project->out)
                                 : json_null();
    return json_pack("{s:s, s:o, s:o, s:b, s:b, s:i, s:s}", "mode", enc_pooling_name(e->mode),
                     "projection", project, "dense", dense, "int8_tanh", e->int8_tanh, "normalize",
                     e->normalize, "dimensions", enc_embed_width(e, d_model), "from", from);
}

void server_set_model(server *s, const enc_model *m, const server_text *t, pool *p)
{
    const tok_tokenizer *tok = t ? t->tokenizer : NULL;
    const enc_hparams *hp = enc_model_hparams(m);
    const attnd_config *cfg = s->cfg;
    const char *sha = enc_model_sha256(m);
    enc_platform pf;
    enc_platform_get(&pf);
    json_t *info = json_pack(
        "{s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:b, s:f, s:b}, s:I, s:{s:s, s:o}, "
        "s:{s:i, s:i, s:I, s:I, s:I}, s:s, s:{s:s, s:s, s:s, s:b}}",
        "name", cfg->model.name, "hyperparameters", "d_model", hp->d_model, "n_heads", hp->n_heads,
        "n_kv_heads", hp->n_kv_heads, "head_dim", enc_head_dim(hp), "d_ff", hp->d_ff, "n_layers",
        hp->n_layers, "activation", enc_activation_name(hp->activation), "norm_first",
        hp->norm_first, "layer_norm_eps", shortest(hp->layer_norm_eps), "bias", hp->bias,
        "parameters", (json_int_t)enc_model_param_count(m), "weights", "source",
        enc_model_source(m), "sha256", sha[0] ? json_string(sha) : json_null(), "limits",
        "max_batch", cfg->limits.max_batch, "max_seq_len", cfg->limits.max_seq_len,
        "max_batch_tokens", (json_int_t)cfg->limits.max_batch_tokens, "max_attention_bytes",
        (json_int_t)cfg->limits.max_attention_bytes, "max_body_bytes",
        (json_int_t)cfg->server.max_body_bytes, "version", ATTND_VERSION, "platform", "kernels",
        pf.kernels, "cpu_simd", pf.cpu_simd, "blas_core", pf.blas_core, "blas_core_generic",
        pf.blas_core_generic);
    json_t *platform = info ? json_object_get(info, "platform") : NULL;
    json_t *limits = info ? json_object_get(info, "limits") : NULL;
    if (limits)
        json_object_set_new(limits, "max_logits_bytes",
                            json_integer((json_int_t)cfg->limits.max_logits_bytes));
    if (platform) { /* the kernels bfloat16 and int8 Linears run on */
        json_object_set_new(platform, "bf16_kernel", json_string(pf.bf16_kernel));
        json_object_set_new(platform, "int8_kernel", json_string(pf.int8_kernel));
    }
    json_t *hparams = info ? json_object_get(info, "hyperparameters") : NULL;
    if (hparams) { /* the feed-forward's kind, and positions inside attention */
        json_object_set_new(hparams, "ffn", json_string(enc_ffn_name(hp->ffn)));
        json_object_set_new(hparams, "position", json_string(enc_position_name(hp->position)));
        /* what the Linears run in: bfloat16 or int8 where asked and packed */
        json_object_set_new(hparams, "dtype", json_string(enc_dtype_name(enc_model_dtype(m))));
        json_object_set_new(hparams, "rope",
                            hp->position != ENC_POS_ROPE
                                ? json_null()
                                : json_pack("{s:f, s:i, s:s, s:f}", "theta", hp->rope_theta, "dim",
                                            hp->rope_dim ? hp->rope_dim : enc_head_dim(hp), "style",
                                            enc_rope_style_name(hp->rope_style), "ntk",
                                            hp->rope_ntk > 1.0 ? hp->rope_ntk : 1.0));
        /* MPNet's relative position bias: its buckets and table rows */
        json_object_set_new(hparams, "relative_bias",
                            hp->rel_buckets
                                ? json_pack("{s:i, s:i, s:i}", "buckets", ENC_REL_BUCKETS,
                                            "max_distance", ENC_REL_MAX_DISTANCE, "rows",
                                            hp->rel_buckets)
                                : json_null());
        /* DeBERTa's relative attention: its table, buckets and terms */
        const enc_disentangled *dis = &hp->dis;
        json_t *terms = json_array();
        if (dis->c2p)
            json_array_append_new(terms, json_string("c2p"));
        if (dis->p2c)
            json_array_append_new(terms, json_string("p2c"));
        json_object_set_new(hparams, "relative_attention",
                            dis->span
                                ? json_pack("{s:i, s:i, s:i, s:o, s:b}", "span", dis->span,
                                            "buckets", dis->buckets, "max_position",
                                            dis->max_position, "terms", terms, "norm", dis->norm)
                                : (json_decref(terms), json_null()));
        /* the block's norms, and each layer's attention (docs/api.md) */
        json_object_set_new(hparams, "norm", json_string(enc_norm_name(hp->norm)));
        json_object_set_new(hparams, "final_norm", json_boolean(hp->final_norm));
        json_object_set_new(hparams, "qk_norm", json_boolean(hp->qk_norm));
        json_object_set_new(hparams, "qk_norm_whole", json_boolean(hp->qk_norm_whole));
        json_object_set_new(hparams, "double_residual", json_boolean(hp->double_residual));
        json_object_set_new(hparams, "causal", json_boolean(hp->causal));
        json_object_set_new(hparams, "sublayer_norm", json_boolean(hp->sublayer_norm));
        json_object_set_new(hparams, "first_attn_norm", json_boolean(!hp->first_norm_identity));
        json_object_set_new(hparams, "global_every",
                            json_integer(hp->global_every > 1 ? hp->global_every : 1));
        json_object_set_new(hparams, "global_offset",
                            json_integer(hp->global_every > 1 ? hp->global_offset : 0));
        json_object_set_new(hparams, "local_window",
                            hp->global_every > 1 ? json_integer(hp->local_window) : json_null());
        json_t *layers = json_array();
        for (int l = 0; l < hp->n_layers; l++) {
            const bool local = enc_layer_local(hp, l);
            json_array_append_new(
                layers,
                json_pack("{s:s, s:o, s:o}", "attention", local ? "local" : "global", "window",
                          local ? json_integer(hp->local_window) : json_null(), "rope_theta",
                          hp->position == ENC_POS_ROPE ? json_real(enc_layer_rope_theta(hp, l))
                                                       : json_null()));
        }
        json_object_set_new(hparams, "layers", layers);
    }
    json_t *weights = info ? json_object_get(info, "weights") : NULL;
    if (weights) { /* where they came from: files, architecture, what was left out */
        json_t *files = json_array(), *ignored = json_array();
        for (size_t i = 0; i < enc_model_file_count(m); i++) {
            const char *fsha;
            const char *name = enc_model_file(m, i, &fsha);
            json_array_append_new(files, json_pack("{s:s, s:s}", "name", name, "sha256", fsha));
        }
        for (size_t i = 0; i < enc_model_ignored_count(m); i++)
            json_array_append_new(ignored, json_string(enc_model_ignored(m, i)));
        const char *arch = enc_model_architecture(m);
        json_object_set_new(weights, "architecture", arch[0] ? json_string(arch) : json_null());
        json_object_set_new(weights, "files", files);
        json_object_set_new(weights, "ignored_tensors", ignored);
    }
    if (info) /* the embedding module: token ids in (docs/api.md), or null */
        json_object_set_new(info, "embedding", embedding_json(m));
    if (info) /* the task head: logits out (docs/api.md), or null */
        json_object_set_new(info, "head", head_json(m));
    if (info) /* text in: the tokenizer, its limit and prompts, or null */
        json_object_set_new(info, "tokenizer", tokenizer_json(s, m, t));
    const enc_embedder pooling =
        t ? t->pooling : (enc_embedder){.mode = ENC_POOL_MEAN, .normalize = true};
    if (info) /* /v1/embeddings' pooling */
        json_object_set_new(info, "pooling",
                            pooling_json(&pooling,
                                         t && t->pooling_from ? t->pooling_from : "default",
                                         enc_model_hparams(m)->d_model));
    free(s->model_json);
    s->model_json = info ? json_dumps(info, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(info);
    s->model = m;
    s->tokenizer = tok;
    s->sentence = t ? t->sentence : NULL;
    s->pair_template = t ? t->pair_template : NULL;
    s->pooling = pooling;
    s->pool = p;
    atomic_store(&s->ready, 1);
}

void server_drain(server *s, int seconds)
{
    atomic_store(&s->drain_end, clock_now() + seconds);
    atomic_store(&s->draining, 1);
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
    const double grace = s->cfg->server.connection_timeout + 30.0, until = clock_now() + grace;
    /* Then closing: a request that begins on a kept-alive connection from
     * now on is answered 503 at once instead of going to the pool, and the
     * wait runs again, so that no job is queued or running when
     * MHD_stop_daemon closes the connections (its request would be freed
     * under the worker).  A request counts in in_flight from its first
     * byte, before it looks at closing: one either sees closing or is
     * waited for. */
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1)
            atomic_store(&s->closing, 1);
        while (atomic_load(&s->in_flight) > 0 && clock_now() < until) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    /* A body still with the prepare workers (past the grace period) is
     * parsed and its connection woken before the connections close: its
     * forward is refused (closing), no worker touches a freed request. */
    prepare_stop(s->prep);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}

void server_free(server *s)
{
    if (!s)
        return;
    stop_accepting(s);
    prepare_stop(s->prep);
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    prepare_free(s->prep);
    linger_free(s->lingering);
    metrics_free(s->mx);
    bufpool_free(s->buffers);
    free(s->model_json);
    free(s);
}
